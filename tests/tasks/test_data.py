"""Tests of the data readers (paththeory.tasks.data).

Oracles: hashlib and zipfile/PIL read independently of the package, known facts of the public
files (MNIST test labels and class counts, the Omniglot small-split union of 242 characters),
and tiny IDX files, zips and folder trees written here byte by byte.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import os
import shutil
import socket
import struct
import sys
import threading
import types
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from PIL import Image

from paththeory.tasks import data

SHARED = data.BUNDLED_DATA  # the copies shipped in the package: always present


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No PATHTHEORY_DATA, an empty cache and no shipped copies: only what a test writes exists."""
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(data, "BUNDLED_DATA", tmp_path / "no-bundled")
    return tmp_path


def write_idx(path: Path, array: np.ndarray, compress: bool) -> None:
    """Independent IDX writer: 0, 0, dtype code, ndim, big-endian dims, big-endian data."""
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int16): 0x0B, np.dtype(np.int32): 0x0C, np.dtype(np.float64): 0x0E}
    raw = bytes([0, 0, codes[array.dtype], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    raw += array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw) if compress else raw)


def png_bytes(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def fake_drawings(seed: int, alphabets=("Alpha", "Beta"), characters=2, drawings=3) -> dict[str, np.ndarray]:
    """``{"Alphabet/characterNN/drawing.png": bool image [105, 105]}`` (Omniglot PNGs are 1-bit)."""
    rng = np.random.default_rng(seed)
    return {
        f"{a}/character{c + 1:02d}/{900 + c:04d}_{d + 1:02d}.png": rng.random((105, 105)) < 0.8
        for a in alphabets
        for c in range(characters)
        for d in range(drawings)
    }


def write_zip(path: Path, top: str, files: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, image in files.items():
            zf.writestr(f"{top}/{name}", png_bytes(image))


# --------------------------------------------------------------------------- shipped files


def test_shipped_files_match_their_published_md5():
    for dataset, folder in (("omniglot", "omniglot"), ("mnist", "mnist"), ("fashion", "fashion_mnist")):
        for path in sorted((SHARED / folder).iterdir()):
            expected = data.CHECKSUMS[dataset][path.name]
            assert hashlib.md5(path.read_bytes()).hexdigest() == expected == data.md5sum(path)
            data.verify(dataset, path)  # no exception


def test_omniglot_small_union_deduplicates_greek_and_latin():
    s = data.load_omniglot("background_small", root=SHARED, download=False)
    assert s.images.shape == (4840, 105, 105) and s.images.dtype == np.uint8
    assert s.n_classes == 242 and s.source == "omniglot:background_small"
    assert s.alphabets == ("Balinese", "Early_Aramaic", "Greek", "Japanese_(katakana)", "Korean", "Latin",
                           "Sanskrit", "Tagalog")
    np.testing.assert_array_equal(np.bincount(s.labels), np.full(242, 20))
    # oracle: the distinct (alphabet, character, file) entries of the two zips, read with zipfile
    entries = set()
    for k in (1, 2):
        with zipfile.ZipFile(SHARED / "omniglot" / f"images_background_small{k}.zip") as zf:
            entries |= {tuple(n.split("/")[1:]) for n in zf.namelist() if n.endswith(".png")}
    assert len(entries) == 4840
    assert len({e[:2] for e in entries}) == 242
    np.testing.assert_array_equal(np.bincount(s.class_alphabet), [np.sum([c.startswith(a + "/") for c in s.classes])
                                                                  for a in s.alphabets])
    # one drawing decoded independently lands at its sorted position with its character's label
    with zipfile.ZipFile(SHARED / "omniglot" / "images_background_small2.zip") as zf:
        ref = np.asarray(Image.open(io.BytesIO(zf.read("images_background_small2/Tagalog/character17/0909_20.png"))))
    assert np.array_equal(s.images[-1], np.where(ref, 255, 0)) and s.classes[s.labels[-1]] == "Tagalog/character17"
    assert set(np.unique(s.images)) == {0, 255}


def test_one_shot_runs_match_class_labels_file():
    runs = data.load_one_shot_runs(root=SHARED, download=False)
    assert runs.training.shape == runs.test.shape == (20, 20, 105, 105)
    for r in range(20):  # every test item answers a distinct training class
        np.testing.assert_array_equal(np.sort(runs.answers[r]), np.arange(20))
    with zipfile.ZipFile(SHARED / "omniglot" / "all_runs.zip") as zf:
        first = zf.read("run07/class_labels.txt").decode().split()[:2]  # test/item01.png training/classKK.png
        item = np.asarray(Image.open(io.BytesIO(zf.read("run07/test/item01.png"))))
    assert first[0] == "run07/test/item01.png"
    assert runs.answers[6, 0] == int(first[1][-6:-4]) - 1
    np.testing.assert_array_equal(runs.test[6, 0], np.where(item, 255, 0))


def test_mnist_test_set_known_facts():
    m = data.load_mnist("test", root=SHARED, download=False)
    assert m.images.shape == (10000, 28, 28) and m.images.dtype == np.uint8 and m.source == "mnist:test"
    np.testing.assert_array_equal(m.labels[:10], [7, 2, 1, 0, 4, 1, 4, 9, 5, 9])
    np.testing.assert_array_equal(np.bincount(m.labels), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])
    assert not m.images.flags.writeable  # the in-memory cache cannot be corrupted by callers


def test_corrupted_file_fails_its_checksum(tmp_path):
    (tmp_path / "mnist").mkdir()
    images, labels = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
    (tmp_path / "mnist" / images).write_bytes((SHARED / "mnist" / images).read_bytes())
    raw = bytearray(gzip.decompress((SHARED / "mnist" / labels).read_bytes()))
    raw[-1] = (raw[-1] + 1) % 10  # a valid file with one wrong label
    (tmp_path / "mnist" / labels).write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(data.ChecksumError, match="t10k-labels-idx1-ubyte.gz has md5"):
        data.load_mnist("test", root=tmp_path, download=False)
    labels = data.load_mnist("test", root=tmp_path, download=False, verify_checksums=False).labels
    assert labels[-1] != data.load_mnist("test", root=SHARED, download=False).labels[-1]


def test_fashion_test_split_falls_back_on_the_shipped_prefix(monkeypatch, tmp_path, dead_server):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setenv(data.URL_ENV_VAR, dead_server)  # no download possible
    monkeypatch.setattr(data, "cache_dir", lambda: tmp_path / "empty-cache")
    f = data.load_mnist("test", fashion=True)
    assert f.images.shape == (4443, 28, 28) and f.source == "fashion:test"
    assert "4,443 of the 10,000" in f.note
    raw = gzip.decompress((SHARED / "fashion_mnist" / "t10k-labels-idx1-ubyte.first4443.gz").read_bytes())
    assert struct.unpack(">II", raw[:8]) == (0x801, 4443)  # independent IDX header read
    np.testing.assert_array_equal(f.labels, np.frombuffer(raw, np.uint8, offset=8))
    counts = np.bincount(f.labels, minlength=10)
    assert counts.sum() == 4443 and counts.min() >= 415 and counts.max() <= 470  # as the data README says
    assert data.load_mnist("test", root=SHARED, download=False).note == ""  # MNIST is complete


def test_partial_fashion_file_under_the_official_name_fails_its_checksum(tmp_path):
    folder = tmp_path / "fashion_mnist"
    folder.mkdir()
    for kind in ("images-idx3", "labels-idx1"):
        partial = (SHARED / "fashion_mnist" / f"t10k-{kind}-ubyte.first4443.gz").read_bytes()
        (folder / f"t10k-{kind}-ubyte.gz").write_bytes(partial)
    with pytest.raises(data.ChecksumError, match="t10k-images-idx3-ubyte.gz has md5"):
        data.load_mnist("test", fashion=True, root=tmp_path, download=False)


def test_official_fashion_files_win_over_the_shipped_prefix(tmp_path):
    images = np.zeros((10, 28, 28), np.uint8)
    write_idx(tmp_path / "fashion_mnist" / "t10k-images-idx3-ubyte", images, compress=False)
    write_idx(tmp_path / "fashion_mnist" / "t10k-labels-idx1-ubyte", np.arange(10, dtype=np.uint8), compress=False)
    f = data.load_mnist("test", fashion=True, root=tmp_path, download=False)
    assert len(f.images) == 10 and f.note == ""


# --------------------------------------------------------------------------- generated files


@pytest.mark.parametrize("compress", [True, False])
def test_idx_round_trip(tmp_path, compress):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, (5, 4, 3), dtype=np.uint8), rng.integers(-999, 999, (7,), dtype=np.int32),
              rng.integers(-9, 9, (2, 3), dtype=np.int16), rng.normal(size=(3, 2))]
    for k, array in enumerate(arrays):
        write_idx(tmp_path / f"a{k}", array, compress)
        out = data.read_idx(tmp_path / f"a{k}")
        assert out.dtype == array.dtype and out.dtype.isnative
        np.testing.assert_array_equal(out, array)


