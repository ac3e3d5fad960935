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
Archives and ``.gz`` files with a known md5 are verified on load (:class:`ChecksumError`), and so
is the number of drawings in an unpacked official Omniglot folder. A damaged or odd-sized drawing
raises a ValueError naming the file. Decoded data are cached in memory for the life of the
process, as read-only arrays, keyed on the name, size and mtime of every file read.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.client
import io
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Literal, Sequence

import numpy as np

from paththeory import _io
from paththeory._io import cache_dir

ENV_VAR = "PATHTHEORY_DATA"
#: The data shipped with the package (see its README.md for licenses and md5s).
BUNDLED_DATA = Path(__file__).resolve().parents[1] / "datafiles"
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

#: PNG files in each official Omniglot archive: an unpacked folder holding fewer is incomplete.
OFFICIAL_DRAWINGS: dict[str, int] = {
    "images_background": 964 * 20,
    "images_evaluation": 659 * 20,
    "images_background_small1": 2720,
    "images_background_small2": 3120,
    "all_runs": 20 * 2 * 20,
}
#: Height and width of every Omniglot drawing.
DRAWING_SHAPE = (105, 105)

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


def search_roots(root: str | os.PathLike | None = None) -> list[Path]:
    """Roots in lookup order: ``root``, ``$PATHTHEORY_DATA``, the cache, the shipped copies."""
    roots = [Path(r).expanduser() for r in (root, os.environ.get(ENV_VAR)) if r]
    roots.append(cache_dir())
    if BUNDLED_DATA.is_dir():
        roots.append(BUNDLED_DATA)
    return list(dict.fromkeys(roots))


