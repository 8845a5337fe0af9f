"""The queries both halves of the server use (the runner and the web process),
each a plain function of an open SQLAlchemy :class:`~sqlalchemy.Connection`
(run it in :meth:`arena.server.db.Database.write` / ``read``, or from Trio
through ``write_async`` / ``read_async``). Rows come back as frozen
dataclasses. Times are seconds since the epoch (UTC).

Entrant labels: a submission plays as ``s<id>`` (:func:`entrant_label`), a
house bot as ``house:<name>`` (:func:`house_label`); game records and the
``ratings`` and ``tables`` rows use these labels, the standings show the
participant's name beside them.

Errors: :class:`StoreError` (a one-line reason: an unknown name, a
duplicate) for what a caller can report to a user.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import BindParameter, Connection, Row, and_, bindparam, func, insert, select, update

from arena.server import db
from arena.server.rating import (  # re-exported: the pure half, without SQLAlchemy
    GAMES_TO_SETTLE,
    HOUSE_PREFIX,
    PRIOR,
    PRIOR_MU,
    PRIOR_SIGMA,
    Rating,
    entrant_label,
    house_label,
    submission_of,
)

__all__ = [  # the pure names of arena.server.rating are part of this module's interface
    "GAMES_TO_SETTLE",
    "HOUSE_PREFIX",
    "PRIOR",
    "PRIOR_MU",
    "PRIOR_SIGMA",
    "Rating",
    "StoreError",
    "entrant_label",
    "house_label",
    "submission_of",
]


class StoreError(ValueError):
    """A request the database cannot satisfy, with a one-line reason."""


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a token's text, as stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


@dataclass(frozen=True, slots=True)
class ParticipantRow:
    """A participant: ``status`` in :data:`arena.server.db.PARTICIPANT_STATES`;
    ``display_name`` the name pages show (:mod:`arena.server.sessions`)."""

    id: int
    name: str
    status: str
    created_at: float
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class SubmissionRow:
    """A submission (see :data:`arena.server.db.submissions` for each field)."""

    id: int
    participant_id: int
    sha256: str
    kind: str
    size: int
    received_at: float
    status: str
    failed_step: str | None
    reason: str | None
    check_output: str | None
    ranked_games: int
    joined_table: int | None
    faults_in_row: int
    attempts: int
    step_started_at: float | None
    ranked_at: float | None

    @property
    def label(self) -> str:
        """Its entrant label (``s<id>``)."""
        return entrant_label(self.id)


@dataclass(frozen=True, slots=True)
class TableRow:
    """A table (see :data:`arena.server.db.tables`); ``seating`` the four
    entrant labels in rotation 0's seat order, ``active`` the labels that could be chosen."""

    id: int
    numbering: str
    number: int
    deal_key: str
    seating: tuple[str, ...]
    fold_through: int
    focus: str | None
    active: tuple[str, ...]
    submission_id: int | None
    status: str
    void_reason: str | None
    attempt: int
    chosen_at: float
    finished_at: float | None


@dataclass(frozen=True, slots=True)
class StandingRow:
    """One row of the standings: a participant (or a house bot, ``house``
    true) and the submission shown for it.

    ``submission``: its id (``None`` for a house bot); ``status`` that
    submission's; ``new_games``: the ranked games of a newer passing
    submission still settling (``None`` when there is none: the note
    "new submission: n of 20 games").
    """

    participant: str
    submission: int | None
    entrant: str
    status: str
    mu: float
    sigma: float
    games: int
    house: bool
    new_games: int | None

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``, the standings' sort key."""
        return self.mu - 3 * self.sigma

    def to_json(self) -> dict[str, Any]:
        """The row of ``GET /api/standings`` (participant, submission, games,
        mu, sigma, conservative, status, house, new_games)."""
        return {
            "participant": self.participant,
            "submission": self.submission,
            "entrant": self.entrant,
            "status": self.status,
            "games": self.games,
            "mu": self.mu,
            "sigma": self.sigma,
            "conservative": self.conservative,
            "house": self.house,
            "new_games": self.new_games,
        }


