"""Referee speed, measured side by side with its floor in one run.

Prints four figures (see the README's "Benchmarks" section):

1. The floor: a Trio parent exchanging JSON lines the size of a ``play``
   request (about 1 KB) with four instant processes of the same Python that
   parse each line and answer a ``play`` reply, the parent encoding and
   decoding too: the median round trip per message.
2. The arena: full games between four instant bots (``instant_bot.py``):
   decisions per second and the median time per decision, and the ratio to (1).
3. Games per second for short games (``--hands 1``) with bot processes reused
   along a table's games versus restarted for every game.
4. ``--jobs 1`` versus ``--jobs 2`` games per second (8-hand games), the CPU
   both keep busy, and the arena's own peak
   memory at ``--jobs 8``.

Usage: ``python benchmarks/referee_speed.py [--quick]``. Ratios matter more
than absolute figures: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from arena.cli import main as arena_main
from arena.rules import Hand, deal_hands, default_pass

HERE = Path(__file__).resolve().parent
INSTANT = HERE / "instant_bot.py"
ECHO = HERE / "echo_bot.py"


def play_request() -> dict:
    """A realistic ``play`` request from the middle of a hand (about 1 KB)."""
    hand = Hand.new(1, deal_hands("bench:1:1"))
    hand.apply_passes([default_pass(m) for m in hand.hands])
    while hand.trick_number < 8:
        hand.play(hand.legal_cards()[0])
    view = hand.view(hand.turn)
    view.update(
        {"type": "play", "id": 1, "game_id": "r1-t0-k0", "scores": [40, 12, 30, 7], "time_ms": 1000}
    )
    return view


async def floor(messages: int) -> list[float]:
    """Round-trip seconds per message with four echo processes, in turn."""
    template = play_request()
    procs = [
        await trio.lowlevel.open_process(
            [sys.executable, str(ECHO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(4)
    ]
    buffers = [bytearray() for _ in procs]
    times = []
    for i in range(messages):
        k = i % 4
        proc = procs[k]
        t0 = time.perf_counter()
        template["id"] = i
        await proc.stdin.send_all(json.dumps(template, separators=(",", ":")).encode() + b"\n")
        buf = buffers[k]
        while (nl := buf.find(b"\n")) < 0:
            buf += await proc.stdout.receive_some(65536)
        line = bytes(buf[:nl])
        del buf[: nl + 1]
        reply = json.loads(line)
        assert reply["id"] == i
        times.append(time.perf_counter() - t0)
    for proc in procs:
        await proc.stdin.send_all(b'{"type":"bye"}\n')
        await proc.wait()
    return times


def cpu_seconds() -> float:
    """CPU time (user + system, seconds) of this process and its waited-for
    descendants (bots, worker processes and the workers' bots)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


LAST_CPU: list[float] = [0.0]  # CPU seconds of the last run_tournament


def run_tournament(out: Path, *args: str) -> tuple[float, list[dict]]:
    """Run the CLI in this process; returns (wall seconds, game records).
    Its CPU seconds are left in ``LAST_CPU[0]``."""
    entrants = [f"{n}={INSTANT}" for n in ("a", "b", "c", "d")]
    t0, c0 = time.perf_counter(), cpu_seconds()
    with contextlib.redirect_stdout(io.StringIO()):  # the standings table
        code = arena_main(
            ["run", *entrants, "--seed", "1", "--quiet", "--out", str(out), "--overwrite", *args]
        )
    wall = time.perf_counter() - t0
    LAST_CPU[0] = cpu_seconds() - c0
    if code != 0:
        raise SystemExit(f"arena exited with {code}")
    records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    return wall, records


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def _pss_kib(pid: int) -> int:
    """Proportional set size (KiB): shared pages counted once across processes."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_memory_mb(out: Path, jobs: int, rounds: int) -> tuple[float, float, int]:
    """The arena's own peak memory (MiB) for a run at ``--jobs``: sampled every
    20 ms, the sum of the proportional set sizes of the arena process and its
    worker processes (its direct children running Python's multiprocessing:
    bots, the workers' children, are not the arena's). Returns (peak of the
    sum, peak of the coordinator alone, number of worker processes seen)."""
    entrants = [f"{n}={INSTANT}" for n in ("a", "b", "c", "d", "e", "f")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *entrants, "--hands", "1", "--rounds", str(rounds),
         "--seed", "1", "--quiet", "--jobs", str(jobs), "--out", str(out), "--overwrite"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    peak_total = peak_own = 0
    workers: set[int] = set()
    while proc.poll() is None:
        own = _pss_kib(proc.pid)
        mine = [
            k for k in _children(proc.pid)
            if b"multiprocessing" in Path(f"/proc/{k}/cmdline").read_bytes()
        ]  # fmt: skip
        workers.update(mine)
        peak_own = max(peak_own, own)
        peak_total = max(peak_total, own + sum(_pss_kib(k) for k in mine))
        time.sleep(0.02)
    if proc.returncode != 0:
        raise RuntimeError(f"the arena failed: {proc.stderr.read()}")
    return peak_total / 1024, peak_own / 1024, len(workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games (a rougher figure)")
    args = parser.parse_args()
    scale = 1 if args.quick else 3
    tmp = Path(tempfile.mkdtemp(prefix="referee-bench-"))
    tmp.chmod(0o755)

    # 1. The floor.
    times = trio.run(floor, 2000 * scale)
    floor_median = statistics.median(times)
    print(
        f"1. floor: median round trip {floor_median * 1e6:.0f} us per ~{len(json.dumps(play_request()))}-byte message"
    )

    # 2. The arena: full games of instant bots, one at a time.
    _, records = run_tournament(
        tmp / "arena", "--hands", "4", "--rounds", str(2 * scale), "--jobs", "1"
    )
    per_decision = []
    decisions = 0
    for rec in records:
        n = sum(t["requests"] for t in rec["timing"])
        decisions += n
        per_decision.append(rec["duration_s"] / n)
    median = statistics.median(per_decision)
    print(
        f"2. arena: {decisions / sum(r['duration_s'] for r in records):.0f} decisions/s in games, "
        f"median {median * 1e6:.0f} us per decision; ratio to the floor {median / floor_median:.2f} (goal <= 1.3)"
    )

    # 3. Short games, processes reused vs restarted.
    rounds = str(6 * scale)
    wall_reuse, recs = run_tournament(
        tmp / "reuse", "--hands", "1", "--rounds", rounds, "--jobs", "1"
    )
    wall_fresh, _ = run_tournament(
        tmp / "fresh", "--hands", "1", "--rounds", rounds, "--jobs", "1", "--fresh-processes"
    )
    n = len(recs)
    print(
        f"3. --hands 1 games: {n / wall_reuse:.1f} games/s with processes reused, "
        f"{n / wall_fresh:.1f} games/s restarted per game (x{wall_fresh / wall_reuse:.2f})"
    )

    # 4. Parallel games (8 hands each, about a game to 100 points: worker
    # start-up is paid once per run, as in a real tournament).
    wall1, recs = run_tournament(tmp / "jobs1", "--hands", "8", "--rounds", rounds, "--jobs", "1")
    busy1 = LAST_CPU[0] / wall1
    wall2, _ = run_tournament(tmp / "jobs2", "--hands", "8", "--rounds", rounds, "--jobs", "2")
    busy2 = LAST_CPU[0] / wall2
    n = len(recs)
    cores = os.cpu_count() or 1
    print(
        f"4. --jobs 1: {n / wall1:.1f} games/s, --jobs 2: {n / wall2:.1f} games/s "
        f"(x{wall1 / wall2:.2f}, goal >= 1.7)\n"
        f"   CPU busy (arena + bots, cores): {busy1:.2f} at --jobs 1, {busy2:.2f} at --jobs 2; "
        f"with {cores} cores the most --jobs 2 can gain is x{cores / busy1:.2f}"
    )
    total, own, workers = peak_memory_mb(tmp / "mem", 8, 2)
    print(
        f"   peak memory of the arena at --jobs 8 (6 entrants, 120 games): {total:.0f} MiB "
        f"(goal < 150): the arena process {own:.0f} MiB plus {workers} processes of its own "
        "(workers and the resource tracker; proportional set size, bots excluded)"
    )


if __name__ == "__main__":
    main()
