"""What the pages show of one game record: the moves the referee made for a
seat (default moves), where a fault happened in the replay player, the
player's data (``replay.js``), each hand's replay rows, a seat's stderr
excerpts, and the record with its cards hidden while its deal is still to be
played elsewhere (R2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, TypedDict, cast

from markupsafe import Markup

from arena.protocol.codec import error_excerpt, visible_text
from arena.protocol.records import FaultJSON, GameRecordJSON
from arena.report.html import DEFAULT_MARK, cards_html, tricks_html
from arena.results import stats

#: Receiver offset of each pass direction (R3).
PASS_OFFSETS: Final = {"left": 1, "right": 3, "across": 2, "hold": 0}


class ReplayHandJSON(TypedDict):
    """One hand as the replay player reads it (see :func:`replay_data`)."""

    n: int
    dir: str
    dealt: list[list[str]]
    passes: list[list[str]] | None
    tricks: list[list[int | list[str]]]  # [leader, cards in play order, winner, points]
    points: list[int]
    moon: int | None
    scores: list[int]


class ReplayFaultJSON(TypedDict):
    """One fault as the replay player reads it (see :func:`replay_data`)."""

    seat: int
    reason: str
    request: str | None
    detail: str
    at: tuple[int, int, int] | None
    out: str | None


class ReplayAutoJSON(TypedDict):
    """The default moves: ``plays`` as ``[hand, trick, seat]``, ``passes`` as ``[hand, seat]``."""

    plays: list[list[int]]
    passes: list[list[int]]


class ReplayDataJSON(TypedDict):
    """A game as the replay player (``replay.js``) reads it (:func:`replay_data`)."""

    seats: list[str]
    hands: list[ReplayHandJSON]
    faults: list[ReplayFaultJSON]
    auto: ReplayAutoJSON


class FaultViewJSON(FaultJSON):
    """A recorded fault with, for a crash, the start and the end of the error
    in the seat's stderr (:func:`fault_view`)."""

    stderr_error: list[str]


def seat_out(f: FaultJSON) -> str | None:
    """Why a fault makes every later move of its seat in the game a default
    move (protocol: "Faults"): ``"failed its handshake"`` (a fault on the
    ``hello`` request), ``"crashed"``, ``"struck out"`` (the timeout that
    reached the strike limit); ``None`` for a fault that costs one move."""
    if f.get("request") == "hello":
        return "failed its handshake"
    if f["reason"] == "crashed":
        return "crashed"
    if f["reason"] == "timeout" and "; struck out after" in str(f.get("detail", "")):
        return "struck out"
    return None


def default_moves(
    rec: GameRecordJSON,
) -> tuple[dict[int, frozenset[tuple[int, int]]], set[tuple[int, int]]]:
    """The moves the referee made for a seat in a game (protocol: "Faults"):
    ``(plays, passes)``, ``plays`` by hand number the ``(trick, seat)`` pairs,
    ``passes`` the ``(hand, seat)`` pairs. A timeout, malformed or illegal
    answer makes that one move a default; a crash, a strike-out or a failed
    handshake makes every later move of the seat in the game one too."""
    hands = rec.get("hands") or []
    plays: dict[int, set[tuple[int, int]]] = {}
    passes: set[tuple[int, int]] = set()
    auto_from: dict[int, tuple[int, int]] = {}  # seat -> (hand, trick; 0 = the pass)
    for f in rec.get("faults") or []:
        seat, hand, trick = int(f["seat"]), f.get("hand_number"), f.get("trick_number")
        where = (int(hand or 0), int(trick or 0))
        if seat_out(f) is not None:
            if seat not in auto_from or where < auto_from[seat]:
                auto_from[seat] = where
        elif hand is not None and f.get("request") == "pass":
            passes.add((int(hand), seat))
        elif hand is not None and trick is not None:
            plays.setdefault(int(hand), set()).add((int(trick), seat))
    for seat, start in auto_from.items():
        for h in hands:
            number = int(h["hand_number"])
            if h.get("passes") is not None and (number, 0) >= start:
                passes.add((number, seat))
            for t in range(1, len(h["tricks"]) + 1):
                if (number, t) >= start:
                    plays.setdefault(number, set()).add((t, seat))
    return {h: frozenset(v) for h, v in plays.items()}, passes


