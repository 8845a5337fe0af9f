"""The web process's queries beside :mod:`arena.server.store`: the rate limit
of submissions, a participant's submissions with each step's result, the
standings as ``GET /api/standings`` answers, the finished tables and the
names behind entrant labels. Each is a plain function of an open
SQLAlchemy :class:`~sqlalchemy.Connection` (run it through
:meth:`arena.server.db.Database.read_async` / ``write_async``). Times are
seconds since the epoch (UTC).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, and_, func, select, true

from arena.protocol.codec import clean_text
from arena.server import db, store

#: Seconds in the daily window of the rate limit.
DAY_SECONDS: Final = 86400.0


@dataclass(frozen=True, slots=True)
class RateLimit:
    """Submissions a participant may make: one per ``interval_seconds``,
    ``per_day`` in any 24 hours (issue 27's defaults: one per 2 minutes, 20 a day)."""

    interval_seconds: float = 120.0
    per_day: int = 20


def retry_after(conn: Connection, participant_id: int, limit: RateLimit, now: float) -> int:
    """Seconds (rounded up, at least 1) before ``participant_id`` may submit
    again under ``limit``, or 0 when it may now. Counts every submission
    received (refused uploads never reach the database)."""
    since = now - DAY_SECONDS
    where = and_(
        db.submissions.c.participant_id == participant_id, db.submissions.c.received_at > since
    )
    count, latest = conn.execute(
        select(func.count(), func.max(db.submissions.c.received_at))
        .select_from(db.submissions)
        .where(where)
    ).one()
    wait = 0.0
    if latest is not None and now - float(latest) < limit.interval_seconds:
        wait = float(latest) + limit.interval_seconds - now
    if int(count) >= limit.per_day:
        # The day's window frees a place when its oldest submissions age out.
        times = [
            float(r[0])
            for r in conn.execute(
                select(db.submissions.c.received_at)
                .where(where)
                .order_by(db.submissions.c.received_at)
            )
        ]
        wait = max(wait, times[int(count) - limit.per_day] + DAY_SECONDS - now)
    return max(1, math.ceil(wait)) if wait > 0 else 0


def steps(s: store.SubmissionRow, place: int | None) -> list[dict[str, Any]]:
    """Each step of the gate with its result: ``[{"step", "result", ...}]``
    for ``check``, ``validation`` and ``ranked``; ``result`` is ``passed``,
    ``failed`` (with ``reason``), ``running``, ``waiting`` (``place`` in the
    queue for the check), ``skipped`` (superseded before it) or, for
    ``ranked``, ``playing`` / ``left`` with ``games``."""
    names = ("check", "validation", "ranked")
    out: list[dict[str, Any]] = [{"step": n, "result": "waiting"} for n in names]
    passed_gate = s.ranked_at is not None
    if s.status == "queued":
        out[0]["place"] = place
    elif s.status == "check":
        out[0]["result"] = "running"
    elif s.status == "validation":
        out[0]["result"] = "passed"
        out[1]["result"] = "running"
    elif s.status == "failed":
        at = names.index(s.failed_step) if s.failed_step in names else 0
        for i in range(at):
            out[i]["result"] = "passed"
        out[at].update(result="failed", reason=clean_text(s.reason or "failed", 300))
        for later in out[at + 1 :]:
            later["result"] = "skipped"
    elif passed_gate:
        out[0]["result"] = out[1]["result"] = "passed"
        out[2]["result"] = "playing" if s.status == "ranked" else "left"
        if s.status != "ranked":
            out[2]["reason"] = clean_text(s.reason or s.status, 300)
    else:  # superseded or retired before passing
        for step in out:
            step["result"] = "skipped"
        out[0]["reason"] = clean_text(s.reason or s.status, 300)
    out[2]["games"] = s.ranked_games
    return out


def submission_json(conn: Connection, s: store.SubmissionRow, owner: bool) -> dict[str, Any]:
    """A submission as the API shows it to its owner (``owner``: with the
    check's output) or to anyone (without)."""
    place = store.queue_place(conn, s.id) if s.status == "queued" else None
    data: dict[str, Any] = {
        "submission": s.id,
        "sha256": s.sha256,
        "kind": s.kind,
        "size": s.size,
        "received_at": s.received_at,
        "status": s.status,
        "place": place,
        "failed_step": s.failed_step,
        "reason": clean_text(s.reason, 300) if s.reason else None,
        "ranked_games": s.ranked_games,
        "steps": steps(s, place),
    }
    if owner:
        data["output"] = s.check_output
    return data


def my_submissions(conn: Connection, participant_id: int) -> list[dict[str, Any]]:
    """``GET /api/submissions``: the participant's submissions, newest first,
    with each step's result and the check's output (theirs only)."""
    return [submission_json(conn, s, True) for s in store.submissions_of(conn, participant_id)]


def closed_at(conn: Connection) -> float | None:
    """When the competition was closed (``serve --close``; seconds since the
    epoch), ``None`` while open."""
    value = store.get_meta(conn, "closed_at")
    return None if value is None else float(value)


def revealed_key(conn: Connection) -> str | None:
    """The key (64 hex digits) once the competition is closed, else ``None``
    (the runner's key file is never read here: ``--close`` stores it)."""
    return store.get_meta(conn, "revealed_key") if closed_at(conn) is not None else None


def competition_json(conn: Connection) -> dict[str, Any]:
    """What the home page and ``GET /api/standings`` say of the key:
    ``key_sha256`` (its commitment, shown since ``--init``), ``closed_at``
    (``None`` while open) and ``key`` (``None`` until the close)."""
    return {
        "key_sha256": store.get_meta(conn, "key_sha256"),
        "closed_at": closed_at(conn),
        "key": revealed_key(conn),
    }


def standings_json(conn: Connection) -> dict[str, Any]:
    """``GET /api/standings``: ``competition`` (:func:`competition_json`: the
    key's SHA-256, and the key once closed), ``rated_through`` (ladder tables folded),
    ``tables_in_play`` and ``rows`` (:meth:`arena.server.store.StandingRow.to_json`
    with ``rank`` from 1 and ``note``: "new submission: n of 20 games" while a
    newer passing submission settles, else ``""``)."""
    through, rows = store.standings_rows(conn)
    in_play = len(store.tables_in(conn, "ladder", ("chosen", "playing")))
    out = []
    for rank, row in enumerate(rows, start=1):
        data = row.to_json()
        data["participant"] = clean_text(row.participant)
        data["rank"] = rank
        data["note"] = (
            f"new submission: {row.new_games} of {store.GAMES_TO_SETTLE} games"
            if row.new_games is not None
            else ""
        )
        out.append(data)
    return {
        "competition": competition_json(conn),
        "rated_through": through,
        "tables_in_play": in_play,
        "rows": out,
    }


def entrant_names(conn: Connection) -> dict[str, str]:
    """Entrant label (``s<id>``) -> the participant's name (cleaned), for
    every submission; a house bot's label is its own name."""
    rows = conn.execute(
        select(db.submissions.c.id, db.participants.c.name).join(
            db.participants, db.participants.c.id == db.submissions.c.participant_id
        )
    )
    return {store.entrant_label(int(r.id)): clean_text(r.name) for r in rows}


def shown_name(label: str, names: dict[str, str]) -> str:
    """What a page shows for an entrant label: ``NAME (s12)`` for a
    submission, the label for a house bot."""
    name = names.get(label)
    return f"{name} ({label})" if name else clean_text(label)


def finished_tables_json(
    conn: Connection, limit: int = 100, before: int | None = None
) -> list[dict[str, Any]]:
    """Finished ladder tables, newest first: ``number``, ``deal_key``,
    ``seating`` (names shown), ``finished_at`` and ``points`` (each seat's
    total over the four games, by rotation 0's seat order, ``None`` when the
    records do not say)."""
    names = entrant_names(conn)
    out = []
    for t in store.finished_tables(conn, "ladder", limit, before):
        out.append(
            {
                "number": t.number,
                "deal_key": t.deal_key,
                "seating": [shown_name(label, names) for label in t.seating],
                "finished_at": t.finished_at,
                "points": table_points(t, store.table_records(conn, t.id)),
            }
        )
    return out


def table_points(t: store.TableRow, records: list[dict[str, Any]]) -> list[int] | None:
    """Each entrant's total points over a table's games (in ``t.seating``'s
    order), from the records' ``seats`` and ``scores``; ``None`` when a
    record lacks them."""
    totals = dict.fromkeys(t.seating, 0)
    for rec in records:
        seats, scores = rec.get("seats"), rec.get("scores")
        if not isinstance(seats, list) or not isinstance(scores, list):
            return None
        for name, score in zip(seats, scores, strict=False):
            if name in totals and isinstance(score, int):
                totals[name] += score
    return [totals[label] for label in t.seating]


# The statements of the two marks, built once: the web process reads a mark
# at each request of /api/standings and each look of the live pages, and
# building a statement (and its cache key) cost about as much as running it.
_RATED_THROUGH: Final = select(func.max(db.ratings.c.through))
_TABLES_MARK: Final = select(
    func.count(), func.max(db.tables.c.finished_at), func.sum(db.tables.c.attempt)
)
_SUBMISSIONS_MARK: Final = select(
    func.count(), func.max(db.submissions.c.id), func.sum(db.submissions.c.ranked_games)
)
_STATUSES: Final = select(db.submissions.c.status).order_by(db.submissions.c.id)
_LADDER_IN_PLAY: Final = (
    select(func.count())
    .select_from(db.tables)
    .where(db.tables.c.numbering == "ladder", db.tables.c.status.in_(("chosen", "playing")))
)
_PEOPLE: Final = select(db.participants.c.name, db.participants.c.status).order_by(
    db.participants.c.id
)


def change_mark(conn: Connection) -> tuple[Any, ...]:
    """What changes whenever the public pages would: the newest fold, the
    tables finished and in play, the submissions and their statuses."""
    top = conn.execute(_RATED_THROUGH).scalar()
    through = 0 if top is None else int(top)
    tables = conn.execute(_TABLES_MARK).one()
    subs = conn.execute(_SUBMISSIONS_MARK).one()
    statuses = tuple(conn.execute(_STATUSES).scalars())
    return (through, *tables, *subs, hash(statuses))


def _meta_value(key: str) -> Any:
    return select(db.meta.c.value).where(db.meta.c.key == key).scalar_subquery()


# standings_mark's numbers in one statement (one row: each part an aggregate
# subquery, cross-joined), not seven: the mark is read at every request of
# /api/standings, and each statement cost its building, a round trip and
# its result's set-up.
_THROUGH_NOW: Final = func.coalesce(select(func.max(db.ratings.c.through)).scalar_subquery(), 0)
_T: Final = select(
    func.count().label("n"),
    func.max(db.tables.c.finished_at).label("finished"),
    func.sum(db.tables.c.attempt).label("attempts"),
).subquery()
_S: Final = select(
    func.count().label("n"),
    func.max(db.submissions.c.id).label("top"),
    func.sum(db.submissions.c.ranked_games).label("ranked"),
).subquery()
_R: Final = (
    select(
        func.count().label("n"),
        func.sum(db.ratings.c.mu).label("mu"),
        func.sum(db.ratings.c.sigma).label("sigma"),
    )
    .where(db.ratings.c.through == _THROUGH_NOW)
    .subquery()
)
_L: Final = _LADDER_IN_PLAY.subquery()
_STANDINGS_NUMBERS: Final = select(
    _THROUGH_NOW,
    _T.c.n,
    _T.c.finished,
    _T.c.attempts,
    _S.c.n,
    _S.c.top,
    _S.c.ranked,
    _R.c.n,
    _R.c.mu,
    _R.c.sigma,
    _L.c[0],
    _meta_value("key_sha256"),
    _meta_value("revealed_key"),
    _meta_value("closed_at"),
).select_from(_T.join(_S, true()).join(_R, true()).join(_L, true()))


def standings_mark(conn: Connection) -> tuple[Any, ...]:
    """What :func:`standings_json` depends on, cheaper to read (about a
    seventh of it): what :func:`change_mark` reads (the newest fold, the
    tables finished and in play, the submissions and their statuses), the
    ladder tables in play, the newest fold's ratings (a fold made again by
    an action keeps its ``through``), the participants' names and statuses,
    the close and the key; three statements. The web process answers
    ``GET /api/standings`` from its last answer while this is unchanged."""
    numbers = tuple(conn.execute(_STANDINGS_NUMBERS).one())
    statuses = tuple(conn.execute(_STATUSES).scalars())
    people = conn.execute(_PEOPLE).all()
    return (*numbers, hash(statuses), hash(tuple(tuple(p) for p in people)))
