"""Keeping bot processes in their place: resource limits, an unprivileged user
per process, and finding and removing everything a bot left behind.

Layers (the seal, :mod:`arena.sandbox.seal`, comes on top, by default):

* **Resource limits** (``setrlimit`` in the child before ``exec``): address
  space, open files, file size, no core files; CPU seconds *per game* (the
  soft ``RLIMIT_CPU`` is moved forward at each game start with ``prlimit``,
  because a process may play several games); and the number of processes,
  which only binds a non-root user.
* **An unprivileged user per process** when the arena runs as root (the
  default then): each bot process gets its own uid from a pool, reserved with
  a lock file so two arenas on one machine never share one. Everything the
  uid runs is killed when the process is closed, even a grandchild that left
  the process group with ``setsid``; what it left in world-writable folders,
  its message queues and System V IPC objects are removed before the uid is
  leased again (:func:`purge_uid`; uids released together, such as a game's
  four bots, in one search: :func:`release_leases`). Each entrant also gets a group of its own
  (:func:`lease_gid`), the only one that can read its copy of its folder.

Without root, the arena cannot change uid; strays are then found by a token in
their environment (a process that clears its environment escapes that search;
the seal closes that gap).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import resource
import shutil
import signal
import stat
from collections.abc import Collection, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from arena.sandbox.childsetup import _LIBC, Rlimits
from arena.sandbox.childsetup import clear_user_keyrings as clear_user_keyrings

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
        stderr_kib: KiB of stderr the arena reads from one bot process per
            game; past it the rest of the game's stderr is discarded unread
            (spliced into ``/dev/null``) and counted (``--stderr-limit``); 0 for none.
    """

    memory_mb: int = 4096
    cpu_seconds: int = 300
    processes: int = 256
    open_files: int = 256
    file_size_mb: int = 256
    stderr_kib: int = 1024

    def describe(self) -> dict[str, int]:
        """The limits as plain data (settings record)."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "processes": self.processes,
            "open_files": self.open_files,
            "file_size_mb": self.file_size_mb,
            "stderr_kib": self.stderr_kib,
        }


def make_preexec(limits: Limits, *, limit_processes: bool) -> Rlimits:
    """What the child runs before ``exec`` (a callable :class:`~arena.sandbox.childsetup.Rlimits`,
    plain data the spawn server can be sent): a fresh session keyring, then
    ``limits``, and no core file and no POSIX message queue.

    Runs between fork and exec, so it only calls ``setrlimit``. A limit
    above the arena's own hard limit (``--max-open-files 256`` under
    ``ulimit -Hn 128``) is lowered to it: an unprivileged process cannot
    raise a hard limit, and the bot would fail to start.
    """
    # No POSIX message queue: a bot has no use for one, and one left behind
    # would outlive the bot (RLIMIT_MSGQUEUE counts bytes of queues per user).
    settings: list[tuple[int, int]] = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_MSGQUEUE, 0)]
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

    pairs: list[tuple[int, int, int]] = []
    for which, value in settings:
        hard = value + 5 if which == resource.RLIMIT_CPU else value
        ceiling = resource.getrlimit(which)[1]  # a limit never rises above the arena's own
        if ceiling != resource.RLIM_INFINITY and ceiling >= 0:
            value, hard = min(value, ceiling), min(hard, ceiling)
        pairs.append((which, value, hard))

    return Rlimits(tuple(pairs))


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
    """A uid (or gid) reserved for one bot process (or one entrant);
    :meth:`release` gives it back.

    The lock file records the lease's state: ``in use`` while held, ``clean``
    once released. A uid whose file does not say ``clean`` when it is leased
    (its last holder's arena was killed) has its leftovers removed first
    (:func:`purge_uid`).
    """

    def __init__(self, uid: int, fd: int, *, purge: bool = False) -> None:
        self.uid = uid
        self._fd: int | None = fd
        #: Whether the holder could write outside a sandbox: files, IPC objects
        #: and message queues of the uid are then removed on release.
        self.purge = purge

    @property
    def held(self) -> bool:
        """Whether the lease is still held (not yet released)."""
        return self._fd is not None

    def release(self) -> None:
        """Remove what the uid left when :attr:`purge` is set, mark the uid
        clean and unlock it (idempotent). Call after its processes are dead."""
        release_leases((self,))

    def _unlock_clean(self) -> None:
        """Mark the uid clean and unlock it: only once its leftovers are gone."""
        if self._fd is not None:
            _write_state(self._fd, b"clean")
            os.close(self._fd)
            self._fd = None


def release_leases(leases: Iterable[UidLease], folders: Iterable[Path] | None = None) -> int:
    """Release several leases at once (:meth:`UidLease.release` of each):
    what the uids with :attr:`~UidLease.purge` set left is removed in one
    search of ``folders`` (default :data:`WORLD_WRITABLE`) for all of them
    (:func:`purge_uids`), and only then is each uid marked clean and unlocked,
    so nothing a holder left can be found by the uid's next holder. Leases
    already released are passed over. Call after the uids' processes are dead.

    Returns:
        How many things were removed.
    """
    held = [lease for lease in leases if lease._fd is not None]
    uids = {lease.uid for lease in held if lease.purge}
    # If the search raises, no lease is marked clean: each stays "in use"
    # (its lock goes with the arena), and its next holder purges it first.
    removed = purge_uids(uids, folders, message_queues=False) if uids else 0
    for lease in held:
        lease._unlock_clean()
    return removed


def _write_state(fd: int, state: bytes) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, state, 0)


def _read_state(fd: int) -> bytes:
    try:
        return os.pread(fd, 64, 0)
    except OSError:
        return b""


def lease_uid(base: int = DEFAULT_UID_BASE, size: int = UID_POOL_SIZE) -> UidLease:
    """Reserve a free uid of the pool with an exclusive ``flock`` on its lock
    file (released automatically if the arena dies). Kills any process still
    running as that uid (left by an arena that was killed), and passes over
    a uid that still has processes, zombies included (they count against the
    process limit of the next bot). A uid not released cleanly last time has
    its files, IPC objects and message queues removed (:func:`purge_uid`).

    A uid whose lock file says ``clean`` is preferred: the first
    :data:`CLEAN_WINDOW` uids from this arena's starting point are tried for
    one first (a purge walks every world-writable folder, tenths of a
    second on a busy ``/tmp``), then every uid of the pool, as before. Which
    uid is chosen changes nothing of what is checked on it.

    ``/proc`` is read for a uid that is leased after its lock is taken (a
    process started before that by a killed arena is seen), and that
    reading's table of uids with processes lets the uids after it that it
    shows busy be passed over without a reading of their own (passing a uid
    over is always safe; leasing one always takes a reading after its lock).

    Where the machine's init reaps orphans late, each sealed bot's
    bubblewrap leaves its uid a zombie for a while, so the first clean uid
    is often busy (issue 26: 2 readings a lease, some 3 ms of CPU each with
    150 processes). So the first pass locks :data:`LOOKAHEAD` clean uids
    before one reading, which holds for each of them (the others are
    unlocked untouched). No reading of an earlier lease is trusted for the
    first pass: passing over the clean uids it showed busy sent leases to
    the second pass more often, where a killed arena's uid is taken and its
    processes killed before that arena's ``--resume`` or ``cleanup`` (issue
    26: ``test_nothing_of_a_bot_is_left_after_kill_9_and_resume`` failed so).

    Raises:
        IsolationError: every uid of the pool is in use.
    """
    LOCK_DIR.mkdir(mode=0o755, exist_ok=True)
    start = os.getpid() % size
    # uids with processes, from the last reading of this call
    busy: list[frozenset[int]] = [frozenset()]
    window = min(CLEAN_WINDOW, size)

    def locked() -> Generator[tuple[int, int, bytes, bool], None, None]:
        """The uids to check, in order, each locked: (uid, lock fd, state,
        whether from the first pass)."""
        order = itertools.chain(
            ((i, True) for i in range(window)), ((i, False) for i in range(size))
        )
        for i, clean_only in order:
            uid = base + (start + i) % size
            if uid in busy[0]:
                continue
            path = LOCK_DIR / str(uid)
            flags = os.O_RDWR | os.O_CLOEXEC | (0 if clean_only else os.O_CREAT)
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:  # never leased here: not known to be clean
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            state = _read_state(fd)
            if clean_only and state != b"clean":
                os.close(fd)
                continue
            yield uid, fd, state, clean_only

    candidates = locked()
    held: list[tuple[int, int, bytes, bool]] = []
    try:
        while True:
            # Up to LOOKAHEAD clean uids locked before one reading, which
            # then holds for each of them.
            while len(held) < LOOKAHEAD and (not held or held[-1][3]):
                found = next(candidates, None)
                if found is None:
                    break
                held.append(found)
            if not held:
                raise IsolationError(f"all {size} bot uids from {base} are in use")
            live_of, now = _processes_of_uids({c[0] for c in held})
            busy[0] = now
            while held:
                uid, fd, state, _ = held.pop(0)
                live = live_of.get(uid)
                if live:
                    from arena.sandbox import cgroups

                    cgroups.thaw_groups_of(live)  # a frozen process may not die (v1 freezer)
                    kill_processes(live)
                    if not _uid_has_processes(uid):
                        busy[0] = busy[0] - {uid}
                if uid in busy[0]:
                    # Killed or zombie processes not yet reaped still count against
                    # the uid's process limit: a bot started now could not fork.
                    os.close(fd)
                    continue
                if state != b"clean":
                    purge_uid(uid)
                _write_state(fd, b"in use")
                return UidLease(uid, fd)
    finally:
        for _uid, fd, _state, _ in held:  # locked ahead, not leased: unlocked as found
            os.close(fd)
        candidates.close()


#: How many uids from an arena's starting point :func:`lease_uid` tries for
#: one whose lock file says ``clean`` before it takes any free uid.
CLEAN_WINDOW: Final = 64


#: Clean uids :func:`lease_uid` locks before one reading of ``/proc``: the
#: first is often busy (a zombie of its last bot, where orphans are reaped
#: late), and the reading then holds for the second, locked before it.
LOOKAHEAD: Final = 2


def _processes_of(uid: int) -> tuple[list[int], frozenset[int]]:
    """One reading of ``/proc``: the pids of the live processes (not
    zombies) with real uid ``uid``, and every real uid that has a process,
    zombies included. The arena itself is never listed."""
    live, uids = _processes_of_uids({uid})
    return live.get(uid, []), uids


def _processes_of_uids(
    wanted: Collection[int],
) -> tuple[dict[int, list[int]], frozenset[int]]:
    """One reading of ``/proc``: the pids of the live processes (not
    zombies) of each real uid of ``wanted`` that has any, and every real
    uid that has a process, zombies included. The arena itself is never
    listed."""
    me = os.getpid()
    live: dict[int, list[int]] = {}
    uids: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        text = _status(entry)
        at = text.find(b"\nUid:\t")
        if at < 0:
            continue
        real = int(text[at + 6 : text.index(b"\t", at + 6)])
        uids.add(real)
        if real in wanted and int(entry) != me and b"\nState:\tZ" not in text[:at]:
            live.setdefault(real, []).append(int(entry))
    return live, frozenset(uids)


#: First gid of the pool of entrant groups (one per entrant and arena: the
#: group that may read the entrant's private copy of its folder).
DEFAULT_GID_BASE: Final = 3_500_000


def lease_gid(base: int = DEFAULT_GID_BASE, size: int = UID_POOL_SIZE) -> UidLease:
    """Reserve a free entrant gid (lock file ``g<gid>`` beside the uid locks).
    Folders of a killed arena still readable by that group are removed first
    (:func:`remove_entrant_copies_of_gid`).

    Raises:
        IsolationError: every gid of the pool is in use.
    """
    LOCK_DIR.mkdir(mode=0o755, exist_ok=True)
    start = os.getpid() % size
    for i in range(size):
        gid = base + (start + i) % size
        fd = os.open(LOCK_DIR / f"g{gid}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _read_state(fd) != b"clean":
            remove_entrant_copies_of_gid(gid)
        _write_state(fd, b"in use")
        return UidLease(gid, fd)
    raise IsolationError(f"all {size} entrant gids from {base} are in use")


#: Name prefix of the folders holding entrants' private copies (in the
#: system's temporary folder).
ENTRANT_COPY_PREFIX: Final = "hearts-bot-"


def remove_entrant_copies_of_gid(gid: int) -> int:
    """Remove entrant copies (``hearts-bot-*-entrants-*/N``) whose group is
    ``gid``, left by a killed arena; returns how many."""
    import tempfile

    # Listed by hand, not with Path.glob: another arena removes its own
    # folders meanwhile, and a folder gone between listing and reading made
    # glob raise FileNotFoundError (and stop a worker).
    removed = 0
    for top in _entries(Path(tempfile.gettempdir())):
        if not (top.name.startswith(ENTRANT_COPY_PREFIX) and "-entrants-" in top.name):
            continue
        for path in _entries(top):
            with contextlib.suppress(OSError):
                st = path.lstat()
                if stat.S_ISDIR(st.st_mode) and st.st_gid == gid:
                    shutil.rmtree(path, ignore_errors=True)
                    removed += 1
    return removed


def _entries(folder: Path) -> list[Path]:
    """The entries of ``folder``; none when it cannot be listed (gone, or
    not a folder)."""
    try:
        with os.scandir(folder) as it:
            return [Path(e.path) for e in it]
    except OSError:
        return []


#: World-writable folders searched for a released uid's files: ``/tmp``,
#: ``/var/tmp``, ``/dev/shm``, and ``/run/lock`` (``/var/lock``) where the
#: machine has it (world-writable on most systems: an unsealed bot could
#: leave a deal's cards there for the entrant's next process, issue 11).
_RUN_LOCK: Final = Path("/run/lock")
WORLD_WRITABLE: Final = (
    Path("/tmp"),
    Path("/var/tmp"),
    Path("/dev/shm"),
    *((_RUN_LOCK,) if _RUN_LOCK.is_dir() and not _RUN_LOCK.is_symlink() else ()),
)


def purge_uid(
    uid: int, folders: Iterable[Path] | None = None, *, message_queues: bool = True
) -> int:
    """Remove what user ``uid`` left that another holder of the uid could
    find (:func:`purge_uids` for one uid).

    Returns:
        How many things were removed.
    """
    return purge_uids((uid,), folders, message_queues=message_queues)


def purge_uids(
    uids: Collection[int], folders: Iterable[Path] | None = None, *, message_queues: bool = True
) -> int:
    """Remove what the users ``uids`` left that another holder of one of
    them could find, in one search for all of them: their files, folders,
    sockets and pipes anywhere under ``folders`` (default
    :data:`WORLD_WRITABLE`) that one of them could reach (not following
    symlinks, not crossing into other file systems, not entering folders
    none of them could enter), their POSIX message queues, and their System V
    shared memory, semaphores and message queues. Call only when no process
    of these uids is left.

    One walk costs about what one uid's walk costs (tens of milliseconds on
    a /tmp of tens of thousands of entries), so uids released together (a
    game's four bots) are purged together.

    ``message_queues=False`` skips the POSIX message queues, which a bot
    cannot create (its ``RLIMIT_MSGQUEUE`` is 0) and whose search needs a
    mount of the mqueue file system (tens of milliseconds) unless
    ``/dev/mqueue`` is mounted: only a uid whose last holder ran without
    that limit needs it.

    Returns:
        How many things were removed.
    """
    wanted = frozenset(uids)
    if not wanted:
        return 0
    removed = 0
    for top in WORLD_WRITABLE if folders is None else folders:
        with contextlib.suppress(OSError):
            counts = _file_system_of(top) in LINK_COUNTING
            removed += _purge_tree(top, wanted, os.lstat(top).st_dev, counts_links=counts)
    if message_queues:
        removed += _purge_mqueues(wanted)
    removed += _purge_sysv(wanted)
    return removed


#: File systems whose folders' link count is 2 + their number of subfolders
#: (2: none), as the search for a uid's leftovers relies on: ext2/3/4, XFS,
#: tmpfs. (Others report 1, "not counted": overlayfs' merged folders,
#: btrfs; the search then lists every folder.)
LINK_COUNTING: Final = frozenset({"ext2", "ext3", "ext4", "xfs", "tmpfs"})


def _file_system_of(path: Path) -> str:
    """The type of the file system ``path`` is on (``/proc/self/mounts``:
    the mount point that is the longest prefix of its real path), or ``""``."""
    real = os.path.realpath(path)
    best, kind = "", ""
    with contextlib.suppress(OSError), open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3:
                continue
            point = fields[1].replace("\\040", " ")
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best):
                best, kind = point, fields[2]
    return kind


def _purge_tree(
    folder: Path,
    uids: frozenset[int],
    dev: int,
    *,
    closed: bool = False,
    counts_links: bool = False,
) -> int:
    """Remove what ``uids`` own below ``folder``. ``closed``: none of them
    could write in ``folder`` (:func:`_writable_by_any` of its status), so
    none of its entries but its folders can be theirs: only those are
    looked at (their type comes from the listing, with no ``stat``); and on
    a file system of :data:`LINK_COUNTING` (``counts_links``), a closed
    subfolder whose link count is 2 has no folder inside: nothing of theirs
    can be in it, and it is not listed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if closed and not entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_dev != dev:
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if st.st_uid in uids:
            if is_dir:
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            removed += 1
        elif is_dir and _enterable_by_any(st, uids):
            shut = not _writable_by_any(st, uids)
            if shut and counts_links and st.st_nlink == 2:
                continue
            removed += _purge_tree(
                Path(entry.path), uids, dev, closed=shut, counts_links=counts_links
            )
    return removed


def _enterable_by_any(st: os.stat_result, uids: frozenset[int]) -> bool:
    """Whether a bot with one of the uids ``uids`` could have entered a
    folder (``x`` for others, or for its group when that is a bot's group):
    no file of these uids can be below a folder none could enter, so the
    search skips it."""
    if st.st_mode & 0o001:
        return True
    gid = st.st_gid
    bot_group = gid in uids or DEFAULT_GID_BASE <= gid < DEFAULT_GID_BASE + UID_POOL_SIZE
    return bool(bot_group and st.st_mode & 0o010)


def _writable_by_any(st: os.stat_result, uids: frozenset[int]) -> bool:
    """Whether a bot with one of the uids ``uids`` could have made an entry
    in a folder: it is not root's, or it is writable by others, or by its
    group when that is a bot's group (with POSIX ACLs the group bits are
    the ACL's mask, which bounds every named user's and group's entry).
    Making, linking or renaming a file into a folder needs write access to
    it, and only root could have changed the mode or owner of a folder of
    root's, so the non-folder entries of a folder for which this is false
    are not the bots' (the search does not ``stat`` them: most of a busy
    ``/tmp``'s entries are such files, in root's checkouts and virtual
    environments)."""
    if st.st_uid != 0 or st.st_mode & 0o002:
        return True
    gid = st.st_gid
    bot_group = gid in uids or DEFAULT_GID_BASE <= gid < DEFAULT_GID_BASE + UID_POOL_SIZE
    return bool(bot_group and st.st_mode & 0o020)


def _libc() -> Any:
    return _LIBC


def _purge_mqueues(uids: frozenset[int]) -> int:
    """Unlink the POSIX message queues owned by ``uids`` (through
    ``/dev/mqueue``, or a private mount of the mqueue file system as root)."""
    folder = Path("/dev/mqueue")
    if os.path.ismount(folder):
        return _unlink_owned(folder, uids)
    if os.geteuid() != 0:
        return 0
    import tempfile

    libc = _libc()
    where = tempfile.mkdtemp(prefix="hearts-arena-mqueue-")
    try:
        if libc.mount(b"mqueue", where.encode(), b"mqueue", 0, None) != 0:
            return 0
        try:
            return _unlink_owned(Path(where), uids)
        finally:
            libc.umount2(where.encode(), 2)  # MNT_DETACH
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(where)


def _unlink_owned(folder: Path, uids: frozenset[int]) -> int:
    removed = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid in uids:
                    os.unlink(entry.path)
                    removed += 1
    return removed


def sysv_objects(uid: int | Collection[int]) -> list[tuple[str, int]]:
    """System V IPC objects owned or created by ``uid`` (one uid or several):
    ``(kind, id)`` with kind ``"shm"``, ``"sem"`` or ``"msg"`` (read from
    ``/proc/sysvipc``)."""
    wanted = frozenset((uid,)) if isinstance(uid, int) else frozenset(uid)
    found = []
    for kind in ("shm", "sem", "msg"):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        columns = [header.index(c) for c in ("uid", "cuid") if c in header]
        for line in lines[1:]:
            fields = line.split()
            if any(int(fields[c]) in wanted for c in columns):
                found.append((kind, int(fields[1])))
    return found


def _purge_sysv(uids: frozenset[int]) -> int:
    objects = sysv_objects(uids)
    if not objects:
        return 0
    libc = _libc()
    removed = 0
    for kind, ident in objects:
        control = {"shm": libc.shmctl, "sem": libc.semctl, "msg": libc.msgctl}[kind]
        # IPC_RMID is 0; semctl takes the semaphore number as its second argument.
        result = control(ident, 0, 0, None) if kind == "sem" else control(ident, 0, None)
        if result == 0:
            removed += 1
    return removed


def _status(pid: str) -> bytes:
    """The start of ``/proc/PID/status`` (its first 4 KiB: past the ``Uid``
    line), ``b""`` if the process is gone. One ``read`` of a raw descriptor:
    a buffered file object costs some 15% more CPU per process."""
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _uid_has_processes(uid: int) -> bool:
    """Whether any process, zombies included, has real uid ``uid``."""
    needle = b"Uid:\t%d\t" % uid
    return any(pid.isdigit() and needle in _status(pid) for pid in os.listdir("/proc"))


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


def python_for(uid: int) -> tuple[str, str | None]:
    """A Python interpreter that user ``uid`` can run, for ``.py`` bots.

    The arena's own interpreter when that user can reach it; otherwise (an
    interpreter under a private folder such as ``/root``) the first
    ``python3.X`` of the same version on ``PATH`` or in ``/usr/bin`` that it
    can run, with the folder holding the ``arena`` package to put on
    ``PYTHONPATH`` (so bots that import the rules engine still can).

    The answer is remembered for the life of this process under the
    candidates' status (owner, mode, modification time) and that of every folder on
    their real paths (owner, mode), so a run played in a process that already asked
    (tests, a competition's runner) starts no interpreter; any of them
    changed, it asks again. (A stale answer could only make bots fail to
    start; it never changes how they are confined.)

    Returns:
        ``(interpreter, pythonpath or None)``.

    Raises:
        IsolationError: no interpreter of the arena's Python version is
            runnable by an unprivileged user.
    """
    import sys

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable]
    for name in (f"python{version}", "python3"):
        for folder in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin", "/usr/bin"]:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and path not in candidates:
                candidates.append(path)
    key = _python_key(candidates)
    found = _PYTHONS.get(key) if key is not None else None
    if found is None:
        found = _find_python(candidates, uid, version)
        if key is not None:
            _PYTHONS[key] = found
    return found


