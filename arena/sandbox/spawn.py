"""Starting a confined process and ending it: the sandbox's interface to
the seat layer (:mod:`arena.seats.process` speaks the protocol over the pipes
of a :class:`ConfinedProcess`).

A :class:`LaunchSpec` (made by :class:`arena.sandbox.launcher.Launcher`) says
how to start one process: argv (bubblewrap's when sealed), folder,
environment, uid lease, resource limits, control group and core gate.
:meth:`ConfinedProcess.start` starts it with three pipes, the child joining
its control group and dropping to its uid before ``exec`` (what it does
then is plain data: :class:`~arena.sandbox.childsetup.ChildSetup`).

Bots are started by the arena process's **spawn server**
(:mod:`arena.sandbox.spawnserver`, :class:`SpawnServer`): a small process
(``python -S -m arena.sandbox.spawnserver``), one per arena process, started
at its first bot start, that forks itself for each bot. Forking the arena
(hundreds of MiB in a test worker) copied its page tables at every start and
its child took copy-on-write faults until ``exec``: with a ``preexec_fn`` or a
uid change, ``subprocess`` cannot use ``vfork``. The arena sends each start
request (a :class:`~arena.sandbox.childsetup.StartRequest`: argv,
environment, folder, the set-up) with the child's pipe ends and the seccomp
program's descriptor (``SCM_RIGHTS``) over a socket pair; the server replies
with the pid and a pidfd, or with the ``OSError`` the caller sees, reports
each exit status (read without reaping: the bot's pid and process group id
stay reserved until :meth:`Child.reap`) and reaps on request. It dies with
the arena (``PR_SET_PDEATHSIG`` on itself, relative to the arena's spawner
thread), and its sealed bots with it (bubblewrap's ``--die-with-parent``,
relative to the server's one thread). If it cannot start or ends (killed,
crashed), that is logged once and bots start from the arena's own spawner
thread, as before the server (``HEARTS_ARENA_SPAWN_SERVER=0`` always does);
the bots it was running then have an unknown exit status, which their
faults say. A forked child of the arena starts a server of its own.

The process then holds its bounds: a core token while on
move (:meth:`~ConfinedProcess.acquire_core`, :meth:`~ConfinedProcess.resume`),
frozen off move (:meth:`~ConfinedProcess.pause`), its CPU clock
(:meth:`~ConfinedProcess.cpu_ns`) and its memory kills
(:attr:`~ConfinedProcess.oom_kills`); :meth:`~ConfinedProcess.kill_tree` ends
it and everything it started (process group, control group, strays by uid or
environment token) and reaps it; :meth:`LaunchSpec.release` and
:func:`release_specs` give back its uid, group and folder.

Nothing here speaks the protocol or imports anything of the package above
:mod:`arena.sandbox`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import logging
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

from arena.sandbox.cgroups import BotGroup, MemoryHeld
from arena.sandbox.childsetup import SETUP_FAILED, ChildSetup, Rlimits, StartRequest
from arena.sandbox.cores import CoreGate
from arena.sandbox.isolation import (
    Limits,
    UidLease,
    kill_all,
    process_tree,
    release_leases,
    renew_cpu_limit,
)

__all__ = [
    "SETUP_FAILED",
    "Child",
    "ConfinedProcess",
    "LaunchSpec",
    "OomWatch",
    "release_specs",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """How to start one bot process.

    Attributes:
        argv: the program and its arguments (never run through a shell).
        cwd: its working directory.
        env: its whole environment (nothing else is inherited).
        preexec: called in the child before exec (resource limits), or ``None``.
        user: uid to run as, or ``None`` to keep the arena's.
        group: gid to run as, or ``None``.
        label: how log lines and faults name it (the entrant's name).
        tmpdir: the process's private temporary folder (its HOME and TMPDIR),
            removed by :meth:`release`, or ``None``.
        lease: the uid reserved for this process (released on close), or ``None``.
        token: ``NAME=value`` in the process's environment, used to find its
            strays when it has no uid of its own.
        limits: the resource limits it runs under (for fault details).
        seccomp: the BPF program of a sealed process, given to bubblewrap on a
            fresh descriptor that replaces :data:`~arena.sandbox.seal.SECCOMP_FD_PLACEHOLDER`
            in ``argv``; ``None`` for none.
        sealed: ``argv`` runs the bot in bubblewrap (:func:`arena.sandbox.seal.sealed_argv`):
            its pipes are passed as descriptors, and an exit status over 128
            is bubblewrap's report of the bot's death by signal (status - 128).
        cgroup: the bot's control group (joined before ``exec`` and before
            the uid is dropped; killed and removed on close), or ``None``.
        gate: the core token its requests wait for (:mod:`arena.sandbox.cores`), or ``None``.
        on_release: called once what the spec reserved is given back (the
            launcher's hold on the entrant's private copy of its folder:
            :meth:`arena.sandbox.launcher.Launcher.release`), or ``None``.
    """

    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    label: str
    preexec: Callable[[], None] | None = None
    user: int | None = None
    group: int | None = None
    tmpdir: Path | None = None
    lease: UidLease | None = None
    token: str | None = None
    limits: Limits | None = None
    seccomp: bytes | None = None
    sealed: bool = False
    cgroup: BotGroup | None = None
    gate: CoreGate | None = None
    on_release: Callable[[], None] | None = field(default=None, compare=False, repr=False)

    def release(self) -> None:
        """Give back what the spec reserved: its control group (everything
        in it killed), its uid lease and its folder."""
        release_specs((self,))


def release_specs(specs: Sequence[LaunchSpec]) -> None:
    """Give back what several specs reserved (:meth:`LaunchSpec.release` of
    each): control groups first (everything in them killed), then the uid
    leases together (:func:`~arena.sandbox.isolation.release_leases`: one
    search of the world-writable folders for all their uids instead of one
    per uid), then the folders, then each spec's :attr:`~LaunchSpec.on_release`
    (even when a step before raised). Blocking (run it in a thread)."""
    try:
        for spec in specs:
            if spec.cgroup is not None:
                spec.cgroup.kill()
                spec.cgroup.remove()
        release_leases(spec.lease for spec in specs if spec.lease is not None)
        for spec in specs:
            if spec.tmpdir is not None:
                shutil.rmtree(spec.tmpdir, ignore_errors=True)
    finally:
        for spec in specs:
            if spec.on_release is not None:
                spec.on_release()


def readable_now(fd: int) -> bool:
    """Whether descriptor ``fd`` is readable at once (a pidfd: its process
    has exited). By ``poll``, not ``select``: an arena holding many
    descriptors has numbers of 1024 and more, which ``select`` refuses
    (ValueError)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class ConfinedProcess:
    """A started confined process: its pid, the arena's ends of its pipes
    (:attr:`child`), and its bounds. Create with :meth:`start`; run
    :meth:`watch_exit` and :meth:`watch_memory` among the caller's tasks; end
    with :meth:`kill_tree`, then :meth:`finish`.

    Attributes:
        spec: how it was started.
        child: the process and the arena's ends of its pipes.
        pid: its pid (the leader of its own session and process group).
        exited: set once the process has exited (not yet reaped).
        oom_kills: processes the kernel killed for its group's memory bound,
            as last read (see :meth:`read_oom_kills`).
    """

    def __init__(
        self, spec: LaunchSpec, child: Child, pidfd: int, oom: OomWatch | None, token: int | None
    ) -> None:
        self.spec = spec
        self.child = child
        self.pid: int = child.pid
        self._pidfd = pidfd
        self._oom = oom
        self._token = token  # the core token held (see arena.sandbox.cores)
        self._last_token = token  # ... and the last one (its core, if free)
        self.exited = trio.Event()
        self.oom_kills = 0

    @classmethod
    async def start(cls, spec: LaunchSpec) -> ConfinedProcess:
        """Start ``spec``'s program.

        The process is forked by the spawn server (see the module's
        docstring), or, without one, from the arena's spawner thread; either
        lives as long as the arena (the server is started from that thread):
        bubblewrap's ``--die-with-parent`` (a parent-death signal) fires when
        the *thread* that forked it exits, so a bot forked from one of Trio's
        worker threads (retired after 10 s idle) would be killed 10 s later.

        With a core gate, waits for a core first: the new process starts
        holding it (its first request keeps it, so start-up is charged to
        that request's clock and to no other bot's). With a control group,
        the child joins it before ``exec`` and before dropping to the bot's
        uid; its out-of-memory events are watched from before the start.

        Raises:
            OSError: the program could not be started (missing, not
                executable, bad working directory); the spec's group, uid and
                folder are then released.
        """
        gate = spec.gate
        token: int | None = None
        try:
            if gate is not None:
                token = await gate.acquire()
                if spec.cgroup is not None:
                    spec.cgroup.pin(gate.cpu_of(token))
            # Watched from before the start: a bot can run out at once.
            oom = OomWatch.start(spec.cgroup) if spec.cgroup is not None else None
            try:
                child = await _spawn(spec)
            except BaseException:
                if oom is not None:
                    oom.stop()
                if gate is not None and token is not None:
                    gate.release(token)
                raise
        except BaseException:
            spec.release()  # never started: nothing will close it
            raise
        return cls(spec, child, child.pidfd, oom, token)

    def __repr__(self) -> str:
        return f"<ConfinedProcess {self.spec.label!r} pid={self.pid}>"

    # -- watching ---------------------------------------------------------

    async def watch_exit(self) -> None:
        """Return once the process has exited (its pidfd) and its exit status
        is known (the spawn server's report, :meth:`Child.wait_status`),
        setting :attr:`exited`."""
        await trio.lowlevel.wait_readable(self._pidfd)
        await self.child.wait_status()
        self.exited.set()

    async def watch_memory(self) -> None:
        """Read the group at each out-of-memory event until cancelled
        (:class:`OomWatch`); returns at once without a group's events."""
        if self._oom is not None:
            await self._oom.run()

    async def wait_exited(self) -> None:
        """Wait until the process has exited (not reaped). The exit watch runs
        among the caller's tasks and may be cancelled with them (SIGTERM to a
        worker, Ctrl-C), so the exit is also looked for directly, every 50 ms:
        waiting for the watch alone hung a shielded close for good."""
        while not self.exited.is_set():
            with trio.move_on_after(0.05):
                await self.exited.wait()
            if not self.exited.is_set() and self.exit_status() != "running":
                self.exited.set()

    @property
    def oom_held(self) -> MemoryHeld | None:
        """What the memory group held at its last out-of-memory event, or ``None``."""
        return self._oom.held if self._oom is not None else None

    def read_oom_kills(self) -> int:
        """Processes the kernel killed for the group's memory bound so far
        (read from the group while it exists; 0 without one)."""
        group = self.spec.cgroup
        if group is not None:
            self.oom_kills = max(self.oom_kills, group.oom_kills())
        return self.oom_kills

    def exit_status(self, stderr: str = "") -> str:
        """How the process ended, read without reaping it: ``"running"``,
        ``"exit code N"`` or ``"killed by SIGNAME"``, with the reason of a
        kill where known (over its CPU or file size limit; out of memory, and
        what its group held). ``stderr`` is what it wrote there (for the
        signs of running out of address space without a memory group)."""
        rc = self.child.status()
        if rc is None:
            lost = self.child.lost
            if lost is None or not self._has_exited():
                return "running"
            return f"exit status unknown: the arena's spawn server that started it is gone ({lost})"
        if rc >= 0:
            if self.spec.sealed and rc > 128:  # bubblewrap: killed by a signal
                text = _describe_returncode(128 - rc, self.spec.limits)
                if rc - 128 == signal.SIGKILL:
                    text += self._memory_note(stderr)
                return text
            return f"exit code {rc}{self._memory_note(stderr)}"
        text = _describe_returncode(rc, self.spec.limits)
        if -rc == signal.SIGKILL:
            text += self._memory_note(stderr)
        return text

    def _has_exited(self) -> bool:
        """Whether the process has exited (its pidfd is readable; once the
        pidfd is closed, after :meth:`finish`: yes)."""
        if self._pidfd < 0:
            return True
        return readable_now(self._pidfd)

    def _memory_note(self, stderr: str) -> str:
        limits = self.spec.limits
        if limits is None or not limits.memory_mb:
            return ""
        group = self.spec.cgroup
        if group is not None and group.binds_memory:
            kills = self.read_oom_kills()
            if kills:
                held = self.oom_held
                when = "when it ran out"
                if held is None:  # no event here (cgroup2): what is left now
                    held, when = group.memory_held(), "after the kill"
                what = ""
                if held is not None:
                    what = f"; it held {held.describe(limits.memory_mb << 20)} {when}"
                return (
                    f"; out of memory: its limit is {limits.memory_mb} MiB for the bot as a "
                    f"whole, its /tmp and /dev/shm included ({kills} of its processes "
                    f"killed){what}"
                )
        if any(sign in stderr for sign in _OUT_OF_MEMORY_SIGNS):
            return f"; out of memory: its limit is {limits.memory_mb} MiB of address space"
        return ""

    # -- on move and off move: the core token, the freezer, the CPU clock --

    async def acquire_core(self) -> None:
        """Wait for a core token (unless one is held; the last one's core first)."""
        gate = self.spec.gate
        if gate is not None and self._token is None:
            self._token = self._last_token = await gate.acquire(self._last_token)

    def resume(self) -> None:
        """Let the process run on its core: pinned to the token's CPU, at
        thinking priority when pondering is allowed, thawed."""
        group = self.spec.cgroup
        gate = self.spec.gate
        if group is not None:
            if gate is not None and self._token is not None:
                group.pin(gate.cpu_of(self._token))  # its own core
            if gate is not None and gate.ponder:
                group.set_priority(True)
            if group.frozen:
                group.thaw()

    def pause(self, *, alive: bool = True) -> None:
        """Off move: freeze the process (or, pondering, lower it to idle
        priority) unless it is no longer ``alive``, and give the core token back."""
        group = self.spec.cgroup
        gate = self.spec.gate
        if group is not None and alive:
            if gate is not None and gate.ponder:
                group.set_priority(False)  # thinks on others' time, on idle CPU only
            else:
                group.freeze()
        if gate is not None and self._token is not None:
            gate.release(self._token)
            self._token = None

    def cpu_ns(self) -> int | None:
        """CPU nanoseconds its control group used so far, or ``None`` without one."""
        group = self.spec.cgroup
        return group.cpu_ns() if group is not None else None

    def runnable(self) -> bool | None:
        """Whether any of its threads runs or waits for a CPU now, or ``None``
        where that cannot be told (no group)."""
        group = self.spec.cgroup
        return group.runnable() if group is not None else None

    def thaw(self) -> None:
        """Thaw its group (it stays so until the next :meth:`pause`)."""
        group = self.spec.cgroup
        if group is not None:
            group.thaw()

    def freezer_state(self) -> str | None:
        """The group's freezer state (``"frozen"``, ``"freezing"``,
        ``"thawed"``), or ``None`` without a group or freezer."""
        group = self.spec.cgroup
        return group.freezer_state() if group is not None else None

    def renew_cpu_limit(self) -> None:
        """Give the process and its children a fresh CPU allowance (``RLIMIT_CPU``)."""
        limits = self.spec.limits
        if limits is not None and limits.cpu_seconds:
            renew_cpu_limit(process_tree(self.pid), limits.cpu_seconds)

    # -- the end ----------------------------------------------------------

    def wind_down(self) -> None:
        """Before its last words: on idle CPU only and on no core of its own,
        so that what it does now (a hog's children too) costs no thinking bot
        its core; thawed (a frozen process reads nothing and dies of no
        signal, v1); the core token given back."""
        group = self.spec.cgroup
        if group is not None:
            group.set_priority(False)
            group.pin(None)
            group.thaw()
        if self._token is not None and self.spec.gate is not None:  # pragma: no cover
            self.spec.gate.release(self._token)
            self._token = None

    def signal_group(self, sig: signal.Signals) -> None:
        """Send ``sig`` to its process group (gone or not ours: ignored)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def abandon(self) -> None:
        """SIGKILL its process group and its control group now, without
        waiting (a struck-out bot burns no more CPU); :meth:`kill_tree` still reaps it."""
        self.signal_group(signal.SIGKILL)
        if self.spec.cgroup is not None:
            self.spec.cgroup.kill(timeout=0)

    async def kill_tree(self) -> None:
        """SIGKILL the process group, then everything of the bot's left (its
        control group; without one, every process of its uid or carrying its
        environment token: a grandchild that left the group with ``setsid``),
        wait for the exit and reap. The group is killed before the child is
        reaped, so its id cannot be reused meanwhile. Shielded from cancellation."""
        with trio.CancelScope(shield=True):
            self.signal_group(signal.SIGKILL)
            spec = self.spec
            group = spec.cgroup
            if group is not None:  # everything the bot started, whatever its session or uid
                self.read_oom_kills()
                await trio.to_thread.run_sync(group.kill)
            if group is not None and (spec.lease is not None or spec.sealed):
                # Nothing of the bot's is outside its group (its uid cannot write
                # the group's files): no scan of /proc, which costs the bots on
                # move their CPU.
                pass
            elif spec.lease is not None:
                uid = spec.lease.uid
                await trio.to_thread.run_sync(lambda: kill_all(uid=uid))
            elif spec.token is not None:
                token = spec.token
                await trio.to_thread.run_sync(lambda: kill_all(env=token))
            await self.wait_exited()
            self.child.reap()

    async def finish(self, *, release: bool = True) -> None:
        """After :meth:`kill_tree` (and once the caller's watches are
        cancelled): close the pidfd and, unless ``release`` is false (the
        caller then releases the spec, as :func:`release_specs` does for
        several), give back the spec's uid, group and folder. Shielded."""
        with trio.CancelScope(shield=True):
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
            if release:
                await trio.to_thread.run_sync(self.spec.release)


