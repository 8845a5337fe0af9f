"""What keeping deals apart costs (issue 22, items 3 and 4): the wall time of
whole runs of this checkout against an older one (``--baseline``, a folder
holding its ``arena`` package, e.g. ``git archive ccae000 | tar -x -C DIR``),
run alternately so that a busy machine weighs on both alike.

    python benchmarks/deal_custody.py --baseline DIR [--repeats N]

Two runs, sealed as the arena decides by default: the default
``hearts-arena run`` (the four sample bots, 2 rounds, ``--jobs`` the cores)
and a 4-entrant ``--rounds 4`` run. Prints, per run, the median seconds of
each side over N alternations (default 3) and their ratio (this checkout
over the baseline).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SAMPLES = ["sample:duck", "sample:heuristic", "sample:low", "sample:random"]
RUNS = {
    "default run": [],
    "4 entrants, --rounds 4": [*SAMPLES, "--rounds", "4"],
}


def _once(package_root: Path, args: list[str]) -> float:
    """Seconds of one ``python -m arena run`` with ``package_root`` first on
    the path."""
    env = dict(os.environ, PYTHONPATH=str(package_root))
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "arena", "run", *args, "--out", out, "--quiet"]
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, cwd=out)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'run':24} {'baseline s':>11} {'this s':>8} {'ratio':>6}")
    for name, run_args in RUNS.items():
        base: list[float] = []
        this: list[float] = []
        for _ in range(args.repeats):
            base.append(_once(args.baseline, run_args))
            this.append(_once(HERE, run_args))
        b, t = statistics.median(base), statistics.median(this)
        print(f"{name:24} {b:>11.1f} {t:>8.1f} {t / b:>6.2f}")


if __name__ == "__main__":
    main()
