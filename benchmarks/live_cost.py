"""What watching costs: games per second of one tournament with the live view
served (``--live``) and 0 viewers, and with 100 viewers, in the same run.

The 100 viewers are 100 event-stream clients (``GET /events``, reading every
server-sent event and discarding it) held by **one separate process** (this
script started again with ``--viewers``), at normal priority on the same
machine. The machine is shared and its load swings by several times within a
minute, so the two cases are measured in the *same* tournament: the viewers'
process connects its 100 clients for ``--phase`` seconds, closes them for as
long, and so on, and writes down when they were connected. Each game counts
for the phase in which it ended (its ``started_at + duration_s`` in
``games.jsonl``); games per second of a case = its games / its seconds. The
page's server's CPU is sampled every quarter second (``/proc``) and shared
out the same way. A run without ``--live`` is timed for reference.

Usage: ``python benchmarks/live_cost.py [--rounds R] [--jobs J] [--phase S] [--runs N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
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
    async with stream:
        await stream.send_all(request.encode())
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            counts[i] += len(data)


async def _viewers(url: str, n: int, phase: float, windows: list[list[float]]) -> None:
    """Connect ``n`` clients for ``phase`` seconds, none for as long, until the
    server is gone; ``windows`` gets each connected ``[start, end]`` (time.time())."""
    found = re.match(r"http://([^:/]+):(\d+)/(?:\?token=(\S+))?", url)
    assert found, url
    host, port, token = found.group(1), int(found.group(2)), found.group(3)
    target = f"/events?token={token}" if token else "/events"
    while True:
        counts = [0] * n
        start = time.time()
        try:
            with trio.move_on_after(phase):
                async with trio.open_nursery() as nursery:
                    for i in range(n):
                        nursery.start_soon(_viewer, host, port, target, counts, i)
        except Exception:  # the server is gone (refused, reset): the run is over
            return
        finally:
            windows.append([start, time.time(), min(counts)])
        await trio.sleep(phase)


def viewers_main(url: str, n: int, phase: float, report: Path) -> None:
    """The viewers' process; writes its connected windows to ``report``."""
    windows: list[list[float]] = []
    try:
        trio.run(_viewers, url, n, phase, windows)
    finally:
        report.write_text(json.dumps(windows))


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


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


def _inside(t: float, windows: list[list[float]]) -> bool:
    return any(a <= t < b for a, b, *_ in windows)


def run(args: argparse.Namespace, work: Path, live: bool) -> dict[str, float]:
    """One tournament; with ``live`` the viewers come and go (see the module
    docstring). Returns games per second overall, and with ``live`` per case,
    the server's CPU share per case and the least bytes a viewer received."""
    out = work / f"run-{time.monotonic_ns()}"
    log = work / "arena.log"
    cmd = [sys.executable, "-m", "arena", "run", "--rounds", str(args.rounds)]
    cmd += ["--jobs", str(args.jobs), "--seed", "7", "--out", str(out), "--quiet"]
    if live:
        cmd += ["--live", "0"]
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    report = work / "viewers.json"
    report.unlink(missing_ok=True)
    watcher, server, samples = None, None, []
    if live:
        deadline = time.monotonic() + 60
        found = None
        while time.monotonic() < deadline and not found:
            found = re.search(r"live view: (http://\S+)", log.read_text(errors="replace"))
            time.sleep(0.05)
        if not found:
            proc.kill()
            raise SystemExit(f"no live view address: {log.read_text()[-2000:]}")
        phase = str(args.phase)
        watcher = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--viewers",
                found.group(1),
                str(VIEWERS),
                phase,
                str(report),
            ],
            cwd=ROOT,
        )
    while proc.poll() is None:
        if live:
            server = server or server_pid(proc.pid)
            if server is not None:
                with contextlib.suppress(OSError):
                    samples.append((time.time(), cpu_seconds(server)))
        time.sleep(0.25)
    if proc.returncode != 0:
        raise SystemExit(f"the run failed: {log.read_text()[-2000:]}")
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    ends = sorted(r["started_at"] + r["duration_s"] for r in records)
    first = min(r["started_at"] for r in records)
    result = {"games": len(records), "rate": len(records) / (ends[-1] - first)}
    if watcher is None:
        return result
    watcher.wait(60)
    windows = json.loads(report.read_text())
    on_time = sum(max(0.0, min(b, ends[-1]) - max(a, first)) for a, b, _ in windows)
    off_time = ends[-1] - first - on_time
    on_games = sum(1 for t in ends if _inside(t, windows))
    cpu_on = cpu_off = 0.0
    for (t0, c0), (t1, c1) in itertools.pairwise(samples):
        if _inside((t0 + t1) / 2, windows):
            cpu_on += c1 - c0
        else:
            cpu_off += c1 - c0
    return result | {
        "on_rate": on_games / max(on_time, 1e-9),
        "off_rate": (len(records) - on_games) / max(off_time, 1e-9),
        "on_time": on_time,
        "off_time": off_time,
        "server_on": cpu_on / max(on_time, 1e-9),
        "server_off": cpu_off / max(off_time, 1e-9),
        # The last phase is cut short by the end of the run.
        "least_bytes": min((w[2] for w in windows[:-1]), default=0),
        "phases": len(windows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=150, help="rounds (4 games each)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--phase", type=float, default=5.0, help="seconds per phase")
    parser.add_argument("--runs", type=int, default=1, help="tournaments with --live")
    parser.add_argument("--viewers", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.viewers:
        url, n, phase, report = args.viewers
        viewers_main(url, int(n), float(phase), Path(report))
        return
    print(
        f"one tournament of the four sample bots, {args.rounds} rounds ({4 * args.rounds} games "
        f"to 100), --jobs {args.jobs}, on {os.cpu_count()} cores; {VIEWERS} viewers = {VIEWERS} "
        f"event-stream clients in one separate process, connected {args.phase:g} s out of "
        f"every {2 * args.phase:g} s of the run"
    )
    on_games = on_time = off_games = off_time = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for i in range(args.runs):
            r = run(args, work, True)
            print(
                f"  run {i + 1}: 0 viewers {r['off_rate']:6.2f} games/s ({r['off_time']:.0f} s), "
                f"100 viewers {r['on_rate']:6.2f} games/s ({r['on_time']:.0f} s, "
                f"{r['phases']:.0f} phases); the page's server used {r['server_off']:.3f} "
                f"and {r['server_on']:.3f} cores; a viewer got at least "
                f"{r['least_bytes']:,.0f} bytes a phase",
                flush=True,
            )
            on_games += r["on_rate"] * r["on_time"]
            on_time += r["on_time"]
            off_games += r["off_rate"] * r["off_time"]
            off_time += r["off_time"]
        plain = run(args, work, False)
    zero, hundred = off_games / off_time, on_games / on_time
    print(f"without --live (one run):  {plain['rate']:6.2f} games/s")
    print(f"--live,   0 viewers:       {zero:6.2f} games/s")
    print(f"--live, 100 viewers:       {hundred:6.2f} games/s")
    print(f"lost to 100 viewers: {100 * (1 - hundred / zero):5.1f}% (goal: under 5%)")


if __name__ == "__main__":
    main()
