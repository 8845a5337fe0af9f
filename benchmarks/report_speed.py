"""How long the report takes: synthesise about 1,000 game records and time ``write_outputs``.

The records are played in-process by the rules engine (``arena.tournament.synthetic``:
6 entrants, real round-robin schedule, games to 100 points with random and
lowest-card policies), so they have a real run's fields and sizes. Only
``write_outputs`` is timed: results.json, standings.csv, index.html, one page
per entrant and one replay page per game.

Usage::

    /work/venv/bin/python benchmarks/report_speed.py [--games 1000] [--hands N] [--out DIR]

Prints the number of games and hands, the time to synthesise them and the
render time in seconds.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from arena.report.outputs import write_outputs
from arena.tournament.runner import TournamentSettings, tables_of
from arena.tournament.synthetic import synthesize

NAMES = ["ada", "bob", "cy", "dee", "eve", "fay"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--games", type=int, default=1000, help="about this many games (default 1000)"
    )
    parser.add_argument(
        "--hands", type=int, default=None, help="fixed hands per game (default: to 100)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the report here (default: a temp folder)"
    )
    args = parser.parse_args()
    per_round = len(tables_of(NAMES)) * 4
    rounds = max(1, math.ceil(args.games / per_round))
    settings = TournamentSettings(
        seed=7,
        rounds=rounds,
        hands=args.hands,
        target_score=None if args.hands else 100,
    )
    t0 = time.perf_counter()
    records = synthesize(NAMES, settings, policies={"ada": "low", "bob": "low"})
    t_synth = time.perf_counter() - t0
    hands = sum(len(r["hands"]) for r in records)
    settings_json = {
        **settings.to_json(),
        "entrants": [{"name": n, "command": "synthetic", "cwd": "."} for n in NAMES],
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        write_outputs(out, settings_json, NAMES, records, len(records))
        t_render = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{len(records)} games, {hands} hands ({rounds} rounds, 6 entrants)")
    print(f"synthesised in {t_synth:.1f} s")
    print(f"write_outputs: {t_render:.2f} s ({size / 1e6:.1f} MB written)")


if __name__ == "__main__":
    main()
