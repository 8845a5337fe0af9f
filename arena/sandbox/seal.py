"""Sealing a bot process: a bubblewrap sandbox built from an allowlist, with a
seccomp filter against file locks, so that no bot sees another bot, talks to
another bot, or reaches the network.

What a sealed bot sees (:func:`sealed_argv`):

* a root file system holding only ``/usr``, ``/bin``, ``/sbin``, ``/lib*``,
  the named ``/etc`` files a runtime needs (:data:`ETC_FILES`), the arena's
  interpreter prefix and the ``arena`` package, and the organiser's
  ``--sandbox-ro`` paths, all read-only;
* its own entrant folder (a private copy, see :mod:`arena.sandbox.launcher`), read-only;
* a private ``/tmp`` and ``/dev/shm`` (tmpfs, size-limited), its ``HOME``;
* its own network namespace (loopback only), pid, IPC and UTS namespaces;
* a seccomp filter refusing ``flock`` and ``fcntl`` record, OFD locks and
  leases with ``ENOLCK`` (locks live on the inode, across every namespace:
  without the filter two bots could signal through locks on a file both can
  read, such as a shared library), and kernel keyrings, ``inotify`` watches
  and ``fanotify`` with ``EPERM`` (:data:`REFUSED_CALLS`).

The bubblewrap process is started by the arena's spawn server, which dies
with the arena, or else from a thread that lives as long as the arena
(:mod:`arena.sandbox.spawn`), so ``--die-with-parent`` fires only when the
arena dies.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from arena.sandbox.rootview import (
    OWNER_FILE,
    ROOT_VIEW_PREFIX,
    VIEW_PARENTS,
    RootView,
    process_mark,
    root_view,
)

_PY: Final = f"python{sys.version_info[0]}.{sys.version_info[1]}"
#: Files and folders of ``/etc`` bound into the sandbox when they exist: the
#: dynamic loader's cache, name service, time zone, users and groups (for
#: runtimes that look their user up), the Python and Java configuration.
#: (Debian's alternatives links that ``java`` and ``node`` resolve through are
#: bound one by one, with the programs: :func:`readable_paths`.)
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
    "os-release",
    "mime.types",
    _PY,
    "java-17-openjdk",
    "java-21-openjdk",
    "java-25-openjdk",
    "ssl/certs/java",
)
#: The programs of the runtimes bot authors use, bound one by one with what
#: they resolve through (symbolic links, alternatives) and the libraries they
#: load: the shells, a few core utilities start-up scripts use, Python,
#: node, a JVM, and ``ldconfig`` (which ``ctypes.util.find_library`` runs).
RUNTIME_PROGRAMS: Final = (
    "/bin/sh", "/usr/bin/sh", "/usr/bin/dash", "/usr/bin/bash", "/bin/bash", "/usr/bin/env",
    f"/usr/bin/{_PY}", "/usr/bin/python3", f"/usr/local/bin/{_PY}", "/usr/local/bin/python3",
    "/usr/bin/node", "/usr/bin/nodejs", "/usr/bin/java", "/usr/sbin/ldconfig", "/sbin/ldconfig",
    "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/dirname", "/usr/bin/basename", "/usr/bin/readlink",
    "/usr/bin/realpath", "/usr/bin/head", "/usr/bin/tail", "/usr/bin/wc", "/usr/bin/sleep",
    "/usr/bin/true", "/usr/bin/false", "/usr/bin/uname",
)  # fmt: skip
#: Folders of the runtimes, bound whole: Python's standard library (not
#: Debian's third-party ``dist-packages``), the JVMs and Debian's jars (the
#: starter kits' JSON libraries), and the compiled locales.
RUNTIME_FOLDERS: Final = (
    f"/usr/lib/{_PY}",
    f"/usr/local/lib/{_PY}",
    "/usr/lib/jvm",
    "/usr/share/java",
    "/usr/lib/locale",
)
#: The JVM's own libraries whose dependencies are bound (those a headless
#: JVM loads to run a bot: the AWT and sound libraries' X11 and ALSA
#: dependencies are left out); Python's are those of ``lib-dynload``.
JVM_LIBRARIES: Final = (
    "libjvm", "libjava", "libjli", "libjimage", "libzip", "libnio", "libnet", "libverify",
    "libextnet", "libmanagement", "libprefs", "libsyslookup",
)  # fmt: skip
#: Libraries bound besides those the programs and the runtime folders' ELF
#: files need: the C and C++ runtime (compiled C, C++, Go and Rust bots need
#: no more).
RUNTIME_LIBRARIES: Final = (
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libz.so.1",
    "libstdc++.so.6", "libgcc_s.so.1", "libatomic.so.1",
)  # fmt: skip
#: Where a sealed bot finds its entrant folder (its private copy, bound
#: read-only) and the bot kit (the ``arena`` package: ``PYTHONPATH``): fixed
#: names that say nothing of the run or of the organiser's folders.
ENTRANT_DIR: Final = Path("/entrant")
KIT_DIR: Final = Path("/opt/hearts-arena")
#: A sealed bot's ``PATH`` (the ``bin`` folders of ``--sandbox-ro`` paths
#: come first: :func:`bot_path_variable`).
BOT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
#: Devices a sealed bot has, each bound alone (no ``/dev/pts``, no
#: ``/dev/ptmx``: the machine's count of pseudo-terminals is a counter one bot
#: moves and another reads); ``/dev/shm`` is a private tmpfs.
DEVICES: Final = ("null", "zero", "full", "random", "urandom")
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
#: System calls refused with ``EPERM``, by family (the list of what the filter
#: allows and why, per family, is :data:`SYSCALL_FAMILIES`):
#:
#: * kernel keyrings (shared by the processes of one user: sealed bots of an
#:   arena that is not root share its uid);
#: * watching files for other processes' reads: ``inotify`` (events cross
#:   every namespace, like locks; its instances are counted per user, so even
#:   ``inotify_init`` is refused), ``fanotify``;
#: * another process's memory: ``ptrace``, ``process_vm_readv``,
#:   ``process_vm_writev`` (bubblewrap's init, pid 1 of the sandbox, runs as
#:   the bot's user and could otherwise be made to run anything);
#: * new namespaces and mounts: ``unshare``, ``setns``, ``mount`` and the new
#:   mount API, ``pivot_root``, ``chroot`` (a new user namespace would give a
#:   bot the rights to mount a fresh ``/proc`` over the static view);
#: * ``bpf``, ``perf_event_open`` (machine-wide counters), ``userfaultfd``,
#:   ``syslog``, ``acct``, ``quotactl``, ``lookup_dcookie``.
REFUSED_CALLS: Final = (
    "add_key", "request_key", "keyctl",
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd", "syslog", "acct", "quotactl", "lookup_dcookie",
)  # fmt: skip
#: System calls refused with ``ENOSYS`` (as if the kernel had none, so that
#: runtimes fall back, as libuv and glibc do): ``io_uring`` (its operations
#: bypass the filter's argument checks), Linux AIO (``io_setup``: the
#: machine-wide count of AIO events is a counter one bot moves and another
#: meets as a limit), and ``clone3`` (its flags are in memory the filter cannot
#: read: glibc falls back to ``clone``, whose namespace flags are refused),
#: and ``sysinfo`` (the machine's free memory, load and count of threads, which
#: any bot moves; the JVM and node then size themselves from the static
#: ``/proc/meminfo``, but glibc's ``sysconf(_SC_PHYS_PAGES)`` gives nonsense).
MISSING_CALLS: Final = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "io_setup", "io_submit", "clone3",
    "sysinfo",
)  # fmt: skip
#: ``fcntl`` commands refused: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK,
#: F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE (with ``ENOLCK``).
LOCK_COMMANDS: Final = (5, 6, 7, 36, 37, 38, 1024, 1025)
#: ``fcntl`` commands refused with ``EPERM``: F_NOTIFY (dnotify: a signal each
#: time any process on the machine reads a file in a watched folder) and
#: F_SETSIG (a real-time signal carrying the descriptor).
NOTIFY_COMMANDS: Final = (1026, 10)
#: ``clone`` flags refused (``EPERM``): new mount, user, pid, network, IPC,
#: UTS, cgroup and time namespaces.
NAMESPACE_FLAGS: Final = (
    0x0002_0000, 0x1000_0000, 0x2000_0000, 0x4000_0000, 0x0800_0000, 0x0400_0000,
    0x0200_0000, 0x0000_0080,
)  # fmt: skip
#: Socket families refused (``EAFNOSUPPORT``): IPv4 and IPv6. A sealed bot has
#: no network (only a loopback of its own), and the kernel's count of TCP and
#: UDP buffer pages (``/proc/net/sockstat``, ``/proc/net/protocols``: a file
#: of the bot's network namespace, which cannot be covered) is machine-wide.
#: A bot's own processes talk over unix sockets and pipes.
REFUSED_FAMILIES: Final = (2, 10)
#: Netlink protocol refused (``EPERM``): NETLINK_KOBJECT_UEVENT (device events
#: of the whole machine).
NETLINK_UEVENT: Final = 15

#: What the filter allows, by family, and why that is safe (or what is left
#: open and its capacity): the written record issue 22 asks for, repeated in
#: docs/competitions.md.
SYSCALL_FAMILIES: Final = {
    "file locks (flock, fcntl locks, OFD locks, leases)": "refused (ENOLCK)",
    "dnotify (fcntl F_NOTIFY, F_SETSIG)": "refused (EPERM)",
    "inotify, fanotify": "refused (EPERM), instances too (counted per user)",
    "keyrings (add_key, request_key, keyctl)": "refused (EPERM)",
    "ptrace, process_vm_readv/writev": "refused (EPERM); /proc/1 (bubblewrap's init) is hidden",
    "namespaces (unshare, setns, clone flags, clone3)": "refused (EPERM; clone3 ENOSYS)",
    "mounts (mount, new mount API, pivot_root, chroot)": "refused (EPERM)",
    "io_uring, Linux AIO": "refused (ENOSYS): runtimes fall back to plain calls",
    "bpf, perf_event_open, userfaultfd, syslog": "refused (EPERM)",
    "IPv4 and IPv6 sockets": "refused (EAFNOSUPPORT): no network; global socket-buffer counts",
    "netlink": "allowed except NETLINK_KOBJECT_UEVENT: route and sock_diag see the "
    "bot's own network namespace only",
    "unix sockets, pipes, socketpair": "allowed: abstract and path sockets are per "
    "network namespace and per mount namespace (the bot's own)",
    "System V IPC, POSIX message queues": "allowed: per IPC namespace (the bot's own); "
    "message queues also refused by RLIMIT_MSGQUEUE 0",
    "memfd_create, mmap, shared memory": "allowed: private to the bot's processes",
    "signals (kill, tgkill, sigqueue)": "allowed: only processes of the bot's pid namespace",
    "sysinfo": "refused (ENOSYS): machine-wide free memory, load and thread count; "
    "glibc's sysconf(_SC_PHYS_PAGES) then fails, /proc/meminfo gives the bot's limit",
    "statfs on read-only binds": "allowed: free space of the organiser's file systems, "
    "which sealed bots cannot write",
    "sched_*, getrusage, times, clock_*": "allowed: the bot's own processes",
}


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or ``None`` when bubblewrap is not installed."""
    return shutil.which("bwrap")


