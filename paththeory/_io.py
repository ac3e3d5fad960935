"""Low-level file writing and environment switches, shared by the whole package.

Every file the package writes goes through :func:`atomic_path`: the bytes go to a temporary file
in the target's folder and are renamed over the target only once complete, so a failed or
interrupted write leaves the previous file (or nothing), never a damaged one. A run's outputs
(``results.json`` beside its figures) are written into a private staging folder first and moved
into place while the run holds the folder's lock (:func:`staged_outputs`, :func:`folder_lock`), so
two runs writing into one folder at once take turns and the folder ends with one run's files, never
a mix. This module imports nothing else of the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """The on/off switch in environment variable ``name``: 1/true/yes/on or 0/false/no/off (or unset)."""
    value = os.environ.get(name, "").strip().lower()
    if value in TRUE_WORDS or value in FALSE_WORDS:
        return value in TRUE_WORDS
    raise ValueError(f"${name} must be one of 1, true, yes, on or 0, false, no, off; got {os.environ[name]!r}.")


#: Set (to anything) in the environment of a graded run: ``solution()`` and ``reveal=True`` refuse,
#: and a chapter that lacks a file fails instead of showing a notice (:mod:`paththeory.display.notices`).
GRADING_ENV = "PATHTHEORY_GRADING"


def grading() -> bool:
    """Whether this process is a graded run (:data:`GRADING_ENV` set)."""
    return bool(os.environ.get(GRADING_ENV))


def cache_dir() -> Path:
    """The user cache folder, ``$XDG_CACHE_HOME/paththeory`` (default ``~/.cache/paththeory``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "paththeory"


def _file_mode() -> int:
    """The permissions a newly created file gets under the current umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to: renamed to ``path`` on success, removed on any error.

    The temporary name keeps ``path``'s suffix, so writers that choose a format by it (numpy,
    matplotlib) work unchanged; two concurrent writers never share one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_with(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Atomically create ``path`` by calling ``write(temporary_path)``; returns ``path``."""
    with atomic_path(path) as tmp:
        write(tmp)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically write ``text`` (UTF-8) to ``path``."""
    return write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _unserialisable(obj, where: str = "") -> str | None:
    """Where ``obj`` holds something JSON cannot: ``"['a'][0] is a float32"``, or ``None``."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                return f"key {key!r} of {where or 'the object'} is a {type(key).__name__}"
            found = _unserialisable(value, f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        return next(filter(None, (_unserialisable(v, f"{where}[{i}]") for i, v in enumerate(obj))), None)
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return None
    return f"{where or 'the value'} is a {type(obj).__name__}"


def json_text(obj, what: str = "the data") -> str:
    """``obj`` as indented JSON text; a value JSON cannot hold raises a ValueError that names it."""
    try:
        return json.dumps(obj, indent=1) + "\n"
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} cannot be written as JSON: {_unserialisable(obj) or err}; convert it to plain "
                         "Python numbers, lists and strings (e.g. float(x), x.tolist()). Nothing was written.") from None


def write_json(path: str | os.PathLike, obj, what: str = "the data") -> Path:
    """Atomically write ``obj`` as JSON; an unserialisable ``obj`` fails before anything is written."""
    return write_text(path, json_text(obj, what))


def save_npz(path: str | os.PathLike, arrays: dict, *, compressed: bool = False) -> Path:
    """Atomically write ``arrays`` as an ``.npz`` (zip of ``.npy``, no pickles)."""
    save = np.savez_compressed if compressed else np.savez
    return write_with(path, lambda tmp: save(tmp, **arrays))


def save_figure(fig, path: str | os.PathLike, **options) -> Path:
    """Atomically write a matplotlib figure (format from ``path``'s suffix)."""
    return write_with(path, lambda tmp: fig.savefig(tmp, **options))


def sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 digest of a file."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def check_output_folder(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`Path`, after checking that it is, or can be created as, a writable folder.

    Raises :class:`NotADirectoryError` when ``path`` or a folder above it is a file and
    :class:`PermissionError` when the nearest existing folder is not writable; creates nothing.
    """
    if not str(path).strip():
        raise ValueError("the output folder is empty; give a folder name.")
    path = Path(path).expanduser()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        where = "is a file" if existing == path else f"cannot be created: {existing} is a file"
        raise NotADirectoryError(f"the output folder {path} {where}; choose another folder.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"the output folder {path} cannot be written: {existing} is not writable; "
                              "choose another folder.")
    return path


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the existing ``folder`` while writing several files into it.

    Writers that take it take turns: a second one waits until the first is done. The lock is the
    operating system's (``flock`` on the folder itself, so it leaves no file behind) and is released
    when the block ends or the process dies. Where ``fcntl`` is missing (Windows), it does nothing.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def staged_outputs(out_dir: str | os.PathLike, manifest: str) -> Iterator[Path]:
    """A staging folder inside ``out_dir`` for one run's output files.

    On success the staged files replace those of ``out_dir``, under the folder's lock
    (:func:`folder_lock`): first the old ``manifest`` (e.g. ``results.json``) is removed, then every
    other file is moved in and the new ``manifest`` last. So a folder holding a ``manifest`` always
    holds the outputs written with it, also when two runs finish at once (the later one's files
    replace all of the earlier one's); one without is incomplete. On any error or interrupt the staged
    files are deleted and ``out_dir`` is untouched (unless the error came while moving files in, when
    it has no ``manifest``).
    """
    out = check_output_folder(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        yield stage
        with folder_lock(out):
            (out / manifest).unlink(missing_ok=True)
            for file in sorted(stage.iterdir(), key=lambda p: p.name == manifest):
                os.replace(file, out / file.name)
    finally:
        for file in stage.iterdir():  # flat: the writers put files only
            file.unlink()
        stage.rmdir()


def write_outputs(out_dir: str | os.PathLike, results: dict, arrays: dict,
                  figures: dict[str, Callable[[], object]]) -> list[Path]:
    """A run's ``results.json``, ``features.npz`` (``arrays``) and ``<name>.png`` from each figure maker,
    all or nothing (:func:`staged_outputs`; ``results.json`` goes in last). ``results`` that JSON
    cannot hold fail before anything is written."""
    import matplotlib.pyplot as plt

    text = json_text(results, "the results")
    with staged_outputs(out_dir, "results.json") as stage:
        save_npz(stage / "features.npz", arrays, compressed=True)
        for name, make in figures.items():
            fig = make()
            try:
                save_figure(fig, stage / f"{name}.png", dpi=120, bbox_inches="tight")
            finally:
                plt.close(fig)
        write_text(stage / "results.json", text)
    out = Path(out_dir).expanduser()
    return [out / "results.json", out / "features.npz", *(out / f"{name}.png" for name in figures)]
