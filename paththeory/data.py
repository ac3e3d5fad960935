"""Readers for the image data sets of the paper's Omniglot experiment (§4.2, App. C): Omniglot,
MNIST and Fashion-MNIST.

Everything is returned as plain numpy arrays (``uint8`` images ``[n, H, W]`` as PIL's
greyscale ``"L"`` mode gives them, so Omniglot ink is 0 and its background 255) plus metadata.

Where the files are looked for, in this order (the first place holding a file wins):

1. the ``root`` argument,
2. the folder in the environment variable ``PATHTHEORY_DATA``,
3. the user cache, ``$XDG_CACHE_HOME/paththeory`` (by default ``~/.cache/paththeory``),
4. the copies shipped inside the package (``paththeory/datafiles``: the two small Omniglot
   background splits, the one-shot runs, the MNIST test set and the first 4,443 Fashion-MNIST
   test images; the data the shipped network was trained and evaluated on).

Inside a root each data set has its own folder: ``omniglot/`` (or torchvision's
``omniglot-py/``), ``mnist/`` (or ``MNIST/raw/``), ``fashion_mnist/`` (or ``FashionMNIST/raw/``).
A ``.zip`` may also be present unpacked (a folder of the same name without ``.zip``) and an IDX
``.gz`` file may be present uncompressed. Files still missing are downloaded from their official
locations (with the standard library, or through torchvision when it is installed; md5-checked,
written atomically) into the first of root / ``PATHTHEORY_DATA`` / cache; if that is impossible
a single :class:`DataNotFoundError` names the missing files and where to put them.
The Fashion-MNIST test split falls back on the shipped 4,443-image prefix when the official
files can be neither found nor downloaded; the result's ``note`` says so.
Archives and ``.gz`` files with a known md5 are verified on load (:class:`ChecksumError`).
Decoded data are cached in memory for the life of the process.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.client
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Literal, Sequence

import numpy as np

ENV_VAR = "PATHTHEORY_DATA"
#: The data shipped with the package (see its README.md for licenses and md5s).
BUNDLED_DATA = Path(__file__).resolve().parent / "datafiles"
#: Set to a base URL laid out like a data root (``omniglot/``, ``mnist/``, ``fashion_mnist/``) to
#: download from that mirror instead of the official locations (used by the tests).
URL_ENV_VAR = "PATHTHEORY_DATA_URL"
#: Official download locations of each data set's files.
URLS: dict[str, str] = {
    "omniglot": "https://github.com/brendenlake/omniglot/raw/master/python",
    "mnist": "https://ossci-datasets.s3.amazonaws.com/mnist",
    "fashion": "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com",
}

Dataset = Literal["omniglot", "mnist", "fashion"]
OmniglotSubset = Literal["auto", "background", "evaluation", "background_small"]

#: Folder of each data set inside a root, ours first, then torchvision's layout.
SUBDIRS: dict[str, tuple[str, ...]] = {
    "omniglot": ("omniglot", "omniglot-py"),
    "mnist": ("mnist", "MNIST/raw"),
    "fashion": ("fashion_mnist", "FashionMNIST/raw"),
}

#: md5 of the official files (brendenlake/omniglot, torchvision's MNIST and FashionMNIST resources).
CHECKSUMS: dict[str, dict[str, str]] = {
    "omniglot": {
        "images_background.zip": "68d2efa1b9178cc56df9314c21c6e718",
        "images_evaluation.zip": "6b91aef0f799c5bb55b94e3f2daec811",
        "images_background_small1.zip": "e704a628b5459e08445c13499850abc4",
        "images_background_small2.zip": "b75a71a51d3b13f821f212756fe481fd",
        "all_runs.zip": "e8996daecdf12afeeb4a53a179f06b19",
    },
    "mnist": {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
    "fashion": {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
        "t10k-images-idx3-ubyte.first4443.gz": "a556627b5fe4ba426704267252ebc247",
        "t10k-labels-idx1-ubyte.first4443.gz": "d57d65053981fb9ced2457783ce21085",
    },
}

#: Partial copies that stand in for an official (dataset, split) when its files can be neither
#: found nor downloaded: the first ``n`` of ``n_official`` records, as valid IDX files.
PARTIAL_SPLITS: dict[tuple[str, str], tuple[tuple[str, str], int, int]] = {
    ("fashion", "test"): (("t10k-images-idx3-ubyte.first4443.gz", "t10k-labels-idx1-ubyte.first4443.gz"), 4443, 10000),
}

OMNIGLOT_FILES: dict[str, tuple[str, ...]] = {
    "background": ("images_background.zip",),
    "evaluation": ("images_evaluation.zip",),
    "background_small": ("images_background_small1.zip", "images_background_small2.zip"),
}
_OMNIGLOT_URL_PATHS = {"all_runs.zip": "one-shot-classification/all_runs.zip"}

MNIST_CLASSES = tuple(str(d) for d in range(10))
FASHION_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class DataNotFoundError(FileNotFoundError):
    """Data files that are neither on disk nor downloadable; the message says where to put them."""


class ChecksumError(ValueError):
    """A data file whose md5 differs from the official one."""


class DownloadError(OSError):
    """A download that failed or stopped short; nothing was saved."""


# --------------------------------------------------------------------------- containers


@dataclass(frozen=True)
class LabelledImages:
    """Greyscale images with integer labels.

    Attributes:
      images: ``[n, H, W]`` uint8 (read-only; cached for the process).
      labels: ``[n]`` int64, indices into ``classes``.
      classes: class names (MNIST digits, Fashion-MNIST items, Omniglot ``"Alphabet/characterNN"``).
      source: which files it came from, e.g. ``"mnist:test"`` or ``"omniglot:background_small"``.
      note: empty, or what differs from the official split (e.g. that only the first 4,443 of
        the 10,000 Fashion-MNIST test images were read).
    """

    images: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]
    source: str
    note: str = ""

    @property
    def n_classes(self) -> int:
        return len(self.classes)


@dataclass(frozen=True)
class OmniglotSet(LabelledImages):
    """Omniglot characters (classes ``"Alphabet/characterNN"``, 20 drawings each, 105 x 105)."""

    @property
    def alphabets(self) -> tuple[str, ...]:
        """Sorted names of the alphabets present."""
        return tuple(sorted({c.split("/")[0] for c in self.classes}))

    @property
    def class_alphabet(self) -> np.ndarray:
        """``[n_classes]`` index into :attr:`alphabets` of each character."""
        names = self.alphabets
        return np.array([names.index(c.split("/")[0]) for c in self.classes], dtype=np.int64)


@dataclass(frozen=True)
class OneShotRuns:
    """The 20 official one-shot runs on the evaluation alphabets (Lake et al. 2015).

    Attributes:
      training: ``[R, 20, 105, 105]`` uint8, one drawing per class (``runNN/training/classKK.png``).
      test: ``[R, 20, 105, 105]`` uint8, one more drawing per class (``runNN/test/itemKK.png``).
      answers: ``[R, 20]`` int64; ``answers[r, i]`` is the training class of test item ``i``.
    """

    training: np.ndarray
    test: np.ndarray
    answers: np.ndarray


# --------------------------------------------------------------------------- locating files


def cache_dir() -> Path:
    """The user cache folder, ``$XDG_CACHE_HOME/paththeory`` (default ``~/.cache/paththeory``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "paththeory"


def search_roots(root: str | os.PathLike | None = None) -> list[Path]:
    """Roots in lookup order: ``root``, ``$PATHTHEORY_DATA``, the cache, the shipped copies."""
    roots = [Path(r).expanduser() for r in (root, os.environ.get(ENV_VAR)) if r]
    roots.append(cache_dir())
    if BUNDLED_DATA.is_dir():
        roots.append(BUNDLED_DATA)
    return list(dict.fromkeys(roots))


def _variants(name: str) -> tuple[str, ...]:
    """A file and the unpacked form that may stand for it (``x.zip`` -> folder ``x``, ``x.gz`` -> ``x``)."""
    stem = name.removesuffix(".zip").removesuffix(".gz")
    return (name, stem) if stem != name else (name,)


def _find(dataset: str, name: str, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        for sub in SUBDIRS[dataset]:
            for variant in _variants(name):
                path = root / sub / variant
                unpacked_zip = name.endswith(".zip") and variant != name
                if path.is_dir() if unpacked_zip else path.is_file():
                    return path
    return None


def _download(dataset: str, names: Sequence[str], target: Path) -> None:
    """Fetch ``names`` into ``target``: through torchvision when it is installed and no mirror is
    set, otherwise with the standard library (:func:`download_file`)."""
    if not os.environ.get(URL_ENV_VAR):
        try:
            from torchvision import datasets
            from torchvision.datasets.utils import download_url
        except ImportError:
            pass
        else:
            if dataset == "mnist":
                datasets.MNIST(str(target), download=True)
            elif dataset == "fashion":
                datasets.FashionMNIST(str(target), download=True)
            else:
                for name in names:
                    download_url(file_url(dataset, name), str(target / SUBDIRS[dataset][0]), filename=name,
                                 md5=CHECKSUMS[dataset].get(name))
            return
    for name in names:
        download_file(file_url(dataset, name), target / SUBDIRS[dataset][0] / name, CHECKSUMS[dataset].get(name))


def file_url(dataset: Dataset, name: str) -> str:
    """Where an official file is downloaded from: ``$PATHTHEORY_DATA_URL/<folder>/<name>`` when that
    mirror is set (laid out like a data root), else the official location (:data:`URLS`)."""
    mirror = os.environ.get(URL_ENV_VAR)
    if mirror:
        return f"{mirror.rstrip('/')}/{SUBDIRS[dataset][0]}/{name}"
    return f"{URLS[dataset]}/{_OMNIGLOT_URL_PATHS.get(name, name)}"


def download_file(url: str, path: Path, md5: str | None = None, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``path`` with the standard library, atomically, showing a progress bar.

    The bytes go to ``path`` + ``.part`` and are renamed only when complete and, if ``md5`` is
    given, matching it; a failed download leaves nothing under ``path``. Raises
    :class:`DownloadError` for a network failure or a truncated transfer and
    :class:`ChecksumError` for a wrong md5.
    """
    import urllib.error
    import urllib.request

    from tqdm.auto import tqdm

    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    digest, received = hashlib.md5(), 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            size = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=size, unit="B", unit_scale=True, desc=path.name, disable=None, leave=False) as bar:
                for block in iter(lambda: response.read(1 << 16), b""):
                    out.write(block)
                    digest.update(block)
                    received += len(block)
                    bar.update(len(block))
        if size is not None and received != size:
            raise DownloadError(f"Downloading {url} stopped after {received} of {size} bytes; try again.")
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        part.unlink(missing_ok=True)
        reason = getattr(err, "reason", None) or err
        raise DownloadError(f"Could not download {url} ({type(err).__name__}: {reason}).") from None
    except DownloadError:
        part.unlink(missing_ok=True)
        raise
    if md5 is not None and digest.hexdigest() != md5:
        part.unlink()
        raise ChecksumError(
            f"The download of {url} has md5 {digest.hexdigest()}, expected {md5}: the server sent a "
            "different or damaged file; nothing was saved. Try again later or fetch it by hand."
        )
    os.replace(part, path)
    return path


def locate(
    dataset: Dataset, names: Sequence[str], root: str | os.PathLike | None = None, download: bool = True
) -> list[Path]:
    """Paths of the named files of ``dataset``, each from the first root holding it (module docstring).

    Missing files are downloaded (:func:`download_file`) when ``download`` is true. Raises
    :class:`DataNotFoundError` naming every file still missing.
    """
    if dataset not in SUBDIRS:
        raise ValueError(f"dataset must be one of {sorted(SUBDIRS)}; got {dataset!r}.")
    roots = search_roots(root)
    found = {name: _find(dataset, name, roots) for name in names}
    missing = [name for name, path in found.items() if path is None]
    note = "downloading was switched off (download=False)"
    if missing and download:
        try:
            _download(dataset, missing, roots[0])
        except Exception as err:  # network, HTTP or checksum failure of the download itself
            note = f"downloading them failed ({type(err).__name__}: {err})"
        found.update({name: _find(dataset, name, roots) for name in missing})
        missing = [name for name, path in found.items() if path is None]
    if missing:
        raise DataNotFoundError(
            f"Missing {dataset} data file(s) {', '.join(missing)}: put them (or their unpacked form) in "
            f"{roots[0] / SUBDIRS[dataset][0]}, or point root= or the {ENV_VAR} environment variable at a folder "
            f"with a '{SUBDIRS[dataset][0]}/' subfolder holding them; {note}. "
            f"Searched: {', '.join(str(r) for r in roots)}."
        )
    return [found[name] for name in names]


def md5sum(path: str | os.PathLike) -> str:
    """Hex md5 digest of a file."""
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(dataset: Dataset, path: str | os.PathLike) -> None:
    """Raise :class:`ChecksumError` if ``path`` has a known official md5 and does not match it.

    Unpacked folders and uncompressed IDX files have no published checksum and pass unchecked.
    """
    path = Path(path)
    expected = CHECKSUMS[dataset].get(path.name)
    if expected is None or not path.is_file():
        return
    got = md5sum(path)
    if got != expected:
        raise ChecksumError(
            f"{path} has md5 {got}, expected {expected}: the file is corrupt or not the official one. "
            "Delete it and download it again (or pass verify_checksums=False to read it anyway)."
        )


# --------------------------------------------------------------------------- IDX (MNIST)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (gzipped or not; detected from its first bytes) into a native-endian array."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise ValueError(f"{path} is a damaged gzip file ({err}); download it again.") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number {raw[:4].hex()}).")
    ndim = raw[3]
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = 4 + 4 * ndim + dtype.itemsize * int(np.prod(shape))
    if len(raw) != expected:
        raise ValueError(f"{path}: its header announces shape {shape} ({expected} bytes); the file has {len(raw)}.")
    data = np.frombuffer(raw, dtype=dtype, offset=4 + 4 * ndim).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


@functools.lru_cache(maxsize=8)
def _read_idx_pair(images: Path, labels: Path, stamp: tuple) -> tuple[np.ndarray, np.ndarray]:
    x, y = read_idx(images), read_idx(labels).astype(np.int64)
    if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(f"{images} and {labels} do not form an image/label pair: shapes {x.shape}, {y.shape}.")
    return _frozen(x.astype(np.uint8)), _frozen(y)


def load_mnist(
    split: Literal["train", "test"] = "test",
    *,
    fashion: bool = False,
    root: str | os.PathLike | None = None,
    download: bool = True,
    verify_checksums: bool = True,
) -> LabelledImages:
    """MNIST (or Fashion-MNIST with ``fashion=True``): ``images [n, 28, 28]`` uint8, ``labels [n]``.

    The package ships the MNIST test set and the first 4,443 of the 10,000 Fashion-MNIST test
    images; the rest is downloaded. The Fashion-MNIST test split uses the
    official files when they can be found or downloaded and the shipped prefix otherwise, in
    which case ``note`` says how many of the official images were read.

    Example:
      >>> f = load_mnist("test", fashion=True, download=False)
      >>> f.images.shape[1:], f.classes[:2]
      ((28, 28), ('T-shirt/top', 'Trouser'))
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}.")
    dataset = "fashion" if fashion else "mnist"
    prefix = "train" if split == "train" else "t10k"
    note = ""
    try:
        paths = locate(dataset, (f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"), root, download)
    except DataNotFoundError:
        if (dataset, split) not in PARTIAL_SPLITS:
            raise
        names, n, n_official = PARTIAL_SPLITS[dataset, split]
        try:
            paths = locate(dataset, names, root, download=False)
        except DataNotFoundError:
            raise DataNotFoundError(
                f"Missing {dataset} {split} data: neither the official files nor the partial copy "
                f"({', '.join(names)}) were found or could be downloaded. Reinstall paththeory (it ships "
                f"the partial copy) or put the official files in {search_roots(root)[0] / SUBDIRS[dataset][0]}."
            ) from None
        note = f"read {n:,} of the {n_official:,} official {split} images (the shipped partial copy)"
    if verify_checksums:
        for path in paths:
            verify(dataset, path)
    images, labels = _read_idx_pair(*paths, stamp=_stamp(paths))
    classes = FASHION_CLASSES if fashion else MNIST_CLASSES
    return LabelledImages(images, labels, classes, f"{dataset}:{split}", note)


# --------------------------------------------------------------------------- Omniglot


def _members(path: Path) -> Iterator[tuple[PurePosixPath, Path | zipfile.ZipFile]]:
    """Relative paths of the files in a zip or folder, each with what to read it from."""
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            yield PurePosixPath(file.relative_to(path.parent).as_posix()), path.parent
    else:
        archive = zipfile.ZipFile(path)
        for name in sorted(archive.namelist()):
            if not name.endswith("/"):
                yield PurePosixPath(name), archive


def _read_member(name: PurePosixPath, source: Path | zipfile.ZipFile) -> bytes:
    return source.read(str(name)) if isinstance(source, zipfile.ZipFile) else (source / name).read_bytes()


def _decode_png(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("L"), dtype=np.uint8)


@functools.lru_cache(maxsize=8)
def _read_omniglot(paths: tuple[Path, ...], stamp: tuple) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Decode the PNGs of the given archives; a drawing present in several archives is read once."""
    drawings: dict[tuple[str, str], tuple[PurePosixPath, Path | zipfile.ZipFile]] = {}
    for path in paths:
        for name, source in _members(path):
            if name.suffix == ".png" and len(name.parts) >= 3:
                drawings.setdefault((f"{name.parts[-3]}/{name.parts[-2]}", name.parts[-1]), (name, source))
    if not drawings:
        found_in = ", ".join(map(str, paths))
        raise ValueError(f"No Omniglot drawings (Alphabet/character/drawing.png) found in {found_in}.")
    keys = sorted(drawings)
    classes = tuple(sorted({character for character, _ in keys}))
    index = {c: k for k, c in enumerate(classes)}
    images = np.stack([_decode_png(_read_member(*drawings[key])) for key in keys])
    labels = np.array([index[character] for character, _ in keys], dtype=np.int64)
    return _frozen(images), _frozen(labels), classes


def load_omniglot(
    subset: OmniglotSubset = "auto",
    *,
    root: str | os.PathLike | None = None,
    download: bool = True,
    verify_checksums: bool = True,
) -> OmniglotSet:
    """Omniglot drawings ``[n, 105, 105]`` uint8 with character labels.

    Args:
      subset: ``"background"`` (964 characters, 30 alphabets), ``"evaluation"`` (659 characters,
        20 alphabets), ``"background_small"`` (the union of the two small background splits:
        Greek and Latin are in both with identical files and are kept once, so 242 characters,
        8 alphabets, 4,840 drawings), or ``"auto"``: ``"background"`` if it can be found or
        downloaded, otherwise ``"background_small"``. The result's ``source`` says which.
      root, download: see :func:`locate`.
      verify_checksums: check the zips' md5 against the official ones.
    """
    if subset == "auto":
        try:
            return load_omniglot("background", root=root, download=download, verify_checksums=verify_checksums)
        except DataNotFoundError:
            subset = "background_small"
    if subset not in OMNIGLOT_FILES:
        raise ValueError(f"subset must be 'auto' or one of {sorted(OMNIGLOT_FILES)}; got {subset!r}.")
    paths = locate("omniglot", OMNIGLOT_FILES[subset], root, download)
    if verify_checksums:
        for path in paths:
            verify("omniglot", path)
    images, labels, classes = _read_omniglot(tuple(paths), stamp=_stamp(paths))
    return OmniglotSet(images, labels, classes, f"omniglot:{subset}")


@functools.lru_cache(maxsize=2)
def _read_runs(path: Path, stamp: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pngs: dict[tuple[int, str, int], np.ndarray] = {}
    answer_lines: dict[int, bytes] = {}
    for name, source in _members(path):
        run = next((p for p in name.parts if p.startswith("run") and p[3:].isdigit()), None)
        if run is None:
            continue
        if name.name == "class_labels.txt":
            answer_lines[int(run[3:])] = _read_member(name, source)
        elif name.suffix == ".png" and name.parent.name in ("training", "test"):
            pngs[(int(run[3:]), name.parent.name, _number(name.stem))] = _decode_png(_read_member(name, source))
    runs = sorted(answer_lines)
    n_classes = sum(1 for key in pngs if key[:2] == (runs[0], "training")) if runs else 0
    if not runs or n_classes == 0:
        raise ValueError(f"{path} holds no one-shot runs (runNN/training, runNN/test, runNN/class_labels.txt).")
    answers = np.zeros((len(runs), n_classes), dtype=np.int64)
    for r, run in enumerate(runs):
        for line in answer_lines[run].decode().split("\n"):
            if line.strip():
                item, train_class = (_number(PurePosixPath(f).stem) for f in line.split())
                answers[r, item - 1] = train_class - 1
    try:
        training, test = (
            np.stack([[pngs[(run, kind, k + 1)] for k in range(n_classes)] for run in runs])
            for kind in ("training", "test")
        )
    except KeyError as err:
        raise ValueError(f"{path}: one-shot run drawing {err.args[0]} is missing.") from None
    return _frozen(training), _frozen(test), _frozen(answers)


def load_one_shot_runs(
    *, root: str | os.PathLike | None = None, download: bool = True, verify_checksums: bool = True
) -> OneShotRuns:
    """The 20 one-shot runs of ``all_runs.zip`` (or its unpacked folder ``all_runs/``)."""
    (path,) = locate("omniglot", ("all_runs.zip",), root, download)
    if verify_checksums:
        verify("omniglot", path)
    return OneShotRuns(*_read_runs(path, stamp=_stamp([path])))


# --------------------------------------------------------------------------- helpers


def _stamp(paths: Sequence[Path]) -> tuple:
    """Size and mtime of each path: part of the in-memory cache key, so edited files are re-read."""
    return tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in paths)


def _number(stem: str) -> int:
    """The number in a run file name: ``class08`` -> 8, ``item01`` -> 1."""
    return int("".join(ch for ch in stem if ch.isdigit()))


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
