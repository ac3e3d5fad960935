"""JAX's persistent compilation cache for the package's solvers.

Compiling the order-parameter solver takes far longer than running it (Omniglot size, 2-core
CPU: about 13 s to compile, 0.6 s to solve; on an H100, 31.5 s against 0.31 s). ``import
paththeory`` therefore points JAX's persistent compilation cache at a user folder, so that a
second chapter, a re-run or a new Python process loads the compiled programs from disk instead
of compiling them again.

* The folder is ``$PATHTHEORY_COMPILATION_CACHE`` if set, else ``<user cache>/jax``, i.e.
  ``$XDG_CACHE_HOME/paththeory/jax`` (default ``~/.cache/paththeory/jax``). Delete it at any time;
  it only holds compiled programs, keyed by JAX on the program, the JAX version and the device.
* Set ``PATHTHEORY_NO_COMPILATION_CACHE=1`` before the import to leave JAX's settings untouched.
* :func:`disabled` turns the cache off for a block of code: the benchmark times its compilations there, so a
  program loaded from the cache is not counted as compiled.
* A cache folder chosen by the user (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)`` before the import) is kept.
* A damaged entry (e.g. cut short by a full disk or a killed process) is deleted the first time it
  is read, with one warning, and JAX compiles and writes it again; on its own, JAX would warn on
  every run and never replace it.

The switch is global to the process, like JAX's own option: other JAX code in the same process
uses the cache too. Only programs that take at least a second to compile are written (JAX's
default threshold), so small functions do not fill the folder.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from pathlib import Path

import jax

from paththeory import _io

ENV_FOLDER = "PATHTHEORY_COMPILATION_CACHE"
ENV_OPT_OUT = "PATHTHEORY_NO_COMPILATION_CACHE"


def default_folder() -> Path:
    """``$PATHTHEORY_COMPILATION_CACHE``, else ``$XDG_CACHE_HOME/paththeory/jax`` (``~/.cache/...``)."""
    if os.environ.get(ENV_FOLDER):
        return Path(os.environ[ENV_FOLDER]).expanduser()
    from paththeory._io import cache_dir

    return cache_dir() / "jax"


def opted_out() -> bool:
    """Whether ``$PATHTHEORY_NO_COMPILATION_CACHE`` asks to leave JAX's cache settings alone."""
    return _io.env_flag(ENV_OPT_OUT)


def _repairing(read):
    """JAX's cache reader ``read(cache_key, ...)``, changed so that an entry it cannot read is deleted
    (with a warning) and reported missing: JAX then compiles the program and writes the entry again."""

    @functools.wraps(read)
    def wrapper(cache_key, *args, **kwargs):
        try:
            return read(cache_key, *args, **kwargs)
        except Exception as err:  # any failure to read an entry means a damaged entry
            where = folder()
            if where is None or type(err).__name__ == "CacheVerificationError":
                raise
            for suffix in ("-cache", "-atime"):
                (where / f"{cache_key}{suffix}").unlink(missing_ok=True)
            warnings.warn(f"paththeory: removed the damaged compilation cache entry {where / cache_key} "
                          f"({type(err).__name__}: {err}); it is compiled and written again.", stacklevel=2)
            return None, None

    wrapper.repairs_damaged_entries = True
    return wrapper


def _repair_damaged_entries() -> None:
    """Install :func:`_repairing` around JAX's (private) cache reader, where this JAX version has it."""
    try:
        from jax._src import compilation_cache as jax_cache
    except ImportError:
        return
    read = getattr(jax_cache, "get_executable_and_time", None)
    if read is not None and not getattr(read, "repairs_damaged_entries", False):
        jax_cache.get_executable_and_time = _repairing(read)


def enable(folder: str | os.PathLike | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache in ``folder`` (default :func:`default_folder`).

    Returns the folder in use, or ``None`` when the user opted out. A folder the user already gave
    JAX is kept (and returned). A folder that cannot be created leaves the cache off, with a warning.
    """
    if opted_out():
        return None
    current = jax.config.jax_compilation_cache_dir
    if current and folder is None:
        _repair_damaged_entries()
        return Path(current)
    path = Path(folder).expanduser() if folder is not None else default_folder()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        warnings.warn(f"paththeory: no persistent compilation cache ({path} cannot be created: {err}); "
                      f"set {ENV_FOLDER} to a writable folder or {ENV_OPT_OUT}=1 to silence this.", stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    _repair_damaged_entries()
    return path


@contextlib.contextmanager
def disabled():
    """Within the block JAX neither reads nor writes the persistent cache: every new program is compiled. The
    settings (and JAX's record of whether the cache is in use, which it keeps once per process) are restored
    after it."""
    from jax.experimental.compilation_cache import compilation_cache as jax_cache

    was = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    jax_cache.reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", was)
        jax_cache.reset_cache()


def in_use() -> bool:
    """Whether JAX would read and write the persistent cache for a compilation now: a folder is set and the cache
    is enabled (not inside :func:`disabled`)."""
    return folder() is not None and bool(jax.config.jax_enable_compilation_cache)


def folder() -> Path | None:
    """The persistent cache folder JAX uses now, or ``None`` when it is off."""
    current = jax.config.jax_compilation_cache_dir
    return Path(current) if current else None