def _participant(row: Row[Any]) -> ParticipantRow:
    return ParticipantRow(
        row.id, row.name, row.status, row.created_at, row.display_name or row.name
    )


_SUBMISSION_FIELDS = tuple(c.name for c in db.submissions.columns)


def _submission(row: Row[Any]) -> SubmissionRow:
    m = row._mapping  # (a new mapping at each access of the attribute)
    return SubmissionRow(**{name: m[name] for name in _SUBMISSION_FIELDS})


def _table(row: Row[Any]) -> TableRow:
    m = dict(row._mapping)
    m["seating"] = tuple(m["seating"])
    m["active"] = tuple(m["active"])
    return TableRow(**m)


# --- meta -------------------------------------------------------------------


def set_meta(conn: Connection, key: str, value: str) -> None:
    """Set a competition setting (``key_sha256``, ``schema_version``, ...)."""
    if conn.execute(select(db.meta.c.key).where(db.meta.c.key == key)).first():
        conn.execute(update(db.meta).where(db.meta.c.key == key).values(value=value))
    else:
        conn.execute(insert(db.meta).values(key=key, value=value))


# The statements the runner's scheduler and the web process run most, built
# once with bound parameters: building a statement and its cache key cost
# about as much as running it on SQLite (issue 29's load benchmark).
_META: Final = select(db.meta.c.value).where(db.meta.c.key == bindparam("key"))
_TABLE_BY_ID: Final = select(db.tables).where(db.tables.c.id == bindparam("id"))
_TABLES_IN: Final = select(db.tables).where(db.tables.c.numbering == bindparam("numbering"))
_STATUS_IN: Final = db.tables.c.status.in_(bindparam("statuses", expanding=True))
_SINCE: Final = db.tables.c.number >= bindparam("since")
_TABLES: Final = {
    (False, False): _TABLES_IN.order_by(db.tables.c.number),
    (True, False): _TABLES_IN.where(_STATUS_IN).order_by(db.tables.c.number),
    (False, True): _TABLES_IN.where(_SINCE).order_by(db.tables.c.number),
    (True, True): _TABLES_IN.where(_STATUS_IN, _SINCE).order_by(db.tables.c.number),
}
_NEXT_NUMBER: Final = select(func.max(db.tables.c.number)).where(
    db.tables.c.numbering == bindparam("numbering")
)
_RATED_THROUGH: Final = select(func.max(db.ratings.c.through))
_IDS: Final[BindParameter[list[int]]] = bindparam("ids", expanding=True)
_LADDER_STATUSES: Final = (
    select(db.tables.c.id, db.tables.c.number, db.tables.c.status)
    .where(db.tables.c.numbering == "ladder")
    .order_by(db.tables.c.number)
)
_DELETE_FOLD: Final = db.ratings.delete().where(db.ratings.c.through == bindparam("through"))
_SUBMISSIONS_BY_ID: Final = select(db.submissions).where(db.submissions.c.id.in_(_IDS))
_SUBMISSIONS_IN: Final = (
    select(db.submissions)
    .where(db.submissions.c.status == bindparam("status"))
    .order_by(db.submissions.c.id)
)
_SET_JOINED: Final = (
    update(db.submissions)
    .where(db.submissions.c.id.in_(_IDS), db.submissions.c.joined_table.is_(None))
    .values(joined_table=bindparam("table"))
)
_JOINED: Final = select(db.submissions.c.id, db.submissions.c.joined_table).where(
    db.submissions.c.id.in_(_IDS)
)
_ADD_RANKED: Final = (
    update(db.submissions)
    .where(db.submissions.c.id == bindparam("sid"))
    .values(
        ranked_games=db.submissions.c.ranked_games + bindparam("games"),
        faults_in_row=bindparam("runs"),
    )
)
_TABLE_BY_NUMBER: Final = select(db.tables).where(
    db.tables.c.numbering == bindparam("numbering"), db.tables.c.number == bindparam("number")
)
_FOLD_AT: Final = select(db.ratings).where(db.ratings.c.through == bindparam("through"))


