"""Statistics over game records: duplicate score, bootstrap intervals, head-to-head.

Everything reads plain ``games.jsonl`` records (see ``GameRecord.to_json``)
and returns plain data. Points are penalty points per hand after the moon
rule (R11, R12): lower is better, for the duplicate score too.

Duplicate score (the idea of duplicate bridge, applied to the round-robin's
seatings): every game of a table in round ``r`` deals hand ``h`` from the same
deal, named ``f"{deal_key}:{h}"`` (R2), and a table plays each round in every seating
(4 rotations, or 24 permutations with ``--seating full``), so the cards of
one seat of one deal -- identified by ``(deal seed, seat)`` -- are held in
turn by each of the table's four entrants. A *board* is those cards at one
table: ``(deal_key, table, hand number, seat)``. An entrant's duplicate score
on a board is its points there minus the mean points of the *other* entrants
of the table who held the same board. Card luck cancels, and the opponents
are the same set of entrants, so what is left is play. A board counts only
when every seating of its table reached that hand (target-score games can
stop at different hands); the scores of a complete board sum to zero over
its entrants. The per-entrant figure is the mean over its boards, in points
per hand.

Confidence: 95% percentile bootstrap intervals (Efron and Tibshirani, *An
Introduction to the Bootstrap*, 1993, ch. 13) with the *deal* as the
resampling unit -- a deal is played in every seating of its table, so
resampling whole deals keeps those correlated hands together. The replicates
use numpy's ``Generator`` seeded from the tournament key (the settings'
``bootstrap_seed``; the ``seed`` of older runs), so the same run
always gives the same intervals. A pair of entrants differs significantly
when the 95% interval of the difference of their means (computed on the same
replicates, so paired) excludes zero. A bootstrap over a handful of deals
under-states the spread (with two deals there are only three distinct
resamples), so with fewer than :data:`MIN_RELIABLE_DEALS` deals the intervals
are shown as rough, no difference is called significant and the top of the
table is never called settled.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypedDict

from arena.core.rules import deal_name
from arena.game.referee import derive_seed
from arena.protocol.records import GameRecordJSON, HandJSON
from arena.results.numeric import np

#: Confidence level of every interval.
CONFIDENCE: Final = 0.95
#: Bootstrap replicates.
REPLICATES: Final = 2000
#: Fewer deals than this give no intervals (a bootstrap over one deal has no spread).
MIN_DEALS: Final = 2
#: Fewer deals than this give rough intervals only: no pair is called significant.
MIN_RELIABLE_DEALS: Final = 10
#: Beyond this many times the rounds already played, "more rounds" is not a practical answer.
MAX_ROUNDS_FACTOR: Final = 50

# Metric names, as used in ``pairs`` and the verdict.
DUPLICATE: Final = "duplicate"
POINTS: Final = "points_per_hand"


class IntervalsJSON(TypedDict):
    """One entrant's duplicate score and 95% intervals (points per hand;
    ``None`` where unknown), in ``results.json``'s key order."""

    duplicate: float | None
    duplicate_hands: int
    points_per_hand_low: float | None
    points_per_hand_high: float | None
    duplicate_low: float | None
    duplicate_high: float | None


class PairJSON(TypedDict):
    """The comparison of ``a`` and ``b`` on one metric: ``difference`` = mean
    of a minus mean of b (points per hand), its interval, and whether it is
    significant."""

    a: str
    b: str
    difference: float
    low: float | None
    high: float | None
    significant: bool


class BootstrapJSON(TypedDict):
    """The bootstrap's parameters: resampled ``unit`` (deals), how many,
    the replicates drawn (0: too few deals), its seed and confidence, and
    whether there are enough deals to judge significance."""

    method: str
    unit: str
    deals: int
    replicates: int
    seed: int
    confidence: float
    reliable: bool


class StatisticsJSON(TypedDict):
    """:func:`compute_statistics`'s result."""

    entrants: dict[str, IntervalsJSON]
    pairs: dict[str, list[PairJSON]]
    bootstrap: BootstrapJSON


class VerdictJSON(TypedDict):
    """:func:`top_settled`'s result (see there)."""

    settled: bool
    metric: str | None
    leader: str | None
    runner_up: str | None
    difference: float | None
    low: float | None
    high: float | None
    agrees: bool | None
    unseparated: str | None
    more_rounds: int | None
    unit: str
    text: str


def seatings_per_table(settings: Mapping[str, Any] | None) -> int:
    """Games a table plays per round: 24 with ``seating == "full"``, else 4."""
    return 24 if (settings or {}).get("seating") == "full" else 4


