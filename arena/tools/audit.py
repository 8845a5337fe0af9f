"""``hearts-arena audit DIR``: look for cheating in a finished tournament's play.

No seal on a shared kernel closes every channel between processes, so the
audit reads the evidence the records hold: every decision with what the seat
could see (rebuilt with the rules engine, :meth:`arena.core.rules.Hand.view`),
and, once the key is revealed, the whole deal. Three signals, each a one-sided
test whose p-value is corrected with Holm's step-down method over every
entrant and signal tested (so the chance that an honest field gets any flag
is at most ``alpha``); docs/fair-play.md explains them for organisers.

**Clairvoyance** (:func:`clairvoyance`). At a sampled decision the sample
search bot's search (``sample_bots/search_bot.py``, :func:`search_play`, with
a fixed budget counted in simulated card plays and a seed from the key: no
clock) gives the best move from the seat's own view, ``V`` (worlds consistent
with what it saw: voids shown, passed cards), and the best move with the
whole deal known, ``F`` (the true hands). Where they differ, the *rate* is
how often the entrant chose ``F``. The honest model: an honest bot's choice
depends on its view only, so it picks the full-information move of the true
deal exactly as often as that of any deal it cannot tell from the true one.
At the same decisions the audit deals ``K`` such *counterfactual* deals
(the same sampler), finds each one's full-information move, and the
*expected* rate is how often the entrant's actual choices match those where
they differ from ``V``: a bot of the same strength by construction (its own
moves). The excess (rate - expected) gets a 95% bootstrap interval and a
z-score (excess over its bootstrap standard error), hands resampled whole.

**Memory of deals** (:func:`memory`). Every deal of a table is played in
every seating; an honest bot gains nothing from having met the deal before.
Per entrant, the ordinary least-squares fit of its duplicate score per game
(points per hand against the others who held the same cards, lower is
better) on "not its first game of this deal" and on the game's position in
its own sequence of games (the control for bots that get better over time,
measured across deals). The figure is the first coefficient, sign turned so
that positive means later games of a deal are better; interval and z-score
from a bootstrap over deals.

**Collusion** (:func:`collusion`). With more than four entrants, per pair:
each one's duplicate score when the other sits at its table against when
not, and the points each gives the other (its discards taken by the other,
the queen of spades among them). With four entrants every game holds every
pair, so only the pair's joint duplicate score is shown, untested.

Everything random (the decisions sampled, the searches, the counterfactual
deals, the bootstrap) is seeded from the revealed key, and results are put
together in the decisions' order, so the output is the same whatever ``jobs``.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import math
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from arena.core.cards import CARD_NAMES, mask_of_names, parse_card
from arena.core.keys import MasterKey
from arena.core.resources import sample_bots_dir
from arena.core.rules import Hand, pass_mask
from arena.protocol.records import GameRecordJSON
from arena.report.files import AUDIT_FILE, game_page
from arena.report.replays import moment_fragment
from arena.results.numeric import np
from arena.tools.verify import VerifyError, _load, revealed_key
from arena.tournament.runner import read_journal

#: Defaults of the command line.
ALPHA: Final = 0.01
DECISIONS: Final = 2000
#: Simulated card plays per search (the sample bot plays with 30000).
BUDGET: Final = 10000
#: Counterfactual deals per decision (the honest model).
COUNTERFACTUALS: Final = 4
#: Bootstrap replicates of every interval and z-score.
REPLICATES: Final = 1000
#: Fewest contested decisions (``F != V``) for a clairvoyance test.
MIN_CONTESTED: Final = 20
#: Fewest deals with a first and a later game for a memory test.
MIN_DEALS: Final = 5
#: Fewest games with and without the partner for a collusion test.
MIN_GAMES: Final = 5
#: Decisions shown per flagged entrant.
TOP_DECISIONS: Final = 5
#: Signal names, in the order of the table.
SIGNALS: Final = ("clairvoyance", "memory", "collusion")


class AuditError(RuntimeError):
    """The folder cannot be audited (not a finished run, no key revealed,
    files unreadable); the message is one line for the user."""


@dataclass(frozen=True)
class Run:
    """A finished tournament, read back: its key, entrants and records."""

    folder: Path
    key: MasterKey
    names: list[str]
    records: list[GameRecordJSON]


def load_run(folder: Path) -> Run:
    """Read a finished run with its key revealed.

    Raises:
        AuditError: no ``run.json``/``results.json``, no key revealed (an
            unfinished run), a key that fails its commitment, or a journal
            that cannot be read.
    """
    if not (folder / "run.json").exists():
        raise AuditError(f"{folder} holds no tournament (run.json is missing)")
    try:
        run = _load(folder / "run.json")
        results = _load(folder / "results.json")
        key, problems = revealed_key(results, run)
    except VerifyError as exc:
        raise AuditError(str(exc)) from None
    if problems:
        raise AuditError(f"{problems[0]} (hearts-arena verify {folder} says more)")
    names = [e["name"] for e in run.get("settings", {}).get("entrants", [])]
    try:
        records = read_journal(folder / "games.jsonl", names)
    except (OSError, ValueError) as exc:
        raise AuditError(str(exc)) from None
    if not records:
        raise AuditError(f"{folder / 'games.jsonl'} holds no games")
    records.sort(key=lambda r: r["game_index"])
    return Run(folder, key, names, records)


# -- the search ----------------------------------------------------------------------


def search_module() -> ModuleType:
    """``sample_bots/search_bot.py`` loaded as a module (its ``search_play``,
    ``Knowledge`` and ``candidate_groups`` are the audit's search).

    Raises:
        AuditError: the sample bot is missing from this installation.
    """
    found = sys.modules.get("_audit_search_bot")
    if found is not None:
        return found
    path = sample_bots_dir() / "search_bot.py"
    spec = importlib.util.spec_from_file_location("_audit_search_bot", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise AuditError(f"the sample search bot {path} is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_audit_search_bot"] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class DecisionRef:
    """Where a play decision is: game (position in the run's records), hand
    (position in the game's hands), and the card's position in the hand's
    play (0..51)."""

    game: int
    hand: int
    play: int


@dataclass
class Decision:
    """One play decision, rebuilt: the seat's view (a ``play`` request), the
    four hands at that moment (card masks), and the card played."""

    ref: DecisionRef
    entrant: str
    seat: int
    hand_number: int
    trick_number: int
    place: int  # 1..4: the card's place in its trick
    view: dict[str, Any]
    hands: list[int]
    card: int


def _faulted(rec: GameRecordJSON) -> tuple[set[tuple[int, int | None, int | None]], set[int]]:
    """The ``(seat, hand, trick)`` of each fault, and the seats struck out."""
    at = {(f["seat"], f.get("hand_number"), f.get("trick_number")) for f in rec["faults"]}
    return at, set(rec.get("struck_out", []))


def iter_decisions(rec: GameRecordJSON, game: int) -> Iterator[Decision]:
    """Every play decision of a game record that the bot itself made (no
    fault there, its seat not struck out), rebuilt with the rules engine.

    Raises:
        ValueError: the record does not replay under the rules (run
            ``hearts-arena verify``).
    """
    faults, struck = _faulted(rec)
    for h, hand in enumerate(rec["hands"]):
        number = int(hand["hand_number"])
        state = _start(hand)
        play = 0
        for t, trick in enumerate(hand["tricks"], start=1):
            for i, name in enumerate(trick["cards"]):
                seat = state.turn
                card = parse_card(name)
                if seat not in struck and (seat, number, t) not in faults:
                    yield Decision(
                        DecisionRef(game, h, play),
                        rec["seats"][seat],
                        seat,
                        number,
                        t,
                        i + 1,
                        state.view(seat),
                        list(state.hands),
                        card,
                    )
                state.play(card)
                play += 1


_HEARTS: Final = ((1 << 13) - 1) << 39
_POINT_CARDS: Final = _HEARTS | (1 << 36)


def contested(state: Hand) -> bool:
    """Whether the seat to play has a choice the search can weigh: more than
    one group of interchangeable legal cards (same suit, no card still out or
    on the table ranking between them, the queen of spades alone), and points
    still to take. The sample search bot's own test (its ``candidate_groups``
    and points left), computed on the hand's state."""
    legal = state.legal_mask()
    if not legal & (legal - 1):
        return False
    seat = state.turn
    trick = 0
    for c in state.trick:
        trick |= 1 << c
    held = state.hands[0] | state.hands[1] | state.hands[2] | state.hands[3]
    if not (held | trick) & _POINT_CARDS:
        return False
    live = (held & ~state.hands[seat]) | trick
    groups = 0
    prev = -1
    m = legal
    while m:
        low = m & -m
        c = low.bit_length() - 1
        m ^= low
        if not (
            prev >= 0
            and prev // 13 == c // 13
            and 36 not in (c, prev)
            and not live & (((1 << c) - 1) & ~((1 << (prev + 1)) - 1))
        ):
            groups += 1
            if groups > 1:
                return True
        prev = c
    return False


def contested_refs(rec: GameRecordJSON, game: int) -> Iterator[tuple[str, DecisionRef]]:
    """``(entrant, where)`` of each decision of :func:`iter_decisions` that is
    :func:`contested`, without building the views."""
    faults, struck = _faulted(rec)
    for h, hand in enumerate(rec["hands"]):
        number = int(hand["hand_number"])
        state = _start(hand)
        play = 0
        for t, trick in enumerate(hand["tricks"], start=1):
            for name in trick["cards"]:
                seat = state.turn
                if seat not in struck and (seat, number, t) not in faults and contested(state):
                    yield rec["seats"][seat], DecisionRef(game, h, play)
                state.play(parse_card(name))
                play += 1


def _start(hand: Any) -> Hand:
    """A recorded hand's state after the pass."""
    state = Hand.new(int(hand["hand_number"]), [mask_of_names(cards) for cards in hand["dealt"]])
    if hand.get("passes") is not None:
        passes = hand["passes"] or []
        state.apply_passes([pass_mask(s, [parse_card(c) for c in p]) for s, p in enumerate(passes)])
    return state


@dataclass(frozen=True)
class Judged:
    """What the searches say of one decision.

    ``differs``: the full-information move ``F`` is not the view's ``V``;
    ``chose_full``: the entrant played ``F`` (a card of its group);
    ``cf_differs``/``cf_chose``: the same for each counterfactual deal's ``F``.
    """

    ref: DecisionRef
    entrant: str
    differs: bool
    chose_full: bool
    cf_differs: tuple[bool, ...]
    cf_chose: tuple[bool, ...]
    full: str
    own: str


def judge(d: Decision, search: ModuleType, seed: str, budget: int, counterfactuals: int) -> Judged:
    """Run the searches on one decision (see the module docstring). Depends on
    the decision, ``seed``, ``budget`` (simulated card plays) only."""
    view = d.view
    own_card, own = search.search_play(view, budget, seed=f"{seed}:view")
    full_card, full = search.search_play(view, budget, seed=f"{seed}:full", hands=d.hands)
    rng = random.Random(f"{seed}:worlds")
    k = search.Knowledge(view)
    cf_differs = []
    cf_chose = []
    for j in range(counterfactuals):
        world = k.sample(rng)
        _, g = search.search_play(view, budget, seed=f"{seed}:cf{j}", hands=world)
        cf_differs.append(g != own)
        cf_chose.append(bool(g >> d.card & 1))
    return Judged(
        d.ref,
        d.entrant,
        full != own,
        bool(full >> d.card & 1),
        tuple(cf_differs),
        tuple(cf_chose),
        CARD_NAMES[full_card],
        CARD_NAMES[own_card],
    )


# -- the worker pool -------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _worker_init(folder: str, budget: int, counterfactuals: int) -> None:
    run = load_run(Path(folder))
    _WORKER.update(
        records=run.records,
        search=search_module(),
        budget=budget,
        counterfactuals=counterfactuals,
        secret=run.key.draw_seed("audit", "search"),
    )


def _judge_refs(refs: Sequence[DecisionRef]) -> list[Judged]:
    """Judge decisions of one game (a worker's unit of work)."""
    records = _WORKER["records"]
    wanted = {r.play + 100 * r.hand for r in refs}
    game = refs[0].game
    out = []
    for d in iter_decisions(records[game], game):
        if d.ref.play + 100 * d.ref.hand in wanted:
            seed = f"{_WORKER['secret']}:{records[game]['game_id']}:{d.hand_number}:{d.ref.play}"
            out.append(
                judge(d, _WORKER["search"], seed, _WORKER["budget"], _WORKER["counterfactuals"])
            )
    return out


def sample_decisions(run: Run, per_entrant: int) -> dict[str, list[DecisionRef]]:
    """Each entrant's contested decisions: all of them up to ``per_entrant``,
    else ``per_entrant`` drawn without replacement by a generator seeded from
    the key (``draw_seed("audit", "decisions:" + name)``), in record order."""
    found: dict[str, list[DecisionRef]] = defaultdict(list)
    for g, rec in enumerate(run.records):
        for name, ref in contested_refs(rec, g):
            found[name].append(ref)
    chosen: dict[str, list[DecisionRef]] = {}
    for name in run.names:
        all_ = found.get(name, [])
        if len(all_) > per_entrant:
            rng = np.random.default_rng(run.key.draw_seed("audit", f"decisions:{name}"))
            keep = sorted(rng.choice(len(all_), size=per_entrant, replace=False).tolist())
            all_ = [all_[i] for i in keep]
        chosen[name] = all_
    return chosen


def judge_all(
    run: Run,
    decisions: dict[str, list[DecisionRef]],
    *,
    budget: int,
    counterfactuals: int,
    jobs: int,
    progress: Callable[[int], None] | None = None,
) -> list[Judged]:
    """Judge every sampled decision (``jobs`` worker processes, or in this
    process with ``jobs`` 1); returned in record order whatever ``jobs``."""
    by_game: dict[int, list[DecisionRef]] = defaultdict(list)
    for refs in decisions.values():
        for ref in refs:
            by_game[ref.game].append(ref)
    units = [by_game[g] for g in sorted(by_game)]
    results: list[list[Judged]] = []
    args = (str(run.folder), budget, counterfactuals)
    if jobs <= 1:
        _worker_init(*args)
        for unit in units:
            results.append(_judge_refs(unit))
            if progress is not None:
                progress(len(unit))
    else:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, initializer=_worker_init, initargs=args
        ) as pool:
            futures = [pool.submit(_judge_refs, unit) for unit in units]
            for f in futures:
                results.append(f.result())
                if progress is not None:
                    progress(len(results[-1]))
    return [j for unit in results for j in unit]


# -- statistics -----------------------------------------------------------------------


def _p_upper(z: float) -> float:
    """One-sided p-value of a z-score (the normal's upper tail)."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def _weights(clusters: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.multinomial(clusters, np.full(clusters, 1.0 / clusters), size=REPLICATES).astype(
        float
    )


def _summary(point: float, boot: np.ndarray) -> dict[str, Any]:
    """``estimate``, 95% ``interval``, bootstrap ``se``, ``z`` and one-sided ``p``."""
    good = boot[~np.isnan(boot)]
    se = float(np.std(good, ddof=1)) if good.size > 1 else 0.0
    lo, hi = (np.percentile(good, [2.5, 97.5]).tolist()) if good.size else (math.nan, math.nan)
    if se > 0:
        z = point / se
    elif point == 0:
        z = 0.0
    else:
        z = math.inf if point > 0 else -math.inf
    return {
        "estimate": round(point, 4),
        "interval": [round(lo, 4), round(hi, 4)],
        "se": round(se, 4),
        "z": round(z, 3) if math.isfinite(z) else (99.0 if z > 0 else -99.0),
        "p": _p_upper(z),
    }


def clairvoyance(judged: Sequence[Judged], name: str, seed: int) -> dict[str, Any]:
    """The clairvoyance figures of one entrant (see the module docstring):
    ``decisions`` judged, ``contested`` (``F != V``), ``rate``, ``expected``,
    ``excess`` with ``interval``, ``z``, ``p``; ``tested`` false (and no p)
    with fewer than :data:`MIN_CONTESTED` contested decisions."""
    mine = [j for j in judged if j.entrant == name]
    clusters: dict[tuple[int, int], int] = {}
    rows = []
    for j in mine:
        c = clusters.setdefault((j.ref.game, j.ref.hand), len(clusters))
        rows.append(
            (
                c,
                float(j.differs),
                float(j.differs and j.chose_full),
                float(sum(j.cf_differs)),
                float(sum(a and b for a, b in zip(j.cf_differs, j.cf_chose, strict=True))),
            )
        )
    out: dict[str, Any] = {"decisions": len(mine), "contested": int(sum(r[1] for r in rows))}
    if not rows or out["contested"] < MIN_CONTESTED or sum(r[3] for r in rows) == 0:
        return out | {"tested": False, "rate": None, "expected": None, "p": None}
    sums = np.zeros((len(clusters), 4))
    for c, *vals in rows:
        sums[c] += vals
    rate = sums[:, 1].sum() / sums[:, 0].sum()
    expected = sums[:, 3].sum() / sums[:, 2].sum()
    w = _weights(len(clusters), seed)
    num = w @ sums
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = num[:, 1] / num[:, 0] - num[:, 3] / num[:, 2]
    s = _summary(float(rate - expected), boot)
    return out | {
        "tested": True,
        "rate": round(float(rate), 4),
        "expected": round(float(expected), 4),
        "excess": s["estimate"],
        "interval": s["interval"],
        "z": s["z"],
        "p": s["p"],
    }


@dataclass
class GameScore:
    """One entrant's duplicate score in one game (points per hand against the
    others who held its cards on the same boards; lower is better)."""

    entrant: str
    game: int
    deal: str
    dup: float
    first: bool
    position: int  # the game's place in the entrant's own sequence (0-based)


def _play_order(records: Sequence[GameRecordJSON]) -> list[int]:
    """Record positions in the order the games were played: by ``started_at``
    (games of one deal are never played at once, so their order is exact),
    then ``game_index``."""
    return sorted(
        range(len(records)),
        key=lambda i: (records[i].get("started_at", 0.0), records[i]["game_index"]),
    )


def game_scores(records: Sequence[GameRecordJSON]) -> list[GameScore]:
    """Every entrant's duplicate score per game, with whether the game was its
    first of that deal (``deal_key`` and table) and its place in its sequence."""
    tables: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        tables[(str(rec["deal_key"]), int(rec.get("table", 0)))].append(i)
    dup: dict[tuple[int, int], list[float]] = defaultdict(list)
    for games in tables.values():
        if len(games) < 2:
            continue
        reached = min(len(records[g]["hands"]) for g in games)
        for h in range(reached):
            for seat in range(4):
                pts = [(g, records[g]["hands"][h]["points"][seat]) for g in games]
                names = {records[g]["seats"][seat] for g in games}
                if len(names) < 2:
                    continue
                for g, p in pts:
                    name = records[g]["seats"][seat]
                    others = [q for g2, q in pts if records[g2]["seats"][seat] != name]
                    if others:
                        dup[(g, seat)].append(p - sum(others) / len(others))
    order = _play_order(records)
    seen: set[tuple[str, str]] = set()
    position: dict[str, int] = defaultdict(int)
    out = []
    for g in order:
        rec = records[g]
        deal = f"{rec['deal_key']}/{rec.get('table', 0)}"
        for seat, name in enumerate(rec["seats"]):
            values = dup.get((g, seat))
            first = (name, deal) not in seen
            seen.add((name, deal))
            if values:
                mean = sum(values) / len(values)
                out.append(GameScore(name, g, deal, mean, first, position[name]))
            position[name] += 1
    return out


#: Periods of an entrant's own sequence of games in the memory signal's control.
PERIODS: Final = 8


def _ols_first(rows: np.ndarray) -> float:
    """The coefficient of "later game of the deal" in the least-squares fit
    dup ~ later + period (rows: dup, later, period index; one mean per period
    of the entrant's sequence, so any course of improvement over time is
    absorbed), sign turned (positive: later games better); NaN if singular."""
    periods = rows[:, 2].astype(int)
    x = np.column_stack([rows[:, 1], np.eye(PERIODS)[periods]])
    used = x[:, 1:].any(axis=0)
    x = np.column_stack([x[:, 0], x[:, 1:][:, used]])
    beta, _, rank, _ = np.linalg.lstsq(x, rows[:, 0], rcond=None)
    return -float(beta[0]) if rank == x.shape[1] else math.nan


def memory(scores: Sequence[GameScore], name: str, seed: int) -> dict[str, Any]:
    """The memory-of-deals figures of one entrant (see the module docstring):
    ``first`` and ``later`` mean duplicate scores, ``deals``, ``gain`` (points
    per hand by which later games of a deal beat the first, beyond the trend
    over time) with ``interval``, ``z``, ``p``, and ``trend`` (points per hand
    per game of the entrant's sequence)."""
    mine = [s for s in scores if s.entrant == name]
    firsts = [s.dup for s in mine if s.first]
    laters = [s.dup for s in mine if not s.first]
    deals = sorted({s.deal for s in mine})
    both = {s.deal for s in mine if s.first} & {s.deal for s in mine if not s.first}
    out: dict[str, Any] = {
        "deals": len(both),
        "first": round(sum(firsts) / len(firsts), 3) if firsts else None,
        "later": round(sum(laters) / len(laters), 3) if laters else None,
    }
    if len(both) < MIN_DEALS:
        return out | {"tested": False, "p": None}
    last = max(s.position for s in mine) + 1
    rows = np.array([[s.dup, 0.0 if s.first else 1.0, s.position * PERIODS // last] for s in mine])
    point = _ols_first(rows)
    x = np.column_stack([np.ones(len(rows)), [s.position for s in mine]])
    trend = float(np.linalg.lstsq(x, rows[:, 0], rcond=None)[0][1])
    index = {d: i for i, d in enumerate(deals)}
    by_deal: list[list[int]] = [[] for _ in deals]
    for i, sc in enumerate(mine):
        by_deal[index[sc.deal]].append(i)
    rng = np.random.default_rng(seed)
    boot = np.empty(REPLICATES)
    for b in range(REPLICATES):
        pick = rng.integers(0, len(deals), size=len(deals))
        idx = [i for d in pick for i in by_deal[d]]
        boot[b] = _ols_first(rows[idx])
    if math.isnan(point):
        return out | {"tested": False, "p": None}
    summary = _summary(point, boot)
    return out | {
        "tested": True,
        "gain": summary["estimate"],
        "interval": summary["interval"],
        "z": summary["z"],
        "p": summary["p"],
        "trend": round(trend, 4),
    }


@dataclass
class Gifts:
    """Per ordered pair ``(giver, taker)``, over the games where both sat:
    ``points`` the penalty points of the giver's discards (cards off the led
    suit) in tricks the taker won, ``queens`` the queens of spades among them,
    and ``hands`` the hands they played together."""

    points: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    queens: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    hands: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def per_hand(self, giver: str, takers: Sequence[str]) -> float | None:
        """Points ``giver`` gave ``takers`` per hand played together."""
        hands = sum(self.hands[(giver, t)] for t in takers)
        return round(sum(self.points[(giver, t)] for t in takers) / hands, 3) if hands else None


def gifts(records: Sequence[GameRecordJSON]) -> Gifts:
    """Who took whose discards in ``records`` (see :class:`Gifts`)."""
    out = Gifts()
    for rec in records:
        seats = rec["seats"]
        for hand in rec["hands"]:
            for a in range(4):
                for b in range(4):
                    if a != b:
                        out.hands[(seats[a], seats[b])] += 1
            for trick in hand["tricks"]:
                led = trick["cards"][0][1]
                for i, card in enumerate(trick["cards"]):
                    seat = (trick["leader"] + i) % 4
                    if card[1] != led and seat != trick["winner"]:
                        pair = (seats[seat], seats[trick["winner"]])
                        out.points[pair] += 13 if card == "QS" else (1 if card[1] == "H" else 0)
                        out.queens[pair] += card == "QS"
    return out


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def collusion(
    records: Sequence[GameRecordJSON], scores: Sequence[GameScore], names: Sequence[str], seed: int
) -> dict[tuple[str, str], dict[str, Any]]:
    """Per unordered pair (sorted names), see the module docstring: ``with``
    and ``without``, the pair's mean duplicate score per game (each member's
    games) with the other at the table and without; ``points_given`` (each to
    the other, per hand played together) beside ``points_given_others`` (to
    the other entrants it sat with), ``queens_given``; with more than four
    entrants ``gain`` (without - with, positive: better together) with its
    ``interval``, ``z`` and ``p`` (bootstrap over deals); with four,
    ``joint`` (the pair's summed duplicate score per game) and ``tested`` false."""
    given = gifts(records)
    seated = [set(rec["seats"]) for rec in records]
    ordered = sorted(names)
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            rows = [
                (sc.deal, sc.dup, (b if sc.entrant == a else a) in seated[sc.game])
                for sc in scores
                if sc.entrant in (a, b)
            ]
            together = [d for _, d, t in rows if t]
            apart = [d for _, d, t in rows if not t]
            others_a = [n for n in names if n not in (a, b)]
            out: dict[str, Any] = {
                "with": _mean(together),
                "without": _mean(apart),
                "points_given": {a: given.per_hand(a, [b]), b: given.per_hand(b, [a])},
                "points_given_others": {
                    a: given.per_hand(a, others_a),
                    b: given.per_hand(b, others_a),
                },
                "queens_given": {a: given.queens[(a, b)], b: given.queens[(b, a)]},
            }
            if len(names) <= 4:
                joint = _mean(together)
                out |= {"joint": None if joint is None else 2 * joint, "tested": False, "p": None}
            elif len(together) < MIN_GAMES or len(apart) < MIN_GAMES:
                out |= {"tested": False, "p": None}
            else:
                deals = sorted({d for d, _, _ in rows})
                index = {d: k for k, d in enumerate(deals)}
                sums = np.zeros((len(deals), 4))
                for d, v, t in rows:
                    col = 0 if t else 2
                    sums[index[d], col] += v
                    sums[index[d], col + 1] += 1
                point = sums[:, 2].sum() / sums[:, 3].sum() - sums[:, 0].sum() / sums[:, 1].sum()
                num = _weights(len(deals), seed) @ sums
                with np.errstate(invalid="ignore", divide="ignore"):
                    boot = num[:, 2] / num[:, 3] - num[:, 0] / num[:, 1]
                s = _summary(float(point), boot)
                out |= {
                    "tested": True,
                    "gain": s["estimate"],
                    "interval": s["interval"],
                    "z": s["z"],
                    "p": s["p"],
                }
            pairs[(a, b)] = out
    return pairs


def holm(pvalues: dict[tuple[str, str], float], alpha: float) -> set[tuple[str, str]]:
    """The tests Holm's step-down method rejects at family-wise ``alpha``
    (Holm 1979): sorted p-values ``p_(i)`` (i from 1) are rejected while
    ``p_(i) <= alpha / (m - i + 1)``."""
    m = len(pvalues)
    out = set()
    for i, (k, p) in enumerate(sorted(pvalues.items(), key=lambda kv: (kv[1], kv[0]))):
        if p > alpha / (m - i):
            break
        out.add(k)
    return out


# -- the whole audit ------------------------------------------------------------------


@dataclass
class AuditResult:
    """The audit of a run: per entrant its signals' figures, the flagged names,
    and the decisions that weigh most per entrant (links into the replay)."""

    entrants: dict[str, dict[str, dict[str, Any]]]
    flagged: list[str]
    alpha: float
    tests: int
    pairs: dict[str, dict[str, Any]] = field(default_factory=dict)
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"entrants", "flagged", "alpha", "correction", "tests", "pairs", "evidence"}``."""
        return {
            "entrants": self.entrants,
            "flagged": self.flagged,
            "alpha": self.alpha,
            "correction": "holm",
            "tests": self.tests,
            "pairs": self.pairs,
            "evidence": self.evidence,
        }


def _evidence(run: Run, judged: Sequence[Judged], name: str) -> list[dict[str, Any]]:
    """The decisions that weigh most for ``name``'s clairvoyance figure: where it
    chose the full-information move against its view's, least expected first."""
    rows = []
    for j in judged:
        if j.entrant != name or not (j.differs and j.chose_full):
            continue
        cf = sum(a and b for a, b in zip(j.cf_differs, j.cf_chose, strict=True))
        rows.append((cf, j))
    rows.sort(key=lambda r: (r[0], r[1].ref.game, r[1].ref.hand, r[1].ref.play))
    out = []
    for cf, j in rows[:TOP_DECISIONS]:
        rec = run.records[j.ref.game]
        hand = rec["hands"][j.ref.hand]
        trick, place = divmod(j.ref.play, 4)
        tr = hand["tricks"][trick]
        seat = (tr["leader"] + place) % 4
        at = (int(hand["hand_number"]), trick + 1, place + 1)
        page = f"games/{game_page(rec)}"
        out.append(
            {
                "game_id": rec["game_id"],
                "hand": at[0],
                "trick": at[1],
                "card": tr["cards"][place],
                "full_information_move": j.full,
                "own_view_move": j.own,
                "counterfactual_matches": cf,
                "seat_view": page + moment_fragment(at, seat),
                "full_deal": page + moment_fragment(at, None),
            }
        )
    return out


def audit(
    run: Run,
    *,
    alpha: float = ALPHA,
    decisions: int = DECISIONS,
    budget: int = BUDGET,
    counterfactuals: int = COUNTERFACTUALS,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> AuditResult:
    """Audit a run (see the module docstring). ``progress`` is called with the
    decisions judged as they are; ``on_total`` once with their number."""
    sampled = sample_decisions(run, decisions)
    if on_total is not None:
        on_total(sum(len(v) for v in sampled.values()))
    judged = judge_all(
        run, sampled, budget=budget, counterfactuals=counterfactuals, jobs=jobs, progress=progress
    )
    scores = game_scores(run.records)
    entrants: dict[str, dict[str, dict[str, Any]]] = {}
    pvalues: dict[tuple[str, str], float] = {}
    for name in run.names:
        c = clairvoyance(judged, name, run.key.draw_seed("audit", f"boot-c:{name}"))
        m = memory(scores, name, run.key.draw_seed("audit", f"boot-m:{name}"))
        entrants[name] = {"clairvoyance": c, "memory": m}
        for signal, found in (("clairvoyance", c), ("memory", m)):
            if found.get("tested"):
                pvalues[(name, signal)] = float(found["p"])
    pairs = collusion(run.records, scores, run.names, run.key.draw_seed("audit", "boot-pairs"))
    for (a, b), found in pairs.items():
        if found.get("tested"):
            pvalues[(f"{a}\0{b}", "collusion")] = float(found["p"])
    rejected = holm(pvalues, alpha)
    flagged_by: dict[str, list[str]] = defaultdict(list)
    for who, signal in rejected:
        for name in who.split("\0"):
            flagged_by[name].append(signal)
    for name in run.names:
        own = [p for p in pairs if name in p and pairs[p].get("tested")]
        closest = min(own, key=lambda p: (pairs[p]["p"], p), default=None)
        figures: dict[str, Any] = {"tested": closest is not None, "pairs": len(own), "p": None}
        if closest is not None:
            f = pairs[closest]
            figures |= {k: f[k] for k in ("gain", "interval", "z", "p")}
            figures["partner"] = closest[1] if closest[0] == name else closest[0]
        entrants[name]["collusion"] = figures
        for signal in SIGNALS:
            entrants[name][signal]["flagged"] = signal in flagged_by.get(name, [])
    flagged = [n for n in run.names if flagged_by.get(n)]
    evidence = {n: _evidence(run, judged, n) for n in flagged}
    return AuditResult(
        entrants,
        flagged,
        alpha,
        len(pvalues),
        {f"{a} + {b}": v for (a, b), v in pairs.items()},
        evidence,
    )


def table_text(result: AuditResult) -> str:
    """The audit as a plain-text table, one line per entrant, then the flags."""

    def fig(f: dict[str, Any], key: str, digits: int = 2) -> str:
        v = f.get(key)
        return "-" if v is None else f"{v:+.{digits}f}" if key != "rate" else f"{v:.2f}"

    width = max([len(n) for n in result.entrants] + [7])
    lines = [
        f"{'entrant':<{width}}  {'clairvoyance: rate expected  z':>32}  "
        f"{'memory: gain  z':>16}  {'collusion: gain  z  partner':>28}  flag"
    ]
    for name, s in result.entrants.items():
        c, m, k = s["clairvoyance"], s["memory"], s["collusion"]
        crow = (
            f"{c['rate']:.2f} {c['expected']:.2f} {c['z']:+6.2f}"
            if c.get("tested")
            else f"untested ({c['contested']} contested)"
        )
        mrow = f"{m['gain']:+.2f} {m['z']:+6.2f}" if m.get("tested") else "untested"
        krow = f"{k['gain']:+.2f} {k['z']:+6.2f} {k['partner']}" if k.get("tested") else "untested"
        flags = [sig for sig in SIGNALS if s[sig].get("flagged")]
        lines.append(
            f"{name:<{width}}  {crow:>32}  {mrow:>16}  {krow:>28}  {','.join(flags) or '-'}"
        )
    del fig
    lines.append(
        f"flagged at alpha {result.alpha:g} (Holm over {result.tests} tests): "
        + (", ".join(result.flagged) if result.flagged else "none")
    )
    lines.append(
        "a flag is evidence for an organiser to look at, not a verdict (docs/fair-play.md)"
    )
    return "\n".join(lines)


def write_audit(folder: Path, result: AuditResult) -> Path:
    """Write ``audit.json`` into the run's folder (the report's "Fair play"
    section reads it); returns its path."""
    path = folder / AUDIT_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