def get_meta(conn: Connection, key: str) -> str | None:
    """A competition setting, ``None`` when unset."""
    return conn.execute(_META, {"key": key}).scalar()


# --- participants and tokens ------------------------------------------------


def add_participant(
    conn: Connection, name: str, now: float, display_name: str | None = None
) -> ParticipantRow:
    """A new active participant; its display name is ``display_name``
    (already checked: :func:`arena.server.sessions.check_display_name`) or
    ``name`` itself.

    Raises:
        StoreError: the name is taken, or the display name is, ignoring case.
    """
    if participant_by_name(conn, name) is not None:
        raise StoreError(f"a participant named {name!r} exists already")
    shown = name if display_name is None else display_name
    if display_name_taken(conn, shown):
        raise StoreError(f"the display name {shown!r} is taken (ignoring case)")
    pid = conn.execute(
        insert(db.participants).values(
            name=name,
            status="active",
            created_at=now,
            display_name=shown,
            display_key=shown.casefold(),
        )
    ).inserted_primary_key
    assert pid is not None
    return ParticipantRow(int(pid[0]), name, "active", now, shown)


def display_name_taken(conn: Connection, shown: str, other_than: int | None = None) -> bool:
    """Whether a participant (but ``other_than``) has the display name
    ``shown``, ignoring case (``str.casefold``)."""
    where = db.participants.c.display_key == shown.casefold()
    if other_than is not None:
        where = and_(where, db.participants.c.id != other_than)
    return conn.execute(select(db.participants.c.id).where(where)).first() is not None


def add_token(conn: Connection, participant_id: int, sha256: str, now: float) -> int:
    """Store a token's SHA-256 (hex, 64 digits) for a participant; its row id."""
    if len(sha256) != 64:
        raise StoreError("a token is stored as its SHA-256: 64 hexadecimal digits")
    tid = conn.execute(
        insert(db.tokens).values(participant_id=participant_id, sha256=sha256, created_at=now)
    ).inserted_primary_key
    assert tid is not None
    return int(tid[0])


def participant_by_name(conn: Connection, name: str) -> ParticipantRow | None:
    """The participant named ``name``, or ``None``."""
    row = conn.execute(select(db.participants).where(db.participants.c.name == name)).first()
    return None if row is None else _participant(row)


def participant_by_id(conn: Connection, participant_id: int) -> ParticipantRow | None:
    """The participant with id ``participant_id``, or ``None``."""
    row = conn.execute(
        select(db.participants).where(db.participants.c.id == participant_id)
    ).first()
    return None if row is None else _participant(row)


def participant_by_token_hash(conn: Connection, sha256: str) -> ParticipantRow | None:
    """The participant holding the unrevoked token whose SHA-256 is ``sha256``,
    whatever its status (the caller refuses a suspended or revoked one), or ``None``."""
    row = conn.execute(
        select(db.participants)
        .join(db.tokens, db.tokens.c.participant_id == db.participants.c.id)
        .where(and_(db.tokens.c.sha256 == sha256, db.tokens.c.revoked_at.is_(None)))
    ).first()
    return None if row is None else _participant(row)


def list_participants(conn: Connection) -> list[ParticipantRow]:
    """Every participant, by name (code point order, sorted here: a
    PostgreSQL database's collation would order names otherwise than SQLite)."""
    rows = conn.execute(select(db.participants))
    return sorted((_participant(r) for r in rows), key=lambda p: p.name)


