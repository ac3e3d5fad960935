"""Running a student's code away from the grades: a separate process in Linux namespaces.

The strongest sandbox this machine allows is chosen once (:func:`detect`):

* ``"namespaces+nobody"`` (the grader runs as root): ``unshare`` gives the process its own network
  (no interface up: no network at all), mount and PID namespaces; a fresh tmpfs is mounted over
  ``/tmp``, ``/dev/shm`` and every hidden folder (the course folder: gradebook, source notebooks,
  keys, secret, other submissions); the process then drops to the user ``nobody`` with no
  capabilities (``setpriv``), so it cannot unmount them, write the instructor's files or see the
  grader's processes. Its working directory is a private scratch folder holding only its inputs,
  inside a folder that ``nobody`` cannot list.
* ``"namespaces"`` (no root, unprivileged user namespaces): the same namespaces and mounts, with
  every capability dropped, but the student's code keeps the instructor's user id: it cannot reach
  the hidden folders, the network or other processes, but it can write any file of the instructor
  that is not hidden. Weaker; the grading report says so.
* ``"plain"`` (neither): a plain subprocess with the limits below and nothing hidden. The grading
  report warns, loudly, that the submission could read and write the course folder.

Every run has a wall-clock timeout (the whole process group is killed) and a memory limit
(``RLIMIT_AS``); an overrun is reported in the result, never ignored.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["Run", "Sandbox", "detect", "reach_problem", "run", "scratch_folder"]

NOBODY = 65534
#: Exit status of the mount step when a folder could not be hidden (the student's code never runs).
HIDE_FAILED = 97

#: Run inside the new namespaces, in the scratch folder (its working directory stays reachable after /tmp is
#: covered). Arguments: the folders to keep (a count, then the paths: the interpreter and the packages where
#: they live under a temporary folder, as in a CI job's clone under /tmp), the temporary folders to cover
#: with a fresh tmpfs, the folders to hide (the course folder), then the command. The kept folders are
#: opened before the temporary folders are covered and bound back in place (the course folder is hidden
#: after that, so a kept folder that holds it does not bring it back).
_MOUNT_SCRIPT = """\
n=$1; shift; fd=3
for i in $(seq 1 "$n"); do
  eval "exec $fd<\\"\\$1\\"" || { echo "sandbox: cannot open $1" >&2; exit 97; }
  eval "keep_$fd=\\$1"; fd=$((fd + 1)); shift
done
last=$fd
n=$1; shift
for i in $(seq 1 "$n"); do
  mount -t tmpfs -o size=256m,mode=1777 none "$1" || { echo "sandbox: cannot cover $1" >&2; exit 97; }
  shift
done
fd=3
while [ "$fd" -lt "$last" ]; do
  eval "path=\\$keep_$fd"
  mkdir -p "$path" && mount --no-canonicalize --bind "/proc/self/fd/$fd" "$path" || { echo "sandbox: cannot keep $path" >&2; exit 97; }
  eval "exec $fd<&-"; fd=$((fd + 1))
done
n=$1; shift
for i in $(seq 1 "$n"); do
  if [ -e "$1" ]; then
    mount -t tmpfs -o size=1m,mode=0755 none "$1" || { echo "sandbox: cannot hide $1" >&2; exit 97; }
  fi
  shift
