"""The grading gauntlet (issue 30): scores that compare across a class.

Once the final has frozen the ``eligible`` table (:mod:`arena.server.final`),
every eligible participant's final submission plays the same ``K`` deals
(``[class] gauntlet_deals``), deal keys ``G<k>``, each in its four seat
rotations, against the same three reference bots (``[class]
reference_bots``, sample bots, labels ``house:<name>``), seated in the same
order: the submission in rotation 0's seat 0, the references after it. The
bots' seeds come from the deal and the rotation (``key.bot_seeds("G<k>-k<r>")``),
not from the table, so every participant meets the same cards, seats,
opponents and opponents' seeds: the same submission gets the same scores
(:func:`specs`). Tables are chosen participant by participant (by id),
deal by deal; a void table (the server's or a reference bot's fault) is
played once more.

**Scores** (:func:`scores`), points as the game record's ``scores`` (lower
is better): on deal ``k`` the submission held every seat once and so did
each reference bot ``X``, with the same cards; its duplicate score against
``X`` is ``d_k(X) = (points of the submission - points of X) / 4``, summed
over the four games (points a game). The duplicate score against ``X`` is
the mean of ``d_k(X)`` over the deals played; the gauntlet score the mean
over the three bots. Intervals: 95%, Student's t over the deals
(``mean +- t_{0.975, K-1} s / sqrt(K)``, the quantile from
:func:`scipy.special.stdtrit`, the inverse of Student's t distribution
function that ``scipy.stats.t.ppf`` calls, at a third of its import's CPU;
none for one deal).

**Thresholds** (``[class] thresholds``, :func:`parse_threshold`): ``"duplicate
score against sample:low at most 0"``, ``"... at least -1.5"``, or
``"gauntlet score at most 2"``; a participant passes when every threshold
holds for its mean over all ``K`` deals (none before its gauntlet is complete).

**Visibility**: a gauntlet deal's games open only once every gauntlet table
of that deal is finished (:func:`deal_open`): pages, replays and downloads
ask it before showing a ``gauntlet`` table.

**The organiser's CSV** (:func:`grades_csv`): participant id, display name,
submission id and SHA-256, final rank and interval, gauntlet score and
interval, pass or fail, then the columns of ``standings.csv`` for the
submission over its gauntlet games; a text cell starting with ``=``, ``+``,
``-`` or ``@`` gets a leading ``'`` (:func:`arena.report.standings_csv._csv_text`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection

from arena.core.keys import MasterKey
from arena.protocol.records import GameSpec
from arena.report.standings_csv import CSV_COLUMNS, _csv_text
from arena.results.analysis import analyse
from arena.server import final, store
from arena.server.classrules import parse_threshold
from arena.server.ladder import ROTATIONS, gauntlet_seed_id, table_specs

if TYPE_CHECKING:
    from arena.server.folder import CompetitionSettings

#: The CSV's own columns, before standings.csv's.
GRADE_COLUMNS: Final = (
    "participant_id",
    "display_name",
    "submission_id",
    "sha256",
    "final_rank",
    "final_low",
    "final_high",
    "gauntlet_score",
    "gauntlet_low",
    "gauntlet_high",
    "gauntlet_deals",
    "passed",
)


def reference_labels(settings: CompetitionSettings) -> tuple[str, str, str]:
    """The reference bots' entrant labels (``house:low``, ...), in order."""
    a, b, c = (store.house_label(x) for x in settings.klass.reference_bots)
    return a, b, c


def reference_entrants(settings: CompetitionSettings) -> dict[str, str]:
    """Label -> sample bot of each reference bot (for the runner's entrants)."""
    labels = reference_labels(settings)
    return dict(zip(labels, settings.klass.reference_bots, strict=True))


def players(conn: Connection) -> list[Any]:
    """The eligible rows the gauntlet plays, by participant id."""
    return sorted(final.eligible_rows(conn), key=lambda r: r.participant_id)


#: Gauntlet tables of one participant's deal at most: a void one (the
#: server's fault, or a reference bot's) is played once more.
TABLES_PER_DEAL: Final = 2


