"""What a bot's process does between ``fork`` and ``exec``, as plain data:
a :class:`ChildSetup` (the control group's ``cgroup.procs`` files to join,
the resource limits, the uid and gid to drop to, the keyrings to clear, the
descriptor moves of a sealed start) that :meth:`ChildSetup.preexec` turns
into the function the child runs. The arena's spawn server
(:mod:`arena.sandbox.spawnserver`) receives it pickled and runs it in its
own children; the arena's in-process spawner thread (the fallback,
:mod:`arena.sandbox.spawn`) runs the same code.

Imports only the standard library's small modules (the spawn server loads
this and little else).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import resource
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

#: Exit code of a bot process whose set-up (limits, control group, uid)
#: failed between fork and exec; its stderr says why.
SETUP_FAILED: Final = 125

#: The C library (the process's own symbols: no ``find_library``, which runs
#: ``ldconfig``, a cost at each spawn server's start).
_LIBC: Final = ctypes.CDLL(None, use_errno=True)
#: The ``keyctl`` system call's number (glibc has no wrapper), where known.
_KEYCTL: Final = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
#: ``keyctl`` operation KEYCTL_CLEAR, and the special ids of the calling
#: user's keyrings: KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING.
_KEYCTL_CLEAR: Final = 7
_USER_KEYRINGS: Final = (-4, -5)
#: ``prctl`` option PR_SET_PDEATHSIG.
_PR_SET_PDEATHSIG: Final = 1


def new_session_keyring() -> None:
    """Give the process a fresh, empty session keyring (``keyctl``
    ``KEYCTL_JOIN_SESSION_KEYRING``): otherwise every bot inherits the arena's,
    and bots of different users could pass keys through it. Failure (no
    keyring support) is ignored: there is then nothing to share."""
    if _KEYCTL is not None:
        _LIBC.syscall(_KEYCTL, 1, None)


def clear_user_keyrings() -> None:
    """Empty the calling uid's user and user-session keyrings (``keyctl``
    ``KEYCTL_CLEAR``). Run in a bot's child after it has dropped to its uid,
    before ``exec``: these keyrings belong to the uid, not to a process, and
    outlive all its processes, so without this a bot could leave keys (a
    hand, a history) for the uid's next holder. Failure (no keyring
    support) is ignored: there is then nothing to find."""
    if _KEYCTL is not None:
        for keyring in _USER_KEYRINGS:
            _LIBC.syscall(_KEYCTL, _KEYCTL_CLEAR, keyring)


def die_with_parent(sig: int) -> None:
    """Ask the kernel for ``sig`` when the thread that started this process
    ends (``prctl(PR_SET_PDEATHSIG)``).

    Raises:
        OSError: the request failed.
    """
    if _LIBC.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def join_groups(procs_files: tuple[str, ...]) -> None:
    """Move the calling process into the control groups whose
    ``cgroup.procs`` files are ``procs_files`` (a bot's
    :attr:`~arena.sandbox.cgroups.BotGroup.procs_files`).

    Raises:
        OSError: a file could not be written (the group is gone).
    """
    me = str(os.getpid()).encode()
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, me)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class Rlimits:
    """A bot's resource limits as the child sets them before ``exec``
    (made by :func:`arena.sandbox.isolation.make_preexec`): a fresh session
    keyring first, then each ``setrlimit``. Callable (the child's function).

    Attributes:
        pairs: ``(resource, soft, hard)`` for each ``setrlimit`` (bytes,
            seconds or counts, as the resource counts).
    """

    pairs: tuple[tuple[int, int, int], ...]

    def __call__(self) -> None:
        new_session_keyring()
        for which, soft, hard in self.pairs:
            resource.setrlimit(which, (soft, hard))


@dataclass(frozen=True, slots=True)
class ChildSetup:
    """What one bot's child does before ``exec``, as picklable data.

    Attributes:
        procs_files: the ``cgroup.procs`` files of its control group, joined
            first; empty without a group.
        rlimits: its resource limits (an :class:`Rlimits` to be sent to the
            spawn server; any callable in the arena's own spawner), or ``None``.
        uid: the uid to drop to after joining (with a group), or ``None``.
        gid: the gid to drop to after joining (with a group), or ``None``.
        clear_keyrings: empty the uid's keyrings last, as the bot's uid.
        sealed_fds: for a sealed start, the descriptors bubblewrap is given
            (stdin pipe, stdout pipe, seccomp program:
            :data:`~arena.sandbox.seal.STDIN_FD`, ``STDOUT_FD``, ``SECCOMP_FD``),
            or ``None``.
    """

    procs_files: tuple[str, ...] = ()
    rlimits: Callable[[], None] | None = None
    uid: int | None = None
    gid: int | None = None
    clear_keyrings: bool = False
    sealed_fds: tuple[int, int, int] | None = None

    def preexec(self, program: int | None) -> Callable[[], None] | None:
        """The function the child runs between ``fork`` and ``exec`` (the
        caller's descriptors are still open then; ``subprocess`` closes them
        after it), or ``None`` when there is nothing to do. ``program`` is
        the seccomp program's descriptor in the forking process, or ``None``.

        In order: the sealed descriptor moves (stdin and stdout pipes from 0
        and 1 to their numbers, the program to its own, ``/dev/null`` to 0
        and 1, which bubblewrap keeps); joining the control group (before
        ``RLIMIT_NOFILE`` is lowered, and before the uid is the bot's, which
        could no longer write the group's files); the resource limits; the
        drop to the bot's gid and uid (with a group: without one,
        ``subprocess`` dropped them before this); last, as the bot's uid, its
        user keyrings emptied. A failure of the set-up is written to the
        bot's stderr (fd 2, its pipe by now) and the child exits with
        :data:`SETUP_FAILED`: a bot that could not start."""
        setup = self._setup() if self.procs_files or self.rlimits or self.clear_keyrings else None
        fds = self.sealed_fds
        if fds is None:
            return setup

        def sealed() -> None:
            import fcntl

            stdin_fd, stdout_fd, seccomp_fd = fds
            moved = fcntl.fcntl(program, fcntl.F_DUPFD, 10) if program is not None else None
            os.dup2(0, stdin_fd)
            os.dup2(1, stdout_fd)
            if moved is not None:
                os.dup2(moved, seccomp_fd)
                os.close(moved)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            if null > seccomp_fd:
                os.close(null)
            if setup is not None:
                setup()

        return sealed

    def _setup(self) -> Callable[[], None]:
        procs_files, limits = self.procs_files, self.rlimits
        uid, gid, clear = self.uid, self.gid, self.clear_keyrings

        def setup() -> None:
            try:
                # Join first: the arena's descriptors are still open here (they
                # are closed after this function), so once RLIMIT_NOFILE is the
                # bot's, opening a group's cgroup.procs could fail with EMFILE.
                if procs_files:
                    join_groups(procs_files)
                if limits is not None:
                    limits()
                if gid is not None:
                    os.setgroups([])
                    os.setresgid(gid, gid, gid)
                if uid is not None:
                    os.setresuid(uid, uid, uid)
                if clear:
                    clear_user_keyrings()  # never the arena's own: only as the bot's uid
            except BaseException as exc:
                # Say why on the bot's stderr and exit: the arena records a bot
                # that could not start, and the tournament goes on.
                with contextlib.suppress(OSError):
                    os.write(2, f"arena: cannot set up the bot's process: {exc!r}\n".encode())
                os._exit(SETUP_FAILED)

        return setup


@dataclass(frozen=True, slots=True)
class StartRequest:
    """How to start one bot's process, as picklable data (what the arena
    sends the spawn server, and what its own spawner thread runs too).

    Attributes:
        argv: the program and its arguments.
        cwd: its working directory.
        env: its whole environment.
        setup: what its child does before ``exec``.
        user: uid ``subprocess`` drops to before the set-up (without a
            control group; with one, the set-up drops it), or ``None``.
        group: gid, likewise, or ``None``.
        pass_fds: descriptors kept open across ``exec`` (a sealed start's).
    """

    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    setup: ChildSetup
    user: int | None = None
    group: int | None = None
    pass_fds: tuple[int, ...] = ()

    def popen(
        self, stdin: int, stdout: int, stderr: int, program: int | None
    ) -> subprocess.Popen[bytes]:
        """Start the process in its own session with the three pipe ends
        ``stdin``, ``stdout``, ``stderr`` as 0, 1 and 2 (and ``program``, the
        seccomp program's descriptor, moved to its number), every other
        descriptor closed.

        Raises:
            OSError: the program could not be started (missing, not
                executable, bad working directory).
        """
        return subprocess.Popen(
            list(self.argv),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
            preexec_fn=self.setup.preexec(program),
            user=self.user,
            group=self.group,
            extra_groups=[] if self.group is not None else None,
            close_fds=True,
            pass_fds=self.pass_fds,
        )
