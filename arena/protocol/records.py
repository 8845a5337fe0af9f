"""Game records: the typed shape of a ``games.jsonl`` line, the one place that
builds each part and the one place that reads a line back.

A line is a :class:`GameRecordJSON` (a ``TypedDict``: the parsed JSON *is*
the typed record, so every reader indexes it as before and mypy checks the
keys). Its parts:

* :class:`HandJSON`, one per hand (a deal, R2): built by :func:`hand_json`
  from the finished :class:`arena.core.rules.Hand`, nothing else;
* :class:`TrickJSON`, one per trick, built by :func:`trick_json`. A trick
  has a second shape, the protocol's, in ``trick`` messages and ``play``
  requests: ``{"leader", "cards": [{"seat", "card"}], "winner", "points"}``
  (:meth:`arena.core.rules.TrickRecord.to_json`); the record keeps the
  shorter ``"cards": ["QS", ...]`` in play order from the leader;
* :class:`FaultJSON`, written and read by :class:`arena.protocol.faults.Fault`;
* :class:`TimingJSON`, each seat's decision times (milliseconds).

:class:`GameRecord` is the record while a game is played (the referee fills
it); :meth:`GameRecord.to_json` writes the line. :func:`read_record` reads
one back: it checks it against :data:`RECORD_SCHEMA` (the fields standings
and reports rely on) and returns it typed. Fields are never renamed or
dropped (readers of old files rely on them); new ones are added at the end.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NotRequired, TypedDict, cast

from arena.core.cards import CARD_NAMES, names_of
from arena.core.rules import Hand, TrickRecord
from arena.protocol.faults import FAULT_KINDS, Fault

#: Version of the output folder's files (``games.jsonl``, ``run.json``,
#: ``results.json``); 2: deals and seeds from a master key.
FORMAT_VERSION: Final = 2


class TrickJSON(TypedDict):
    """One trick of a game record (R10, R11).

    ``leader``: the seat that led it; ``cards``: the four cards in play
    order from the leader (seat ``(leader + i) % 4`` played ``cards[i]``);
    ``winner``: the seat that took it; ``points``: its penalty points.
    """

    leader: int
    cards: list[str]
    winner: int
    points: int


class HandJSON(TypedDict):
    """One hand of a game record.

    ``hand_number`` (1-based); ``deal_seed``: the deal's public name
    (:func:`arena.core.rules.deal_name`, R2); ``direction``: the pass
    direction's word (R3); ``dealt``: each seat's 13 cards before the pass;
    ``passes``: each seat's three passed cards, ``None`` on a hold hand;
    ``tricks``: the 13 tricks; ``raw_points``: points taken (R11, adding to
    26); ``points``: scored after the moon rule (R12); ``moon``: the seat that
    shot the moon or ``None``; ``scores``: the game's totals after the hand (R13).
    """

    hand_number: int
    deal_seed: str
    direction: str
    dealt: list[list[str]]
    passes: list[list[str]] | None
    tricks: list[TrickJSON]
    raw_points: list[int]
    points: list[int]
    moon: int | None
    scores: list[int]


class FaultJSON(TypedDict):
    """One fault, as :meth:`arena.protocol.faults.Fault.to_json` writes it
    (see that class for each field). ``answer``, ``cards`` and ``rule`` are
    missing from records written before they existed."""

    seat: int
    entrant: str
    reason: str
    detail: str
    hand_number: int | None
    trick_number: int | None
    request: str | None
    request_id: int | None
    answer: NotRequired[str | list[str] | None]
    cards: NotRequired[list[str] | None]
    rule: NotRequired[str | None]


class TimingJSON(TypedDict, total=False):
    """One seat's decision times in a game; times in milliseconds.

    ``requests``: decisions asked; ``mean_ms``, ``max_ms``: wall time;
    ``cpu_mean_ms``, ``cpu_max_ms``: CPU time (``None`` where not measured);
    ``wall_ms``, ``cpu_ms``: each decision's, in order; ``oom_kills``:
    processes of the bot killed for its memory bound. A synthetic record
    (:mod:`arena.tournament.synthetic`) has the first three only.
    """

    requests: int
    mean_ms: float
    max_ms: float
    cpu_mean_ms: float | None
    cpu_max_ms: float | None
    wall_ms: list[float]
    cpu_ms: list[float | None]
    oom_kills: int


class GameRecordJSON(TypedDict):
    """One ``games.jsonl`` line: see :class:`GameRecord` for the meaning.

    The schedule's fields (``game_index``, ``game_id``, ``round``, ``table``,
    ``rotation``, ``seats``, ``entrants`` sorted, ``deal_key``,
    ``bot_seeds``, ``target_score``, ``hands_limit``), what was played
    (``deal_seeds``, ``hands``, ``scores``, ``ranks``), what went wrong
    (``faults``, ``struck_out``, ``stderr``), the bots' own names
    (``bot_names``), ``timing``, ``started_at`` (seconds since the epoch),
    ``duration_s`` (seconds) and, only when kept, ``transcripts``.
    """

    game_index: int
    game_id: str
    round: int
    table: int
    rotation: int
    seats: list[str]
    entrants: list[str]
    deal_key: str
    deal_seeds: list[str]
    bot_seeds: list[int]
    target_score: int | None
    hands_limit: int | None
    hands: list[HandJSON]
    scores: list[int]
    ranks: list[int]
    faults: list[FaultJSON]
    struck_out: list[int]
    stderr: list[str]
    bot_names: list[str | None]
    timing: list[TimingJSON]
    started_at: float
    duration_s: float
    transcripts: NotRequired[list[list[dict[str, Any]]]]


# -- building --------------------------------------------------------------------


def trick_json(trick: TrickRecord) -> TrickJSON:
    """The record's form of a completed trick (see :class:`TrickJSON`)."""
    return {
        "leader": trick.leader,
        "cards": [CARD_NAMES[c] for c in trick.cards],
        "winner": trick.winner,
        "points": trick.points,
    }


