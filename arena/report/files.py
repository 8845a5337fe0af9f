"""The files of a tournament's output folder: their names, the report pages'
file names (never made from a bot's name) and writing a file whole or not at all.

Layout of an output folder::

    run.json          the run's settings (arena.report.runfile)
    games.jsonl       one game record per line (arena.protocol.records)
    results.json      standings, intervals, head-to-head, settings
    standings.csv     one row per entrant, for gradebooks and spreadsheets
    index.html        standings, rating history, head-to-head, faults, games
    report.css
    replay.js         the replay player (plain JavaScript, loads nothing else)
    entrants/*.html   one page per entrant: ``{i}-{slug}.html``
    games/*.html      one replay per game: ``{game_index}-{slug of game_id}.html``
    audit.json        written by ``hearts-arena audit DIR``

Page file names never come from names: ``i`` is the entrant's position in the
settings and the slug holds ASCII letters, digits and dashes only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from arena.protocol.records import GameRecordJSON

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
#: The file names of report pages (:func:`entrant_page`, :func:`game_page`).
PAGE_NAME: Final = re.compile(r"^\d+-[a-z0-9-]*\.html$")


def slug(text: str, limit: int = 32) -> str:
    """ASCII lower-case letters, digits and dashes only (may be empty)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def entrant_page(index: int, name: str) -> str:
    """File name of an entrant's page: its position and a slug, never the raw name."""
    return f"{index}-{slug(name) or 'entrant'}.html"


def game_page(record: GameRecordJSON) -> str:
    """File name of a game's replay page."""
    return f"{int(record['game_index'])}-{slug(str(record['game_id'])) or 'game'}.html"


def write_atomic(path: Path, text: str) -> None:
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


def prune_pages(folder: Path, keep: set[str]) -> None:
    """Remove report pages of an earlier run that this run did not write."""
    for path in folder.iterdir():
        if path.name not in keep and PAGE_NAME.match(path.name) and path.is_file():
            path.unlink()