def runs_as_root(user: int | None) -> bool:
    """Whether a bot started as ``user`` (a uid; ``None``: this process's own
    user, as with ``--same-user``) runs as root, and so may open the /proc
    files only root may (the ``as_root`` of :func:`sealed_argv`)."""
    return (user if user is not None else os.geteuid()) == 0


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
        eperm = pyseccomp.ERRNO(errno.EPERM)
        for command in NOTIFY_COMMANDS:
            filt.add_rule(eperm, "fcntl", pyseccomp.Arg(1, pyseccomp.EQ, command))
        for call in REFUSED_CALLS:
            _add_if_known(filt, eperm, call)
        for call in MISSING_CALLS:
            _add_if_known(filt, pyseccomp.ERRNO(errno.ENOSYS), call)
        for flag in NAMESPACE_FLAGS:
            filt.add_rule(eperm, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
        for family in REFUSED_FAMILIES:
            filt.add_rule(
                pyseccomp.ERRNO(errno.EAFNOSUPPORT),
                "socket",
                pyseccomp.Arg(0, pyseccomp.EQ, family),
            )
        filt.add_rule(
            eperm,
            "socket",
            pyseccomp.Arg(0, pyseccomp.EQ, 16),  # AF_NETLINK
            pyseccomp.Arg(2, pyseccomp.EQ, NETLINK_UEVENT),
        )
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as out:
            filt.export_bpf(out)
        with os.fdopen(read_end, "rb") as inp:
            program = inp.read()
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"libseccomp could not build the filter ({exc})"
    return program, ""


def _add_if_known(filt: Any, action: Any, call: str) -> None:
    """Add a rule refusing ``call``, unless this kernel and libseccomp do not
    know it (an older system: there is then nothing to refuse)."""
    with contextlib.suppress(RuntimeError, ValueError, OSError):
        filt.add_rule(action, call)


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
    """Remove the package copies (:func:`bot_package_parent`), static
    ``/proc`` views (:func:`proc_view`) and root views
    (:mod:`arena.sandbox.rootview`) left by arenas that are gone: one
    killed with SIGKILL removes nothing at exit. Copies of running arenas stay.

    Searched: ``folder`` when given; else the temporary folder, and for root
    views also :data:`arena.sandbox.rootview.VIEW_PARENTS` (where a view is
    made when the temporary folder lies on another file system than the
    files it links). An arena is gone when no process has its pid, or when
    the process that has it now is not the one named by the view's
    :data:`~arena.sandbox.rootview.OWNER_FILE` (a pid reused, after a reboot
    for a view in ``/var/tmp``).

    Returns:
        How many copies were removed.
    """
    import tempfile

    places: list[tuple[Path, tuple[str, ...]]]
    if folder is not None:
        places = [(folder, _LEFT_PREFIXES)]
    else:
        places = [(Path(tempfile.gettempdir()), _LEFT_PREFIXES)]
        places += [(Path(p), (ROOT_VIEW_PREFIX,)) for p in VIEW_PARENTS]
    removed = 0
    seen: set[str] = set()
    for place, prefixes in places:
        real = os.path.realpath(place)
        if real in seen:
            continue
        seen.add(real)
        with contextlib.suppress(OSError):
            for entry in os.scandir(place):
                prefix = next((p for p in prefixes if entry.name.startswith(p)), None)
                pid_text = entry.name[len(prefix) :].split("-", 1)[0] if prefix else ""
                if pid_text.isdigit() and _arena_gone(entry.path, int(pid_text)):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed += 1
    return removed


def _arena_gone(folder: str, pid: int) -> bool:
    """Whether the arena of pid ``pid`` that made ``folder`` is gone: no
    process has that pid, or the one that has it is not the one
    ``folder``'s owner file names."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass  # alive, another user's
    try:
        made_by = Path(folder, OWNER_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    now = process_mark(pid)
    return now is not None and now != made_by


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

    import arena

    package = Path(arena.__file__).resolve().parent
    if _readable_by_everyone(package) and _readable_by_everyone(package.parent):
        _BOT_PACKAGE_PARENT.append(package.parent)
        return package.parent
    copy = copy_package()
    _BOT_PACKAGE_PARENT.append(copy)
    return copy


def copy_package() -> Path:
    """A copy of the ``arena`` package (without ``__pycache__``), readable by
    everyone, in a new folder of the temporary folder named
    ``hearts-arena-package-<pid>-*``, removed at exit (or, after a SIGKILL,
    by :func:`remove_package_copies_of_dead_arenas`); returns that folder."""
    import atexit
    import tempfile

    import arena

    package = Path(arena.__file__).resolve().parent
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
    return copy


def runtime_paths(*, arena_python: bool = True) -> list[Path]:
    """Folders outside the system folders that the bots' interpreter needs
    (a virtual environment, ``/opt/python``): bound read-only into every
    sandbox at their own paths. The ``arena`` package is bound apart, at
    :data:`KIT_DIR` (:func:`kit_source`).

    Args:
        arena_python: the bots run the arena's own interpreter (its prefixes
            are bound); ``False`` when they run a system Python
            (:func:`arena.isolation.python_for`): nothing is needed.
    """
    found: list[Path] = []
    if arena_python:
        for text in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
            found.append(Path(text))
        found.append(Path(os.path.realpath(sys.executable)).parent)
    out: list[Path] = []
    for path in found:
        if path.parts[1:2] in (("usr",), ()) or not path.is_dir():
            continue
        if path not in out:
            out.append(path)
    # A folder inside another of the list (a pyenv's ``bin`` inside its
    # prefix) is seen through that one's bind: one mount fewer a start.
    return [p for p in out if not any(o != p and p.is_relative_to(o) for o in out)]


_KIT_COPY: list[Path] = []


def kit_source() -> Path:
    """The ``arena`` package folder bound at ``KIT_DIR/arena`` in every
    sandbox (the bot kit: sealed bots get ``PYTHONPATH`` :data:`KIT_DIR`):
    always a copy (:func:`copy_package`), so that the mount table a sealed bot
    reads names a temporary folder, not the organiser's checkout or
    virtual environment."""
    if not _KIT_COPY:
        _KIT_COPY.append(copy_package())
    return _KIT_COPY[0] / "arena"


def bot_path_variable(sandbox_ro: Iterable[Path] = ()) -> str:
    """A sealed bot's ``PATH``: the ``bin`` folders of the ``--sandbox-ro``
    paths that have one (a JVM in ``/opt/jdk``), then :data:`BOT_PATH`; never
    the organiser's own ``PATH``."""
    extra = []
    for path in sandbox_ro:
        candidate = path if path.name == "bin" else path / "bin"
        if candidate.is_dir() and str(candidate) not in extra:
            extra.append(str(candidate))
    return ":".join([*extra, BOT_PATH])


