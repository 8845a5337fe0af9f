"""Keeping bot processes in their place: resource limits, an unprivileged user
per process, an optional bubblewrap sandbox, and finding every process a bot
left behind.

Three layers, from always-on to optional:

* **Resource limits** (``setrlimit`` in the child before ``exec``): address
  space, open files, file size, no core files; CPU seconds *per game* (the
  soft ``RLIMIT_CPU`` is moved forward at each game start with ``prlimit``,
  because a process may play several games); and the number of processes,
  which only binds a non-root user.
* **An unprivileged user per process** when the arena runs as root (the
  default then): each bot process gets its own uid from a pool, reserved with
  a lock file so two arenas on one machine never share one. Its private
  temporary folder is owned by that uid. Everything the uid runs is killed
  when the process is closed, even a grandchild that left the process group
  with ``setsid``.
* **The sandbox** (``--sandbox``, bubblewrap): no network, its own pid
  namespace (its processes die with it), the whole file system read-only
  except the private temporary folder, fresh for each process.

Without root, the arena cannot change uid; strays are then found by a token in
their environment (a process that clears its environment escapes that search;
use ``--sandbox`` for competitions).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import shutil
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: First uid of the pool used for bot processes when the arena runs as root.
DEFAULT_UID_BASE: Final = 3_000_000
#: Size of the uid pool (bot processes alive at once across all arenas).
UID_POOL_SIZE: Final = 4096
LOCK_DIR: Final = Path("/tmp/hearts-arena-uids")
MIB: Final = 1024 * 1024
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


class IsolationError(RuntimeError):
    """A requested isolation facility is not available on this machine."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of every bot process.

    Attributes:
        memory_mb: address space in MiB (``RLIMIT_AS``); 0 for none. The
            default 4096 lets a JVM start (it needs more than 1 GiB).
        cpu_seconds: CPU seconds per game (``RLIMIT_CPU``, moved forward at
            each game start); 0 for none.
        processes: processes and threads of the bot's user (``RLIMIT_NPROC``);
            applied only when the bot runs as its own unprivileged user.
        open_files: open file descriptors (``RLIMIT_NOFILE``).
        file_size_mb: largest file the bot may write, in MiB (``RLIMIT_FSIZE``).
    """

    memory_mb: int = 4096
    cpu_seconds: int = 300
    processes: int = 256
    open_files: int = 256
    file_size_mb: int = 256

    def describe(self) -> dict[str, int]:
        """The limits as plain data (settings record)."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "processes": self.processes,
            "open_files": self.open_files,
            "file_size_mb": self.file_size_mb,
        }


def make_preexec(limits: Limits, *, limit_processes: bool) -> Callable[[], None]:
    """The function run in the child before ``exec``: apply ``limits``.

    Runs between fork and exec, so it only calls ``setrlimit``.
    """
    settings: list[tuple[int, int]] = [(resource.RLIMIT_CORE, 0)]
    if limits.memory_mb:
        settings.append((resource.RLIMIT_AS, limits.memory_mb * MIB))
    if limits.cpu_seconds:
        settings.append((resource.RLIMIT_CPU, limits.cpu_seconds))
    if limits.open_files:
        settings.append((resource.RLIMIT_NOFILE, limits.open_files))
    if limits.file_size_mb:
        settings.append((resource.RLIMIT_FSIZE, limits.file_size_mb * MIB))
    if limit_processes and limits.processes:
        settings.append((resource.RLIMIT_NPROC, limits.processes))

    def preexec() -> None:
        for which, value in settings:
            if which == resource.RLIMIT_CPU:
                resource.setrlimit(which, (value, value + 5))
            else:
                resource.setrlimit(which, (value, value))

    return preexec


