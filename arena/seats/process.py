"""One running bot program: a :class:`~arena.seats.wire.WireSeat` over the
pipes of a child process (:class:`PipeTransport`), that never raises for
anything the bot does.

A :class:`BotProcess` owns the child process. Messages are written at once
with non-blocking writes (a background task finishes a write the pipe could
not take, so a bot that stops reading cannot block the referee); its stdout is
read by the request waiting for a reply, which frames lines, enforces the
64 KiB cap and decodes JSON (no task switch on the per-move path; the
protocol side is :mod:`arena.seats.wire`'s); its stderr is drained all the
time into a :class:`~arena.seats.capped.CappedBuffer`, so a chatty bot never
blocks on a full pipe. Whatever the bot does, :meth:`BotProcess.request`
returns a :class:`Reply` that carries either the valid message or a fault
(timeout, malformed, crashed); the referee judges legality. Off move, the
bot's control group is frozen and its core token given back; its CPU time per
request is read from the group (:mod:`arena.sandbox.cgroups`, :mod:`arena.sandbox.cores`).

Logging: every line sent is logged at DEBUG as ``<<`` and every line received
as ``>>``, prefixed with the entrant and pid (logger ``arena.seats.wire``).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import trio

from arena.protocol.codec import clean_text
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
from arena.seats.capped import CappedBuffer
from arena.seats.seat import Reply
from arena.seats.wire import (
    MAX_OUTGOING_BYTES,
    MAX_PRE_REQUEST_READ,
    SEND_SLACK,
    WireSeat,
    next_tick,
)

__all__ = [
    "MAX_OUTGOING_BYTES",
    "MAX_PRE_REQUEST_READ",
    "BotProcess",
    "Child",
    "LaunchSpec",
    "PipeTransport",
    "Reply",
    "close_all",
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
            removed by :meth:`BotProcess.close`, or ``None``.
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

    def release(self) -> None:
        """Give back what the spec reserved: its control group (everything
        in it killed), its uid lease and its folder."""
        release_specs((self,))


def release_specs(specs: Sequence[LaunchSpec]) -> None:
    """Give back what several specs reserved (:meth:`LaunchSpec.release` of
    each): control groups first (everything in them killed), then the uid
    leases together (:func:`~arena.sandbox.isolation.release_leases`: one
    search of the world-writable folders for all their uids instead of one
    per uid), then the folders. Blocking (run it in a thread)."""
    for spec in specs:
        if spec.cgroup is not None:
            spec.cgroup.kill()
            spec.cgroup.remove()
    release_leases(spec.lease for spec in specs if spec.lease is not None)
    for spec in specs:
        if spec.tmpdir is not None:
            shutil.rmtree(spec.tmpdir, ignore_errors=True)


class PipeTransport:
    """The :class:`~arena.seats.seat.Transport` of a bot process: the
    arena's non-blocking ends of its stdin and stdout pipes.

    Writes go straight to the stdin descriptor (``os.write``; a full pipe
    raises ``BlockingIOError``, a closed one another ``OSError``); reads use
    ``os.read`` on the stdout descriptor, and a request that finds it empty
    waits with :meth:`wait_readable` (``trio.lowlevel.wait_readable``): no
    stream lock and no extra scheduling round per reply. The stdout stream
    stays the owner of the descriptor (it closes it).
    """

    def __init__(self, stdin: trio.lowlevel.FdStream, stdout: trio.lowlevel.FdStream) -> None:
        self._stdin = stdin
        self.stdin_fd: int = stdin.fileno()  # non-blocking (Trio set it so); -1 once closed
        self._stdout = stdout  # keeps the descriptor open (and non-blocking)
        self._stdout_fd: int = stdout.fileno()

    def write_some(self, data: bytes | bytearray) -> int:
        """Write what the pipe takes now.

        Raises:
            BlockingIOError: the pipe is full.
            OSError: EPIPE, the bot closed its input or exited.
        """
        return os.write(self.stdin_fd, data)

    async def wait_writable(self) -> None:
        """Wait until the stdin pipe has room.

        Raises:
            OSError or trio.ClosedResourceError: the pipe was closed.
        """
        fd = self.stdin_fd
        if fd < 0:
            raise trio.ClosedResourceError("stdin closed")
        await trio.lowlevel.wait_writable(fd)

    def read_now(self, max_bytes: int) -> bytes | None:
        """Read stdout without waiting: ``None`` if empty now, ``b""`` at its end."""
        try:
            return os.read(self._stdout_fd, max_bytes)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    async def wait_readable(self) -> None:
        """Wait until stdout holds bytes or reached its end.

        Raises:
            trio.ClosedResourceError or OSError: the descriptor was closed.
        """
        await trio.lowlevel.wait_readable(self._stdout_fd)

    async def close_input(self) -> None:
        """Close the stdin pipe (the bot reads end of input). Idempotent."""
        if self.stdin_fd >= 0:
            self.stdin_fd = -1
            with contextlib.suppress(OSError, trio.ClosedResourceError):
                await self._stdin.aclose()


class BotProcess(WireSeat):
    """A started bot program, a :class:`~arena.seats.seat.Seat`. Create with
    :meth:`start`; end with :meth:`close`.

    The process runs in its own session and process group (``setsid``), so
    :meth:`close` can signal every process the bot started that stayed in the
    group.
    """

    def __init__(self, spec: LaunchSpec, process: Child, pidfd: int) -> None:
        stdin = process.stdin
        assert stdin is not None
        stdout = process.stdout
        assert stdout is not None
        self._pipes = PipeTransport(stdin, stdout)
        super().__init__(self._pipes)
        self.spec = spec
        self.process = process
        self.pid: int = process.pid
        self._pidfd = pidfd
        self.exited = trio.Event()
        self._cancel = trio.CancelScope()
        self._stderr_done = trio.Event()
        self._oom: OomWatch | None = None  # set by start()
        self._token: int | None = None  # the core token held (see arena.sandbox.cores)
        self._last_token: int | None = None  # ... and the last one (its core, if free)

    @property
    def label(self) -> str:
        """The entrant's name (the launch spec's label)."""
        return self.spec.label

    def _log_prefix(self) -> str:
        return f"{self.spec.label} pid {self.pid}"

    def __repr__(self) -> str:
        return f"<BotProcess {self.spec.label!r} pid={self.pid}>"

    # -- start ------------------------------------------------------------

    @classmethod
    async def start(cls, spec: LaunchSpec, nursery: trio.Nursery) -> BotProcess:
        """Start the program and its I/O tasks in ``nursery``.

        The process is forked from the arena's spawner thread, which lives as
        long as the arena: bubblewrap's ``--die-with-parent`` (a parent-death
        signal) fires when the *thread* that forked it exits, so a bot forked
        from one of Trio's worker threads (retired after 10 s idle) would be
        killed 10 s later.

        With a core gate, waits for a core first: the new process starts
        holding it, and its first request (``hello``) keeps it, so start-up
        is charged to the handshake's clock and to no other bot's (PROTOCOL.md,
        ``time_ms``). With a control group, the child joins it before
        ``exec`` and before dropping to the bot's uid.

        Raises:
            OSError: the program could not be started (missing, not
                executable, bad working directory). The caller records it as
                the fault ``crashed``; the spec's group, uid and folder are released.
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
        bot = cls(spec, child, pidfd)
        bot._oom = oom
        bot._token = bot._last_token = token
        nursery.start_soon(bot._run_io)
        return bot

    async def _run_io(self) -> None:
        with self._cancel:
            async with trio.open_nursery() as nursery:
                self._io_nursery = nursery
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._stderr_loop)
                nursery.start_soon(self._exit_watch)
                nursery.start_soon(self._oom_watch)

    async def _exit_watch(self) -> None:
        await trio.lowlevel.wait_readable(self._pidfd)
        self.exited.set()
        # A pending request reads what the bot wrote before it exited; wake it
        # only if the pipe stays open (a grandchild holding it).
        await trio.sleep(0.05)
        self._gone(f"exited ({self.exit_status()})")

    async def _oom_watch(self) -> None:
        if self._oom is not None:
            await self._oom.run()

    @property
    def oom_held(self) -> MemoryHeld | None:
        """What the bot's memory group held at its last out-of-memory event
        (:class:`OomWatch`), or ``None``."""
        return self._oom.held if self._oom is not None else None

    async def _wait_exited(self) -> None:
        """Wait until the process has exited (not reaped). The exit watch runs
        among the game's tasks and is cancelled with them (SIGTERM to a worker,
        Ctrl-C), so the exit is also looked for directly, every 50 ms: waiting
        for the watch alone hung a shielded :meth:`close` for good."""
        while not self.exited.is_set():
            with trio.move_on_after(0.05):
                await self.exited.wait()
            if not self.exited.is_set() and self.exit_status() != "running":
                self.exited.set()

    def exit_status(self) -> str:
        """How the process ended, read without reaping it (``"running"`` if alive)."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            rc = self.process.returncode
            return "running" if rc is None else _describe_returncode(rc)
        if info is None:
            return "running"
        if info.si_code == os.CLD_EXITED:
            if self.spec.sealed and info.si_status > 128:  # bubblewrap: killed by a signal
                text = _describe_returncode(128 - info.si_status, self.spec.limits)
                if info.si_status - 128 == signal.SIGKILL:
                    text += self._memory_note()
                return text
            return f"exit code {info.si_status}{self._memory_note()}{self._exec_note()}"
        text = _describe_returncode(-info.si_status, self.spec.limits)
        if info.si_status == signal.SIGKILL:
            text += self._memory_note()
        return text

    def _exec_note(self) -> str:
        """Sealed, the program is started by a shell inside the sandbox: when
        that fails (exit code 126 or 127) the shell's one-line reason, such
        as ``Exec format error``, from the end of stderr."""
        if not self.spec.sealed:
            return ""
        lines = self.stderr.text().strip().splitlines()
        if lines and lines[-1].startswith("sh: 1: exec: "):
            return f": cannot run its program: {clean_text(lines[-1][13:], 300)}"
        return ""

    def _memory_note(self) -> str:
        limits = self.spec.limits
        if limits is None or not limits.memory_mb:
            return ""
        group = self.spec.cgroup
        if group is not None and group.binds_memory:
            kills = max(self.oom_kills, group.oom_kills())
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
        text = self.stderr.text()
        if any(sign in text for sign in _OUT_OF_MEMORY_SIGNS):
            return f"; out of memory: its limit is {limits.memory_mb} MiB of address space"
        return ""

    async def _why_ended(self, what: str) -> str:
        """Why stdout (``what`` = ``"output"``) or stdin (``"input"``) ended:
        the process exited (waited for up to 0.2 s), or it closed the pipe
        while still running."""
        with trio.move_on_after(0.2):
            await self.exited.wait()
        if self.exited.is_set():
            return f"exited ({self.exit_status()})"
        return f"closed its {what} while still running"

    async def _stderr_loop(self) -> None:
        """Drain the bot's stderr into :attr:`stderr` (a
        :class:`~arena.seats.capped.CappedBuffer`) up to the cap of bytes per
        game (``Limits.stderr_kib``); past it, until :meth:`stderr`'s buffer
        is taken at the game's end, the bytes are moved from the pipe into
        ``/dev/null`` by ``splice`` (never copied into Python) at most once
        per :data:`DISCARD_PAUSE`, and counted; the pipe is enlarged (to
        :data:`FLOOD_PIPE_BYTES` where allowed) so a burst waits less."""
        stream = self.process.stderr
        assert stream is not None
        buf = self.stderr
        limits = self.spec.limits
        cap = (limits.stderr_kib if limits is not None else Limits().stderr_kib) * 1024
        buf.cap = cap
        null = -1
        try:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                while True:
                    if not cap or buf.total < cap:
                        chunk = await stream.receive_some(
                            min(65536, cap - buf.total) if cap else 65536
                        )
                        if not chunk:
                            break
                        buf.write(chunk)
                        continue
                    if null < 0:
                        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
                        _enlarge_pipe(stream.fileno())
                    if not await _discard(stream.fileno(), null, buf):
                        break
        finally:
            if null >= 0:
                os.close(null)
            self._stderr_done.set()

    # -- talking ----------------------------------------------------------
    # -- off move: the core token, the freezer, the CPU clock ---------------

    async def _take_core(self, pace: tuple[float, float] | None = None) -> None:
        """Wait for a core token (unless held), then with ``pace`` for the
        next tick (:func:`~arena.seats.wire.next_tick`; the bot stays frozen
        meanwhile), and thaw the bot's group."""
        gate = self.spec.gate
        if gate is not None and self._token is None:
            self._token = self._last_token = await gate.acquire(self._last_token)
        if pace is not None:
            await trio.sleep_until(next_tick(*pace, trio.current_time(), slack=SEND_SLACK))
        group = self.spec.cgroup
        if group is not None:
            if gate is not None and self._token is not None:
                group.pin(gate.cpu_of(self._token))  # its own core
            if gate is not None and gate.ponder:
                group.set_priority(True)
            if group.frozen:
                group.thaw()

    def _release_core(self, cpu_before: int | None) -> float | None:
        """Freeze the bot (unless pondering is allowed), give its core token
        back; the CPU seconds its group used since ``cpu_before`` (ns), if known."""
        group = self.spec.cgroup
        gate = self.spec.gate
        if group is not None and self.dead is None:
            if gate is not None and gate.ponder:
                group.set_priority(False)  # thinks on others' time, on idle CPU only
            else:
                group.freeze()
        if gate is not None and self._token is not None:
            gate.release(self._token)
            self._token = None
        cpu_after = self._cpu_ns()
        if cpu_before is None or cpu_after is None:
            return None
        return max(0, cpu_after - cpu_before) / 1e9

    def _cpu_ns(self) -> int | None:
        group = self.spec.cgroup
        return group.cpu_ns() if group is not None else None

    def _runnable(self) -> bool | None:
        group = self.spec.cgroup
        return group.runnable() if group is not None else None

    def thaw(self) -> None:
        """Let a bot frozen off move run again (before it must read a last
        message such as ``bye``); it stays so until its next request ends."""
        group = self.spec.cgroup
        if group is not None:
            group.thaw()

    def freezer_state(self) -> str | None:
        """The bot group's freezer state (``"frozen"``, ``"freezing"``,
        ``"thawed"``), or ``None`` without a group or freezer."""
        group = self.spec.cgroup
        return group.freezer_state() if group is not None else None

    async def close(self, grace: float = 0.5, *, release: bool = True) -> None:
        """End the process: ``bye``, up to ``grace`` seconds to exit, SIGTERM to
        the process group, ``grace`` more, SIGKILL to the group; then every
        process left of the bot's (same uid, or same environment token: a
        grandchild that left the group with ``setsid``) is killed, and the
        child is reaped. Its uid and temporary folder are released, unless
        ``release`` is false: the caller then releases the spec
        (:func:`release_specs`, as :func:`close_all` does).

        The group is killed before the child is reaped, so its id cannot be
        reused meanwhile. Shielded from cancellation: the child is always reaped.
        """
        with trio.CancelScope(shield=True):
            group = self.spec.cgroup
            if group is not None:
                # Off move: on idle CPU only, so its last words (a hog's children
                # too) cost no thinking bot its core.
                group.set_priority(False)
                group.pin(None)
                group.thaw()  # a frozen bot reads no bye and dies of no signal (v1)
            if self._token is not None and self.spec.gate is not None:  # pragma: no cover
                self.spec.gate.release(self._token)
                self._token = None
            if self.dead is None:
                self.notify({"type": "bye"})
                self.flush()
            if not self._out:  # all written: close the pipe so the bot also sees end of input
                await self._close_stdin()
            with trio.move_on_after(grace):
                await self._wait_exited()
            if not self.exited.is_set():
                self._killpg(signal.SIGTERM)
                with trio.move_on_after(grace):
                    await self._wait_exited()
            self._killpg(signal.SIGKILL)
            spec = self.spec
            if group is not None:  # everything the bot started, whatever its session or uid
                self.oom_kills = group.oom_kills()
                await trio.to_thread.run_sync(group.kill)
            if group is not None and (spec.lease is not None or spec.sealed):
                # Nothing of the bot's is outside its group (its uid cannot write
                # the group's files): no scan of /proc, which costs the bots on
                # move their CPU.
                pass
            elif spec.lease is not None:
                await trio.to_thread.run_sync(
                    lambda: kill_all(uid=spec.lease.uid if spec.lease else None)
                )
            elif spec.token is not None:
                await trio.to_thread.run_sync(lambda: kill_all(env=spec.token))
            await self._wait_exited()
            self.process.reap()
            with trio.move_on_after(0.2):  # the last words on stderr
                await self._stderr_done.wait()
            self._cancel.cancel()
            await self._close_stdin()
            os.close(self._pidfd)
            if self.dead is None:
                self.dead = "closed by the referee"
            if release:
                await trio.to_thread.run_sync(spec.release)

    def abandon(self, reason: str) -> None:
        """Stop using the process now: mark it dead and SIGKILL its group, so a
        struck-out bot burns no more CPU. :meth:`close` still reaps it."""
        self._gone(reason)
        self._killpg(signal.SIGKILL)
        if self.spec.cgroup is not None:
            self.spec.cgroup.kill(timeout=0)

    async def _close_stdin(self) -> None:
        self._input_open = False
        await self._pipes.close_input()

    def renew_cpu_limit(self) -> None:
        """Give the process and its children a fresh CPU allowance for a new game."""
        limits = self.spec.limits
        if limits is not None and limits.cpu_seconds and self.dead is None:
            renew_cpu_limit(process_tree(self.pid), limits.cpu_seconds)

    def _killpg(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


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


#: The size a flooding bot's stderr pipe is raised to once over its cap, in
#: bytes (``F_SETPIPE_SZ``; an unprivileged arena gets at most
#: ``/proc/sys/fs/pipe-max-size``, 1 MiB by default).
FLOOD_PIPE_BYTES: Final = 1 << 20

#: Seconds between two discards of a flooding bot's stderr once over its cap:
#: the arena's cost is then a wake-up and a ``splice`` per 10 ms whatever
#: the bot writes, and a bot writing faster than the pipe's capacity (1 MiB)
#: per 10 ms waits on its own full pipe (its own time, never the referee's).
DISCARD_PAUSE: Final = 0.01


def _enlarge_pipe(fd: int) -> None:
    """Raise the pipe's capacity to :data:`FLOOD_PIPE_BYTES` where allowed
    (else leave it): fewer wake-ups per byte discarded."""
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, FLOOD_PIPE_BYTES)


