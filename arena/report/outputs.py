"""Output files of a tournament: ``results.json``, ``standings.csv`` and the HTML report.

Everything is computed from the game records (``games.jsonl``), so
``hearts-arena report DIR`` can rebuild the outputs without replaying. The
templates are Jinja2 files shipped in the package, rendered with
``autoescape=True``: bot names, self-reported names and stderr are untrusted
and are never marked safe. Page file names never come from names: entrant
pages are ``entrants/{i}-{slug}.html`` (``i`` the entrant's position in the
settings, the slug ASCII letters and digits only) and replays are
``games/{game_index}-{slug of game_id}.html``.

The report is static HTML, one stylesheet and one small script: it needs no
server and no network. The script (``replay.js``) turns each replay page into
a player that steps through the game card by card as any seat saw it; with
JavaScript off the pages read fully from their static tables.

Layout of an output folder::

    results.json      standings, intervals, head-to-head, settings
    standings.csv     one row per entrant, for gradebooks and spreadsheets
    index.html        standings, rating history, head-to-head, faults, games
    report.css
    replay.js         the replay player (plain JavaScript, loads nothing else)
    entrants/*.html   one page per entrant
    games/*.html      one replay per game
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, NamedTuple, cast

import jinja2
from markupsafe import Markup, escape

from arena.core.resources import templates_dir
from arena.protocol.codec import error_excerpt, visible_text
from arena.protocol.faults import FAULT_KINDS
from arena.protocol.records import FaultJSON, GameRecordJSON, TrickJSON
from arena.report import charts
from arena.results import stats
from arena.results.rating import RatingTable, environment, environment_settings
from arena.results.standings import compute_standings, disqualify, sort_records
from arena.tournament.runner import FORMAT_VERSION

RESULTS_FILE = "results.json"
GAMES_FILE = "games.jsonl"
RUN_FILE = "run.json"
INDEX_FILE = "index.html"
#: Written by ``hearts-arena audit DIR``; the index's "Fair play" section reads it.
AUDIT_FILE = "audit.json"
CSV_FILE = "standings.csv"
STYLE_FILE = "report.css"
#: The replay player's script (plain JavaScript, no build step), beside report.css.
SCRIPT_FILE = "replay.js"
ENTRANTS_DIR = "entrants"
GAMES_DIR = "games"

#: Most stderr excerpts shown on an entrant page, and characters per excerpt.
STDERR_EXCERPTS: Final = 30
STDERR_CHARS: Final = 4000
#: Most faults listed one by one on the index page, and on an entrant's page
#: (every fault is in games.jsonl).
INDEX_FAULTS: Final = 100
ENTRANT_FAULTS: Final = 500
#: Receiver offset of each pass direction (R3).
PASS_OFFSETS: Final = {"left": 1, "right": 3, "across": 2, "hold": 0}

_SUIT_SYMBOLS: Final = {"C": "♣", "D": "♦", "S": "♠", "H": "♥"}
_CARD_ORDER: Final = {
    r + s: i for i, (s, r) in enumerate((s, r) for s in "CDSH" for r in "23456789TJQKA")
}
#: The HTML of each of the 52 cards (constant text: safe to mark). Kept
#: short: a replay page holds about 180 cards per hand.
_CARD_HTML: Final = {
    name: Markup(
        f'<i class="{name[1].lower()}">'
        f"{'10' if name[0] == 'T' else name[0]}{_SUIT_SYMBOLS[name[1]]}</i>"
    )
    for name in _CARD_ORDER
}
#: ``<td>`` cells of a trick table: card name -> the four cell variants by class.
_CARD_TD: Final = {
    name: {
        cls: Markup(f'<td class="{cls}">{html}</td>' if cls else f"<td>{html}</td>")
        for cls in ("", "lead", "win", "lead win")
    }
    for name, html in _CARD_HTML.items()
}
_TD_CLASS: Final = (("", "win"), ("lead", "lead win"))
_PAGE_NAME: Final = re.compile(r"^\d+-[a-z0-9-]*\.html$")


# -- Jinja --------------------------------------------------------------------


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = number_text
    env.filters["setting"] = _setting
    env.filters["signed"] = signed_text
    env.filters["visible"] = visible_text
    return env


def _setting(value: object) -> str:
    """A settings value as plain text: ``on``/``off``, ``–`` for none, and
    nested settings as ``key value, ...``."""
    if value is None:
        return "–"
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {_setting(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_setting(v) for v in value)
    return str(value)


#: The minus sign of every number on the pages (values and intervals alike).
MINUS: Final = "\u2212"


def number_text(value: float | None, digits: int = 2) -> str:
    """A number with ``digits`` decimals, negative ones with U+2212 (the
    same sign as :func:`signed_text`); ``–`` for none (the report's and the
    live page's one way of writing a number)."""
    if value is None:
        return "–"
    return f"{_unsigned_zero(value, digits):.{digits}f}".replace("-", MINUS)


def signed_text(value: float | None, digits: int = 2) -> str:
    """As :func:`number_text`, with the sign always written."""
    if value is None:
        return "–"
    return f"{_unsigned_zero(value, digits):+.{digits}f}".replace("-", MINUS)


def _unsigned_zero(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` decimals, a zero without its sign (an
    interval's end of ``-0.0001`` or ``-0.0`` reads ``0.00``, not ``−0.00``)."""
    return round(value, digits) + 0.0


def card_html(name: str) -> Markup:
    """One card as HTML (``"QS"`` -> Q♠ in a span); unknown text is escaped."""
    return _CARD_HTML.get(name) or escape(name)


def cards_html(names: Sequence[str] | None, presorted: bool = False) -> Markup:
    """Cards as HTML, in the protocol's sort order (suit C, D, S, H, then
    rank); ``presorted`` lists (as the referee records them) are kept as given."""
    if not names:
        return Markup("")
    ordered = names if presorted else sorted(names, key=lambda c: _CARD_ORDER.get(c, 99))
    # Each piece is one of the 52 constant cards or escaped text.
    return Markup(" ".join(_CARD_HTML.get(c) or escape(c) for c in ordered))


#: The mark after a card the referee played for a seat (a default move, protocol "Faults").
DEFAULT_MARK: Final = Markup(
    '<sup class="auto-mark" title="a default move made by the referee">d</sup>'
)


def tricks_html(
    tricks: Sequence[TrickJSON], defaults: frozenset[tuple[int, int]] = frozenset()
) -> Markup:
    """The ``<tr>`` rows of a hand's trick table: number, leader, the card of
    each seat 0..3 (leader's cell ``lead``, winner's ``win``; a default move
    the referee made, ``(trick number, seat)`` in ``defaults``, has class
    ``auto`` and the mark :data:`DEFAULT_MARK`), winner, points, and each
    seat's points taken so far this hand (before the moon rule).

    Built here rather than in the template because a replay has up to
    thirteen such rows per hand and they dominate the report's render time;
    the rows hold only integers (``int()``-converted) and card HTML (one of
    the 52 constants, or escaped text), never a name or other bot text.
    """
    rows = []
    running = [0, 0, 0, 0]
    for n, trick in enumerate(tricks, 1):
        leader, winner, points = int(trick["leader"]), int(trick["winner"]), int(trick["points"])
        cells = ["<td></td>"] * 4
        for k, c in enumerate(trick["cards"]):
            seat = (leader + k) % 4
            cls = _TD_CLASS[seat == leader][seat == winner]
            if (n, seat) in defaults:
                klass = f"{cls} auto".strip()
                cells[seat] = f'<td class="{klass}">{card_html(c)}{DEFAULT_MARK}</td>'
                continue
            td = _CARD_TD.get(c)
            cells[seat] = td[cls] if td else f'<td class="{cls}">{escape(c)}</td>'
        running[winner % 4] += points
        rows.append(
            f"<tr><td>{n}</td><td>{leader}</td>{''.join(cells)}<td>{winner}</td>"
            f'<td>{points}</td><td class="name">{running[0]} · {running[1]} · '
            f"{running[2]} · {running[3]}</td></tr>"
        )
    return Markup("\n".join(rows))


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


def replay_data(rec: GameRecordJSON) -> dict[str, Any]:
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
    hands = []
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


#: Characters that must not appear raw inside a ``<script>`` element.
_SCRIPT_UNSAFE: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_script(data: object) -> Markup:
    """``data`` as JSON safe to put inside ``<script type="application/json">``:
    ``<``, ``>`` and ``&`` (and U+2028/U+2029) are written as ``\\u`` escapes,
    so no text in it (a bot's name holding ``</script>`` or ``<!--``) can end
    the element or start markup; ``JSON.parse`` reads the same values back."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.translate(_SCRIPT_UNSAFE))


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


def _fault_view(f: FaultJSON, rec: GameRecordJSON) -> dict[str, Any]:
    """A fault for the pages: with ``stderr_error``, for a crash, the start
    and the end of the error in the seat's stderr (:func:`stderr_error`:
    the cause and the last words), else ``[]``."""
    shown = stderr_error(rec, int(f["seat"])) if f["reason"] == "crashed" else []
    return {**f, "stderr_error": shown}


def slug(text: str, limit: int = 32) -> str:
    """ASCII lower-case letters, digits and dashes only (may be empty)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def entrant_page(index: int, name: str) -> str:
    """File name of an entrant's page: its position and a slug, never the raw name."""
    return f"{index}-{slug(name) or 'entrant'}.html"


def game_page(record: GameRecordJSON) -> str:
    """File name of a game's replay page."""
    return f"{int(record['game_index'])}-{slug(str(record['game_id'])) or 'game'}.html"


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


# -- analysis ------------------------------------------------------------------


@dataclass
class Analysis:
    """Everything the outputs are made from, computed once.

    Attributes:
        settings: the settings record (``run.json``'s ``settings``).
        names: every entrant, in the settings' order.
        records: the game records in schedule order, one per ``game_index``.
        standings: ``compute_standings`` rows, merged with the intervals and
            duplicate scores of ``stats.compute_statistics``.
        ratings: the TrueSkill table after every game (with its history).
        statistics: ``stats.compute_statistics``'s result.
        head_to_head: ``stats.head_to_head``'s result.
        verdict: ``stats.top_settled``'s result (whether the top of the table is settled).
    """

    settings: dict[str, Any]
    names: list[str]
    records: list[GameRecordJSON]
    standings: list[dict[str, Any]]
    ratings: RatingTable
    statistics: dict[str, Any]
    head_to_head: dict[str, dict[str, dict[str, int]]]
    verdict: dict[str, Any]


def analyse(
    settings: dict[str, Any], names: Sequence[str], records: Sequence[GameRecordJSON]
) -> Analysis:
    """Standings, ratings, intervals, head-to-head and verdict of ``records``."""
    ordered = sort_records(records)
    standings, ratings = compute_standings(names, ordered)
    disqualify(standings, settings.get("disqualify_after"))
    statistics = stats.compute_statistics(names, ordered, settings)
    for row in standings:
        row.update(statistics["entrants"][row["name"]])
    if settings.get("format") == "ladder":  # no rounds: count games
        played, unit = len(ordered), "game"
    else:
        played, unit = len({r["deal_key"] for r in ordered}), "round"
    return Analysis(
        settings=settings,
        names=list(names),
        records=ordered,
        standings=standings,
        ratings=ratings,
        statistics=statistics,
        head_to_head=stats.head_to_head(names, ordered),
        verdict=stats.top_settled(standings, statistics, played, unit),
    )


def build_results(
    settings: dict[str, Any],
    names: Sequence[str],
    records: Sequence[GameRecordJSON],
    games_total: int,
    analysis: Analysis | None = None,
    key: str | None = None,
) -> dict[str, Any]:
    """The content of ``results.json``.

    ``key`` (the master key in hexadecimal, :mod:`arena.core.keys`) is revealed,
    as ``key``, only when every scheduled game was played; ``key_commitment``
    (its SHA-256, printed when the run started) is always there.

    Keys: ``format_version``, ``generated_at``, ``seed``, ``key_commitment``,
    ``key`` (once complete), ``settings``
    (flag names, times in seconds), ``rating`` (the TrueSkill environment),
    ``games_total``, ``games_played``, ``complete``, ``standings`` (see
    ``compute_standings``; each row also has ``points_per_hand_low``/``_high``,
    ``duplicate``, ``duplicate_low``/``_high`` and ``duplicate_hands``, in
    points per hand, ``None`` where unknown), ``confidence`` (``bootstrap``
    parameters, ``verdict``, and ``pairs`` per metric) and ``head_to_head``.
    """
    a = analysis or analyse(settings, names, records)
    played = len(a.records)
    complete = played >= games_total
    out: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seed": settings.get("seed"),
        "key_commitment": settings.get("key_commitment"),
    }
    if key is not None and complete:
        out["key"] = key
    return out | {
        "settings": settings,
        "rating": {"system": "trueskill", **environment_settings(environment())},
        "games_total": games_total,
        "games_played": played,
        "complete": complete,
        "standings": a.standings,
        "confidence": {
            "bootstrap": a.statistics["bootstrap"],
            "verdict": a.verdict,
            "pairs": a.statistics["pairs"],
        },
        "head_to_head": a.head_to_head,
    }


#: Columns of ``standings.csv``, in order.
CSV_COLUMNS: Final = (
    "rank",
    "name",
    "conservative",
    "mu",
    "sigma",
    "games",
    "wins",
    "mean_rank",
    "hands",
    "points",
    "points_per_hand",
    "points_per_hand_low",
    "points_per_hand_high",
    "duplicate",
    "duplicate_low",
    "duplicate_high",
    "duplicate_hands",
    "moons",
    "moons_suffered",
    "queens",
    *(f"faults_{k}" for k in FAULT_KINDS),
    "self_names",
    "disqualified",
)


def _csv_text(value: str) -> str:
    """Text that a spreadsheet will not run as a formula (OWASP "CSV injection")."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def standings_csv(standings: Sequence[Mapping[str, Any]]) -> str:
    """``standings.csv``: a header of :data:`CSV_COLUMNS`, one row per entrant in
    rank order. Numbers are plain (dot decimal, empty when unknown); text cells
    that a spreadsheet would take for a formula get a leading ``'``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in standings:
        cells: list[Any] = []
        for col in CSV_COLUMNS:
            if col.startswith("faults_"):
                value: Any = row["faults"][col.removeprefix("faults_")]
            elif col == "self_names":
                value = _csv_text("; ".join(row["self_names"]))
            elif col == "name":
                value = _csv_text(row["name"])
            elif col == "disqualified":
                value = "yes" if row.get("disqualified") else "no"
            else:
                value = row.get(col)
            if isinstance(value, float):
                value = f"{value:.6g}"
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return buf.getvalue()


def fault_rows(records: Sequence[GameRecordJSON]) -> list[dict[str, Any]]:
    """Every recorded fault with its game, in schedule order; ``href`` is the
    game's page at the fault's moment (``#fault-K``, K its place in the
    record's faults: the replay player opens there, as the fault's seat saw it)."""
    rows = []
    for rec in sort_records(records):
        for k, f in enumerate(rec["faults"]):
            rows.append(
                {
                    "game_id": rec["game_id"],
                    "game_index": rec["game_index"],
                    "href": f"{game_page(rec)}#fault-{k}",
                    **_fault_view(f, rec),
                }
            )
    return rows


# -- page data -------------------------------------------------------------------


class _Site:
    """Links between pages, relative to the output folder."""

    def __init__(self, a: Analysis) -> None:
        self.entrant_file = {n: entrant_page(i, n) for i, n in enumerate(a.names)}
        self.game_file = {r["game_index"]: game_page(r) for r in a.records}

    def entrant(self, name: str, root: str) -> str:
        return f"{root}{ENTRANTS_DIR}/{self.entrant_file[name]}"

    def game(self, index: int, root: str) -> str:
        return f"{root}{GAMES_DIR}/{self.game_file[index]}"


def _game_row(rec: GameRecordJSON, site: _Site, root: str) -> dict[str, Any]:
    return {
        "game_id": rec["game_id"],
        "href": site.game(rec["game_index"], root),
        "round": rec["round"],
        "table": rec["table"],
        "rotation": rec["rotation"],
        "hands": len(rec["hands"]),
        "seats": [
            {"name": n, "href": site.entrant(n, root), "score": s, "rank": r}
            for n, s, r in zip(rec["seats"], rec["scores"], rec["ranks"], strict=True)
        ],
        "faults": len(rec["faults"]),
    }


def _rating_chart(a: Analysis, order: Sequence[str], games_total: int) -> dict[str, Any]:
    env = a.ratings.env
    return charts.rating_history(a.ratings.history, order, (env.mu, env.sigma), games_total)


def fair_play_context(folder: Path, a: Analysis) -> dict[str, Any] | None:
    """The "Fair play" section's data from ``audit.json`` (written by
    ``hearts-arena audit DIR``, :mod:`arena.tools.audit`), or ``None`` when the
    run was not audited or the file cannot be read. Names not among the
    entrants are dropped; every text is escaped by the template."""
    try:
        data = json.loads((folder / AUDIT_FILE).read_text(encoding="utf-8"))
        entrants = data["entrants"]
        flagged = [n for n in data["flagged"] if n in a.names]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    site = _Site(a)
    rows = []
    for name in a.names:
        signals = entrants.get(name)
        if not isinstance(signals, dict):
            continue
        rows.append(
            {
                "name": name,
                "href": site.entrant(name, ""),
                "flagged": name in flagged,
                "signals": signals,
                "evidence": (data.get("evidence") or {}).get(name, [])[:10],
            }
        )
    return {
        "alpha": data.get("alpha"),
        "tests": data.get("tests"),
        "flagged": [r for r in rows if r["flagged"]],
        "unflagged": [r for r in rows if not r["flagged"]],
    }


def index_context(
    a: Analysis, results: Mapping[str, Any], fair_play: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Template data of ``index.html`` (``fair_play``: :func:`fair_play_context`)."""
    site = _Site(a)
    order = [r["name"] for r in a.standings]
    pairs = stats.pair_lookup(a.statistics["pairs"][stats.DUPLICATE])
    rows = []
    for row in a.standings:
        rows.append({**row, "href": site.entrant(row["name"], "")})
    h2h_rows = []
    for x in order:
        cells: list[dict[str, Any] | None] = []
        for y in order:
            if x == y:
                cells.append(None)
                continue
            cell = a.head_to_head[x][y]
            pair = pairs.get((x, y))
            cells.append({**cell, "opponent": y, "pair": pair})
        h2h_rows.append({"name": x, "href": site.entrant(x, ""), "cells": cells})
    faults = fault_rows(a.records)
    fault_totals = [
        {"name": r["name"], "href": site.entrant(r["name"], ""), "faults": r["faults"]}
        for r in a.standings
        if any(r["faults"].values())
    ]
    return {
        "title": "Hearts arena standings",
        "root": "",
        "results": results,
        "standings": rows,
        "settings": a.settings,
        "verdict": a.verdict,
        "bootstrap": a.statistics["bootstrap"],
        "chart": _rating_chart(a, order, results["games_total"]),
        "order": order,
        "h2h": h2h_rows,
        "fault_kinds": FAULT_KINDS,
        "fault_totals": fault_totals,
        "faults": [
            {
                **f,
                "href": f"{GAMES_DIR}/{f['href']}",
                "entrant_href": site.entrant(f["entrant"], ""),
            }
            if f["entrant"] in site.entrant_file
            else {**f, "href": f"{GAMES_DIR}/{f['href']}", "entrant_href": None}
            for f in faults[:INDEX_FAULTS]
        ],
        "faults_more": max(0, len(faults) - INDEX_FAULTS),
        "games": [_game_row(r, site, "") for r in a.records],
        "fair_play": fair_play,
    }


def entrant_context(a: Analysis, name: str, results: Mapping[str, Any]) -> dict[str, Any]:
    """Template data of one entrant's page."""
    site = _Site(a)
    root = "../"
    row = next(r for r in a.standings if r["name"] == name)
    games: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    stderr: list[dict[str, Any]] = []
    counts = [0] * 27
    stderr_total = faults_total = 0
    for rec in a.records:
        seats = rec["seats"]
        if name not in seats:
            continue
        seat = seats.index(name)
        for hand in rec["hands"]:
            p = hand["points"][seat]
            if 0 <= p <= 26:
                counts[p] += 1
        g = _game_row(rec, site, root)
        g["seat"] = seat
        g["score"] = rec["scores"][seat]
        g["rank"] = rec["ranks"][seat]
        g["points_per_hand"] = rec["scores"][seat] / len(rec["hands"]) if rec["hands"] else None
        g["own_faults"] = sum(1 for f in rec["faults"] if f["seat"] == seat)
        games.append(g)
        for k, f in enumerate(rec["faults"]):
            if f["seat"] == seat:
                faults_total += 1
                if len(faults) < ENTRANT_FAULTS:
                    # "#fault-K": the player opens at the fault's moment, as its
                    # seat saw it; without JavaScript the fault's row is shown.
                    faults.append(
                        {
                            **_fault_view(f, rec),
                            "game_id": rec["game_id"],
                            "href": g["href"],
                            "moment_href": f"{g['href']}#fault-{k}",
                        }
                    )
        text = (rec.get("stderr") or [""] * 4)[seat]
        if text:
            stderr_total += 1
            if len(stderr) < STDERR_EXCERPTS:
                stderr.append(
                    {
                        "game_id": rec["game_id"],
                        "href": g["href"],
                        "seat": seat,
                        "text": text[:STDERR_CHARS],
                        "cut": len(text) > STDERR_CHARS,
                    }
                )
    pairs = stats.pair_lookup(a.statistics["pairs"][stats.DUPLICATE])
    h2h = [
        {
            "name": other,
            "href": site.entrant(other, root),
            **a.head_to_head[name][other],
            "pair": pairs.get((name, other)),
        }
        for other in (r["name"] for r in a.standings)
        if other != name
    ]
    return {
        "title": f"{name} · Hearts arena",
        "root": root,
        "results": results,
        "row": row,
        "games": games,
        "faults": faults,
        "faults_more": faults_total - len(faults),
        "stderr": stderr,
        "stderr_more": stderr_total - len(stderr),
        "h2h": h2h,
        "distribution": charts.histogram(counts, [str(i) for i in range(27)]),
        "chart": _rating_chart(a, [name], results["games_total"]),
    }


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


def game_context(
    a: Analysis, i: int, results: Mapping[str, Any], site: _Site | None = None
) -> dict[str, Any]:
    """Template data of the replay page of ``a.records[i]``."""
    site = site or _Site(a)
    root = "../"
    rec = a.records[i]
    names = rec.get("bot_names") or [None] * 4
    stderr = rec.get("stderr") or [""] * 4
    seats = [
        {
            "seat": s,
            "name": n,
            "href": site.entrant(n, root) if n in site.entrant_file else None,
            "self_name": names[s],
            "score": rec["scores"][s],
            "rank": rec["ranks"][s],
            "stderr": (stderr[s] or "")[:STDERR_CHARS],
            "stderr_cut": len(stderr[s] or "") > STDERR_CHARS,
        }
        for s, n in enumerate(rec["seats"])
    ]
    prev_rec = a.records[i - 1] if i > 0 else None
    next_rec = a.records[i + 1] if i + 1 < len(a.records) else None
    return {
        "title": f"Game {rec['game_id']} · Hearts arena",
        "root": root,
        "results": results,
        "game": rec,
        "seats": seats,
        "hands": replay_hands(rec),
        "faults": [
            {**_fault_view(f, rec), "moment": m and moment_fragment(m, int(f["seat"]))}
            for f, m in ((f, fault_moment(f, rec)) for f in rec["faults"])
        ],
        "replay_json": json_script(replay_data(rec)),
        "has_defaults": any(bool(part) for part in default_moves(rec)),
        "prev": {"href": site.game(prev_rec["game_index"], root), "game_id": prev_rec["game_id"]}
        if prev_rec
        else None,
        "next": {"href": site.game(next_rec["game_index"], root), "game_id": next_rec["game_id"]}
        if next_rec
        else None,
        "full_seating": stats.seatings_per_table(a.settings) == 24,
        "hidden": bool(rec.get("hidden")),
        "deal_games": sum(1 for r in a.records if r["deal_key"] == rec["deal_key"]),
        "seatings": stats.seatings_per_table(a.settings),
    }


def render_index(
    results: dict[str, Any],
    records: Sequence[GameRecordJSON],
    analysis: Analysis | None = None,
    folder: Path | None = None,
) -> str:
    """The HTML of ``index.html`` (with the "Fair play" section when ``folder``
    holds an ``audit.json``)."""
    a = analysis or analyse(
        results["settings"], [e["name"] for e in results["settings"]["entrants"]], records
    )
    fair = fair_play_context(folder, a) if folder is not None else None
    return _env().get_template("index.html.j2").render(index_context(a, results, fair))


# -- writing ----------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (through ``path.tmp``, removed on failure).

    Raises:
        OSError: it could not be written (a full disk); ``path`` is unchanged.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _prune(folder: Path, keep: set[str]) -> None:
    """Remove report pages of an earlier run that this run did not write."""
    for path in folder.iterdir():
        if path.name not in keep and _PAGE_NAME.match(path.name) and path.is_file():
            path.unlink()


def write_outputs(
    out_dir: Path,
    settings: dict[str, Any],
    names: Sequence[str],
    records: Sequence[GameRecordJSON],
    games_total: int,
    key: str | None = None,
) -> dict[str, Any]:
    """Write ``results.json``, ``standings.csv`` and the HTML report into
    ``out_dir``; return the results. Report pages left from an earlier run in
    ``entrants/`` and ``games/`` that this run does not have are removed.
    ``key`` is revealed only if every game was played (:func:`build_results`).
    While the run is not complete, the pages of a game whose deal other games
    still play hold none of its cards (:func:`hidden_deals`, :func:`redacted`):
    ``--resume`` writes them in full once the deal is done."""
    a = analyse(settings, names, records)
    results = build_results(settings, names, records, games_total, a, key)
    # The pages of an unfinished run show no card of a deal still to be played.
    hidden = hidden_deals(settings, a.records, games_total)
    if hidden:
        a = dataclasses.replace(
            a, records=[redacted(r) if r["deal_key"] in hidden else r for r in a.records]
        )
    _write_atomic(out_dir / RESULTS_FILE, json.dumps(results, indent=2) + "\n")
    _write_atomic(out_dir / CSV_FILE, standings_csv(a.standings))
    env = _env()
    for static in (STYLE_FILE, SCRIPT_FILE):
        _write_atomic(out_dir / static, (templates_dir() / static).read_text(encoding="utf-8"))
    site = _Site(a)
    entrants_dir = out_dir / ENTRANTS_DIR
    games_dir = out_dir / GAMES_DIR
    entrants_dir.mkdir(exist_ok=True)
    games_dir.mkdir(exist_ok=True)
    template = env.get_template("entrant.html.j2")
    for name in a.names:
        _write_atomic(
            entrants_dir / site.entrant_file[name],
            template.render(entrant_context(a, name, results)),
        )
    template = env.get_template("game.html.j2")
    for i, rec in enumerate(a.records):
        _write_atomic(
            games_dir / site.game_file[rec["game_index"]],
            template.render(game_context(a, i, results, site)),
        )
    _prune(entrants_dir, set(site.entrant_file.values()))
    _prune(games_dir, set(site.game_file.values()))
    _write_atomic(out_dir / INDEX_FILE, render_index(results, a.records, a, out_dir))
    return results
