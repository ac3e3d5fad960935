"""Nothing lost, nothing damaged: every file the package writes is written atomically
(paththeory._io), a run's outputs are all-or-nothing, caches repair or ignore damaged entries and
hand out read-only arrays, and environment switches mean what they say."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from paththeory import _io


def _tree(folder) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- the atomic writer


@pytest.mark.parametrize("error", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, error):
    target = tmp_path / "results.json"
    target.write_text("old")

    def write(tmp):
        tmp.write_text("half of the new")
        raise error

    with pytest.raises(type(error)):
        _io.write_with(target, write)
    assert _tree(tmp_path) == {"results.json": b"old"}


def test_atomic_writes_keep_the_suffix_get_normal_permissions_and_never_share_a_temporary(tmp_path):
    seen = []
    with _io.atomic_path(tmp_path / "a.npz") as one, _io.atomic_path(tmp_path / "a.npz") as two:
        seen += [one, two]
        np.savez(one, x=np.arange(3))  # numpy would append .npz to a name without it
        np.savez(two, x=np.arange(4))
    assert seen[0] != seen[1] and all(p.suffix == ".npz" and p.parent == tmp_path for p in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["a.npz"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "a.npz").stat().st_mode) == 0o666 & ~umask
    with np.load(tmp_path / "a.npz") as f:
        np.testing.assert_array_equal(f["x"], np.arange(3))  # the writer to finish last wins, whole
    fig = plt.figure()
    _io.save_figure(fig, tmp_path / "f.png")
    plt.close(fig)
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("value, where", [
    ({"a": np.float32(1.5)}, "['a'] is a float32"),
    ({"a": [1, {"b": {1, 2}}]}, "['a'][1]['b'] is a set"),
    ({"a": np.arange(3)}, "['a'] is a ndarray"),
    ({(1, 2): 3}, "key (1, 2) of the object is a tuple"),
])
def test_json_that_cannot_be_written_names_the_value_and_writes_nothing(tmp_path, value, where):
    with pytest.raises(ValueError, match="cannot be written as JSON") as err:
        _io.write_json(tmp_path / "x.json", value, "the results")
    assert where in str(err.value) and "Nothing was written" in str(err.value) and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value, expected", [
    ("1", True), ("true", True), ("Yes", True), (" on ", True),
    ("", False), ("0", False), ("false", False), ("NO", False), ("off", False),
])
def test_environment_switches(monkeypatch, value, expected):
    monkeypatch.setenv("PATHTHEORY_TEST_SWITCH", value)
    assert _io.env_flag("PATHTHEORY_TEST_SWITCH") is expected


@pytest.mark.parametrize("value", ["maybe", "2", "enable", "y e s"])
def test_an_unknown_switch_value_is_an_error(monkeypatch, value):
    monkeypatch.setenv("PATHTHEORY_TEST_SWITCH", value)
    with pytest.raises(ValueError, match=r"PATHTHEORY_TEST_SWITCH must be one of 1, true, yes, on or 0, false"):
        _io.env_flag("PATHTHEORY_TEST_SWITCH")


# --------------------------------------------------------------------------- output folders


@pytest.mark.parametrize("out, error, message", [
    ("afile", NotADirectoryError, "afile is a file"),
    ("afile/out", NotADirectoryError, "afile/out cannot be created: .*afile is a file"),
    ("afile/a/b", NotADirectoryError, "cannot be created: .*afile is a file"),
    ("", ValueError, "the output folder is empty"),
    ("  ", ValueError, "the output folder is empty"),
])
def test_an_unusable_output_folder_is_found_before_any_work(tmp_path, out, error, message):
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(error, match=message):
        _io.check_output_folder(tmp_path / out if out.strip() else out)
    assert _tree(tmp_path) == {"afile": b"mine"}


def test_usable_output_folders_are_not_created_by_the_check(tmp_path):
    for out in (tmp_path, tmp_path / "new", tmp_path / "new" / "deeper"):
        assert _io.check_output_folder(out) == out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_folder_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(PermissionError, match="is not writable"):
        _io.check_output_folder(locked / "out")


def _figure(text):
    def make():
        fig = plt.figure()
        fig.text(0.5, 0.5, text)
        return fig
    return make


def _old_run(out):
    _io.write_outputs(out, {"run": "old"}, {"x": np.zeros(2)}, {"accuracy": _figure("old"), "kernels": _figure("old")})
    return _tree(out)


def test_a_run_writes_its_outputs_and_replaces_an_older_run(tmp_path):
    out = tmp_path / "out"
    _old_run(out)
    paths = _io.write_outputs(out, {"run": "new"}, {"x": np.ones(2)}, {"accuracy": _figure("new"), "kernels": _figure("new")})
    assert [p.name for p in paths] == ["results.json", "features.npz", "accuracy.png", "kernels.png"]
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.png", "features.npz", "kernels.png", "results.json"]
    assert json.loads((out / "results.json").read_text()) == {"run": "new"}
    with np.load(out / "features.npz") as f:
        np.testing.assert_array_equal(f["x"], np.ones(2))


@pytest.mark.parametrize("failure", ["figure", "interrupt", "results"])
def test_a_run_that_fails_while_writing_leaves_the_older_run_untouched(tmp_path, failure):
    out = tmp_path / "out"
    before = _old_run(out)

    def broken():
        raise KeyboardInterrupt if failure == "interrupt" else RuntimeError("plotting failed")

    results = {"run": np.float32(1)} if failure == "results" else {"run": "new"}
    with pytest.raises((KeyboardInterrupt, RuntimeError, ValueError)):
        _io.write_outputs(out, results, {"x": np.ones(2)}, {"accuracy": _figure("new"), "kernels": broken})
    assert _tree(out) == before  # no new results.json beside old figures, no staging folder left


def test_an_interrupt_while_moving_outputs_in_leaves_no_results_json(tmp_path, monkeypatch):
    """The only window in which old and new files mix: the folder then has no results.json at all."""
    out = tmp_path / "out"
    _old_run(out)
    real = os.replace

    def interrupted(src, dst):
        if Path(dst).parent == out:  # the first staged file moved into the output folder
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(_io.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _io.write_outputs(out, {"run": "new"}, {"x": np.ones(2)}, {"accuracy": _figure("new")})
    assert not (out / "results.json").exists() and not [p for p in out.iterdir() if p.name.startswith(".")]


_SLOW_WRITER = """
import os, sys, time
from pathlib import Path
from paththeory import _io