def test_idx_rejects_bad_files(tmp_path):
    write_idx(tmp_path / "ok", np.zeros((4, 2, 2), np.uint8), compress=False)
    (tmp_path / "short").write_bytes((tmp_path / "ok").read_bytes()[:-1])
    (tmp_path / "magic").write_bytes(b"\x01\x00\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="announces shape"):
        data.read_idx(tmp_path / "short")
    with pytest.raises(ValueError, match="not an IDX file"):
        data.read_idx(tmp_path / "magic")


@pytest.mark.parametrize("compress", [True, False])
def test_load_mnist_from_generated_files(isolated, compress):
    rng = np.random.default_rng(1)
    images, labels = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8), rng.integers(0, 10, 6).astype(np.uint8)
    suffix = ".gz" if compress else ""
    write_idx(isolated / "r" / "fashion_mnist" / f"train-images-idx3-ubyte{suffix}", images, compress)
    write_idx(isolated / "r" / "fashion_mnist" / f"train-labels-idx1-ubyte{suffix}", labels, compress)
    if compress:  # a .gz with a known official md5 is checked; these are not the official files
        with pytest.raises(data.ChecksumError):
            data.load_mnist("train", fashion=True, root=isolated / "r", download=False)
    f = data.load_mnist("train", fashion=True, root=isolated / "r", download=False, verify_checksums=False)
    np.testing.assert_array_equal(f.images, images)
    np.testing.assert_array_equal(f.labels, labels)
    assert f.classes[1] == "Trouser" and f.source == "fashion:train"


