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


@dataclass(frozen=True, slots=True)
class Request:
    """One request to a seat, passed whole through every seat and wrapper
    (:meth:`Seat.request`): an option is added here and nowhere else.

    Attributes:
        kind: ``"hello"``, ``"pass"`` or ``"play"``.
        fields: the message fields beside ``type``, ``id`` and ``time_ms``.
        time_limit: seconds the bot has, from the request's sending (sent as
            ``time_ms``, milliseconds).
        deadline: the absolute Trio time the reply is due, when several
            requests share one deadline; default the sending + ``time_limit``.
        encoded: ``(key, value, json_text)``: one more field whose JSON text
            is already known (the referee keeps a hand's completed tricks
            encoded instead of encoding them for every request).
        pace: ``(origin, tick)``, Trio time and seconds: the request is sent,
            and the bot thawed, on the first tick ``origin + k * tick`` at or
            after the bot holds its core, so when it is asked does not tell
            it how long others took (``--pace``). ``None``: at once.
        wall_cap: seconds: where the seat has a CPU clock, ``time_limit`` is
            counted in the bot's CPU time, up to ``wall_cap`` of wall time
            (:func:`arena.seats.wire.cpu_deadline`). ``None``: wall time only.
    """

    kind: str
    fields: Message
    time_limit: float
    deadline: float | None = None
    encoded: tuple[str, Any, str] | None = None
    pace: tuple[float, float] | None = None
    wall_cap: float | None = None

    def message(self, rid: int) -> Message:
        """The whole message a bot is sent for this request with id ``rid``
        (``encoded``'s field included, as a value)."""
        message = {"type": self.kind, "id": rid, **self.fields}
        message["time_ms"] = int(self.time_limit * 1000)
        if self.encoded is not None:
            key, value, _text = self.encoded
            message[key] = value
        return message


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
    rules (README, "fair clocks") are the seat's, not the referee's. What
    the referee records of the process behind a seat comes through this
    interface only: CPU time (:attr:`Reply.cpu`), memory kills
    (:meth:`take_oom_kills`), why the bot ended (a crash's
    :attr:`Reply.detail`, such as ``exited (killed by SIGKILL; out of
    memory ...)``); it never sees the sandbox.

    Attributes:
        label: the entrant's name, as faults name the seat.
        self_name: the cleaned name the bot gave in ``hello``, or ``None``.
        dead: why the seat can no longer answer (it crashed, was struck out
            or closed), or ``None``.
        stats: request counters and the transcript (:class:`SeatStats`).
        stderr: what the bot wrote on its standard error since last taken.
        games_played: deal keys of the games played (never two from one deal).
    """

    self_name: str | None

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

    async def request(self, request: Request) -> Reply:
        """Ask ``request`` (a :class:`Request`: its kind, fields, time limit
        and options) and wait for the reply
        (:meth:`arena.seats.wire.WireSeat.request`). Returns the reply or its
        fault; never raises for the bot's behaviour."""
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

    def take_oom_kills(self) -> int:
        """Processes of the bot the kernel killed for its memory bound since
        the last call (each kill is counted once, by the game record that
        takes it: one made between games counts for the next); 0 for seats
        without a memory bound."""
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
