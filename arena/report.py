"""Output files of a tournament: ``results.json`` and the HTML report.

Everything is computed from the game records (``games.jsonl``), so
``hearts-arena report DIR`` can rebuild the outputs without replaying. The
templates are Jinja2 files shipped in the package, rendered with
``autoescape=True``: bot names, self-reported names and stderr are untrusted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from arena.rating import environment, environment_settings
from arena.resources import templates_dir
from arena.standings import compute_standings, sort_records
from arena.tournament import FORMAT_VERSION

RESULTS_FILE = "results.json"
GAMES_FILE = "games.jsonl"
RUN_FILE = "run.json"
INDEX_FILE = "index.html"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    return env


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}"


def build_results(
    settings: dict[str, Any],
    names: Sequence[str],
    records: Sequence[dict[str, Any]],
    games_total: int,
) -> dict[str, Any]:
    """The content of ``results.json``.

    Keys: ``format_version``, ``generated_at``, ``seed``, ``settings``
    (flag names, times in seconds), ``rating`` (the TrueSkill environment),
    ``games_total``, ``games_played``, ``complete`` and ``standings``.
    """
    standings, _ = compute_standings(names, records)
    played = len(sort_records(records))
    return {
        "format_version": FORMAT_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seed": settings["seed"],
        "settings": settings,
        "rating": {"system": "trueskill", **environment_settings(environment())},
        "games_total": games_total,
        "games_played": played,
        "complete": played >= games_total,
        "standings": standings,
    }


def fault_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every recorded fault with its game, in schedule order."""
    rows = []
    for rec in sort_records(records):
        for f in rec["faults"]:
            rows.append({"game_id": rec["game_id"], "game_index": rec["game_index"], **f})
    return rows


def render_index(results: dict[str, Any], records: Sequence[dict[str, Any]]) -> str:
    """The HTML of ``index.html``."""
    template = _env().get_template("index.html.j2")
    stderr_rows = []
    for rec in sort_records(records):
        for seat, text in enumerate(rec.get("stderr") or []):
            if text:
                stderr_rows.append(
                    {
                        "game_id": rec["game_id"],
                        "seat": seat,
                        "entrant": rec["seats"][seat],
                        "text": text,
                    }
                )
    return template.render(
        results=results,
        standings=results["standings"],
        settings=results["settings"],
        faults=fault_rows(records),
        stderr_rows=stderr_rows[:200],
        stderr_more=max(0, len(stderr_rows) - 200),
    )


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_outputs(
    out_dir: Path,
    settings: dict[str, Any],
    names: Sequence[str],
    records: Sequence[dict[str, Any]],
    games_total: int,
) -> dict[str, Any]:
    """Write ``results.json`` and ``index.html`` into ``out_dir``; return the results."""
    results = build_results(settings, names, records, games_total)
    _write_atomic(out_dir / RESULTS_FILE, json.dumps(results, indent=2) + "\n")
    _write_atomic(out_dir / INDEX_FILE, render_index(results, records))
    return results
