"""Output files of a tournament: ``results.json``, ``standings.csv`` and the HTML report,
written by :func:`write_outputs`.

Everything is computed from the game records (``games.jsonl``), so
``hearts-arena report DIR`` can rebuild the outputs without replaying. The
parts, one module each:

* :mod:`arena.results.analysis`: the standings, ratings and statistics
  (:func:`~arena.results.analysis.analyse`) and ``results.json``'s content
  (:func:`~arena.results.analysis.build_results`);
* :mod:`arena.report.files`: the folder's file names, the pages' file names
  (never made from a name) and writing a file whole or not at all;
* :mod:`arena.report.html`: the Jinja2 environment (``autoescape=True``: bot
  names, self-reported names and stderr are untrusted and never marked safe),
  numbers, cards, trick rows, JSON inside ``<script>``;
* :mod:`arena.report.replays`: what the pages show of one game record (default
  moves, fault moments, the replay player's data, hidden deals);
* :mod:`arena.report.pages`: each page's template data;
* :mod:`arena.report.standings_csv`: ``standings.csv``.

The names of those modules that callers used from here are re-exported.

The report is static HTML, one stylesheet and one small script: it needs no
server and no network. The script (``replay.js``) turns each replay page into
a player that steps through the game card by card as any seat saw it; with
JavaScript off the pages read fully from their static tables. The folder's
layout: :mod:`arena.report.files`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from arena.core.resources import templates_dir
from arena.protocol.records import GameRecordJSON
from arena.report.files import (
    AUDIT_FILE,
    CSV_FILE,
    ENTRANTS_DIR,
    GAMES_DIR,
    GAMES_FILE,
    INDEX_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SCRIPT_FILE,
    STYLE_FILE,
    entrant_page,
    game_page,
    prune_pages,
    slug,
    write_atomic,
)
from arena.report.html import (
    DEFAULT_MARK,
    MINUS,
    card_html,
    cards_html,
    environment,
    json_script,
    number_text,
    signed_text,
    tricks_html,
)
from arena.report.pages import (
    ENTRANT_FAULTS,
    INDEX_FAULTS,
    STDERR_CHARS,
    STDERR_EXCERPTS,
    Site,
    entrant_context,
    fair_play_context,
    fault_rows,
    game_context,
    index_context,
    render_index,
)
from arena.report.replays import (
    PASS_OFFSETS,
    HandSeat,
    ReplayHand,
    default_moves,
    fault_moment,
    hidden_deals,
    moment_fragment,
    redacted,
    replay_data,
    replay_hands,
    seat_out,
    stderr_error,
    stderr_last_line,
)
from arena.report.standings_csv import CSV_COLUMNS, standings_csv
from arena.results.analysis import Analysis, analyse, build_results

__all__ = [
    "AUDIT_FILE",
    "CSV_COLUMNS",
    "CSV_FILE",
    "DEFAULT_MARK",
    "ENTRANTS_DIR",
    "ENTRANT_FAULTS",
    "GAMES_DIR",
    "GAMES_FILE",
    "INDEX_FAULTS",
    "INDEX_FILE",
    "MINUS",
    "PASS_OFFSETS",
    "RESULTS_FILE",
    "RUN_FILE",
    "SCRIPT_FILE",
    "STDERR_CHARS",
    "STDERR_EXCERPTS",
    "STYLE_FILE",
    "Analysis",
    "HandSeat",
    "ReplayHand",
    "analyse",
    "build_results",
    "card_html",
    "cards_html",
    "default_moves",
    "entrant_context",
    "entrant_page",
    "fair_play_context",
    "fault_moment",
    "fault_rows",
    "game_context",
    "game_page",
    "hidden_deals",
    "index_context",
    "json_script",
    "moment_fragment",
    "number_text",
    "redacted",
    "render_index",
    "replay_data",
    "replay_hands",
    "seat_out",
    "signed_text",
    "slug",
    "standings_csv",
    "stderr_error",
    "stderr_last_line",
    "tricks_html",
    "write_outputs",
]


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
    write_atomic(out_dir / RESULTS_FILE, json.dumps(results, indent=2) + "\n")
    write_atomic(out_dir / CSV_FILE, standings_csv(a.standings))
    env = environment()
    for static in (STYLE_FILE, SCRIPT_FILE):
        write_atomic(out_dir / static, (templates_dir() / static).read_text(encoding="utf-8"))
    site = Site(a)
    entrants_dir = out_dir / ENTRANTS_DIR
    games_dir = out_dir / GAMES_DIR
    entrants_dir.mkdir(exist_ok=True)
    games_dir.mkdir(exist_ok=True)
    template = env.get_template("entrant.html.j2")
    for name in a.names:
        write_atomic(
            entrants_dir / site.entrant_file[name],
            template.render(entrant_context(a, name, results)),
        )
    template = env.get_template("game.html.j2")
    for i, rec in enumerate(a.records):
        write_atomic(
            games_dir / site.game_file[rec["game_index"]],
            template.render(game_context(a, i, results, site)),
        )
    prune_pages(entrants_dir, set(site.entrant_file.values()))
    prune_pages(games_dir, set(site.game_file.values()))
    write_atomic(out_dir / INDEX_FILE, render_index(results, a.records, a, out_dir))
    return cast(dict[str, Any], results)  # a ResultsJSON; the type callers know