def _resolve(path: str, links: dict[str, str]) -> str:
    """``path`` with every symbolic link on the way followed (as ``realpath``
    does), recording each link met (its place, with its folder resolved, and
    its text) in ``links``, so that a sandbox can re-create the same links.

    Raises:
        OSError: a loop of links.
    """
    parts = list(reversed([p for p in path.split("/") if p]))
    current = "/"
    hops = 0
    while parts:
        name = parts.pop()
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                raise OSError(errno.ELOOP, "too many links", path)
            target = os.readlink(candidate)
            links[candidate] = target
            if target.startswith("/"):
                current = "/"
            parts.extend(reversed([p for p in target.split("/") if p]))
        else:
            current = candidate
    return current


def _elf_needs(path: str) -> tuple[list[str], list[str], str | None]:
    """The libraries an ELF file names (``DT_NEEDED``), its search folders
    (``DT_RUNPATH``/``DT_RPATH``, ``$ORIGIN`` expanded) and its interpreter
    (``PT_INTERP``); nothing for a file that is not ELF. Read from the
    program headers with ``struct`` (the System V ABI's layout, 32 and 64 bit,
    either byte order): pyelftools took 3 to 4 s for the runtimes' hundred
    files, at every arena start."""
    import mmap

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF" or os.fstat(f.fileno()).st_size < 64:
                return [], [], None
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # only pages read are read
    except (OSError, ValueError):
        return [], [], None
    with data:
        return _elf_fields(data, path)


