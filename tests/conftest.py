"""Shared fixtures: small random architectures and data."""

from __future__ import annotations

import os

import numpy as np
import pytest
import hypothesis.configuration
from hypothesis import settings

# Hypothesis keeps no example database: it would be written into the working folder (.hypothesis/),
# outside pytest's temporary folders (see the audit below). No deadline: a busy machine must not
# turn a slow example into a failure (sizes decide what a test computes, never the clock).
settings.register_profile("paththeory", database=None, deadline=None)
settings.load_profile("paththeory")

# Every compiled program goes into JAX's persistent compilation cache (``import paththeory`` turns it on), not
# only those whose compilation took a second or more (JAX's default, a choice that follows the machine's
# speed): the other test process, the busy-machine run of .ci/busy and a second run load the programs the first
# compiled instead of compiling them again. A loaded program is the compiled one: no result changes.
if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
    import jax

    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin has set up its session folder
def pytest_configure(config):
    """Hypothesis caches the constants it reads in the sources under its home folder (./.hypothesis by
    default), already while collecting: point it into pytest's session folder before that."""
    hypothesis.configuration.set_hypothesis_home_dir(config._tmp_path_factory.getbasetemp() / "hypothesis")

import paththeory as pt


def random_qk_arch(heads, n0=12, g=4, readout="mean", seed=0, variances=None):
    """A random QK architecture with ``heads[l]`` heads in layer ``l``."""
    rng = np.random.default_rng(seed)
    layers = [pt.QKAttention(rng.normal(size=(h, g, n0)), rng.normal(size=(h, g, n0))) for h in heads]
    return pt.Architecture(layers, readout=readout, variances=variances)


def assert_gradient_matches_central_differences(f, Us, rng, directions: int = 3, h: float = 1e-6) -> None:
    """``jax.grad(f)`` at the matrices ``Us`` against central differences of ``f`` along ``directions``
    random symmetric directions per matrix: relative error below 1e-6 (truncation O(h^2) ~ 1e-12,
    round-off ~ 1e-16 |f| / h ~ 1e-10)."""
    import jax
    import jax.numpy as jnp

    f = jax.jit(f)  # one compilation instead of thousands of eager operations
    grads = jax.jit(jax.grad(f))([jnp.asarray(u) for u in Us])
    for l, U in enumerate(Us):
        for _ in range(directions):
            D = rng.normal(size=U.shape)
            D = D + D.T
            plus = [u if m != l else u + h * D for m, u in enumerate(Us)]
            minus = [u if m != l else u - h * D for m, u in enumerate(Us)]
            fd = (float(f(plus)) - float(f(minus))) / (2 * h)
            assert abs(fd - float(jnp.sum(grads[l] * D))) < 1e-6 * max(1.0, abs(fd))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def small_problem():
    """L = 2, H = (2, 2), P = 60 random tokens with labels from a random teacher."""
    rng = np.random.default_rng(7)
    arch = random_qk_arch((2, 2), n0=16, readout="mean", seed=3)
    x = rng.normal(size=(90, 6, 16))
    teacher = rng.normal(size=16)
    y = np.sign(x[:, 0, :] @ teacher + 0.3 * x[:, 1, :] @ teacher)
    feats = np.asarray(pt.path_features(arch, x))
    return arch, feats[:60], y[:60], feats[60:], y[60:]


# --------------------------------------------------------------------------- files outside the test's folders
#
# Tests write only under the temporary folders pytest gives them, so they pass on any machine (a
# fresh clone, a fresh HOME and TMPDIR). An audit hook (PEP 578) watches every file the test process
# opens for writing, creates, renames or removes, and every file it reads under the system's
# temporary folder; anything outside the allowed places fails the test that did it. Allowed: the
# session's pytest folder (``tempfile`` is pointed into it, so library temporaries land there too),
# the user caches (JAX's compilation cache, Matplotlib's font cache), ``__pycache__`` and
# ``.pytest_cache`` folders, and devices.

import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

_WRITE_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "shutil.move"}
_outside: list[str] = []
_roots: dict[str, tuple[str, ...]] = {"write": (), "tmp": (), "read": ()}


def _opens_for_writing(mode, flags) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND))


def _absolute(path) -> str | None:
    if isinstance(path, int):
        return None
    try:
        return os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _allowed_write(path: str) -> bool:
    return ((path + os.sep).startswith(_roots["write"]) or "/__pycache__/" in path or path.endswith("/__pycache__")
            or "/.pytest_cache" in path)


def _audit(event: str, args: tuple) -> None:
    if event == "open":
        path = _absolute(args[0])
        if path is None:
            return
        if _opens_for_writing(args[1], args[2]):
            if not _allowed_write(path):
                _outside.append(f"writes {path}")
        elif path.startswith(_roots["tmp"]) and not _allowed_write(path) and not path.startswith(_roots["read"]):
            _outside.append(f"reads {path}")
    elif event in _WRITE_EVENTS and _roots["write"]:
        if event.startswith("os.") and isinstance(args[-1], int) and args[-1] >= 0:
            return  # a name relative to an open folder (inside shutil.rmtree, whose own event has the path)
        for arg in args[:2] if event in ("os.rename", "shutil.move") else args[:1]:
            path = _absolute(arg)
            if path is not None and not _allowed_write(path):
                _outside.append(f"{event} {path}")