async def _discard(fd: int, null: int, buf: CappedBuffer) -> bool:
    """Wait until the pipe ``fd`` holds bytes, move what it holds into
    ``null`` (``/dev/null``) with ``splice`` (the kernel drops the pages; no
    copy into Python), add their count to ``buf.discarded``, then pause
    :data:`DISCARD_PAUSE` seconds.

    Returns:
        ``False`` at the end of the pipe (the bot and its children closed it).

    Raises:
        trio.ClosedResourceError: the stream was closed meanwhile.
    """
    await trio.lowlevel.wait_readable(fd)
    try:
        moved = os.splice(fd, null, FLOOD_PIPE_BYTES, flags=os.SPLICE_F_NONBLOCK)
    except BlockingIOError:
        return True
    except OSError:
        return False
    buf.discarded += moved
    if moved:
        await trio.sleep(DISCARD_PAUSE)
    return moved > 0


#: Exit code of a bot process whose set-up (limits, control group, uid)
#: failed between fork and exec; its stderr says why.
SETUP_FAILED: Final = 125


async def close_all(bots: Sequence[BotProcess], grace: float = 0.5) -> None:
    """Close ``bots`` at once (:meth:`BotProcess.close` of each, concurrently),
    then release their specs together (:func:`release_specs`): the uids of a
    game's four bots are purged in one search of ``/tmp``, ``/var/tmp`` and
    ``/dev/shm`` instead of four. Shielded from cancellation; the specs are
    released even if a close raised (which it does not for anything a bot does).
    """
    with trio.CancelScope(shield=True):
        try:
            async with trio.open_nursery() as nursery:
                for bot in bots:
                    nursery.start_soon(functools.partial(bot.close, grace, release=False))
        finally:
            specs = [bot.spec for bot in bots]
            await trio.to_thread.run_sync(release_specs, specs)


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