def _elf_fields(data: Any, path: str) -> tuple[list[str], list[str], str | None]:
    """:func:`_elf_needs` of the mapped file ``data``."""
    import struct

    wide = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    word = "Q" if wide else "I"
    try:
        phoff = struct.unpack_from(end + word, data, 0x20 if wide else 0x1C)[0]
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36 if wide else 0x2A)
        loads: list[tuple[int, int, int]] = []
        dynamic: tuple[int, int] | None = None
        interp = None
        for i in range(phnum):
            at = phoff + i * phentsize
            if wide:
                p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                    end + "IIQQQQ", data, at
                )
            else:
                p_type, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                    end + "IIIII", data, at
                )
            if p_type == 1:  # PT_LOAD
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == 2:  # PT_DYNAMIC
                dynamic = (p_offset, p_filesz)
            elif p_type == 3:  # PT_INTERP
                interp = bytes(data[p_offset : p_offset + p_filesz]).split(b"\0")[0].decode()
        if dynamic is None:
            return [], [], interp
        entry = end + ("qQ" if wide else "iI")
        size = struct.calcsize(entry)
        tags: list[tuple[int, int]] = []
        for at in range(dynamic[0], dynamic[0] + dynamic[1], size):
            tag, value = struct.unpack_from(entry, data, at)
            if tag == 0:  # DT_NULL
                break
            tags.append((tag, value))
        strtab = next((v for t, v in tags if t == 5), None)  # DT_STRTAB, an address
        base = next(
            (o + strtab - a for a, o, n in loads if strtab is not None and a <= strtab < a + n),
            None,
        )
    except (struct.error, UnicodeDecodeError):
        return [], [], None
    if base is None:
        return [], [], interp

    def text(offset: int) -> str:
        stop = data.find(b"\0", base + offset)
        return bytes(data[base + offset : stop]).decode(errors="replace")

    needed = [text(v) for t, v in tags if t == 1]  # DT_NEEDED
    folders = [
        w.replace("$ORIGIN", os.path.dirname(path))
        for t, v in tags
        if t in (15, 29)  # DT_RPATH, DT_RUNPATH
        for w in text(v).split(":")
    ]
    return needed, folders, interp


def _library_cache() -> dict[str, str]:
    """Library names to paths, from the dynamic loader's cache (``ldconfig
    -p``), for this machine's architecture (the folder of the arena's own
    C library is preferred)."""
    here = ""
    with contextlib.suppress(OSError), open("/proc/self/maps") as f:
        for line in f:
            word = line.split()[-1]
            if "/libc.so" in word or "/libc-" in word:
                here = os.path.dirname(os.path.realpath(word))
                break
    found: dict[str, str] = {}
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        text = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    for line in text.splitlines()[1:]:
        name, _, where = line.strip().partition(" => ")
        name = name.split(" (")[0]
        if not where:
            continue
        if name not in found or os.path.dirname(os.path.realpath(where)) == here:
            found[name] = where
    return found