@pytest.fixture(scope="session", autouse=True)
def _files_stay_in_test_folders(tmp_path_factory):
    """Point ``tempfile`` (and subprocesses, through ``TMPDIR``) into pytest's session folder and start
    watching file access (see above)."""
    import matplotlib

    from paththeory._compilation_cache import default_folder
    from paththeory.tasks.data import cache_dir

    base = tmp_path_factory.getbasetemp().resolve()
    system_tmp = os.path.realpath(tempfile.gettempdir())
    session_tmp = base / "tempfile"
    session_tmp.mkdir(exist_ok=True)
    old_tempdir, old_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = str(session_tmp)
    os.environ["TMPDIR"] = str(session_tmp)
    places = [base, cache_dir(), default_folder(), Path(matplotlib.get_cachedir()), Path(matplotlib.get_configdir())]
    _roots["write"] = tuple({os.path.join(f(p), "") for p in places for f in (os.path.abspath, os.path.realpath)}) + ("/dev/",)
    _roots["tmp"] = (system_tmp + os.sep, "/tmp/")
    # Reads that are no temporary file even when they lie in the temporary folder (a clone or a HOME
    # made there): the repository, the home folder's configuration, the interpreter and its packages.
    readable = [Path(__file__).resolve().parents[1], Path.home(), sys.prefix, sys.base_prefix, *sys.path]
    _roots["read"] = tuple({os.path.join(f(str(p)), "") for p in readable if str(p) for f in (os.path.abspath, os.path.realpath)})
    if not getattr(sys, "_paththeory_audit", False):  # an audit hook cannot be removed: add it once
        sys.addaudithook(_audit)
        sys._paththeory_audit = True
    yield
    _roots["write"] = _roots["tmp"] = _roots["read"] = ()
    tempfile.tempdir = old_tempdir
    if old_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_env


@pytest.fixture(autouse=True)
def _no_file_outside_test_folders(_files_stay_in_test_folders):
    """Fail a test that wrote, or read a temporary file, outside the folders pytest gave it."""
    start = len(_outside)
    yield
    new = _outside[start:]
    if new:
        shown = "; ".join(dict.fromkeys(new[:5]))
        pytest.fail(f"the test touched files outside pytest's temporary folders ({len(new)}): {shown}",
                    pytrace=False)


# --------------------------------------------------------------------------- modules loaded from their files

#: The folder of the book's own Sphinx extensions (``paththeory_tools.sphinxext``, listed in ``_config.yml``).
BOOK_EXTENSIONS = Path(__file__).resolve().parents[1] / "tools" / "paththeory_tools" / "sphinxext"


@pytest.fixture(scope="session")
def module_from_file():
    """``module_from_file(name, path)``: a fresh module ``name`` executed from the Python file ``path``
    (a script outside the package, such as a Sphinx extension of the book or a CI check), left out of
    ``sys.modules``."""
    import importlib.util

    def load(name: str, path: Path):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def book_extension(module_from_file):
    """``book_extension("script_dedup")``: a fresh module of the book's Sphinx extension
    ``tools/paththeory_tools/sphinxext/script_dedup.py``, loaded from its file (a fresh copy, outside ``sys.modules``)."""
    return lambda name: module_from_file(name, BOOK_EXTENSIONS / f"{name}.py")


# --------------------------------------------------------------------------- the book's table of contents


def toc_entries(toc: dict) -> list[str]:
    """All ``file`` entries of a jb-book ``_toc.yml`` (root first), at any depth."""
    found = [toc["root"]]

    def walk(items: list) -> None:
        for item in items:
            if "file" in item:
                found.append(item["file"])
            for key in ("chapters", "sections", "parts"):
                walk(item.get(key, []))

    walk(toc.get("chapters", []) + toc.get("parts", []))
    return found


def sampler_agreement_z(a, b):
    """Per-quantity z-scores between two posterior runs (:class:`paththeory.sampling.PosteriorSamples`): every
    entry of ``U``, the test predictor and its second moment (every output's, ``f_draws`` flattened over the
    outputs: ``[chains, draws, P_test]`` or ``[chains, draws, P_test, C]``), as
    ``|m_a - m_b| / sqrt(se_a^2 + se_b^2)`` with each run's Monte Carlo standard error from its chains' ESS."""
    from paththeory import sampling

    def moments(res):
        iu = np.triu_indices(res.U.shape[0])
        f = res.f_draws.reshape(*res.f_draws.shape[:2], -1)  # one output: unchanged
        draws = np.concatenate([res.U_draws[:, :, iu[0], iu[1]], f, f**2], axis=2)
        ess = sampling.effective_sample_size(draws)
        flat = draws.reshape(-1, draws.shape[-1])
        return flat.mean(0), flat.std(0) / np.sqrt(ess)

    (m1, se1), (m2, se2) = moments(a), moments(b)
    return np.abs(m1 - m2) / np.sqrt(se1**2 + se2**2)
