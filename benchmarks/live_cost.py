"""What watching costs: games per second of one tournament with the live view
served (``--live``) and 0 viewers, and with 100 viewers, in the same run.

The 100 viewers are 100 event-stream clients (``GET /events``, reading every
server-sent event and discarding it) held by **one separate process** (this
script started again with ``--viewers``), so the viewers' own work is not the
arena's. Each measurement is one ``hearts-arena run`` of the same tournament
(the sample bots, ``--seed``, the same ``--jobs``) in a subprocess; games per
second come from the games' own start and end times in ``games.jsonl`` (the
server's start and its wait at the end are not counted). The two cases
alternate, ``--pairs`` times, and the medians are compared; a third line gives
a run without ``--live`` for reference.

Usage: ``python benchmarks/live_cost.py [--rounds R] [--jobs J] [--pairs P]``.
The machine is shared and noisy: differences of a few percent between single
runs are noise; compare the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
VIEWERS = 100


async def _viewer(host: str, port: int, target: str, counts: list[int], i: int) -> None:
    stream = await trio.open_tcp_stream(host, port)
    request = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n"
    await stream.send_all(request.encode())
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        counts[i] += len(data)


async def _viewers(url: str, n: int, counts: list[int]) -> None:
    found = re.match(r"http://([^:/]+):(\d+)/\?token=(\S+)", url) or re.match(
        r"http://([^:/]+):(\d+)/()", url
    )
    assert found, url
    host, port, token = found.group(1), int(found.group(2)), found.group(3)
    target = f"/events?token={token}" if token else "/events"
    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(_viewer, host, port, target, counts, i)


def viewers_main(url: str, n: int, report: Path) -> None:
    """The viewers' process: ``n`` event-stream clients until the server closes."""
    counts = [0] * n
    try:
        trio.run(_viewers, url, n, counts)
    finally:
        report.write_text(json.dumps(counts))


def games_per_second(games: Path) -> tuple[int, float]:
    """Games and games per second, from the first start to the last end."""
    records = [json.loads(line) for line in games.read_text().splitlines() if line]
    start = min(r["started_at"] for r in records)
    end = max(r["started_at"] + r["duration_s"] for r in records)
    return len(records), len(records) / (end - start)


def one_run(args: argparse.Namespace, viewers: int | None, work: Path) -> tuple[float, int]:
    """One tournament; ``viewers`` None: without ``--live``. Returns games per
    second and the bytes the slowest viewer received (0 without viewers)."""
    out = work / f"run-{time.monotonic_ns()}"
    log = work / "arena.log"
    cmd = [sys.executable, "-m", "arena", "run", "--rounds", str(args.rounds)]
    cmd += ["--jobs", str(args.jobs), "--seed", "7", "--out", str(out), "--quiet"]
    if viewers is not None:
        cmd += ["--live", "0"]
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    watcher = None
    report = work / "viewers.json"
    report.unlink(missing_ok=True)
    if viewers:
        while True:
            found = re.search(r"live view: (http://\S+)", log.read_text(errors="replace"))
            if found or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert found, log.read_text()
        watcher = subprocess.Popen(
            [sys.executable, __file__, "--viewers", found.group(1), str(viewers), str(report)],
            cwd=ROOT,
        )
    if proc.wait() != 0:
        raise SystemExit(f"the run failed: {log.read_text()[-2000:]}")
    least = 0
    if watcher is not None:
        watcher.wait(30)
        counts = json.loads(report.read_text()) if report.exists() else []
        least = min(counts) if counts else 0
    _, rate = games_per_second(out / "games.jsonl")
    return rate, least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--viewers", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.viewers:
        viewers_main(args.viewers[0], int(args.viewers[1]), Path(args.viewers[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rates: dict[str, list[float]] = {"none": [], "0": [], "100": []}
        least: list[int] = []
        print(
            f"one tournament of the four sample bots, {args.rounds} rounds "
            f"({4 * args.rounds} games to 100), --jobs {args.jobs}, on {os.cpu_count()} cores; "
            f"{VIEWERS} viewers = {VIEWERS} event-stream clients in one separate process"
        )
        for pair in range(args.pairs):
            order = ["0", "100"] if pair % 2 == 0 else ["100", "0"]
            for case in order:
                rate, got = one_run(args, int(case), work)
                rates[case].append(rate)
                if case == "100":
                    least.append(got)
                print(f"  pair {pair + 1}: {case:>3} viewers: {rate:6.2f} games/s", flush=True)
        rate, _ = one_run(args, None, work)
        rates["none"].append(rate)
        zero, hundred = statistics.median(rates["0"]), statistics.median(rates["100"])
        print(f"without --live:        {rates['none'][0]:6.2f} games/s (one run)")
        print(f"--live,   0 viewers:   {zero:6.2f} games/s (median of {args.pairs})")
        print(f"--live, 100 viewers:   {hundred:6.2f} games/s (median of {args.pairs})")
        print(f"lost to 100 viewers:   {100 * (1 - hundred / zero):5.1f}% (goal: under 5%)")
        print(f"least bytes a viewer received in a run: {min(least):,}")


if __name__ == "__main__":
    main()