def set_participant_status(conn: Connection, name: str, status: str, now: float) -> ParticipantRow:
    """Suspend (``"suspended"``: no new submissions, tables already chosen
    play), revoke (``"revoked"``: its tokens revoked, its submissions retired)
    or reactivate (``"active"``) a participant.

    Raises:
        StoreError: no such participant, or an unknown status.
    """
    if status not in db.PARTICIPANT_STATES:
        raise StoreError(f"unknown participant status {status!r}")
    p = participant_by_name(conn, name)
    if p is None:
        raise StoreError(f"no participant named {name!r}")
    conn.execute(update(db.participants).where(db.participants.c.id == p.id).values(status=status))
    if status == "revoked":
        conn.execute(
            update(db.tokens)
            .where(and_(db.tokens.c.participant_id == p.id, db.tokens.c.revoked_at.is_(None)))
            .values(revoked_at=now)
        )
        conn.execute(
            update(db.submissions)
            .where(
                and_(
                    db.submissions.c.participant_id == p.id,
                    db.submissions.c.status.in_(("queued", "check", "validation", "ranked")),
                )
            )
            .values(status="retired", reason="participant revoked")
        )
    return ParticipantRow(p.id, p.name, status, p.created_at, p.display_name)


# --- submissions -------------------------------------------------------------


def add_submission(
    conn: Connection, participant_id: int, sha256: str, kind: str, size: int, now: float
) -> tuple[SubmissionRow, list[int]]:
    """Record a received submission as ``queued``; a submission of the same
    participant still ``queued`` (waiting for its check) becomes
    ``superseded``. Returns the new row and the ids superseded.

    Raises:
        StoreError: ``kind`` not ``py`` or ``zip``, ``sha256`` not 64 hex digits.
    """
    if kind not in db.KINDS:
        raise StoreError(f"a submission is a .py file or a zip, not {kind!r}")
    if len(sha256) != 64:
        raise StoreError("a submission is stored by its SHA-256: 64 hexadecimal digits")
    waiting = [
        int(r[0])
        for r in conn.execute(
            select(db.submissions.c.id).where(
                and_(
                    db.submissions.c.participant_id == participant_id,
                    db.submissions.c.status == "queued",
                )
            )
        )
    ]
    if waiting:
        conn.execute(
            update(db.submissions)
            .where(db.submissions.c.id.in_(waiting))
            .values(status="superseded", reason="replaced by a newer submission before its check")
        )
    sid = conn.execute(
        insert(db.submissions).values(
            participant_id=participant_id,
            sha256=sha256,
            kind=kind,
            size=size,
            received_at=now,
            status="queued",
            ranked_games=0,
            faults_in_row=0,
            attempts=0,
        )
    ).inserted_primary_key
    assert sid is not None
    row = submission(conn, int(sid[0]))
    assert row is not None
    return row, waiting


def submission(conn: Connection, submission_id: int) -> SubmissionRow | None:
    """One submission, or ``None``."""
    row = conn.execute(select(db.submissions).where(db.submissions.c.id == submission_id)).first()
    return None if row is None else _submission(row)


def submissions_by_id(conn: Connection, ids: Sequence[int]) -> dict[int, SubmissionRow]:
    """The submissions of ``ids`` that exist, by id (one query)."""
    if not ids:
        return {}
    rows = conn.execute(_SUBMISSIONS_BY_ID, {"ids": list(ids)})
    return {s.id: s for s in map(_submission, rows)}


def submissions_of(conn: Connection, participant_id: int) -> list[SubmissionRow]:
    """A participant's submissions, newest first."""
    rows = conn.execute(
        select(db.submissions)
        .where(db.submissions.c.participant_id == participant_id)
        .order_by(db.submissions.c.id.desc())
    )
    return [_submission(r) for r in rows]


def submissions_in(conn: Connection, status: str) -> list[SubmissionRow]:
    """Every submission in ``status``, oldest first."""
    rows = conn.execute(_SUBMISSIONS_IN, {"status": status})
    return [_submission(r) for r in rows]


