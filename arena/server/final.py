"""A class's final (issue 30): fresh ratings over a fixed field, the
competition's result.

**When it starts** (:func:`start_final`, called by the runner's scheduler
every round through :mod:`arena.server.classes`): automatically, once the
deadline has passed, every submission that counts has finished its gate
(:func:`arena.server.deadline.gate_settled`) and no ladder table is chosen
or playing (the ladder's standings are final). It then freezes the
``eligible`` table: every active participant's final submission
(:func:`arena.server.deadline.final_submission`), its ladder rank and
conservative rating, and the finalists' seeds.

**Who plays**: ``final = "round-robin"``: the top ``final_size`` (8, at most
12) by conservative ladder rating (ties by name), every four of them at a
table (``C(N, 4)`` tables), ``final_rounds`` rounds (2); or ``final =
"ladder"``: every eligible participant, tables chosen by the ladder's rules
(the focus has the fewest final tables, then the highest sigma; its three
opponents the nearest in mu among those with the fewest tables), so every
finalist sits at the same number ``k`` of tables: ``k`` the largest with
``N k / 4`` whole and at most ``final_tables`` tables. Fewer than four
eligible participants: the house bots fill the field, as on the ladder.

**Deal keys** ``F<round>-t<table>`` (``table`` from 0 in its round; the
ladder kind plays one round), under the key's deal subkey like every table;
four rotations; never on the ladder's fold.

**Ratings**: fresh (every finalist at TrueSkill's prior), ``tau = 0`` (the
field is fixed, so no skill drift is added between games), folded over the
final's tables in table order up to the first unfinished one, void tables
skipped, each point stored as the runner's writer reaches it
(:func:`fold_final`; the pages read the stored fold, :func:`final_fold`).
The standings (:func:`final_json`) give each
finalist's mu, sigma, conservative rating ``mu - 3 sigma`` (the sort key),
a 95% interval ``mu +- 1.96 sigma`` and, for each pair of neighbours, the
probability that the upper one's skill is above the lower one's:
``P(s_a > s_b) = Phi((mu_a - mu_b) / sqrt(sigma_a^2 + sigma_b^2))``, since
TrueSkill's posterior of each skill is the Gaussian ``N(mu, sigma^2)``
(Herbrich, Minka and Graepel, "TrueSkill: A Bayesian Skill Rating System",
NIPS 2006, section 2) and the difference of two independent Gaussians is
Gaussian with the summed variances.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Final

import trueskill
from sqlalchemy import Connection, delete, func, insert, select

from arena.core.keys import MasterKey
from arena.protocol.records import GameSpec
from arena.server import db, deadline, store
from arena.server.ladder import ROTATIONS, fold_point, table_specs
from arena.server.store import PRIOR, Rating

if TYPE_CHECKING:
    from arena.server.folder import CompetitionSettings

#: The meta key holding the time the final started (seconds, ``repr``).
STARTED_KEY: Final = "final_started_at"
#: The z of the standings' intervals (95%).
INTERVAL_Z: Final = 1.96


def environment() -> trueskill.TrueSkill:
    """The final's TrueSkill environment: the package's defaults with ``tau = 0``."""
    return trueskill.TrueSkill(tau=0.0)


def started(conn: Connection) -> bool:
    """Whether the final has started (its field is frozen)."""
    return store.get_meta(conn, STARTED_KEY) is not None


def ready(conn: Connection, settings: CompetitionSettings, now: float) -> bool:
    """Whether the final may start at ``now``: a deadline that has passed,
    every submission that counts through its gate, no ladder table chosen or
    playing, and not started yet."""
    if started(conn) or not deadline.ladder_closed(settings, now):
        return False
    if not deadline.gate_settled(conn, settings):
        return False
    return not store.tables_in(conn, "ladder", ["chosen", "playing"])


def start_final(conn: Connection, settings: CompetitionSettings, now: float) -> list[int] | None:
    """Freeze the ``eligible`` table if :func:`ready`: returns the finalists'
    submission ids by seed, or ``None`` when it is not time."""
    if not ready(conn, settings, now):
        return None
    subs = deadline.eligible_submissions(conn, settings)
    _, rows = store.standings_rows(conn)
    names = {p.id: p.name for p in store.list_participants(conn)}
    ladder = {r.participant: r.conservative for r in rows if not r.house}
    order = sorted(subs, key=lambda pid: (-ladder.get(names[pid], PRIOR.conservative), names[pid]))
    c = settings.klass
    size = c.final_size if c.final == "round-robin" else len(order)
    seeds: list[int] = []
    for rank, pid in enumerate(order, start=1):
        seed = rank if c.final != "none" and rank <= size else None
        conn.execute(
            insert(db.eligible).values(
                participant_id=pid,
                submission_id=subs[pid].id,
                ladder_rank=rank,
                ladder_conservative=ladder.get(names[pid], PRIOR.conservative),
                seed=seed,
            )
        )
        if seed is not None:
            seeds.append(subs[pid].id)
    store.set_meta(conn, STARTED_KEY, repr(now))
    return seeds


def eligible_rows(conn: Connection) -> list[Any]:
    """The frozen ``eligible`` rows, by ladder rank."""
    return list(conn.execute(select(db.eligible).order_by(db.eligible.c.ladder_rank)).all())


def field(conn: Connection, settings: CompetitionSettings) -> list[str]:
    """The final's entrants by seed (labels ``s<id>``), house bots after
    them while there are fewer than four; ``[]`` before the start or without a final."""
    seeded = sorted((r for r in eligible_rows(conn) if r.seed is not None), key=lambda r: r.seed)
    labels = [store.entrant_label(r.submission_id) for r in seeded]
    if not labels:
        return []
    for h in settings.house_labels:
        if len(labels) >= 4:
            break
        labels.append(h)
    return labels


def tables_per_finalist(finalists: int, budget: int) -> int:
    """The ladder kind's tables per finalist: the largest ``k`` with
    ``finalists * k`` divisible by 4 and ``finalists * k / 4 <= budget``."""
    k = (4 * budget) // finalists
    while k > 0 and (finalists * k) % 4:
        k -= 1
    return k


def total_tables(settings: CompetitionSettings, n: int) -> int:
    """The final's table count for ``n`` entrants (0 for fewer than four)."""
    if n < 4:
        return 0
    c = settings.klass
    if c.final == "round-robin":
        return math.comb(n, 4) * c.final_rounds
    if c.final == "ladder":
        return n * tables_per_finalist(n, c.final_tables) // 4
    return 0