class OomWatch:
    """Reads what a bot's memory group holds each time it reaches its bound
    (:meth:`BotGroup.oom_events`: the kernel signals before it kills), for
    the fault's detail. Registered before the bot starts (a bot can run out
    at once); :meth:`run` waits for the events among the bot's I/O tasks.
    Best effort: the read comes when the event loop next runs, and by then the
    killed process's memory, and its sandbox's tmpfs (freed as the sandbox
    ends, milliseconds after its bot), may be partly freed
    (:meth:`MemoryHeld.describe` then says how much was not found).

    Attributes:
        held: what the group held at the last event, or ``None``.
    """

    def __init__(self, group: BotGroup, efd: int) -> None:
        self.held: MemoryHeld | None = None
        self._group = group
        self._efd = efd

    @classmethod
    def start(cls, group: BotGroup) -> OomWatch | None:
        """Register for ``group``'s events, or ``None`` where they cannot be had."""
        efd = group.oom_events() if group.binds_memory else None
        return None if efd is None else cls(group, efd)

    async def run(self) -> None:
        """Read the group at each event until cancelled; then close the descriptor."""
        try:
            while True:
                await trio.lowlevel.wait_readable(self._efd)
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(self._efd)
                held = self._group.memory_held()
                if held is not None:
                    self.held = held
        finally:
            self.stop()

    def stop(self) -> None:
        """Close the descriptor (not while :meth:`run` waits on it). Idempotent."""
        if self._efd >= 0:
            os.close(self._efd)
            self._efd = -1


