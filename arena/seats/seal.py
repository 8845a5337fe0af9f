"""Sealing a bot process: a bubblewrap sandbox built from an allowlist, with a
seccomp filter against file locks, so that no bot sees another bot, talks to
another bot, or reaches the network.

What a sealed bot sees (:func:`sealed_argv`):

* a root file system holding only ``/usr``, ``/bin``, ``/sbin``, ``/lib*``,
  the named ``/etc`` files a runtime needs (:data:`ETC_FILES`), the arena's
  interpreter prefix and the ``arena`` package, and the organiser's
  ``--sandbox-ro`` paths, all read-only;
* its own entrant folder (a private copy, see :mod:`arena.seats.launcher`), read-only;
* a private ``/tmp`` and ``/dev/shm`` (tmpfs, size-limited), its ``HOME``;
* its own network namespace (loopback only), pid, IPC and UTS namespaces;
* a seccomp filter refusing ``flock`` and ``fcntl`` record, OFD locks and
  leases with ``ENOLCK`` (locks live on the inode, across every namespace:
  without the filter two bots could signal through locks on a file both can
  read, such as a shared library), and kernel keyrings, ``inotify`` watches
  and ``fanotify`` with ``EPERM`` (:data:`REFUSED_CALLS`).

The bubblewrap process is started from a thread that lives as long as the
arena (:mod:`arena.seats.process`), so ``--die-with-parent`` fires only when the
arena dies.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

#: Files and folders of ``/etc`` bound into the sandbox when they exist: the
#: dynamic loader's cache, name service, time zone, users and groups (for
#: runtimes that look their user up), and Debian's alternatives (``java``,
#: ``node`` are symlinks through ``/etc/alternatives``).
ETC_FILES: Final = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "alternatives",
    "os-release",
    "mime.types",
    f"python{sys.version_info[0]}.{sys.version_info[1]}",
)
#: Top folders that are bound (or re-created as the same symlink) when they exist.
SYSTEM_DIRS: Final = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Descriptors a sealed process is started with, beside 0, 1 and 2 (which
#: bubblewrap's own processes keep: ``/dev/null``, ``/dev/null`` and the bot's
#: stderr): the bot's stdin and stdout pipes and the seccomp program. Bubblewrap
#: passes other descriptors to the bot without keeping them itself, so a bot
#: that closes its output is seen to have closed it (:data:`STDIO_SCRIPT`).
STDIN_FD: Final = 3
STDOUT_FD: Final = 4
SECCOMP_FD: Final = 5
#: The shell line run first in the sandbox: the pipes to 0 and 1, then the bot.
STDIO_SCRIPT: Final = f'exec 0<&{STDIN_FD} 1>&{STDOUT_FD} {STDIN_FD}<&- {STDOUT_FD}>&-; exec "$@"'
#: System calls refused with ``EPERM``: kernel keyrings (shared by the
#: processes of one user: sealed bots of an arena that is not root share its
#: uid), and watching files for other processes' reads (``inotify`` and
#: ``fanotify`` events cross every namespace, like locks).
REFUSED_CALLS: Final = ("add_key", "request_key", "keyctl", "inotify_add_watch", "fanotify_init")
#: ``fcntl`` commands refused: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK,
#: F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE.
LOCK_COMMANDS: Final = (5, 6, 7, 36, 37, 38, 1024, 1025)


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or ``None`` when bubblewrap is not installed."""
    return shutil.which("bwrap")


