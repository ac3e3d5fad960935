"""Running a student's code away from the grades: a separate process in Linux namespaces.

The strongest sandbox this machine allows is chosen once (:func:`detect`):

* ``"namespaces+nobody"`` (the grader runs as root): ``unshare`` gives the process its own network
  (no interface up: no network at all), mount and PID namespaces, and a minimal root built for the run
  (:data:`_MOUNT_SCRIPT`): the host's programs and libraries (:data:`SYSTEM`), the interpreter's environment
  and, unless ``packages=False``, paththeory's folders, all read-only (:func:`bound_paths`); the scratch
  folder, the run's one writable folder of the host; a fresh ``/proc``, ``/tmp``, ``/dev/shm`` and a ``/dev`` of
  a few devices. Nothing else of the host is there (not the course folder, not the other submissions, not the
  host's world-writable folders) and no mount names it (``/proc/self/mountinfo`` lists the root's mounts only);
  a folder to hide that lies inside a bound folder is covered by an empty tmpfs. The process then drops to the
  user ``nobody`` with no capabilities (``setpriv``), so it cannot undo a mount or see the grader's processes.
* ``"namespaces"`` (no root, unprivileged user namespaces): the same namespaces and mounts, with
  every capability dropped, but the student's code keeps the instructor's user id: it cannot reach
  the course folder, the network or other processes, and its bound folders are read-only, but it runs with the
  instructor's user id. Weaker; the grading report says so.
* ``"plain"`` (neither): a plain subprocess with the limits below and nothing hidden. The grading
  report warns, loudly, that the submission could read and write the course folder.

Every run has a wall-clock timeout, a memory limit per process (``RLIMIT_AS``) and one for the
sandbox as a whole (the resident memory of all its processes, summed while it runs), a limit on
the size of any file it writes (``RLIMIT_FSIZE``, its printed output included: stdout and stderr
go to files, of which the grader reads at most :data:`MAX_READ` bytes) and, as ``nobody``, on its
number of processes (``RLIMIT_NPROC``); an overrun kills every process of the run (the PID
namespace's first process, then the process group) and is reported in the result, never ignored.
With ``packages=False`` the root holds neither the folders of paththeory and paththeory_tools (the answer keys
with them) nor, for a source checkout, the repository's other folders (covered where they lie inside a bound
folder, as a wheel's do in site-packages): the graded functions run where the package cannot be imported.
"""

from __future__ import annotations

import contextlib
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

__all__ = ["Run", "Sandbox", "detect", "package_folders", "reach_problem", "run", "scratch_folder"]

NOBODY = 65534
#: The most bytes of a run's stdout or stderr the grader reads (the end of each).
MAX_READ = 20000
#: Default limits of a run beyond its time and memory: the largest file it may write (its printed output
#: included) and how many processes (threads included) the user ``nobody`` may have at once.
FILE_BYTES, PROCESSES = 64 * 2**20, 512
#: Exit status of the mount step when a folder could not be hidden (the student's code never runs).
HIDE_FAILED = 97

#: The host's folders of programs and libraries, bound read-only into the sandbox's root (a link such as
#: ``/bin -> usr/bin`` is copied as a link), beside the interpreter's environment and base installation.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache")
#: The device files a program may open (each bound alone into an otherwise empty ``/dev``).
DEVICES = ("null", "zero", "full", "random", "urandom")

