"""Referee speed, measured side by side with its floors in one run (issue 16).

Figures 1 to 3 run pinned to one core (CPU 0, as ``taskset -c 0`` does; the
bots inherit it), so that neither the floors nor the arena gain from a
second core and where the processes land does not move the figures; the
floors run in the referees' CPU group, where the arena moves itself
(:func:`arena.sandbox.cgroups.prioritize_self`). Two modes, each against its floor,
the four measurements alternated so that load affects all alike:

1a. The floor: a Trio parent exchanging JSON lines the size of a ``play``
    request (about 1.3 KB) with four instant processes of the same Python
    that parse each line and answer a ``play`` reply, the parent encoding
    and decoding too: the mean round trip per message, wall and CPU.
2a. The arena with ``--no-sandbox --ponder`` (bots neither sealed nor
    frozen): a whole run (``hearts-arena run``, in this process) of four
    instant bots (``instant_bot.py``, in a folder of its own) playing
    50-hand games, ``--jobs 1``: the run's wall time (start-up, games,
    journal, report) per decision, the games' own, and the CPU time of the
    arena and its bots, each against (1a). Goal: at most 1.8x the floor
    (stretch 1.5x).
1b. The floor plus one thaw and one freeze per round trip: each process in
    a control group of its own, made and joined as the launcher does, thawed
    before the request and frozen after the reply with the arena's own
    :meth:`arena.sandbox.cgroups.BotGroup.thaw` / ``freeze``, as the referee does.
2b. The arena in its default mode (bots sealed in bubblewrap, frozen off
    move, a core token per decision): the same whole run, against (1b).
3. Where the rest goes, both modes side by side: four games under
   ``cProfile``, the arena's CPU time per decision by part (isolation,
   encode, validate, rules, writes, reads, event loop, bookkeeping), time
   spent waiting for the bots left out; the Trio thread's CPU is profiled,
   and the CPU of the arena's other threads (which start and close the bots:
   fork, group kill, uid purge; a new process per seat and game, since a
   process never plays two games of one deal) is a part of its own.
   Profiling slows Python code more than C code, so read the shares, not
   the sums.

With ``--all`` (unpinned, default mode): 4. games per second for
``--hands 1`` games with processes reused vs restarted; 5. ``--jobs 1`` vs
``--jobs 2`` (8-hand games), the CPU both keep busy, and the arena's own
peak memory at ``--jobs 8``.

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
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from arena.cli.main import main as arena_main
from arena.core.rules import Hand, deal_hands, default_pass
from arena.sandbox import cgroups
from arena.sandbox.cgroups import BotGroup, RunGroups

HERE = Path(__file__).resolve().parent
INSTANT = HERE / "instant_bot.py"
ECHO = HERE / "echo_bot.py"
#: The instant bot the runs use: a copy in a folder of its own (what a sealed
#: bot sees of its folder, and what the launcher copies for it), set by measure().
BOT: list[Path] = [INSTANT]
#: The control groups of the frozen floor (made by measure() where freezing works).
RUN_GROUPS: list[RunGroups | None] = [None]
#: The two modes measured: (label, the run's flags, the floor's ``frozen``).
MODES: list[tuple[str, list[str], bool]] = [
    ("--no-sandbox --ponder", ["--no-sandbox", "--ponder"], False),
    ("default: sealed, frozen off move", [], True),
]


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


def _task_cpu(pid: int) -> float:
    """CPU seconds a (single-threaded) process has run, to the nanosecond."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