_READABLE: list[tuple[tuple[str, ...], dict[str, str]]] = []


def _readable() -> tuple[tuple[str, ...], dict[str, str]]:
    """``(bound, links)``: the real paths bound read-only (files and folders)
    and the symbolic links re-created, computed once per process."""
    if _READABLE:
        return _READABLE[0]
    links: dict[str, str] = {}
    roots: list[str] = []
    files: list[str] = []
    for folder in RUNTIME_FOLDERS:
        if os.path.isdir(folder):
            roots.append(_resolve(folder, links))
    for name in ETC_FILES:
        path = os.path.join("/etc", name)
        if os.path.lexists(path):
            real = _resolve(path, links)
            if os.path.exists(real):
                (roots if os.path.isdir(real) else files).append(real)
    elves: list[str] = []
    for program in RUNTIME_PROGRAMS:
        if os.path.exists(program):
            real = _resolve(program, links)
            files.append(real)
            elves.append(real)
    for root in list(roots):
        if root.startswith("/etc"):
            continue
        for folder, _dirs, names in os.walk(root):
            for name in names:
                if name.endswith(".so") and (
                    "/lib-dynload" in folder or name.split(".")[0] in JVM_LIBRARIES
                ):
                    path = os.path.join(folder, name)
                    if os.path.isfile(path) and not os.path.islink(path):
                        elves.append(path)
    cache = _library_cache()
    wanted = [cache[name] for name in RUNTIME_LIBRARIES if name in cache]
    seen: set[str] = set()
    for path in wanted:
        real = _resolve(path, links)
        files.append(real)
        elves.append(real)
    while elves:
        elf = elves.pop()
        if elf in seen:
            continue
        seen.add(elf)
        needed, folders, interp = _elf_needs(elf)
        if interp and os.path.exists(interp):
            real = _resolve(interp, links)
            files.append(real)
            elves.append(real)
        for name in needed:
            where = next(
                (os.path.join(f, name) for f in folders if os.path.exists(os.path.join(f, name))),
                cache.get(name),
            )
            if where is None or not os.path.exists(where):
                continue
            real = _resolve(where, links)
            files.append(real)
            elves.append(real)
    bound: list[str] = []
    for path in sorted({*roots, *files}, key=lambda p: (p.count("/"), p)):
        if not any(path == b or path.startswith(b + "/") for b in bound):
            bound.append(path)
    kept = {
        where: text
        for where, text in links.items()
        if not any(where.startswith(b + "/") for b in bound if os.path.isdir(b))
    }
    _READABLE.append((tuple(bound), kept))
    return _READABLE[0]


def _root_view() -> RootView:
    """This process's root view of :func:`_readable` (:mod:`arena.sandbox.rootview`)."""
    if not _ROOT_VIEW_MADE:
        remove_package_copies_of_dead_arenas()
        _ROOT_VIEW_MADE.append(True)
    return root_view(*_readable())


_ROOT_VIEW_MADE: list[bool] = []


def readable_paths() -> tuple[Path, ...]:
    """What a sealed bot can read besides its own folder, the bot kit, its
    private ``/tmp`` and ``/dev/shm``, the static ``/proc`` view
    (:func:`proc_view`) and ``--sandbox-ro`` paths: the files and folders of
    the runtimes (:data:`RUNTIME_PROGRAMS`, :data:`RUNTIME_FOLDERS`,
    :data:`RUNTIME_LIBRARIES`, the libraries their ELF files load, found with
    pyelftools and the loader's cache) and the ``/etc`` files of
    :data:`ETC_FILES`, as real paths (symbolic links followed), shortest
    first; no path lies inside another. Computed once per process.

    Another process's reads of these files are what a page cache channel
    would carry, so this is the list to make forget between an entrant's
    games (issue 22)."""
    return tuple(Path(p) for p in _readable()[0])


#: Name prefix of the static ``/proc`` views (``hearts-arena-proc-<pid>-*``).
PROC_VIEW_PREFIX: Final = "hearts-arena-proc-"
#: Files of ``/proc`` a sealed bot reads as the kernel has them: per process
#: (its own pid namespace), per namespace of its own, or fixed while the
#: machine runs. Every other file at the top of ``/proc`` is covered by the
#: static view (:func:`proc_view`).
PROC_AS_IS: Final = (
    "cmdline", "consoles", "crypto", "devices", "dma", "execdomains", "fb", "filesystems",
    "kallsyms", "misc", "modules", "mtrr", "version", "keys", "config.gz",
)  # fmt: skip
#: Folders of ``/proc`` covered by an empty folder (hardware counters,
#: per-device statistics and file system journals: nothing a bot needs).
PROC_HIDDEN_DIRS: Final = ("acpi", "driver", "fs", "irq", "bus", "tty", "scsi", "1")
_PROC_VIEWS: dict[int, Path] = {}
#: The prefixes of what an arena leaves in the temporary folder when killed
#: (root views also in :data:`arena.sandbox.rootview.VIEW_PARENTS`).
_LEFT_PREFIXES: Final = (PACKAGE_COPY_PREFIX, PROC_VIEW_PREFIX, ROOT_VIEW_PREFIX)