def hand_json(hand: Hand, deal_seed: str, scores: Sequence[int]) -> HandJSON:
    """The record of a finished hand (see :class:`HandJSON`): its deal as
    dealt (before the pass), the passes, the tricks, the points taken and
    scored after the moon rule (R11, R12), and the game ``scores`` after it.

    Raises:
        ValueError: the hand is not over.
    """
    points, moon = hand.points()
    return {
        "hand_number": hand.hand_number,
        "deal_seed": deal_seed,
        "direction": hand.direction.value,
        "dealt": [names_of(m) for m in hand.dealt],
        "passes": [names_of(m) for m in hand.passes] if hand.passes is not None else None,
        "tricks": [trick_json(t) for t in hand.tricks],
        "raw_points": list(hand.taken_points),
        "points": points,
        "moon": moon,
        "scores": list(scores),
    }


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game of a schedule.

    Attributes:
        game_index: position in the schedule (ratings are applied in this order).
        game_id: a readable unique id such as ``"r1-t0-k2"``.
        round: 1-based round.
        table: index of the table (the group of four entrants).
        rotation: the seat rotation (0..3) of the table.
        seats: the entrant's name at each seat 0..3.
        deal_key: the public name of the game's deals (``"r1-t3"``: every
            rotation of a table in a round plays the same deals); a process
            never plays two games with the same ``deal_key``, and no two games
            with the same ``deal_key`` are played at the same time.
        bot_seeds: the ``seed`` each seat's bot gets in ``game_start``.
        table_key: the secret the deals derive from (32 bytes,
            :meth:`arena.core.keys.MasterKey.table_key` of ``deal_key``): hand ``h``
            is :func:`arena.core.rules.table_deal` ``(table_key, h)`` (R2). Never
            shown to a bot, never in a record.
        target_score: play to this total (R13), or ``None`` with ``hands``.
        hands: play exactly this many hands, or ``None``.
    """

    game_index: int
    game_id: str
    round: int
    table: int
    rotation: int
    seats: tuple[str, str, str, str]
    deal_key: str
    bot_seeds: tuple[int, int, int, int]
    target_score: int | None
    hands: int | None
    table_key: bytes = field(repr=False)

    @classmethod
    def from_json(cls, record: GameRecordJSON, table_key: bytes = b"") -> GameSpec:
        """The spec a game record was played from. The table key is not in
        a record: give it, or the deals must come from the record's ``dealt``."""
        seats = record["seats"]
        seeds = record["bot_seeds"]
        return cls(
            game_index=record["game_index"],
            game_id=record["game_id"],
            round=record["round"],
            table=record["table"],
            rotation=record["rotation"],
            seats=(seats[0], seats[1], seats[2], seats[3]),
            deal_key=record["deal_key"],
            bot_seeds=(seeds[0], seeds[1], seeds[2], seeds[3]),
            target_score=record["target_score"],
            hands=record["hands_limit"],
            table_key=table_key,
        )


