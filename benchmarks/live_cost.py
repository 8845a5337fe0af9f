"""What watching costs: games per second of a tournament with the live view
served (``--live``) and 0 viewers, and with 100 viewers, in the same run.

**The viewers.** 100 event-stream clients (``GET /events``, each reading
every server-sent event and throwing it away) held by **one separate
process** (this script started again with ``--viewer-process``), at normal
priority on the same machine. They stand for 100 browsers showing the page.

**The comparison.** The machine is shared and its load swings by several
times within a minute, so one long tournament with and one without viewers
says little. Instead this run plays the *same* short tournament (the four
sample bots, ``--rounds R``, ``--seed 7``: the same deals, the same cards,
the same games) many times, in phases that alternate without and with the
viewers in pairs ordered 0-100, 100-0, 0-100, ... (a drift of the machine's
load during a pair then favours neither case). Each phase is one
``hearts-arena run --live 127.0.0.1:0``; with viewers, the viewers' process
connects its 100 clients as soon as the page's address is printed (before
the first game starts, as the arena waits for the server; the clients' first
bytes may arrive a little after it: the lag is printed) and they stay until
the run ends and the server closes their streams.

Two measures per phase, both of the whole tournament of the phase:

* **games per second** (wall time) while every one of the ``--jobs`` game
  slots is playing: the games that end from the moment the last slot starts
  its first game to the moment the first slot has no game left, divided by
  that time (from ``games.jsonl``). The arena's start, its worker processes'
  start one after the other (which moves the whole run's games per second
  by 10-20% from one run to the next, viewers or not) and the last games
  played by fewer slots are left out; the whole run's figure (games / first
  start to last end) is printed for each phase too;
* **CPU seconds per game** of the arena's whole process tree (the arena, its
  worker processes, the page's server, every bot), from ``os.wait4`` of the
  arena (the rusage of every descendant it reaped): far less sensitive to the
  machine's other load than wall time. The page's server's own CPU is
  sampled from ``/proc`` every 50 ms (its last sample before it ends).

For each pair: the ratio 100-viewer / 0-viewer of each measure. The summary
gives each measure's median over the phases, the median of the pair ratios
with a 95% bootstrap interval (``scipy.stats.bootstrap``, percentile,
9999 resamples), and the loss: 1 - the median ratio of games per second
(goal: under 5%), and the extra CPU per game.

**Keeping the CPUs awake.** The games are bound by latency more than by
CPU (a decision is a round trip between the referee and a bot: under a
millisecond): on a virtual machine a CPU that goes idle wakes up slowly, so
anything that keeps the CPUs busy makes the games faster. 100 viewers do
(their server and their process wake often), and without care the phases
with viewers play 10-30% *faster*; a busy loop at nice 19 on each CPU does
the same. So in every phase, with and without viewers, one busy loop per
CPU runs at the idle scheduling class (``SCHED_IDLE``: it gets a CPU only
when nothing else wants it), and no CPU ever sleeps; ``--let-idle`` leaves
them out.

``--pin``: the arena (``--jobs 1``) on the first CPU this script may use,
the viewers' process on the second: the viewers' reading then takes no CPU
from the games, as 100 browsers on other machines would not (on a 2-core
machine the arena then has one core; its page's server shares it with the
games, which is the cost being measured). Without ``--pin`` nothing is
pinned and the arena plays ``--jobs`` games at once.

Usage: ``python benchmarks/live_cost.py [--rounds R] [--pairs P] [--jobs J] [--pin]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
VIEWERS = 100
#: Seconds between two samples of the page's server's CPU.
SAMPLE = 0.05
#: The arena's core tokens (:mod:`arena.sandbox.cores`).
TOKENS = Path("/tmp/hearts-arena-cores")


# -- the viewers' process --------------------------------------------------------


async def _viewer(
    host: str, port: int, target: str, counts: list[int], i: int, first: trio.Event
) -> None:
    stream = await trio.open_tcp_stream(host, port)
    request = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n"
    async with stream:
        await stream.send_all(request.encode())
        while True:
            try:
                data = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                return
            if not data:
                return
            counts[i] += len(data)
            first.set()


async def _watch(url: str, n: int) -> str:
    """Connect ``n`` clients to the page at ``url`` and read until the server
    closes them; returns ``"<lag> <least bytes> <most bytes>"``, the lag in
    seconds from the call until every client had its first bytes."""
    found = re.match(r"http://([^:/]+):(\d+)/(?:\?token=(\S+))?", url)
    if not found:
        raise SystemExit(f"not a page address: {url}")
    host, port, token = found.group(1), int(found.group(2)), found.group(3)
    target = f"/events?token={token}" if token else "/events"
    counts = [0] * n
    firsts = [trio.Event() for _ in range(n)]
    start = trio.current_time()
    lag = -1.0

    async def all_first() -> None:
        nonlocal lag
        for event in firsts:
            await event.wait()
        lag = trio.current_time() - start

    async with trio.open_nursery() as nursery:
        nursery.start_soon(all_first)
        for i in range(n):
            nursery.start_soon(_viewer, host, port, target, counts, i, firsts[i])
    return f"{lag:.3f} {min(counts)} {max(counts)}"


def viewer_process(n: int) -> None:
    """Read page addresses from stdin, one a line; for each, connect ``n``
    clients and answer one line (see :func:`_watch`) when the run closed them."""
    for line in sys.stdin:
        url = line.strip()
        if not url:
            return
        print(trio.run(_watch, url, n), flush=True)


# -- one phase -----------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def _server_pid(arena: int) -> int | None:
    """The page's server: the arena's ``multiprocessing`` child started first
    (before any worker process), or ``None`` yet."""
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


def _cpu(pid: int) -> float:
    """User and system CPU seconds of a running process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Phase:
    """One tournament: ``viewers`` 0 or 100."""

    viewers: int
    games: int
    span: float  # seconds from the first game's start to the last one's end
    steady: float  # games per second while every slot plays (see the module docstring)
    duration: float  # mean seconds a game took, from its own start to its end
    cpu: float  # CPU seconds of the arena's process tree
    server_cpu: float  # CPU seconds of the page's server (sampled)
    server_during: float  # cores the server used while the games were played
    lag: float  # seconds until every viewer had its first bytes (-1: none)
    least_bytes: int  # bytes the viewer that got the fewest received
    scores: list[list[int]]

    @property
    def rate(self) -> float:
        return self.steady

    @property
    def whole(self) -> float:
        return self.games / self.span

    @property
    def cpu_per_game(self) -> float:
        return self.cpu / self.games


