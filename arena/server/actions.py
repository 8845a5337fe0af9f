"""The organiser's actions (issue 28, "Who sees what"): suspend and restore a
participant, run a submission's validation (or check) again, play a ladder
table again, void a ladder table by hand with a reason.

Two halves, as the server's two processes:

* the **web process** records an action (:func:`request_action`: a row of
  :data:`arena.server.db.actions`, ``pending``) when the organiser posts its
  form; it never changes the competition itself;
* the **runner** applies the pending actions (:func:`apply_pending`, the one
  call its scheduler makes each round, before it chooses tables), each in a
  write transaction of its own: the action becomes ``applied`` or
  ``refused``, with a one-line ``result``, and is logged (``action``).

Playing a table again or voiding a finished one changes the ratings: the
stored folds past that table are dropped, the games the table had counted
taken off its submissions' ranked games, and the fold is made again from it
(at once for a void; for a replay once the table is played again). The new
fold is recorded on the action (``refold``: ``{"from": t, "through": n,
"ratings": {entrant: [mu, sigma, games]}}`` at ``refolded_at``) and logged
(``refolded``); it equals a fold made afresh over the tables as they now
stand (tests/server/test_actions.py).

Errors: :class:`ActionError`, one line, for an action that cannot be
recorded (an unknown target, a void without a reason).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, and_, delete, insert, select, update

from arena.protocol.codec import clean_text
from arena.server import db, store

#: Characters of an organiser's reason kept (a void's reason is one line).
REASON_CHARS: Final = 200
#: The label each kind of action is shown with on the pages.
LABELS: Final = {
    "suspend": "suspended",
    "restore": "restored",
    "revalidate": "validation run again",
    "replay": "table played again",
    "void": "voided by hand",
}

#: The runner's fold step (:meth:`arena.server.runner.Runner._fold`): folds
#: the ladder from the stored ``rated_through`` as far as it reaches; its
#: log events.
Fold = Callable[[Connection], list[tuple[str, dict[str, Any]]]]
#: The runner's log (:meth:`arena.server.runner.Runner.log`).
Log = Callable[..., None]


class ActionError(ValueError):
    """An action that cannot be recorded (one line)."""


@dataclass(frozen=True, slots=True)
class ActionRow:
    """One organiser action (see :data:`arena.server.db.actions`)."""

    id: int
    kind: str
    participant_id: int | None
    submission_id: int | None
    table_id: int | None
    reason: str | None
    status: str
    result: str | None
    requested_at: float
    applied_at: float | None
    refold: dict[str, Any] | None
    refolded_at: float | None

    @property
    def label(self) -> str:
        """What the pages call it (``suspended``, ``voided by hand``...)."""
        return LABELS.get(self.kind, self.kind)


def _row(row: Any) -> ActionRow:
    return ActionRow(**{c.name: row._mapping[c.name] for c in db.actions.columns})


# -- the web process's half: recording ------------------------------------------


def request_action(
    conn: Connection,
    kind: str,
    now: float,
    *,
    participant_id: int | None = None,
    submission_id: int | None = None,
    table_number: int | None = None,
    reason: str | None = None,
) -> ActionRow:
    """Record an organiser action, ``pending`` until the runner applies it.
    ``suspend``/``restore`` name a participant, ``revalidate`` a submission,
    ``replay``/``void`` a ladder table by number; ``void`` needs a ``reason``
    (cleaned, at most :data:`REASON_CHARS` characters). The same action on
    the same target still pending is returned, not recorded twice.

    Raises:
        ActionError: an unknown kind or target, or a void without a reason.
    """
    if kind not in db.ACTION_KINDS:
        raise ActionError(f"unknown action {kind!r} ({', '.join(db.ACTION_KINDS)})")
    table_id: int | None = None
    if kind in ("suspend", "restore"):
        if participant_id is None or store.participant_by_id(conn, participant_id) is None:
            raise ActionError(f"{kind}: no participant {participant_id}")
        submission_id = None
    elif kind == "revalidate":
        if submission_id is None or store.submission(conn, submission_id) is None:
            raise ActionError(f"run the validation again: no submission {submission_id}")
        participant_id = None
    else:
        table = (
            store.table_by_number(conn, "ladder", table_number)
            if table_number is not None
            else None
        )
        if table is None:
            raise ActionError(f"{kind}: no ladder table {table_number}")
        table_id, participant_id, submission_id = table.id, None, None
    text = clean_text(reason or "", REASON_CHARS) or None
    if kind == "void" and text is None:
        raise ActionError("void a table: give a reason (it is shown with the table)")
    same = conn.execute(
        select(db.actions).where(
            and_(
                db.actions.c.kind == kind,
                db.actions.c.status == "pending",
                _same(db.actions.c.participant_id, participant_id),
                _same(db.actions.c.submission_id, submission_id),
                _same(db.actions.c.table_id, table_id),
            )
        )
    ).first()
    if same is not None:
        return _row(same)
    aid = conn.execute(
        insert(db.actions).values(
            kind=kind,
            participant_id=participant_id,
            submission_id=submission_id,
            table_id=table_id,
            reason=text,
            status="pending",
            requested_at=now,
        )
    ).inserted_primary_key
    assert aid is not None
    found = action(conn, int(aid[0]))
    assert found is not None
    return found


def _same(column: Any, value: int | None) -> Any:
    return column.is_(None) if value is None else column == value


def action(conn: Connection, action_id: int) -> ActionRow | None:
    """One action, or ``None``."""
    row = conn.execute(select(db.actions).where(db.actions.c.id == action_id)).first()
    return None if row is None else _row(row)


def actions_on(
    conn: Connection,
    *,
    participant_id: int | None = None,
    submission_id: int | None = None,
    table_id: int | None = None,
) -> list[ActionRow]:
    """The actions on one participant, submission or table, oldest first."""
    q = select(db.actions)
    if participant_id is not None:
        q = q.where(db.actions.c.participant_id == participant_id)
    if submission_id is not None:
        q = q.where(db.actions.c.submission_id == submission_id)
    if table_id is not None:
        q = q.where(db.actions.c.table_id == table_id)
    return [_row(r) for r in conn.execute(q.order_by(db.actions.c.id))]


def all_actions(conn: Connection, limit: int = 500) -> list[ActionRow]:
    """The newest ``limit`` actions, newest first."""
    rows = conn.execute(select(db.actions).order_by(db.actions.c.id.desc()).limit(limit))
    return [_row(r) for r in rows]


# -- the runner's half: applying -----------------------------------------------------


def _finish(conn: Connection, a: ActionRow, status: str, result: str, now: float) -> None:
    conn.execute(
        update(db.actions)
        .where(db.actions.c.id == a.id)
        .values(status=status, result=clean_text(result, 300), applied_at=now)
    )


def _uncount(conn: Connection, table: store.TableRow) -> None:
    """Take a finished ladder table's games off its submissions' ranked games."""
    for name in set(table.seating):
        sid = store.submission_of(name)
        if sid is None:
            continue
        games = sum(1 for r in store.table_records(conn, table.id) if name in r.get("seats", []))
        conn.execute(
            update(db.submissions)
            .where(db.submissions.c.id == sid)
            .values(ranked_games=db.submissions.c.ranked_games - games)
        )
        conn.execute(
            update(db.submissions)
            .where(and_(db.submissions.c.id == sid, db.submissions.c.ranked_games < 0))
            .values(ranked_games=0)
        )


def _drop_folds_from(conn: Connection, number: int) -> bool:
    """Drop every stored fold that has ladder table ``number`` in it; whether
    there was one."""
    folded = store.rated_through(conn) > number
    conn.execute(delete(db.ratings).where(db.ratings.c.through > number))
    return folded


def _apply_participant(conn: Connection, a: ActionRow, now: float) -> tuple[str, str]:
    assert a.participant_id is not None
    p = store.participant_by_id(conn, a.participant_id)
    if p is None:
        return "refused", f"no participant {a.participant_id}"
    if p.status == "revoked":
        return "refused", f"participant {p.name} is revoked"
    want = "suspended" if a.kind == "suspend" else "active"
    if p.status == want:
        return "applied", f"participant {p.name} was {want} already"
    store.set_participant_status(conn, p.name, want, now)
    return "applied", f"participant {p.name} {'suspended' if want == 'suspended' else 'restored'}"


def _apply_revalidate(conn: Connection, a: ActionRow) -> tuple[str, str]:
    assert a.submission_id is not None
    s = store.submission(conn, a.submission_id)
    if s is None:
        return "refused", f"no submission {a.submission_id}"
    if s.status != "failed" or s.failed_step not in ("check", "validation"):
        return (
            "refused",
            f"submission {s.id} is {s.status}: only a failed check or validation runs again",
        )
    status = "queued" if s.failed_step == "check" else "validation"
    conn.execute(
        update(db.submissions)
        .where(db.submissions.c.id == s.id)
        .values(status=status, failed_step=None, reason=None, attempts=0, step_started_at=None)
    )
    step = "check" if status == "queued" else "validation"
    return "applied", f"submission {s.id}: its {step} runs again"


def _apply_table(
    conn: Connection, a: ActionRow, now: float, playing: Collection[int], fold: Fold
) -> tuple[str, str, list[tuple[str, dict[str, Any]]]]:
    assert a.table_id is not None
    table = store.table_by_id(conn, a.table_id)
    if table is None or table.numbering != "ladder":
        return "refused", f"no ladder table (row {a.table_id})", []
    if table.id in playing or table.status == "playing":
        return "pending", "", []  # applied once its games end
    n = table.number
    if a.kind == "replay":
        if table.status == "chosen":
            return "applied", f"ladder table {n} has not been played yet", []
        if table.status == "done":
            _uncount(conn, table)
        folded = _drop_folds_from(conn, n)
        conn.execute(db.games.delete().where(db.games.c.table_id == table.id))
        conn.execute(
            update(db.tables)
            .where(db.tables.c.id == table.id)
            .values(status="chosen", attempt=0, void_reason=None, finished_at=None)
        )
        if folded:
            _set_refold(conn, a, {"from": n})
        return "applied", f"ladder table {n} is played again under its deal {table.deal_key}", []
    # a void by hand
    if table.status == "void":
        return "applied", f"ladder table {n} was void already ({table.void_reason})", []
    if table.status == "done":
        _uncount(conn, table)
    folded = _drop_folds_from(conn, n)
    reason = f"voided by the organiser: {a.reason or 'no reason given'}"
    store.set_table_status(conn, table.id, "void", now, reason)
    events = fold(conn)
    if folded:
        _set_refold(conn, a, {"from": n})
    return "applied", f"ladder table {n} is void: {a.reason}", events


def _set_refold(conn: Connection, a: ActionRow, refold: dict[str, Any]) -> None:
    conn.execute(update(db.actions).where(db.actions.c.id == a.id).values(refold=refold))


# The scheduler's two statements of each round, built once (building a
# statement and its cache key cost about as much as running it).
_REFOLD_WAITING: Final = (
    select(db.actions.c.id)
    .where(
        db.actions.c.status == "applied",
        db.actions.c.refold.is_not(None),
        db.actions.c.refolded_at.is_(None),
    )
    .limit(1)
)
_PENDING: Final = (
    select(db.actions).where(db.actions.c.status == "pending").order_by(db.actions.c.id)
)


def refolds_waiting(conn: Connection) -> bool:
    """Whether an applied replay or void waits for its refold to be recorded
    (:func:`record_refolds` has something to look at)."""
    return conn.execute(_REFOLD_WAITING).first() is not None


def record_refolds(conn: Connection, now: float) -> list[tuple[str, dict[str, Any]]]:
    """Record on each applied replay or void the fold made again from its
    table, once the fold has passed that table again: ``refold`` gets
    ``through`` (the ladder tables folded) and ``ratings`` (entrant ->
    ``[mu, sigma, games]``); ``refolded_at`` is set. Returns log events."""
    events: list[tuple[str, dict[str, Any]]] = []
    rows = conn.execute(
        select(db.actions).where(
            and_(
                db.actions.c.status == "applied",
                db.actions.c.refold.is_not(None),
                db.actions.c.refolded_at.is_(None),
            )
        )
    ).all()
    through = store.rated_through(conn)
    for row in rows:
        a = _row(row)
        assert a.refold is not None
        start = int(a.refold["from"])
        if through <= start:
            continue  # the table is not folded again yet
        ratings = store.fold_at(conn, through) or {}
        refold = {
            "from": start,
            "through": through,
            "ratings": {e: [r.mu, r.sigma, r.games] for e, r in sorted(ratings.items())},
        }
        conn.execute(
            update(db.actions).where(db.actions.c.id == a.id).values(refold=refold, refolded_at=now)
        )
        events.append(("refolded", {"action": a.id, "from": start, "through": through}))
    return events


def apply_one(
    conn: Connection, a: ActionRow, now: float, playing: Collection[int], fold: Fold
) -> list[tuple[str, dict[str, Any]]]:
    """Apply one pending action in the transaction ``conn``; returns the log
    events (``action`` first). An action on a table in play stays pending
    until its games end."""
    events: list[tuple[str, dict[str, Any]]] = []
    if a.kind in ("suspend", "restore"):
        status, result = _apply_participant(conn, a, now)
    elif a.kind == "revalidate":
        status, result = _apply_revalidate(conn, a)
    else:
        status, result, events = _apply_table(conn, a, now, playing, fold)
    if status == "pending":
        return []
    _finish(conn, a, status, result, now)
    head = ("action", {"action": a.id, "kind": a.kind, "status": status, "result": result})
    return [head, *events]


def pending(conn: Connection) -> list[ActionRow]:
    """The actions not applied yet, oldest first."""
    return [_row(r) for r in conn.execute(_PENDING)]


def look(conn: Connection) -> tuple[list[ActionRow], bool]:
    """What :func:`apply_found` is given: the pending actions (oldest first)
    and whether a refold waits to be recorded (:func:`refolds_waiting`)."""
    return pending(conn), refolds_waiting(conn)


async def apply_pending(
    database: db.Database, fold: Fold, playing: Collection[int], log: Log
) -> int:
    """:func:`apply_found` of what one read transaction finds (:func:`look`)."""
    found, waiting = await database.read_async(look)
    return await apply_found(database, found, waiting, fold, playing, log)


async def apply_found(
    database: db.Database,
    found: Sequence[ActionRow],
    waiting: bool,
    fold: Fold,
    playing: Collection[int],
    log: Log,
) -> int:
    """The runner's hook (its scheduler calls it once each round, before it
    chooses tables, with what its round's read found, :func:`look`): apply
    every pending action of ``found``, oldest first, each in a write
    transaction of its own (one applied meanwhile is passed over), then
    record the folds made again (:func:`record_refolds`) when one was applied
    or ``waiting`` says one waits. ``playing``: the ids of the tables in play
    (an action on one waits). Logs each event; returns the actions applied
    or refused."""
    done = 0
    for a in found:

        def one(conn: Connection, a: ActionRow = a) -> list[tuple[str, dict[str, Any]]]:
            fresh = action(conn, a.id)
            if fresh is None or fresh.status != "pending":
                return []
            return apply_one(conn, fresh, time.time(), playing, fold)

        events = await database.write_async(one)
        done += bool(events)
        for event, fields in events:
            log(event, **fields)
    if done or waiting:  # no write transaction each round for nothing
        for event, fields in await database.write_async(record_refolds, time.time()):
            log(event, **fields)
    return done
