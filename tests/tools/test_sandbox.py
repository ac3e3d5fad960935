"""The sandbox that runs students' code (paththeory_tools.sandbox): a hidden folder stays hidden, there
is no network, a run past its time or memory is killed and reported, and a machine without
namespaces falls back to a plain subprocess with a loud warning in the grading report."""

from __future__ import annotations

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


def run(code: str, scratch: Path, hide=(), timeout=60.0, memory=2 * 2**30) -> sandbox.Run:
    return sandbox.run(PYTHON + [code], scratch, list(hide), timeout=timeout, memory_bytes=memory)


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


def test_a_run_past_its_time_is_killed_loudly(scratch):
    done = run("import time\ntime.sleep(60)", scratch, timeout=2)
    assert done.timed_out and "time limit" in done.failure and done.seconds < 30


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