out, run, lock = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "lock"
start, pause = {"a": (0.0, 0.1), "b": (0.5, 0.01)}[run]  # b starts moving later and overtakes a
real = os.replace
def slow(src, dst):
    time.sleep(pause)
    real(src, dst)
_io.os.replace = slow
if not lock:  # only to show that the test can fail (see the test's docstring)
    _io.folder_lock = lambda folder: __import__("contextlib").nullcontext()
(out / f"ready-{run}").touch()
while not all((out / f"ready-{r}").exists() for r in ("a", "b")):
    time.sleep(0.005)
with _io.staged_outputs(out, "results.json") as stage:
    for k in range(12):
        (stage / f"part{k:02d}.txt").write_text(run)
    (stage / "results.json").write_text(run)
    time.sleep(start)
"""


def test_two_runs_writing_into_one_folder_at_once_leave_one_run_s_files(tmp_path):
    """Two processes write the same files into one folder, the second starting to move its files in
    while the first is still moving; both finish, and the folder holds every file of one run and
    nothing of the other, with no staging folder left. (With the lock switched off, the third argument
    "none", the second run overtakes the first and the folder ends as a mix: checked by hand, not
    here, since that outcome depends on the timing.)"""
    out = tmp_path / "out"
    out.mkdir()
    runs = [subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(out), r, "lock"]) for r in ("a", "b")]
    assert [p.wait(timeout=600) for p in runs] == [0, 0]
    for r in ("a", "b"):
        (out / f"ready-{r}").unlink()
    files = _tree(out)
    assert sorted(files) == [f"part{k:02d}.txt" for k in range(12)] + ["results.json"]
    assert len(set(files.values())) == 1, files


def test_two_saves_of_one_checkpoint_at_once_leave_one_consistent_pair(tmp_path, monkeypatch):
    """Save "b" writes its metadata after save "a", and "a" renames its weights into place last: without
    the folder's lock that leaves b's metadata beside a's weights, which load_checkpoint refuses."""
    import threading

    from paththeory import training

    config = training.TrainConfig(d_model=8, qk_dim=4, heads=2, layers=1, channels=1)
    params = {r: training.init_params(config, 6, seed) for seed, r in enumerate("ab")}
    stem, both_wrote, real = tmp_path / "net", threading.Barrier(2), training.checkpoints._io.write_json

    def write_json(path, obj, what="the data"):
        time.sleep(0.2 if obj["run"] == "b" else 0.0)
        real(path, obj, what)
        try:  # both metadata files written before either weights file is renamed (only without the lock)
            both_wrote.wait(timeout=2)
        except threading.BrokenBarrierError:
            pass
        time.sleep(0.2 if obj["run"] == "a" else 0.0)

    monkeypatch.setattr(training.checkpoints._io, "write_json", write_json)
    threads = [threading.Thread(target=training.save_checkpoint, args=(stem, params[r], {"config": {"channels": 1}, "run": r}))
               for r in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    ck = training.load_checkpoint(stem)  # raises if the weights and the metadata came from different saves
    np.testing.assert_array_equal(ck.params["V0"], np.asarray(params[ck.metadata["run"]]["V0"], np.float32))


def test_experiments_check_their_output_folder_before_the_work(tmp_path, monkeypatch):
    from paththeory.experiments import markov, omniglot

    (tmp_path / "afile").write_text("")
    monkeypatch.setattr(markov, "problem", lambda *a: pytest.fail("the work started"))
    monkeypatch.setattr(omniglot, "trained_network", lambda *a, **k: pytest.fail("the work started"))
    for module in (markov, omniglot):
        with pytest.raises(NotADirectoryError, match="afile is a file"):
            module.run("smoke", tmp_path / "afile" / "out", progress=False)


# --------------------------------------------------------------------------- caches


def test_the_cached_markov_problem_is_read_only():
    from paththeory.experiments import markov

    first = markov.problem("good_path", 10, 12)
    for name in ("train", "test", "y_train", "y_test"):
        array = getattr(first, name)
        assert not array.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    again = markov.problem("good_path", 10, 12)
    assert again is first
    changed = first.train.copy()
    changed[0] = 0  # a copy can be changed
    assert not np.array_equal(changed, again.train)


@pytest.mark.parametrize("damage", ["truncated", "not a zip", "empty", "missing array"])
def test_a_damaged_sweep_cache_is_ignored_with_a_warning_and_removed(tmp_path, damage):
    from paththeory.experiments.omniglot import _read_sweep

    path = tmp_path / "sweep-abc.npz"
    good = {"U": np.zeros((1, 1, 2, 2)), "reports": json.dumps([[{}]]), "seconds": 1.0,
            "correct_validation": np.ones((1, 1, 4), bool)}
    _io.save_npz(path, good)
    assert _read_sweep(path, ["validation"])[3] == 1.0
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "not a zip":
        path.write_bytes(b"\x00" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        _io.save_npz(path, {k: v for k, v in good.items() if k != "U"})
    with pytest.warns(UserWarning, match=r"ignoring the damaged sweep cache .*sweep-abc.npz .*computed and written again"):
        assert _read_sweep(path, ["validation"]) is None
    assert not path.exists()


def test_theory_sweep_recomputes_and_rewrites_a_damaged_cache(tmp_path, small_problem):
    from paththeory.experiments.omniglot import theory_sweep

    arch, f_train, y_train, f_test, y_test = small_problem
    features, y = {"train": f_train, "validation": f_test}, {"train": y_train, "validation": y_test}
    first = theory_sweep(arch, features, y, (10,), (0.5,), cache=tmp_path)
    (path,) = tmp_path.iterdir()
    path.write_bytes(path.read_bytes()[:300])  # e.g. a disk that filled up under another writer
    with pytest.warns(UserWarning, match="damaged sweep cache"):
        second = theory_sweep(arch, features, y, (10,), (0.5,), cache=tmp_path)
    assert not second.cached and [p.name for p in tmp_path.iterdir()] == [path.name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        third = theory_sweep(arch, features, y, (10,), (0.5,), cache=tmp_path)
    assert third.cached
    np.testing.assert_allclose(third.U, first.U)


CACHE_PROGRAM = """
import warnings, jax, jax.numpy as jnp
warnings.simplefilter("always")
import paththeory
jax.jit(lambda x: jnp.linalg.cholesky(x @ x.T + jnp.eye(3)))(jnp.ones((3, 3))).block_until_ready()
"""


def _cached_run(folder) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATHTHEORY_", "JAX_COMPILATION"))}
    env.update(PATHTHEORY_COMPILATION_CACHE=str(folder), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.run([sys.executable, "-c", CACHE_PROGRAM], env=env, capture_output=True, text=True,
                          check=True).stderr


def test_a_damaged_compilation_cache_entry_is_repaired_once(tmp_path):
    folder = tmp_path / "jax"
    assert "Error" not in _cached_run(folder)
    entries = {p: p.read_bytes() for p in sorted(folder.glob("*-cache"))}
    assert len(entries) >= 2
    damaged = {path: good[:40] if i % 2 else b"\x00not a cache entry" * 3  # cut short, or another file's bytes
               for i, (path, good) in enumerate(entries.items())}
    for path, bad in damaged.items():
        path.write_bytes(bad)
    first = _cached_run(folder)
    assert first.count("removed the damaged compilation cache entry") == len(entries), first
    assert all(path.read_bytes() != bad for path, bad in damaged.items())  # written again
    assert "damaged" not in _cached_run(folder) and "Error reading" not in _cached_run(folder)


# --------------------------------------------------------------------------- student notebooks


def _book(folder, with_exercise=True):
    folder.mkdir()
    body = "### BEGIN SOLUTION\nanswer = 24\n### END SOLUTION\n" if with_exercise else "x = 1\n"
    (folder / "chapter.md").write_text(f"# A chapter\n\n```{{code-cell}} ipython3\n{body}```\n")
    (folder / "chapter.ipynb").write_text("the book's own notebook")
    return folder


@pytest.mark.parametrize("out", [".", "./", "sub/.."])
def test_student_notebooks_never_overwrite_the_book(tmp_path, out):
    from paththeory_tools.notebooks import write_student_notebooks

    book = _book(tmp_path / "book")
    before = _tree(book)
    with pytest.raises(ValueError, match="is the book folder itself"):
        write_student_notebooks(book, f"{book}/{out}")
    assert _tree(book) == before


def test_student_notebooks_need_chapters_with_exercises(tmp_path):
    from paththeory_tools.notebooks import write_student_notebooks

    with pytest.raises(ValueError, match="holds no chapter"):
        write_student_notebooks(_book(tmp_path / "plain", with_exercise=False), tmp_path / "student")
    with pytest.raises(NotADirectoryError, match="does not exist"):
        write_student_notebooks(tmp_path / "nowhere", tmp_path / "student")
    (tmp_path / "afile").write_text("")
    with pytest.raises(NotADirectoryError, match="afile is a file"):
        write_student_notebooks(_book(tmp_path / "book"), tmp_path / "afile" / "student")
    assert not (tmp_path / "student").exists()
    written = write_student_notebooks(tmp_path / "book", tmp_path / "student")
    assert [p.name for p in written] == ["chapter.ipynb"] and "NotImplementedError" in written[0].read_text()


# --------------------------------------------------------------------------- normalisation names


@pytest.mark.parametrize("normalisation, message", [
    ("omniglott", "unknown normalisation 'omniglott'; choose one of"),
    ("MNIST", "unknown normalisation 'MNIST'"),
    ((0.5, 0.0), "std > 0"),
    ((np.nan, 1.0), "must be finite"),
])
def test_a_normalisation_typo_is_named(normalisation, message):
    from paththeory.tasks.omniglot import encode_images

    with pytest.raises(ValueError, match=message):
        encode_images(np.zeros((1, 105, 105), np.uint8), normalisation)