def _start_request(spec: LaunchSpec) -> StartRequest:
    """How to start ``spec``'s process, as data (:class:`StartRequest`): the
    set-up its child runs between ``fork`` and ``exec``
    (:meth:`~arena.sandbox.childsetup.ChildSetup.preexec`: joining the bot's
    control group, the resource limits, then, with a group, dropping to the
    bot's uid, in that order: the group's ``cgroup.procs`` files are opened
    before ``RLIMIT_NOFILE`` is lowered and before the uid is the bot's,
    which could no longer write them; last, as the bot's uid, its user
    keyrings emptied: :func:`~arena.sandbox.childsetup.clear_user_keyrings`,
    keys a previous holder of the uid left). Without a group, ``subprocess``
    drops the uid before the set-up. A failure of the set-up is written to
    the bot's stderr and the child exits with :data:`SETUP_FAILED`."""
    group = spec.cgroup
    joined = group is not None
    sealed_fds = None
    pass_fds: tuple[int, ...] = ()
    if spec.sealed:
        from arena.sandbox import seal

        sealed_fds = (seal.STDIN_FD, seal.STDOUT_FD, seal.SECCOMP_FD)
        pass_fds = sealed_fds
    setup = ChildSetup(
        procs_files=group.procs_files if group is not None else (),
        rlimits=spec.preexec,
        uid=spec.user if joined else None,
        gid=spec.group if joined else None,
        clear_keyrings=spec.user is not None,
        sealed_fds=sealed_fds,
    )
    return StartRequest(
        argv=tuple(spec.argv),
        cwd=str(spec.cwd),
        env=dict(spec.env),
        setup=setup,
        # With a group, the uid is dropped in the set-up, after joining it
        # (a bot's uid cannot write the group's files).
        user=spec.user if not joined else None,
        group=spec.group if not joined else None,
        pass_fds=pass_fds,
    )