#: :func:`python_for`'s answers in this process, by :func:`_python_key`.
_PYTHONS: dict[tuple[object, ...], tuple[str, str | None]] = {}


def _python_key(candidates: list[str]) -> tuple[object, ...] | None:
    """The interpreters ``candidates`` with the status (device, inode, owner,
    group, mode; a file's modification time too) of each one's real path and of
    every folder on it; ``None`` when one cannot be read."""
    key: list[object] = []
    for path in candidates:
        key.append(path)
        for at in {*_folders_on(os.path.abspath(path)), *_folders_on(os.path.realpath(path))}:
            try:
                st = os.lstat(at)
            except OSError:
                return None
            # A folder's change time moves with every name made in it (/tmp's
            # all the time): its owner and mode are what decide who may pass.
            # A file's modification time, not its change time: the root view
            # of every arena (arena.sandbox.rootview) hard-links the system
            # interpreter, and each link made or removed moves its change time.
            changed = 0 if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns
            key.append((at, st.st_dev, st.st_ino, st.st_uid, st.st_gid, st.st_mode, changed))
    return tuple(sorted(key, key=str))


def _folders_on(path: str) -> list[str]:
    """``path`` and every folder above it, up to ``/``."""
    out = [path]
    while path != "/":
        path = os.path.dirname(path)
        out.append(path)
    return out


def _find_python(candidates: list[str], uid: int, version: str) -> tuple[str, str | None]:
    """:func:`python_for` without its memory: start each candidate as
    ``uid`` until one prints ``version``."""
    import subprocess
    import sys

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
            if exe == sys.executable:
                return exe, None
            from arena.sandbox.seal import bot_package_parent

            return exe, str(bot_package_parent())
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
