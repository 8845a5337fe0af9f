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
a run without ``--live`` for reference. Beside games per second it prints the
CPU seconds per game of the arena's whole process tree (arena, workers, the
page's server, bots; from ``wait4``), which the other users of a shared
machine disturb far less than the wall clock.

Usage: ``python benchmarks/live_cost.py [--rounds R] [--jobs J] [--pairs P]``.
The machine is shared and noisy: differences of a few percent between single
runs are noise; compare the medians.
"""

from __future__ import annotations

import argparse
import contextlib
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


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rpartition(")")[2].split()


def server_pid(arena: int) -> int | None:
    """The live page's server: the arena's first ``multiprocessing`` child
    (started before any worker process), or ``None`` yet."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == arena and b"spawn_main" in cmdline:
            found.append((int(fields[19]), int(entry.name)))
    return min(found)[1] if found else None


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(
    args: argparse.Namespace, viewers: int | None, work: Path
) -> tuple[float, float, int, float, float]:
    """One tournament; ``viewers`` None: without ``--live``. Returns games per
    second, CPU seconds per game of the arena's whole process tree (the
    arena, its worker processes, the page's server process and the bots; not
    the viewers), the bytes the slowest viewer received (0 without viewers),
    and the CPU seconds of the page's server and of the viewers' process."""
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"live view: (http://\S+)", log.read_text(errors="replace"))
            if found:
                break
            time.sleep(0.05)
        if not found:
            proc.kill()
            raise SystemExit(f"no live view address: {log.read_text()[-2000:]}")
        watcher = subprocess.Popen(
            [sys.executable, __file__, "--viewers", found.group(1), str(viewers), str(report)],
            cwd=ROOT,
        )
    server_cpu = 0.0
    server = None
    while True:  # wait4, not poll(): the arena's rusage covers its whole tree
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if viewers is not None:
            server = server or server_pid(proc.pid)
            if server is not None:
                with contextlib.suppress(OSError):
                    server_cpu = cpu_seconds(server)
        time.sleep(0.25)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"the run failed: {log.read_text()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    least, viewers_cpu = 0, 0.0
    if watcher is not None:
        _, _, vusage = os.wait4(watcher.pid, 0)
        watcher.returncode = 0
        viewers_cpu = vusage.ru_utime + vusage.ru_stime
        counts = json.loads(report.read_text()) if report.exists() else []
        least = min(counts) if counts else 0
    games, rate = games_per_second(out / "games.jsonl")
    return rate, cpu / games, least, server_cpu, viewers_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
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
        cpus: dict[str, list[float]] = {"none": [], "0": [], "100": []}
        least: list[int] = []
        print(
            f"one tournament of the four sample bots, {args.rounds} rounds "
            f"({4 * args.rounds} games to 100), --jobs {args.jobs}, on {os.cpu_count()} cores; "
            f"{VIEWERS} viewers = {VIEWERS} event-stream clients in one separate process"
        )
        ratios, shares = [], []
        for pair in range(args.pairs):
            order = ["0", "100"] if pair % 2 == 0 else ["100", "0"]
            got: dict[str, tuple[float, float, int, float, float]] = {}
            for case in order:
                got[case] = one_run(args, int(case), work)
                rate, cpu, _, server, viewers = got[case]
                rates[case].append(rate)
                cpus[case].append(cpu)
                print(
                    f"  pair {pair + 1}: {case:>3} viewers: {rate:6.2f} games/s, "
                    f"{1000 * cpu:5.0f} ms CPU per game; the page's server "
                    f"{server:5.2f} s CPU, the viewers {viewers:5.2f} s",
                    flush=True,
                )
            least.append(got["100"][2])
            ratios.append(got["100"][0] / got["0"][0])
            # What 100 viewers add, as a share of the CPU the whole run used.
            run_cpu = got["100"][1] * 4 * args.rounds
            shares.append((got["100"][3] - got["0"][3] + got["100"][4]) / run_cpu)
        rate, cpu, _, _, _ = one_run(args, None, work)
        zero, hundred = statistics.median(rates["0"]), statistics.median(rates["100"])
        cpu0, cpu100 = statistics.median(cpus["0"]), statistics.median(cpus["100"])
        n = args.pairs
        print(f"without --live:      {rate:6.2f} games/s, {1000 * cpu:5.0f} ms CPU/game (one run)")
        print(
            f"--live,   0 viewers: {zero:6.2f} games/s, {1000 * cpu0:5.0f} ms CPU/game (medians of {n})"
        )
        print(
            f"--live, 100 viewers: {hundred:6.2f} games/s, {1000 * cpu100:5.0f} ms CPU/game (medians of {n})"
        )
        lost = 100 * (1 - statistics.median(ratios))
        print(
            f"games/s lost to 100 viewers: {lost:5.1f}% (median of the {n} pairs' ratios; goal: under 5%)"
        )
        share = 100 * statistics.median(shares)
        print(
            f"CPU the 100 viewers add (the page's server's extra CPU and the viewers' own, "
            f"as a share of the run's): {share:4.1f}% (median of {n}): the most they can cost "
            "when the cores are the limit"
        )
        print(f"least bytes a viewer received in a run (each got every update): {min(least):,}")


if __name__ == "__main__":
    main()
