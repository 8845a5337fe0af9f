"""Fair clocks: does an honest bot's result depend on ``--jobs`` or on its opponents?

Prints, in one run, side by side (issue 13):

1. an honest bot that needs 0.9 of its budget in CPU for every decision
   (``benchmarks/cpu_bound_bot.py 0.9``): its timeout rate and the share of
   a core it got while thinking (its CPU seconds over its wall seconds, as it
   measures them), at ``--jobs 1, 2, 4``, with three such bots at the table
   and with two of them and a CPU hog (``benchmarks/cpu_hog_bot.py``: four
   children, each in a session of its own, spinning for good);
2. four bots that each need half the handshake's time in CPU to start,
   started together (one table, a fresh process per game, 16 handshakes):
   how many fail the handshake.

Each cell is a real tournament (``python -m arena run``, one table, two
rounds of four seat rotations, one hand per game, ``--strikes 0`` so that
every decision counts; the games of one deal never overlap, so at most two
games run at once). ``--compare`` adds the same cells with the fairness
switched off as far as the flags allow (``--ponder --cores 64`` and no control
groups: ``HEARTS_ARENA_NO_CGROUPS=1``), which is how the arena behaved before.

``--outside-load`` runs instead a phase with load the organiser did not
start (issue 22 item 8): busy loops (``python3 -c "while 1: pass"``) started
outside the arena, none, as many as the cores and twice that, beside four
honest bots at ``--jobs 1, 2, 4``, each cell with both clocks: the default
(time limits counted in the bot's CPU time while it is runnable, up to
``--wall-cap`` times the limit) and ``--wall-cap 1`` (wall time only, as
before). ``--decisions N`` sets the size of each cell (at least N honest
decisions: more hands per game); ``--jobs-list``, ``--loads`` and
``--clocks`` pick cells, for a short run.

Usage: ``python benchmarks/fairness.py [--time-limit SECONDS] [--compare]``;
``python benchmarks/fairness.py --outside-load [--decisions 2000]
[--jobs-list 1,2,4] [--loads 0,1,2] [--clocks cpu,wall]``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _own_folder(name: str) -> Path:
    """``benchmarks/NAME`` copied into a folder of its own (a sealed bot sees
    its whole folder, so two programs may not share one)."""
    folder = Path(tempfile.mkdtemp(prefix="fairness-bot-"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    shutil.copy(HERE / name, folder / name)
    (folder / name).chmod(0o644)
    return folder / name


BOUND = _own_folder("cpu_bound_bot.py")
HONEST = f"{BOUND} 0.9"
HOG = f"{_own_folder('cpu_hog_bot.py')} 4"


def run_tournament(
    entrants: list[str], extra: list[str], fair: bool, out: Path
) -> tuple[list[dict[str, Any]], float]:
    """Play one tournament; its game records and its wall time in seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flags: list[str] = []
    if not fair:
        env["HEARTS_ARENA_NO_CGROUPS"] = "1"
        flags = ["--ponder", "--cores", "64"]
    argv = [sys.executable, "-m", "arena", "run", *entrants]
    if "--hands" not in extra:
        argv += ["--hands", "1"]
    argv += ["--seed", "13", "--strikes", "0", "--quiet", "--out", str(out), *flags, *extra]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 5):
        raise SystemExit(f"the arena failed ({done.returncode}): {done.stderr[-2000:]}")
    records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines() if x]
    return records, wall


def honest_cell(
    jobs: int, hog: bool, limit: float, fair: bool, hands: int = 1, flags: Sequence[str] = ()
) -> dict[str, float]:
    """Timeouts and CPU share of the honest bots of one tournament
    (``hands`` per game; ``flags`` more arena flags)."""
    names = ["h1", "h2", "h3"] if hog else ["h1", "h2", "h3", "h4"]
    entrants = [f"{n}={HONEST}" for n in names]
    if hog:
        entrants.append(f"hog={HOG}")
    with tempfile.TemporaryDirectory(prefix="fairness-") as tmp:
        os.chmod(tmp, 0o755)
        extra = ["--jobs", str(jobs), "--time-limit", str(limit), "--startup-time", "20"]
        extra += ["--rounds", "2"]  # two deals: the games of one deal never overlap
        extra += ["--hands", str(hands), *flags]
        records, wall = run_tournament(entrants, extra, fair, Path(tmp) / "out")
    decisions = timeouts = 0
    cpu = think = 0.0
    for rec in records:
        for seat, name in enumerate(rec["seats"]):
            if name not in names:
                continue
            decisions += rec["timing"][seat]["requests"]
            lines = [x for x in rec["stderr"][seat].splitlines() if x.startswith("FAIR ")]
            if lines:  # the last one counts the whole game
                _, c, w, _n = lines[-1].split()
                cpu += float(c)
                think += float(w)
        timeouts += sum(
            1 for f in rec["faults"] if f["entrant"] in names and f["reason"] == "timeout"
        )
    return {
        "decisions": decisions,
        "timeouts": timeouts,
        "share": cpu / think if think else 0.0,
        "wall": wall,
    }


