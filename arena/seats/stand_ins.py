"""Seats that are not bot processes, for playing games through the real
:class:`~arena.game.referee.Referee`: scripted seats (the conformance checker's
opponents, the other three seats of a replay), a terminal player (``play
--human``), and a proxy that records what a real bot process was asked and
answered.

The referee talks to a seat through the small surface of
:class:`~arena.seats.process.BotProcess` that it uses: ``request``, ``notify``,
``flush``, ``abandon``, ``renew_cpu_limit``, ``stats.transcript``, ``stderr``,
``self_name`` and ``dead``. :class:`InProcessSeat` implements that surface;
subclasses only decide the moves. Because the same referee code builds every
message, a bot sees exactly what it would see in a tournament.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.core.cards import mask_of_names, names_of
from arena.core.rules import default_pass
from arena.seats.capped import CappedBuffer
from arena.seats.process import BotProcess, Reply

Message = dict[str, Any]


@dataclass
class _SeatStats:
    requests: int = 0
    slowest: float = 0.0
    transcript: list[dict[str, Any]] | None = None


class InProcessSeat:
    """A seat played inside the arena's process. Answers are never faults.

    Subclasses override :meth:`answer` (and :meth:`on_message` to watch the
    notifications). Requests get ids 1, 2, ... like a bot process.

    Args:
        name: the name given in the ``hello`` answer (``self_name``).
    """

    def __init__(self, name: str) -> None:
        self.self_name: str | None = name
        self.dead: str | None = None
        self.stats = _SeatStats()
        self.stderr = CappedBuffer()
        self.games_played: set[str] = set()
        self._next_id = 0

    async def answer(self, request: Message) -> Message:
        """The fields of the answer to ``request`` (a whole request message,
        with ``type``, ``id`` and ``time_ms``): ``{"name": ...}``,
        ``{"cards": [...]}`` or ``{"card": ...}``."""
        raise NotImplementedError

    def on_message(self, message: Message) -> None:
        """Called with every message the referee sends this seat (requests too)."""

    async def request(self, kind: str, fields: Message, time_limit: float, **extra: Any) -> Reply:
        """The :meth:`BotProcess.request` surface: ask :meth:`answer`. Of the
        keyword arguments only ``encoded`` (one more field) matters here."""
        self._next_id += 1
        rid = self._next_id
        message = request_message(kind, rid, fields, time_limit, extra.get("encoded"))
        self.on_message(message)
        start = time.perf_counter()
        answer = await self.answer(message)
        elapsed = time.perf_counter() - start
        self.stats.requests += 1
        return Reply({"type": kind, "id": rid, **answer}, None, "", elapsed, rid)

    def notify(self, message: Message, *_args: Any, **_kwargs: Any) -> None:
        """The :meth:`BotProcess.notify` surface."""
        self.on_message(message)

    def flush(self) -> None:
        """Nothing is buffered."""

    def abandon(self, reason: str) -> None:
        """Mark the seat dead (the referee struck it out)."""
        self.dead = reason

    def renew_cpu_limit(self) -> None:
        """No limits apply in process."""


def request_message(
    kind: str, rid: int, fields: Message, time_limit: float, encoded: Any = None
) -> Message:
    """The whole request message a bot process is sent for
    ``BotProcess.request(kind, fields, time_limit, encoded=...)``."""
    message = {"type": kind, "id": rid, **fields, "time_ms": int(time_limit * 1000)}
    if encoded is not None:
        key, value, _text = encoded
        message[key] = value
    return message


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


@dataclass
class RecordingSeat:
    """A proxy around a :class:`BotProcess` that records every request
    (:class:`Exchange`) and, optionally, overrides the answer the referee sees.

    Every attribute not defined here is the bot process's own.

    Attributes:
        bot: the bot process.
        game: the number of the game being played (set by the caller).
        exchanges: what was asked and answered, in order.
        override: ``(exchange) -> Reply or None``: called after the bot
            answered; a reply returned is what the referee gets instead
            (``replay`` steers a game along its record this way).
    """

    bot: BotProcess
    game: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    override: Callable[[Exchange, Reply], Reply | None] | None = None
    self_name: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "bot":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.bot, name)

    async def request(self, kind: str, fields: Message, time_limit: float, **extra: Any) -> Reply:
        """Forward to the bot (keyword arguments too) and record the exchange."""
        reply = await self.bot.request(kind, fields, time_limit, **extra)
        message = request_message(kind, reply.request_id, fields, time_limit, extra.get("encoded"))
        exchange = Exchange(
            self.game,
            kind,
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