def test_missing_files_error_names_files_and_places(isolated, monkeypatch, dead_server):
    monkeypatch.setitem(sys.modules, "torchvision", None)  # torchvision unavailable -> ImportError
    monkeypatch.setenv(data.URL_ENV_VAR, dead_server)
    with pytest.raises(data.DataNotFoundError) as err:
        data.load_mnist("train", root=isolated / "r")
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    for part in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", data.ENV_VAR,
                 str(isolated / "r" / "mnist"), "Could not download"):
        assert part in msg
    with pytest.raises(data.DataNotFoundError, match="download=False"):
        data.load_one_shot_runs(download=False)


def test_lookup_order_root_env_cache_shared(isolated, monkeypatch):
    places = {k: isolated / k for k in ("root", "env", "xdg", "shared")}
    for k in ("env", "xdg", "shared"):
        sub = "paththeory/omniglot" if k == "xdg" else "omniglot"
        (places[k] / sub / "all_runs").mkdir(parents=True)  # the unpacked form of all_runs.zip
    monkeypatch.setattr(data, "BUNDLED_DATA", places["shared"])
    (places["root"] / "omniglot-py").mkdir(parents=True)  # torchvision's folder name
    (places["root"] / "omniglot-py" / "all_runs.zip").write_bytes(b"")

    def where(**kw):
        return data.locate("omniglot", ["all_runs.zip"], download=False, **kw)[0]

    assert where(root=places["root"]) == places["root"] / "omniglot-py" / "all_runs.zip"
    monkeypatch.setenv(data.ENV_VAR, str(places["env"]))
    assert where() == places["env"] / "omniglot" / "all_runs"
    assert where(root=isolated / "empty") == places["env"] / "omniglot" / "all_runs"  # falls through
    monkeypatch.delenv(data.ENV_VAR)
    assert where() == places["xdg"] / "paththeory" / "omniglot" / "all_runs"
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated / "empty-cache"))
    assert where() == places["shared"] / "omniglot" / "all_runs"


