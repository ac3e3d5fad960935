"""The sandbox that runs students' code (paththeory_tools.sandbox): a hidden folder stays hidden, there
is no network, a run past its time or memory is killed and reported, and a machine without
namespaces falls back to a plain subprocess with a loud warning in the grading report."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from paththeory_tools import grading, sandbox

PYTHON = [sys.executable, "-I", "-c"]


@pytest.fixture
def scratch():
    work = sandbox.scratch_folder()
    yield work
    import shutil

    shutil.rmtree(work.parent, ignore_errors=True)


def run(code: str, scratch: Path, hide=(), timeout=60.0, memory=2 * 2**30, **options) -> sandbox.Run:
    return sandbox.run(PYTHON + [code], scratch, list(hide), timeout=timeout, memory_bytes=memory, **options)


def needs_namespaces():
    if sandbox.detect().kind == "plain":
        pytest.skip("no Linux namespaces here: the plain subprocess hides nothing")


def test_a_hidden_folder_and_the_network_are_out_of_reach(tmp_path, scratch):
    needs_namespaces()
    secret = tmp_path / "course"
    secret.mkdir()
    (secret / "gradebook.db").write_text("grades")
    done = run(f"""import os, socket
print(sorted(os.listdir({str(secret)!r})) if os.path.isdir({str(secret)!r}) else 'gone')
try:
    socket.create_connection(('127.0.0.1', 22), timeout=2)
    print('network')
except OSError as err:
    print('no network', type(err).__name__)
