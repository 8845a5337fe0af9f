"""One running bot program: a :class:`~arena.seats.wire.WireSeat` over the
pipes of a child process (:class:`PipeTransport`), that never raises for
anything the bot does.

A :class:`BotProcess` owns a confined child process
(:class:`arena.sandbox.spawn.ConfinedProcess`: how it is started, bounded,
frozen, killed and reaped is the sandbox's). Messages are written at once
with non-blocking writes (a background task finishes a write the pipe could
not take, so a bot that stops reading cannot block the referee); its stdout is
read by the request waiting for a reply, which frames lines, enforces the
64 KiB cap and decodes JSON (no task switch on the per-move path; the
protocol side is :mod:`arena.seats.wire`'s); its stderr is drained all the
time into a :class:`~arena.seats.capped.CappedBuffer`, so a chatty bot never
blocks on a full pipe. Whatever the bot does, :meth:`BotProcess.request`
returns a :class:`Reply` that carries either the valid message or a fault
(timeout, malformed, crashed); the referee judges legality. Off move, the
process is paused (its control group frozen, its core token given back); its
CPU time per request is read from the group
(:meth:`~arena.sandbox.spawn.ConfinedProcess.cpu_ns`).

Logging: every line sent is logged at DEBUG as ``<<`` and every line received
as ``>>``, prefixed with the entrant and pid (logger ``arena.seats.wire``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Sequence
from typing import Final

import trio

from arena.protocol.codec import clean_text
from arena.protocol.faults import Fault, FaultKind
from arena.sandbox.cgroups import MemoryHeld
from arena.sandbox.isolation import Limits
from arena.sandbox.spawn import ConfinedProcess, LaunchSpec, release_specs
from arena.seats.capped import CappedBuffer
from arena.seats.handshake import handshake
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
    "PipeTransport",
    "Reply",
    "close_all",
    "start_bot",
]


#: How long, in seconds of wall time, a bot whose stdout or stdin ended is
#: waited for to exit (thawed, if it was frozen off move) before it is said
#: to have closed the pipe while still running. A killed bot's pipe ends at
#: once; its exit is seen once bubblewrap (the sandbox's init, the process
#: the arena waits for) has ended too. A bot that closes its output and goes
#: on running costs its table this wait once.
EXIT_WAIT_SECONDS: Final = 0.5


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
    """A started bot program, a :class:`~arena.seats.seat.Seat` speaking the
    protocol over the pipes of a :class:`~arena.sandbox.spawn.ConfinedProcess`.
    Create with :meth:`start`; end with :meth:`close`.

    The process runs in its own session and process group (``setsid``), so
    :meth:`close` can signal every process the bot started that stayed in the
    group.

    Attributes:
        proc: the confined process.
        spec: how it was started (``proc.spec``).
        pid: its pid.
    """

    def __init__(self, proc: ConfinedProcess) -> None:
        child = proc.child
        self._pipes = PipeTransport(child.stdin, child.stdout)
        super().__init__(self._pipes)
        self.proc = proc
        self.spec = proc.spec
        self.pid: int = proc.pid
        self.exited = proc.exited
        self._cancel = trio.CancelScope()
        self._stderr_done = trio.Event()

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
        """Start the program (:meth:`arena.sandbox.spawn.ConfinedProcess.start`)
        and its I/O tasks in ``nursery``.

        With a core gate, the new process starts holding a core, and its
        first request (``hello``) keeps it, so start-up is charged to the
        handshake's clock and to no other bot's (PROTOCOL.md, ``time_ms``).

        Raises:
            OSError: the program could not be started (missing, not
                executable, bad working directory). The caller records it as
                the fault ``crashed``; the spec's group, uid and folder are released.
        """
        bot = cls(await ConfinedProcess.start(spec))
        nursery.start_soon(bot._run_io)
        return bot

    async def _run_io(self) -> None:
        with self._cancel:
            async with trio.open_nursery() as nursery:
                self._io_nursery = nursery
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._stderr_loop)
                nursery.start_soon(self._exit_watch)
                nursery.start_soon(self.proc.watch_memory)

    async def _exit_watch(self) -> None:
        await self.proc.watch_exit()
        # A pending request reads what the bot wrote before it exited; wake it
        # only if the pipe stays open (a grandchild holding it).
        await trio.sleep(0.05)
        self._gone(f"exited ({self.exit_status()})")

    @property
    def oom_held(self) -> MemoryHeld | None:
        """What the bot's memory group held at its last out-of-memory event, or ``None``."""
        return self.proc.oom_held

    def exit_status(self) -> str:
        """How the process ended, read without reaping it (``"running"`` if
        alive), with the reason of a kill where known
        (:meth:`arena.sandbox.spawn.ConfinedProcess.exit_status`)."""
        text = self.proc.exit_status(self.stderr.text())
        if text.startswith("exit code"):
            text += self._exec_note()
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

    async def _why_ended(self, what: str) -> str:
        """Why stdout (``what`` = ``"output"``) or stdin (``"input"``) ended:
        the process exited (waited for up to :data:`EXIT_WAIT_SECONDS`), or
        it closed the pipe while still running."""
        if not self.exited.is_set():
            # A frozen process cannot finish dying: a bot killed just after
            # its reply (over its CPU limit, by a thread it left running) was
            # frozen with it, half dead, and its pipe's end was read at its
            # next request, before it was thawed.
            self.proc.thaw()
        with trio.move_on_after(EXIT_WAIT_SECONDS):
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
        stream = self.proc.child.stderr
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

    # -- off move: the core token, the freezer, the CPU clock ---------------

    async def _take_core(self, pace: tuple[float, float] | None = None) -> None:
        """Wait for a core token (unless held), then with ``pace`` for the
        next tick (:func:`~arena.seats.wire.next_tick`; the bot stays frozen
        meanwhile), and let the process run (:meth:`ConfinedProcess.resume`)."""
        await self.proc.acquire_core()
        if pace is not None:
            await trio.sleep_until(next_tick(*pace, trio.current_time(), slack=SEND_SLACK))
        self.proc.resume()

    def _release_core(self, cpu_before: int | None) -> float | None:
        """Pause the process (frozen unless pondering is allowed; its core
        token given back); the CPU seconds its group used since
        ``cpu_before`` (ns), if known."""
        self.proc.pause(alive=self.dead is None)
        cpu_after = self.proc.cpu_ns()
        if cpu_before is None or cpu_after is None:
            return None
        return max(0, cpu_after - cpu_before) / 1e9

    def _cpu_ns(self) -> int | None:
        return self.proc.cpu_ns()

    def _runnable(self) -> bool | None:
        return self.proc.runnable()

    def _oom_kills(self) -> int:
        return self.proc.read_oom_kills()

    def thaw(self) -> None:
        """Let a bot frozen off move run again (before it must read a last
        message such as ``bye``); it stays so until its next request ends."""
        self.proc.thaw()

    def freezer_state(self) -> str | None:
        """The bot group's freezer state (``"frozen"``, ``"freezing"``,
        ``"thawed"``), or ``None`` without a group or freezer."""
        return self.proc.freezer_state()

    async def close(self, grace: float = 0.5, *, release: bool = True) -> None:
        """End the process: ``bye``, up to ``grace`` seconds to exit, SIGTERM to
        the process group, ``grace`` more, then
        :meth:`~arena.sandbox.spawn.ConfinedProcess.kill_tree` (SIGKILL to
        the group, every process left of the bot's killed, the child reaped).
        Its uid and temporary folder are released, unless ``release`` is
        false: the caller then releases the spec (:func:`release_specs`, as
        :func:`close_all` does). Shielded from cancellation: the child is
        always reaped.
        """
        with trio.CancelScope(shield=True):
            proc = self.proc
            proc.wind_down()
            if self.dead is None:
                self.notify({"type": "bye"})
                self.flush()
            if not self._out:  # all written: close the pipe so the bot also sees end of input
                await self._close_stdin()
            with trio.move_on_after(grace):
                await proc.wait_exited()
            if not self.exited.is_set():
                proc.signal_group(signal.SIGTERM)
                with trio.move_on_after(grace):
                    await proc.wait_exited()
            await proc.kill_tree()
            with trio.move_on_after(0.2):  # the last words on stderr
                await self._stderr_done.wait()
            self._cancel.cancel()
            await self._close_stdin()
            if self.dead is None:
                self.dead = "closed by the referee"
            await proc.finish(release=release)

    def abandon(self, reason: str) -> None:
        """Stop using the process now: mark it dead and SIGKILL its group, so a
        struck-out bot burns no more CPU. :meth:`close` still reaps it."""
        self._gone(reason)
        self.proc.abandon()

    async def _close_stdin(self) -> None:
        self._input_open = False
        await self._pipes.close_input()

    def renew_cpu_limit(self) -> None:
        """Give the process and its children a fresh CPU allowance for a new game."""
        if self.dead is None:
            self.proc.renew_cpu_limit()


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


async def start_bot(
    launch: LaunchSpec, seat: int, startup_time: float, nursery: trio.Nursery
) -> tuple[BotProcess | None, Fault | None]:
    """Start a bot process and shake hands with it.

    Returns:
        ``(bot, None)`` on success; ``(None, fault)`` if it could not be
        started (``crashed``), or ``(bot, fault)`` if it failed the handshake
        (the caller plays its seat by the default moves and closes the bot).
    """
    try:
        bot = await BotProcess.start(launch, nursery)
    except OSError as exc:
        detail = f"could not start {launch.argv[0]!r}: {exc.strerror or exc}"
        return None, Fault(seat, launch.label, FaultKind.CRASHED, detail, None, None, "hello", None)
    return bot, await handshake(bot, seat, startup_time)