def test_download_goes_through_torchvision_into_first_root(isolated, monkeypatch):
    calls = []

    def download_url(url, root, filename=None, md5=None):
        calls.append((url, md5))
        Path(root).mkdir(parents=True, exist_ok=True)
        (Path(root) / filename).write_bytes(b"zip")

    fake = types.ModuleType("torchvision")
    fake.datasets = types.ModuleType("torchvision.datasets")
    fake.datasets.utils = types.ModuleType("torchvision.datasets.utils")
    fake.datasets.utils.download_url = download_url
    monkeypatch.setitem(sys.modules, "torchvision", fake)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", fake.datasets)
    monkeypatch.setitem(sys.modules, "torchvision.datasets.utils", fake.datasets.utils)
    (path,) = data.locate("omniglot", ["all_runs.zip"])
    assert path == isolated / "xdg" / "paththeory" / "omniglot" / "all_runs.zip"
    assert calls == [("https://github.com/brendenlake/omniglot/raw/master/python/one-shot-classification/all_runs.zip",
                      "e8996daecdf12afeeb4a53a179f06b19")]


def test_omniglot_from_generated_zip_and_folder_agree(isolated):
    files = fake_drawings(seed=2)
    write_zip(isolated / "z" / "omniglot" / "images_evaluation.zip", "images_evaluation", files)
    for name, image in files.items():  # the same drawings as an unpacked folder tree
        path = isolated / "d" / "omniglot" / "images_evaluation" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes(image))
    with pytest.raises(data.ChecksumError):
        data.load_omniglot("evaluation", root=isolated / "z", download=False)
    z = data.load_omniglot("evaluation", root=isolated / "z", download=False, verify_checksums=False)
    with pytest.raises(data.ChecksumError, match="holds 12 of the 13180 drawings of images_evaluation.zip"):
        data.load_omniglot("evaluation", root=isolated / "d", download=False)  # an unpacked folder: counted
    d = data.load_omniglot("evaluation", root=isolated / "d", download=False, verify_checksums=False)
    names = sorted(files)
    assert z.classes == d.classes == ("Alpha/character01", "Alpha/character02", "Beta/character01", "Beta/character02")
    for s in (z, d):
        np.testing.assert_array_equal(s.images, np.stack([np.where(files[n], 255, 0) for n in names]))
        np.testing.assert_array_equal(s.labels, np.repeat(np.arange(4), 3))
        np.testing.assert_array_equal(s.class_alphabet, [0, 0, 1, 1])


def test_generated_small_splits_union_once(isolated):
    shared = fake_drawings(seed=3, alphabets=("Greek",))
    one = {**fake_drawings(seed=4, alphabets=("Balinese",)), **shared}
    two = {**fake_drawings(seed=5, alphabets=("Tagalog",), characters=3), **shared}
    for k, files in ((1, one), (2, two)):
        write_zip(isolated / "omniglot" / f"images_background_small{k}.zip", f"images_background_small{k}", files)
    s = data.load_omniglot("background_small", root=isolated, download=False, verify_checksums=False)
    assert len(s.images) == len({**one, **two}) == 3 * (2 + 2 + 3)
    assert s.alphabets == ("Balinese", "Greek", "Tagalog") and s.n_classes == 7