def _download_root(roots: Sequence[Path]) -> Path:
    """Where downloads go: the first root, unless it is the package's own shipped folder (part of an
    installation, possibly read-only), in which case the user cache."""
    first = roots[0]
    return cache_dir() if first.resolve() == BUNDLED_DATA.resolve() else first


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

    The bytes go to a temporary file beside ``path`` (:func:`paththeory._io.atomic_path`: two
    concurrent downloads never share one) and are renamed only when complete and, if ``md5`` is
    given, matching it; a failed download leaves nothing under ``path``. Raises
    :class:`DownloadError` for a network failure or a truncated transfer and
    :class:`ChecksumError` for a wrong md5.
    """
    import urllib.error
    import urllib.request

    from tqdm.auto import tqdm

    digest, received = hashlib.md5(), 0
    with _io.atomic_path(path) as part:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
                size = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=size, unit="B", unit_scale=True, desc=path.name, disable=None, leave=False) as bar:
                    for block in iter(lambda: response.read(1 << 16), b""):
                        out.write(block)
                        digest.update(block)
                        received += len(block)
                        bar.update(len(block))
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            reason = getattr(err, "reason", None) or err
            raise DownloadError(f"Could not download {url} ({type(err).__name__}: {reason}).") from None
        if size is not None and received != size:
            raise DownloadError(f"Downloading {url} stopped after {received} of {size} bytes; try again.")
        if md5 is not None and digest.hexdigest() != md5:
            raise ChecksumError(
                f"The download of {url} has md5 {digest.hexdigest()}, expected {md5}: the server sent a "
                "different or damaged file; nothing was saved. Try again later or fetch it by hand."
            )
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
            _download(dataset, missing, _download_root(roots))
        except Exception as err:  # network, HTTP or checksum failure of the download itself
            note = f"downloading them failed ({type(err).__name__}: {err})"
        found.update({name: _find(dataset, name, roots) for name in missing})
        missing = [name for name, path in found.items() if path is None]
    if missing:
        raise DataNotFoundError(
            f"Missing {dataset} data file(s) {', '.join(missing)}: put them (or their unpacked form) in "
            f"{roots[0] / SUBDIRS[dataset][0]}, or point the {ENV_VAR} environment variable (or root= in Python, "
            f"--data-root of `paththeory train omniglot`) at a folder with a '{SUBDIRS[dataset][0]}/' subfolder "
            f"holding them; {note}. "
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
    """Raise :class:`ChecksumError` if ``path`` has a known official md5 and does not match it, or is
    the unpacked folder of an official Omniglot archive with fewer drawings than the archive holds
    (an interrupted unpacking). Uncompressed IDX files have no published checksum and pass unchecked.
    """
    path = Path(path)
    if path.is_dir() and path.name in OFFICIAL_DRAWINGS:
        found, wanted = sum(1 for f in _files(path) if f.suffix == ".png"), OFFICIAL_DRAWINGS[path.name]
        if found != wanted:
            raise ChecksumError(
                f"{path} holds {found} of the {wanted} drawings of {path.name}.zip: the folder is incomplete (an "
                f"interrupted unpacking?). Unpack {path.name}.zip into it again or delete it so that the zip is "
                "used (from Python, verify_checksums=False reads it anyway; the command line always checks)."
            )
        return
    expected = CHECKSUMS[dataset].get(path.name)
    if expected is None or not path.is_file():
        return
    got = md5sum(path)
    if got != expected:
        raise ChecksumError(
            f"{path} has md5 {got}, expected {expected}: the file is corrupt or not the official one. "
            "Delete it and download it again (from Python, verify_checksums=False reads it anyway; the command line "
            "always checks)."
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
    if len({path.parent for path in paths}) > 1:  # images of one copy with labels of another: refuse, never mix
        raise DataNotFoundError(
            f"The {dataset} {split} images and labels were found in different folders ({paths[0]} and {paths[1]}): "
            f"an incomplete copy of the data. Put both files in {paths[0].parent}, or remove the one there to use "
            f"the copy in {paths[1].parent}.")
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
        for file in _files(path):
            yield PurePosixPath(file.relative_to(path.parent).as_posix()), path.parent
        return
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise ValueError(f"{path} is not a readable zip archive ({err}): it is damaged or incomplete; delete it "
                         "and download it again, or unpack a good copy next to it as a folder.") from None
    for name in sorted(archive.namelist()):
        if not name.endswith("/"):
            yield PurePosixPath(name), archive


def _read_member(name: PurePosixPath, source: Path | zipfile.ZipFile) -> bytes:
    return source.read(str(name)) if isinstance(source, zipfile.ZipFile) else (source / name).read_bytes()


def _where(name: PurePosixPath, source: Path | zipfile.ZipFile) -> str:
    """The file a member is read from, for error messages."""
    return f"{source.filename}: {name}" if isinstance(source, zipfile.ZipFile) else str(source / name)


def _read_drawing(name: PurePosixPath, source: Path | zipfile.ZipFile) -> np.ndarray:
    """One Omniglot drawing ``[105, 105]`` uint8; a damaged or odd-sized PNG raises a ValueError naming it."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(_read_member(name, source))) as image:
            pixels = np.asarray(image.convert("L"), dtype=np.uint8)
    except (OSError, SyntaxError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise ValueError(f"{_where(name, source)} is not a readable PNG ({type(err).__name__}: {err}); the file is "
                         "damaged: replace it or download the data again.") from None
    if pixels.shape != DRAWING_SHAPE:
        raise ValueError(f"{_where(name, source)} is {pixels.shape[1]} x {pixels.shape[0]} pixels, not the 105 x 105 "
                         "of every Omniglot drawing; replace it with the official file.")
    return pixels


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
    images = np.stack([_read_drawing(*drawings[key]) for key in keys])
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


def _answers(text: bytes, n_classes: int, where: str) -> np.ndarray:
    """``[n_classes]`` training class (0-based) of each test item, from a run's ``class_labels.txt``."""
    answers = np.full(n_classes, -1, dtype=np.int64)
    try:
        for line in text.decode().split("\n"):
            if line.strip():
                item, train_class = (_number(PurePosixPath(f).stem) for f in line.split())
                if not (1 <= item <= n_classes and 1 <= train_class <= n_classes):
                    raise ValueError(f"item {item} or class {train_class} is not in 1..{n_classes}")
                answers[item - 1] = train_class - 1
    except ValueError as err:
        raise ValueError(f"{where} cannot be read ({err}); download or unpack all_runs.zip again.") from None
    if np.any(answers < 0):
        raise ValueError(f"{where} does not give the class of every one of the {n_classes} test items; "
                         "download or unpack all_runs.zip again.")
    return answers


@functools.lru_cache(maxsize=2)
def _read_runs(path: Path, stamp: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode the runs ``run01..runNN`` of ``path``; each must be complete, with as many classes as ``run01``."""
    pngs: dict[tuple[int, str, int], np.ndarray] = {}
    answer_lines: dict[int, bytes] = {}
    for name, source in _members(path):
        run = next((p for p in name.parts if p.startswith("run") and p[3:].isdigit()), None)
        if run is None:
            continue
        if name.name == "class_labels.txt":
            answer_lines[int(run[3:])] = _read_member(name, source)
        elif name.suffix == ".png" and name.parent.name in ("training", "test"):
            pngs[(int(run[3:]), name.parent.name, _number(name.stem))] = _read_drawing(name, source)
    runs = sorted(answer_lines.keys() | {key[0] for key in pngs})
    n_classes = sum(1 for key in pngs if key[:2] == (runs[0], "training")) if runs else 0
    if not runs or n_classes == 0:
        raise ValueError(f"{path} holds no one-shot runs (runNN/training, runNN/test, runNN/class_labels.txt).")
    incomplete = [f"run{r:02d}" for r in range(1, runs[-1] + 1) if r not in answer_lines]
    extra = sorted({f"run{key[0]:02d}" for key in pngs if not 1 <= key[2] <= n_classes})
    if incomplete or extra:
        problem = (f"{', '.join(incomplete)} lack class_labels.txt (or are missing)" if incomplete
                   else f"{', '.join(extra)} hold more than the {n_classes} drawings per set of run01")
        raise ValueError(f"{path}: the one-shot runs are incomplete: {problem}; download or unpack all_runs.zip again.")
    answers = np.stack([_answers(answer_lines[run], n_classes, f"{path}: run{run:02d}/class_labels.txt")
                        for run in runs])
    try:
        training, test = (
            np.stack([[pngs[(run, kind, k + 1)] for k in range(n_classes)] for run in runs])
            for kind in ("training", "test")
        )
    except KeyError as err:
        raise ValueError(f"{path}: one-shot run drawing {err.args[0]} is missing; "
                         "download or unpack all_runs.zip again.") from None
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


def _files(path: Path) -> list[Path]:
    """``[path]`` for a file; every file inside, sorted, for a folder."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def _stamp(paths: Sequence[Path]) -> tuple:
    """Name, size and mtime of each file (of every file inside a folder): part of the in-memory cache
    key, so an edited, added or removed file is noticed and the data read again."""
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for p in paths for f in _files(p))


def _number(stem: str) -> int:
    """The number in a run file name: ``class08`` -> 8, ``item01`` -> 1."""
    return int("".join(ch for ch in stem if ch.isdigit()))


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
