"""The referee: plays one game between four seats, one bot process per seat.

The loop has the shape of OpenSpiel's ``evaluate_bots``: deal, the pass (all
four requests at once under one shared deadline, R3/R4), then the tricks. Every
decision has a deadline; a fault makes the referee play the documented default
move for the seat and the game goes on (protocol/README.md, "Faults"). The referee
returns a plain :class:`~arena.protocol.records.GameRecord` and formats nothing.

The game itself (hand after hand, the pass cycle R3, the end and tie-break
R13) is the rules' :class:`arena.core.rules.Game`: the referee only asks the
seats for moves and records them (:func:`arena.protocol.records.hand_json`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from arena.core.cards import CARD_NAMES, names_of, parse_card
from arena.core.rules import (
    Game,
    Hand,
    IllegalMoveError,
    Phase,
    deal_name,
    default_pass,
    default_play,
    pass_target,
    table_deal,
)

# The settings live in a module of their own (no Trio), so the command line's
# --help can show their defaults without loading the referee; named here too.
from arena.game.settings import DEFAULT_STRIKES as DEFAULT_STRIKES
from arena.game.settings import DEFAULT_WALL_CAP as DEFAULT_WALL_CAP
from arena.game.settings import PACE_MARGIN as PACE_MARGIN
from arena.game.settings import RefereeSettings as RefereeSettings
from arena.protocol import codec as protocol
from arena.protocol.faults import Fault, FaultKind
from arena.protocol.messages import pass_reply, play_reply
from arena.protocol.records import GameRecord as GameRecord  # also imported from here
from arena.protocol.records import GameSpec as GameSpec  # also imported from here
from arena.protocol.records import hand_json
from arena.seats.handshake import handshake as handshake  # also imported from here
from arena.seats.seat import Reply, Request, Seat
from arena.seats.wire import next_tick

#: A spectator's event sink (:mod:`arena.live`): called with one small dict
#: per event (``{"event": kind, ...}``, see :meth:`Referee.__init__`). It must
#: return at once and never block: the referee never waits for a view.
EventSink = Callable[[dict[str, Any]], None]

#: Where the referee takes a game's deals: ``hand_number`` (1-based) ->
#: ``(deal_seed, dealt)``, the deal's public name and the four dealt card
#: masks (seats 0..3). The default is the table's deals (R2,
#: :meth:`Referee.deal`); the conformance checker gives constructed
#: deals and ``replay`` recorded ones.
DealSource = Callable[[int], tuple[str, tuple[int, int, int, int]]]

#: Asked after the pass and after every card: ``(hand_number, trick_number)``,
#: ``trick_number`` being ``None`` just after the pass, else the trick the
#: card was played in (1..13); returning ``True`` ends the game there, cleanly
#: (no more requests, no ``hand_end`` or ``game_end`` sent; the record holds
#: the hands finished so far and :attr:`Referee.stopped` is set).
StopHook = Callable[[int, int | None], bool]


def derive_seed(*parts: object) -> int:
    """A 63-bit integer seed from SHA-256 of the parts joined by ``:``."""
    text = ":".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


@dataclass
class SeatSetup:
    """A seat as the referee receives it: its entrant, its process (or ``None``
    when it could not be started or failed the handshake) and that fault."""

    entrant: str
    bot: Seat | None
    startup_fault: Fault | None = None
    startup_stderr: str = ""  # what a bot that failed to start wrote on stderr


@dataclass
class _Seat:
    seat: int
    entrant: str
    bot: Seat | None
    auto: bool = False  # played by default moves to the end of the game
    crashed: bool = False
    strikes: int = 0
    requests: int = 0
    reply_time: float = 0.0
    slowest: float = 0.0
    wall_ms: list[float] = field(default_factory=list)  # each decision's wall time
    cpu_ms: list[float | None] = field(default_factory=list)  # ... and its CPU time


class Referee:
    """Plays one game (:meth:`play`). Create one per game.

    ``events``, if given, is told what happens, as public facts only (never a
    card of a hand in play): ``game_start``, ``deal`` (hand number and pass
    direction, no cards), ``decision`` (``seat``, or ``None`` for the pass,
    ``kind`` and ``deadline``: wall-clock seconds, ``time.time()``),
    ``passed``, ``card`` (``seat``, ``card``), ``trick`` (``winner``,
    ``points``), ``fault`` (``seat``, ``reason``: never the detail, which may
    name cards of the hand), ``hand_end`` and ``game_end``. A sink that
    raises is dropped for the rest of the game.

    ``deals`` (a :data:`DealSource`) replaces the table's deals; ``stop``
    (a :data:`StopHook`) can end the game early and cleanly.
    """

    def __init__(
        self,
        spec: GameSpec,
        seats: Sequence[SeatSetup],
        settings: RefereeSettings,
        events: EventSink | None = None,
        *,
        deals: DealSource | None = None,
        stop: StopHook | None = None,
    ) -> None:
        if len(seats) != 4:
            raise ValueError("a game has four seats (R1)")
        self.spec = spec
        self.settings = settings
        self.record = GameRecord(spec)
        self.seats = [_Seat(i, s.entrant, s.bot, auto=s.bot is None) for i, s in enumerate(seats)]
        for s, setup in zip(self.seats, seats, strict=True):
            if setup.startup_fault is not None:
                self.record.faults.append(setup.startup_fault)
                self.record.stderr[s.seat] = setup.startup_stderr
                s.auto = True
                s.crashed = setup.startup_fault.reason is FaultKind.CRASHED
        # The whole game (R3 pass cycle, R13 end and tie-break): the rules' one loop.
        self.game = Game(spec.target_score, spec.hands, settings.max_tiebreak_hands)
        self.hand: Hand | None = None
        self._trick_views: list[dict[str, Any]] = []  # this hand's completed tricks
        self._tricks_text = "[]"  # ... as JSON text
        self._events = events
        self._deals: DealSource = deals if deals is not None else self.deal
        self._stop = stop
        #: the stop hook ended the game before its end
        self.stopped = False

    def _emit(self, event: dict[str, Any]) -> None:
        """Tell the event sink, if any; it never blocks, and one that fails is dropped."""
        if self._events is not None:
            try:
                self._events(event)
            except Exception:
                self._events = None

    # -- messaging helpers --------------------------------------------------

    def _notify_all(self, build: Any, *, flush: bool = False) -> None:
        for s in self.seats:
            if s.bot is not None and not s.auto:
                s.bot.notify(build(s.seat))
                if flush:
                    s.bot.flush()

    def _fault(
        self,
        s: _Seat,
        reason: FaultKind,
        detail: str,
        request: str,
        rid: int | None,
        answer: str | list[str] | None = None,
        cards: list[str] | None = None,
        rule: str | None = None,
    ) -> None:
        """Record a fault of seat ``s``; ``answer`` is the move of an illegal
        one, ``cards`` its offending cards and ``rule`` the R-id it breaks."""
        hand = self.hand
        trick = hand.trick_number if hand is not None and hand.phase is Phase.PLAY else None
        self._emit({"event": "fault", "seat": s.seat, "reason": reason.value})
        self.record.faults.append(
            Fault(
                s.seat,
                s.entrant,
                reason,
                detail,
                hand.hand_number if hand is not None else None,
                trick,
                request,
                rid,
                answer,
                cards,
                rule,
            )
        )

    def _judge(self, s: _Seat, reply: Reply, kind: str) -> None:
        """Record a faulted reply and decide whether the seat goes on auto."""
        assert reply.fault is not None
        if reply.fault is FaultKind.CRASHED:
            s.auto = True
            if not s.crashed:
                s.crashed = True
                self._fault(s, FaultKind.CRASHED, reply.detail, kind, reply.request_id)
            return
        detail = reply.detail
        if reply.fault is FaultKind.TIMEOUT:
            s.strikes += 1
            if self.settings.strikes and s.strikes >= self.settings.strikes:
                s.auto = True
                self.record.struck_out.append(s.seat)
                if s.bot is not None:
                    s.bot.abandon(f"struck out after {s.strikes} consecutive timeouts")
                detail += (
                    f"; struck out after {s.strikes} consecutive timeouts:"
                    " default moves for the rest of the game"
                )
        self._fault(s, reply.fault, detail, kind, reply.request_id)

    def _count(self, s: _Seat, reply: Reply) -> None:
        s.requests += 1
        s.reply_time += reply.elapsed
        s.slowest = max(s.slowest, reply.elapsed)
        s.wall_ms.append(round(1000 * reply.elapsed, 1))
        s.cpu_ms.append(None if reply.cpu is None else round(1000 * reply.cpu, 1))

    # -- the game -----------------------------------------------------------

    async def play(self) -> GameRecord:
        """Play the game to its end and return the record. Never raises for
        anything a bot does; cancellation propagates (the game is then lost)."""
        spec = self.spec
        self.record.started_at = time.time()
        t0 = trio.current_time()
        for s in self.seats:
            if s.bot is not None:
                if s.bot.stats.transcript is not None:
                    s.bot.stats.transcript = []
                # stderr written since the last game (or since start-up) counts for this one
                s.bot.renew_cpu_limit()
        if self.settings.transcripts:
            for s in self.seats:
                if s.bot is not None:
                    s.bot.stats.transcript = []
        self._emit(
            {
                "event": "game_start",
                "game_id": spec.game_id,
                "game_index": spec.game_index,
                "deal_key": spec.deal_key,
                "seats": list(spec.seats),
                "faults": [f.seat for f in self.record.faults],
            }
        )
        self._notify_all(
            lambda seat: {
                "type": "game_start",
                "game_id": spec.game_id,
                "seat": seat,
                "players": list(spec.seats),
                "target_score": spec.target_score,
                "hands": spec.hands,
                "seed": spec.bot_seeds[seat],
            }
        )
        game = self.game
        while not game.is_over():
            await self._play_hand(game.hand_number + 1)
            if self.stopped:
                self.record.scores = game.scores
                self._finish(t0)
                return self.record
        self.record.scores = game.scores
        self.record.ranks = game.ranks()
        ranks = self.record.ranks
        self._notify_all(
            lambda seat: {
                "type": "game_end",
                "game_id": spec.game_id,
                "scores": game.scores,
                "ranks": ranks,
            },
            flush=True,
        )
        self._finish(t0)
        self._emit({"event": "game_end", "scores": game.scores, "ranks": ranks})
        return self.record

    def _finish(self, t0: float) -> None:
        rec = self.record
        rec.duration = trio.current_time() - t0
        transcripts: list[list[dict[str, Any]]] = []
        for s in self.seats:
            cpu = [c for c in s.cpu_ms if c is not None]
            # Memory kills since the last game's record (or start-up) count for this one.
            oom = s.bot.take_oom_kills() if s.bot is not None else 0
            rec.timing.append(
                {
                    "requests": s.requests,
                    "mean_ms": round(1000 * s.reply_time / s.requests, 3) if s.requests else 0.0,
                    "max_ms": round(1000 * s.slowest, 3),
                    "cpu_mean_ms": round(sum(cpu) / len(cpu), 3) if cpu else None,
                    "cpu_max_ms": max(cpu) if cpu else None,
                    "wall_ms": s.wall_ms,
                    "cpu_ms": s.cpu_ms,
                    "oom_kills": oom,
                }
            )
            if s.bot is not None:
                rec.stderr[s.seat] = s.bot.stderr.take()
                rec.bot_names[s.seat] = s.bot.self_name
                t = s.bot.stats.transcript
                transcripts.append(_relative(_capped(t, self.settings.transcript_cap), t0))
                if t is not None:
                    s.bot.stats.transcript = None
            else:
                transcripts.append([])
        if self.settings.transcripts:
            rec.transcripts = transcripts

    def deal(self, hand_number: int) -> tuple[str, tuple[int, int, int, int]]:
        """The default :data:`DealSource`: the deal's public name
        (:func:`arena.core.rules.deal_name`) and the four dealt card masks of
        hand ``hand_number`` (R2): :func:`arena.core.rules.table_deal` of the
        game's table key. The conformance checker (:mod:`arena.tools.check`)
        and ``replay`` give their own deals (``deals``) instead."""
        return deal_name(self.spec.deal_key, hand_number), table_deal(
            self.spec.table_key, hand_number
        )

    async def _play_hand(self, hand_number: int) -> None:
        deal_seed, dealt = self._deals(hand_number)
        scores_before = self.game.scores
        hand = self.hand = self.game.start_hand(dealt)
        direction = hand.direction.value
        self._emit({"event": "deal", "hand_number": hand_number, "direction": direction})
        self._notify_all(
            lambda seat: {
                "type": "deal",
                "hand_number": hand_number,
                "hand": names_of(dealt[seat]),
                "pass_direction": direction,
                "scores": scores_before,
            }
        )
        if hand.phase is Phase.PASS:
            await self._pass(hand)
            if self._stop is not None and self._stop(hand_number, None):
                self.stopped = True
                return
        self._trick_views = []
        self._tricks_text = "[]"
        while not hand.is_over():
            s = self.seats[hand.turn]
            card = await self._decide_play(s, hand, scores_before)
            trick_number = hand.trick_number
            trick = hand.play_unchecked(card)  # legal: checked by _decide_play
            events = self._events is not None  # build spectator events only for a listener
            if events:
                self._emit({"event": "card", "seat": s.seat, "card": CARD_NAMES[card]})
            if trick is not None:
                if events:
                    self._emit({"event": "trick", "winner": trick.winner, "points": trick.points})
                tj = trick.to_json()
                # Completed tricks go in every later play request: encode each once.
                sep = "," if self._trick_views else ""
                text = protocol.encode_text(tj)
                self._tricks_text = f"{self._tricks_text[:-1]}{sep}{text}]"
                self._trick_views.append(tj)
                msg = {
                    "type": "trick",
                    "hand_number": hand_number,
                    "trick_number": len(hand.tricks),
                    **tj,
                }
                data = protocol.encode(msg)
                for other in self.seats:
                    if other.bot is not None and not other.auto:
                        other.bot.notify(msg, data)
            if self._stop is not None and self._stop(hand_number, trick_number):
                self.stopped = True
                return
        points, moon = self.game.end_hand()
        scores_after = self.game.scores
        self._emit({"event": "hand_end", "points": points, "moon": moon, "scores": scores_after})
        self._notify_all(
            lambda seat: {
                "type": "hand_end",
                "hand_number": hand_number,
                "points": points,
                "moon": moon,
                "scores": scores_after,
            },
            flush=True,
        )
        self.record.hands.append(hand_json(hand, deal_seed, scores_after))

    def _pace_of(self, origin: float) -> tuple[float, float] | None:
        """The ``pace`` argument of a request asked at ``origin``, or ``None``."""
        pace = self.settings.pace
        return (origin, pace) if pace > 0 else None

    async def _deliver(self, origin: float) -> None:
        """Under a pace, wait for the first tick after the decision asked at
        ``origin`` (Trio time) was made (at least one tick after it)."""
        pace = self.settings.pace
        if pace > 0:
            await trio.sleep_until(next_tick(origin, pace, trio.current_time(), first=1))

    async def _pass(self, hand: Hand) -> None:
        chosen: list[int] = [0, 0, 0, 0]
        direction = hand.direction
        origin = trio.current_time()
        paced = self._pace_of(origin)
        wall_cap = self.settings.decision_wall_cap()
        self._emit(
            {
                "event": "decision",
                "seat": None,
                "kind": "pass",
                "deadline": time.time() + self.settings.time_limit,
            }
        )

        async def one(s: _Seat) -> None:
            mask = default_pass(hand.hands[s.seat])
            if s.bot is not None and not s.auto:
                fields = {
                    "hand_number": hand.hand_number,
                    "direction": direction.value,
                    "to": pass_target(s.seat, direction),
                    "hand": names_of(hand.hands[s.seat]),
                }
                # Each bot's clock starts when it gets a core (arena.sandbox.cores), not
                # at a deadline shared by the four (R4 holds: nothing is revealed
                # until all four passes are final).
                reply = await s.bot.request(
                    Request("pass", fields, self.settings.time_limit, pace=paced, wall_cap=wall_cap)
                )
                self._count(s, reply)
                if reply.message is not None:
                    cards = pass_reply(reply.message)["cards"]
                    try:
                        given = 0
                        for name in cards:
                            given |= 1 << parse_card(name)
                        if len(cards) != 3:
                            raise IllegalMoveError(
                                s.seat,
                                "R3",
                                f"a pass is three distinct cards, got {len(cards)} cards",
                            )
                        hand.check_pass(s.seat, given)
                    except IllegalMoveError as exc:
                        self._fault(
                            s,
                            FaultKind.ILLEGAL,
                            f"pass {' '.join(map(str, cards))}: {exc}",
                            "pass",
                            reply.request_id,
                            [str(c) for c in cards],
                            pass_offence(cards, given, hand.dealt[s.seat]),
                            exc.rule,
                        )
                        self._forfeit(s, reply.request_id, "illegal", str(exc), passed=mask)
                    else:
                        mask = given
                        s.strikes = 0
                else:
                    self._judge(s, reply, "pass")
                    if reply.fault is not FaultKind.CRASHED and s.bot is not None:
                        self._forfeit(
                            s,
                            reply.request_id,
                            reply.fault.value if reply.fault else "",
                            reply.detail,
                            passed=mask,
                        )
            chosen[s.seat] = mask

        async with trio.open_nursery() as nursery:
            for s in self.seats:
                nursery.start_soon(one, s)
        await self._deliver(origin)
        # R4: nothing is revealed until all four passes are final.
        hand.apply_passes(chosen)
        self._emit({"event": "passed"})
        for s in self.seats:
            if s.bot is not None and not s.auto:
                received = hand.received_by(s.seat)
                s.bot.notify(
                    {
                        "type": "passed",
                        "hand_number": hand.hand_number,
                        "from": (s.seat - direction.offset) % 4,
                        "received": names_of(received),
                        "hand": names_of(hand.hands[s.seat]),
                    }
                )

    async def _decide_play(self, s: _Seat, hand: Hand, scores: list[int]) -> int:
        """Seat ``s``'s card (legal), asked of its bot or played by default;
        under a pace, returned on the first tick after it is known."""
        origin = trio.current_time()
        card = await self._ask_play(s, hand, scores, origin)
        await self._deliver(origin)
        return card

    async def _ask_play(self, s: _Seat, hand: Hand, scores: list[int], origin: float) -> int:
        legal = hand.legal_mask()
        if s.bot is None or s.auto:
            return default_play(legal)
        if self._events is not None:  # built only for a listener: once per card
            self._emit(
                {
                    "event": "decision",
                    "seat": s.seat,
                    "kind": "play",
                    "deadline": time.time() + self.settings.time_limit,
                }
            )
        view = hand.view(s.seat, include_tricks=False)
        view["game_id"] = self.spec.game_id
        view["scores"] = scores
        reply = await s.bot.request(
            Request(
                "play",
                view,
                self.settings.time_limit,
                encoded=("tricks", list(self._trick_views), self._tricks_text),
                pace=self._pace_of(origin),
                wall_cap=self.settings.decision_wall_cap(),
            )
        )
        self._count(s, reply)
        fallback = default_play(legal)
        if reply.message is not None:
            name = play_reply(reply.message)["card"]
            card = parse_card(name)
            if legal >> card & 1:
                s.strikes = 0
                return card
            rule = None
            try:
                hand.check_play(s.seat, card)
                detail = f"{name} is not legal"  # pragma: no cover - legal says otherwise
            except IllegalMoveError as exc:
                detail = f"played {name}: {exc}; legal: {' '.join(names_of(legal))}"
                rule = exc.rule
            self._fault(
                s,
                FaultKind.ILLEGAL,
                detail,
                "play",
                reply.request_id,
                str(name),
                [CARD_NAMES[card]],
                rule,
            )
            self._forfeit(s, reply.request_id, "illegal", detail, played=fallback)
            return fallback
        self._judge(s, reply, "play")
        if reply.fault is not FaultKind.CRASHED:
            assert reply.fault is not None
            self._forfeit(s, reply.request_id, reply.fault.value, reply.detail, played=fallback)
        return fallback

    def _forfeit(
        self,
        s: _Seat,
        rid: int,
        reason: str,
        detail: str,
        *,
        played: int | None = None,
        passed: int | None = None,
    ) -> None:
        if s.bot is None:
            return
        msg: dict[str, Any] = {
            "type": "forfeit",
            "request_id": rid,
            "reason": reason,
            "detail": detail,
        }
        if played is not None:
            msg["played"] = CARD_NAMES[played]
        if passed is not None:
            msg["passed"] = names_of(passed)
        s.bot.notify(msg)


def pass_offence(cards: Sequence[str], given: int, dealt: int) -> list[str]:
    """The offending cards of an illegal pass (R3), in the order the checks
    find the fault: every card given when there are not three; else the
    cards given twice; else the cards of ``given`` (a mask) not in ``dealt``
    (the seat's dealt hand: received cards cannot be passed on, R4)."""
    if len(cards) != 3:
        return [str(c) for c in cards]
    twice = [c for i, c in enumerate(cards) if c in cards[:i]]
    if twice:
        return list(dict.fromkeys(str(c) for c in twice))
    return names_of(given & ~dealt)


def _capped(entries: list[dict[str, Any]] | None, cap: int) -> list[dict[str, Any]]:
    """The first ``cap`` entries, and a ``truncated`` entry counting the rest."""
    if not entries:
        return []
    if len(entries) <= cap:
        return entries
    return [*entries[:cap], {"t": entries[cap]["t"], "truncated": len(entries) - cap}]


def _relative(entries: list[dict[str, Any]], t0: float) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        e = dict(e)
        e["t"] = round(e["t"] - t0, 4)
        out.append(e)
    return out