#: Run inside the new namespaces: build a minimal root on a fresh tmpfs and enter it (``pivot_root``; the host's
#: root is then detached, so neither its files nor its mounts, /proc/self/mountinfo included, can be reached).
#: The root holds a fresh /proc (the new PID namespace's), a /dev of :data:`DEVICES` only, fresh /tmp and /dev/shm,
#: an /etc of ``root`` and ``nobody`` alone, the folders to bind read-only (:data:`SYSTEM`, the environment) and
#: the scratch folder, the run's one writable folder of the host. Arguments: the folder to build the root on, the
#: scratch folder, the read-only paths (a count, then the paths), the folders to hide (a count, then the paths:
#: each found inside a bound folder gets an empty tmpfs over it), then the command. The umask is reset first: the
#: grader writes under umask 077, and the folders ``mkdir -p`` makes must stay passable for ``nobody``.
_MOUNT_SCRIPT = """\
umask 022
run_path=$PATH; PATH=$PATH:/usr/sbin:/sbin  # mount, pivot_root; the run gets its own PATH back
fail() { echo "sandbox: $*" >&2; exit 97; }
new=$1; scratch=$2; shift 2
mkdir -p "$new" && mount -t tmpfs -o size=4m,mode=0755 none "$new" || fail "cannot make the root"
mkdir "$new/proc" "$new/dev" "$new/tmp" "$new/etc" "$new/.old" || fail "cannot make the root"
mount -t proc proc "$new/proc" || fail "cannot mount /proc"
mount -t tmpfs -o size=256m,mode=1777 none "$new/tmp" || fail "cannot make /tmp"
mount -t tmpfs -o size=64k,mode=0755 none "$new/dev" || fail "cannot make /dev"
for node in null zero full random urandom; do
  touch "$new/dev/$node" && mount --bind "/dev/$node" "$new/dev/$node" || fail "cannot bind /dev/$node"
done
mkdir "$new/dev/shm" && mount -t tmpfs -o size=256m,mode=1777 none "$new/dev/shm" || fail "cannot make /dev/shm"
ln -s /proc/self/fd "$new/dev/fd" && ln -s /proc/self/fd/0 "$new/dev/stdin" && \
  ln -s /proc/self/fd/1 "$new/dev/stdout" && ln -s /proc/self/fd/2 "$new/dev/stderr" || fail "cannot make /dev"
printf 'root:x:0:0::/:/bin/false\nnobody:x:65534:65534::/tmp:/bin/false\n' > "$new/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$new/etc/group"
ro_bind() {  # remount a bind read-only, keeping the flags a user namespace may not clear
  for extra in "" ",nosuid" ",nodev" ",nosuid,nodev" ",nosuid,nodev,noexec"; do
    mount -o "remount,bind,ro$extra" "$1" 2>/dev/null && return 0
  done
  return 1
}
n=$1; shift
for i in $(seq 1 "$n"); do
  if [ -L "$1" ]; then
    mkdir -p "$new$(dirname "$1")" && ln -s "$(readlink "$1")" "$new$1" || fail "cannot link $1"
  elif [ -e "$1" ]; then
    if [ -d "$1" ]; then mkdir -p "$new$1"; else mkdir -p "$new$(dirname "$1")" && touch "$new$1"; fi
    mount --bind "$1" "$new$1" && ro_bind "$new$1" || fail "cannot bind $1"
  fi
  shift
done
mkdir -p "$new$scratch" && mount --bind "$scratch" "$new$scratch" && chmod 711 "$new${scratch%/*}" || \
  fail "cannot bind the scratch folder"
n=$1; shift
for i in $(seq 1 "$n"); do
  if [ -e "$new$1" ]; then
    mount -t tmpfs -o size=1m,mode=0755 none "$new$1" || fail "cannot hide $1"
  fi
  shift
done
cd "$new" && pivot_root . .old && umount -l /.old && rmdir /.old || fail "cannot enter the root"
mount -o remount,ro / || fail "cannot make the root read-only"
cd "$scratch" || fail "cannot enter the scratch folder"
PATH=$run_path
exec "$@"
"""