def cpu_seconds_used(pid: int) -> float | None:
    """User plus system CPU seconds of a process, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def renew_cpu_limit(pids: Iterable[int], seconds: int) -> None:
    """Give each process ``seconds`` more CPU from now (``prlimit`` on ``RLIMIT_CPU``):
    the soft limit sends SIGXCPU, the hard limit 5 s later SIGKILL."""
    if not seconds:
        return
    for pid in pids:
        used = cpu_seconds_used(pid)
        if used is None:
            continue
        soft = int(used) + seconds
        with contextlib.suppress(OSError):
            resource.prlimit(pid, resource.RLIMIT_CPU, (soft, soft + 5))


class UidLease:
    """A uid reserved for one bot process; :meth:`release` gives it back."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        """Unlock the uid (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lease_uid(base: int = DEFAULT_UID_BASE, size: int = UID_POOL_SIZE) -> UidLease:
    """Reserve a free uid of the pool with an exclusive ``flock`` on its lock
    file (released automatically if the arena dies). Kills any process still
    running as that uid (left by an arena that was killed), and passes over
    a uid that still has processes, zombies included (they count against the
    process limit of the next bot).

    Raises:
        IsolationError: every uid of the pool is in use.
    """
    LOCK_DIR.mkdir(mode=0o755, exist_ok=True)
    start = os.getpid() % size
    for i in range(size):
        uid = base + (start + i) % size
        fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        kill_processes(find_processes(uid=uid))
        if _uid_has_processes(uid):
            # Killed or zombie processes not yet reaped still count against
            # the uid's process limit: a bot started now could not fork.
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise IsolationError(f"all {size} bot uids from {base} are in use")


def _uid_has_processes(uid: int) -> bool:
    """Whether any process, zombies included, has real uid ``uid``."""
    needle = b"Uid:\t%d\t" % uid
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/status", "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:
                continue
    return False


def _proc_uid(pid: str) -> int | None:
    """Real uid of a live process; ``None`` if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"State:") and line.split()[1] == b"Z":
                    return None
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _proc_has_env(pid: str, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def find_processes(*, uid: int | None = None, env: str | None = None) -> list[int]:
    """Pids of live processes running as ``uid``, or whose environment holds
    the exact entry ``env`` (``"NAME=value"``). The arena itself is never listed."""
    me = os.getpid()
    needle = env.encode() if env is not None else None
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        if (uid is not None and _proc_uid(entry) == uid) or (
            needle is not None and _proc_has_env(entry, needle)
        ):
            found.append(int(entry))
    return found


def kill_processes(pids: Iterable[int]) -> None:
    """Send SIGKILL to each pid (gone ones are skipped)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_all(*, uid: int | None = None, env: str | None = None, rounds: int = 20) -> int:
    """Kill every process found by :func:`find_processes`, again until none is
    left (a process may fork while being killed). Returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        pids = find_processes(uid=uid, env=env)
        if not pids:
            break
        kill_processes(pids)
        killed += len(pids)
    return killed


def bwrap_path() -> str:
    """The ``bwrap`` executable.

    Raises:
        IsolationError: bubblewrap is not installed (Debian package ``bubblewrap``).
    """
    path = shutil.which("bwrap")
    if path is None:
        raise IsolationError(
            "--sandbox needs bubblewrap (the 'bwrap' command; Debian package 'bubblewrap'), "
            "which is not installed"
        )
    return path


def _under_tmp(paths: Iterable[str]) -> list[str]:
    """The top folders under ``/tmp`` (such as ``/tmp/work``) holding any of ``paths``."""
    tops = set()
    for text in paths:
        if not text.startswith("/tmp/"):
            continue
        parts = Path(text).parts  # ("/", "tmp", "work", ...)
        if len(parts) >= 3 and Path(*parts[:3]).exists():
            tops.add(str(Path(*parts[:3])))
    return sorted(tops)


def sandbox_argv(
    argv: Iterable[str], cwd: Path, tmpdir: Path, env: dict[str, str] | None = None
) -> list[str]:
    """Wrap a command in bubblewrap: no network, own pid, IPC and UTS
    namespaces, the file system read-only, ``tmpdir`` the only writable
    folder, an empty ``/tmp``, and death with the arena.

    What the bot needs from under ``/tmp`` (its folder, its program, a
    virtual environment there, ``PYTHONPATH``) stays visible, read-only."""
    argv = list(argv)
    needed = [str(cwd), *(a for a in argv if a.startswith("/"))]
    if env and env.get("PYTHONPATH"):
        needed += env["PYTHONPATH"].split(os.pathsep)
    keep: list[str] = []
    for top in _under_tmp(needed):
        keep += ["--ro-bind", top, top]
    return [
        bwrap_path(),
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        *keep,
        "--bind", str(tmpdir), str(tmpdir),
        "--chdir", str(cwd),
        "--",
        *argv,
    ]  # fmt: skip


def check_bwrap_works() -> None:
    """Start a trivial sandbox once, so a broken bubblewrap is reported up front.

    Raises:
        IsolationError: ``bwrap`` is missing or cannot create its namespaces.
    """
    import subprocess

    argv = [*sandbox_argv(["true"], Path("/"), Path("/tmp"))]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IsolationError(f"--sandbox: bubblewrap does not run here: {exc}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise IsolationError(
            f"--sandbox: bubblewrap does not run here: {err[-1] if err else proc.returncode}"
        )


def check_access_as(uid: int, program: Path, folder: Path) -> str | None:
    """Why user ``uid`` could not run ``program`` in ``folder``, or ``None`` if it can.

    Asks the kernel (``test -r`` and ``test -x`` run as that uid) rather than
    reading permission bits, so ACLs and mounts are taken into account.
    """
    import subprocess

    checks = [("-x", folder, "enter the folder"), ("-r", program, "read the program")]
    for flag, path, what in checks:
        try:
            proc = subprocess.run(
                ["test", flag, str(path)], user=uid, group=uid, extra_groups=[], check=False
            )
        except OSError as exc:
            return f"cannot check access as uid {uid}: {exc}"
        if proc.returncode != 0:
            return f"an unprivileged user cannot {what} {path}"
    return None


def python_for(uid: int) -> tuple[str, str | None]:
    """A Python interpreter that user ``uid`` can run, for ``.py`` bots.

    The arena's own interpreter when that user can reach it; otherwise (an
    interpreter under a private folder such as ``/root``) the first
    ``python3.X`` of the same version on ``PATH`` or in ``/usr/bin`` that it
    can run, with the folder holding the ``arena`` package to put on
    ``PYTHONPATH`` (so bots that import the rules engine still can).

    Returns:
        ``(interpreter, pythonpath or None)``.

    Raises:
        IsolationError: no interpreter of the arena's Python version is
            runnable by an unprivileged user.
    """
    import subprocess
    import sys

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable]
    for name in (f"python{version}", "python3"):
        for folder in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin", "/usr/bin"]:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and path not in candidates:
                candidates.append(path)
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    for exe in candidates:
        try:
            proc = subprocess.run(
                [exe, "-I", "-c", probe], user=uid, group=uid, extra_groups=[],
                capture_output=True, text=True, timeout=30, check=False, cwd="/",
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == version:
            package_parent = str(Path(__file__).resolve().parent.parent)
            return exe, None if exe == sys.executable else package_parent
    raise IsolationError(
        f"no Python {version} interpreter can be run by an unprivileged bot user "
        f"(the arena's, {sys.executable}, is in a private folder); install one "
        "system-wide, or give --same-user"
    )


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, found through ``/proc/PID/task/TID/children``."""
    out = []
    todo = [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children", "rb") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                continue
    return out