def handshake_cell(limit: float, fair: bool) -> dict[str, float]:
    """Four bots per table needing half the startup time in CPU, 16 started at once."""
    startup = 4.0
    bot = f"{BOUND} 0 {startup / 2}"
    entrants = [f"s{i}={bot}" for i in range(1, 5)]
    with tempfile.TemporaryDirectory(prefix="fairness-") as tmp:
        os.chmod(tmp, 0o755)
        extra = ["--jobs", "4", "--rounds", "1", "--fresh-processes", "--time-limit", str(limit)]
        extra += ["--startup-time", str(startup)]
        records, wall = run_tournament(entrants, extra, fair, Path(tmp) / "out")
    failed = sum(1 for r in records for f in r["faults"] if f.get("request") == "hello")
    return {"handshakes": 4 * len(records), "failed": failed, "wall": wall, "startup": startup}


def print_table(limit: float, fair: bool) -> None:
    mode = "fair (default)" if fair else "unfair (--ponder --cores 64, no control groups)"
    print(f"\n{mode}: honest bots burn {0.9 * limit * 1000:.0f} ms of CPU per decision "
          f"of {limit * 1000:.0f} ms")  # fmt: skip
    print(f"{'--jobs':>6}  {'timeouts':>16}  {'CPU share':>9}  {'s':>5}   "
          f"{'timeouts (hog)':>16}  {'CPU share':>9}  {'s':>5}")  # fmt: skip
    for jobs in (1, 2, 4):
        row = [honest_cell(jobs, hog, limit, fair) for hog in (False, True)]
        cells = []
        for c in row:
            rate = 100 * c["timeouts"] / c["decisions"] if c["decisions"] else 0.0
            text = f"{c['timeouts']:.0f}/{c['decisions']:.0f} ({rate:.1f}%)"
            cells.append(f"{text:>16}  {c['share']:>9.2f}  {c['wall']:>5.0f}")
        print(f"{jobs:>6}  " + "   ".join(cells), flush=True)
    h = handshake_cell(limit, fair)
    print(
        f"handshake: {h['failed']:.0f} of {h['handshakes']:.0f} failed (each bot needs "
        f"{h['startup'] / 2:.0f} s of CPU of a {h['startup']:.0f} s handshake, "
        f"the four of a table started together; {h['wall']:.0f} s)",
        flush=True,
    )


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` busy loops (``python3 -c "while 1: pass"``) started outside
    the arena, in this script's own group, for the ``with`` block; each is
    ended by its pid afterwards."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def outside_load_table(
    limit: float, decisions: int, jobs_list: list[int], loads: list[int], clocks: list[str]
) -> None:
    """The outside-load phase: rows of ``--jobs``, per load (busy loops per
    core) and clock, the honest bots' timeouts and CPU share (cells
    alternate clocks, so both see the same machine)."""
    cores = os.cpu_count() or 1
    hands = max(1, math.ceil(decisions / (8 * 14 * 4)))  # 8 games, 14 decisions, 4 bots
    print(f"\noutside load: honest bots burn {0.9 * limit * 1000:.0f} ms of CPU per decision "
          f"of {limit * 1000:.0f} ms; {hands} hands per game, 8 games, 4 honest bots; "
          "clock cpu: the default (--wall-cap 2), wall: --wall-cap 1")  # fmt: skip
    print(f"{'loops':>5}  {'--jobs':>6}  {'clock':>5}  {'timeouts':>18}  {'CPU share':>9}  "
          f"{'load':>5}  {'s':>5}")  # fmt: skip
    for per_core in loads:
        with busy_loops(per_core * cores):
            for jobs in jobs_list:
                for clock in clocks:
                    flags = ["--wall-cap", "1"] if clock == "wall" else []
                    c = honest_cell(jobs, False, limit, True, hands, flags)
                    rate = 1000 * c["timeouts"] / c["decisions"] if c["decisions"] else 0.0
                    text = f"{c['timeouts']:.0f}/{c['decisions']:.0f} ({rate:.1f}‰)"
                    print(f"{per_core * cores:>5}  {jobs:>6}  {clock:>5}  {text:>18}  "
                          f"{c['share']:>9.2f}  {os.getloadavg()[0]:>5.1f}  {c['wall']:>5.0f}",
                          flush=True)  # fmt: skip


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--time-limit", type=float, default=0.25, help="seconds per decision (default 0.25)"
    )
    parser.add_argument("--compare", action="store_true", help="also run with fairness off")
    parser.add_argument(
        "--outside-load", action="store_true", help="the phase with busy loops outside the arena"
    )
    parser.add_argument(
        "--decisions", type=int, default=2000,
        help="--outside-load: honest decisions per cell, at least (default 2000)",
    )  # fmt: skip
    parser.add_argument("--jobs-list", type=_ints, default=[1, 2, 4], help="e.g. 1,2,4")
    parser.add_argument(
        "--loads", type=_ints, default=[0, 1, 2], help="busy loops per core, e.g. 0,1,2"
    )
    parser.add_argument(
        "--clocks", type=lambda t: t.split(","), default=["cpu", "wall"], help="cpu,wall"
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    if args.outside_load:
        outside_load_table(args.time_limit, args.decisions, args.jobs_list, args.loads, args.clocks)
        return
    print_table(args.time_limit, True)
    if args.compare:
        print_table(args.time_limit, False)


if __name__ == "__main__":
    main()