WARNINGS = {
    "namespaces+nobody": "",
    "namespaces": ("SANDBOX WEAKER: student code ran in user, network, mount and PID namespaces on a minimal "
                   "read-only root, without capabilities, but as the grader's own user: it could not reach the "
                   "course folder, the network or the host's files outside its scratch folder, but its number of "
                   "processes was not limited (the limit counts per user)."),
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
    """What came back from one sandboxed run (``stdout``, ``stderr``: their last :data:`MAX_READ` bytes)."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    over_memory: bool = False

    @property
    def failure(self) -> str | None:
        """Why the run failed, in words (None when it exited normally)."""
        if self.timed_out:
            return "killed: it ran past the time limit"
        if self.over_memory:
            return "killed: its processes together held more than the memory limit"
        if self.returncode == HIDE_FAILED:
            return "the sandbox could not hide the course folder; nothing ran"
        if self.returncode and self.returncode < 0:
            return f"killed by signal {-self.returncode} (memory limit or crash)"
        if self.returncode:
            tail = self.stderr.strip().splitlines()[-1:] or [""]
            memory = " (memory limit?)" if "MemoryError" in self.stderr else ""
            return f"exited with status {self.returncode}{memory}: {_printable(tail[0])[:300]}"
        return None


def _printable(text: str) -> str:
    """``text`` with control characters (but newlines) replaced: safe to show in a report."""
    return "".join(c if c.isprintable() or c == "\n" else "?" for c in text)


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


def _command(argv: Sequence[str], scratch: Path, hide: Sequence[Path], sandbox: Sandbox, packages: bool) -> list[str]:
    """The command that runs ``argv`` in ``sandbox``: in the namespaces, on a minimal root built under
    ``scratch``'s parent (:data:`_MOUNT_SCRIPT`) from :func:`bound_paths`, ``hide`` covered where it lies inside
    them, then as ``nobody`` (or the grader's user in a user namespace) without capabilities."""
    if sandbox.kind == "plain":
        return list(argv)
    hidden = list(dict.fromkeys(str(Path(h).resolve()) for h in hide if Path(h).exists()))
    bound = [str(p) for p in bound_paths(packages)]
    if sandbox.kind == "namespaces+nobody":
        ns = ["unshare", "-n", "-m", "-p", "-f", "--mount-proc"]
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    else:
        ns = ["unshare", "-r", "-n", "-m", "-p", "-f", "--mount-proc"]
        drop = ["setpriv"]
    drop += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    scratch = Path(scratch).resolve()
    return ns + ["sh", "-c", _MOUNT_SCRIPT, "sandbox", str(scratch.parent / "root"), str(scratch),
                 str(len(bound)), *bound, str(len(hidden)), *hidden, *drop, *argv]


def bound_paths(packages: bool = True) -> list[Path]:
    """What the sandbox's root holds of the host, read-only: :data:`SYSTEM`, the interpreter's environment and base
    installation and, with ``packages``, the folders of ``paththeory`` and ``paththeory_tools`` (an editable
    install's sources) and the data folder ``PATHTHEORY_DATA`` names. Nothing else of the host is there: not the
    course folder, not the uploads, not the checkout's other folders."""
    import paththeory
    import paththeory_tools

    paths = [Path(p) for p in SYSTEM if os.path.lexists(p)]
    needed = [sys.prefix, sys.base_prefix, Path(sys.executable).resolve().parent.parent]
    if packages:
        needed += [Path(paththeory.__file__).parent, Path(paththeory_tools.__file__).parent]
        if os.environ.get("PATHTHEORY_DATA"):
            needed.append(os.environ["PATHTHEORY_DATA"])
    resolved = [Path(p).resolve() for p in needed if Path(p).exists()]
    outermost = [p for p in dict.fromkeys(resolved) if not any(q != p and q in p.parents for q in resolved)]
    return paths + outermost


def package_folders() -> list[Path]:
    """What ``packages=False`` hides: the folders of paththeory and paththeory_tools (the answer keys and the
    reference implementations with them) and, where they are a source checkout's (an editable install), every
    other folder of that checkout (the book's solutions) but those holding the interpreter's environment."""
    import paththeory
    import paththeory_tools

    packages = [Path(paththeory.__file__).resolve().parent, Path(paththeory_tools.__file__).resolve().parent]
    folders = list(packages)
    checkout = packages[0].parent
    if (checkout / "pyproject.toml").is_file():
        needed = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve()]
        folders += [p for p in sorted(checkout.iterdir()) if p.is_dir() and not p.is_symlink() and p not in folders
                    and not any(p == n or p in n.parents for n in needed)]
    return folders


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
        done = subprocess.run(_command([sys.executable, "-c", f"for f in {files!r}: open(f).close()"], work, [], box,
                                       True),
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


def run(argv: Sequence[str], scratch: Path, hide: Sequence[Path], *, timeout: float, memory_bytes: int,
        packages: bool = True, file_bytes: int = FILE_BYTES, processes: int = PROCESSES,
        total_memory: int | None = None, cpu_seconds: float | None = None) -> Run:
    """Run ``argv`` in the sandbox with working directory ``scratch``, ``hide`` invisible, at most
    ``cpu_seconds`` of CPU time for all its processes together (what a run may compute, the same on a busy machine
    as on an idle one; watched from /proc) and ``timeout`` seconds of wall-clock time (a fail-safe for a run that
    sleeps; set it well above ``cpu_seconds``), ``memory_bytes`` of address space per process and ``total_memory`` (default
    ``memory_bytes``) of resident memory for all its processes together, files of at most
    ``file_bytes``, at most ``processes`` processes of ``nobody``; ``packages=False`` also hides
    :func:`package_folders`. Its stdout and stderr go to files beside ``scratch`` (never into the
    grader's memory beyond :data:`MAX_READ` bytes each)."""
    import time

    box = detect()
    _check_reach()
    if not packages:
        hide = [*hide, *package_folders()]
    limit = [f"--as={int(memory_bytes)}", "--core=0", f"--fsize={int(file_bytes)}"]
    if box.kind == "namespaces+nobody":  # counted per user: as the grader's own user it would count the grader's
        limit.append(f"--nproc={int(processes)}")
    # prlimit, not a preexec_fn: no Python code runs between fork and exec (JAX is multithreaded)
    prefix = ["prlimit", *limit, "--"] if shutil.which("prlimit") else []
    total = int(total_memory or memory_bytes)
    start = time.monotonic()
    with open(scratch.parent / "stdout.txt", "w+b") as out, open(scratch.parent / "stderr.txt", "w+b") as err:
        proc = subprocess.Popen(prefix + _command(argv, scratch, hide, box, packages), cwd=scratch, env=_environment(scratch, box),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                preexec_fn=None if prefix else _limits(memory_bytes, file_bytes))
        timed_out = over_memory = False
        while proc.poll() is None:
            if time.monotonic() - start > timeout or (cpu_seconds is not None and _cpu(proc.pid) > cpu_seconds):
                timed_out = True
            elif _resident(proc.pid) > total:
                over_memory = True
            if timed_out or over_memory:
                _kill(proc)
                break
            time.sleep(0.2)
        proc.wait()
        return Run(proc.returncode, _tail(out), _tail(err), timed_out, time.monotonic() - start, over_memory)


def _tail(f) -> str:
    """The last :data:`MAX_READ` bytes of the open file ``f``, as text."""
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - MAX_READ))
    return f.read(MAX_READ).decode("utf-8", errors="replace")


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from the parents in ``/proc/*/stat`` (in a PID namespace an orphan goes to
    the namespace's first process: still found)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _resident(pid: int) -> int:
    """The resident memory of ``pid`` and its descendants, in bytes (0 where /proc cannot tell)."""
    total = 0
    for p in _tree(pid):
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total


def _cpu(pid: int) -> float:
    """The CPU seconds of ``pid`` and its descendants, those they have waited for included (0 where /proc cannot
    tell)."""
    ticks = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        except (OSError, ValueError, IndexError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def _kill(proc: subprocess.Popen) -> None:
    """Kill every process of a run: its descendants (the first process of its PID namespace among them:
    the kernel then kills the whole namespace, a process that left the group included), then its group."""
    for p in reversed(_tree(proc.pid)):
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def _limits(memory_bytes: int, file_bytes: int):
    def set_limits() -> None:  # in the child, before exec (only where prlimit is missing)
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))

    return set_limits