def seccomp_program() -> tuple[bytes | None, str]:
    """The BPF program refusing file locks (``flock``; ``fcntl`` with the
    commands of :data:`LOCK_COMMANDS`) with ``ENOLCK`` and the calls of
    :data:`REFUSED_CALLS` with ``EPERM``, compiled by libseccomp
    for this machine's architecture (system calls of another architecture
    kill the process, libseccomp's default).

    Returns:
        ``(program, "")``, or ``(None, why)`` when libseccomp or its Python
        binding (``pyseccomp``) is missing.
    """
    try:
        import pyseccomp
    except (ImportError, OSError, RuntimeError) as exc:  # no libseccomp.so.2 on this system
        return None, f"libseccomp is not usable ({exc})"
    try:
        filt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        refuse = pyseccomp.ERRNO(errno.ENOLCK)
        filt.add_rule(refuse, "flock")
        for command in LOCK_COMMANDS:
            filt.add_rule(refuse, "fcntl", pyseccomp.Arg(1, pyseccomp.EQ, command))
        for call in REFUSED_CALLS:
            filt.add_rule(pyseccomp.ERRNO(errno.EPERM), call)
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as out:
            filt.export_bpf(out)
        with os.fdopen(read_end, "rb") as inp:
            program = inp.read()
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"libseccomp could not build the filter ({exc})"
    return program, ""


def seccomp_fd(program: bytes) -> int:
    """A fresh descriptor (close-on-exec, at offset 0) holding ``program``, for
    ``bwrap --seccomp``; one per process, as bubblewrap reads it to the end."""
    fd = os.memfd_create("hearts-arena-seccomp")
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_BOT_PACKAGE_PARENT: list[Path] = []
#: Name prefix of the package copies (``hearts-arena-package-<pid>-*``).
PACKAGE_COPY_PREFIX: Final = "hearts-arena-package-"


def remove_package_copies_of_dead_arenas(folder: Path | None = None) -> int:
    """Remove the package copies (:func:`bot_package_parent`) left in
    ``folder`` (default: the temporary folder) by arenas that are gone: one
    killed with SIGKILL removes nothing at exit. Copies of running arenas stay.

    Returns:
        How many copies were removed.
    """
    import tempfile

    removed = 0
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            pid_text = entry.name[len(PACKAGE_COPY_PREFIX) :].split("-", 1)[0]
            if not entry.name.startswith(PACKAGE_COPY_PREFIX) or not pid_text.isdigit():
                continue
            try:
                os.kill(int(pid_text), 0)
            except ProcessLookupError:
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
            except OSError:
                pass
    return removed


def _readable_by_everyone(folder: Path) -> bool:
    """Whether a user with no rights of its own can list ``folder`` (and so
    import from it): every folder above it may be entered by others, and it
    may be read and entered."""
    try:
        if any(not os.stat(p).st_mode & 0o001 for p in folder.parents):
            return False
        return os.stat(folder).st_mode & 0o005 == 0o005
    except OSError:
        return False