def test_auto_subset_falls_back_to_small_splits(isolated):
    write_zip(isolated / "omniglot" / "images_background_small1.zip", "images_background_small1", fake_drawings(6))
    write_zip(isolated / "omniglot" / "images_background_small2.zip", "images_background_small2", fake_drawings(6))
    s = data.load_omniglot(root=isolated, download=False, verify_checksums=False)
    assert s.source == "omniglot:background_small" and len(s.images) == 12
    write_zip(isolated / "omniglot" / "images_background.zip", "images_background", fake_drawings(7, characters=1))
    s = data.load_omniglot(root=isolated, download=False, verify_checksums=False)
    assert s.source == "omniglot:background" and len(s.images) == 6


def test_generated_one_shot_runs(isolated):
    rng = np.random.default_rng(8)
    answers = np.array([[2, 0, 1], [1, 2, 0]])
    drawings = {}
    with zipfile.ZipFile(isolated / "all_runs.zip", "w") as zf:
        for r in range(2):
            lines = [f"run{r + 1:02d}/test/item{i + 1:02d}.png run{r + 1:02d}/training/class{answers[r, i] + 1:02d}.png"
                     for i in range(3)]
            zf.writestr(f"run{r + 1:02d}/class_labels.txt", "\r\n".join(lines) + "\r\n")
            for kind, stem in (("training", "class"), ("test", "item")):
                for k in range(3):
                    drawings[kind, r, k] = rng.random((105, 105)) < 0.8
                    zf.writestr(f"run{r + 1:02d}/{kind}/{stem}{k + 1:02d}.png", png_bytes(drawings[kind, r, k]))
    (isolated / "omniglot").mkdir()
    (isolated / "all_runs.zip").rename(isolated / "omniglot" / "all_runs.zip")
    runs = data.load_one_shot_runs(root=isolated, download=False, verify_checksums=False)
    np.testing.assert_array_equal(runs.answers, answers)
    np.testing.assert_array_equal(runs.training[1, 2], np.where(drawings["training", 1, 2], 255, 0))
    np.testing.assert_array_equal(runs.test[0, 1], np.where(drawings["test", 0, 1], 255, 0))


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="split"):
        data.load_mnist("validation")
    with pytest.raises(ValueError, match="subset"):
        data.load_omniglot("everything", download=False)
    with pytest.raises(ValueError, match="dataset"):
        data.locate("cifar", ["x"])


# --------------------------------------------------------------------------- downloads (local HTTP server)


