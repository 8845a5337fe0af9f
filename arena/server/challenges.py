"""Challenges (issue 30): a participant's unranked table against opponents
they pick.

* A participant asks (``POST /api/challenges``) for a table against up to
  three opponents: participants who allow it (``POST /api/challenges/consent``;
  nobody is challenged without their consent) or house bots (``sample:low``
  or ``house:low``). The empty seats take house bots in the organiser's
  order. Each seat plays the owner's current submission: the latest one that
  passed validation.
* At most ``[class] challenges_per_day`` requests per participant in any 24
  hours (a rolling window); after the deadline only house bots may be
  challenged (the ladder and the final are over; practice goes on).
* The runner plays a challenge only on a free slot, after validation, the
  ladder, the final and the gauntlet (the order of
  :func:`arena.server.classes.start_tables`); its table is numbered in the
  ``challenge`` numbering, deal key ``C<n>`` under the key's deal subkey
  like every other table, four rotations; never rated, never charged.
* A challenge table is visible to the owners of its four seats only
  (:func:`challenges_json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection, and_, delete, func, insert, or_, select, update

from arena.core.keys import MasterKey
from arena.protocol.records import GameSpec
from arena.server import db, deadline, store
from arena.server.ladder import table_specs

if TYPE_CHECKING:
    from arena.server.folder import CompetitionSettings

#: Seconds of the rolling window of ``challenges_per_day``.
DAY_SECONDS: Final = 86400.0
#: Opponents of one challenge at most.
MAX_OPPONENTS: Final = 3


class ChallengeError(ValueError):
    """A challenge refused, with a one-line reason and an HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def set_consent(conn: Connection, participant_id: int, allow: bool, now: float) -> None:
    """Let others challenge the participant (``allow``) or stop them."""
    conn.execute(
        delete(db.challenge_consent).where(db.challenge_consent.c.participant_id == participant_id)
    )
    conn.execute(
        insert(db.challenge_consent).values(
            participant_id=participant_id, allow=int(allow), set_at=now
        )
    )


def allows(conn: Connection, participant_id: int) -> bool:
    """Whether the participant lets others challenge them (default: no)."""
    v = conn.execute(
        select(db.challenge_consent.c.allow).where(
            db.challenge_consent.c.participant_id == participant_id
        )
    ).scalar()
    return bool(v)


def current_submission(conn: Connection, participant_id: int) -> store.SubmissionRow | None:
    """The participant's latest submission that passed validation and still may play."""
    for sub in store.submissions_of(conn, participant_id):
        if deadline.passing(sub):
            return sub
    return None


def _opponent(
    conn: Connection, settings: CompetitionSettings, me: int, text: str, closed: bool
) -> str:
    house = dict(zip(settings.ladder.house_bots, settings.house_labels, strict=True))
    if text in house or text in house.values():
        return house.get(text, text)
    if closed:
        raise ChallengeError(f"after the deadline only house bots can be challenged, not {text!r}")
    p = store.participant_by_name(conn, text)
    if p is None:
        raise ChallengeError(
            f"no participant or house bot {text!r} (house bots: {', '.join(house)})"
        )
    if p.id == me:
        raise ChallengeError("you cannot challenge yourself")
    if p.status != "active" or not allows(conn, p.id):
        raise ChallengeError(f"{p.name} does not accept challenges", 403)
    sub = current_submission(conn, p.id)
    if sub is None:
        raise ChallengeError(f"{p.name} has no submission that passed validation")
    return sub.label


def request_challenge(
    conn: Connection,
    settings: CompetitionSettings,
    participant_id: int,
    opponents: Sequence[str],
    now: float,
) -> dict[str, Any]:
    """Store a challenge (``waiting``); returns :func:`challenge_row`.

    Raises:
        ChallengeError: no opponents or more than three, a duplicate, an
            unknown or unwilling opponent, no passing submission of one's
            own, a participant after the deadline, or the day's limit (429).
    """
    per_day = settings.klass.challenges_per_day
    if per_day == 0:
        raise ChallengeError("this competition takes no challenges", 403)
    if not 1 <= len(opponents) <= MAX_OPPONENTS or len(set(opponents)) != len(opponents):
        raise ChallengeError("name one to three different opponents")
    me = store.participant_by_id(conn, participant_id)
    if me is None or me.status != "active":
        raise ChallengeError("only an active participant can challenge", 403)
    mine = current_submission(conn, participant_id)
    if mine is None:
        raise ChallengeError("you have no submission that passed validation")
    recent = conn.execute(
        select(func.count())
        .select_from(db.challenges)
        .where(
            and_(
                db.challenges.c.participant_id == participant_id,
                db.challenges.c.created_at > now - DAY_SECONDS,
            )
        )
    ).scalar_one()
    if int(recent) >= per_day:
        raise ChallengeError(f"at most {per_day} challenges in 24 hours", 429)
    closed = deadline.ladder_closed(settings, now)
    labels = [_opponent(conn, settings, participant_id, o, closed) for o in opponents]
    if len(set(labels)) != len(labels):
        raise ChallengeError("name one to three different opponents")
    cid = conn.execute(
        insert(db.challenges).values(
            participant_id=participant_id,
            submission_id=mine.id,
            opponents=labels,
            created_at=now,
            status="waiting",
        )
    ).inserted_primary_key
    assert cid is not None
    return challenge_row(conn, int(cid[0]))


