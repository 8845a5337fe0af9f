"""What the referee needs of a seat, and what a seat needs of the bytes
between it and a bot: the :class:`Seat` and :class:`Transport` interfaces.

A **seat** is one player of a game as the referee sees it: it is sent
notifications (``game_start``, ``deal``, ``trick``, ...), asked requests
(``hello``, ``pass``, ``play``) under a time limit, and answers each with a
:class:`Reply` that carries either a schema-valid message or a
:class:`~arena.protocol.faults.FaultKind`; it never raises for anything the
bot does. Three kinds exist: a bot process (:class:`arena.seats.process.BotProcess`,
JSON lines over pipes), a bot in memory (:class:`arena.seats.memory.MemorySeat`,
the same JSON lines over an in-memory transport, for tests under Trio's mock
clock) and stand-ins played in the arena's process
(:mod:`arena.seats.stand_ins`: scripted seats, the terminal player, a
recorder around another seat).

A **transport** carries bytes only: the protocol (line framing, the 64 KiB
line cap, ids, unsolicited lines, timeouts) is judged once, by
:class:`arena.seats.wire.WireSeat`, whatever the transport, so a fault shown
through the in-memory transport is the fault a process would get.

Times are in seconds unless a name says ``_ms`` (milliseconds) or ``_ns``
(nanoseconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from arena.protocol.faults import FaultKind
from arena.seats.capped import CappedBuffer

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """The outcome of one request.

    Attributes:
        message: the bot's valid reply (schema-checked), or ``None`` on a fault.
        fault: ``None``, or the fault (timeout, malformed or crashed; the
            referee judges ``illegal`` itself).
        detail: for a fault, what happened.
        elapsed: seconds from sending the request to the reply or the fault
            (the clock starts when the bot holds a core and is thawed).
        request_id: the id of the request.
        cpu: CPU seconds the whole bot (its control group, or the fake CPU
            clock of an in-memory bot) used meanwhile, or ``None`` where that
            is not measured.
    """

    message: dict[str, Any] | None
    fault: FaultKind | None
    detail: str
    elapsed: float
    request_id: int
    cpu: float | None = None


@dataclass
class SeatStats:
    """Counters a seat keeps across games.

    Attributes:
        requests: requests answered or faulted so far.
        slowest: seconds of the slowest valid reply so far.
        transcript: the messages of the current game, when the referee keeps
            one (``{"t": trio time, "sent": message}``, ``{"t", "id",
            "received" | "fault", "detail", "cpu_ms"}``), else ``None``.
    """

    requests: int = 0
    slowest: float = 0.0
    transcript: list[dict[str, Any]] | None = field(default=None)


class Seat(Protocol):
    """What the referee (:mod:`arena.game.referee`) needs of a seat.

    Off move a seat keeps its bot frozen (a bot process's control group, an
    in-memory bot's flag), unless pondering is allowed: each request waits
    for a core, thaws the bot, starts the clock, and freezes it again once
    answered; :meth:`thaw` lets a frozen bot read a last message. The
    per-seat CPU clock charges each request the CPU its bot used meanwhile
    (:attr:`Reply.cpu`, summed in :attr:`cpu_seconds`); the fair-clock
    rules (README, "fair clocks") are the seat's, not the referee's.

    Attributes:
        label: the entrant's name, as faults name the seat.
        self_name: the cleaned name the bot gave in ``hello``, or ``None``.
        dead: why the seat can no longer answer (it crashed, was struck out
            or closed), or ``None``.
        stats: request counters and the transcript (:class:`SeatStats`).
        stderr: what the bot wrote on its standard error since last taken.
        games_played: deal keys of the games played (never two from one deal).
        oom_reported: processes the kernel killed for the bot's memory bound
            that game records already counted (0 for seats without a group).
    """

    self_name: str | None
    oom_reported: int

    @property
    def label(self) -> str:
        """The entrant's name, as faults name the seat."""
        ...

    @property
    def dead(self) -> str | None:
        """Why the seat can no longer answer, or ``None``."""
        ...

    @property
    def stats(self) -> SeatStats:
        """Request counters and the transcript."""
        ...

    @property
    def stderr(self) -> CappedBuffer:
        """What the bot wrote on its standard error since last taken."""
        ...

    @property
    def games_played(self) -> set[str]:
        """Deal keys of the games played."""
        ...

    def notify(self, message: Message, data: bytes | None = None) -> None:
        """Queue a notification (no ``id``, no answer). Never blocks.

        ``data`` is ``message`` already encoded (one JSON line), when the same
        notification goes to several seats."""
        ...

    def flush(self) -> None:
        """Deliver queued notifications now as far as the bot takes them. Never blocks."""
        ...

    async def request(
        self,
        kind: str,
        fields: Message,
        time_limit: float,
        *,
        deadline: float | None = None,
        encoded: tuple[str, Any, str] | None = None,
        pace: tuple[float, float] | None = None,
        wall_cap: float | None = None,
    ) -> Reply:
        """Ask ``kind`` (``hello``, ``pass``, ``play``) with ``fields`` and
        ``time_limit`` seconds to answer (sent as ``time_ms``); ``deadline``
        (Trio time) overrides now + ``time_limit``; ``encoded`` is
        ``(key, value, json_text)``, one more field already encoded;
        ``pace`` is ``(origin, tick)`` (Trio time, seconds): send the request,
        and thaw the bot, on the first tick ``origin + k * tick`` at or after
        it holds a core (``--pace``); ``wall_cap`` (seconds) counts
        ``time_limit`` in the bot's CPU time where the seat has a CPU clock,
        up to ``wall_cap`` of wall time (:meth:`arena.seats.wire.WireSeat.request`).
        Returns the reply or its fault; never raises for the bot's behaviour."""
        ...

    def abandon(self, reason: str) -> None:
        """Stop using the seat now (struck out): mark it dead and stop the
        bot's CPU use; :meth:`close` still ends it."""
        ...

    def renew_cpu_limit(self) -> None:
        """Give the bot a fresh per-game CPU allowance (before each game)."""
        ...

    def thaw(self) -> None:
        """Let a bot frozen off move run again (to read a last message such
        as ``bye``); it stays so until its next request ends."""
        ...

    def freezer_state(self) -> str | None:
        """``"frozen"``, ``"freezing"`` or ``"thawed"``; ``None`` where the
        seat is never frozen."""
        ...

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds charged to this seat's requests so far (the per-seat
        CPU clock: control group or fake clock; 0.0 where not measured)."""
        ...

    async def close(self, grace: float = 0.5) -> None:
        """Say ``bye`` and end the bot, giving it ``grace`` seconds to exit."""
        ...


class Transport(Protocol):
    """The bytes between a :class:`~arena.seats.wire.WireSeat` and its bot:
    the arena writes JSON lines to the bot's input and reads its output.

    A transport never judges: lines, the 64 KiB cap and faults are the
    seat's. Implementations: the pipes of a bot process
    (:class:`arena.seats.process.PipeTransport`) and memory
    (:class:`arena.seats.memory.MemoryTransport`).
    """

    def write_some(self, data: bytes | bytearray) -> int:
        """Write a prefix of ``data`` without waiting; return how many bytes
        were taken.

        Raises:
            BlockingIOError: the bot's input is full (or return 0).
            OSError: the bot's input is closed (it closed it or exited).
        """
        ...

    async def wait_writable(self) -> None:
        """Wait until the bot's input can take bytes again.

        Raises:
            OSError or trio.ClosedResourceError: the input is closed.
        """
        ...

    def read_now(self, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` of the bot's output without waiting: ``None``
        when nothing is there now, ``b""`` at the end of the output."""
        ...

    async def wait_readable(self) -> None:
        """Wait until the bot's output holds bytes or reached its end (then
        :meth:`read_now` returns them, or ``b""``). Returns at once, without
        a checkpoint, when that is already so.

        Raises:
            trio.BrokenResourceError, trio.ClosedResourceError or OSError:
                the output is broken or closed (the seat takes any as its end).
        """
        ...

    async def close_input(self) -> None:
        """Close the bot's input (it then reads end of input). Idempotent."""
        ...