class _Mirror(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; paths listed in ``truncate`` announce their full size but send half of it."""

    truncate: set[str] = set()

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        if self.path.lstrip("/") in self.truncate:
            body = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        super().do_GET()


@pytest.fixture
def mirror(tmp_path):
    """A local HTTP server on 127.0.0.1 serving official file names from the shipped copies."""
    served = tmp_path / "served"
    for folder in ("omniglot", "mnist"):
        shutil.copytree(SHARED / folder, served / folder)
    handler = functools.partial(_Mirror, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served
    server.shutdown()
    server.server_close()
    _Mirror.truncate = set()


@pytest.fixture
def dead_server():
    """A base URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_download_from_mirror_into_the_first_root(isolated, monkeypatch, mirror):
    base, served = mirror
    monkeypatch.setenv(data.URL_ENV_VAR, base)
    runs = data.load_one_shot_runs(root=isolated / "r")
    saved = isolated / "r" / "omniglot" / "all_runs.zip"
    assert saved.read_bytes() == (served / "omniglot" / "all_runs.zip").read_bytes()
    assert runs.training.shape == (20, 20, 105, 105)
    assert not list((isolated / "r" / "omniglot").glob("*.part"))
    assert data.file_url("omniglot", "all_runs.zip") == f"{base}/omniglot/all_runs.zip"


def test_download_with_wrong_md5_saves_nothing(isolated, monkeypatch, mirror):
    base, served = mirror
    monkeypatch.setenv(data.URL_ENV_VAR, base)
    target = isolated / "dl" / "t10k-labels-idx1-ubyte.gz"
    with pytest.raises(data.ChecksumError, match="nothing was saved"):
        data.download_file(data.file_url("mnist", target.name), target, md5="0" * 32)
    assert not target.exists() and not list(target.parent.iterdir())


def test_truncated_download_saves_nothing(isolated, monkeypatch, mirror):
    base, served = mirror
    _Mirror.truncate = {"mnist/t10k-images-idx3-ubyte.gz"}
    target = isolated / "dl" / "t10k-images-idx3-ubyte.gz"
    with pytest.raises(data.DownloadError, match="stopped after|Could not download"):
        data.download_file(f"{base}/mnist/t10k-images-idx3-ubyte.gz", target, md5=data.CHECKSUMS["mnist"][target.name])
    assert not target.exists() and not list(target.parent.iterdir())


def test_server_down_gives_a_clear_error(isolated, monkeypatch, dead_server):
    monkeypatch.setenv(data.URL_ENV_VAR, dead_server)
    with pytest.raises(data.DownloadError, match="Could not download http://127.0.0.1"):
        data.download_file(data.file_url("mnist", "t10k-labels-idx1-ubyte.gz"), isolated / "x.gz")
    with pytest.raises(data.DataNotFoundError, match="Could not download"):
        data.load_one_shot_runs(root=isolated / "r")


# --------------------------------------------------------------------------- damaged and incomplete data


def write_folder(folder: Path, files: dict[str, np.ndarray]) -> None:
    for name, image in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes(image))


def test_an_edited_drawing_in_an_unpacked_folder_is_read_again(isolated):
    files = fake_drawings(seed=9)
    folder = isolated / "omniglot" / "images_evaluation"
    write_folder(folder, files)
    first = data.load_omniglot("evaluation", root=isolated, download=False, verify_checksums=False)
    name = min(files)
    edited = ~files[name]
    (folder / name).write_bytes(png_bytes(edited))
    os.utime(folder, (1, 1))  # the folder's own mtime says nothing about the files inside
    again = data.load_omniglot("evaluation", root=isolated, download=False, verify_checksums=False)
    np.testing.assert_array_equal(again.images[0], np.where(edited, 255, 0))
    assert not np.array_equal(first.images[0], again.images[0])
    (folder / max(files)).unlink()  # a removed drawing is noticed too
    assert len(data.load_omniglot("evaluation", root=isolated, download=False, verify_checksums=False).images) == 11


@pytest.mark.parametrize("name, n", [("images_background_small1", 2720), ("images_background", 19280),
                                     ("all_runs", 800)])
def test_a_half_unpacked_official_folder_is_refused(isolated, name, n):
    folder = isolated / "omniglot" / name
    write_folder(folder, fake_drawings(seed=10))
    with pytest.raises(data.ChecksumError, match=rf"holds 12 of the {n} drawings of {name}.zip: the folder is incomplete"):
        data.verify("omniglot", folder)