def challenge_row(conn: Connection, challenge_id: int) -> dict[str, Any]:
    """A challenge as JSON: ``id``, ``submission``, ``opponents`` (labels),
    ``status``, ``table`` (its challenge table's number or ``None``), ``reason``."""
    r = conn.execute(select(db.challenges).where(db.challenges.c.id == challenge_id)).one()
    return {
        "id": r.id,
        "submission": r.submission_id,
        "opponents": list(r.opponents),
        "created_at": r.created_at,
        "status": r.status,
        "table": r.table_number,
        "reason": r.reason,
    }


def choose_challenge(
    conn: Connection, settings: CompetitionSettings, now: float
) -> store.TableRow | None:
    """The oldest waiting challenge's table (deal ``C<n>``), or ``None``."""
    row = conn.execute(
        select(db.challenges)
        .where(db.challenges.c.status == "waiting")
        .order_by(db.challenges.c.id)
        .limit(1)
    ).first()
    if row is None:
        return None
    seating = [store.entrant_label(row.submission_id), *row.opponents]
    for h in settings.house_labels:
        if len(seating) >= 4:
            break
        if h not in seating:
            seating.append(h)
    n = store.next_number(conn, "challenge")
    table = store.add_table(conn, "challenge", n, f"C{n}", seating, seating, now)
    conn.execute(
        update(db.challenges)
        .where(db.challenges.c.id == row.id)
        .values(status="chosen", table_number=n)
    )
    return table


def specs(
    key: MasterKey, table: store.TableRow, hands: int | None, target: int | None
) -> list[GameSpec]:
    """A challenge table's four games: deal ``C<n>``, ids ``c<n>-k<k>``."""
    return table_specs(key, table.deal_key, "c", table.number, table.seating, hands, target)


def _owner(conn: Connection, label: str) -> store.ParticipantRow | None:
    sid = store.submission_of(label)
    sub = store.submission(conn, sid) if sid is not None else None
    return None if sub is None else store.participant_by_id(conn, sub.participant_id)


def challenges_json(conn: Connection, participant_id: int) -> dict[str, Any]:
    """``GET /api/challenges`` for a participant: ``mine`` (their requests,
    newest first), ``accepting`` (their consent) and ``tables``: every
    challenge table one of whose seats is theirs, with each seat's owner and,
    once done, each game's ranks and points (no stderr, no transcript)."""
    mine = conn.execute(
        select(db.challenges.c.id)
        .where(db.challenges.c.participant_id == participant_id)
        .order_by(db.challenges.c.id.desc())
    ).all()
    own_labels = {s.label for s in store.submissions_of(conn, participant_id)}
    tables = []
    for t in store.tables_in(conn, "challenge"):
        if not own_labels & set(t.seating):
            continue
        seats = []
        for label in t.seating:
            owner = _owner(conn, label)
            seats.append({"entrant": label, "participant": owner.name if owner else label})
        games = [
            {k: r[k] for k in ("rotation", "seats", "ranks", "scores")}
            for r in (store.table_records(conn, t.id) if t.status == "done" else [])
        ]
        tables.append(
            {
                "number": t.number,
                "deal_key": t.deal_key,
                "status": t.status,
                "void_reason": t.void_reason,
                "seating": seats,
                "games": games,
            }
        )
    return {
        "accepting": allows(conn, participant_id),
        "mine": [challenge_row(conn, int(r[0])) for r in mine],
        "tables": tables,
    }


def visible_to(conn: Connection, table: store.TableRow, participant_id: int | None) -> bool:
    """Whether a challenge table may be shown to ``participant_id`` (the
    owner of one of its four seats); other numberings: ``True``."""
    if table.numbering != "challenge":
        return True
    if participant_id is None:
        return False
    labels = [
        store.entrant_label(int(r[0]))
        for r in conn.execute(
            select(db.submissions.c.id).where(
                or_(db.submissions.c.participant_id == participant_id)
            )
        )
    ]
    return bool(set(labels) & set(table.seating))
