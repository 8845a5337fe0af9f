"""Ladder vs round-robin at equal game budgets: how well does each recover a
known order of strength?

Entrants of known strength: the sample heuristic bot
(``sample_bots/heuristic_bot.py``) that, at every decision (pass and play),
plays a uniformly random legal choice with probability ``p`` instead; ``p``
is spread evenly over ``[0, 1]`` (entrant ``i`` of ``n`` has ``p = i / (n -
1)``), so entrant 0 is the pure heuristic bot, the last one a random bot,
and a lower ``p`` is assumed to be stronger. That assumption is checked
directly: the script also reports the rank correlation of the entrants'
points per hand (over the round-robin's games) with ``p``.

Games are simulated in-process with the rules engine (:mod:`arena.core.rules`),
calling the bot's pure ``choose_pass(msg)`` / ``choose_play(msg)`` with the
messages the referee would send (no processes, no JSON): 32 entrants make
35,960 tables, far too many to play with processes here. Games are short
(``--hands``, default 1 hand per game, the same for both formats), so a
game's ranks come from one hand.

* Ladder: the real :func:`arena.tournament.ladder.play_ladder` with its default batch
  (16 tables) and window, the games played by this simulator.
* Round-robin: the real :func:`arena.tournament.runner.schedule_round_robin`
  (one round), its tables shuffled with the seed, each table's four
  rotations kept together; a budget of ``G`` games is the first ``G // 4``
  tables.

After every checkpoint budget ``G`` (games), both are rated with the real
standings code (:func:`arena.results.standings.compute_standings`: TrueSkill,
sorted by the conservative rating ``mu - 3 sigma``), and the order is
compared with the known one by Kendall's tau (``scipy.stats.kendalltau``,
tau-b). The goal: the ladder reaches
tau >= 0.9 with a third of the games the round-robin needs, at 32
entrants. Each checkpoint is averaged over ``--repeats`` seeds; "reaches"
is the first checkpoint whose mean tau is >= 0.9. A round-robin that never
reaches it within the largest checkpoint needs more games than that, and
the verdict says it is a bound.

Usage (from the repository root; about 5 minutes on 2 cores)::

    python benchmarks/ladder_vs_roundrobin.py                  # 32 entrants, 1 hand per game
    python benchmarks/ladder_vs_roundrobin.py --hands 4 --checkpoints 256,512,1024,2048 --repeats 2
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from scipy.stats import kendalltau  # pip install ".[bench]"

from arena.core.cards import mask_of_names, names_of, parse_card
from arena.core.resources import sample_bots_dir
from arena.core.rules import Game, Phase, deal_hands, deal_name, pass_target
from arena.game.referee import GameSpec, derive_seed
from arena.results.standings import compute_standings
from arena.tournament.ladder import play_ladder
from arena.tournament.runner import TournamentSettings, schedule_round_robin

TIME_MS = 1000
_BOT: ModuleType | None = None
_NOISE: dict[str, float] = {}


def _heuristic() -> ModuleType:
    global _BOT
    if _BOT is None:
        path = Path(sample_bots_dir()) / "heuristic_bot.py"
        spec = importlib.util.spec_from_file_location("_bench_heuristic_bot", path)
        assert spec is not None
        assert spec.loader is not None
        _BOT = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_BOT)
    return _BOT


def simulate(spec: GameSpec) -> dict[str, Any]:
    """Play one game of ``spec`` in-process; a minimal record (``game_index``,
    ``seats``, ``ranks``, per-hand ``points``, as ``games.jsonl`` has them).

    Seat ``s`` is the heuristic bot with noise ``_NOISE[seats[s]]``, its
    random choices from ``random.Random(bot_seeds[s])``.
    """
    bot = _heuristic()
    rngs = [random.Random(seed) for seed in spec.bot_seeds]
    noise = [_NOISE[name] for name in spec.seats]
    game = Game(spec.target_score, spec.hands)  # the rules' whole game (R3 cycle, R13)
    hands = []
    while not game.is_over():
        number = game.hand_number + 1
        hand = game.start_hand(deal_hands(deal_name(spec.deal_key, number)))
        if hand.phase is Phase.PASS:
            passes = []
            for s in range(4):
                held = names_of(hand.hands[s])
                if rngs[s].random() < noise[s]:
                    cards = rngs[s].sample(held, 3)
                else:
                    msg = {
                        "type": "pass", "id": 1, "hand_number": number,
                        "direction": hand.direction.value,
                        "to": pass_target(s, hand.direction), "hand": held, "time_ms": TIME_MS,
                    }  # fmt: skip
                    cards = bot.choose_pass(msg)
                passes.append(mask_of_names(cards))
            hand.apply_passes(passes)
        before = game.scores
        while not hand.is_over():
            s = hand.turn
            if rngs[s].random() < noise[s]:
                card = rngs[s].choice(names_of(hand.legal_mask()))
            else:
                msg = hand.view(s)
                msg.update(type="play", id=1, game_id=spec.game_id, scores=before, time_ms=TIME_MS)
                card = bot.choose_play(msg)
            hand.play(parse_card(card))
        points, _moon = game.end_hand()
        hands.append({"points": points})
    return {
        "game_index": spec.game_index,
        "seats": list(spec.seats),
        "ranks": game.ranks(),
        "hands": hands,
    }


def _init(noise: dict[str, float]) -> None:
    _NOISE.clear()
    _NOISE.update(noise)


class Simulator:
    """Plays games in ``jobs`` processes (an executor for :func:`play_ladder`)."""

    def __init__(self, noise: dict[str, float], jobs: int) -> None:
        _init(noise)
        self.pool = (
            ProcessPoolExecutor(jobs, initializer=_init, initargs=(noise,)) if jobs > 1 else None
        )
        self.jobs = jobs
        self.games = 0

    def play(self, games: Sequence[GameSpec], on_record: Any) -> None:
        self.games += len(games)
        if self.pool is None:
            records = map(simulate, games)
        else:
            records = self.pool.map(
                simulate, games, chunksize=max(1, len(games) // (4 * self.jobs))
            )
        for rec in records:
            on_record(rec)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two sequences (``scipy.stats.kendalltau``)."""
    return float(kendalltau(x, y).statistic)