def play(args: argparse.Namespace, work: Path, viewers: Any | None, cpus: list[int]) -> Phase:
    """One phase: a tournament with ``--live``; with ``viewers`` (the viewers'
    process) its clients watch it."""
    out = work / "run"
    cmd = [sys.executable, "-m", "arena", "run", "--rounds", str(args.rounds), "--seed", "7"]
    cmd += ["--jobs", str(args.jobs), "--out", str(out), "--overwrite", "--quiet"]
    cmd += ["--live", "127.0.0.1:0"]
    if not args.shared_cores:
        # The core tokens are lock files in /tmp/hearts-arena-cores, shared by
        # every arena on the machine: in a mount namespace of its own the
        # arena has its own tokens, so other arenas' bots make its bots wait
        # for the CPU only, not for a token (root only).
        cmd = [
            "unshare",
            "--mount",
            "sh",
            "-c",
            f'mount -t tmpfs -o mode=0700 none {TOKENS} && exec "$@"',
            "sh",
            *cmd,
        ]
        TOKENS.mkdir(mode=0o700, exist_ok=True)

    def pin() -> None:
        if args.pin:
            os.sched_setaffinity(0, cpus[:1])

    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=pin,
    )
    assert proc.stderr is not None
    log: list[bytes] = []
    url: list[str] = []
    got_url = threading.Event()

    def read_log() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            found = re.search(rb"live view: (http://\S+)", line)
            if found and not url:
                url.append(found.group(1).decode())
                got_url.set()
        got_url.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    if not got_url.wait(120) or not url:
        proc.kill()
        raise SystemExit(f"no live view address: {b''.join(log)[-2000:].decode(errors='replace')}")
    if viewers is not None:
        viewers.stdin.write(url[0] + "\n")
        viewers.stdin.flush()
    server, samples = None, [(time.time(), 0.0)]
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        server = server or _server_pid(proc.pid)
        if server is not None:
            with contextlib.suppress(OSError, IndexError):
                samples.append((time.time(), _cpu(server)))
        time.sleep(SAMPLE)
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    if proc.returncode != 0:
        raise SystemExit(f"the run failed: {b''.join(log)[-2000:].decode(errors='replace')}")
    lag, least = -1.0, 0
    if viewers is not None:
        ready, _, _ = select.select([viewers.stdout], [], [], 60)
        if not ready:
            raise SystemExit("the viewers' process did not answer")
        lag_text, least_text, _ = viewers.stdout.readline().split()
        lag, least = float(lag_text), int(least_text)
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    starts = sorted(r["started_at"] for r in records)
    ends = sorted(r["started_at"] + r["duration_s"] for r in records)
    first, last = starts[0], ends[-1]
    # Every slot plays from the start of the jobs-th game to the end of the
    # jobs-th game from the end (then a slot has no game left).
    busy_from, busy_to = starts[args.jobs - 1], ends[-args.jobs]
    ended = sum(1 for t in ends if busy_from < t <= busy_to)
    if busy_to - busy_from < 1 or ended < 10:
        raise SystemExit("a phase too short to measure: give more --rounds")
    # The server's CPU while the games were played, from a second after the
    # first one started (the viewers have connected) to the end of the last.
    during = [(t, c) for t, c in samples if first + 1 <= t <= last]
    if len(during) < 2:
        raise SystemExit("a phase too short to sample: give more --rounds")
    return Phase(
        viewers=VIEWERS if viewers is not None else 0,
        games=len(records),
        span=last - first,
        steady=ended / (busy_to - busy_from),
        duration=statistics.mean(r["duration_s"] for r in records),
        cpu=usage.ru_utime + usage.ru_stime,
        server_cpu=samples[-1][1],
        server_during=(during[-1][1] - during[0][1]) / (during[-1][0] - during[0][0]),
        lag=lag,
        least_bytes=least,
        scores=[r["scores"] for r in sorted(records, key=lambda r: r["game_index"])],
    )