def deal_key(settings: CompetitionSettings, n_entrants: int, number: int) -> str:
    """Final table ``number``'s deal key ``F<round>-t<table>``."""
    if settings.klass.final == "round-robin":
        per_round = math.comb(n_entrants, 4)
        return f"F{number // per_round + 1}-t{number % per_round}"
    return f"F1-t{number}"


def _ladder_choice(
    number: int,
    key: MasterKey,
    entrants: Sequence[str],
    fold: Mapping[str, Rating],
    seated: Mapping[str, int],
) -> tuple[str, str, str, str]:
    rng = random.Random(key.draw_seed("final", f"t{number}"))
    tie = {n: rng.random() for n in entrants}
    r = {n: fold.get(n, PRIOR) for n in entrants}
    order = sorted(entrants, key=lambda n: (seated[n], -r[n].sigma, tie[n]))
    focus, rest = order[0], order[1:]
    chosen = [focus]
    for level in sorted({seated[n] for n in rest}):
        need = 4 - len(chosen)
        if need == 0:
            break
        here = [n for n in rest if seated[n] == level]
        here.sort(key=lambda n: (abs(r[n].mu - r[focus].mu), tie[n]))
        chosen += here[:need]
    return (chosen[0], chosen[1], chosen[2], chosen[3])


def choose_final(
    conn: Connection, settings: CompetitionSettings, key: MasterKey, now: float
) -> store.TableRow | None:
    """The final's next table, or ``None`` (not started, every table chosen,
    or, for the ladder kind, the fold it is chosen from not reached: table
    ``t`` is chosen from the final's fold over tables ``0 .. t-B-1``, B the
    ladder's lag, so the tables do not depend on cores)."""
    if not started(conn):
        return None
    entrants = field(conn, settings)
    n = store.next_number(conn, "final")
    if n >= total_tables(settings, len(entrants)):
        return None
    if settings.klass.final == "round-robin":
        per_round = math.comb(len(entrants), 4)
        combo = list(itertools.combinations(entrants, 4))[n % per_round]
        seating = (combo[0], combo[1], combo[2], combo[3])
    else:
        fp = fold_point(n, settings.ladder.lag)
        found = fold_at(conn, fp) if folded_through(conn) >= fp else None
        if found is None:
            return None  # the prefix it is chosen from is not folded yet: wait
        fold = found
        seated = dict.fromkeys(entrants, 0)
        for t in store.tables_in(conn, "final"):
            for e in t.seating:
                seated[e] += 1
        seating = _ladder_choice(n, key, entrants, fold, seated)
    return store.add_table(
        conn, "final", n, deal_key(settings, len(entrants), n), seating, entrants, now
    )


def specs(
    key: MasterKey, table: store.TableRow, hands: int | None, target: int | None
) -> list[GameSpec]:
    """A final table's four games: its deal key, ids ``f<number>-k<k>``."""
    return table_specs(key, table.deal_key, "f", table.number, table.seating, hands, target)


def _fold_records(
    fold: dict[str, trueskill.Rating], games: dict[str, int], records: Sequence[Mapping[str, Any]]
) -> None:
    env = environment()
    for rec in records:
        seats = list(rec["seats"])
        for n in seats:
            if n not in fold:
                fold[n] = env.create_rating()
                games[n] = 0
        rated = env.rate([(fold[n],) for n in seats], ranks=[r - 1 for r in rec["ranks"]])
        for n, (rating,) in zip(seats, rated, strict=True):
            fold[n] = rating
            games[n] += 1


