"""A participant's download of a finished table they sat at (issue 30,
"Downloads"; docs/checking-results.md).

``GET /api/tables/{numbering}/{number}/download`` with the participant's
bearer token (as every participant's API call) answers a zip, a small run
folder of format ``server`` and scope ``table`` (protocol/RUN_FOLDER.md):

* ``run.json``: the competition's settings and key commitment, the table's
  four entrants and ``mine`` (the participant's entrant labels);
* ``results.json``: ``table_key``, the table's key (64 hex digits,
  ``HMAC(subkey("deal"), deal_key)``: it deals that table's hands only and
  tells nothing of another table's, of the bot seeds or of the master key);
  ``key``, the master key, only once the competition is closed;
* ``tables.jsonl``: the table's line; ``games.jsonl``: its four records, each
  without the other seats' stderr and transcripts (the participant's own kept).

So ``hearts-arena verify`` checks the table's deals and every hand under the
rules at once, and its bot seeds and table key against the master key after
the close; ``hearts-arena replay`` asks the participant's own bot any of its
decisions again, the other three seats scripted from the record.

Only a table whose status is ``done`` is offered, to a participant one of
whose submissions sat at it, and only once every table dealt from the same
deal key is finished (a gauntlet deal's tables, or a validation table played
again). The runner keeps each table's key when the table ends
(:func:`keep_table_key`); the web process, which holds no master key, only
reads it.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, insert, select

from arena.core.keys import MasterKey
from arena.server import db, store
from arena.server.export import (
    FORMAT,
    FORMAT_VERSION,
    entrants_json,
    jsonl,
    public_record,
    revealed_key,
    settings_json,
    table_line,
)
from arena.server.folder import SETTINGS_NAME, CompetitionSettings

#: The zip's entries' time stamp (zip's earliest): the same table gives the same bytes.
ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)


class DownloadError(Exception):
    """A download refused: ``status`` (HTTP) and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def keep_table_key(conn: Connection, table_id: int, key: MasterKey) -> None:
    """Store the table key of table ``table_id`` once it is ``done`` (the
    runner, when a table ends): a void table's is never kept, since its deal
    may be played again (a validation table's is)."""
    table = store.table_by_id(conn, table_id)
    if table is None or table.status != "done":
        return
    if conn.execute(
        select(db.table_keys.c.table_id).where(db.table_keys.c.table_id == table.id)
    ).first():
        return
    table_key = key.table_key(table.deal_key).hex()
    conn.execute(insert(db.table_keys).values(table_id=table.id, table_key=table_key))


def table_key_of(conn: Connection, table_id: int) -> str | None:
    """A finished table's key (64 hex digits), or ``None`` when none is kept."""
    value = conn.execute(
        select(db.table_keys.c.table_key).where(db.table_keys.c.table_id == table_id)
    ).scalar()
    return None if value is None else str(value)


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
    return buffer.getvalue()


def table_download(
    conn: Connection,
    settings: CompetitionSettings,
    participant_id: int,
    numbering: str,
    number: int,
) -> tuple[str, bytes]:
    """The zip of ``numbering`` table ``number`` for participant
    ``participant_id``: ``(file name, bytes)`` (see the module docstring).

    Raises:
        DownloadError: 404 no such finished table; 403 the participant sat
            not at it; 409 another table of its deal still in play, a
            gauntlet deal not yet open (every participant's table of it done),
            or no table key kept for it.
    """
    table = store.table_by_number(conn, numbering, number)
    if table is None or table.status != "done":
        raise DownloadError(404, f"no finished {numbering} table {number}")
    mine = [
        label
        for label in table.seating
        if (sid := store.submission_of(label)) is not None
        and (s := store.submission(conn, sid)) is not None
        and s.participant_id == participant_id
    ]
    if not mine:
        raise DownloadError(403, f"{numbering} table {number}: none of your submissions sat at it")
    if table.numbering == "gauntlet":
        from arena.server.gauntlet import deal_open  # scipy: only for a gauntlet's table

        if not deal_open(conn, table.deal_key):
            raise DownloadError(
                409,
                f"gauntlet deal {table.deal_key}: it opens once every participant's "
                "table of it is done; try later",
            )
    same_deal = conn.execute(
        select(db.tables.c.status).where(db.tables.c.deal_key == table.deal_key)
    ).scalars()
    if any(s in ("chosen", "playing") for s in same_deal):
        raise DownloadError(
            409, f"deal {table.deal_key}: another table of it is still in play; try later"
        )
    table_key = table_key_of(conn, table.id)
    if table_key is None:
        raise DownloadError(409, f"{numbering} table {number}: no table key kept for it")
    records = store.table_records(conn, table.id)
    games = [
        public_record(r, False, [s for s, n in enumerate(r.get("seats", [])) if n in mine])
        for r in records
    ]
    commitment = store.get_meta(conn, "key_sha256") or ""
    key_hex = revealed_key(conn)
    run = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "scope": "table",
        "key_commitment": commitment,
        "settings": settings_json(settings, commitment),
        "entrants": entrants_json(settings, conn, table.seating),
        "mine": mine,
        "numberings": {numbering: 1},
        "tables_total": 1,
        "games_total": len(games),
        "with_logs": False,
    }
    results = {
        "format": FORMAT,
        "scope": "table",
        "closed": key_hex is not None,
        "key": key_hex,
        "key_commitment": commitment,
        "table_key": table_key,
    }
    line = table_line(conn, table, [str(r.get("game_id")) for r in records])
    files = {
        "run.json": json.dumps(run, indent=2) + "\n",
        "results.json": json.dumps(results, indent=2) + "\n",
        "tables.jsonl": jsonl([line]),
        "games.jsonl": jsonl(games),
    }
    return f"hearts-{numbering}-{number}.zip", _zip(files)


def competition_settings(uploads: Path) -> CompetitionSettings:
    """The settings beside the uploads folder (``DIR/competition.toml``), the
    defaults when there is none (a test's bare database)."""
    path = uploads.parent / SETTINGS_NAME
    return CompetitionSettings.read(path) if path.is_file() else CompetitionSettings()


def routes(
    config: Any,
    authenticate: Callable[[Any], Awaitable[store.ParticipantRow]],
    api_error: type[Exception],
    respond: Callable[[Any], Any],
) -> list[Any]:
    """The download's Starlette route, mounted by :func:`arena.server.web.make_app`:
    ``config`` its :class:`~arena.server.web.WebConfig`, ``authenticate``
    its bearer-token check (raising ``api_error``, answered by ``respond``)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    database = config.database

    async def download(request: Request) -> Response:
        try:
            who = await authenticate(request)
        except api_error as exc:
            return respond(exc)  # type: ignore[no-any-return]
        numbering = str(request.path_params["numbering"])
        try:
            number = int(request.path_params["number"])
        except ValueError:
            number = -1
        try:
            settings = competition_settings(config.uploads)
            name, data = await database.read_async(
                table_download, settings, who.id, numbering, number
            )
        except DownloadError as exc:
            return JSONResponse({"error": str(exc)}, exc.status)
        return Response(
            data,
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    return [Route("/api/tables/{numbering}/{number}/download", download, methods=["GET"])]