open('written.txt', 'w').write('ok')
""", scratch, [secret])
    assert done.failure is None, done.stderr
    assert done.stdout.split("\n")[0] in ("[]", "gone")
    assert "no network" in done.stdout
    assert (scratch / "written.txt").read_text() == "ok", "the scratch folder is the run's own"
    assert (secret / "gradebook.db").read_text() == "grades"


#: Where anyone may write on a usual Linux machine: a note left there for a classmate's run must not survive.
WORLD_WRITABLE = ("/tmp", "/dev/shm", "/var/tmp", "/run/lock", "/var/lock")


def test_nothing_written_where_anyone_may_write_reaches_the_host(scratch):
    """In the sandbox ``/tmp`` and ``/dev/shm`` are fresh and empty (but for the way to the scratch folder and to a
    bound environment under /tmp, as a CI clone's) and the other folders anyone may write are not there at all: what
    a run writes is gone when it ends."""
    needs_namespaces()
    folders = [p for p in WORLD_WRITABLE if Path(p).is_dir()]
    under_tmp = [p for p in [*sandbox.bound_paths(), scratch.resolve()] if Path("/tmp") in p.parents]
    ways = sorted({p.relative_to("/tmp").parts[0] for p in under_tmp})
    done = run(f"""import os
for folder in {folders!r}:
    path = os.path.join(folder, 'probe-from-the-sandbox')
    try:
        held = sorted(os.listdir(folder))
        open(path, 'w').write('x')
        print(folder, 'fresh' if held in ([], {ways!r}) else held)
    except OSError as err:
        print(folder, 'absent' if not os.path.exists(folder) else 'not writable', type(err).__name__)
""", scratch)
    assert done.failure is None, done.stderr
    for folder in folders:
        assert not Path(folder, "probe-from-the-sandbox").exists(), f"a write to {folder} reached the host"
    seen = dict(line.split()[:2] for line in done.stdout.splitlines())
    assert seen["/tmp"] == "fresh" and seen.get("/dev/shm", "fresh") == "fresh", done.stdout
    assert set(seen.values()) <= {"fresh", "absent"}, done.stdout


def test_the_root_holds_only_what_is_bound_and_nothing_names_the_course(tmp_path, scratch):
    """The sandbox's root is built for the run: the host's programs and the environment, read-only, the scratch
    folder, a fresh /proc, /dev and /tmp. The course folder and a classmate's upload are not there even when nobody
    asks to hide them, /proc/self/mountinfo names neither (nor anything of the host but what is bound), and no
    bound folder can be written."""
    needs_namespaces()
    course, uploads = tmp_path / "course", tmp_path / "uploads"
    for folder in (course, uploads):
        folder.mkdir()
        folder.chmod(0o777)
    (uploads / "bo.ipynb").write_text("{}")
    (uploads / "bo.ipynb").chmod(0o666)
    bound = sandbox.bound_paths()
    done = run(f"""import os, sys
print(sorted(os.listdir('/')))
print([os.path.exists(p) for p in ({str(course)!r}, {str(uploads / "bo.ipynb")!r})])
print([line.split()[4] for line in open('/proc/self/mountinfo')])
print({str(tmp_path)!r} in open('/proc/self/mountinfo').read())
written = []
for folder in ({str(bound[0])!r}, sys.prefix):
    try:
        open(os.path.join(folder, 'written-from-the-sandbox'), 'w').write('x')
        written.append(folder)
    except OSError:
        pass
print(written)
""", scratch)
    assert done.failure is None, done.stderr
    top, present, mounts, named, written = done.stdout.splitlines()
    assert set(ast.literal_eval(top)) <= {"proc", "dev", "tmp", "etc", *(p.parts[1] for p in bound)}, top
    assert ast.literal_eval(present) == [False, False] and named == "False" and ast.literal_eval(written) == []
    expected = {"/", "/proc", "/tmp", "/dev", "/dev/shm", str(scratch.resolve()),
                *(f"/dev/{d}" for d in sandbox.DEVICES), *(str(p) for p in bound if not p.is_symlink())}
    assert set(ast.literal_eval(mounts)) <= expected, set(ast.literal_eval(mounts)) - expected
    assert not any(Path(p, "written-from-the-sandbox").exists() for p in (bound[0], sys.prefix))


def test_a_run_past_its_time_is_killed_loudly(scratch):
    done = run("import time\ntime.sleep(60)", scratch, timeout=2)
    assert done.timed_out and "time limit" in done.failure and done.seconds < 30


def test_a_kept_folder_under_tmp_stays_readable_when_the_grader_writes_privately(tmp_path, scratch, monkeypatch):
    """Oracle: the file's content read back from inside the sandbox. The grader writes the course folder under umask
    077; a folder the sandbox binds (the environment of a clone under /tmp, as in CI) lies below folders made on the
    root's fresh /tmp, which must stay passable for the sandbox's user."""
    needs_namespaces()
    kept = tmp_path / "clone" / "env"
    kept.mkdir(parents=True)
    (kept / "marker.txt").write_text("readable")
    for folder in (tmp_path, tmp_path / "clone", kept):
        folder.chmod(0o755)
    (kept / "marker.txt").chmod(0o644)
    bound = sandbox.bound_paths
    monkeypatch.setattr(sandbox, "bound_paths", lambda packages=True: [*bound(packages), kept.resolve()])
    old = os.umask(0o077)
    try:
        done = sandbox.run(["cat", str(kept / "marker.txt")], scratch, [], timeout=30, memory_bytes=2**30)
    finally:
        os.umask(old)
    assert done.failure is None and done.stdout == "readable", done


def test_the_cpu_time_limit_counts_computing_not_waiting(scratch):
    """A busy loop is stopped by its CPU seconds, long before the wall clock; a sleeper uses no CPU time and runs
    until the wall clock (the limit a busy machine does not shorten is the CPU time)."""
    busy = run("while True: pass", scratch, timeout=120, cpu_seconds=2)
    assert busy.timed_out and "time limit" in busy.failure and busy.seconds < 60
    sleeper = run("import time\ntime.sleep(4)\nprint('woke')", scratch, timeout=60, cpu_seconds=2)
    assert sleeper.failure is None and "woke" in sleeper.stdout


def test_a_run_past_its_memory_fails_loudly(scratch):
    done = run("x = bytearray(3 * 2**30)\nprint('allocated')", scratch, memory=1 * 2**30)
    assert "allocated" not in done.stdout and "memory" in done.failure.lower()


def test_without_namespaces_the_report_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("PATHTHEORY_SANDBOX", "plain")
    sandbox.detect.cache_clear()
    try:
        box = sandbox.detect()
        assert box.kind == "plain" and "SANDBOX WEAK" in box.warning
        report = grading._write_report(tmp_path, "problems", [], box).read_text()
        assert "sandbox: plain" in report and "could read and write the course folder" in report
    finally:
        monkeypatch.delenv("PATHTHEORY_SANDBOX")
        sandbox.detect.cache_clear()
    assert sandbox.detect().warning == sandbox.WARNINGS[sandbox.detect().kind]


def test_a_grader_without_root_gets_the_weaker_sandbox_and_it_still_hides(tmp_path, monkeypatch):
    """The "namespaces" mode, as an instructor without root gets it. First, a grader that runs as the user
    ``nobody`` (``setpriv``) detects that mode and its warning. Then the mode's own command (a user namespace
    mapping the grader to root in it, every capability dropped) runs a student's process: it finds the course
    folder empty though its files are world-writable, has no network, and leaves the course folder as it was.
    (The second part runs from this process: as ``nobody`` the interpreter, under root's home here, would be
    out of reach inside the namespace, which no instructor's own interpreter is.)"""
    import json
    import os
    import shutil
    import subprocess

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("becoming an unprivileged grader needs root and setpriv")
    if sandbox.reach_problem() is not None:  # a clone in a private folder: nobody cannot import the grader itself
        pytest.skip(f"nobody cannot read this clone ({sandbox.reach_problem()}); the grader that nobody plays here "
                    "needs it (a real grader owns its environment)")
    grader = ("import json\nfrom paththeory_tools import sandbox\nbox = sandbox.detect()\n"
              "print(json.dumps({'kind': box.kind, 'warning': box.warning}))\n")
    env = {"PATH": os.environ["PATH"], "HOME": "/", "LANG": "C.UTF-8"}
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                           grader], env=env, cwd="/", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    detected = json.loads(done.stdout.strip().splitlines()[-1])
    if detected["kind"] == "plain":
        pytest.skip("no unprivileged user namespaces on this machine: a grader without root gets the plain mode")
    assert detected["kind"] == "namespaces" and "SANDBOX WEAKER" in detected["warning"]

    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Sandbox("namespaces"))
    course = tmp_path / "course"
    course.mkdir()
    course.chmod(0o777)
    (course / "gradebook.db").write_text("grades")
    (course / "gradebook.db").chmod(0o666)
    work = sandbox.scratch_folder()
    try:
        done = run(f"""import os, socket
c = {str(course)!r}
print(sorted(os.listdir(c)) if os.path.isdir(c) else 'gone')
try:
    open(os.path.join(c, 'gradebook.db'), 'w').write('135/135')
except OSError:
    pass
try:
    socket.create_connection(('127.0.0.1', 22), timeout=2)
    print('network')
except OSError as err:
    print('no network', type(err).__name__)
print(os.getuid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])
""", work, [course])
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    assert done.failure is None, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] in ("[]", "gone") and lines[1].startswith("no network"), done.stdout
    assert lines[2].split() == ["0", "0000000000000000"], "root in its namespace, with no capability"
    assert (course / "gradebook.db").read_text() == "grades" and [p.name for p in course.iterdir()] == ["gradebook.db"]