@dataclass
class GameRecord:
    """Everything about a finished game: enough to replay it and to rebuild
    every report without replaying. :meth:`to_json` gives the ``games.jsonl`` line.

    ``transcripts`` (only with ``RefereeSettings.transcripts``): per seat, the
    messages of this game in order, each entry one of ``{"t", "sent":
    message}`` (a notification or request written to the bot), ``{"t", "id",
    "received": message}`` (its valid answer to request ``id``, as
    :func:`arena.protocol.codec.transcript_reply` keeps it: the protocol's fields,
    and only the names of any others), ``{"t", "id",
    "fault", "detail"}`` (no valid answer) or ``{"t", "truncated": n}`` (``n``
    entries over the cap were dropped); ``t`` is seconds since the game
    started. An answer or fault entry also has ``cpu_ms``, the CPU its whole
    bot used for that request in milliseconds, where it is measured. The
    handshake and ``bye`` belong to the process, not the game, and are not in it.

    ``timing``: per seat, see :class:`TimingJSON`.
    """

    spec: GameSpec
    hands: list[HandJSON] = field(default_factory=list)
    scores: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    ranks: list[int] = field(default_factory=lambda: [1, 1, 1, 1])
    faults: list[Fault] = field(default_factory=list)
    stderr: list[str] = field(default_factory=lambda: ["", "", "", ""])
    bot_names: list[str | None] = field(default_factory=lambda: [None, None, None, None])
    timing: list[TimingJSON] = field(default_factory=list)
    transcripts: list[list[dict[str, Any]]] | None = None
    struck_out: list[int] = field(default_factory=list)
    started_at: float = 0.0
    duration: float = 0.0

    def to_json(self) -> GameRecordJSON:
        """The record as plain JSON data (one ``games.jsonl`` line)."""
        s = self.spec
        out: GameRecordJSON = {
            "game_index": s.game_index,
            "game_id": s.game_id,
            "round": s.round,
            "table": s.table,
            "rotation": s.rotation,
            "seats": list(s.seats),
            "entrants": sorted(s.seats),
            "deal_key": s.deal_key,
            "deal_seeds": [h["deal_seed"] for h in self.hands],
            "bot_seeds": list(s.bot_seeds),
            "target_score": s.target_score,
            "hands_limit": s.hands,
            "hands": self.hands,
            "scores": self.scores,
            "ranks": self.ranks,
            "faults": [cast(FaultJSON, f.to_json()) for f in self.faults],
            "struck_out": self.struck_out,
            "stderr": self.stderr,
            "bot_names": self.bot_names,
            "timing": self.timing,
            "started_at": self.started_at,
            "duration_s": round(self.duration, 4),
        }
        if self.transcripts is not None:
            out["transcripts"] = self.transcripts
        return out


# -- reading back -------------------------------------------------------------------

_FOUR_INTS: Final = {
    "type": "array",
    "minItems": 4,
    "maxItems": 4,
    "items": {"type": "integer", "minimum": -(10**6), "maximum": 10**6},
}
_SEAT: Final = {"type": "integer", "minimum": 0, "maximum": 3}
_CARD: Final = {"enum": list(CARD_NAMES)}

#: The shape of a game record that standings and reports rely on (a
#: ``games.jsonl`` written by hand or damaged is refused with the field).
RECORD_SCHEMA: Final = {
    "type": "object",
    "required": [
        "game_index",
        "game_id",
        "seats",
        "deal_key",
        "hands",
        "scores",
        "ranks",
        "faults",
    ],
    "properties": {
        "game_index": {"type": "integer", "minimum": 0, "maximum": 10**9},
        "game_id": {"type": "string", "maxLength": 200},
        "round": {"type": "integer"},
        "table": {"type": "integer"},
        "rotation": {"type": "integer"},
        "seats": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "string"}},
        "deal_key": {"type": "string"},
        "scores": _FOUR_INTS,
        "ranks": {**_FOUR_INTS, "items": {"type": "integer", "minimum": 1, "maximum": 4}},
        "hands": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["points", "raw_points", "tricks", "dealt"],
                "properties": {
                    "points": _FOUR_INTS,
                    "raw_points": _FOUR_INTS,
                    "tricks": {"type": "array", "maxItems": 13},
                    "dealt": {"type": "array", "minItems": 4, "maxItems": 4},
                },
            },
        },
        "faults": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["seat", "entrant", "reason"],
                "properties": {
                    "seat": _SEAT,
                    "entrant": {"type": "string"},
                    "reason": {"enum": list(FAULT_KINDS)},
                    "cards": {"type": ["array", "null"], "items": _CARD, "maxItems": 13},
                    "rule": {"type": ["string", "null"], "pattern": "^R[0-9]{1,2}$"},
                },
            },
        },
    },
}


@functools.cache
def _record_validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(RECORD_SCHEMA)


def read_record(data: Any, names: Sequence[str] | None = None) -> GameRecordJSON:
    """A parsed ``games.jsonl`` line checked against :data:`RECORD_SCHEMA`
    and, given the tournament's entrant ``names``, that its seats and faults
    name them; returned typed (the same object).

    Raises:
        ValueError: the first problem, naming the field.
    """
    error = next(iter(_record_validator().iter_errors(data)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the record"
        raise ValueError(f"{where}: {error.message[:200]}")
    record = cast(GameRecordJSON, data)
    if names is not None:
        known = set(names)
        strangers = [n for n in record["seats"] if n not in known]
        strangers += [f["entrant"] for f in record["faults"] if f["entrant"] not in known]
        if strangers:
            raise ValueError(f"seats: {strangers[0][:80]!r} is not an entrant of this tournament")
    return record


def faults_of(record: GameRecordJSON, seat: int | None = None) -> list[Fault]:
    """The record's faults, typed (:meth:`Fault.from_json`), of one ``seat`` or all."""
    return [Fault.from_json(f) for f in record["faults"] if seat is None or f["seat"] == seat]


#: Called with each finished game's record (the journal, the live view, a
#: worker's result list hang here).
RecordSink = Callable[[GameRecordJSON], None]