def queue_place(conn: Connection, submission_id: int) -> int | None:
    """A queued submission's place in the check queue (1: next), or ``None``
    when it is not queued."""
    s = submission(conn, submission_id)
    if s is None or s.status != "queued":
        return None
    ahead = conn.execute(
        select(func.count())
        .select_from(db.submissions)
        .where(and_(db.submissions.c.status == "queued", db.submissions.c.id < submission_id))
    ).scalar_one()
    return int(ahead) + 1


def start_step(conn: Connection, submission_id: int, step: str, now: float) -> None:
    """Move a submission into ``step`` (``"check"`` or ``"validation"``),
    counting an attempt (a step past its time budget runs once more)."""
    if step not in ("check", "validation"):
        raise StoreError(f"unknown step {step!r}")
    s = submission(conn, submission_id)
    if s is None:
        raise StoreError(f"no submission {submission_id}")
    attempts = s.attempts + 1 if s.status == step else 1
    conn.execute(
        update(db.submissions)
        .where(db.submissions.c.id == submission_id)
        .values(status=step, attempts=attempts, step_started_at=now)
    )


def record_step(
    conn: Connection,
    submission_id: int,
    step: str,
    passed: bool,
    now: float,
    reason: str | None = None,
    output: str | None = None,
) -> SubmissionRow:
    """Record the result of a gate step (``"check"`` or ``"validation"``).

    Passing the check moves the submission to ``validation``; passing
    validation makes it ``ranked`` and supersedes its participant's
    previously ranked submission (which stops being chosen; the standings
    keep showing it until the new one has :data:`GAMES_TO_SETTLE` games).
    Failing sets ``failed`` with the step and the one-line ``reason``.
    ``output`` (the check's report) is kept for the owner either way.

    Raises:
        StoreError: unknown step or submission.
    """
    if step not in ("check", "validation"):
        raise StoreError(f"unknown step {step!r}")
    s = submission(conn, submission_id)
    if s is None:
        raise StoreError(f"no submission {submission_id}")
    values: dict[str, Any] = {"step_started_at": None}
    if output is not None:
        values["check_output"] = output
    if not passed:
        line = (reason or "failed").splitlines()[0] if (reason or "").strip() else "failed"
        values.update(status="failed", failed_step=step, reason=line[:300])
    elif step == "check":
        values.update(status="validation", attempts=0)
    else:
        values.update(status="ranked", attempts=0, ranked_at=now)
        conn.execute(
            update(db.submissions)
            .where(
                and_(
                    db.submissions.c.participant_id == s.participant_id,
                    db.submissions.c.status == "ranked",
                    db.submissions.c.id != submission_id,
                )
            )
            .values(status="superseded", reason=f"replaced by submission {submission_id}")
        )
    conn.execute(update(db.submissions).where(db.submissions.c.id == submission_id).values(values))
    row = submission(conn, submission_id)
    assert row is not None
    return row


def retire_submission(conn: Connection, submission_id: int, reason: str) -> None:
    """Take a submission out of ranked play (``retired``, with a one-line reason)."""
    conn.execute(
        update(db.submissions)
        .where(db.submissions.c.id == submission_id)
        .values(status="retired", reason=reason.splitlines()[0][:300] if reason else "retired")
    )


def set_joined_table(conn: Connection, submission_id: int, table: int) -> None:
    """Record the first ladder table number chosen while the submission was ranked."""
    conn.execute(
        update(db.submissions)
        .where(and_(db.submissions.c.id == submission_id, db.submissions.c.joined_table.is_(None)))
        .values(joined_table=table)
    )


def set_joined_tables(
    conn: Connection, submission_ids: Sequence[int], table: int
) -> dict[int, int]:
    """:func:`set_joined_table` for several submissions in one statement;
    returns each one's joined table (submission id -> table number).

    Raises:
        KeyError: a submission that does not exist.
    """
    if not submission_ids:
        return {}
    ids = list(submission_ids)
    conn.execute(_SET_JOINED, {"ids": ids, "table": table})
    rows = conn.execute(_JOINED, {"ids": ids}).all()
    firsts = {int(r[0]): int(r[1]) for r in rows if r[1] is not None}
    return {sid: firsts[sid] for sid in ids}