def _meminfo(memory_mb: int) -> str:
    total = memory_mb * 1024
    keys = {"MemTotal": total, "MemFree": total, "MemAvailable": total}
    for key in (
        "Buffers", "Cached", "SwapCached", "Active", "Inactive", "Active(anon)",
        "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable", "Mlocked",
        "SwapTotal", "SwapFree", "Dirty", "Writeback", "AnonPages", "Mapped", "Shmem",
        "KReclaimable", "Slab", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables",
        "NFS_Unstable", "Bounce", "WritebackTmp", "CommitLimit", "Committed_AS",
        "VmallocTotal", "VmallocUsed", "VmallocChunk", "Percpu", "AnonHugePages",
        "ShmemHugePages", "ShmemPmdMapped", "FileHugePages", "FilePmdMapped",
    ):  # fmt: skip
        keys[key] = 0
    keys["CommitLimit"] = total
    lines = [f"{k + ':':<16}{v:>8} kB" for k, v in keys.items()]
    lines += [
        "HugePages_Total:       0",
        "HugePages_Free:        0",
        "HugePages_Rsvd:        0",
        "HugePages_Surp:        0",
        "Hugepagesize:       2048 kB",
        "Hugetlb:               0 kB",
    ]
    return "\n".join(lines) + "\n"


def _stat(cpus: int, btime: int) -> str:
    zeros = " ".join(["0"] * 10)
    lines = [f"cpu  {zeros}", *(f"cpu{i} {zeros}" for i in range(cpus))]
    lines += ["intr 0", "ctxt 0", f"btime {btime}", "processes 1", "procs_running 1"]
    lines += ["procs_blocked 0", "softirq " + " ".join(["0"] * 11)]
    return "\n".join(lines) + "\n"


@functools.cache
def _closed_to_bots() -> frozenset[str]:
    """The files at the top of ``/proc`` that are root's and give everyone
    else neither read nor write (``kmsg``, ``slabinfo``, ``timer_list``,
    ``kpageflags``, ...). A bot that is not root (a uid of its own, with no
    capability in the machine's namespace) cannot open them, so its
    sandbox leaves them uncovered (:func:`proc_binds`): each file covered
    is one more mount in every sealed start, and bubblewrap reads the whole
    mount table after each (some 0.3 ms of CPU each, issue 26)."""
    closed: set[str] = set()
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            mine = st.st_uid == 0 and st.st_gid == 0 and not st.st_mode & 0o006
            if mine and stat.S_ISREG(st.st_mode):
                closed.add(entry.name)
    return frozenset(closed)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    path.write_text(text)
    path.chmod(0o444)


def proc_view(memory_mb: int) -> Path:
    """A folder (readable by everyone, made once per process and memory
    bound, removed at exit) of files bound read-only over the sandbox's
    ``/proc``: what a sealed bot reads there instead of the machine's
    counters, which another bot could move (issue 22, as LXCFS does for
    containers). Each file parses as the kernel's does:

    * ``meminfo``: ``MemTotal``, ``MemFree`` and ``MemAvailable`` are the
      bot's memory bound (``memory_mb`` MiB; the machine's memory when 0 or
      smaller), everything else 0;
    * ``stat``: one ``cpu`` line per CPU the arena may use
      (``sched_getaffinity``), all counts 0, ``btime`` the machine's;
      ``loadavg`` ``0.00 0.00 0.00 1/1 1``; ``uptime`` and ``cpuinfo`` as
      they were when the view was made; ``vmstat`` its keys with 0;
    * ``pressure/{cpu,memory,io}``: no pressure;
    * ``sys/``: the files of :data:`PROC_SYS_FILES` as they were when the
      view was made, with the counters set to the bot's own:
      ``kernel/pty/nr`` 0, ``fs/file-nr``, ``fs/inode-nr``, ``fs/dentry-state``,
      ``fs/aio-nr`` 0, ``kernel/random/entropy_avail`` 256,
      ``kernel/ns_last_pid`` 1, ``kernel/hostname`` ``hearts-bot``;
    * every other file at the top of ``/proc`` (not in :data:`PROC_AS_IS`):
      empty (``zoneinfo``, ``buddyinfo``, ``interrupts``, ``softirqs``,
      ``diskstats``, ``schedstat``, ``locks``, ``key-users``, ``cgroups``,
      ``swaps``, ``partitions``, ``iomem``, ...); the folders of
      :data:`PROC_HIDDEN_DIRS` (``/proc/1`` is bubblewrap's init) an empty
      folder ``empty/``.
    """
    found = _PROC_VIEWS.get(memory_mb)
    if found is not None and found.is_dir():
        return found
    import atexit
    import tempfile

    remove_package_copies_of_dead_arenas()
    view = Path(tempfile.mkdtemp(prefix=f"{PROC_VIEW_PREFIX}{os.getpid()}-"))
    view.chmod(0o755)
    atexit.register(shutil.rmtree, view, True)
    machine_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    bound = memory_mb if 0 < memory_mb <= machine_mb else machine_mb
    btime = 0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                btime = int(line.split()[1])
    _write(view / "meminfo", _meminfo(bound))
    _write(view / "stat", _stat(len(os.sched_getaffinity(0)), btime))
    _write(view / "loadavg", "0.00 0.00 0.00 1/1 1\n")
    for name in ("uptime", "cpuinfo"):
        with contextlib.suppress(OSError):
            _write(view / name, Path("/proc", name).read_text())
    with contextlib.suppress(OSError):
        keys = [x.split()[0] for x in Path("/proc/vmstat").read_text().splitlines() if x]
        _write(view / "vmstat", "".join(f"{k} 0\n" for k in keys))
    for name in ("cpu", "memory", "io"):
        line = "avg10=0.00 avg60=0.00 avg300=0.00 total=0"
        _write(view / "pressure" / name, f"some {line}\nfull {line}\n")
    (view / "empty").mkdir(mode=0o755)
    for entry in os.scandir("/proc"):
        name = entry.name
        if name.isdigit() or name in PROC_AS_IS or (view / name).exists():
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                _write(view / name, "")
    _copy_proc_sys(view / "sys")
    if os.path.isdir("/proc/sys/net"):
        (view / "sys" / "net").mkdir(mode=0o755)  # where the kernel's is bound
    counters = {
        "kernel/pty/nr": "0",
        "fs/file-nr": "0\t0\t1048576",
        "fs/inode-nr": "0\t0",
        "fs/inode-state": "0\t0\t0\t0\t0\t0\t0",
        "fs/dentry-state": "0\t0\t45\t0\t0\t0",
        "fs/aio-nr": "0",
        "kernel/random/entropy_avail": "256",
        "kernel/ns_last_pid": "1",
        "kernel/hostname": "hearts-bot",
    }
    for where, value in counters.items():
        target = view / "sys" / where
        if target.exists():
            target.chmod(0o644)
        _write(target, value + "\n")
    for folder, dirs, _files in os.walk(view):  # whatever the arena's umask
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    _PROC_VIEWS[memory_mb] = view
    return view