def _deal_seed(rec: GameRecordJSON, hand: HandJSON) -> str:
    seed = hand.get("deal_seed")
    return str(seed) if seed is not None else deal_name(rec["deal_key"], hand["hand_number"])


def duplicate_observations(
    records: Sequence[GameRecordJSON], seatings: int
) -> list[tuple[str, str, float]]:
    """One ``(entrant, deal seed, duplicate score)`` per entrant and hand held
    on a complete board (see the module docstring).

    Args:
        records: game records in schedule order.
        seatings: games per table and round (4 or 24).

    Returns:
        Duplicate scores in points per hand (negative: fewer points than the
        others with the same cards, which is better).
    """
    tables: dict[tuple[str, int], list[GameRecordJSON]] = defaultdict(list)
    for rec in records:
        tables[(str(rec["deal_key"]), int(rec["table"]))].append(rec)
    out: list[tuple[str, str, float]] = []
    for games in tables.values():
        if len({g["rotation"] for g in games}) < seatings:
            continue  # a seating was not played (an interrupted run)
        reached = min(len(g["hands"]) for g in games)
        for h in range(reached):
            deal = _deal_seed(games[0], games[0]["hands"][h])
            for seat in range(4):
                by_entrant: dict[str, list[int]] = defaultdict(list)
                for g in games:
                    by_entrant[g["seats"][seat]].append(g["hands"][h]["points"][seat])
                if len(by_entrant) < 2:
                    continue
                total = sum(sum(v) for v in by_entrant.values())
                count = sum(len(v) for v in by_entrant.values())
                for name, pts in by_entrant.items():
                    others = (total - sum(pts)) / (count - len(pts))
                    out.extend((name, deal, p - others) for p in pts)
    return out


def point_observations(records: Sequence[GameRecordJSON]) -> list[tuple[str, str, float]]:
    """One ``(entrant, deal seed, points)`` per entrant and hand played."""
    out: list[tuple[str, str, float]] = []
    for rec in records:
        seats = rec["seats"]
        for hand in rec["hands"]:
            deal = _deal_seed(rec, hand)
            for seat, name in enumerate(seats):
                out.append((name, deal, float(hand["points"][seat])))
    return out


