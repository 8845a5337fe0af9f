"""Public table states from the referee's events, sent to the live view.

A :class:`TableState` folds one game's events (:class:`arena.game.referee.Referee`,
``events``) into what a spectator may see from nobody's seat: the cards
played to the current trick, tricks and points taken this hand, scores, how
many cards each seat holds, whose turn it is and until when, and faults (seat
and reason only). It never holds a card of a hand.

A :class:`LiveFeed` gives each game a sink (:meth:`LiveFeed.sink`) and sends
the latest state of every table that changed, at most every
:data:`FLUSH_INTERVAL` seconds (:meth:`LiveFeed.run`, a Trio task beside the
games), with ``put_nowait`` on a bounded ``multiprocessing`` queue: when the
view lags and the queue is full the state stays pending and the next flush
sends the newest one, so the referee never waits and the view always ends on
the latest state.
"""

from __future__ import annotations

import functools
import queue as queue_module
import time
from collections.abc import Sequence
from typing import Any, Final

import trio

from arena.game.referee import EventSink, GameSpec
from arena.protocol.records import GameRecordJSON

#: Seconds between two sends of a table's state (at most ten a second).
FLUSH_INTERVAL: Final = 0.1
#: Faults kept in a table's state (the newest).
FAULTS_SHOWN: Final = 8
#: Room of the queue from the game processes to the view, in table states.
QUEUE_SIZE: Final = 1000


def _start_state(
    game_id: str, game_index: int, deal_key: str, seats: Sequence[str]
) -> dict[str, Any]:
    """A game's state before its first deal (see :class:`TableState`)."""
    return {
        "game_id": game_id,
        "game_index": game_index,
        "deal_key": deal_key,
        "seats": list(seats),
        "hand": 0,
        "direction": None,
        "phase": "start",
        "trick": [],
        "trick_winner": None,
        "tricks": [0, 0, 0, 0],
        "points": [0, 0, 0, 0],
        "scores": [0, 0, 0, 0],
        "held": [0, 0, 0, 0],
        "turn": None,
        "kind": None,
        "deadline": None,
        "faults": [],
        "fault_counts": [0, 0, 0, 0],
        "updated": time.time(),
    }