def fault_moment(f: FaultJSON, rec: GameRecordJSON) -> tuple[int, int, int] | None:
    """Where a fault happened in the replay player: ``(hand number, trick,
    card)``, the player's position (``replay.js``): trick 0 card 0 is a hand's
    deal, trick 0 card 1 its pass (R3), trick 1..13 card 1..4 the card the
    seat played (its place in the trick from the leader). A fault before the
    first deal (a failed handshake) is placed at the first hand's deal; a
    fault in a hand the record does not hold, or a game without hands, has
    ``None``."""
    hands = rec.get("hands") or []
    if not hands:
        return None
    number = f.get("hand_number")
    if number is None:
        return (int(hands[0]["hand_number"]), 0, 0)
    hand = next((h for h in hands if int(h["hand_number"]) == int(number)), None)
    if hand is None:
        return None
    trick = f.get("trick_number")
    if f.get("request") == "pass":
        offset = PASS_OFFSETS.get(hand.get("direction", "hold"), 0)
        return (int(number), 0, 1 if offset and hand.get("passes") is not None else 0)
    tricks = hand.get("tricks") or []
    if trick is None or not tricks:
        return (int(number), 0, 0)
    t = max(1, min(int(trick), len(tricks)))
    played = tricks[t - 1]
    place = (int(f["seat"]) - int(played["leader"])) % 4 + 1
    return (int(number), t, min(place, len(played["cards"])))


def moment_fragment(at: tuple[int, int, int], seat: int | None) -> str:
    """The URL fragment that opens a replay's player at a moment:
    ``#h=HAND&t=TRICK&c=CARD&seat=SEAT`` (``seat=open``: all hands open)."""
    h, t, c = at
    return f"#h={h}&t={t}&c={c}&seat={'open' if seat is None else int(seat)}"


def replay_data(rec: GameRecordJSON) -> ReplayDataJSON:
    """The game as the replay player (``replay.js``) reads it, JSON-ready:
    ``seats`` (entrant names, seats 0..3), ``hands`` (each ``n`` its number,
    ``dir`` its pass direction, ``dealt`` and ``passes`` four card lists each,
    ``passes`` ``None`` on a hold hand, ``tricks`` ``[leader, cards in play
    order, winner, points]``, ``points`` each seat's points of the hand after
    the moon rule R12, ``moon`` the seat that shot the moon or ``None``,
    ``scores`` the game's running totals after the hand), ``faults``
    (``seat``, ``reason``, ``request``, ``detail``, ``at`` from
    :func:`fault_moment`, ``out`` from :func:`seat_out`) and ``auto``, the default
    moves of :func:`default_moves` (``plays`` as ``[hand, trick, seat]``,
    ``passes`` as ``[hand, seat]``). Names and details are bot text: embed
    only through :func:`json_script`."""
    plays, passes = default_moves(rec)
    hands: list[ReplayHandJSON] = []
    for hand in rec.get("hands") or []:
        hands.append(
            {
                "n": int(hand["hand_number"]),
                "dir": str(hand.get("direction", "hold")),
                "dealt": hand.get("dealt") or [[], [], [], []],
                "passes": hand.get("passes"),
                "tricks": [
                    [int(t["leader"]), list(t["cards"]), int(t["winner"]), int(t["points"])]
                    for t in hand["tricks"]
                ],
                "points": [int(x) for x in hand.get("points") or [0, 0, 0, 0]],
                "moon": None if (moon := hand.get("moon")) is None else int(moon),
                "scores": [int(x) for x in hand.get("scores") or [0, 0, 0, 0]],
            }
        )
    return {
        "seats": [str(n) for n in rec["seats"]],
        "hands": hands,
        "faults": [
            {
                "seat": int(f["seat"]),
                "reason": str(f["reason"]),
                "request": f.get("request"),
                "detail": str(f.get("detail", "")),
                "at": fault_moment(f, rec),
                "out": seat_out(f),
            }
            for f in rec.get("faults") or []
        ],
        "auto": {
            "plays": sorted([h, t, s] for h, pairs in plays.items() for t, s in pairs),
            "passes": sorted([h, s] for h, s in passes),
        },
    }


def stderr_last_line(rec: GameRecordJSON, seat: int, limit: int = 200) -> str:
    """The last non-blank line a seat wrote on stderr in a game (cut to
    ``limit`` characters, invisible characters escaped), or ``""``."""
    text = (rec.get("stderr") or [""] * 4)[seat] or ""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    last = visible_text(lines[-1].strip())
    return last if len(last) <= limit else last[: limit - 3] + "..."


def stderr_error(rec: GameRecordJSON, seat: int) -> list[str]:
    """Where a seat's crash is explained in its stderr of a game: the first
    lines of the error's report and its last lines
    (:func:`arena.protocol.codec.error_excerpt`), or ``[]``."""
    return error_excerpt((rec.get("stderr") or [""] * 4)[seat] or "", width=200)


def fault_view(f: FaultJSON, rec: GameRecordJSON) -> FaultViewJSON:
    """A fault for the pages: with ``stderr_error``, for a crash, the start
    and the end of the error in the seat's stderr (:func:`stderr_error`:
    the cause and the last words), else ``[]``."""
    shown = stderr_error(rec, int(f["seat"])) if f["reason"] == "crashed" else []
    return {**f, "stderr_error": shown}


# -- deals still to be played ----------------------------------------------------------