def choose_gauntlet(
    conn: Connection, settings: CompetitionSettings, now: float
) -> store.TableRow | None:
    """The next gauntlet table, or ``None``: no gauntlet, the final not
    started, or nothing left to play. Participants by id, deals in order; a
    (participant, deal) whose every table is void gets one more
    (:data:`TABLES_PER_DEAL` at most), numbered next."""
    k_deals = settings.klass.gauntlet_deals
    if k_deals == 0 or not final.started(conn):
        return None
    have: dict[tuple[int, str], list[str]] = {}
    for t in store.tables_in(conn, "gauntlet"):
        assert t.submission_id is not None
        have.setdefault((t.submission_id, t.deal_key), []).append(t.status)
    for row in players(conn):
        for k in range(k_deals):
            statuses = have.get((row.submission_id, f"G{k}"), [])
            if statuses and (len(statuses) >= TABLES_PER_DEAL or "void" not in statuses[-1:]):
                continue
            n = store.next_number(conn, "gauntlet")
            seating = (store.entrant_label(row.submission_id), *reference_labels(settings))
            return store.add_table(
                conn, "gauntlet", n, f"G{k}", seating, seating, now, submission_id=row.submission_id
            )
    return None


def specs(
    key: MasterKey, table: store.TableRow, hands: int | None, target: int | None
) -> list[GameSpec]:
    """A gauntlet table's four games: deal ``G<k>``, ids ``g<number>-k<r>``,
    bot seeds ``key.bot_seeds(f"{deal}-k{r}")`` (the same for every participant)."""
    out = table_specs(key, table.deal_key, "g", table.number, table.seating, hands, target)
    return [
        dataclasses.replace(
            s, bot_seeds=key.bot_seeds(gauntlet_seed_id(table.deal_key, s.rotation))
        )
        for s in out
    ]


def deal_scores(records: Sequence[Mapping[str, Any]], label: str) -> dict[str, float]:
    """One deal's four records -> each other seat's ``d(X)``: (the points of
    ``label`` minus the points of ``X``) summed over the games, divided by 4."""
    mine = 0.0
    theirs: dict[str, float] = {}
    for rec in records:
        for seat, name in enumerate(rec["seats"]):
            points = float(rec["scores"][seat])
            if name == label:
                mine += points
            else:
                theirs[name] = theirs.get(name, 0.0) + points
    return {x: (mine - p) / ROTATIONS for x, p in theirs.items()}


def preload() -> None:
    """Load SciPy now, by computing one interval: the web process answers the
    gauntlet's pages after it has dropped its privileges, when an
    installation its new user cannot enter could no longer be imported."""
    _interval([0.0, 1.0])


