"""Starting a confined process and ending it: the sandbox's interface to
the seat layer (:mod:`arena.seats.process` speaks the protocol over the pipes
of a :class:`ConfinedProcess`).

A :class:`LaunchSpec` (made by :class:`arena.sandbox.launcher.Launcher`) says
how to start one process: argv (bubblewrap's when sealed), folder,
environment, uid lease, resource limits, control group and core gate.
:meth:`ConfinedProcess.start` starts it from the arena's spawner thread with
three pipes, the child joining its control group and dropping to its uid
before ``exec``; the process then holds its bounds: a core token while on
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
import functools
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

from arena.sandbox.cgroups import BotGroup, MemoryHeld
from arena.sandbox.cores import CoreGate
from arena.sandbox.isolation import (
    Limits,
    UidLease,
    clear_user_keyrings,
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

        The process is forked from the arena's spawner thread, which lives as
        long as the arena: bubblewrap's ``--die-with-parent`` (a parent-death
        signal) fires when the *thread* that forked it exits, so a bot forked
        from one of Trio's worker threads (retired after 10 s idle) would be
        killed 10 s later.

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
        pidfd = os.pidfd_open(child.pid)
        return cls(spec, child, pidfd, oom, token)

    def __repr__(self) -> str:
        return f"<ConfinedProcess {self.spec.label!r} pid={self.pid}>"

    # -- watching ---------------------------------------------------------

    async def watch_exit(self) -> None:
        """Return once the process has exited (its pidfd), setting :attr:`exited`."""
        await trio.lowlevel.wait_readable(self._pidfd)
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
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            rc = self.child.returncode
            return "running" if rc is None else _describe_returncode(rc)
        if info is None:
            return "running"
        if info.si_code == os.CLD_EXITED:
            if self.spec.sealed and info.si_status > 128:  # bubblewrap: killed by a signal
                text = _describe_returncode(128 - info.si_status, self.spec.limits)
                if info.si_status - 128 == signal.SIGKILL:
                    text += self._memory_note(stderr)
                return text
            return f"exit code {info.si_status}{self._memory_note(stderr)}"
        text = _describe_returncode(-info.si_status, self.spec.limits)
        if info.si_status == signal.SIGKILL:
            text += self._memory_note(stderr)
        return text

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


#: Exit code of a bot process whose set-up (limits, control group, uid)
#: failed between fork and exec; its stderr says why.
SETUP_FAILED: Final = 125


def _child_setup(spec: LaunchSpec) -> Callable[[], None] | None:
    """What the child runs between ``fork`` and ``exec``: joining the bot's
    control group, the resource limits, then (with a group) dropping to the
    bot's uid, in that order: the group's ``cgroup.procs`` files are opened
    before ``RLIMIT_NOFILE`` is lowered (the arena's descriptors are still
    open in the child then) and before the uid is the bot's (which could no
    longer write them). Last, as the bot's uid, its user keyrings are
    emptied (:func:`~arena.sandbox.isolation.clear_user_keyrings`: keys a
    previous holder of the uid left). A failure is written to the bot's
    stderr and the child exits with :data:`SETUP_FAILED`: a bot that could
    not start."""
    limits = spec.preexec
    group = spec.cgroup
    uid, gid = spec.user, spec.group
    if group is None and limits is None and uid is None:
        return None

    def setup() -> None:
        try:
            # Join first: the arena's descriptors are still open here (they
            # are closed after this function), so once RLIMIT_NOFILE is the
            # bot's, opening a group's cgroup.procs could fail with EMFILE.
            if group is not None:
                group.join_self()
            if limits is not None:
                limits()
            if group is not None:  # without a group, Popen dropped the uid before this
                if gid is not None:
                    os.setgroups([])
                    os.setresgid(gid, gid, gid)
                if uid is not None:
                    os.setresuid(uid, uid, uid)
            if uid is not None:
                clear_user_keyrings()  # never the arena's own: only as the bot's uid
        except BaseException as exc:
            # Say why on the bot's stderr (fd 2 is its pipe by now) and exit: the
            # arena records a bot that could not start, and the tournament goes on.
            with contextlib.suppress(OSError):
                os.write(2, f"arena: cannot set up the bot's process: {exc!r}\n".encode())
            os._exit(SETUP_FAILED)

    return setup


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
    """A started bot process: its pid, the arena's ends of its three pipes
    (non-blocking Trio streams) and the :class:`subprocess.Popen` that reaps it."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self.popen = popen
        self.pid: int = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: the signal), else ``None``."""
        return self.popen.returncode

    def reap(self) -> None:
        """Reap the process, which has exited (never blocks for long)."""
        self.popen.wait()


_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_pid = 0
_spawner_guard = threading.Lock()


def _spawner_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread of this process that forks bots. It never retires
    while the arena runs (an executor's worker waits for work until shut down
    at exit), so a parent-death signal fires only when the arena exits."""
    global _spawner, _spawner_pid
    with _spawner_guard:
        if _spawner is None or _spawner_pid != os.getpid():  # none yet, or forked
            _spawner = concurrent.futures.ThreadPoolExecutor(1, "hearts-arena-spawner")
            _spawner_pid = os.getpid()
        return _spawner