async def floor(messages: int, frozen: bool = False) -> tuple[list[float], float]:
    """Round-trip seconds per message with four echo processes, in turn, and
    the CPU seconds of the parent and the four over those round trips (the
    first round trip to each, which waits for its start, not counted: the
    processes' start-up is left out of both).

    With ``frozen``, each process is in a control group of its own (made and
    joined as the arena's launcher does: :meth:`arena.sandbox.cgroups.RunGroups.create`,
    :meth:`~arena.sandbox.cgroups.BotGroup.join_self` before ``exec``) and every round
    trip is wrapped in one :meth:`~arena.sandbox.cgroups.BotGroup.thaw` and one
    :meth:`~arena.sandbox.cgroups.BotGroup.freeze`, as the referee does around a
    request to a bot off move."""
    template = play_request()
    groups: list[BotGroup] = []
    procs: list[trio.Process] = []
    try:
        for _ in range(4):
            group = None
            if frozen:
                run = RUN_GROUPS[0]
                if run is None:
                    raise SystemExit("no control group can freeze here: no frozen floor")
                group = run.create()
                group.pin(min(os.sched_getaffinity(0)))  # its core, as the launcher pins it
                groups.append(group)
            procs.append(
                await trio.lowlevel.open_process(
                    [sys.executable, str(ECHO)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    preexec_fn=None if group is None else group.join_self,
                )
            )
        buffers = [bytearray() for _ in procs]
        times = []
        # The first round trip to each process waits for its start: not timed.
        cpu0 = 0.0
        for i in range(-len(procs), messages):
            k = i % 4
            proc = procs[k]
            group = groups[k] if groups else None
            if i == 0:
                cpu0 = time.process_time() + sum(_task_cpu(p.pid) for p in procs)
            t0 = time.perf_counter()
            if group is not None:
                group.thaw()
            template["id"] = i
            await proc.stdin.send_all(json.dumps(template, separators=(",", ":")).encode() + b"\n")
            buf = buffers[k]
            while (nl := buf.find(b"\n")) < 0:
                buf += await proc.stdout.receive_some(65536)
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            reply = json.loads(line)
            assert reply["id"] == i
            if group is not None:
                group.freeze()
            if i >= 0:
                times.append(time.perf_counter() - t0)
        cpu = time.process_time() + sum(_task_cpu(p.pid) for p in procs) - cpu0
        for group in groups:
            group.thaw()
        for proc in procs:
            await proc.stdin.send_all(b'{"type":"bye"}\n')
            await proc.wait()
    finally:
        for group in groups:
            group.kill(timeout=5)
            group.remove()
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return times, cpu


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
    entrants = [f"{n}={BOT[0]}" for n in ("a", "b", "c", "d")]
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
    entrants = [f"{n}={BOT[0]}" for n in ("a", "b", "c", "d", "e", "f")]
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


#: Functions of arena.sandbox.cgroups and arena.sandbox.cores that start or end a bot, not a decision.
START_END = {
    "create", "_make_run_dir", "set_limits", "kill", "remove", "_remove_dir", "_kill_until_empty",
    "_make_dir", "_init_cpuset", "_enable_v2", "__init__", "pids", "_files", "oom_kills",
    "memory_peak", "join_self", "probe", "probe_plan",
}  # fmt: skip

#: Parts of the arena's time, by the function a profiled tick was spent in:
#: (part, test on (file, function name)); the first that matches wins. A
#: built-in function's time goes to the part of the function that called it
#: (see :func:`classify_stats`), so these tests name Python functions mostly.
PARTS: list[tuple[str, Any]] = [
    (
        "waiting for the bots",
        lambda f, n: "epoll" in n or n == "<method 'poll' of 'select.epoll' objects>",
    ),
    (
        "isolation (freeze, thaw, token)",
        lambda f, n: (
            (f.endswith(("cgroups.py", "cores.py")) and n not in START_END)
            or n in {"_take_core", "_release_core", "_cpu_ns", "<built-in method fcntl.flock>"}
        ),
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
                "_decode",
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
            (
                n
                in {
                    "_write_now",
                    "write_some",
                    "flush",
                    "_send",
                    "notify",
                    "append",
                    "<built-in method posix.write>",
                    "<built-in method posix.fsync>",
                }
                and not f.endswith("rules.py")
            )
            or (n == "send_all" and "_unix_pipes" in f)
        ),
    ),
    (
        "reads (pipes)",
        lambda f, n: (
            n in {"receive_some", "_read_ready", "read_now", "<built-in method posix.read>"}
            or (n == "wait_readable" and f.endswith("process.py"))
            or ("_unix_pipes" in f and n != "send_all")
        ),
    ),
    ("event loop (Trio)", lambda f, n: "/trio/" in f or "outcome" in f or "sniffio" in f),
    (
        "process start and end",
        lambda f, n: (
            any(k in f for k in ("subprocess", "launcher", "isolation", "entrants", "importlib"))
            or "seal" in Path(f).name
            or (f.endswith(("cgroups.py", "cores.py")) and n in START_END)
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


#: The part of the CPU time spent in this process's other threads (see :func:`profile`).
THREADS = "process start and end, other threads"


def part_of(file: str, name: str) -> str:
    """The part (see :data:`PARTS`) of a function, or ``"other"``."""
    return next((part for part, test in PARTS if test(file, name)), "other")


def classify_stats(stats: dict) -> tuple[dict[str, float], dict[str, list[tuple[float, str]]]]:
    """CPU seconds by part from ``pstats.Stats(...).stats``, and each part's
    functions with their seconds. The time of a built-in, or of a function
    of no part (``pathlib``, ``dataclasses``...), is split among its callers'
    parts, up the call graph, by the time spent under each caller
    (``posix.write`` from the cgroup freezer is isolation, from a bot's pipe a
    write); only what no caller claims stays ``other``."""
    parts: dict[str, float] = {name: 0.0 for name, _ in PARTS}
    parts["other"] = 0.0
    top: dict[str, list[tuple[float, str]]] = {name: [] for name in parts}
    memo: dict[tuple, dict[str, float]] = {}
    visiting: set[tuple] = set()

    def shares(key: tuple) -> dict[str, float]:
        file, _, name = key
        own = part_of(file, name)
        if own == "waiting for the bots" or (file != "~" and own != "other"):
            return {own: 1.0}
        if key in memo:
            return memo[key]
        callers = stats[key][4] if key in stats else {}
        weights = {c: (v[3] if isinstance(v, tuple) else 0.0) for c, v in callers.items()}
        total = sum(weights.values())
        if key in visiting or not callers or total <= 0:
            return {own: 1.0}
        visiting.add(key)
        out: dict[str, float] = {}
        for caller, w in weights.items():
            for part, f in shares(caller).items():
                if part in ("other", "waiting for the bots"):
                    part = own  # claimed by no part: the function's own (a rule on its name)
                out[part] = out.get(part, 0.0) + f * w / total
        visiting.discard(key)
        memo[key] = out
        return out

    for key, (_, _, tottime, _, _) in stats.items():
        file, _, name = key
        label = f"{Path(file).name}:{name}" if file != "~" else name
        for part, f in shares(key).items():
            parts[part] += tottime * f
            top[part].append((tottime * f, label))
    return parts, top


def profile(frozen: bool) -> tuple[dict[str, float], dict[str, list[tuple[float, str]]], int]:
    """The referee's CPU seconds by part (see :data:`PARTS`), each part's
    functions, and the decisions: four 50-hand games of instant bots played
    by the tournament runner under cProfile (no start-up, journal or
    report), bots sealed and frozen off move (``frozen``) or unsealed and
    pondering (as ``--no-sandbox --ponder``)."""
    import cProfile
    import pstats

    from arena.sandbox.entrants import parse_entrants
    from arena.sandbox.launcher import Launcher, LaunchOptions
    from arena.tournament.runner import ScheduleStream, TournamentRunner, TournamentSettings

    entrants = parse_entrants([f"{n}={BOT[0]}" for n in ("a", "b", "c", "d")])
    settings = TournamentSettings(seed=2, rounds=1, hands=50, target_score=None)
    records: list[dict[str, Any]] = []
    options = LaunchOptions() if frozen else LaunchOptions(sandbox=False, ponder=True)
    launcher = Launcher(options)
    try:
        launcher.check(entrants)  # resolves the seal, copies the bot's folder
        runner = TournamentRunner(entrants, settings, launcher, records.append)
        games = ScheduleStream([e.name for e in entrants], settings)
        # CPU time of this thread only: not the bots' (a write on one core
        # may hand the core to the woken bot at once), not other users', and
        # not this process's other threads (they fork the bots, kill their
        # groups, purge their uids): under process_time their CPU landed on
        # whatever the Trio thread was doing then, mostly waiting in epoll.
        prof = cProfile.Profile(time.thread_time)
        cpu0, own0 = time.process_time(), time.thread_time()
        prof.enable()
        trio.run(runner.run, games)
        prof.disable()
        threads = (time.process_time() - cpu0) - (time.thread_time() - own0)
    finally:
        launcher.close()
    decisions = sum(t["requests"] for r in records for t in r["timing"])
    parts, top = classify_stats(pstats.Stats(prof).stats)  # type: ignore[attr-defined]
    parts[THREADS] = threads
    top[THREADS] = [(threads, "bot start and close in threads: fork, group kill, uid purge")]
    return parts, top, decisions


def breakdown(rests: list[float]) -> None:
    """Print where the rest goes in both modes, side by side (see :func:`profile`)."""
    results = [profile(frozen) for _, _, frozen in MODES]
    rows: dict[str, list[float]] = {}
    for parts, _, decisions in results:
        for part, t in parts.items():
            rows.setdefault(part, []).append(t / decisions)
    busy = [
        sum(t for p, t in parts.items() if p != "waiting for the bots") for parts, _, _ in results
    ]
    per = [b / d for b, (_, _, d) in zip(busy, results, strict=True)]
    print(
        "3. where the rest goes (over the floor, CPU per decision: "
        + ", ".join(
            f"{label} {r * 1e6:.0f} us" for (label, _, _), r in zip(MODES, rests, strict=True)
        )
        + f"): the referee's CPU time per decision by part under cProfile ({results[0][2]} and "
        f"{results[1][2]} decisions, 4 games each, no start-up or report; this process's CPU "
        "only: its Trio thread profiled, its other threads one part; profiling inflates Python "
        "code: read the shares)"
    )
    head = "".join(f" | {short:>18s}" for short in ("a: unsealed, ponder", "b: sealed, frozen"))
    print(f"   {'part':32s}{head}")
    order = sorted((p for p in rows if p != "waiting for the bots"), key=lambda p: -max(rows[p]))
    for part in order:
        cells = "".join(
            f" | {t * 1e6:8.1f} us {100 * t / b:5.1f}%"
            for t, b in zip(rows[part], per, strict=True)
        )
        both = results[0][1][part] + results[1][1][part]
        most = ", ".join(dict.fromkeys(n[:34] for _, n in sorted(both, reverse=True)[:6]))
        print(f"   {part:32s}{cells}  ({most})")
    total = "".join(f" | {p * 1e6:8.1f} us {100.0:5.1f}%" for p in per)
    print(f"   {'total (busy)':32s}{total}")
    wait = "".join(f" | {t * 1e6:8.1f} us{'':7s}" for t in rows["waiting for the bots"])
    print(f"   {'(in epoll, left out)':32s}{wait}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games (a rougher figure)")
    parser.add_argument("--all", action="store_true", help="also figures 4 and 5 (unpinned)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one core")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="referee-bench-"))
    try:
        tmp.chmod(0o755)
        measure(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(args: argparse.Namespace, tmp: Path) -> None:
    """Print the figures, working in the folder ``tmp``."""
    scale = 1 if args.quick else 2
    bot_dir = tmp / "bot"  # the bot in a folder of its own: what a sealed bot sees
    bot_dir.mkdir(mode=0o755)
    shutil.copy(INSTANT, bot_dir / INSTANT.name)
    (bot_dir / INSTANT.name).chmod(0o644)
    BOT[0] = bot_dir / INSTANT.name

    plan = cgroups.probe()
    if plan.freeze:
        RUN_GROUPS[0] = RunGroups(plan, secrets.token_hex(8))
    # The arena moves itself to the referees' CPU group at its first run
    # (cgroups.prioritize_self); done first so that the floors run there too.
    prioritized = cgroups.prioritize_self(plan)

    all_cores = os.sched_getaffinity(0)
    if not args.no_pin:
        os.sched_setaffinity(0, {min(all_cores)})  # as taskset -c 0; bots inherit it
    pinned = f"pinned to CPU {min(all_cores)}" if not args.no_pin else "not pinned"

    # 1. The floors, and 2. the arena in both modes, alternated so that load
    # on the machine affects all four alike.
    floor_times: list[list[float]] = [[] for _ in MODES]
    floor_cpu = [0.0 for _ in MODES]
    runs: list[list[tuple[float, float, int, float]]] = [[] for _ in MODES]
    for i in range(2):
        for m, (_, flags, frozen) in enumerate(MODES):
            times, cpu = trio.run(floor, 1000 * scale, frozen)
            floor_times[m] += times
            floor_cpu[m] += cpu
            wall, records = run_tournament(
                tmp / f"arena{m}-{i}",
                "--hands",
                "50",
                "--rounds",
                str(scale),
                "--jobs",
                "1",
                *flags,
            )
            decisions = sum(t["requests"] for r in records for t in r["timing"])
            runs[m].append((wall, sum(r["duration_s"] for r in records), decisions, LAST_CPU[0]))
    size = len(json.dumps(play_request(), separators=(",", ":")))
    users = "bots as uids of their own (root)" if os.geteuid() == 0 else "bots as this user"
    print(
        f"({pinned}; {users}; the floors and the arena in the referees' CPU group: "
        f"{'yes' if prioritized else 'no (no CPU controller here)'}; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + ")"
    )
    rests = []
    base = (1.0, 1.0)  # floor 1a's wall and CPU per round trip
    for m, (label, _, frozen) in enumerate(MODES):
        letter = "ab"[m]
        times = floor_times[m]
        mean = statistics.fmean(times)
        fcpu = floor_cpu[m] / len(times)
        what = (
            "plus one thaw and one freeze (cgroup.freeze) of the answering process's group "
            "per round trip"
            if frozen
            else "plain"
        )
        print(
            f"1{letter}. floor, {what} ({len(times)} round trips of ~{size}-byte lines, 4 instant "
            f"processes): wall {mean * 1e6:.0f} us per round trip (median "
            f"{statistics.median(times) * 1e6:.0f} us); CPU (parent + children) {fcpu * 1e6:.0f} us"
        )
        decisions = sum(r[2] for r in runs[m])
        whole = sum(r[0] for r in runs[m]) / decisions
        games = sum(r[1] for r in runs[m]) / decisions
        cpu = sum(r[3] for r in runs[m]) / decisions
        print(
            f"2{letter}. arena {label}, whole run (4 instant bots, 50-hand games, {decisions} "
            f"decisions): wall {whole * 1e6:.0f} us per decision, x{whole / mean:.2f} floor 1{letter} "
            f"(in games only {games * 1e6:.0f} us, x{games / mean:.2f}); CPU {cpu * 1e6:.0f} us, "
            f"x{cpu / fcpu:.2f} floor 1{letter}'s CPU"
            + (
                f"; against floor 1a: wall x{whole / base[0]:.2f}, CPU x{cpu / base[1]:.2f}"
                if frozen
                else " (goal <= 1.8, stretch 1.5)"
            )
        )
        rests.append(cpu - fcpu)
        if m == 0:
            base = (mean, fcpu)
    print(
        "   (on a shared machine the CPU ratio is the steadier: wall time also counts other "
        "users' turns on the core; beyond floor 1b, the arena also takes and gives back a core "
        "token (flock) and reads the bot's cpu.stat per decision: in 'isolation' below)"
    )
    breakdown(rests)
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