def _interval(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None, None
    # SciPy (and the NumPy it loads, its threads limited by arena.results.numeric,
    # imported above with the analysis) only when an interval is computed.
    from scipy.special import stdtrit

    half = float(stdtrit(len(values) - 1, 0.975)) * statistics.stdev(values)
    half /= math.sqrt(len(values))
    return mean, mean - half, mean + half


def scores(
    per_deal: Sequence[Mapping[str, float]], refs: Sequence[str], bots: Sequence[str]
) -> dict[str, Any]:
    """The gauntlet's scores from each finished deal's :func:`deal_scores`:
    ``score``, ``low``, ``high`` (the mean over the three bots) and
    ``against`` (sample bot -> ``{"score", "low", "high"}``)."""
    against = {}
    for label, bot in zip(refs, bots, strict=True):
        m, lo, hi = _interval([d[label] for d in per_deal])
        against[bot] = {"score": m, "low": lo, "high": hi}
    m, lo, hi = _interval([statistics.fmean(d[r] for r in refs) for d in per_deal])
    return {"score": m, "low": lo, "high": hi, "against": against}


def results(
    conn: Connection, settings: CompetitionSettings, participant_id: int | None = None
) -> list[dict[str, Any]]:
    """Each eligible participant's gauntlet (by participant id; only
    ``participant_id``'s when given):
    ``participant_id``, ``participant``, ``submission``, ``sha256``,
    ``deals`` (finished), ``complete``, the :func:`scores`, ``thresholds``
    (``[{"rule", "passed"}]``, ``passed`` ``None`` until complete),
    ``passed`` and ``records`` (the finished tables' game records)."""
    c = settings.klass
    refs = reference_labels(settings)
    rules = [parse_threshold(t, c.reference_bots) for t in c.thresholds]
    by_sub: dict[int, list[store.TableRow]] = {}
    for t in store.tables_in(conn, "gauntlet"):
        assert t.submission_id is not None
        by_sub.setdefault(t.submission_id, []).append(t)
    out = []
    for row in players(conn):
        if participant_id is not None and row.participant_id != participant_id:
            continue
        sub = store.submission(conn, row.submission_id)
        p = store.participant_by_id(conn, row.participant_id)
        assert sub is not None
        assert p is not None
        label = sub.label
        per_deal = []
        records: list[dict[str, Any]] = []
        for t in by_sub.get(sub.id, []):
            if t.status != "done":
                continue
            recs = store.table_records(conn, t.id)
            records += recs
            per_deal.append(deal_scores(recs, label))
        got = scores(per_deal, refs, c.reference_bots)
        complete = c.gauntlet_deals > 0 and len(per_deal) == c.gauntlet_deals
        checks = []
        for rule in rules:
            value = got["score"] if rule.bot is None else got["against"][rule.bot]["score"]
            ok = rule.holds(value) if complete and value is not None else None
            checks.append({"rule": rule.text, "passed": ok})
        passed = all(x["passed"] for x in checks) if complete else None
        out.append(
            {
                "participant_id": p.id,
                "participant": p.name,
                "display_name": p.display_name,
                "submission": sub.id,
                "sha256": sub.sha256,
                "deals": len(per_deal),
                "complete": complete,
                **got,
                "thresholds": checks,
                "passed": passed,
                "records": records,
            }
        )
    return out


def deal_open(conn: Connection, deal_key: str) -> bool:
    """Whether gauntlet deal ``deal_key`` (``G<k>``) is open: every eligible
    participant's table of it is finished (done, or void with no replay to
    come). Before that its games, replays and downloads stay closed (a later
    participant's table would show the same cards)."""
    if not final.started(conn):
        return False
    statuses: dict[int | None, list[str]] = {}
    for t in store.tables_in(conn, "gauntlet"):
        if t.deal_key == deal_key:
            statuses.setdefault(t.submission_id, []).append(t.status)
    for row in players(conn):
        mine = statuses.get(row.submission_id, [])
        if not mine or any(s not in ("done", "void") for s in mine):
            return False
        if mine[-1] == "void" and len(mine) < TABLES_PER_DEAL:
            return False  # played once more
    return True


def gauntlet_json(
    conn: Connection, settings: CompetitionSettings, participant_id: int | None = None
) -> dict[str, Any]:
    """``GET /api/gauntlet``: ``deals`` K, ``reference_bots``, ``thresholds``,
    ``open_deals`` and ``rows`` (:func:`results` without the records; only
    ``participant_id``'s when given)."""
    c = settings.klass
    found = results(conn, settings, participant_id)
    rows = [{k: v for k, v in r.items() if k != "records"} for r in found]
    return {
        "deals": c.gauntlet_deals,
        "reference_bots": list(c.reference_bots),
        "thresholds": list(c.thresholds),
        "open_deals": [f"G{k}" for k in range(c.gauntlet_deals) if deal_open(conn, f"G{k}")],
        "rows": rows,
    }


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return _csv_text(value)
    return value


def grades_csv(conn: Connection, settings: CompetitionSettings) -> str:
    """The organiser's grades (module docstring): a header of
    :data:`GRADE_COLUMNS` and ``standings.csv``'s columns, one row per
    eligible participant by participant id."""
    finals = {r["submission"]: r for r in final.final_json(conn, settings)["rows"]}
    refs = reference_labels(settings)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow((*GRADE_COLUMNS, *CSV_COLUMNS))
    for g in results(conn, settings):
        f = finals.get(g["submission"])
        own = {
            "participant_id": g["participant_id"],
            "display_name": g["display_name"],
            "submission_id": g["submission"],
            "sha256": g["sha256"],
            "final_rank": f["rank"] if f else None,
            "final_low": f["low"] if f else None,
            "final_high": f["high"] if f else None,
            "gauntlet_score": g["score"],
            "gauntlet_low": g["low"],
            "gauntlet_high": g["high"],
            "gauntlet_deals": g["deals"],
            "passed": g["passed"],
        }
        label = store.entrant_label(g["submission"])
        standing: dict[str, Any] = {}
        if g["records"]:
            a = analyse({}, [label, *refs], g["records"])
            standing = dict(next(r for r in a.standings if r["name"] == label))
        cells = [_cell(own[c]) for c in GRADE_COLUMNS]
        for col in CSV_COLUMNS:
            if col.startswith("faults_"):
                value: Any = standing.get("faults", {}).get(col.removeprefix("faults_"))
            elif col == "self_names":
                value = "; ".join(standing.get("self_names", []))
            else:
                value = standing.get(col)
            cells.append(_cell(value))
        writer.writerow(cells)
    return buf.getvalue()