async def _spawn(spec: LaunchSpec) -> Child:
    """Start ``spec``'s command from the spawner thread with three pipes.

    Raises:
        OSError: the program could not be started.
    """
    fds: list[int] = []  # the child's pipe ends and the seccomp descriptor
    ours: list[int] = []
    try:
        pipes = [os.pipe() for _ in range(3)]
        child_ends = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        fds += child_ends
        # Limits, the bot's control group, then its uid (arena.sandbox.cgroups).
        preexec = _child_setup(spec)
        pass_fds: tuple[int, ...] = ()
        if spec.sealed:
            from arena.sandbox import seal

            program = None
            if spec.seccomp is not None:
                program = seal.seccomp_fd(spec.seccomp)
                fds.append(program)
            preexec = functools.partial(_sealed_preexec, program, _child_setup(spec))
            pass_fds = (seal.STDIN_FD, seal.STDOUT_FD, seal.SECCOMP_FD)
        popen_call = functools.partial(
            subprocess.Popen,
            list(spec.argv),
            stdin=child_ends[0],
            stdout=child_ends[1],
            stderr=child_ends[2],
            cwd=spec.cwd,
            env=spec.env,
            start_new_session=True,
            preexec_fn=preexec,
            # With a group, the uid is dropped in _child_setup, after joining
            # it (a bot's uid cannot write the group's files).
            user=spec.user if spec.cgroup is None else None,
            group=spec.group if spec.cgroup is None else None,
            extra_groups=[] if spec.group is not None and spec.cgroup is None else None,
            close_fds=True,
            pass_fds=pass_fds,
        )
        future: concurrent.futures.Future[subprocess.Popen[bytes]]
        future = _spawner_thread().submit(popen_call)  # type: ignore[arg-type]
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future.add_done_callback(lambda _: token.run_sync_soon(done.set))
        with trio.CancelScope(shield=True):  # a started process must not be lost
            await done.wait()
        popen: subprocess.Popen[bytes] = future.result()
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    streams = [trio.lowlevel.FdStream(fd) for fd in ours]
    return Child(popen, *streams)


def _sealed_preexec(program: int | None, then: Callable[[], None] | None) -> None:
    """In the child of a sealed start, before ``exec``: move the stdin and
    stdout pipes (0 and 1) to :data:`~arena.sandbox.seal.STDIN_FD` and
    :data:`~arena.sandbox.seal.STDOUT_FD`, the seccomp program to
    :data:`~arena.sandbox.seal.SECCOMP_FD`, and ``/dev/null`` to 0 and 1 (bubblewrap
    keeps those); then run ``then`` (the resource limits)."""
    import fcntl

    from arena.sandbox import seal

    moved = fcntl.fcntl(program, fcntl.F_DUPFD, 10) if program is not None else None
    os.dup2(0, seal.STDIN_FD)
    os.dup2(1, seal.STDOUT_FD)
    if moved is not None:
        os.dup2(moved, seal.SECCOMP_FD)
        os.close(moved)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    if null > seal.SECCOMP_FD:
        os.close(null)
    if then is not None:
        then()