class TableState:
    """The public state of one game in play; see the module docstring.

    :meth:`to_json` gives ``{"game_id", "game_index", "deal_key", "seats"
    (four entrant names), "hand" (hand number, 0 before the first deal),
    "direction" (pass direction), "phase" ("start", "pass", "play",
    "over"), "trick" ([seat, card] in play order), "trick_winner" (seat of
    the completed trick shown, or None), "tricks" (tricks taken per seat this
    hand), "points" (points taken per seat this hand, before the moon rule),
    "scores" (game scores before this hand's), "held" (cards per seat),
    "turn" (seat, or None during the pass and between hands), "kind"
    ("pass" or "play"), "deadline" (wall-clock seconds, ``time.time()``, or
    None), "faults" ([[seat, reason, hand], ...] newest last, at most
    :data:`FAULTS_SHOWN`), "fault_counts" (per seat), "updated" (wall-clock
    seconds)}``.
    """

    def __init__(self, game: GameSpec) -> None:
        self.game_id = game.game_id
        self.state = _start_state(game.game_id, game.game_index, game.deal_key, game.seats)

    @classmethod
    def from_record(cls, record: GameRecordJSON) -> TableState:
        """The public end state of a finished game from its record (a game
        played on a Dask worker sends no events here): phase ``"over"``, the
        hands played, the final scores, every seat holding no card, the
        faults (seat, reason, hand) and their counts per seat; no card of
        a hand. Keys missing from the record keep their start values."""
        table = cls.__new__(cls)
        table.game_id = str(record["game_id"])
        s = table.state = _start_state(
            table.game_id, int(record["game_index"]), str(record["deal_key"]), record["seats"]
        )
        faults: list[list[Any]] = []
        counts = [0, 0, 0, 0]
        for f in record.get("faults", []):
            seat = int(f["seat"])
            faults.append([seat, str(f["reason"]), int(f.get("hand_number") or 0)])
            counts[seat] += 1
        s.update(
            hand=len(record.get("hands", [])),
            phase="over",
            scores=[int(x) for x in record.get("scores", [0, 0, 0, 0])],
            faults=faults[-FAULTS_SHOWN:],
            fault_counts=counts,
        )
        return table

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one referee event into the state (unknown kinds are ignored)."""
        s = self.state
        kind = event.get("event")
        if kind == "game_start":
            for seat in event.get("faults", []):
                s["fault_counts"][seat] += 1
                s["faults"].append([seat, "startup", 0])
        elif kind == "deal":
            s.update(
                hand=event["hand_number"],
                direction=event["direction"],
                phase="pass" if event["direction"] != "hold" else "play",
                trick=[],
                trick_winner=None,
                tricks=[0, 0, 0, 0],
                points=[0, 0, 0, 0],
                held=[13, 13, 13, 13],
                turn=None,
                deadline=None,
            )
        elif kind == "decision":
            s.update(turn=event["seat"], kind=event["kind"], deadline=event["deadline"])
        elif kind == "passed":
            s.update(phase="play", turn=None, deadline=None)
        elif kind == "card":
            if s["trick_winner"] is not None or len(s["trick"]) >= 4:
                s["trick"] = []
                s["trick_winner"] = None
            seat = event["seat"]
            s["trick"].append([seat, event["card"]])
            s["held"][seat] = max(0, s["held"][seat] - 1)
            s["turn"] = (seat + 1) % 4 if len(s["trick"]) < 4 else None
            s["deadline"] = None
        elif kind == "trick":
            winner = event["winner"]
            s["trick_winner"] = winner
            s["tricks"][winner] += 1
            s["points"][winner] += event["points"]
            s["turn"] = winner
        elif kind == "fault":
            seat = event["seat"]
            s["fault_counts"][seat] += 1
            s["faults"] = [*s["faults"], [seat, event["reason"], s["hand"]]][-FAULTS_SHOWN:]
        elif kind == "hand_end":
            s.update(scores=list(event["scores"]), turn=None, deadline=None)
        elif kind == "game_end":
            s.update(scores=list(event["scores"]), phase="over", turn=None, deadline=None)
        s["updated"] = time.time()

    def to_json(self) -> dict[str, Any]:
        """A copy of the state (see the class docstring)."""
        s = self.state
        return {
            **s,
            "trick": [list(p) for p in s["trick"]],
            "faults": [list(f) for f in s["faults"]],
            **{k: list(s[k]) for k in ("tricks", "points", "scores", "held", "fault_counts")},
        }


class LiveFeed:
    """Sends the latest public state of each table in play to the view.

    Args:
        channel: a bounded queue (``multiprocessing`` ``Queue(maxsize)``)
            the view reads; only ``put_nowait`` is called on it.
        interval: seconds between flushes (:data:`FLUSH_INTERVAL`).
    """

    def __init__(self, channel: Any, interval: float = FLUSH_INTERVAL) -> None:
        self.channel = channel
        self.interval = interval
        self._dirty: dict[str, TableState] = {}
        self.dropped = 0  # flushes that found the queue full

    def sink(self, game: GameSpec) -> EventSink:
        """The event sink of one game: folds its events, never blocks."""
        return functools.partial(self._on_event, TableState(game))

    def _on_event(self, table: TableState, event: dict[str, Any]) -> None:
        table.apply(event)
        self._dirty[table.game_id] = table

    def finished(self, record: GameRecordJSON) -> None:
        """Show a game played elsewhere (a Dask worker) when it is over: its
        end state (:meth:`TableState.from_record`) sent at the next flush,
        as a game played here ends. Never blocks."""
        table = TableState.from_record(record)
        self._dirty[table.game_id] = table

    def flush(self) -> None:
        """Send every changed table's state; a full queue keeps them for the next flush."""
        pending = self._dirty
        self._dirty = {}
        for game_id, table in pending.items():
            try:
                self.channel.put_nowait(table.to_json())
            except queue_module.Full:
                self.dropped += 1
                self._dirty.setdefault(game_id, table)
            except (OSError, ValueError):  # the view is gone (queue closed)
                return

    async def run(self) -> None:
        """Flush every ``interval`` seconds until cancelled (then once more)."""
        try:
            while True:
                await trio.sleep(self.interval)
                self.flush()
        finally:
            self.flush()