def tau_of(names: Sequence[str], noise: dict[str, float], records: list[dict[str, Any]]) -> float:
    """Kendall tau-b of the standings (best first, by mu - 3 sigma) with the known order."""
    rows, _ = compute_standings(names, _standings_records(records))
    position = {row["name"]: i for i, row in enumerate(rows)}
    truth = [noise[n] for n in names]  # lower noise: better, so a smaller position
    found = [position[n] for n in names]
    return kendall_tau(truth, found)


def _standings_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # compute_standings reads hands' tricks and faults too: give it empty ones.
    return [
        {**r, "hands": [{**h, "moon": None, "tricks": []} for h in r["hands"]], "faults": []}
        for r in records
    ]


def points_tau(
    names: Sequence[str], noise: dict[str, float], records: list[dict[str, Any]]
) -> float:
    """Kendall tau of points per hand (lower is better) with the known order."""
    pts = dict.fromkeys(names, 0.0)
    hands = dict.fromkeys(names, 0)
    for r in records:
        for h in r["hands"]:
            for s, name in enumerate(r["seats"]):
                pts[name] += h["points"][s]
                hands[name] += 1
    return kendall_tau([noise[n] for n in names], [pts[n] / max(1, hands[n]) for n in names])


def run_ladder(
    names: Sequence[str], noise: dict[str, float], settings: TournamentSettings,
    checkpoints: Sequence[int], jobs: int,
) -> dict[int, float]:  # fmt: skip
    """Tau after each checkpoint budget (one ladder run, read between batches:
    a ladder's first ``G`` games do not depend on its budget)."""
    sim = Simulator(noise, jobs)
    records: list[dict[str, Any]] = []
    out: dict[int, float] = {}
    pending = sorted(checkpoints)

    def on_batch(_planner: Any) -> None:
        while pending and len(records) >= pending[0]:
            out[pending.pop(0)] = tau_of(names, noise, records[: len(records)])

    ladder = replace(settings, format="ladder", games=max(checkpoints))
    try:
        play_ladder(names, ladder, sim.play, records.append, on_batch=on_batch)
    finally:
        sim.close()
    return out


def run_round_robin(
    names: Sequence[str], noise: dict[str, float], settings: TournamentSettings,
    checkpoints: Sequence[int], jobs: int,
) -> tuple[dict[int, float], float]:  # fmt: skip
    """Tau after each checkpoint budget: the prefixes of the round-robin's
    schedule with its tables shuffled (rotations of a table kept together).
    Also returns the points-per-hand tau of the largest prefix."""
    games = schedule_round_robin(names, replace(settings, rounds=1))
    tables: dict[int, list[GameSpec]] = {}
    for g in games:
        tables.setdefault(g.table, []).append(g)
    order = list(tables)
    random.Random(derive_seed(settings.seed, "benchmark-shuffle")).shuffle(order)
    budget = max(checkpoints)
    prefix = list(itertools.chain.from_iterable(tables[t] for t in order))[:budget]
    sim = Simulator(noise, jobs)
    records: list[dict[str, Any]] = []
    try:
        sim.play(prefix, records.append)
    finally:
        sim.close()
    by_index = {r["game_index"]: r for r in records}
    ordered = [by_index[g.game_index] for g in prefix]
    out = {}
    for c in sorted(checkpoints):
        # Re-number the prefix so ratings are applied in the shuffled order.
        part = [{**r, "game_index": i} for i, r in enumerate(ordered[:c])]
        out[c] = tau_of(names, noise, part)
    return out, points_tau(names, noise, ordered)


