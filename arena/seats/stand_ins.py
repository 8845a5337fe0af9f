"""Seats that are not bot processes, for playing games through the real
:class:`~arena.game.referee.Referee`: scripted seats (the conformance checker's
opponents, the other three seats of a replay), a terminal player (``play
--human``), and a proxy that records what a real bot process was asked and
answered.

The referee talks to a seat through the :class:`~arena.seats.seat.Seat`
interface. :class:`InProcessSeat` implements it for seats played in the
arena's process (subclasses only decide the moves); :class:`SeatProxy`
forwards every member of it to another seat, for wrappers that watch or
steer a seat (:class:`RecordingSeat`). Because the same referee code builds
every message, a bot sees exactly what it would see in a tournament.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from arena.core.cards import mask_of_names, names_of
from arena.core.rules import default_pass
from arena.seats.capped import CappedBuffer
from arena.seats.seat import Message, Reply, Request, Seat, SeatStats

__all__ = [
    "Exchange",
    "InProcessSeat",
    "Message",
    "RecordingSeat",
    "ScriptedSeat",
    "SeatProxy",
    "preference_play",
]


class InProcessSeat:
    """A :class:`~arena.seats.seat.Seat` played inside the arena's process.
    Answers are never faults; it has no CPU clock and is never frozen.

    Subclasses override :meth:`answer` (and :meth:`on_message` to watch the
    notifications). Requests get ids 1, 2, ... like a bot process.

    Args:
        name: the name given in the ``hello`` answer (``self_name``).
    """

    def __init__(self, name: str) -> None:
        self.self_name: str | None = name
        self.label = name
        self.dead: str | None = None
        self.stats = SeatStats()
        self.stderr = CappedBuffer()
        self.games_played: set[str] = set()
        self.cpu_seconds = 0.0
        self._next_id = 0

    async def answer(self, request: Message) -> Message:
        """The fields of the answer to ``request`` (a whole request message,
        with ``type``, ``id`` and ``time_ms``): ``{"name": ...}``,
        ``{"cards": [...]}`` or ``{"card": ...}``."""
        raise NotImplementedError

    def on_message(self, message: Message) -> None:
        """Called with every message the referee sends this seat (requests too)."""

    async def request(self, request: Request) -> Reply:
        """:meth:`Seat.request <arena.seats.seat.Seat.request>`: ask
        :meth:`answer` (the deadline, pace and wall cap do not apply in
        process: the seat's answer is the arena's own)."""
        self._next_id += 1
        rid = self._next_id
        message = request.message(rid)
        self.on_message(message)
        start = time.perf_counter()
        answer = await self.answer(message)
        elapsed = time.perf_counter() - start
        self.stats.requests += 1
        return Reply({"type": request.kind, "id": rid, **answer}, None, "", elapsed, rid)

    def notify(self, message: Message, data: bytes | None = None) -> None:
        """Pass the notification to :meth:`on_message` (``data`` is unused)."""
        self.on_message(message)

    def flush(self) -> None:
        """Nothing is buffered."""

    def abandon(self, reason: str) -> None:
        """Mark the seat dead (the referee struck it out)."""
        self.dead = reason

    def renew_cpu_limit(self) -> None:
        """No limits apply in process."""

    def take_oom_kills(self) -> int:
        """0: no memory bound in process."""
        return 0

    def thaw(self) -> None:
        """Never frozen."""

    def freezer_state(self) -> str | None:
        """``None``: never frozen."""
        return None

    async def close(self, grace: float = 0.5) -> None:
        """Mark the seat closed (nothing to end)."""
        if self.dead is None:
            self.dead = "closed by the referee"


def preference_play(preferences: Sequence[str], legal: Sequence[str]) -> str:
    """The first card of ``preferences`` that is in ``legal``, else ``legal[0]``
    (the referee's default play, protocol/README.md)."""
    allowed = set(legal)
    for card in preferences:
        if card in allowed:
            return card
    return legal[0]


class ScriptedSeat(InProcessSeat):
    """A seat whose moves are given as data.

    Args:
        name: its self-reported name.
        passes: hand number -> the three cards it passes; hands not listed
            pass the referee's default pass (the three highest cards).
        plays: a function ``(play request) -> card``; default: the first
            legal card (the referee's default play).
    """

    def __init__(
        self,
        name: str,
        passes: Mapping[int, Sequence[str]] | None = None,
        plays: Callable[[Message], str] | None = None,
    ) -> None:
        super().__init__(name)
        self.passes = passes or {}
        self.plays = plays

    async def answer(self, request: Message) -> Message:
        kind = request["type"]
        if kind == "hello":
            return {"name": self.self_name or "scripted"}
        if kind == "pass":
            given = self.passes.get(request["hand_number"])
            if given is None:
                given = names_of(default_pass(mask_of_names(request["hand"])))
            return {"cards": list(given)}
        card = self.plays(request) if self.plays is not None else request["legal"][0]
        return {"card": card}


@dataclass
class Exchange:
    """One request to a real bot and its outcome.

    Attributes:
        game: 1-based number of the game in this process (0 for the handshake).
        kind: ``hello``, ``pass`` or ``play``.
        request: the whole request message as sent (with ``id`` and ``time_ms``).
        reply: the bot's schema-valid answer, or ``None`` on a fault.
        fault: ``None`` or the fault's reason (``timeout``, ``malformed``,
            ``crashed``; ``illegal`` is filled in from the referee's record).
        detail: the fault's detail.
        elapsed: seconds from sending the request to the answer or fault.
    """

    game: int
    kind: str
    request: Message
    reply: Message | None
    fault: str | None
    detail: str
    elapsed: float

    @property
    def hand(self) -> int | None:
        """The hand number of a pass or play request."""
        return self.request.get("hand_number")

    @property
    def trick(self) -> int | None:
        """The trick number of a play request."""
        return self.request.get("trick_number")

    @property
    def request_id(self) -> int:
        """The request's ``id``."""
        return int(self.request["id"])

    def where(self) -> str:
        """Where the request was, e.g. ``"game 1 hand 2 trick 5 play"``."""
        if self.kind == "hello":
            return "handshake (hello)"
        parts = [f"game {self.game}"] if self.game > 1 else []  # most scenarios have one
        parts.append(f"hand {self.hand}")
        if self.kind == "play":
            parts.append(f"trick {self.trick}")
        parts.append(f"{self.kind} request {self.request_id}")
        return " ".join(parts)


class SeatProxy:
    """A :class:`~arena.seats.seat.Seat` that forwards every member to the
    seat ``inner``; subclasses override what they watch or steer.

    Args:
        inner: the wrapped seat (a bot process, or any seat).
    """

    def __init__(self, inner: Seat) -> None:
        self.inner = inner

    @property
    def label(self) -> str:
        """The wrapped seat's label."""
        return self.inner.label

    @property
    def self_name(self) -> str | None:
        """The wrapped seat's self-reported name (set by the handshake)."""
        return self.inner.self_name

    @self_name.setter
    def self_name(self, value: str | None) -> None:
        self.inner.self_name = value

    @property
    def dead(self) -> str | None:
        """Why the wrapped seat can no longer answer, or ``None``."""
        return self.inner.dead

    @property
    def stats(self) -> SeatStats:
        """The wrapped seat's counters and transcript."""
        return self.inner.stats

    @property
    def stderr(self) -> CappedBuffer:
        """The wrapped seat's stderr."""
        return self.inner.stderr

    @property
    def games_played(self) -> set[str]:
        """The wrapped seat's deal keys played."""
        return self.inner.games_played

    @property
    def cpu_seconds(self) -> float:
        """The wrapped seat's CPU clock (seconds)."""
        return self.inner.cpu_seconds

    def notify(self, message: Message, data: bytes | None = None) -> None:
        """Forward."""
        self.inner.notify(message, data)

    def flush(self) -> None:
        """Forward."""
        self.inner.flush()

    async def request(self, request: Request) -> Reply:
        """Forward."""
        return await self.inner.request(request)

    def abandon(self, reason: str) -> None:
        """Forward."""
        self.inner.abandon(reason)

    def renew_cpu_limit(self) -> None:
        """Forward."""
        self.inner.renew_cpu_limit()

    def take_oom_kills(self) -> int:
        """Forward."""
        return self.inner.take_oom_kills()

    def thaw(self) -> None:
        """Forward."""
        self.inner.thaw()

    def freezer_state(self) -> str | None:
        """Forward."""
        return self.inner.freezer_state()

    async def close(self, grace: float = 0.5) -> None:
        """Forward."""
        await self.inner.close(grace)


class RecordingSeat(SeatProxy):
    """A proxy around a seat (a bot process) that records every request
    (:class:`Exchange`) and, optionally, overrides the answer the referee sees.

    Args:
        bot: the wrapped seat (:attr:`SeatProxy.inner`).
        override: ``(exchange, reply) -> Reply or None``: called after the
            bot answered; a reply returned is what the referee gets instead
            (``replay`` steers a game along its record this way).

    Attributes:
        game: the number of the game being played (set by the caller).
        exchanges: what was asked and answered, in order.
    """

    def __init__(
        self, bot: Seat, override: Callable[[Exchange, Reply], Reply | None] | None = None
    ) -> None:
        super().__init__(bot)
        self.game = 0
        self.exchanges: list[Exchange] = []
        self.override = override

    async def request(self, request: Request) -> Reply:
        """Forward to the bot and record the exchange."""
        reply = await self.inner.request(request)
        message = request.message(reply.request_id)
        exchange = Exchange(
            self.game,
            request.kind,
            message,
            reply.message,
            reply.fault.value if reply.fault else None,
            reply.detail,
            reply.elapsed,
        )
        self.exchanges.append(exchange)
        if self.override is not None:
            steered = self.override(exchange, reply)
            if steered is not None:
                return steered
        return reply
