"""The timing channel between two colluding bots, with and without ``--pace``
(issue 22 item 6): its capacity in bits per hand, and the pace's cost in
games per second.

A sender (``benchmarks/timing_sender.py``) waits ``(0.5 + L) * UNIT`` before
each card, ``L`` being three bits of its dealt hand; its partner, opposite
(``benchmarks/timing_receiver.py``), times the gap between its reply and its
next request and decodes ``L``; the other two seats are instant bots. Each
cell is a real tournament (``python -m arena run``, sealed where the machine
allows, one hand per game, ``--strikes 0``). The figures: pairs of (sent,
decoded) symbols, the share decoded right (chance: 1/8), the mutual
information between them (plug-in estimate with the Miller-Madow
correction, in bits per symbol), and that times the symbols per hand: the
channel's capacity as this attacker reaches it, in bits per hand. Then four
instant bots play the same tournament with and without the pace: games per
second, and the ratio.

Usage: ``python benchmarks/timing_channel.py [--time-limit S] [--unit MS]
[--pace S] [--rounds N] [--jobs N]``; the defaults (1 s, 100 ms, 1.05 s,
2 rounds) are the issue's attack.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _own_folder(name: str) -> Path:
    """``benchmarks/NAME`` copied into a folder of its own (a sealed bot sees
    its whole folder, so two programs may not share one)."""
    folder = Path(tempfile.mkdtemp(prefix="timing-bot-"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    shutil.copy(HERE / name, folder / name)
    (folder / name).chmod(0o644)
    return folder / name


def run(entrants: list[str], extra: list[str]) -> tuple[list[dict[str, Any]], float]:
    """Play one tournament; its game records and its wall time in seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="timing-") as tmp:
        os.chmod(tmp, 0o755)
        out = Path(tmp) / "out"
        argv = [sys.executable, "-m", "arena", "run", *entrants, "--hands", "1", "--seed", "22"]
        argv += ["--strikes", "0", "--quiet", "--out", str(out), *extra]
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if done.returncode not in (0, 5):
            raise SystemExit(f"the arena failed ({done.returncode}): {done.stderr[-2000:]}")
        lines = (out / "games.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x], wall


def mutual_information(pairs: list[tuple[int, int]]) -> float:
    """I(sent; decoded) in bits, plug-in with the Miller-Madow correction
    (``(cells - rows - columns + 1) / (2 N ln 2)`` taken off), at least 0."""
    n = len(pairs)
    if not n:
        return 0.0
    joint = collections.Counter(pairs)
    xs = collections.Counter(x for x, _ in pairs)
    ys = collections.Counter(y for _, y in pairs)
    mi = sum(c / n * math.log2(c * n / (xs[x] * ys[y])) for (x, y), c in joint.items())
    mi -= (len(joint) - len(xs) - len(ys) + 1) / (2 * n * math.log(2))
    return max(0.0, mi)


def channel_cell(args: argparse.Namespace, pace: float) -> dict[str, float]:
    """One tournament of the attacker pair and two instant bots."""
    tx, rx = _own_folder("timing_sender.py"), _own_folder("timing_receiver.py")
    instant = [_own_folder("instant_bot.py") for _ in range(2)]
    entrants = [f"a-tx={tx} {args.unit:g}", f"b-h1={instant[0]}"]
    entrants += [f"c-rx={rx} {args.unit:g} a-tx", f"d-h2={instant[1]}"]
    extra = ["--time-limit", str(args.time_limit), "--rounds", str(args.rounds)]
    extra += ["--jobs", str(args.jobs), "--pace", str(pace)]
    records, wall = run(entrants, extra)
    pairs: list[tuple[int, int]] = []
    faults = 0
    for rec in records:
        seats = rec["seats"]
        sent: dict[tuple[int, int], int] = {}
        got: dict[tuple[int, int], int] = {}
        for line in rec["stderr"][seats.index("a-tx")].splitlines():
            if line.startswith("SENT "):
                _, h, t, s = line.split()
                sent[int(h), int(t)] = int(s)
        for line in rec["stderr"][seats.index("c-rx")].splitlines():
            if line.startswith("GOT "):
                _, h, t, s, _gap = line.split()
                got[int(h), int(t)] = int(s)
        pairs += [(sent[k], got[k]) for k in got if k in sent]
        faults += len(rec["faults"])
    hands = sum(len(r["hands"]) for r in records)
    mi = mutual_information(pairs)
    right = sum(1 for x, y in pairs if x == y)
    return {
        "pairs": len(pairs),
        "right": right / len(pairs) if pairs else 0.0,
        "mi": mi,
        "per_hand": mi * len(pairs) / hands if hands else 0.0,
        "hands": hands,
        "faults": faults,
        "wall": wall,
    }


def throughput_cell(args: argparse.Namespace, pace: float) -> dict[str, float]:
    """Four instant bots: games per second."""
    bots = [_own_folder("instant_bot.py") for _ in range(4)]
    entrants = [f"i{i}={b}" for i, b in enumerate(bots)]
    extra = ["--time-limit", str(args.time_limit), "--rounds", str(args.rounds)]
    extra += ["--jobs", str(args.jobs), "--pace", str(pace)]
    records, wall = run(entrants, extra)
    return {"games": len(records), "wall": wall, "rate": len(records) / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=1.0, help="seconds (default 1)")
    parser.add_argument("--unit", type=float, default=100.0, help="the sender's ms per step")
    parser.add_argument("--pace", type=float, default=1.05, help="seconds (default 1.05)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 4 games (default 2)")
    parser.add_argument("--jobs", type=int, default=2, help="games at once (default 2)")
    parser.add_argument(
        "--cells", default="channel,throughput",
        help="what to run: channel (the attack, with and without the pace), throughput "
        "(four instant bots, with and without); default both",
    )  # fmt: skip
    parser.add_argument(
        "--no-pace-only", action="store_true", help="only the cells without the pace"
    )
    args = parser.parse_args()
    cells = set(args.cells.split(","))
    paces = [("no pace", 0.0)] + (
        [] if args.no_pace_only else [(f"--pace {args.pace:g}", args.pace)]
    )
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; time limit "
          f"{args.time_limit:g} s; sender waits (0.5 + L) x {args.unit:g} ms")  # fmt: skip
    print(f"{'':>18}  {'pairs':>5}  {'decoded':>7}  {'bits/symbol':>11}  {'bits/hand':>9}  "
          f"{'faults':>6}  {'s':>5}")  # fmt: skip
    for label, pace in paces if "channel" in cells else []:
        c = channel_cell(args, pace)
        print(f"{label:>18}  {c['pairs']:>5.0f}  {c['right']:>7.1%}  {c['mi']:>11.2f}  "
              f"{c['per_hand']:>9.1f}  {c['faults']:>6.0f}  {c['wall']:>5.0f}",
              flush=True)  # fmt: skip
    rates = []
    for label, pace in paces if "throughput" in cells else []:
        t = throughput_cell(args, pace)
        rates.append(t["rate"])
        print(f"four instant bots, {label}: {t['games']:.0f} games in {t['wall']:.1f} s, "
              f"{t['rate']:.3f} games/s", flush=True)  # fmt: skip
    if len(rates) == 2:
        print(f"the pace costs {rates[0] / rates[1]:.0f}x in games per second (one hand a game)")


if __name__ == "__main__":
    main()