_OUT_OF_MEMORY_SIGNS: Final = (
    "MemoryError",
    "std::bad_alloc",
    "OutOfMemoryError",
    "Cannot allocate memory",
    "out of memory",
    "Could not reserve enough space",
)


def _describe_returncode(rc: int, limits: Limits | None = None) -> str:
    if rc >= 0:
        return f"exit code {rc}"
    try:
        name = signal.Signals(-rc).name
    except ValueError:
        name = f"signal {-rc}"
    note = ""
    if limits is not None:
        if -rc == signal.SIGXCPU:
            note = f": over its CPU limit of {limits.cpu_seconds} s per game"
        elif -rc == signal.SIGXFSZ:
            note = f": over its file size limit of {limits.file_size_mb} MiB"
    return f"killed by {name}{note}"


class Child:
    """A started bot process: its pid, a pidfd, the arena's ends of its three
    pipes (non-blocking Trio streams: :attr:`stdin`, :attr:`stdout`,
    :attr:`stderr`, set by the starter), and what reaps it: the
    :class:`subprocess.Popen` of the arena's spawner thread, or the spawn
    server (:class:`SpawnServer`) that started it and reports its exit.

    Attributes:
        pid: its pid.
        pidfd: a pidfd of it (the caller closes it).
        popen: the arena's :class:`subprocess.Popen` of it, or ``None`` (started
            by the spawn server).
        server: the spawn server that started it, or ``None``.
    """

    stdin: trio.lowlevel.FdStream
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream

    def __init__(
        self,
        pid: int,
        pidfd: int,
        *,
        popen: subprocess.Popen[bytes] | None = None,
        server: SpawnServer | None = None,
        status: concurrent.futures.Future[int | None] | None = None,
    ) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.popen = popen
        self.server = server
        self._status = status
        self._reaped = False

    def status(self) -> int | None:
        """The return code once the process has exited, read without reaping
        it (negative: the signal), else ``None``; ``None`` too when the spawn
        server that started it ended before it reported it (see :attr:`lost`)."""
        if self.popen is not None:
            if self.popen.returncode is not None:
                return self.popen.returncode
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped meanwhile
                return self.popen.returncode
            if info is None:
                return None
            return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        status = self._status
        return status.result() if status is not None and status.done() else None

    @property
    def lost(self) -> str | None:
        """Why the exit status cannot be known (the spawn server that started
        the process ended before it could report it: its reason), else ``None``."""
        status = self._status
        server = self.server
        if server is None or status is None or not status.done() or status.result() is not None:
            return None
        return server.gone

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped, or reported by the spawn server
        (negative: the signal), else ``None``."""
        if self.popen is not None:
            return self.popen.returncode
        return self.status()

    async def wait_status(self) -> None:
        """After the process exited (its pidfd readable): wait until its exit
        status is known (the spawn server's report; at once for the arena's
        own child)."""
        status = self._status
        if status is None or status.done():
            return
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: object) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        status.add_done_callback(wake)
        await done.wait()

    def reap(self) -> None:
        """Reap the process, which has exited (never blocks for long): the
        arena's own child is waited for; the spawn server is told to reap it
        (once it has reported its exit)."""
        if self.popen is not None:
            self.popen.wait()
        elif self.server is not None and not self._reaped:
            self._reaped = True
            self.server.reap(self.pid)


class ServerGone(Exception):
    """The spawn server cannot start a bot: it could not start, or it ended
    (the message says why); the arena's own spawner thread starts it instead."""


