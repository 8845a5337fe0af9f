"""A class's deadline (issue 30): one clock for everyone, which submission
counts, the pin, and practice after the deadline.

* The deadline is ISO 8601 with a UTC offset in ``competition.toml``
  (``[class] deadline = "2026-12-15T17:00:00+01:00"``; ``""``: none). Pages
  show it in UTC and, through a ``<time>`` element and a small script, in
  the reader's own time (:func:`deadline_json`).
* A submission **counts** when it was received before the deadline
  (``received_at < deadline``), even if its check and validation finish
  after it: the final waits for them (:func:`gate_settled`).
* Until the deadline a participant may **pin** one passing submission
  (:func:`pin`); without a pin the final plays the latest passing one that
  counts (:func:`final_submission`).
* After the deadline the ladder chooses no new table (:func:`ladder_closed`,
  the one hook line in the runner's ``_choose_ladder``; tables already
  chosen play) and, when the organiser allows it (``practice``), each
  submission received after the deadline that passes validation plays
  ``practice_tables`` unranked tables against the first three house bots,
  deal keys ``P<n>`` (:func:`choose_practice`).

Times are seconds since the epoch (UTC floats), as everywhere in the server.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection, and_, delete, insert, select

from arena.server import db, store
from arena.server.classrules import DeadlineError, parse_deadline

if TYPE_CHECKING:
    from arena.server.folder import CompetitionSettings

#: Statuses of a submission that passed validation yet no longer plays the
#: final (its participant revoked, or its faults took it out).
NOT_FINAL: Final = ("failed", "retired")
#: Submission statuses of the gate still running.
IN_GATE: Final = ("queued", "check", "validation")


def deadline_of(settings: CompetitionSettings) -> float | None:
    """The deadline in seconds since the epoch, ``None`` when there is none."""
    when = parse_deadline(settings.klass.deadline)
    return None if when is None else when.timestamp()


def ladder_closed(settings: CompetitionSettings, now: float) -> bool:
    """Whether the ladder chooses no new table: the deadline has passed."""
    d = deadline_of(settings)
    return d is not None and now >= d


def counts(sub: store.SubmissionRow, deadline: float | None) -> bool:
    """Whether ``sub`` counts for the final: received before the deadline."""
    return deadline is None or sub.received_at < deadline


def passing(sub: store.SubmissionRow) -> bool:
    """Whether ``sub`` passed validation and may still play the final."""
    return sub.ranked_at is not None and sub.status not in NOT_FINAL


def utc_text(seconds: float) -> str:
    """``2026-12-15 16:00:00 UTC`` for a time in seconds since the epoch."""
    when = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def deadline_json(settings: CompetitionSettings, now: float) -> dict[str, Any]:
    """``{"deadline", "utc", "iso", "passed"}``: the deadline in seconds, as
    UTC text, as ISO 8601 in UTC (a ``<time datetime>``), and whether it has
    passed at ``now``; all ``None`` (``passed`` false) without a deadline."""
    d = deadline_of(settings)
    if d is None:
        return {"deadline": None, "utc": None, "iso": None, "passed": False}
    iso = dt.datetime.fromtimestamp(d, dt.UTC).isoformat().replace("+00:00", "Z")
    return {"deadline": d, "utc": utc_text(d), "iso": iso, "passed": now >= d}


# -- the pin and the final submission ----------------------------------------------


def pinned(conn: Connection, participant_id: int) -> int | None:
    """The submission a participant pinned, or ``None``."""
    return conn.execute(
        select(db.pins.c.submission_id).where(db.pins.c.participant_id == participant_id)
    ).scalar()


def pin(
    conn: Connection,
    settings: CompetitionSettings,
    participant_id: int,
    submission_id: int | None,
    now: float,
) -> int | None:
    """Pin ``submission_id`` as the participant's final submission (``None``:
    unpin, the latest passing one counts); returns the final submission now.

    Raises:
        DeadlineError: past the deadline, not the participant's submission,
            received after the deadline, or not passing (yet).
    """
    d = deadline_of(settings)
    if d is not None and now >= d:
        raise DeadlineError(f"the deadline ({utc_text(d)}) has passed: the final submission is set")
    conn.execute(delete(db.pins).where(db.pins.c.participant_id == participant_id))
    if submission_id is not None:
        sub = store.submission(conn, submission_id)
        if sub is None or sub.participant_id != participant_id:
            raise DeadlineError(f"you have no submission {submission_id}")
        if not passing(sub):
            raise DeadlineError(
                f"submission {submission_id} has not passed validation "
                f"(it is {sub.status}): only a passing one can be pinned"
            )
        conn.execute(
            insert(db.pins).values(
                participant_id=participant_id, submission_id=submission_id, pinned_at=now
            )
        )
    final = final_submission(conn, settings, participant_id)
    return None if final is None else final.id


def final_submission(
    conn: Connection, settings: CompetitionSettings, participant_id: int
) -> store.SubmissionRow | None:
    """The submission a participant plays the final and the gauntlet with:
    the pinned one if it still passes, else the latest passing submission
    that counts (received before the deadline); ``None`` when none."""
    d = deadline_of(settings)
    pid = pinned(conn, participant_id)
    if pid is not None:
        sub = store.submission(conn, pid)
        if sub is not None and passing(sub) and counts(sub, d):
            return sub
    for sub in store.submissions_of(conn, participant_id):  # newest first
        if passing(sub) and counts(sub, d):
            return sub
    return None


def eligible_submissions(
    conn: Connection, settings: CompetitionSettings
) -> dict[int, store.SubmissionRow]:
    """Each active participant's final submission (participant id -> row),
    those without one left out."""
    out = {}
    for p in store.list_participants(conn):
        if p.status != "active":
            continue
        sub = final_submission(conn, settings, p.id)
        if sub is not None:
            out[p.id] = sub
    return out


def gate_settled(conn: Connection, settings: CompetitionSettings) -> bool:
    """Whether every submission that counts has finished its gate (none is
    queued, in its check or in its validation)."""
    d = deadline_of(settings)
    for status in IN_GATE:
        if any(counts(s, d) for s in store.submissions_in(conn, status)):
            return False
    return True


# -- practice after the deadline -------------------------------------------------------


def choose_practice(
    conn: Connection, settings: CompetitionSettings, now: float
) -> store.TableRow | None:
    """The next practice table, or ``None``: after the deadline, when the
    organiser allows practice, the oldest submission received after the
    deadline that passed validation and has played fewer than
    ``practice_tables`` practice tables, against the first three house bots;
    deal key ``P<n>``, never rated."""
    d = deadline_of(settings)
    c = settings.klass
    if d is None or now < d or not c.practice:
        return None
    played: dict[str, int] = {}
    for t in store.tables_in(conn, "practice"):
        played[t.seating[0]] = played.get(t.seating[0], 0) + 1
    rows = conn.execute(
        select(db.submissions.c.id)
        .where(and_(db.submissions.c.received_at >= d, db.submissions.c.ranked_at.is_not(None)))
        .order_by(db.submissions.c.id)
    ).all()
    for (sid,) in rows:
        sub = store.submission(conn, int(sid))
        assert sub is not None
        owner = store.participant_by_id(conn, sub.participant_id)
        if sub.status in NOT_FINAL or owner is None or owner.status != "active":
            continue
        if played.get(sub.label, 0) >= c.practice_tables:
            continue
        n = store.next_number(conn, "practice")
        house = settings.house_labels
        seating = (sub.label, house[0], house[1], house[2])
        return store.add_table(
            conn, "practice", n, f"P{n}", seating, seating, now, submission_id=sub.id
        )
    return None
