"""The core token: at most as many bots think at once as the machine has cores.

A bot's clock (``time_ms``, wall time from the request: PROTOCOL.md) starts
only once it holds a token, and it is frozen again (its control group,
:mod:`arena.sandbox.cgroups`) when it answers, so what it is charged is its own
thinking, whatever ``--jobs`` is and whatever the other bots do.

Token ``i`` is an exclusive ``flock`` on the lock file
``/tmp/hearts-arena-cores/<i>`` (owner-only; ``/tmp/hearts-arena-cores-<uid>``
for an arena not run by root: it could not open root's files), so the tokens
are shared by every worker process of ``--jobs`` and by every arena of the
same user on the machine, and a token held by a process that dies is given
back by the kernel. Tokens are polled
from Trio without blocking a thread; inside one process, waiters queue in
order (a FIFO ``trio.Lock``). Token ``i`` stands for the ``i``-th CPU this
process may run on, so the bot holding it can be pinned there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import weakref
from pathlib import Path
from typing import Any, Final

import trio

_WAITERS: trio.lowlevel.RunVar[dict[int, _Waiters]] = trio.lowlevel.RunVar("core_gate_waiters")
#: Longest pause between two tries for a token held by another process, in seconds.
MAX_POLL: float = 0.002
#: Folder of the tokens' lock files (of arenas run by root; see :func:`default_token_dir`).
TOKEN_DIR: Final = Path("/tmp/hearts-arena-cores")
#: The environment variable naming another folder for the tokens (:func:`default_token_dir`).
TOKEN_DIR_VARIABLE: Final = "HEARTS_ARENA_CORE_TOKENS"


def default_token_dir() -> Path:
    """The folder of this user's core tokens: :data:`TOKEN_DIR` for root,
    ``/tmp/hearts-arena-cores-<uid>`` for any other user. The files are
    owner-only (a bot running as another user must not hold a token and
    starve every arena), so an arena of a normal user could not open those
    of an arena run by root before it on the machine: every bot it started
    failed with "Permission denied".

    ``HEARTS_ARENA_CORE_TOKENS`` (:data:`TOKEN_DIR_VARIABLE`, an absolute
    path) names another folder: arenas that share a folder share the cores,
    so give an arena a folder of its own only when it runs on CPUs of its own
    (a cpuset) or when the bots' clocks need not be fair between arenas (the
    test suite: each test process has its own, so a bot that sleeps or hangs
    in one test does not hold up the bots of every other test).

    Raises:
        ValueError: the variable is set to a relative path."""
    given = os.environ.get(TOKEN_DIR_VARIABLE, "")
    if given:
        folder = Path(given)
        if not folder.is_absolute():
            raise ValueError(f"{TOKEN_DIR_VARIABLE} must be an absolute path, not {given!r}")
        return folder
    uid = os.geteuid()
    return TOKEN_DIR if uid == 0 else TOKEN_DIR.with_name(f"{TOKEN_DIR.name}-{uid}")


class _Waiters:
    """The tasks of one Trio run waiting for one gate's tokens: ``lock`` queues
    them in order (FIFO); the first one polls the lock files, and ``lot`` wakes
    it at once when a task of this process gives a token back (no wait for
    its next poll: the pass's four requests share one core token in turn)."""

    __slots__ = ("lock", "lot")

    def __init__(self) -> None:
        self.lock = trio.Lock()
        self.lot = trio.lowlevel.ParkingLot()


def machine_cpus() -> list[int]:
    """The CPU numbers this process may run on, in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def machine_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    return max(1, len(machine_cpus()))


def _close_files(fds: list[int], pid: int) -> None:
    """Close a dropped gate's lock files (in the process that opened them),
    which gives back any token it still held."""
    if os.getpid() == pid:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


class CoreGate:
    """``cores`` tokens shared by every process of the machine (see the module
    docstring). Picklable: a worker process opens the lock files itself.

    Args:
        cores: tokens (0: :func:`machine_cores`).
        ponder: bots may think on others' time (they are not frozen off move).
        token_dir: folder of the lock files (default :func:`default_token_dir`;
            tests use their own).
    """

    def __init__(
        self, cores: int = 0, ponder: bool = False, token_dir: Path | str | None = None
    ) -> None:
        if cores < 0:
            raise ValueError("cores must be at least 0")
        self.cores = cores or machine_cores()
        self.ponder = ponder
        self.token_dir = Path(token_dir) if token_dir is not None else default_token_dir()
        self._fds: list[int] | None = None  # opened in the process that uses them
        self._pid = 0
        self._mine: set[int] = set()  # tokens held by this process
        self._next = 0
        self._cpus: list[int] | None = None  # machine_cpus() in process _cpus_pid
        self._cpus_pid = 0

    @property
    def held(self) -> int:
        """How many tokens this process holds."""
        return len(self._mine)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CoreGate, (self.cores, self.ponder, str(self.token_dir)))

    def __repr__(self) -> str:
        return f"<CoreGate cores={self.cores} ponder={self.ponder}>"

    def cpu_of(self, token: int) -> int | None:
        """The CPU token ``token`` stands for, or ``None`` when there are more
        tokens than CPUs (then bots are not pinned). The CPUs are read once per
        process (asked at every decision; the arena never changes its affinity)."""
        if self._cpus is None or self._cpus_pid != os.getpid():
            self._cpus, self._cpus_pid = machine_cpus(), os.getpid()
        cpus = self._cpus
        return cpus[token] if self.cores <= len(cpus) else None

    def check(self) -> None:
        """Make the token folder (if needed) and open its lock files, so that a
        folder that cannot serve is found before any bot starts.

        Raises:
            OSError: the folder cannot be made or its files opened;
                ``PermissionError`` when it is not an owner-only folder of
                this user (another user made it first: it could then hold
                the tokens and starve every arena of this user).
        """
        self._files()

    def _files(self) -> list[int]:
        if self._fds is None or self._pid != os.getpid():
            with contextlib.suppress(FileExistsError):
                self.token_dir.mkdir(mode=0o700)
            st = os.lstat(self.token_dir)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
                raise PermissionError(
                    f"the core token folder {self.token_dir} is not an owner-only folder of "
                    f"this user (uid {st.st_uid}, mode {stat.filemode(st.st_mode)}): another "
                    "user could hold the tokens; remove it and run again"
                )
            fds = []
            for i in range(self.cores):
                path = self.token_dir / str(i)
                fds.append(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
            self._fds, self._pid = fds, os.getpid()
            # Closed when the gate is dropped: a long-lived process (a Dask
            # worker unpickles a gate per table, tests run many arenas) would
            # otherwise keep two descriptors per gate until it ran out.
            weakref.finalize(self, _close_files, fds, self._pid)
        return self._fds

    def _waiters(self) -> _Waiters:
        try:
            table = _WAITERS.get()
        except LookupError:
            table = {}
            _WAITERS.set(table)
        waiters = table.get(id(self))
        if waiters is None:
            waiters = table[id(self)] = _Waiters()
        return waiters

    def _try(self, prefer: int | None = None) -> int | None:
        fds = self._files()
        n = len(fds)
        start = prefer if prefer is not None and 0 <= prefer < n else self._next
        for i in range(n):
            token = (start + i) % n
            if token in self._mine:  # a lock of this process's own: flock would grant it again
                continue
            try:
                fcntl.flock(fds[token], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self._next = (token + 1) % n
            self._mine.add(token)
            return token
        return None

    async def acquire(self, prefer: int | None = None) -> int:
        """Wait for a token (first come, first served in this process) and
        return it; ``prefer`` (the token a bot had last) first, if free, so
        that it keeps its core. Cancellation leaves no token taken.

        Raises:
            OSError: the lock files cannot be made (``token_dir`` unwritable).
        """
        waiters = self._waiters()
        if not waiters.lock.locked():
            token = self._try(prefer)
            if token is not None:
                return token
        async with waiters.lock:
            delay = 0.0001
            while (token := self._try(prefer)) is None:
                # Woken by a release in this process, else polls (other processes').
                with trio.move_on_after(delay):
                    await waiters.lot.park()
                delay = min(delay * 2, MAX_POLL)
            return token

    def release(self, token: int) -> None:
        """Give token ``token`` back, waking this process's first waiter, if any."""
        self._mine.discard(token)
        fcntl.flock(self._files()[token], fcntl.LOCK_UN)
        try:
            waiters = _WAITERS.get().get(id(self))
        except (LookupError, RuntimeError):  # no waiter yet, or not in a Trio run
            return
        if waiters is not None and waiters.lot:
            waiters.lot.unpark_all()
