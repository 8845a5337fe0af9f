"""Referee speed, measured side by side with its floor in one run (issue 16).

Figures 1 and 2 (and the breakdown) run pinned to one core (CPU 0, as
``taskset -c 0`` does; the bots inherit it), so that neither the floor nor
the arena gains from a second core and where the processes land does not
move the figures:

1. The floor: a Trio parent exchanging JSON lines the size of a ``play``
   request (about 1 KB) with four instant processes of the same Python that
   parse each line and answer a ``play`` reply, the parent encoding and
   decoding too: the mean round trip per message.
2. The arena: a whole run (``hearts-arena run``, in this process) of four
   instant bots (``instant_bot.py``) playing 50-hand games, ``--jobs 1``:
   the run's wall time (start-up, games, journal, report) per decision, and
   the referee's own (the games' durations) per decision, each against (1).
   Goal: at most 1.8x the floor (stretch 1.5x).
3. Where the rest goes: one game under ``cProfile``, the arena's CPU time
   per decision by part (encode, validate, rules, writes, reads, event loop,
   bookkeeping), time spent waiting for the bots left out. Profiling slows
   Python code more than C code, so read the shares, not the sums.

This branch has no ``--no-sandbox``/``--ponder`` flags: the arena's current
default (no sandbox unless ``--sandbox``, bots never frozen) is what is
measured; the sealed, frozen-off-move mode is to be measured separately,
against a floor with a thaw and freeze per round trip, once it lands.

With ``--all`` (unpinned): 4. games per second for ``--hands 1`` games with
processes reused vs restarted; 5. ``--jobs 1`` vs ``--jobs 2`` (8-hand
games), the CPU both keep busy, and the arena's own peak memory at
``--jobs 8``.

Usage: ``python benchmarks/referee_speed.py [--quick] [--all] [--no-pin]``.
Ratios matter more than absolute figures: the machine is shared and noisy.
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
from typing import Any

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


#: Parts of the arena's time, by the function a profiled tick was spent in:
#: (part, test on (file, function name)); the first that matches wins.
PARTS: list[tuple[str, Any]] = [
    (
        "waiting for the bots",
        lambda f, n: "epoll" in n or n == "<method 'poll' of 'select.epoll' objects>",
    ),
    (
        "encode (views, JSON out)",
        lambda f, n: (
            n
            in {
                "view",
                "names_of",
                "encode",
                "encode_text",
                "to_json",
                "_decide_play",
                "iterencode",
            }
            or "encoder" in f
            or "'encode'" in n
            or "dumps" in n
        ),
    ),
    (
        "validate (JSON in, schema)",
        lambda f, n: (
            n
            in {
                "decode_line",
                "check_reply",
                "_plainly_valid",
                "carries_id",
                "request_id_of",
                "_frame",
                "parse_card",
            }
            or "decoder" in f
            or "loads" in n
            or "'decode'" in n
        ),
    ),
    ("rules", lambda f, n: f.endswith(("rules.py", "cards.py"))),
    (
        "writes (pipes, journal)",
        lambda f, n: (
            n
            in {
                "_write_now",
                "flush",
                "_send",
                "notify",
                "append",
                "<built-in method posix.write>",
                "<built-in method posix.fsync>",
            }
            and not f.endswith("rules.py")
        ),
    ),
    (
        "reads (pipes)",
        lambda f, n: n in {"receive_some", "<built-in method posix.read>"} or "_unix_pipes" in f,
    ),
    ("event loop (Trio)", lambda f, n: "/trio/" in f or "outcome" in f or "sniffio" in f),
    (
        "process start and end",
        lambda f, n: (
            any(k in f for k in ("subprocess", "launcher", "isolation", "entrants", "importlib"))
            or n
            in {
                "<built-in method posix.rmdir>",
                "<built-in method builtins.compile>",
                "<built-in method _posixsubprocess.fork_exec>",
            }
        ),
    ),
    ("bookkeeping (referee, requests)", lambda f, n: "arena" in f),
]


def breakdown(rest: float) -> None:
    """Print the referee's profiled CPU time per decision by part (see
    :data:`PARTS`): four 50-hand games of instant bots played by the
    tournament runner directly (no start-up, journal or report)."""
    import cProfile
    import pstats

    from arena.entrants import parse_entrants
    from arena.launcher import Launcher, LaunchOptions
    from arena.tournament import ScheduleStream, TournamentRunner, TournamentSettings

    entrants = parse_entrants([f"{n}={INSTANT}" for n in ("a", "b", "c", "d")])
    settings = TournamentSettings(seed=2, rounds=1, hands=50, target_score=None)
    records: list[dict[str, Any]] = []
    runner = TournamentRunner(entrants, settings, Launcher(LaunchOptions()), records.append)
    games = ScheduleStream([e.name for e in entrants], settings)
    # CPU time of this process only: not the bots' (a write on one core may
    # hand the core to the woken bot at once), not other users'.
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    trio.run(runner.run, games)
    prof.disable()
    decisions = sum(t["requests"] for r in records for t in r["timing"])
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    parts: dict[str, float] = {name: 0.0 for name, _ in PARTS}
    parts["other"] = 0.0
    top: dict[str, list[tuple[float, str]]] = {name: [] for name in parts}
    for (file, _, name), (_, _, tottime, _, _) in stats.items():
        part = next((part for part, test in PARTS if test(file, name)), "other")
        parts[part] += tottime
        top[part].append((tottime, f"{Path(file).name}:{name}" if file != "~" else name))
    waiting = parts.pop("waiting for the bots")
    busy = sum(parts.values())
    print(
        f"3. where the rest goes ({rest * 1e6:.0f} us per decision over the floor): the referee's "
        f"CPU time per decision by part under cProfile ({len(records)} games, {decisions} "
        "decisions, no start-up or report; this process's CPU time only; profiling inflates "
        "Python code: read the shares)"
    )
    for part, t in sorted(parts.items(), key=lambda kv: -kv[1]):
        most = ", ".join(n[:40] for _, n in sorted(top[part], reverse=True)[:3])
        print(f"   {part:32s} {t / decisions * 1e6:6.1f} us {100 * t / busy:5.1f}%  ({most})")
    print(f"   (in epoll, left out: {waiting / decisions * 1e6:.1f} us per decision)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games (a rougher figure)")
    parser.add_argument("--all", action="store_true", help="also figures 4 and 5 (unpinned)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one core")
    args = parser.parse_args()
    scale = 1 if args.quick else 2
    tmp = Path(tempfile.mkdtemp(prefix="referee-bench-"))
    tmp.chmod(0o755)

    all_cores = os.sched_getaffinity(0)
    if not args.no_pin:
        os.sched_setaffinity(0, {min(all_cores)})  # as taskset -c 0; bots inherit it
    pinned = f"pinned to CPU {min(all_cores)}" if not args.no_pin else "not pinned"

    # 1. The floor, and 2. the arena, alternated so that load affects both.
    floor_times: list[float] = []
    floor_cpu = 0.0
    runs: list[tuple[float, float, int, float]] = []  # wall, games' durations, decisions, CPU
    for i in range(2):
        c0 = cpu_seconds()
        floor_times += trio.run(floor, 1000 * scale)
        floor_cpu += cpu_seconds() - c0
        wall, records = run_tournament(
            tmp / f"arena{i}", "--hands", "50", "--rounds", str(scale), "--jobs", "1"
        )
        decisions = sum(t["requests"] for r in records for t in r["timing"])
        runs.append((wall, sum(r["duration_s"] for r in records), decisions, LAST_CPU[0]))
    floor_mean = statistics.fmean(floor_times)
    floor_cpu /= len(floor_times)
    size = len(json.dumps(play_request(), separators=(",", ":")))
    print(f"({pinned}; default mode: no sandbox, bots not frozen: this branch has no --ponder)")
    print(
        f"1. floor ({len(floor_times)} round trips of ~{size}-byte lines): wall {floor_mean * 1e6:.0f} us "
        f"per round trip (median {statistics.median(floor_times) * 1e6:.0f} us); "
        f"CPU (parent + children) {floor_cpu * 1e6:.0f} us"
    )
    decisions = sum(r[2] for r in runs)
    whole = sum(r[0] for r in runs) / decisions
    games = sum(r[1] for r in runs) / decisions
    cpu = sum(r[3] for r in runs) / decisions
    print(
        f"2. arena, whole run (4 instant bots, 50-hand games, {decisions} decisions): wall "
        f"{whole * 1e6:.0f} us per decision, x{whole / floor_mean:.2f} the floor's wall "
        f"(in games only {games * 1e6:.0f} us, x{games / floor_mean:.2f}); CPU {cpu * 1e6:.0f} us, "
        f"x{cpu / floor_cpu:.2f} the floor's CPU. Goal <= 1.8 (stretch 1.5). On a shared "
        "machine the CPU ratio is the steadier: wall time also counts other users' turns on the core"
    )
    breakdown(cpu - floor_cpu)
    os.sched_setaffinity(0, all_cores)
    if not args.all:
        return

    # 4. Short games, processes reused vs restarted.
    rounds = str(6 * scale)
    wall_reuse, recs = run_tournament(
        tmp / "reuse", "--hands", "1", "--rounds", rounds, "--jobs", "1"
    )
    wall_fresh, _ = run_tournament(
        tmp / "fresh", "--hands", "1", "--rounds", rounds, "--jobs", "1", "--fresh-processes"
    )
    n = len(recs)
    print(
        f"4. --hands 1 games: {n / wall_reuse:.1f} games/s with processes reused, "
        f"{n / wall_fresh:.1f} games/s restarted per game (x{wall_fresh / wall_reuse:.2f})"
    )

    # 5. Parallel games (8 hands each, about a game to 100 points: worker
    # start-up is paid once per run, as in a real tournament).
    wall1, recs = run_tournament(tmp / "jobs1", "--hands", "8", "--rounds", rounds, "--jobs", "1")
    busy1 = LAST_CPU[0] / wall1
    wall2, _ = run_tournament(tmp / "jobs2", "--hands", "8", "--rounds", rounds, "--jobs", "2")
    busy2 = LAST_CPU[0] / wall2
    n = len(recs)
    cores = os.cpu_count() or 1
    print(
        f"5. --jobs 1: {n / wall1:.1f} games/s, --jobs 2: {n / wall2:.1f} games/s "
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