class SpawnServer:
    """The arena side of a spawn server (:mod:`arena.sandbox.spawnserver`):
    the process, its socket, and a reader thread that receives its replies
    (the pid of each bot started, or the error) and the exit statuses it reports.

    Created by :meth:`start` from the arena's spawner thread (so that the
    server's parent-death signal fires only when the arena ends); one per
    arena process (:func:`_spawn_server`; a forked child makes its own).

    Attributes:
        pid: the server's pid.
        gone: why the server can no longer be used (it ended, did not
            answer), or ``None`` while it serves.
    """

    def __init__(self, popen: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.pid = popen.pid
        self.gone: str | None = None
        self._popen = popen
        self._pidfd = os.pidfd_open(popen.pid)
        self._sock = sock
        self._lock = threading.Lock()  # the state (never held across a send or receive)
        self._send_lock = threading.Lock()  # the socket's sends
        self._next = 0
        self._pending: dict[int, concurrent.futures.Future[Child]] = {}
        self._statuses: dict[int, concurrent.futures.Future[int | None]] = {}
        self._owner = os.getpid()
        self._parent_thread = threading.current_thread()  # the spawner thread
        self._reader = threading.Thread(
            target=self._read, name="hearts-arena-spawn-server", daemon=True
        )
        self._reader.start()

    @classmethod
    def start(cls) -> SpawnServer:
        """Start a spawn server for this process and wait for it to be ready
        (at most :data:`SERVER_START_SECONDS`).

        Raises:
            ServerGone: it could not start, or did not say it was ready.
        """
        import arena

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        root = os.path.dirname(os.path.dirname(os.path.abspath(arena.__file__)))
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=root if not path else f"{root}{os.pathsep}{path}")
        argv = [sys.executable, "-S", "-m", "arena.sandbox.spawnserver"]
        argv += [str(os.getpid()), str(theirs.fileno())]
        try:
            with theirs:
                popen = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    cwd="/",
                    env=env,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,  # a Ctrl-C at the terminal is the arena's
                )
        except OSError as exc:
            ours.close()
            raise ServerGone(f"it could not start: {exc}") from exc
        try:
            ours.settimeout(SERVER_START_SECONDS)
            data = ours.recv(4096)
            if not data or pickle.loads(data)[0] != "ready":
                raise ServerGone(f"it exited at its start (status {popen.wait(5)})")
            ours.settimeout(None)
        except (OSError, subprocess.TimeoutExpired) as exc:
            popen.kill()
            popen.wait()
            ours.close()
            raise ServerGone(f"it did not start: {exc!r}") from exc
        except ServerGone:
            ours.close()
            raise
        return cls(popen, ours)

    def start_bot(self, request: StartRequest, fds: list[int]) -> Child:
        """Ask the server to start ``request`` with ``fds`` (the child's three
        pipe ends, then the seccomp program's descriptor if any; the caller
        closes its copies) and wait for its answer (at most
        :data:`SERVER_REPLY_SECONDS`). Blocking: run it in the spawner thread.

        Returns:
            A :class:`Child` without its pipes' streams (the caller sets them).

        Raises:
            OSError: the program could not be started (the error the server's
                ``subprocess`` raised).
            ServerGone: the server ended, or did not answer (then it is
                killed), or the request is over a packet's size (the server
                is kept for the next one).
        """
        reply: concurrent.futures.Future[Child] = concurrent.futures.Future()
        with self._lock:
            if self.gone is not None:
                raise ServerGone(self.gone)
            number = self._next
            self._next += 1
            self._pending[number] = reply
        data = pickle.dumps(("start", number, request))
        try:
            with self._send_lock:
                socket.send_fds(self._sock, [data], fds)
        except OSError as exc:
            with self._lock:
                self._pending.pop(number, None)
                if exc.errno == errno.EMSGSIZE:
                    raise ServerGone(f"a request of {len(data)} bytes is over its size") from exc
                reason = f"its socket failed: {exc}"
                self._end(reason)
            raise ServerGone(reason) from exc
        try:
            return reply.result(timeout=SERVER_REPLY_SECONDS)
        except concurrent.futures.TimeoutError:
            reason = f"it did not answer a start in {SERVER_REPLY_SECONDS} s"
            with self._lock:
                self._end(reason)
            raise ServerGone(reason) from None

    def reap(self, pid: int) -> None:
        """Tell the server to reap ``pid`` (one of its bots, exited); nothing
        once it is gone (its bots were reparented and reaped)."""
        with self._lock:
            if self.gone is not None or os.getpid() != self._owner:
                return
        try:
            with self._send_lock:
                self._sock.send(pickle.dumps(("reap", pid)))
        except OSError as exc:
            with self._lock:
                self._end(f"its socket failed: {exc}")

    def kill(self) -> None:
        """SIGKILL the server (its sealed bots die with it; nothing once it
        is reaped); the reader thread then reaps it and marks it gone."""
        with self._lock:
            self._kill()

    def _kill(self) -> None:
        if self._pidfd >= 0:  # not yet reaped (with the lock held)
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _end(self, reason: str) -> None:
        """Mark the server gone (with the lock held) and kill it; the reader
        thread fails what is waiting."""
        if self.gone is None:
            self.gone = reason
        self._kill()

    def _read(self) -> None:
        reason = "it ended"
        try:
            while True:
                data, fds, _, _ = socket.recv_fds(self._sock, 65536, 1, socket.MSG_CMSG_CLOEXEC)
                if not data:
                    break
                message = pickle.loads(data)
                kind = message[0]
                if kind == "started":
                    _, number, pid = message
                    status: concurrent.futures.Future[int | None] = concurrent.futures.Future()
                    with self._lock:
                        self._statuses[pid] = status
                        reply = self._pending.pop(number)
                    reply.set_result(Child(pid, fds[0], server=self, status=status))
                elif kind == "failed":
                    with self._lock:
                        reply = self._pending.pop(message[1])
                    reply.set_exception(message[2])
                elif kind == "exited":
                    with self._lock:
                        done = self._statuses.pop(message[1], None)
                    if done is not None:
                        done.set_result(message[2])
        except ConnectionResetError:  # it ended with requests unread (a reap)
            pass
        except Exception as exc:  # a broken server is logged and left
            reason = f"its socket failed: {exc!r}"
        rc = self._popen.wait()
        with self._lock:
            os.close(self._pidfd)
            self._pidfd = -1
            if self.gone is None:
                self.gone = f"{reason} ({_describe_returncode(rc)})"
            pending, self._pending = self._pending, {}
            statuses, self._statuses = self._statuses, {}
        with self._send_lock:
            self._sock.close()
        for reply in pending.values():
            reply.set_exception(ServerGone(self.gone))
        for status in statuses.values():
            status.set_result(None)
        # At the arena's exit, the spawner thread's end kills the server (its
        # parent-death signal): nothing to report.
        exiting = not self._parent_thread.is_alive()
        _log.log(
            logging.DEBUG if exiting else logging.WARNING,
            "the spawn server (pid %d) is gone: %s; bots start from the arena's "
            "own spawner thread from now on (%d running bots' exit statuses lost)",
            self.pid,
            self.gone,
            len(statuses),
        )