def add_ranked_games(conn: Connection, submission_id: int, games: int, faults_in_row: int) -> None:
    """Add ranked games to a submission and set its run of faulted games."""
    conn.execute(_ADD_RANKED, {"sid": submission_id, "games": games, "runs": faults_in_row})


# --- tables and games --------------------------------------------------------


def add_table(
    conn: Connection,
    numbering: str,
    number: int,
    deal_key: str,
    seating: Sequence[str],
    active: Sequence[str],
    now: float,
    fold_through: int = 0,
    focus: str | None = None,
    submission_id: int | None = None,
) -> TableRow:
    """Store a chosen table (status ``chosen``).

    Raises:
        StoreError: an unknown numbering, not four seats, or the number taken.
    """
    if numbering not in db.NUMBERINGS:
        raise StoreError(f"unknown numbering {numbering!r}")
    if len(seating) != 4 or len(set(seating)) != 4:
        raise StoreError(f"a table seats four different entrants, got {list(seating)}")
    if table_by_number(conn, numbering, number) is not None:
        raise StoreError(f"{numbering} table {number} exists already")
    tid = conn.execute(
        insert(db.tables).values(
            numbering=numbering,
            number=number,
            deal_key=deal_key,
            seating=list(seating),
            fold_through=fold_through,
            focus=focus,
            active=list(active),
            submission_id=submission_id,
            status="chosen",
            attempt=0,
            chosen_at=now,
        )
    ).inserted_primary_key
    assert tid is not None
    row = table_by_id(conn, int(tid[0]))
    assert row is not None
    return row


def table_by_id(conn: Connection, table_id: int) -> TableRow | None:
    """One table by row id, or ``None``."""
    row = conn.execute(_TABLE_BY_ID, {"id": table_id}).first()
    return None if row is None else _table(row)


def table_by_number(conn: Connection, numbering: str, number: int) -> TableRow | None:
    """One table by numbering and number, or ``None``."""
    row = conn.execute(_TABLE_BY_NUMBER, {"numbering": numbering, "number": number}).first()
    return None if row is None else _table(row)


def tables_in(
    conn: Connection,
    numbering: str,
    statuses: Sequence[str] | None = None,
    since: int | None = None,
) -> list[TableRow]:
    """The tables of a numbering (in one of ``statuses`` if given; numbered
    ``since`` or later if given), by number."""
    q = _TABLES[statuses is not None, since is not None]
    params: dict[str, Any] = {"numbering": numbering}
    if statuses is not None:
        params["statuses"] = list(statuses)
    if since is not None:
        params["since"] = since
    return [_table(r) for r in conn.execute(q, params)]


def past_ladder_tables(
    conn: Connection, since: int
) -> list[tuple[int, tuple[str, ...], str | None]]:
    """The ladder tables numbered ``since`` or later, by number, as the
    choice of a later table reads them: ``(number, seating, focus)`` (three
    columns, not the whole row with its field of every entrant)."""
    rows = conn.execute(
        select(db.tables.c.number, db.tables.c.seating, db.tables.c.focus)
        .where(db.tables.c.numbering == "ladder", db.tables.c.number >= since)
        .order_by(db.tables.c.number)
    ).all()
    return [(int(r[0]), tuple(r[1]), r[2]) for r in rows]


def ladder_statuses(conn: Connection) -> tuple[list[int], list[int], list[str]]:
    """The ladder's tables by number as three lists: ids, numbers, statuses
    (three narrow columns: the fold asks at every table's end)."""
    rows = conn.execute(_LADDER_STATUSES).all()
    return [int(r[0]) for r in rows], [int(r[1]) for r in rows], [str(r[2]) for r in rows]