done
exec "$@"
"""

WARNINGS = {
    "namespaces+nobody": "",
    "namespaces": ("SANDBOX WEAKER: student code ran in user, network, mount and PID namespaces without "
                   "capabilities, but as the grader's own user: it could not reach the course folder or "
                   "the network, but it could write the grader's other files."),
    "plain": ("SANDBOX WEAK: no Linux namespaces here (unshare failed): student code ran as a plain "
              "subprocess, with a timeout and a memory limit only; it could read and write the course "
              "folder (gradebook, keys, other submissions). Grade on a machine with unshare."),
}


@dataclass(frozen=True)
class Sandbox:
    """The sandbox in use: ``kind`` (a key of :data:`WARNINGS`) and the warning for the grading report."""

    kind: str

    @property
    def warning(self) -> str:
        return WARNINGS[self.kind]


@dataclass(frozen=True)
class Run:
    """What came back from one sandboxed run."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float

    @property
    def failure(self) -> str | None:
        """Why the run failed, in words (None when it exited normally)."""
        if self.timed_out:
            return "killed: it ran past the time limit"
        if self.returncode == HIDE_FAILED:
            return "the sandbox could not hide the course folder; nothing ran"
        if self.returncode and self.returncode < 0:
            return f"killed by signal {-self.returncode} (memory limit or crash)"
        if self.returncode:
            tail = self.stderr.strip().splitlines()[-1:] or [""]
            memory = " (memory limit?)" if "MemoryError" in self.stderr else ""
            return f"exited with status {self.returncode}{memory}: {tail[0][:300]}"
        return None


