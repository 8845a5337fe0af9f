"""The data each page's template is rendered from: the index (standings,
rating history, head-to-head, faults, games, the "Fair play" section), an
entrant's page and a game's replay page, and the links between them.

Everything is computed from an :class:`arena.results.analysis.Analysis` of
the game records, so ``hearts-arena report DIR`` can rebuild the pages
without replaying. Text from bots is passed as is: the templates escape it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypedDict

from arena.protocol.faults import FAULT_KINDS
from arena.protocol.records import GameRecordJSON
from arena.report import charts
from arena.report.files import AUDIT_FILE, ENTRANTS_DIR, GAMES_DIR, entrant_page, game_page
from arena.report.html import environment, json_script
from arena.report.replays import (
    FaultViewJSON,
    default_moves,
    fault_moment,
    fault_view,
    moment_fragment,
    replay_data,
    replay_hands,
)
from arena.results import stats
from arena.results.analysis import Analysis, analyse
from arena.results.standings import sort_records

#: Most stderr excerpts shown on an entrant page, and characters per excerpt.
STDERR_EXCERPTS: Final = 30
STDERR_CHARS: Final = 4000
#: Most faults listed one by one on the index page, and on an entrant's page
#: (every fault is in games.jsonl).
INDEX_FAULTS: Final = 100
ENTRANT_FAULTS: Final = 500


class FaultRowJSON(FaultViewJSON):
    """A fault with its game (:func:`fault_rows`)."""

    game_id: str
    game_index: int
    href: str


class SeatCellJSON(TypedDict):
    """One seat of a game's row: the entrant, its page, its score and rank (R13)."""

    name: str
    href: str
    score: int
    rank: int


class GameRowJSON(TypedDict):
    """One game in a list of games: its page and where it was in the schedule."""

    game_id: str
    href: str
    round: int
    table: int
    rotation: int
    hands: int
    seats: list[SeatCellJSON]
    faults: int


class EntrantGameJSON(GameRowJSON):
    """A game on an entrant's page, with the entrant's seat, score, rank,
    points per hand (``None`` without hands) and faults in it."""

    seat: int
    score: int
    rank: int
    points_per_hand: float | None
    own_faults: int


class EntrantFaultJSON(FaultViewJSON):
    """A fault on an entrant's page, with its game's page and moment."""

    game_id: str
    href: str
    moment_href: str


class StderrExcerptJSON(TypedDict):
    """A seat's stderr in a game, cut to :data:`STDERR_CHARS` (``cut``: it was)."""

    game_id: str
    href: str
    seat: int
    text: str
    cut: bool


def fault_rows(records: Sequence[GameRecordJSON]) -> list[FaultRowJSON]:
    """Every recorded fault with its game, in schedule order; ``href`` is the
    game's page at the fault's moment (``#fault-K``, K its place in the
    record's faults: the replay player opens there, as the fault's seat saw it)."""
    rows: list[FaultRowJSON] = []
    for rec in sort_records(records):
        for k, f in enumerate(rec["faults"]):
            rows.append(
                {
                    "game_id": rec["game_id"],
                    "game_index": rec["game_index"],
                    "href": f"{game_page(rec)}#fault-{k}",
                    **fault_view(f, rec),
                }
            )
    return rows


class Site:
    """Links between pages, relative to the output folder."""

    def __init__(self, a: Analysis) -> None:
        self.entrant_file = {n: entrant_page(i, n) for i, n in enumerate(a.names)}
        self.game_file = {r["game_index"]: game_page(r) for r in a.records}

    def entrant(self, name: str, root: str) -> str:
        return f"{root}{ENTRANTS_DIR}/{self.entrant_file[name]}"

    def game(self, index: int, root: str) -> str:
        return f"{root}{GAMES_DIR}/{self.game_file[index]}"


def _game_row(rec: GameRecordJSON, site: Site, root: str) -> GameRowJSON:
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
    site = Site(a)
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
    site = Site(a)
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
    site = Site(a)
    root = "../"
    row = next(r for r in a.standings if r["name"] == name)
    games: list[EntrantGameJSON] = []
    faults: list[EntrantFaultJSON] = []
    stderr: list[StderrExcerptJSON] = []
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
        g: EntrantGameJSON = {
            **_game_row(rec, site, root),
            "seat": seat,
            "score": rec["scores"][seat],
            "rank": rec["ranks"][seat],
            "points_per_hand": rec["scores"][seat] / len(rec["hands"]) if rec["hands"] else None,
            "own_faults": sum(1 for f in rec["faults"] if f["seat"] == seat),
        }
        games.append(g)
        for k, f in enumerate(rec["faults"]):
            if f["seat"] == seat:
                faults_total += 1
                if len(faults) < ENTRANT_FAULTS:
                    # "#fault-K": the player opens at the fault's moment, as its
                    # seat saw it; without JavaScript the fault's row is shown.
                    faults.append(
                        {
                            **fault_view(f, rec),
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


def game_context(
    a: Analysis, i: int, results: Mapping[str, Any], site: Site | None = None
) -> dict[str, Any]:
    """Template data of the replay page of ``a.records[i]``."""
    site = site or Site(a)
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
            {**fault_view(f, rec), "moment": m and moment_fragment(m, int(f["seat"]))}
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
    results: Mapping[str, Any],
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
    return environment().get_template("index.html.j2").render(index_context(a, results, fair))
