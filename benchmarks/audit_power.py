"""How well ``hearts-arena audit`` tells cheats from honest play (issue 23).

Runs are played in-process (``tests/audit_runs.py``: the real schedule, the
deals of a public seed, the rules engine; the players are the policies of
``tests/bots/cheatlib.py`` and the heuristic sample bot), then audited at the
default alpha (0.01, Holm):

* false positives: honest fields (the sample search at a small budget, the
  heuristic, random players) over several seeds and mixes: entrants flagged
  of entrants audited;
* hands to flag each cheat: the cheat's hands in the shortest prefix of its
  run (whole rounds, in schedule order) at which it is flagged by its signal:
  ``clairvoyant`` (sees every hand from the public seed, plays the search on
  them), ``partner`` (two of six entrants see each other's hand and play for
  the pair), ``memory`` (remembers every deal it has played, through a file);
* CPU seconds per thousand decisions judged (the clairvoyance signal's
  searches, one process), beside the baseline of the same searches' players:
  the sample search bot's own CPU per thousand decisions at the same budget.

    python benchmarks/audit_power.py            # short: about 5 minutes of CPU
    python benchmarks/audit_power.py --seeds 6  # more honest fields
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import audit_runs  # noqa: E402
import cheatlib  # noqa: E402

from arena.tools import audit as au  # noqa: E402

BUDGET = 400  # the players' search, simulated card plays
AUDIT_BUDGET = 1000


def audit(run: au.Run, decisions: int = 150) -> au.AuditResult:
    return au.audit(run, decisions=decisions, budget=AUDIT_BUDGET)


def prefix(run: au.Run, games: int) -> au.Run:
    return au.Run(run.folder, run.key, run.names, run.records[:games])


def honest(work: Path, seeds: int) -> tuple[int, int]:
    flagged = audited = 0
    mixes: list[dict[str, Any]] = [
        {
            "search": lambda: cheatlib.HonestSearch(BUDGET),
            "heuristic": lambda: audit_runs.Heuristic(),
            "search2": lambda: cheatlib.HonestSearch(BUDGET),
            "random": lambda: audit_runs.Random(),
        },
        {f"heuristic{i}": (lambda: audit_runs.Heuristic()) for i in range(5)},
    ]
    for s in range(seeds):
        field = mixes[s % len(mixes)]
        folder = audit_runs.build_run(work / f"h{s}", field, seed=f"bench-h{s}", rounds=8)
        result = audit(au.load_run(folder))
        flagged += len(result.flagged)
        audited += len(result.entrants)
        print(f"  honest field {s} ({len(field)} entrants): flagged {result.flagged}")
    return flagged, audited


def hands_to_flag(run: au.Run, cheat: str, signal: str, steps: list[int]) -> int | None:
    """The cheat's hands in the first prefix (of ``steps`` games) that flags it."""
    for games in steps:
        part = prefix(run, games)
        result = audit(part)
        if result.entrants[cheat][signal]["flagged"]:
            return sum(len(r["hands"]) for r in part.records if cheat in r["seats"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=4, help="honest fields (default 4)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="audit-power-"))
    try:
        print("false positives (honest fields, alpha 0.01):")
        flagged, audited = honest(work, args.seeds)
        print(f"false positives: {flagged} of {audited} entrants audited")

        seed = "bench-c"
        field = {
            "search": lambda: cheatlib.HonestSearch(BUDGET),
            "heuristic": lambda: audit_runs.Heuristic(),
            "search2": lambda: cheatlib.HonestSearch(BUDGET),
            "cheat": lambda: cheatlib.Clairvoyant(seed, BUDGET),
        }
        run = au.load_run(audit_runs.build_run(work / "c", field, seed=seed, rounds=16))
        n = hands_to_flag(run, "cheat", "clairvoyance", [8, 16, 24, 32, 48, 64])
        print(f"clairvoyant: flagged by clairvoyance after {n} hands")

        allies = ["ally1", "ally2"]
        field = {f"honest{i}": (lambda: audit_runs.Heuristic()) for i in range(4)}
        field |= {a: (lambda: cheatlib.Partner(str(work), allies, 0)) for a in allies}
        run = au.load_run(audit_runs.build_run(work / "p", field, seed="bench-p", rounds=4))
        n = hands_to_flag(run, "ally1", "collusion", [60, 120, 180, 240])
        print(f"partner's hand (6 entrants): flagged by collusion after {n} hands of ally1")

        mem = work / "mem"
        mem.mkdir()
        field = {
            "heuristic": lambda: audit_runs.Heuristic(),
            "heuristic2": lambda: audit_runs.Heuristic(),
            "heuristic3": lambda: audit_runs.Heuristic(),
            "memory": lambda: cheatlib.Memory(str(mem), 0),
        }
        folder = audit_runs.build_run(work / "m", field, seed="bench-m", rounds=40, hands=4)
        run = au.load_run(folder)
        n = hands_to_flag(run, "memory", "memory", [40, 80, 120, 160])
        print(f"memory of deals: flagged by memory after {n} hands")

        decisions = 300
        t = time.process_time()
        result = audit(prefix(au.load_run(work / "c"), 64), decisions=decisions)
        cpu = time.process_time() - t
        judged = sum(e["clairvoyance"]["decisions"] for e in result.entrants.values())
        field_run = au.load_run(work / "c")
        t = time.process_time()
        count = 0
        for g, rec in enumerate(field_run.records[:8]):
            for d in au.iter_decisions(rec, g):
                cheatlib.search.search_play(d.view, AUDIT_BUDGET, seed=1)
                count += 1
        base = time.process_time() - t
        print(
            f"audit CPU: {1000 * cpu / judged:.1f} s per thousand decisions judged "
            f"(budget {AUDIT_BUDGET}, {judged} decisions); baseline, one search per decision "
            f"at the same budget: {1000 * base / count:.1f} s per thousand "
            f"(ratio {cpu / judged / (base / count):.1f})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