def _probe(prefix: list[str]) -> bool:
    try:
        done = subprocess.run(prefix + ["sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null || "
                                        "mount -t tmpfs none /tmp && echo ok"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == "ok"


@functools.lru_cache(maxsize=None)
def detect() -> Sandbox:
    """The strongest sandbox available here (checked once per process); ``PATHTHEORY_SANDBOX=plain``
    forces the plain subprocess (for testing the warning)."""
    if os.environ.get("PATHTHEORY_SANDBOX") == "plain":
        return Sandbox("plain")
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        return Sandbox("plain")
    if os.geteuid() == 0 and _probe(["unshare", "-n", "-m", "-p", "-f", "--mount-proc"]):
        return Sandbox("namespaces+nobody")
    if _probe(["unshare", "-r", "-n", "-m", "-p", "-f", "--mount-proc"]):
        return Sandbox("namespaces")
    return Sandbox("plain")


def scratch_folder() -> Path:
    """A new private scratch folder ``<base>/work``: ``base`` is the grader's alone (mode 0700), ``work``
    belongs to the sandbox's user. Remove ``work.parent`` when done."""
    base = Path(tempfile.mkdtemp(prefix="paththeory-grade-"))
    work = base / "work"
    work.mkdir()
    if detect().kind == "namespaces+nobody":
        os.chown(work, NOBODY, NOBODY)
    return work


def give_to_sandbox(path: Path) -> None:
    """Make ``path`` (a file the grader wrote into a scratch folder) the sandbox user's."""
    if detect().kind == "namespaces+nobody":
        os.chown(path, NOBODY, NOBODY)


def _command(argv: Sequence[str], hide: Sequence[Path], sandbox: Sandbox) -> list[str]:
    if sandbox.kind == "plain":
        return list(argv)
    hidden = [str(Path(h).resolve()) for h in hide if Path(h).exists()]
    covered = [p for p in ("/tmp", "/dev/shm", "/var/tmp") if Path(p).is_dir()]
    keep = _kept_folders(covered)
    if sandbox.kind == "namespaces+nobody":
        ns = ["unshare", "-n", "-m", "-p", "-f", "--mount-proc"]
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    else:
        ns = ["unshare", "-r", "-n", "-m", "-p", "-f", "--mount-proc"]
        drop = ["setpriv"]
    drop += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return ns + ["sh", "-c", _MOUNT_SCRIPT, "sandbox", str(len(keep)), *keep, str(len(covered)), *covered,
                 str(len(hidden)), *hidden, *drop, *argv]


def _kept_folders(covered: Sequence[str]) -> list[str]:
    """The needed folders (:func:`_needed_paths`) that lie under a covered temporary folder, outermost only."""
    roots = [Path(c).resolve() for c in covered]
    inside = sorted({str(n) for n in _needed_paths() if any(r in n.parents for r in roots)}, key=len)
    kept: list[str] = []
    for path in inside:
        if not any(Path(k) in Path(path).parents or k == path for k in kept):
            kept.append(path)
    return kept


def _needed_paths() -> list[Path]:
    """What the sandboxed interpreter must still read: its environment, its base installation and the
    ``paththeory`` packages."""
    import paththeory
    import paththeory_tools

    paths = [sys.prefix, sys.base_prefix, Path(paththeory.__file__).parent, Path(paththeory_tools.__file__).parent]
    return [Path(p).resolve() for p in paths]


def _needed_files() -> list[Path]:
    """One file of each package the sandboxed interpreter imports first: what :func:`reach_problem` reads."""
    import paththeory
    import paththeory_tools

    return [Path(paththeory.__file__), Path(paththeory_tools.__file__)]


@functools.lru_cache(maxsize=None)
def reach_problem() -> str | None:
    """Why the sandbox's user cannot read the interpreter's packages (``None``: it can), found by trying once per
    process: the interpreter, started in the sandbox as a student's code is, reads :func:`_needed_files`. An
    environment in a private folder (a home folder of mode 0700) is out of reach of ``nobody``."""
    box = detect()
    if box.kind != "namespaces+nobody":
        return None
    files = [str(f) for f in _needed_files()]
    work = scratch_folder()
    try:
        done = subprocess.run(_command([sys.executable, "-c", f"for f in {files!r}: open(f).close()"], [], box),
                              cwd=work, env=_environment(work, box), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", timeout=120)
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    if done.returncode == 0:
        return None
    tail = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
    return f"{tail} (the environment: {sys.prefix}; the packages: {', '.join(str(Path(f).parent) for f in files)})"


def _check_reach() -> None:
    """A clear error, before any student's code runs, when the sandbox's user cannot read the packages."""
    problem = reach_problem()
    if problem is not None:
        raise PermissionError(
            f"the sandbox runs students' code as the user nobody, who cannot read the Python environment or "
            f"paththeory here: {problem}. Every submission would fail. Let others pass through the private folder "
            "that holds them (chmod o+x on it), or install the environment outside it, then grade again.")


def _environment(scratch: Path, sandbox: Sandbox) -> dict[str, str]:
    """The few variables a student's process gets (none of the grader's own); its home and temporary
    folder are the fresh ``/tmp`` of the namespaces (the scratch folder itself without them)."""
    from paththeory.exercises.answers import GRADING_ENV

    home = str(scratch) if sandbox.kind == "plain" else "/tmp"
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
           "HOME": home, "TMPDIR": home, "MPLBACKEND": "Agg", "JAX_PLATFORMS": "cpu",
           "PYTHONDONTWRITEBYTECODE": "1", "PATHTHEORY_NO_COMPILATION_CACHE": "1", GRADING_ENV: "1",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=1", "OMP_NUM_THREADS": "1",
           "LANG": "C.UTF-8"}
    for name in ("PATHTHEORY_DATA", "PATHTHEORY_PROFILE"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def run(argv: Sequence[str], scratch: Path, hide: Sequence[Path], *, timeout: float,
        memory_bytes: int) -> Run:
    """Run ``argv`` in the sandbox with working directory ``scratch``, ``hide`` invisible, at most
    ``timeout`` seconds and ``memory_bytes`` of address space."""
    import time

    box = detect()
    _check_reach()
    # prlimit, not a preexec_fn: no Python code runs between fork and exec (JAX is multithreaded)
    limit = ["prlimit", f"--as={int(memory_bytes)}", "--core=0", "--"] if shutil.which("prlimit") else []
    start = time.monotonic()
    proc = subprocess.Popen(limit + _command(argv, hide, box), cwd=scratch, env=_environment(scratch, box),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True,
                            preexec_fn=None if limit else _limits(memory_bytes))
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    return Run(proc.returncode, out[-20000:], err[-20000:], timed_out, time.monotonic() - start)


def _limits(memory_bytes: int):
    def set_limits() -> None:  # in the child, before exec (only where prlimit is missing)
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return set_limits
