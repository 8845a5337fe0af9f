"""Schedules of any size (issue 16): time and peak memory, each beside its limit.

1. ``hearts-arena run`` with 64 entrants, ``--rounds 2 --dry-run`` (5,083,008
   games): wall time and peak resident memory of the process, against the
   goals (under 2 s, under 150 MB).
2. A long synthetic run (:func:`arena.tournament.synthetic.synthetic_run`: the schedule
   streamed, every game played in-process by the rules engine, its record
   written to a ``games.jsonl`` and its result applied to the ratings in
   schedule order, without the report): peak resident memory of about
   100,000 games against about 10,000 (12 entrants, one hand per game, 5
   rounds vs 50), goal at most 1.5x.

Each figure is measured in a child process of its own (``os.wait4`` gives
that child's peak RSS).

Usage (from the repository root)::

    python benchmarks/schedule_scale.py [--quick]

``--quick`` runs 1,980 vs 19,800 games instead (one round vs ten).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SYNTHETIC = """
import sys
from pathlib import Path
from arena.tournament.synthetic import synthetic_run
from arena.tournament.runner import TournamentSettings
names = [f"e{i:02d}" for i in range(12)]
settings = TournamentSettings(seed=1, rounds=int(sys.argv[1]), hands=1, target_score=None)
ladder = synthetic_run(names, settings, Path(sys.argv[2]))
print(sum(1 for _ in open(sys.argv[2])))
"""


def run_child(argv: list[str]) -> tuple[float, float, str]:
    """Run ``argv``; return its wall time (seconds), peak RSS (MB) and stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed with exit code {proc.returncode}")
    return wall, usage.ru_maxrss / 1024, out  # ru_maxrss is in KiB on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,980 vs 19,800 synthetic games")
    args = parser.parse_args(argv)
    bot = str(ROOT / "tests" / "bots" / "first_legal.py")
    entrants = [f"b{i:02d}={bot}" for i in range(64)]
    flags = ["--rounds", "2", "--seed", "1", "--dry-run"]
    wall, rss, out = run_child([sys.executable, "-m", "arena", "run", *entrants, *flags])
    games = next((ln.split()[0] for ln in out.splitlines() if " games, each " in ln), "?")
    print(
        f"dry run, 64 entrants, --rounds 2 ({games} games): {wall:.2f} s (goal < 2 s), "
        f"peak {rss:.0f} MB (goal < 150 MB)"
    )
    small, large = (1, 10) if args.quick else (5, 50)
    peaks = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rounds in (small, large):
            journal = str(Path(tmp) / f"games{rounds}.jsonl")
            wall, rss, out = run_child([sys.executable, "-c", SYNTHETIC, str(rounds), journal])
            peaks[rounds] = rss
            print(
                f"synthetic run, 12 entrants, {rounds} rounds: {int(out):,} games in "
                f"{wall:.0f} s, peak {rss:.1f} MB"
            )
    ratio = peaks[large] / peaks[small]
    print(f"peak memory, {large} rounds vs {small}: x{ratio:.2f} (goal <= 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
