"""What crosses the seal: two copies of tests/bots/leak.py (a sender and a
receiver, at one table with two sample bots) try to pass the sender's dealt
hand over each channel class of issue 22, sealed (the default) and with
``--no-sandbox``; prints per channel what the receiver got.

    python benchmarks/seal_channels.py [--hands-per-game 4] [--rounds 4] [--seed 5]

Runs the arena that ``python -m arena`` finds (set ``PYTHONPATH`` to
a checkout to measure another version). Per channel and mode:

* ``exact``: hands whose 13 dealt cards the receiver named exactly;
* ``right``: share of the sender's dealt cards the receiver placed right,
  guessing 13 of the 39 cards it does not hold: the cards the channel gave
  (in the order received), then a random fill; chance is 1/3, and the 99%
  interval of a guess is printed beside it (hypergeometric, over the hands);
* ``bits/hand``: the information the receiver's channel cards carry, counting
  ``right - wrong / 2`` of them (zero on average for random cards) as known:
  ``log2(C(39, 13) / C(39 - c, 13 - c))``, 32.9 bits for an exact hand.

Also printed, once per mode: whether the receiver could ``ptrace`` pid 1 or
read its memory and environment, whether the run id or the arena's own
folders appear in its environment or mount table, and its ``PATH``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RANKS = "23456789TJQKA"
CARDS = [r + s for s in "CDSH" for r in RANKS]
#: Per hand, variance of the number of right cards in a random guess of 13
#: of 39 cards, 13 of which are right (hypergeometric).
_VAR = 13 * (13 / 39) * (26 / 39) * (26 / 38)
Z99 = 2.5758


def chance_interval(hands: int) -> tuple[float, float]:
    """The 99% interval of the share of right cards of a random guess over ``hands``."""
    half = Z99 * math.sqrt(hands * _VAR) / (13 * hands)
    return 1 / 3 - half, 1 / 3 + half


def _bits(known: int) -> float:
    known = max(0, min(13, known))
    return math.log2(math.comb(39, 13) / math.comb(39 - known, 13 - known))


def score(hands: list[tuple[int, list[str], list[str], str | None]]) -> dict[str, Any]:
    """Score one channel over ``hands``: (hand key, the receiver's dealt
    cards, the sender's dealt cards, the channel's letters or ``None`` when
    it could not be opened).

    Returns:
        ``{"hands", "opened", "given", "exact", "right", "bits"}``: hands
        scored, hands where the channel opened, cards the channel gave the
        receiver (over all hands), exact hands, share of right cards (0..1),
        mean bits per hand.
    """
    exact = right_total = opened = given = 0
    bits = 0.0
    for key, own, sent, text in hands:
        unknown = [c for c in CARDS if c not in own]
        got: list[str] = []
        for ch in text or "":
            card = CARDS[ord(ch) - 65] if 0 <= ord(ch) - 65 < 52 else None
            if card in unknown and card not in got:
                got.append(card)
        opened += text is not None
        given += len(got)
        guess = got[:13]
        rest = [c for c in unknown if c not in guess]
        random.Random(key).shuffle(rest)
        guess += rest[: 13 - len(guess)]
        right = len(set(guess) & set(sent))
        exact += right == 13
        right_total += right
        good = len(set(got) & set(sent))
        bits += _bits(math.floor(good - (len(got) - good) / 2))
    n = len(hands)
    return {
        "hands": n,
        "opened": opened,
        "given": given,
        "exact": exact,
        "right": right_total / (13 * n) if n else 0.0,
        "bits": bits / n if n else 0.0,
    }


def run(
    mode: list[str], *, hands_per_game: int, rounds: int, seed: int, python: str = sys.executable
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str]:
    """Play the sender and the receiver in one mode (extra arguments of
    ``run``); returns the channel scores, the receiver's ``LEAKINFO`` and the
    run id."""
    tag = secrets.token_hex(4)
    folder = Path(tempfile.mkdtemp(prefix="seal-channels-"))
    bots = folder / "leak"
    bots.mkdir()
    for name in ("leak.py", "botlib.py"):
        shutil.copy(ROOT / "tests" / "bots" / name, bots / name)
    for path in (folder, bots, *bots.iterdir()):
        path.chmod(0o755)
    out = folder / "out"
    program = bots / "leak.py"
    args = [
        python, "-m", "arena", "run", f"S={program} S {tag}", f"R={program} R {tag}",
        "sample:low", "sample:duck", "--hands", str(hands_per_game), "--rounds", str(rounds),
        "--seed", str(seed), "--out", str(out), "--quiet", *mode,
    ]  # fmt: skip
    try:
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"run {mode} exited {proc.returncode}: {proc.stderr[-2000:]}")
        records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines() if x]
        run_id = json.loads((out / "run.json").read_text())["run_id"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for leftover in Path("/dev/shm").glob(f"hearts-leak-{tag}-*"):
            leftover.unlink(missing_ok=True)
        for leftover in Path("/tmp").glob(f"hearts-leak-{tag}*"):
            leftover.unlink(missing_ok=True)
    per_channel: dict[str, list[tuple[int, list[str], list[str], str | None]]] = {}
    info: dict[str, Any] = {}
    for rec in records:
        r_seat, s_seat = rec["seats"].index("R"), rec["seats"].index("S")
        reports = {}
        for line in rec["stderr"][r_seat].splitlines():
            if line.startswith("LEAK "):
                found = json.loads(line.removeprefix("LEAK "))
                reports[found["hand"]] = found["cards"]
            elif line.startswith("LEAKINFO ") and not info:
                info = json.loads(line.removeprefix("LEAKINFO "))
        for hand in rec["hands"]:
            cards = reports.get(hand["hand_number"])
            if cards is None:
                continue
            key = rec["game_index"] * 100 + hand["hand_number"]
            own, sent = hand["dealt"][r_seat], hand["dealt"][s_seat]
            for channel, text in cards.items():
                per_channel.setdefault(channel, []).append((key, own, sent, text))
    return {c: score(h) for c, h in per_channel.items()}, info, run_id


def describe_info(info: dict[str, Any], run_id: str) -> dict[str, str]:
    """The pid 1, environment and mount table findings as short texts."""
    env = info.get("env", {})
    mounts = info.get("mounts", [])
    import arena

    package = Path(arena.__file__).resolve().parent
    own = [str(package.parent), sys.prefix]
    text = json.dumps(env) + " " + " ".join(mounts) + " " + json.dumps(info.get("argv", []))
    return {
        "ptrace-pid1": str(info.get("ptrace-pid1")),
        "vm-readv-pid1": str(info.get("vm-readv-pid1")),
        "environ-pid1": str(info.get("environ-pid1")),
        "run id seen": "yes" if run_id in text else "no",
        "arena folders seen": ", ".join(p for p in own if p and p in text) or "none",
        "PATH": env.get("PATH", ""),
        "cwd": str(info.get("cwd")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands-per-game", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    results = {}
    for label, mode in (("sealed", ["--sandbox"]), ("--no-sandbox", ["--no-sandbox"])):
        results[label] = run(
            mode, hands_per_game=args.hands_per_game, rounds=args.rounds, seed=args.seed
        )
    channels = sorted({c for scores, _, _ in results.values() for c in scores})
    hands = max(s["hands"] for scores, _, _ in results.values() for s in scores.values())
    low, high = chance_interval(hands)
    print(f"{hands} hands a mode; chance 0.333, 99% interval of a guess [{low:.3f}, {high:.3f}]")
    print(f"{'channel':<16}" + "".join(f"{m + ': exact  right  bits/hand':>36}" for m in results))
    for channel in channels:
        row = f"{channel:<16}"
        for scores, _, _ in results.values():
            s = scores.get(channel)
            if s is None:
                row += f"{'-':>36}"
                continue
            shut = "" if s["opened"] else " (closed)"
            row += f"{shut:>12}{s['exact']:>4}/{s['hands']:<3}{s['right']:>7.3f}{s['bits']:>10.1f}"
        print(row)
    for label, (_, info, run_id) in results.items():
        print(f"{label}: " + "; ".join(f"{k} {v}" for k, v in describe_info(info, run_id).items()))
    print(f"(arena: {os.path.dirname(__import__('arena').__file__)})")


if __name__ == "__main__":
    main()