def bot_package_parent() -> Path:
    """The folder a ``.py`` bot finds the ``arena`` package in (its bot kit):
    put on its ``PYTHONPATH`` and bound into its sandbox.

    The installed package's folder when every user can read it; otherwise (a
    virtual environment under ``/root`` or another private folder, which a
    bot's unprivileged user cannot enter) a copy of the package, readable by
    everyone, made once per process in the temporary folder and removed at
    exit. Without it a bot that imports the kit could not start, and bubblewrap
    could not bind the package (so bots were not sealed).
    """
    if _BOT_PACKAGE_PARENT:
        return _BOT_PACKAGE_PARENT[0]
    import atexit
    import tempfile

    import arena

    package = Path(arena.__file__).resolve().parent
    if _readable_by_everyone(package) and _readable_by_everyone(package.parent):
        _BOT_PACKAGE_PARENT.append(package.parent)
        return package.parent
    remove_package_copies_of_dead_arenas()
    copy = Path(tempfile.mkdtemp(prefix=f"{PACKAGE_COPY_PREFIX}{os.getpid()}-"))
    copy.chmod(0o755)
    shutil.copytree(package, copy / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    for folder, dirs, files in os.walk(copy):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    atexit.register(shutil.rmtree, copy, True)
    _BOT_PACKAGE_PARENT.append(copy)
    return copy


def runtime_paths(*, arena_python: bool = True) -> list[Path]:
    """Folders outside the system folders that the bots' interpreter and the
    ``arena`` package need (a virtual environment, ``/opt/python``, an
    editable checkout): bound read-only into every sandbox.

    Args:
        arena_python: the bots run the arena's own interpreter (its prefixes
            are bound); ``False`` when they run a system Python
            (:func:`arena.isolation.python_for`): only the package is bound.
    """
    package = bot_package_parent() / "arena"
    found: list[Path] = []
    if arena_python:
        for text in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
            found.append(Path(text))
        found.append(Path(os.path.realpath(sys.executable)).parent)
    found.append(package)
    out: list[Path] = []
    for path in found:
        if path.parts[1:2] in (("usr",), ()) or not path.is_dir():
            continue
        if path not in out:
            out.append(path)
    return out


def sealed_argv(
    argv: Sequence[str],
    *,
    folder: Path,
    cwd: Path,
    tmp_mb: int,
    read_only: Iterable[Path] = (),
    seccomp: bool = True,
    bwrap: str = "bwrap",
) -> list[str]:
    """Wrap ``argv`` in bubblewrap with the allowlisted root described in the
    module docstring.

    Args:
        argv: the bot's command.
        folder: its entrant folder (bound read-only at the same path).
        cwd: the folder it starts in (``folder`` or a folder inside it).
        tmp_mb: size of the private ``/tmp`` and of ``/dev/shm``, in MiB each.
        read_only: more paths bound read-only at the same place (the
            interpreter prefix, the ``arena`` package, ``--sandbox-ro``).
        seccomp: add ``--seccomp`` :data:`SECCOMP_FD`.
        bwrap: the bubblewrap executable.
    """
    args = [bwrap, "--unshare-all", "--die-with-parent", "--hostname", "hearts-bot"]
    root = Path("/")
    for name in SYSTEM_DIRS:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES:
        path = root / "etc" / name
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    size = str(tmp_mb * 1024 * 1024)
    args += ["--proc", "/proc", "--dev", "/dev"]
    for tmpfs in ("/tmp", "/dev/shm"):
        args += ["--perms", "0700", "--size", size, "--tmpfs", tmpfs]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", str(folder), str(folder), "--chdir", str(cwd)]
    if seccomp:
        args += ["--seccomp", str(SECCOMP_FD)]
    return [*args, "--", "/bin/sh", "-c", STDIO_SCRIPT, "sh", *argv]


def probe(
    *, user: int | None, group: int | None, read_only: Iterable[Path] = (), timeout: float = 20
) -> str | None:
    """Start a trivial sealed process once (as ``user``) to learn whether
    sealing works here.

    Returns:
        ``None`` when it works, else one line saying why not (bubblewrap
        missing, or it cannot create its namespaces: unprivileged user
        namespaces disabled).
    """
    bwrap = bwrap_path()
    if bwrap is None:
        return "bubblewrap (the 'bwrap' command, Debian package 'bubblewrap') is not installed"
    argv = sealed_argv(
        ["/bin/sh", "-c", "exit 0"],
        folder=Path("/usr"),
        cwd=Path("/"),
        tmp_mb=1,
        read_only=read_only,
        seccomp=False,
        bwrap=bwrap,
    )
    argv = ['exec "$@"' if a == STDIO_SCRIPT else a for a in argv]
    try:
        proc = subprocess.run(
            argv, capture_output=True, timeout=timeout, check=False, user=user, group=group,
            extra_groups=[] if group is not None else None, cwd="/",
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run here: {exc}"
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        why = lines[-1][:300] if lines else f"exit code {proc.returncode}"
        return f"bubblewrap cannot create its namespaces here ({why})"
    return None


#: What an unsealed bot is not isolated from (the one line printed when
#: sealing cannot work, after the reason).
NOT_ISOLATED: Final = (
    "bots are NOT sealed: they can use the network, see other processes, "
    "and exchange data with other bots through /tmp, /dev/shm, sockets, IPC and file locks"
)
