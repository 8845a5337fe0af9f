"""Closing a competition and exporting it as a run folder anyone can check
(issue 30, "Closing and verifying"; docs/checking-results.md).

* **Closing** (:func:`close_competition`, ``hearts-arena serve DIR --close``):
  the organiser, who can read the key file, stores the time (``meta.closed_at``)
  and the key itself (``meta.revealed_key``, 64 hex digits) in the database.
  From then on the runner chooses no new table of any numbering (tables
  already chosen or playing finish), and the home page and ``GET
  /api/standings`` show the key beside its SHA-256 (shown since ``--init``).
* **Exporting** (:func:`export_folder`, ``hearts-arena export DIR OUT``):
  a run folder of format ``server`` (protocol/RUN_FOLDER.md):

  - ``run.json``: ``format``, the competition's settings (every section of
    ``competition.toml``, whatever its parts), the key's commitment, the
    entrants (each submission's label, participant, SHA-256 and the ladder
    table at which it joined; the house bots) and counts;
  - ``results.json``: the key (only once closed: before the close it is
    ``null`` and ``closed`` false, and ``verify`` refuses the folder), the
    ladder's fold (``rated_through``, every entrant's rating) and standings,
    and the final's standings when the competition has one
    (:data:`RESULT_SECTIONS`);
  - ``games.jsonl``: every game record of every table of every numbering
    (validation, ladder, final, gauntlet, challenge, practice, ...), tables in
    numbering then number order, rotations in order;
  - ``tables.jsonl``: one line per table (:func:`table_line`).

  No seat's stderr and no transcript is written (each record's ``stderr``
  is four empty texts, ``transcripts`` left out) unless ``with_logs`` (the
  organiser's own copy).

Errors are :class:`ExportError`, one line each.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, select

from arena.protocol.codec import clean_text
from arena.server import db, store, webstore
from arena.server.folder import Competition, CompetitionSettings, check_key
from arena.server.webstore import closed_at, competition_json, revealed_key

#: The run folder's format name (``run.json``'s ``format``).
FORMAT: Final = "server"
#: The version of the ``server`` run folder's layout.
FORMAT_VERSION: Final = 1
#: Numberings in the order their tables are written; others follow, sorted.
NUMBERING_ORDER: Final = ("validation", "ladder", "final", "gauntlet", "challenge", "practice")
#: ``results.json`` sections other parts of the server add: name ->
#: (module, function of a Connection returning JSON or ``None``). A module
#: that is not there (a server without finals) adds nothing.
RESULT_SECTIONS: Final = {"final": ("arena.server.final", "final_results_json")}
#: The files of a run folder of format ``server``.
FILES: Final = ("run.json", "results.json", "tables.jsonl", "games.jsonl")


__all__ = [
    "ExportError",
    "close_competition",
    "closed_at",
    "competition_json",
    "export_folder",
    "revealed_key",
]


class ExportError(Exception):
    """A competition that cannot be closed or exported (one line)."""


# -- closing ---------------------------------------------------------------------------


def close_competition(comp: Competition, now: float | None = None) -> tuple[str, bool]:
    """Close the competition: no new tables; the key revealed. Reads the key
    file (checked against the SHA-256 stored at init).

    Returns:
        ``(key hex, newly closed)``: ``False`` when it was closed already
        (nothing changes).

    Raises:
        FolderError: the key file cannot be read or is not this competition's.
    """
    key = check_key(comp.paths, comp.database)
    stamp = time.time() if now is None else now
    with comp.database.write() as conn:
        if closed_at(conn) is not None:
            return key.hex(), False
        store.set_meta(conn, "revealed_key", key.hex())
        store.set_meta(conn, "closed_at", repr(stamp))
    return key.hex(), True


# -- the parts of a run folder ------------------------------------------------------------


def numbering_order(numberings: Sequence[str]) -> list[str]:
    """``numberings`` in :data:`NUMBERING_ORDER`, unknown ones after, sorted."""
    known = [n for n in NUMBERING_ORDER if n in numberings]
    return known + sorted(set(numberings) - set(known))


def all_tables(conn: Connection) -> list[store.TableRow]:
    """Every table of every numbering (:func:`numbering_order`, then by number)."""
    names = [str(n) for n in conn.execute(select(db.tables.c.numbering).distinct()).scalars()]
    return [t for n in numbering_order(names) for t in store.tables_in(conn, n)]


def public_record(
    record: Mapping[str, Any], with_logs: bool, keep_seats: Sequence[int] = ()
) -> dict[str, Any]:
    """A game record as exported: every seat's ``stderr`` emptied and
    ``transcripts`` left out, but for the seats in ``keep_seats`` (a
    download: the participant's own) and unless ``with_logs`` (everything kept)."""
    out = dict(record)
    if with_logs:
        return out
    stderr = list(out.get("stderr") or ["", "", "", ""])
    out["stderr"] = [text if s in keep_seats else "" for s, text in enumerate(stderr)]
    transcripts = out.pop("transcripts", None)
    if keep_seats and isinstance(transcripts, list):
        out["transcripts"] = [t if s in keep_seats else [] for s, t in enumerate(transcripts)]
    return out


def ratings_json(fold: Mapping[str, store.Rating]) -> dict[str, dict[str, Any]]:
    """A fold as JSON: entrant -> ``mu``, ``sigma``, ``games``, ``conservative``."""
    return {
        n: {"mu": r.mu, "sigma": r.sigma, "games": r.games, "conservative": r.conservative}
        for n, r in sorted(fold.items())
    }


def table_line(conn: Connection, table: store.TableRow, game_ids: Sequence[str]) -> dict[str, Any]:
    """One line of ``tables.jsonl``: ``numbering``, ``number``, ``deal_key``,
    ``seating`` (rotation 0's seat order), ``fold_through`` and ``focus``
    (what a ladder table was chosen from and for), ``active`` (the entrants
    it was chosen among), ``submission`` (a validation table's), ``status``,
    ``void_reason``, ``attempt``, ``chosen_at`` / ``finished_at`` (seconds
    since the epoch), ``games`` (its game ids, by rotation) and, for a ladder
    table the fold went past, ``ratings_after`` (the fold through it:
    :func:`ratings_json`)."""
    line: dict[str, Any] = {
        "numbering": table.numbering,
        "number": table.number,
        "deal_key": table.deal_key,
        "seating": list(table.seating),
        "fold_through": table.fold_through,
        "focus": table.focus,
        "active": list(table.active),
        "submission": table.submission_id,
        "status": table.status,
        "void_reason": clean_text(table.void_reason, 300) if table.void_reason else None,
        "attempt": table.attempt,
        "chosen_at": table.chosen_at,
        "finished_at": table.finished_at,
        "games": list(game_ids),
    }
    if table.numbering == "ladder":
        after = store.fold_at(conn, table.number + 1)
        if after is not None:
            line["ratings_after"] = ratings_json(after)
    return line


def entrants_json(
    settings: CompetitionSettings, conn: Connection, only: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """``run.json``'s entrants: every submission (``name`` its label ``s<id>``,
    ``submission``, ``participant`` (cleaned), ``sha256``, ``kind``,
    ``received_at``, ``status``, ``joined_table``: the ladder table at which
    it joined, which the focus rule counts from) and every house bot
    (``name`` ``house:<x>``, ``house`` its sample bot); only the labels in
    ``only`` when given."""
    rows = conn.execute(
        select(db.submissions, db.participants.c.name.label("participant")).join(
            db.participants, db.participants.c.id == db.submissions.c.participant_id
        )
    ).all()
    out: list[dict[str, Any]] = []
    for r in sorted(rows, key=lambda r: int(r.id)):
        out.append(
            {
                "name": store.entrant_label(int(r.id)),
                "submission": int(r.id),
                "participant": clean_text(r.participant),
                "sha256": r.sha256,
                "kind": r.kind,
                "received_at": r.received_at,
                "status": r.status,
                "joined_table": r.joined_table,
            }
        )
    for label, bot in zip(settings.house_labels, settings.ladder.house_bots, strict=True):
        out.append({"name": label, "house": bot})
    return [e for e in out if only is None or e["name"] in only]


def settings_json(settings: CompetitionSettings, commitment: str) -> dict[str, Any]:
    """``run.json``'s ``settings``: ``format`` ``server``, the key's
    commitment, the referee's settings as ``run`` records them
    (``time_limit``, ``startup_time`` in seconds, ``strikes``, ``grace``,
    ``max_tiebreak_hands``: what ``replay`` and ``verify`` read) and
    ``competition``: every section of ``competition.toml`` (``game``,
    ``limits``, ``ladder``, ``gate`` and any a later part adds)."""
    referee = settings.referee()
    return {
        "format": FORMAT,
        "key_commitment": commitment,
        "time_limit": referee.time_limit,
        "startup_time": referee.startup_time,
        "strikes": referee.strikes,
        "grace": referee.grace,
        "max_tiebreak_hands": referee.max_tiebreak_hands,
        "competition": asdict(settings),
    }


def extra_results(conn: Connection) -> dict[str, Any]:
    """The :data:`RESULT_SECTIONS` of the parts this server has (``None``
    for a part it has not)."""
    out: dict[str, Any] = {}
    for name, (module, function) in RESULT_SECTIONS.items():
        try:
            found: Callable[[Connection], Any] | None = getattr(
                importlib.import_module(module), function, None
            )
        except ImportError:
            found = None
        out[name] = found(conn) if found is not None else None
    return out


def write_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def jsonl(lines: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(x, separators=(",", ":"), sort_keys=False) + "\n" for x in lines)


def export_folder(
    comp: Competition, out: Path, with_logs: bool = False, now: float | None = None
) -> dict[str, Any]:
    """Write the competition's run folder to ``out`` (a new or empty folder;
    see the module docstring), read in one consistent snapshot of the
    database. Returns counts: ``tables``, ``games``, ``closed``.

    Raises:
        ExportError: ``out`` holds files, or cannot be written.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} exists and is not an empty folder")
    stamp = time.time() if now is None else now
    try:
        out.mkdir(parents=True, exist_ok=True)
        with comp.database.read() as conn:
            # games.jsonl is written a table at a time: a big competition is
            # never held in memory whole.
            fd = os.open(out / "games.jsonl", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as games_file:
                run, results, table_lines = _export(comp, conn, games_file, with_logs, stamp)
        write_file(out / "run.json", json.dumps(run, indent=2) + "\n")
        write_file(out / "results.json", json.dumps(results, indent=2) + "\n")
        write_file(out / "tables.jsonl", jsonl(table_lines))
    except OSError as exc:
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from None
    return {"tables": run["tables_total"], "games": run["games_total"], "closed": results["closed"]}


def _export(
    comp: Competition, conn: Connection, games_file: Any, with_logs: bool, stamp: float
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    commitment = store.get_meta(conn, "key_sha256") or ""
    closed = closed_at(conn)
    tables = all_tables(conn)
    table_lines: list[dict[str, Any]] = []
    numberings: dict[str, int] = {}
    games = 0
    for t in tables:
        records = store.table_records(conn, t.id)
        games_file.write(jsonl([public_record(r, with_logs) for r in records]))
        games += len(records)
        table_lines.append(table_line(conn, t, [str(r.get("game_id")) for r in records]))
        numberings[t.numbering] = numberings.get(t.numbering, 0) + 1
    through, _rows = store.standings_rows(conn)
    fold = store.fold_at(conn, through) or {}
    run = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "scope": "competition",
        "key_commitment": commitment,
        "settings": settings_json(comp.settings, commitment),
        "entrants": entrants_json(comp.settings, conn),
        "numberings": numberings,
        "tables_total": len(tables),
        "games_total": games,
        "created_at": float(store.get_meta(conn, "created_at") or 0.0),
        "exported_at": stamp,
        "with_logs": with_logs,
    }
    results = {
        "format": FORMAT,
        "closed": closed is not None,
        "closed_at": closed,
        "key": revealed_key(conn),
        "key_commitment": commitment,
        "ladder": {
            "rated_through": through,
            "ratings": ratings_json(fold),
            "standings": webstore.standings_json(conn)["rows"],
        },
        **extra_results(conn),
    }
    return run, results, table_lines