def fold_at(conn: Connection, through: int) -> dict[str, Rating] | None:
    """The stored final fold over tables ``0 .. through-1``; ``{}`` for 0;
    ``None`` when that point is not reached."""
    rows = conn.execute(select(db.final_ratings).where(db.final_ratings.c.through == through)).all()
    if not rows:
        return {} if through == 0 else None
    return {r.entrant: Rating(r.mu, r.sigma, r.games) for r in rows}


def folded_through(conn: Connection) -> int:
    """Final tables folded into the newest stored snapshot (0: none)."""
    top = conn.execute(select(func.max(db.final_ratings.c.through))).scalar()
    return 0 if top is None else int(top)


def fold_final(conn: Connection) -> int:
    """Fold the final's finished tables onward from the newest snapshot, in
    table order up to the first unfinished one (void ones skipped), storing
    a snapshot at each point; returns how far it reaches. Called by the
    runner's writer when a final table finishes."""
    through = folded_through(conn)
    tables = store.tables_in(conn, "final")
    start = fold_at(conn, through) or {}
    env = environment()
    fold = {n: env.create_rating(mu=r.mu, sigma=r.sigma) for n, r in start.items()}
    games = {n: r.games for n, r in start.items()}
    while through < len(tables) and tables[through].status in ("done", "void"):
        t = tables[through]
        if t.status == "done":
            _fold_records(fold, games, store.table_records(conn, t.id))
        through += 1
        conn.execute(delete(db.final_ratings).where(db.final_ratings.c.through == through))
        if fold:
            conn.execute(
                insert(db.final_ratings),
                [
                    {
                        "through": through,
                        "entrant": n,
                        "mu": float(r.mu),
                        "sigma": float(r.sigma),
                        "games": games[n],
                    }
                    for n, r in sorted(fold.items())
                ],
            )
    return through


def final_fold(conn: Connection) -> tuple[int, dict[str, Rating], bool]:
    """``(through, ratings, complete)``: the newest stored final fold (over
    tables ``0 .. through-1``), and whether every final table chosen is in it."""
    through = folded_through(conn)
    fold = fold_at(conn, through) or {}
    count = len(store.tables_in(conn, "final"))
    return through, fold, through == count


def p_above(upper: Rating, lower: Rating) -> float:
    """The probability that ``upper``'s skill is above ``lower``'s:
    ``Phi((mu_u - mu_l) / sqrt(sigma_u^2 + sigma_l^2))`` (module docstring)."""
    spread = math.hypot(upper.sigma, lower.sigma)
    if spread == 0:
        return 0.5 if upper.mu == lower.mu else float(upper.mu > lower.mu)
    return NormalDist().cdf((upper.mu - lower.mu) / spread)


def final_json(conn: Connection, settings: CompetitionSettings) -> dict[str, Any]:
    """The final's status and standings (``GET /api/final``): ``kind``,
    ``started``, ``complete``, ``tables`` (``total``, ``chosen``, ``done``,
    ``void``, ``playing``), ``rated_through`` and ``rows`` best first, each
    with ``rank``, ``participant``, ``submission``, ``entrant``, ``seed``,
    ``mu``, ``sigma``, ``conservative``, ``low``/``high`` (95%), ``games``,
    ``house`` and ``p_above_next`` (``None`` on the last row)."""
    entrants = field(conn, settings)
    tables = store.tables_in(conn, "final")
    counts = {s: sum(1 for t in tables if t.status == s) for s in db.TABLE_STATES}
    through, fold, _ = final_fold(conn)
    total = total_tables(settings, len(entrants))
    names = {p.id: p.name for p in store.list_participants(conn)}
    seeds = {store.entrant_label(r.submission_id): r for r in eligible_rows(conn)}
    rows: list[dict[str, Any]] = []
    for e in entrants:
        r = fold.get(e, PRIOR)
        ent = seeds.get(e)
        rows.append(
            {
                "participant": names.get(ent.participant_id, "?") if ent is not None else e,
                "submission": store.submission_of(e),
                "entrant": e,
                "seed": ent.seed if ent is not None else None,
                "mu": r.mu,
                "sigma": r.sigma,
                "conservative": r.conservative,
                "low": r.mu - INTERVAL_Z * r.sigma,
                "high": r.mu + INTERVAL_Z * r.sigma,
                "games": r.games,
                "house": ent is None,
            }
        )
    rows.sort(key=lambda x: (-x["conservative"], x["participant"]))
    for i, row in enumerate(rows):
        row["rank"] = i + 1
        if i + 1 < len(rows):
            nxt = rows[i + 1]
            row["p_above_next"] = p_above(
                Rating(row["mu"], row["sigma"], 0), Rating(nxt["mu"], nxt["sigma"], 0)
            )
        else:
            row["p_above_next"] = None
    return {
        "kind": settings.klass.final,
        "started": started(conn),
        "complete": bool(total) and counts["done"] + counts["void"] == total,
        "tables": {"total": total, **counts},
        "rated_through": through,
        "games_per_table": ROTATIONS,
        "rows": rows,
    }