def test_an_environment_nobody_cannot_read_is_a_clear_error_before_any_student_runs(tmp_path, monkeypatch):
    """As root, the sandbox runs students' code as nobody: packages it cannot read (here: a file under the grader's
    temporary folder, which the sandbox does not bind) would fail every submission, so the grader stops first and says why.
    With the real packages the probe passes."""
    if sandbox.detect().kind != "namespaces+nobody":
        pytest.skip("only the sandbox that runs as nobody (the grader is root) can lack the packages")
    assert sandbox.reach_problem() is None
    hidden = tmp_path / "private" / "pkg.py"
    hidden.parent.mkdir()
    hidden.write_text("")
    hidden.parent.chmod(0o700)
    sandbox.reach_problem.cache_clear()
    monkeypatch.setattr(sandbox, "_needed_files", lambda: [hidden])
    try:
        with pytest.raises(PermissionError, match=r"cannot read the Python environment or paththeory here: .*Error"):
            sandbox.run(["true"], tmp_path, [], timeout=10, memory_bytes=2**30)
    finally:
        sandbox.reach_problem.cache_clear()


def test_without_packages_no_route_reaches_paththeory(scratch):
    """``packages=False`` (the graded functions' runs): no import route reaches paththeory, its keys or the
    book's solutions, while numpy still imports."""
    needs_namespaces()
    book = Path(__file__).resolve().parents[2] / "book" / "problems.md"
    done = run(f"""import importlib
for stmt in ("import paththeory", "from paththeory.predict import predictor",
             "importlib.import_module('paththeory.problems')", "import paththeory.exercises.problems",
             "import paththeory_tools", "open({str(book)!r}).read(1)"):
    try:
        exec(stmt)
        print("REACHED", stmt)
    except (ImportError, OSError) as err:
        print("no", type(err).__name__)
import numpy
print("numpy", numpy.__name__)
""", scratch, packages=False)
    assert done.failure is None, done.stderr
    assert "REACHED" not in done.stdout and "numpy numpy" in done.stdout, done.stdout


def test_a_flood_of_output_is_capped_where_it_is_written(scratch):
    """A gigabyte printed: the file stops at the run's file size limit and the grader reads its end only."""
    done = run("import os\nfor _ in range(1024):\n    os.write(1, b'x' * 2**20)", scratch, file_bytes=8 * 2**20)
    assert len(done.stdout) <= sandbox.MAX_READ and done.failure is not None
    assert (scratch.parent / "stdout.txt").stat().st_size <= 8 * 2**20


def test_a_fork_bomb_and_memory_spread_over_processes_are_killed(scratch):
    """The limits hold for the run as a whole: processes that each stay under the per-process memory limit are
    killed once together they pass it, and so is a fork bomb (nothing of it is left)."""
    spread = """import os, time
for _ in range(3):
    if os.fork() == 0:
        x = bytes([1]) * (700 * 2**20)
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""
    done = run(spread, scratch, memory=1 * 2**30, timeout=50)
    assert done.over_memory and "memory" in done.failure and done.seconds < 40, done
    bomb = """import os, time
for _ in range(100000):
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
    except OSError:
        break
time.sleep(600)
"""
    done = run(bomb, scratch, timeout=20)
    assert done.failure is not None and done.seconds < 25, done
