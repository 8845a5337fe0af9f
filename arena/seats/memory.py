"""Bots in memory: a :class:`~arena.seats.seat.Seat` whose bot is a Python
coroutine, for testing every fault path without processes and without real
time (under ``trio.testing.MockClock``).

:class:`MemorySeat` is a :class:`~arena.seats.wire.WireSeat`, the same
protocol code as a bot process: the bot writes raw bytes (whole lines,
partial lines, garbage, over-long lines, floods) into a
:class:`MemoryTransport`, and the seat frames, caps, decodes and judges them
exactly as it does a pipe's. The bot can also stop reading, close its input
or output, exit, or raise (a crash, exit code 1).

Off move the seat is frozen, as a bot process's control group is: a bot that
:meth:`BotEnd.think` s while frozen waits until its next request thaws it.
Its CPU clock is a :class:`FakeCpuClock` that thinking (or the test)
advances; each :class:`~arena.seats.seat.Reply` carries the CPU seconds the
clock moved during the request, as a control group's ``cpu.stat`` gives a
process's. So fair-clock logic is testable with a fake clock.

Example (under ``trio.testing.MockClock(autojump_threshold=0)``)::

    async def slow(end: BotEnd) -> None:
        while (msg := await end.receive()) is not None:
            if msg["type"] == "hello":
                end.reply(msg, name="slow")
            elif "id" in msg:
                await trio.sleep(5)  # a timeout, at once on the mock clock

    seat = MemorySeat("slow", slow)
    await seat.start(nursery)
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from arena.core.cards import CARD_NAMES, mask_of_names, names_of
from arena.core.rules import default_pass, default_play
from arena.seats.seat import Message
from arena.seats.wire import SEND_SLACK, WireSeat, next_tick

#: Bytes the bot's input holds unread before writes to it wait (a pipe's 64 KiB).
INPUT_CAPACITY: Final = 65536

#: An in-memory bot: a coroutine function given its end of the transport.
#: Returning is exiting with code 0; raising is exiting with code 1 (the
#: traceback goes to its stderr).
MemoryBot = Callable[["BotEnd"], Awaitable[None]]

#: What :func:`function_bot`'s function returns for a request: the answer's
#: fields beside ``type`` and ``id`` (``{"card": "QS"}``), raw output
#: (``str`` or ``bytes``, written as is: garbage, partial or several lines),
#: or ``None`` for no answer.
Answer = dict[str, Any] | str | bytes | None


class FakeCpuClock:
    """A per-seat CPU clock that tests advance (in place of a control
    group's ``cpu.stat``).

    Attributes:
        ns: CPU nanoseconds used so far.
    """

    def __init__(self) -> None:
        self.ns = 0

    def advance(self, seconds: float) -> None:
        """Charge ``seconds`` of CPU time to the bot."""
        self.ns += round(seconds * 1e9)


class MemoryTransport:
    """The :class:`~arena.seats.seat.Transport` between a :class:`MemorySeat`
    and its bot: two byte buffers.

    The arena's side: :meth:`write_some`, :meth:`wait_writable`,
    :meth:`read_now`, :meth:`wait_readable`, :meth:`close_input`. The bot's side
    is :class:`BotEnd`.

    Args:
        capacity: bytes of the bot's input held unread before the arena's
            writes wait (default :data:`INPUT_CAPACITY`).
    """

    def __init__(self, capacity: int = INPUT_CAPACITY) -> None:
        self.capacity = capacity
        self.to_bot = bytearray()  # written by the arena, not yet read by the bot
        self.from_bot = bytearray()  # written by the bot, not yet read by the arena
        self.input_closed = False  # the bot's input: closed by either side
        self.output_closed = False  # the bot's output: closed by the bot (or its exit)
        self._lot = trio.lowlevel.ParkingLot()

    def _wake(self) -> None:
        self._lot.unpark_all()

    # -- the arena's side -------------------------------------------------

    def write_some(self, data: bytes | bytearray) -> int:
        """Take what the input has room for (0 when full).

        Raises:
            BrokenPipeError: the bot's input is closed.
        """
        if self.input_closed:
            raise BrokenPipeError("the bot's input is closed")
        n = max(0, min(len(data), self.capacity - len(self.to_bot)))
        if n:
            self.to_bot += data[:n]
            self._wake()
        return n

    async def wait_writable(self) -> None:
        """Wait until the bot's input has room.

        Raises:
            BrokenPipeError: the input is (or gets) closed.
        """
        while not self.input_closed and len(self.to_bot) >= self.capacity:
            await self._lot.park()
        if self.input_closed:
            raise BrokenPipeError("the bot's input is closed")

    def read_now(self, max_bytes: int) -> bytes | None:
        """The bot's output without waiting: ``None`` if empty, ``b""`` at its end."""
        if self.from_bot:
            chunk = bytes(self.from_bot[:max_bytes])
            del self.from_bot[:max_bytes]
            return chunk
        return b"" if self.output_closed else None

    async def wait_readable(self) -> None:
        """Wait until the bot wrote bytes or closed its output (at once if so)."""
        while not self.from_bot and not self.output_closed:
            await self._lot.park()

    async def close_input(self) -> None:
        """Close the bot's input: it reads end of input once it has read the rest."""
        self.input_closed = True
        self._wake()


class BotEnd:
    """The bot's end of a :class:`MemoryTransport`, given to a :data:`MemoryBot`.

    Attributes:
        seat: the seat (for :attr:`MemorySeat.frozen` and its CPU clock).
        received: every message the bot has read, in order.
    """

    def __init__(self, seat: MemorySeat, transport: MemoryTransport) -> None:
        self.seat = seat
        self._t = transport
        self.received: list[Message] = []
        self.reading = True

    async def receive(self) -> Message | None:
        """The next message the arena sent (decoded), or ``None`` at the end
        of input. Waits while the bot is frozen (off move), as a frozen
        process does."""
        t = self._t
        while True:
            nl = t.to_bot.find(b"\n") if not self.seat.frozen else -1
            if nl >= 0:
                line = bytes(t.to_bot[: nl + 1])
                del t.to_bot[: nl + 1]
                t._wake()
                message: Message = json.loads(line)
                self.received.append(message)
                return message
            if t.input_closed and not self.seat.frozen:
                return None
            await t._lot.park()

    def write(self, data: bytes | str) -> None:
        """Write raw bytes to the bot's output (nothing if it is closed)."""
        if self._t.output_closed:
            return
        self._t.from_bot += data.encode() if isinstance(data, str) else data
        self._t._wake()

    def send(self, message: Message) -> None:
        """Write one JSON line."""
        self.write(json.dumps(message) + "\n")

    def reply(self, request: Message, **fields: Any) -> None:
        """Answer ``request``: ``{"type": its type, "id": its id, **fields}``."""
        self.send({"type": request["type"], "id": request["id"], **fields})

    def log(self, text: str) -> None:
        """Write ``text`` to the bot's stderr."""
        self.seat.stderr.write(text.encode())

    def close_output(self) -> None:
        """Close the bot's output (the arena reads its end)."""
        self._t.output_closed = True
        self._t._wake()

    def close_input(self) -> None:
        """Close the bot's input: the arena's next write fails (EPIPE)."""
        self._t.input_closed = True
        self._t.to_bot.clear()
        self._t._wake()

    async def think(self, seconds: float, quantum: float = 0.001) -> None:
        """Use ``seconds`` of CPU, in slices of ``quantum`` seconds as a
        time-shared CPU gives them: before each slice wait while frozen,
        then advance the seat's CPU clock and Trio's clock by the slice."""
        left = seconds
        self.seat.thinking = True
        try:
            while left > 1e-12:
                while self.seat.frozen:
                    await self._t._lot.park()
                step = min(quantum, left)
                self.seat.cpu.advance(step)
                left -= step
                await trio.sleep(step)
        finally:
            self.seat.thinking = False

    async def run_out_of_memory(self, processes: int = 1) -> None:
        """Go over the memory bound: as the kernel does to a bot process's
        control group, ``processes`` of the bot's processes are killed
        (:meth:`MemorySeat.oom_kill`) and the bot with them. Never returns."""
        self.seat.oom_kill(processes)
        await trio.sleep_forever()

    async def starve(self, seconds: float) -> None:
        """Be runnable for ``seconds`` of wall time without getting any CPU
        (as a bot kept from its core by the machine's other load: its CPU
        clock does not move)."""
        self.seat.thinking = True
        try:
            await trio.sleep(seconds)
        finally:
            self.seat.thinking = False


def function_bot(decide: Callable[[Message], Answer], name: str = "memory-bot") -> MemoryBot:
    """An in-memory bot that answers ``hello`` with ``name`` and every other
    request with ``decide(request)`` (see :data:`Answer`); it exits at
    ``bye`` or the end of its input."""

    async def bot(end: BotEnd) -> None:
        while (message := await end.receive()) is not None:
            kind = message["type"]
            if kind == "bye":
                return
            if kind == "hello":
                end.reply(message, name=name)
            elif "id" in message:
                answer = decide(message)
                if isinstance(answer, dict):
                    end.reply(message, **answer)
                elif answer is not None:
                    end.write(answer)

    return bot


def first_legal(request: Message) -> Answer:
    """The referee's default moves as a bot's answers: the three highest
    cards for a pass (:func:`arena.core.rules.default_pass`), the first
    legal card for a play (:func:`arena.core.rules.default_play`)."""
    if request["type"] == "pass":
        return {"cards": names_of(default_pass(mask_of_names(request["hand"])))}
    return {"card": CARD_NAMES[default_play(mask_of_names(request["legal"]))]}


class MemorySeat(WireSeat):
    """A seat whose bot is the coroutine ``bot``, over a :class:`MemoryTransport`.

    Create it, then :meth:`start` it in a nursery; end it with :meth:`close`.

    Args:
        label: the entrant's name.
        bot: the bot (:data:`MemoryBot`).
        ponder: like the core gate's ``ponder``: the bot is never frozen off move.
        capacity: bytes of its input held unread (:class:`MemoryTransport`).
        outgoing_cap: bytes queued unread before the bot counts as crashed
            (default :data:`arena.seats.wire.MAX_OUTGOING_BYTES`).
        cpu_budget: count time limits in the bot's CPU time (its
            :class:`FakeCpuClock`) when the referee gives a wall cap, as a bot
            process with CPU accounting does (default ``False``: a bot that
            sleeps times out at its time limit, as one without CPU accounting).
        exit_wait: seconds a bot whose output or input ended is waited for to
            exit before it is said to have closed it while still running (a
            bot process waits :data:`arena.seats.process.EXIT_WAIT_SECONDS`).

    Attributes:
        cpu: its :class:`FakeCpuClock`.
        frozen: whether it is frozen now (off move).
        freezes, thaws: how many times it was frozen and thawed.
        exited: set when the bot's coroutine ended.
        exit_code: 0 (returned), 1 (raised), ``None`` (killed or running).
        end: the bot's :class:`BotEnd` (what it received).
        asked_at: the Trio time at which each request was sent (the bot thawed).
        thinking: the bot is runnable now (in :meth:`BotEnd.think` or
            :meth:`BotEnd.starve`), as a process thread in state ``R``.
        oom_killed: processes of the bot killed for its memory bound so far
            (:meth:`oom_kill`), as a bot process's control group counts them.
    """

    def __init__(
        self,
        label: str,
        bot: MemoryBot,
        *,
        ponder: bool = False,
        capacity: int = INPUT_CAPACITY,
        outgoing_cap: int | None = None,
        cpu_budget: bool = False,
        exit_wait: float = 0.2,
    ) -> None:
        self.memory = MemoryTransport(capacity)
        self.exit_wait = exit_wait
        super().__init__(self.memory)
        self._label = label
        self._bot = bot
        self.ponder = ponder
        if outgoing_cap is not None:
            self.outgoing_cap = outgoing_cap
        self.cpu_budget = cpu_budget
        self.asked_at: list[float] = []
        self.thinking = False  # runnable now: in BotEnd.think or BotEnd.starve
        self.end = BotEnd(self, self.memory)
        self.cpu = FakeCpuClock()
        self.frozen = False
        self.freezes = 0
        self.thaws = 0
        self.cpu_limit_renewals = 0
        self.exited = trio.Event()
        self.exit_code: int | None = None
        self._killed: str | None = None
        self.oom_killed = 0
        self._cancel = trio.CancelScope()
        self._bot_scope = trio.CancelScope()

    def __repr__(self) -> str:
        return f"<MemorySeat {self._label!r}>"

    @property
    def label(self) -> str:
        """The entrant's name."""
        return self._label

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the bot and the seat's writer in ``nursery``."""
        nursery.start_soon(self._run_io)
        await trio.lowlevel.checkpoint()

    async def _run_io(self) -> None:
        with self._cancel:
            async with trio.open_nursery() as nursery:
                self._io_nursery = nursery
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._run_bot)

    async def _run_bot(self) -> None:
        try:
            with self._bot_scope:
                await self._bot(self.end)
                self.exit_code = 0
        except Exception:
            self.stderr.write(traceback.format_exc().encode())
            self.exit_code = 1
        finally:
            self.memory.output_closed = True
            self.memory.input_closed = True
            self.memory._wake()
            self.exited.set()

    def exit_status(self) -> str:
        """How the bot ended: ``"exit code N"``, ``"killed by SIGKILL"`` or ``"running"``."""
        if not self.exited.is_set():
            return "running"
        if self._killed is not None:
            return self._killed
        return f"exit code {self.exit_code}"

    async def _why_ended(self, what: str) -> str:
        with trio.move_on_after(self.exit_wait):
            await self.exited.wait()
        if self.exited.is_set():
            return f"exited ({self.exit_status()})"
        return f"closed its {what} while still running"

    # -- off move ---------------------------------------------------------

    async def _take_core(self, pace: tuple[float, float] | None = None) -> None:
        if pace is not None:  # frozen until the tick, as a bot process is
            await trio.sleep_until(next_tick(*pace, trio.current_time(), slack=SEND_SLACK))
        self.asked_at.append(trio.current_time())
        if self.frozen:
            self.thaw()

    def _release_core(self, cpu_before: int | None) -> float | None:
        if self.dead is None and not self.ponder:
            self.frozen = True
            self.freezes += 1
        if cpu_before is None:  # pragma: no cover - the fake clock always reads
            return None
        return max(0, self.cpu.ns - cpu_before) / 1e9

    def _cpu_ns(self) -> int | None:
        return self.cpu.ns

    def _runnable(self) -> bool | None:
        return self.thinking

    def thaw(self) -> None:
        """Let the bot run (read, think) again."""
        if self.frozen:
            self.frozen = False
            self.thaws += 1
            self.memory._wake()

    def freezer_state(self) -> str | None:
        """``"frozen"`` or ``"thawed"``."""
        return "frozen" if self.frozen else "thawed"

    def renew_cpu_limit(self) -> None:
        """Counted only (:attr:`cpu_limit_renewals`): no CPU limit in memory."""
        self.cpu_limit_renewals += 1

    # -- the memory bound -------------------------------------------------

    def oom_kill(self, processes: int = 1, *, bot: bool = True) -> None:
        """Count ``processes`` of the bot's processes killed for its memory
        bound (:meth:`take_oom_kills` reports them, as a control group's
        ``oom_kill`` count does) and, with ``bot``, kill the bot itself: it
        then ends ``killed by SIGKILL; out of memory (N of its processes
        killed)``, as a bot process's exit status reads. Without ``bot``
        only a helper process died (the bot plays on)."""
        self.oom_killed += processes
        if bot:
            self._kill(
                f"killed by SIGKILL; out of memory ({self.oom_killed} of its processes killed)"
            )

    def _oom_kills(self) -> int:
        return self.oom_killed

    # -- the end ----------------------------------------------------------

    def _kill(self, how: str) -> None:
        if not self.exited.is_set():
            self._killed = how
            self._bot_scope.cancel()

    def abandon(self, reason: str) -> None:
        """Mark the seat dead and kill the bot (as SIGKILL would)."""
        self._gone(reason)
        self._kill("killed by SIGKILL")

    async def close(self, grace: float = 0.5) -> None:
        """``bye``, up to ``grace`` seconds for the bot to return, then kill it."""
        with trio.CancelScope(shield=True):
            self.thaw()
            if self.dead is None:
                self.notify({"type": "bye"})
                self.flush()
            if not self._out:
                self._input_open = False
                await self.memory.close_input()
            with trio.move_on_after(grace):
                await self.exited.wait()
            self._kill("killed by SIGTERM")
            await self.exited.wait()
            self._cancel.cancel()
            if self.dead is None:
                self.dead = "closed by the referee"