def seated_in_play(conn: Connection) -> set[str]:
    """Every entrant seated at a table chosen or playing, of any numbering."""
    rows = conn.execute(
        select(db.tables.c.seating).where(db.tables.c.status.in_(("chosen", "playing")))
    )
    return {str(name) for r in rows for name in r[0]}


def next_number(conn: Connection, numbering: str) -> int:
    """The number the next table of ``numbering`` gets (0 for the first)."""
    top = conn.execute(_NEXT_NUMBER, {"numbering": numbering}).scalar()
    return 0 if top is None else int(top) + 1


def finished_tables(
    conn: Connection, numbering: str = "ladder", limit: int = 100, before: int | None = None
) -> list[TableRow]:
    """Finished (``done``) tables, newest first: at most ``limit``, numbered
    below ``before`` when given (paging)."""
    q = select(db.tables).where(
        and_(db.tables.c.numbering == numbering, db.tables.c.status == "done")
    )
    if before is not None:
        q = q.where(db.tables.c.number < before)
    rows = conn.execute(q.order_by(db.tables.c.number.desc()).limit(limit))
    return [_table(r) for r in rows]


def void_tables(conn: Connection) -> list[TableRow]:
    """Every void table (with its reason), by numbering and number."""
    rows = conn.execute(
        select(db.tables)
        .where(db.tables.c.status == "void")
        .order_by(db.tables.c.numbering, db.tables.c.number)
    )
    return [_table(r) for r in rows]


def set_table_status(
    conn: Connection,
    table_id: int,
    status: str,
    now: float,
    reason: str | None = None,
) -> None:
    """Move a table to ``status``: ``playing`` counts an attempt, ``done`` and
    ``void`` (with a one-line ``reason``) set its finish time; ``chosen`` puts
    it back to be played again (its games deleted)."""
    if status not in db.TABLE_STATES:
        raise StoreError(f"unknown table status {status!r}")
    values: dict[str, Any] = {"status": status}
    if status == "playing":
        values["attempt"] = db.tables.c.attempt + 1
    if status in ("done", "void"):
        values["finished_at"] = now
    if status == "void":
        values["void_reason"] = (reason or "void").splitlines()[0][:300]
    if status == "chosen":
        conn.execute(db.games.delete().where(db.games.c.table_id == table_id))
    conn.execute(update(db.tables).where(db.tables.c.id == table_id).values(values))


def add_game(conn: Connection, table_id: int, rotation: int, record: Mapping[str, Any]) -> None:
    """Store one game record of a table (rotation 0..3); a second record of
    the same rotation replaces the first (a replayed table)."""
    conn.execute(
        db.games.delete().where(
            and_(db.games.c.table_id == table_id, db.games.c.rotation == rotation)
        )
    )
    conn.execute(insert(db.games).values(table_id=table_id, rotation=rotation, record=dict(record)))


def replace_games(conn: Connection, table_id: int, records: Sequence[Mapping[str, Any]]) -> None:
    """Store a table's game records (each with its ``rotation``, 0..3) in
    place of any stored before: one DELETE and one INSERT of every row (a
    table's end stores its games so, in its own transaction)."""
    conn.execute(db.games.delete().where(db.games.c.table_id == table_id))
    if records:
        conn.execute(
            insert(db.games),
            [
                {"table_id": table_id, "rotation": int(r["rotation"]), "record": dict(r)}
                for r in records
            ],
        )


def table_records(conn: Connection, table_id: int) -> list[dict[str, Any]]:
    """A table's game records, by rotation."""
    rows = conn.execute(
        select(db.games.c.record)
        .where(db.games.c.table_id == table_id)
        .order_by(db.games.c.rotation)
    )
    return [dict(r[0]) for r in rows]


# --- the rating fold ----------------------------------------------------------