@pytest.mark.parametrize("form", ["zip", "folder"])
@pytest.mark.parametrize("damage, message", [
    ("not a png", "is not a readable PNG"),
    ("truncated png", "is not a readable PNG"),
    ("odd size", "is 104 x 105 pixels, not the 105 x 105 of every Omniglot drawing"),
])
def test_a_damaged_or_odd_sized_drawing_is_named(isolated, form, damage, message):
    files = fake_drawings(seed=11)
    bad = sorted(files)[2]
    raw = {name: png_bytes(image) for name, image in files.items()}
    raw[bad] = {"not a png": b"GIF89a nonsense", "truncated png": raw[bad][:60],
                "odd size": png_bytes(np.zeros((105, 104), bool))}[damage]
    folder = isolated / "omniglot"
    if form == "zip":
        folder.mkdir()
        with zipfile.ZipFile(folder / "images_evaluation.zip", "w") as zf:
            for name, content in raw.items():
                zf.writestr(f"images_evaluation/{name}", content)
    else:
        for name, content in raw.items():
            (folder / "images_evaluation" / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / "images_evaluation" / name).write_bytes(content)
    with pytest.raises(ValueError, match=message) as err:
        data.load_omniglot("evaluation", root=isolated, download=False, verify_checksums=False)
    assert bad in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 cut short", b"\x00" * 500])
def test_a_damaged_zip_is_named_with_the_fix(isolated, content):
    (isolated / "omniglot").mkdir()
    (isolated / "omniglot" / "images_evaluation.zip").write_bytes(content)
    with pytest.raises(ValueError, match="images_evaluation.zip is not a readable zip archive .*delete it"):
        data.load_omniglot("evaluation", root=isolated, download=False, verify_checksums=False)
    with pytest.raises(data.ChecksumError):  # with the checksum on, the md5 says so first
        data.load_omniglot("evaluation", root=isolated, download=False)


def write_runs(folder: Path, skip: Sequence[str] = (), labels: dict[int, str] | None = None, runs=(1, 2)) -> None:
    """Two runs of three classes as an unpacked ``all_runs`` folder, leaving out the files in ``skip``."""
    rng = np.random.default_rng(12)
    for r in runs:
        files = {f"run{r:02d}/class_labels.txt": "".join(
            f"run{r:02d}/test/item{i:02d}.png run{r:02d}/training/class{i:02d}.png\n" for i in (1, 2, 3)).encode()}
        if labels and r in labels:
            files[f"run{r:02d}/class_labels.txt"] = labels[r].encode()
        for kind, stem in (("training", "class"), ("test", "item")):
            for k in (1, 2, 3):
                files[f"run{r:02d}/{kind}/{stem}{k:02d}.png"] = png_bytes(rng.random((105, 105)) < 0.8)
        for name, content in files.items():
            if name not in skip:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(content)


@pytest.mark.parametrize("case, message", [
    ({"skip": ["run02/class_labels.txt"]}, "run02 lack class_labels.txt"),
    ({"runs": (1, 3)}, "run02 lack class_labels.txt .or are missing."),
    ({"skip": ["run02/test/item03.png"]}, r"drawing \(2, 'test', 3\) is missing"),
    ({"labels": {2: "run02/test/item01.png\n"}}, "run02/class_labels.txt cannot be read"),
    ({"labels": {1: "run01/test/item01.png run01/training/class07.png\n"}}, "class 7 is not in 1..3"),
    ({"labels": {2: "run02/test/item01.png run02/training/class02.png\n"}}, "does not give the class of every one"),
])
def test_incomplete_one_shot_runs_are_refused(isolated, case, message):
    folder = isolated / "omniglot" / "all_runs"
    write_runs(folder, **case)
    with pytest.raises(ValueError, match=message) as err:
        data.load_one_shot_runs(root=isolated, download=False, verify_checksums=False)
    assert "\n" not in str(err.value)


def test_complete_one_shot_runs_from_a_folder(isolated):
    write_runs(isolated / "omniglot" / "all_runs")
    runs = data.load_one_shot_runs(root=isolated, download=False, verify_checksums=False)
    assert runs.training.shape == runs.test.shape == (2, 3, 105, 105)
    np.testing.assert_array_equal(runs.answers, [[0, 1, 2], [0, 1, 2]])
    assert not runs.training.flags.writeable