#: The files of ``/proc/sys`` a sealed bot finds (the runtimes read a few of
#: them: glibc ``vm/overcommit_memory``, JVMs ``kernel/pid_max`` and
#: ``vm/max_map_count``, Go ``net/core/somaxconn``), copied as they were when
#: the view was made; counters among them are set to the bot's own in
#: :func:`proc_view`. ``/proc/sys/net`` is the kernel's (each bot's network
#: namespace has its own).
PROC_SYS_FILES: Final = (
    "kernel/osrelease", "kernel/ostype", "kernel/version", "kernel/domainname",
    "kernel/pid_max", "kernel/threads-max", "kernel/ngroups_max", "kernel/cap_last_cap",
    "kernel/overflowuid", "kernel/overflowgid", "kernel/random/boot_id",
    "kernel/random/poolsize", "kernel/pty/max", "kernel/shmmax", "kernel/shmall",
    "kernel/shmmni", "kernel/msgmax", "kernel/msgmnb", "kernel/msgmni", "kernel/sem",
    "vm/overcommit_memory", "vm/overcommit_ratio", "vm/max_map_count", "vm/mmap_min_addr",
    "fs/file-max", "fs/nr_open", "fs/aio-max-nr", "fs/pipe-max-size",
)  # fmt: skip


def _copy_proc_sys(dest: Path) -> None:
    """Copy :data:`PROC_SYS_FILES` into ``dest`` (those this kernel has)."""
    for name in PROC_SYS_FILES:
        with contextlib.suppress(OSError):
            _write(dest / name, Path("/proc/sys", name).read_text())


def proc_binds(view: Path, *, as_root: bool = True) -> list[str]:
    """bubblewrap arguments binding the static view ``view`` over the fresh
    ``/proc`` (after ``--proc /proc``): each of its files and ``pressure``
    and ``sys`` over the kernel's, the empty folder over each folder of
    :data:`PROC_HIDDEN_DIRS`. Unless the bot runs as root (``as_root``),
    the files only root may open (:func:`_closed_to_bots`) stay the
    kernel's, which the bot cannot open."""
    args: list[str] = []
    closed = frozenset() if as_root else _closed_to_bots()
    for entry in sorted(os.listdir(view)):
        if entry == "empty" or entry in closed:
            continue
        args += ["--ro-bind", str(view / entry), f"/proc/{entry}"]
    if (view / "sys" / "net").is_dir():  # per network namespace: the bot's own
        args += ["--ro-bind", "/proc/sys/net", "/proc/sys/net"]
    for name in PROC_HIDDEN_DIRS:
        if name == "1" or os.path.isdir(f"/proc/{name}"):
            args += ["--ro-bind", str(view / "empty"), f"/proc/{name}"]
    return args


def sealed_argv(
    argv: Sequence[str],
    *,
    folder: Path,
    cwd: Path,
    tmp_mb: int,
    read_only: Iterable[Path] = (),
    seccomp: bool = True,
    bwrap: str = "bwrap",
    memory_mb: int = 0,
    seccomp_fd: int = SECCOMP_FD,
    as_root: bool = True,
) -> list[str]:
    """Wrap ``argv`` in bubblewrap with the allowlisted root described in the
    module docstring.

    Args:
        argv: the bot's command (paths in ``folder`` already given as
            :data:`ENTRANT_DIR` paths).
        folder: its entrant folder (its private copy), bound read-only at
            :data:`ENTRANT_DIR`.
        cwd: the folder it starts in, inside the sandbox (:data:`ENTRANT_DIR`
            or a folder inside it).
        tmp_mb: size of the private ``/tmp`` and of ``/dev/shm``, in MiB each.
        read_only: more paths bound read-only at the same place (the
            interpreter prefix, ``--sandbox-ro``).
        seccomp: add ``--seccomp`` ``seccomp_fd``.
        bwrap: the bubblewrap executable.
        memory_mb: the bot's memory bound, in MiB, which its ``/proc/meminfo``
            shows (:func:`proc_view`; 0: the machine's memory).
        seccomp_fd: the descriptor holding the filter (:data:`SECCOMP_FD`).
        as_root: bubblewrap runs as root (``--same-user`` in a root arena):
            every file of ``/proc`` outside :data:`PROC_AS_IS` is covered,
            those only root may open included (:func:`proc_binds`).
    """
    args = [bwrap, "--unshare-all", "--die-with-parent", "--hostname", "hearts-bot"]
    view = _root_view()
    args += view.argv()
    size = str(tmp_mb * 1024 * 1024)
    args += ["--proc", "/proc", *proc_binds(proc_view(memory_mb), as_root=as_root)]
    args += ["--perms", "0755", "--tmpfs", "/dev"]
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        args += ["--symlink", target, f"/dev/{name}"]
    for tmpfs in ("/tmp", "/dev/shm"):
        args += ["--perms", "0700", "--size", size, "--tmpfs", tmpfs]
    for extra in read_only:
        view.mount_point(str(extra), folder=os.path.isdir(extra))
        args += ["--ro-bind", str(extra), str(extra)]
    view.mount_point(str(KIT_DIR / "arena"), folder=True)
    args += ["--ro-bind", str(kit_source()), str(KIT_DIR / "arena")]
    args += ["--ro-bind", str(folder), str(ENTRANT_DIR), "--chdir", str(cwd)]
    if seccomp:
        args += ["--seccomp", str(seccomp_fd)]
    return [*args, "--", "/bin/sh", "-c", STDIO_SCRIPT, "sh", *argv]