def keep_awake(cpu: int) -> subprocess.Popen[bytes]:
    """A busy loop on ``cpu`` at the idle scheduling class (see the module docstring)."""
    code = (
        "import os\n"
        f"os.sched_setaffinity(0, [{cpu}])\n"
        "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "while True:\n    pass\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


# -- the summary ---------------------------------------------------------------------


def interval(values: list[float]) -> tuple[float, float]:
    """95% bootstrap interval (percentile, 9999 resamples, fixed seed) of the median."""
    import numpy as np
    from scipy.stats import bootstrap  # type: ignore[import-untyped]  # pip install ".[bench]"

    if len(set(values)) < 2:
        return values[0], values[0]
    result = bootstrap(
        (np.asarray(values),),
        np.median,
        confidence_level=0.95,
        n_resamples=9999,
        method="percentile",
        random_state=np.random.default_rng(17),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def summary(pairs: list[tuple[Phase, Phase]], cpus: int) -> list[str]:
    """The summary lines of ``pairs`` (0 viewers, 100 viewers); the arena may
    use ``cpus`` CPUs."""
    med = statistics.median
    off = [a for a, _ in pairs]
    on = [b for _, b in pairs]

    def row(name: str, digits: int, value: Any, per_pair: list[float], ratio: bool) -> str:
        """One line: the two cases' medians, then the pairs' median ratio
        (``ratio``) or difference, with its interval."""
        lo, hi = interval(per_pair)
        sign = "" if ratio else "+"
        spec = f"{sign}.{3 if ratio else digits}f"
        return (
            f"  {name:<32}{value(off):>10.{digits}f}{value(on):>12.{digits}f}    "
            f"{med(per_pair):{spec}} [{lo:{spec}}, {hi:{spec}}]"
        )

    rate = [b.rate / a.rate for a, b in pairs]
    cpu = [b.cpu_per_game / a.cpu_per_game for a, b in pairs]
    # The server's extra CPU per game, as a share of the whole arena's CPU per
    # game without viewers: what serving them takes from a machine the games fill.
    server = [(b.server_cpu - a.server_cpu) / b.games / a.cpu_per_game for a, b in pairs]
    during = [b.server_during - a.server_during for a, b in pairs]
    rlo, rhi = interval(rate)
    clo, chi = interval(cpu)
    slo, shi = interval(server)
    dlo, dhi = interval(during)
    return [
        f"compared: the same tournament of {off[0].games} games played {len(pairs)} times with 0 "
        f"and {len(pairs)} times with {VIEWERS} viewers, in alternating pairs",
        f"  {'median of the phases':<32}{'0 viewers':>10}{'100 viewers':>12}    "
        "per pair, 100 vs 0 viewers: median [95% interval]",
        row("games/s, every slot playing", 2, lambda ps: med(p.rate for p in ps), rate, True),
        row(
            "CPU s/game, the arena's tree", 4, lambda ps: med(p.cpu_per_game for p in ps), cpu, True
        ),
        row(
            "CPU s/game, its page's server",
            4,
            lambda ps: med(p.server_cpu / p.games for p in ps),
            [(b.server_cpu - a.server_cpu) / b.games for a, b in pairs],
            False,
        ),
        row(
            "server's cores during the games",
            3,
            lambda ps: med(p.server_during for p in ps),
            during,
            False,
        ),
        f"lost to {VIEWERS} viewers (goal: under 5%):",
        f"  games per second (wall time):   {100 * (1 - med(rate)):5.1f}% "
        f"[{100 * (1 - rhi):.1f}%, {100 * (1 - rlo):.1f}%]",
        f"  CPU per game, the arena's tree: {100 * (med(cpu) - 1):5.1f}% "
        f"[{100 * (clo - 1):.1f}%, {100 * (chi - 1):.1f}%] more",
        f"  CPU per game, the server alone: {100 * med(server):5.1f}% "
        f"[{100 * slo:.1f}%, {100 * shi:.1f}%] of the arena's CPU per game, "
        f"its {VIEWERS} connections and closes included (once per phase of {off[0].games} games)",
        f"  while the games ran, the server: {med(during):+.3f} cores [{dlo:+.3f}, {dhi:+.3f}] "
        f"= {100 * med(during) / cpus:.1f}% of the {cpus} CPU{'s' if cpus > 1 else ''} "
        "the arena may use",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds per phase (4 games each)")
    parser.add_argument("--pairs", type=int, default=10, help="pairs of phases (0 and 100 viewers)")
    parser.add_argument(
        "--jobs", type=int, default=None, help="--jobs of the arena (default: 2; 1 with --pin)"
    )
    parser.add_argument("--pin", action="store_true", help="arena on one CPU, viewers on another")
    parser.add_argument(
        "--shared-cores",
        action="store_true",
        help="share the core tokens with other arenas on the machine (default: own ones as root)",
    )
    parser.add_argument(
        "--let-idle",
        action="store_true",
        help="no busy loop at the idle class on each CPU (see the module docstring)",
    )
    parser.add_argument("--viewer-process", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.viewer_process:
        viewer_process(args.viewer_process)
        return
    cpus = sorted(os.sched_getaffinity(0))
    if args.pin and len(cpus) < 2:
        raise SystemExit("--pin needs two CPUs")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        args.shared_cores = True  # a mount namespace of its own needs root
    if args.jobs is None:
        args.jobs = 1 if args.pin else 2
    pinned = f"arena on CPU {cpus[0]}, viewers on CPU {cpus[1]}" if args.pin else "nothing pinned"
    pinned += "" if args.let_idle else "; CPUs kept awake (a SCHED_IDLE busy loop on each)"
    pinned += "; the arena's own core tokens" if not args.shared_cores else ""
    print(
        f"live_cost: the same tournament (4 sample bots, {args.rounds} rounds = "
        f"{4 * args.rounds} games to 100, --seed 7, --jobs {args.jobs}, --live) played "
        f"{2 * args.pairs} times, alternately with 0 and with {VIEWERS} viewers "
        f"({VIEWERS} event-stream clients in one separate process); {len(cpus)} CPUs, "
        f"{pinned}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )

    def pin_viewers() -> None:
        if args.pin:
            os.sched_setaffinity(0, cpus[1:2])

    viewers = subprocess.Popen(
        [sys.executable, __file__, "--viewer-process", str(VIEWERS)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=pin_viewers,
    )
    awake = [] if args.let_idle else [keep_awake(cpu) for cpu in cpus]
    pairs: list[tuple[Phase, Phase]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="live-cost-") as tmp:
            reference: list[list[int]] | None = None
            for k in range(args.pairs):
                got: dict[int, Phase] = {}
                for with_viewers in (False, True) if k % 2 == 0 else (True, False):
                    p = play(args, Path(tmp), viewers if with_viewers else None, cpus)
                    reference = reference or p.scores
                    if p.scores != reference:
                        raise SystemExit("the phases played different games")
                    got[p.viewers] = p
                    lag = (
                        f", viewers' lag {p.lag:.2f} s, >= {p.least_bytes:,} bytes each"
                        if p.viewers
                        else ""
                    )
                    print(
                        f"  phase {2 * k + len(got)}: {p.viewers:3d} viewers  {p.rate:6.2f} games/s (whole run {p.whole:5.2f})  "
                        f"{p.duration:.3f} s a game  {p.cpu_per_game:.4f} CPU s/game (server {p.server_cpu / p.games:.4f}){lag}",
                        flush=True,
                    )
                pairs.append((got[0], got[VIEWERS]))
    finally:
        assert viewers.stdin is not None
        with contextlib.suppress(OSError):
            viewers.stdin.close()
        viewers.wait(10)
        for spinner in awake:
            spinner.kill()
            spinner.wait()
    for line in summary(pairs, 1 if args.pin else len(cpus)):
        print(line)


if __name__ == "__main__":
    main()