def hidden_deals(
    settings: Mapping[str, Any], records: Sequence[GameRecordJSON], games_total: int
) -> set[str]:
    """Deal keys whose cards the report must not show yet: in a run that is
    not complete (fewer records than ``games_total``, an interrupted run
    that ``--resume`` will continue), every deal key with fewer games played
    than the table's seatings (4, or 24 with ``--seating full``): the other
    rotations of its table will be dealt the same cards (R2), and the cards
    played to a trick are the deal. Empty once the run is complete."""
    if len(records) >= games_total:
        return set()
    seatings = stats.seatings_per_table(settings)
    played: dict[str, int] = {}
    for r in records:
        played[str(r["deal_key"])] = played.get(str(r["deal_key"]), 0) + 1
    return {deal for deal, n in played.items() if n < seatings}


def redacted(rec: GameRecordJSON) -> GameRecordJSON:
    """A copy of ``rec`` without a card, for the pages of a game whose deal
    is still to be played elsewhere (:func:`hidden_deals`): no dealt hand, no
    pass, no trick, no stderr (a bot may print its hand), no fault detail,
    answer or cards (they can name cards); seats, scores, ranks, each hand's
    points and each fault's seat, kind and moment stay."""
    out = dict(rec)
    out["hands"] = [
        {**h, "dealt": [[], [], [], []], "passes": None, "tricks": []} for h in rec["hands"]
    ]
    note = f"hidden until every game of deal {rec['deal_key']} has finished"
    out["faults"] = [
        {**f, "detail": note, "answer": None, "cards": None} for f in rec.get("faults") or []
    ]
    out["stderr"] = ["", "", "", ""]
    out["hidden"] = True
    return cast(GameRecordJSON, out)


# -- the replay of each hand -------------------------------------------------------


def _after_pass(
    dealt: Sequence[Sequence[str]], passes: Sequence[Sequence[str]] | None, direction: str
) -> list[list[str]]:
    """Each seat's 13 cards after the pass (R3): dealt, minus passed, plus received."""
    hands = [list(h) for h in dealt]
    offset = PASS_OFFSETS.get(direction, 0)
    if passes is None or offset == 0:
        return hands
    for seat in range(4):
        hands[seat] = [c for c in hands[seat] if c not in passes[seat]]
    for seat in range(4):
        hands[(seat + offset) % 4].extend(passes[seat])
    return hands


class HandSeat(NamedTuple):
    """One seat in one hand of a replay. Cards are HTML; ``passed``/``to``
    and ``received``/``source`` are ``None`` on a hold hand (R3)."""

    dealt: Markup
    after: Markup
    points: int
    raw_points: int
    before: int
    after_score: int
    passed: Markup | None = None
    to: int | None = None
    received: Markup | None = None
    source: int | None = None


class ReplayHand(NamedTuple):
    """One hand of a replay: ``seats`` by seat, ``tricks`` the trick table's
    rows as HTML (:func:`tricks_html`), ``moon`` the seat that shot the moon
    or ``None``, ``scores`` the totals after the hand."""

    number: int
    direction: str
    deal_seed: str | None
    seats: list[HandSeat]
    tricks: Markup
    moon: int | None
    scores: list[int]


def replay_hands(rec: GameRecordJSON) -> list[ReplayHand]:
    """The replay of every hand of a game, as template data (named tuples,
    which Jinja reads faster than dicts)."""
    out = []
    before = [0, 0, 0, 0]
    default_plays, default_passes = default_moves(rec)
    for hand in rec["hands"]:
        direction = hand.get("direction", "hold")
        offset = PASS_OFFSETS.get(direction, 0)
        dealt = hand.get("dealt") or [[], [], [], []]
        passes = hand.get("passes")
        after = _after_pass(dealt, passes, direction)
        raw = hand.get("raw_points") or hand["points"]
        seats = []
        for s in range(4):
            extra: dict[str, Any] = {}
            if passes is not None and offset:
                src = (s - offset) % 4
                extra = {
                    "passed": cards_html(passes[s], presorted=True)
                    + (DEFAULT_MARK if (hand["hand_number"], s) in default_passes else ""),
                    "to": (s + offset) % 4,
                    "received": cards_html(passes[src], presorted=True),
                    "source": src,
                }
            seats.append(
                HandSeat(
                    dealt=cards_html(dealt[s], presorted=True),
                    after=cards_html(after[s]),
                    points=hand["points"][s],
                    raw_points=raw[s],
                    before=before[s],
                    after_score=hand["scores"][s],
                    **extra,
                )
            )
        out.append(
            ReplayHand(
                number=hand["hand_number"],
                direction=direction,
                deal_seed=hand.get("deal_seed"),
                seats=seats,
                tricks=tricks_html(
                    hand["tricks"], default_plays.get(hand["hand_number"], frozenset())
                ),
                moon=hand.get("moon"),
                scores=hand["scores"],
            )
        )
        before = list(hand["scores"])
    return out