#: The command the start-up probe runs sealed: the shell bots start through,
#: then Python importing the bot kit (the system calls of a real start).
PROBE_COMMAND: Final = "exit 0"


def probe(
    *,
    user: int | None,
    group: int | None,
    read_only: Iterable[Path] = (),
    seccomp: bytes | None = None,
    memory_mb: int = 0,
    timeout: float = 20,
) -> str | None:
    """Start one sealed process exactly as bots are started (as ``user``,
    with the same binds, the static ``/proc`` view and the seccomp
    ``seccomp`` program when given) to learn whether sealing works here.

    A success is remembered for the life of this process (a run played in
    a process that already probed, as the tests and a competition's runner
    do, does not probe again) under :func:`_probe_key`: the bubblewrap file's
    identity, whether bots run as another user, the ``read_only`` paths,
    the filter, the memory bound, the bot kit's copy and the kernel
    settings that turn user namespaces off. Any of them changed, it probes
    again. Only a success is remembered: a stale one can only make bots
    fail to start, with their reason recorded, never play them unsealed.

    Returns:
        ``None`` when it works, else one line saying why not (bubblewrap
        missing, it cannot create its namespaces, or the filter cannot be
        loaded: ``prctl(PR_SET_SECCOMP): Invalid argument`` under qemu-user).
    """
    import tempfile

    bwrap = bwrap_path()
    if bwrap is None:
        return "bubblewrap (the 'bwrap' command, Debian package 'bubblewrap') is not installed"
    key = _probe_key(bwrap, user is not None, read_only, seccomp, memory_mb)
    if key is not None and key in _PROBED:
        return None
    folder = Path(tempfile.mkdtemp(prefix="hearts-arena-probe-"))
    folder.chmod(0o755)
    fd = seccomp_fd(seccomp) if seccomp is not None else -1
    try:
        argv = sealed_argv(
            ["/bin/sh", "-c", PROBE_COMMAND],
            folder=folder,
            cwd=ENTRANT_DIR,
            tmp_mb=1,
            read_only=read_only,
            seccomp=seccomp is not None,
            bwrap=bwrap,
            memory_mb=memory_mb,
            seccomp_fd=fd,
            as_root=runs_as_root(user),
        )
        argv = ['exec "$@"' if a == STDIO_SCRIPT else a for a in argv]
        proc = subprocess.run(
            argv, capture_output=True, timeout=timeout, check=False, user=user, group=group,
            extra_groups=[] if group is not None else None, cwd="/",
            pass_fds=(fd,) if fd >= 0 else (),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run here: {exc}"
    finally:
        if fd >= 0:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        why = lines[-1][:300] if lines else f"exit code {proc.returncode}"
        if seccomp is not None and "seccomp" in why.lower():
            return f"bubblewrap cannot load the seal's seccomp filter here ({why})"
        return f"bubblewrap cannot create its namespaces here ({why})"
    if key is not None:
        _PROBED.add(key)
    return None


#: The keys (:func:`_probe_key`) of the probes that succeeded in this process.
_PROBED: set[tuple[object, ...]] = set()
#: Kernel settings that can turn off the user namespaces bubblewrap needs
#: while the machine runs (Debian's, the upstream count, Ubuntu's AppArmor
#: switch): part of a probe's key.
USERNS_SETTINGS: Final = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def _probe_key(
    bwrap: str, other_user: bool, read_only: Iterable[Path], seccomp: bytes | None, memory_mb: int
) -> tuple[object, ...] | None:
    """What a probe's outcome depends on, beside what cannot change while
    this process lives (the seal's bound paths, :func:`_readable`, are
    computed once per process; the machine's boot): the bubblewrap file
    (real path, device, inode, size, mode, owner, change time), bots as
    another user or not, the ``read_only`` paths, the filter's SHA-256, the
    memory bound, the bot kit's copy (its inode: a removed copy would fail
    every bot) and :data:`USERNS_SETTINGS`. ``None`` (probe, remember
    nothing) when one of them cannot be read."""
    import hashlib

    try:
        real = os.path.realpath(bwrap)
        st = os.stat(real)
        kit = os.stat(kit_source()).st_ino
        settings: list[str | None] = []
        for name in USERNS_SETTINGS:
            try:
                with open(name) as f:
                    settings.append(f.read().strip())
            except FileNotFoundError:
                settings.append(None)
    except OSError:
        return None
    file = (real, st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_uid, st.st_ctime_ns)
    program = hashlib.sha256(seccomp).hexdigest() if seccomp is not None else None
    paths = tuple(str(p) for p in read_only)
    return (file, other_user, paths, program, memory_mb, kit, tuple(settings))


#: What an unsealed bot is not isolated from (the one line printed when
#: sealing cannot work, after the reason).
NOT_ISOLATED: Final = (
    "bots are NOT sealed: they can use the network, see other processes, "
    "and exchange data with other bots through /tmp, /dev/shm, sockets, IPC and file locks"
)