def _sums(
    obs: Sequence[tuple[str, str, float]], names: Sequence[str], deals: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Per entrant and deal: the sum of the values and their count, each of
    shape ``(len(names), len(deals))``."""
    col = {n: i for i, n in enumerate(names)}
    s = np.zeros((len(names), len(deals)))
    n = np.zeros((len(names), len(deals)))
    for name, deal, value in obs:
        i, j = col[name], deals[deal]
        s[i, j] += value
        n[i, j] += 1
    return s, n


def bootstrap_weights(deals: int, seed: int, replicates: int = REPLICATES) -> np.ndarray:
    """How often each deal is drawn in each replicate: shape ``(replicates,
    deals)``, each row a multinomial draw of ``deals`` deals with equal
    probabilities (resampling with replacement), from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(deals, np.full(deals, 1.0 / deals), size=replicates).astype(float)


def _ratio(weights: np.ndarray, s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Replicated means, shape ``(replicates, entrants)``: NaN where an entrant
    drew no observation."""
    num = weights @ s.T
    den = weights @ n.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _interval(samples: np.ndarray) -> tuple[float, float] | None:
    """The central ``CONFIDENCE`` percentile interval of 1-D samples (NaNs
    ignored), or ``None`` when there are none."""
    good = samples[~np.isnan(samples)]
    if good.size == 0:
        return None
    tail = 100 * (1 - CONFIDENCE) / 2
    lo, hi = np.percentile(good, [tail, 100 - tail])
    return float(lo), float(hi)


def compute_statistics(
    names: Sequence[str],
    records: Sequence[GameRecordJSON],
    settings: Mapping[str, Any] | None = None,
    replicates: int = REPLICATES,
) -> StatisticsJSON:
    """Duplicate scores, bootstrap intervals and pairwise significance.

    Args:
        names: every entrant.
        records: game records in schedule order (``standings.sort_records``).
        settings: the settings record (``seed`` seeds the bootstrap,
            ``seating`` says how many games make a complete board).
        replicates: bootstrap replicates.

    Returns:
        A dict with ``entrants`` (per name: ``points_per_hand_low``/``_high``,
        ``duplicate``, ``duplicate_low``/``_high``, ``duplicate_hands``; None
        where unknown), ``pairs`` (per metric, per unordered pair ``a < b`` in
        ``names`` order: ``difference`` = mean of a minus mean of b, ``low``,
        ``high``, ``significant``; never significant with fewer than
        :data:`MIN_RELIABLE_DEALS` deals) and ``bootstrap`` (method, unit,
        deals, replicates, seed, confidence, ``reliable``).
    """
    settings = settings or {}
    stored = settings.get("bootstrap_seed")
    seed = stored if isinstance(stored, int) else derive_seed(settings.get("seed", 0), "bootstrap")
    points = point_observations(records)
    dup = duplicate_observations(records, seatings_per_table(settings))
    deals: dict[str, int] = {}
    for _, deal, _ in points:
        deals.setdefault(deal, len(deals))
    entrants: dict[str, IntervalsJSON] = {}
    metrics = {POINTS: _sums(points, names, deals), DUPLICATE: _sums(dup, names, deals)}
    boots: dict[str, np.ndarray | None] = {}
    weights = bootstrap_weights(len(deals), seed, replicates) if len(deals) >= MIN_DEALS else None
    reliable = len(deals) >= MIN_RELIABLE_DEALS
    for metric, (s, n) in metrics.items():
        boots[metric] = _ratio(weights, s, n) if weights is not None else None
    dup_s, dup_n = metrics[DUPLICATE]
    for i, name in enumerate(names):
        hands = int(dup_n[i].sum())
        ends: dict[str, tuple[float, float] | None] = {}
        for metric, key in ((POINTS, "points_per_hand"), (DUPLICATE, "duplicate")):
            boot = boots[metric]
            ci = _interval(boot[:, i]) if boot is not None else None
            has = metrics[metric][1][i].sum() > 0
            ends[key] = ci if ci and has else None
        ppl_ci, dup_ci = ends["points_per_hand"], ends["duplicate"]
        row: IntervalsJSON = {
            "duplicate": float(dup_s[i].sum() / hands) if hands else None,
            "duplicate_hands": hands,
            "points_per_hand_low": ppl_ci[0] if ppl_ci else None,
            "points_per_hand_high": ppl_ci[1] if ppl_ci else None,
            "duplicate_low": dup_ci[0] if dup_ci else None,
            "duplicate_high": dup_ci[1] if dup_ci else None,
        }
        entrants[name] = row
    pairs: dict[str, list[PairJSON]] = {}
    for metric, (s, n) in metrics.items():
        totals, counts = s.sum(axis=1), n.sum(axis=1)
        boot = boots[metric]
        rows: list[PairJSON] = []
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                if not counts[i] or not counts[j]:
                    continue
                diff = float(totals[i] / counts[i] - totals[j] / counts[j])
                ci = _interval(boot[:, i] - boot[:, j]) if boot is not None else None
                rows.append(
                    {
                        "a": names[i],
                        "b": names[j],
                        "difference": diff,
                        "low": ci[0] if ci else None,
                        "high": ci[1] if ci else None,
                        "significant": bool(reliable and ci and (ci[0] > 0 or ci[1] < 0)),
                    }
                )
        pairs[metric] = rows
    return {
        "entrants": entrants,
        "pairs": pairs,
        "bootstrap": {
            "method": "percentile",
            "unit": "deal",
            "deals": len(deals),
            "replicates": replicates if weights is not None else 0,
            "seed": seed,
            "confidence": CONFIDENCE,
            "reliable": reliable,
        },
    }


def pair_lookup(pairs: Sequence[PairJSON]) -> dict[tuple[str, str], PairJSON]:
    """Pairs by ordered ``(a, b)``, both orders: the ``(b, a)`` entry has the
    difference and interval negated (mean of b minus mean of a)."""
    out: dict[tuple[str, str], PairJSON] = {}
    for p in pairs:
        out[(p["a"], p["b"])] = p.copy()
        out[(p["b"], p["a"])] = {
            **p,
            "a": p["b"],
            "b": p["a"],
            "difference": -p["difference"],
            "low": -p["high"] if p["high"] is not None else None,
            "high": -p["low"] if p["low"] is not None else None,
        }
    return out


def _gap_words(value: float, other: str) -> str:
    """A gap of ``value`` points per hand (``other``'s minus this entrant's)
    in words: ``"1.17 fewer points per hand than kit"``, ``"0.50 more ..."``,
    ``"as many points per hand as kit"``."""
    if abs(value) < 0.005:
        return f"as many points per hand as {other}"
    return f"{abs(value):.2f} {'fewer' if value > 0 else 'more'} points per hand than {other}"


def _range(lo: float, hi: float) -> str:
    """A 95% interval of ``second - first`` in words, as the first row's
    points per hand: ``"2.14 to 5.81 fewer"``, ``"0.50 more to 1.20 fewer"``;
    an end that rounds to zero is ``0.00`` (``"0.00 to 3.33 more"``, never ``-0.00``)."""
    lo, hi = round(lo, 2), round(hi, 2)
    if lo >= 0:
        return f"{abs(lo):.2f} to {abs(hi):.2f} fewer"
    if hi <= 0:
        return f"{abs(hi):.2f} to {abs(lo):.2f} more"
    return f"{abs(lo):.2f} more to {abs(hi):.2f} fewer"


def _challenger(
    lead: str, others: Sequence[str], pairs: Mapping[tuple[str, str], PairJSON]
) -> tuple[str, PairJSON] | None:
    """The entrant best on the metric among ``others`` (the lowest mean: the
    smallest ``other - lead`` difference; ties go to the earlier row) and its
    pair read ``other - lead``; ``None`` when no other has a pair with ``lead``."""
    best: tuple[str, PairJSON] | None = None
    for name in others:
        pair = pairs.get((name, lead))
        if pair is not None and (best is None or pair["difference"] < best[1]["difference"]):
            best = (name, pair)
    return best


def _ends(pair: PairJSON) -> tuple[float, float] | None:
    """A pair's interval ``(low, high)``, or ``None`` where it has none."""
    low, high = pair["low"], pair["high"]
    return None if low is None or high is None else (low, high)


def top_settled(
    standings: Sequence[Mapping[str, Any]],
    statistics: StatisticsJSON,
    rounds_played: int,
    unit: str = "round",
) -> VerdictJSON:
    """Whether the top of the table is settled, in one sentence.

    The leader is the first row of ``standings`` as sorted (the table the
    report shows: by the conservative rating ``mu - 3 sigma``, disqualified
    entrants last). The sentence quotes one metric, the duplicate score
    (points per hand on the same cards; lower is better), or points per hand
    when an entrant lacks complete boards, and compares the leader with the
    entrant best on that metric among the others (not disqualified, with
    games): second on the metric when the leader is first on it, else first
    (the table's second row may be neither: the orders by rating and by
    duplicate score can differ). When that gap favours the other entrant it
    says in plain words that the metric and the table's order disagree.

    The top is settled when the 95% interval of the gap excludes zero in the
    leader's favour, against that entrant and every other one. Otherwise the
    interval's half-width ``w`` shrinks roughly as ``1 / sqrt(deals)``, so
    the rounds needed for it to fall below the observed difference ``d``
    are about ``rounds * (w / d) ** 2``. With fewer than
    :data:`MIN_RELIABLE_DEALS` deals the lead is never settled, and the
    rounds asked for are those that reach that many deals.

    A ladder has no rounds: it passes its games played as ``rounds_played``
    and ``unit="game"``, and the same formulas count games.

    Returns:
        ``settled`` (bool), ``metric``, ``leader`` (the first row) and
        ``runner_up`` (the other entrant best on ``metric``), ``difference``
        (runner-up minus leader, points per hand: positive favours the
        leader), ``low``, ``high``, ``agrees`` (the gap favours the leader,
        or is zero; ``None`` when unknown), ``unseparated`` (another entrant
        the leader is not significantly ahead of although it is of the
        runner-up, or ``None``), ``more_rounds`` (int or None, in ``unit``s),
        ``unit`` and ``text``.
    """
    out: VerdictJSON = {
        "settled": False,
        "metric": None,
        "leader": None,
        "runner_up": None,
        "difference": None,
        "low": None,
        "high": None,
        "agrees": None,
        "unseparated": None,
        "more_rounds": None,
        "unit": unit,
        "text": "",
    }
    rows = [r for r in standings if r.get("games")]
    first = standings[0] if standings else None
    others = [r["name"] for r in rows[1:] if not r.get("disqualified")]
    if first is None or not first.get("games") or not others:
        out["text"] = "Too few games have been played to judge the top of the table."
        return out
    lead = first["name"]
    ents = statistics["entrants"]
    complete = all(n in ents and ents[n]["duplicate_hands"] for n in (lead, *others))
    metric = DUPLICATE if complete else POINTS
    out["leader"], out["metric"] = lead, metric
    label = "duplicate score" if metric == DUPLICATE else "points per hand"
    pairs = pair_lookup(statistics["pairs"][metric])
    found = _challenger(lead, others, pairs)
    ends = _ends(found[1]) if found is not None else None
    if found is None or ends is None:
        second = found[0] if found is not None else others[0]
        out["runner_up"] = second
        out["text"] = (
            f"Not settled: too few deals to put an interval on the gap between {lead} "
            f"(first) and {second}; play more {unit}s."
        )
        return out
    second, pair = found
    out["runner_up"] = second
    d, (lo, hi) = pair["difference"], ends
    agrees = d >= 0
    out["difference"], out["low"], out["high"], out["agrees"] = d, lo, hi, agrees
    boot = statistics["bootstrap"]
    place = "second" if agrees else "first"
    figure = (
        f"{lead}, first in the table, takes {_gap_words(d, second)}, {place} on {label}; "
        f"95% interval {_range(lo, hi)}"
    )
    disagree = (
        ""
        if agrees
        else f" The {label} puts {second} ahead of {lead}: it disagrees with the table's order."
    )
    if not boot.get("reliable", True):
        rounds = max(1, rounds_played)
        per_round = boot["deals"] / rounds
        more = max(1, math.ceil(MIN_RELIABLE_DEALS / per_round) - rounds)
        out["more_rounds"] = more
        out["text"] = (
            f"Not settled: only {boot['deals']} deals have been played, too few to judge "
            f"the top ({figure}); play about {more} more "
            f"{unit}{'s' if more != 1 else ''} (at least {MIN_RELIABLE_DEALS} deals).{disagree}"
        )
        return out
    if lo > 0:
        # Ahead of the best of the others, significantly: of every other one too?
        loose = [
            (n, pairs[(n, lead)])
            for n in others
            if n != second and (n, lead) in pairs and not (pairs[(n, lead)]["low"] or 0) > 0
        ]
        if not loose:
            out["settled"] = True
            out["more_rounds"] = 0
            out["text"] = f"Settled: {lead} leads {second} significantly ({figure})."
            return out
        name, other = loose[0]
        other_ends = _ends(other)
        out["unseparated"] = name
        out["text"] = (
            f"Not settled: {lead} leads {second} significantly "
            f"({figure}), but not {name}, whose {label} is less certain ({lead} takes "
            f"{_gap_words(other['difference'], name)}; 95% interval "
            f"{_range(*other_ends)}); play more {unit}s."
            if other_ends is not None
            else f"Not settled: {lead} leads {second} significantly "
            f"({figure}), but {name} has no interval yet; play more {unit}s."
        )
        return out
    if hi < 0:
        out["text"] = (
            f"Not settled: the table puts {lead} first, but {second} is significantly "
            f"better on {label} ({figure}): the rating and the {label} disagree; "
            f"more {unit}s are needed for them to agree."
        )
        return out
    half = (hi - lo) / 2
    rounds = max(1, rounds_played)
    if abs(d) < 1e-9 or (half / abs(d)) ** 2 > MAX_ROUNDS_FACTOR:
        out["text"] = (
            f"Not settled: {lead} and {second} cannot be told apart ({figure}); "
            f"even {MAX_ROUNDS_FACTOR} times as many {unit}s might not separate them.{disagree}"
        )
        return out
    more = max(1, math.ceil(rounds * (half / abs(d)) ** 2) - rounds)
    out["more_rounds"] = more
    out["text"] = (
        f"Not settled: the gap between {lead} and {second} is within the noise ({figure}); "
        f"about {more} more {unit}{'s' if more != 1 else ''} ({rounds + more} in all) "
        f"would likely settle it.{disagree}"
    )
    return out


def head_to_head(
    names: Sequence[str], records: Sequence[GameRecordJSON]
) -> dict[str, dict[str, dict[str, int]]]:
    """For each ordered pair of entrants, their games at the same table.

    Returns:
        ``h2h[a][b]`` = ``{"games", "ahead", "behind", "level"}``: games where
        both played, and in how many ``a`` finished with a better final rank
        than ``b`` (R13: lower total), a worse one, or the same.
    """
    h2h = {a: {b: {"games": 0, "ahead": 0, "behind": 0, "level": 0} for b in names} for a in names}
    for rec in records:
        seats, ranks = rec["seats"], rec["ranks"]
        for i in range(4):
            for j in range(4):
                if i == j:
                    continue
                cell = h2h[seats[i]][seats[j]]
                cell["games"] += 1
                if ranks[i] < ranks[j]:
                    cell["ahead"] += 1
                elif ranks[i] > ranks[j]:
                    cell["behind"] += 1
                else:
                    cell["level"] += 1
    return h2h