#: Seconds a new spawn server has to say it is ready.
SERVER_START_SECONDS: Final = 30.0
#: Seconds the spawn server has to answer a start (it forks a small process
#: and waits for its ``exec``); past it, it is killed and no longer used.
SERVER_REPLY_SECONDS: Final = 60.0

_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_pid = 0
_spawner_guard = threading.Lock()
_server: SpawnServer | None = None
_server_pid = 0
_server_failed: str | None = None  # why this process's server could not start


def _spawner_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread of this process that forks bots (or the spawn server).
    It never retires while the arena runs (an executor's worker waits for
    work until shut down at exit), so a parent-death signal fires only when
    the arena exits."""
    global _spawner, _spawner_pid
    with _spawner_guard:
        if _spawner is None or _spawner_pid != os.getpid():  # none yet, or forked
            _spawner = concurrent.futures.ThreadPoolExecutor(1, "hearts-arena-spawner")
            _spawner_pid = os.getpid()
        return _spawner


def _spawn_server() -> SpawnServer:
    """This process's spawn server, started at the first call (run in the
    spawner thread). Belongs to one pid: a forked child starts its own.

    Raises:
        ServerGone: it could not start (once: later calls raise at once), or
            it has ended.
    """
    global _server, _server_pid, _server_failed
    with _spawner_guard:
        if _server_pid != os.getpid():
            _server, _server_pid, _server_failed = None, os.getpid(), None
        if _server_failed is not None:
            raise ServerGone(_server_failed)
        if _server is None:
            try:
                _server = SpawnServer.start()
            except ServerGone as exc:
                _server_failed = str(exc)
                _log.warning(
                    "the spawn server could not start (%s); bots start from the "
                    "arena's own spawner thread",
                    exc,
                )
                raise
        server = _server
    if server.gone is not None:
        raise ServerGone(server.gone)
    return server


def _forget_server_in_child() -> None:
    """In a forked child of the arena (and in a child forked by
    ``subprocess`` for a ``preexec_fn``, before its ``exec``): the server
    and its reader thread are the parent's. Touches no descriptor (the
    socket's copy stays open, unused: a child forked to ``exec`` closes it
    then, and the server dies with the arena whatever the copies)."""
    global _server, _spawner_guard
    _spawner_guard = threading.Lock()  # a thread of the parent may have held it
    _server = None


os.register_at_fork(after_in_child=_forget_server_in_child)


def _use_server() -> bool:
    """Whether bots start from the spawn server (unless
    ``HEARTS_ARENA_SPAWN_SERVER=0``; not once it failed in this process)."""
    if os.environ.get(SPAWN_SERVER_VARIABLE, "1") == "0":
        return False
    if _server_pid == os.getpid():
        if _server_failed is not None:
            return False
        if _server is not None and _server.gone is not None:
            return False
    return True


#: ``HEARTS_ARENA_SPAWN_SERVER=0`` makes every bot start from the arena's own
#: spawner thread (as before the spawn server, or after it failed).
SPAWN_SERVER_VARIABLE: Final = "HEARTS_ARENA_SPAWN_SERVER"


async def _spawn(spec: LaunchSpec, *, served: bool | None = None) -> Child:
    """Start ``spec``'s command with three pipes: from the spawn server
    (:mod:`arena.sandbox.spawnserver`), or, when it cannot be used (it could
    not start or has ended: logged once; ``served`` false; a set-up that is
    not plain data), from the arena's spawner thread. ``served`` true raises
    :class:`ServerGone` instead of falling back (benchmarks).

    Raises:
        OSError: the program could not be started.
        ServerGone: ``served`` is true and the server cannot be used.
    """
    request = _start_request(spec)
    if served is None:
        served = _use_server() and isinstance(spec.preexec, Rlimits | None)
        fall_back = True
    else:
        fall_back = False
    if served:
        try:
            return await _spawn_once(spec, request, served=True)
        except ServerGone:
            if not fall_back:
                raise
    return await _spawn_once(spec, request, served=False)


async def _spawn_once(spec: LaunchSpec, request: StartRequest, *, served: bool) -> Child:
    fds: list[int] = []  # the child's pipe ends and the seccomp descriptor
    ours: list[int] = []
    try:
        pipes = [os.pipe() for _ in range(3)]
        child_ends = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        fds += child_ends
        program = None
        if spec.sealed and spec.seccomp is not None:
            from arena.sandbox import seal

            program = seal.seccomp_fd(spec.seccomp)
            fds.append(program)

        def call() -> Child:
            if served:
                return _spawn_server().start_bot(request, fds)
            popen = request.popen(child_ends[0], child_ends[1], child_ends[2], program)
            return Child(popen.pid, os.pidfd_open(popen.pid), popen=popen)

        future = _spawner_thread().submit(call)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future.add_done_callback(lambda _: token.run_sync_soon(done.set))
        with trio.CancelScope(shield=True):  # a started process must not be lost
            await done.wait()
        child = future.result()
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    child.stdin, child.stdout, child.stderr = (trio.lowlevel.FdStream(fd) for fd in ours)
    return child