def first_reaching(curve: dict[int, float], goal: float) -> int | None:
    """The smallest checkpoint whose tau reaches ``goal``, or ``None``."""
    for c in sorted(curve):
        if curve[c] >= goal:
            return c
    return None


def verdict(ladder: int | None, rr: int | None, largest: int, goal: float) -> str:
    """Whether the ladder reached ``goal`` with at most a third of the games
    the round-robin needed. A round-robin that never reached it within
    ``largest`` games needs more than that: a lower bound, said so."""
    if ladder is None:
        return f"goal NOT met: the ladder did not reach tau {goal} within {largest} games"
    if rr is None:
        met = 3 * ladder <= largest
        return (
            f"goal {'met' if met else 'undecided'}: the round-robin did not reach tau {goal} "
            f"within {largest} games, so it needs more than {largest}; the ladder reached it "
            f"at {ladder} ({ladder / largest:.2f} of {largest}, goal <= 0.33)"
        )
    met = 3 * ladder <= rr
    return (
        f"goal {'met' if met else 'NOT met'}: ladder/round-robin = {ladder / rr:.2f} (goal <= 0.33)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=32)
    parser.add_argument("--hands", type=int, default=1, help="hands per game (default 1)")
    parser.add_argument(
        "--checkpoints",
        default="256,512,768,1024,1536,2048,3072,4096,6144",
        help="game budgets, comma-separated (multiples of 4)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="seeds averaged (default 3)")
    parser.add_argument("--seed", type=int, default=11, help="first seed (default 11)")
    parser.add_argument("--goal", type=float, default=0.9, help="tau to reach (default 0.9)")
    parser.add_argument("--jobs", type=int, default=2, help="simulator processes (default 2)")
    args = parser.parse_args(argv)
    n = args.entrants
    names = [f"p{i:02d}" for i in range(n)]
    noise = {name: i / (n - 1) for i, name in enumerate(names)}
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    ladder_curves, rr_curves, ppH = [], [], []
    start = time.perf_counter()
    for rep in range(args.repeats):
        settings = TournamentSettings(seed=args.seed + rep, target_score=None, hands=args.hands)
        t0 = time.perf_counter()
        ladder_curves.append(run_ladder(names, noise, settings, checkpoints, args.jobs))
        t1 = time.perf_counter()
        rr, pt = run_round_robin(names, noise, settings, checkpoints, args.jobs)
        rr_curves.append(rr)
        ppH.append(pt)
        print(
            f"seed {args.seed + rep}: ladder {t1 - t0:.0f} s, round-robin "
            f"{time.perf_counter() - t1:.0f} s",
            file=sys.stderr,
        )
    ladder = {c: sum(cv[c] for cv in ladder_curves) / len(ladder_curves) for c in checkpoints}
    rr = {c: sum(cv[c] for cv in rr_curves) / len(rr_curves) for c in checkpoints}
    tables = len(list(itertools.combinations(names, 4)))
    seeds = f"{args.seed}..{args.seed + args.repeats - 1}"
    print(
        f"{n} entrants: the heuristic bot playing a random legal move with probability "
        f"p = i/{n - 1}; {args.hands} hand(s) per game; round-robin: {tables} tables = "
        f"{4 * tables} games per round, budget = a prefix of its shuffled tables"
    )
    print(
        f"tau: Kendall tau-b of the standings (TrueSkill, mu - 3 sigma) with the known order, "
        f"mean over seeds {seeds} (min..max in brackets)"
    )
    print(f"{'games':>7}  {'ladder tau':>20}  {'round-robin tau':>20}")
    for c in checkpoints:
        lo, hi = min(cv[c] for cv in ladder_curves), max(cv[c] for cv in ladder_curves)
        rlo, rhi = min(cv[c] for cv in rr_curves), max(cv[c] for cv in rr_curves)
        print(
            f"{c:>7}  {ladder[c]:>6.3f} [{lo:.3f}..{hi:.3f}]  {rr[c]:>6.3f} [{rlo:.3f}..{rhi:.3f}]"
        )
    print(
        f"known order check: points per hand over the round-robin's {checkpoints[-1]} games "
        f"vs p, tau = {sum(ppH) / len(ppH):.3f}"
    )
    lg, rg = first_reaching(ladder, args.goal), first_reaching(rr, args.goal)
    print(f"first mean tau >= {args.goal}: ladder at {lg} games, round-robin at {rg} games")
    print(verdict(lg, rg, checkpoints[-1], args.goal))
    print(f"total {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