def store_fold(conn: Connection, through: int, ratings: Mapping[str, Rating]) -> None:
    """Store the fold over ladder tables ``0 .. through-1``: every entrant's rating."""
    conn.execute(_DELETE_FOLD, {"through": through})
    if ratings:
        conn.execute(
            insert(db.ratings),
            [
                {
                    "through": through,
                    "entrant": e,
                    "submission_id": submission_of(e),
                    "mu": r.mu,
                    "sigma": r.sigma,
                    "games": r.games,
                }
                for e, r in sorted(ratings.items())
            ],
        )


def rated_through(conn: Connection) -> int:
    """Ladder tables folded into the newest stored fold (0: none)."""
    top = conn.execute(_RATED_THROUGH).scalar()
    return 0 if top is None else int(top)


def fold_at(conn: Connection, through: int) -> dict[str, Rating] | None:
    """The fold over ladder tables ``0 .. through-1`` (entrant -> rating);
    ``{}`` for ``through == 0`` (everyone at the prior), and for a point the
    fold has passed with nothing rated yet (every table before it void: an
    empty fold stores no row); ``None`` when that fold is not reached yet."""
    rows = conn.execute(_FOLD_AT, {"through": through}).all()
    if not rows:
        return {} if through == 0 or through <= rated_through(conn) else None
    return {r.entrant: Rating(r.mu, r.sigma, r.games) for r in rows}


# --- standings ------------------------------------------------------------------


def standings_rows(conn: Connection) -> tuple[int, list[StandingRow]]:
    """``(rated_through, rows)``: one row per participant with a submission
    that passed validation, and one per house bot that has sat at a ladder
    table; sorted by conservative rating, best first.

    A participant's row shows its latest passing submission once that has
    :data:`GAMES_TO_SETTLE` ranked games, until then the previous passing one
    (with ``new_games`` the new one's count); ratings from the newest fold
    (the prior for a submission not rated yet).
    """
    through = rated_through(conn)
    fold = fold_at(conn, through) or {}
    passed = conn.execute(
        select(db.submissions, db.participants.c.name)
        .join(db.participants, db.participants.c.id == db.submissions.c.participant_id)
        .where(db.submissions.c.ranked_at.is_not(None))
        .order_by(db.submissions.c.participant_id, db.submissions.c.id.desc())
    ).all()
    by_participant: dict[int, list[tuple[SubmissionRow, str]]] = {}
    for r in passed:
        s = _submission(r)
        by_participant.setdefault(s.participant_id, []).append((s, r.name))
    rows: list[StandingRow] = []
    for subs in by_participant.values():
        latest, name = subs[0]
        shown, new = latest, None
        if latest.ranked_games < GAMES_TO_SETTLE and len(subs) > 1:
            shown, new = subs[1][0], latest.ranked_games
        r_ = fold.get(shown.label, PRIOR)
        rows.append(
            StandingRow(
                name, shown.id, shown.label, shown.status, r_.mu, r_.sigma, r_.games, False, new
            )
        )
    for entrant, r_ in fold.items():
        if entrant.startswith(HOUSE_PREFIX):
            rows.append(
                StandingRow(entrant, None, entrant, "house", r_.mu, r_.sigma, r_.games, True, None)
            )
    rows.sort(key=lambda x: (-x.conservative, x.participant))
    return through, rows


def tables_in_play(conn: Connection) -> int:
    """Tables chosen or playing, of every numbering."""
    n = conn.execute(
        select(func.count())
        .select_from(db.tables)
        .where(db.tables.c.status.in_(("chosen", "playing")))
    ).scalar_one()
    return int(n)


def standings_json(conn: Connection) -> dict[str, Any]:
    """The body of ``GET /api/standings`` (the tooling contract of issue 27):
    ``rated_through`` (ladder tables folded), ``tables_in_play`` and ``rows``
    (:meth:`StandingRow.to_json`, best first: each holds ``participant``,
    ``submission``, ``games``, ``mu``, ``sigma`` and ``conservative``)."""
    through, rows = standings_rows(conn)
    return {
        "rated_through": through,
        "tables_in_play": tables_in_play(conn),
        "rows": [r.to_json() for r in rows],
    }
