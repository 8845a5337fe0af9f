"""The starter kits' sample bots, sealed: start-up time (from asking for a
process to its ``hello`` reply, through the arena's own launcher) and time
per decision (wall and CPU, from a short tournament's ``games.jsonl``),
beside the Python kit's sample bot (``sample:kit``) as the baseline.

    python benchmarks/kit_speed.py [RUNS] [HANDS] [DIR]

Each kit is copied with ``hearts-arena new`` into a temporary folder and
built with ``hearts-arena build`` (a kit whose toolchain is missing is
left out, with the reason), or taken already built from DIR/LANGUAGE.
RUNS starts per bot (default 10) give the median and slowest start-up; the
decisions are those of HANDS-hand games (default 8), sealed, in tournaments
of four: three kit bots and the baseline (one table, its four seatings).
Prints milliseconds and the ratios to the baseline.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import trio

from arena.cli.kits import KITS
from arena.sandbox.entrants import Entrant, folder_entrant, sample_entrant
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.seats.process import BotProcess
from arena.seats.seat import Request


async def _startup(launcher: Launcher, entrant: Entrant) -> float:
    """Seconds from the launch spec to the hello reply."""
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()
        bot = await BotProcess.start(launcher.spec(entrant), nursery)
        reply = await bot.request(Request("hello", {"protocol": "hearts-arena/1"}, 30.0))
        elapsed = time.perf_counter() - t0
        await bot.close()
    if reply.message is None:
        raise RuntimeError(f"{entrant.name} did not start: {reply.detail}")
    return elapsed


def _build(root: Path) -> dict[str, Path]:
    built: dict[str, Path] = {}
    for language, (_kit, tools, packages) in KITS.items():
        missing = [t for t in tools if shutil.which(t) is None]
        if missing:
            print(f"{language}: left out, {', '.join(missing)} missing (Debian: {packages})")
            continue
        folder = root / language
        for argv in (["new", language, str(folder)], ["build", str(folder)]):
            subprocess.run([sys.executable, "-m", "arena", *argv], check=True, capture_output=True)
        built[language] = folder
    return built


def main(runs: int, hands: int, ready: Path | None) -> None:
    root = Path(tempfile.mkdtemp(prefix="kit-speed-"))
    root.chmod(0o755)
    try:
        if ready is None:
            built = _build(root)
        else:
            built = {lang: ready / lang for lang in KITS if (ready / lang / "bot.toml").is_file()}
        entrants = {"sample:kit": sample_entrant("kit")}
        entrants.update({lang: folder_entrant(folder) for lang, folder in built.items()})
        launcher = Launcher(LaunchOptions(sandbox=True))
        starts: dict[str, list[float]] = {}
        try:
            for label, entrant in entrants.items():
                starts[label] = [trio.run(_startup, launcher, entrant) for _ in range(runs)]
        finally:
            launcher.close()
        names = {e.name: label for label, e in entrants.items() if label != "sample:kit"}
        names["kit"] = "sample:kit"
        wall: dict[str, list[float]] = defaultdict(list)
        cpu: dict[str, list[float]] = defaultdict(list)
        folders = list(built.values())
        for i in range(0, len(folders), 3):
            out = root / f"run{i}"
            group = [str(f) for f in folders[i : i + 3]]
            fillers = ["sample:low", "sample:duck"][: 3 - len(group)]  # four entrants: one table
            argv = ["run", *group, "sample:kit", *fillers, "--rounds", "1", "--hands", str(hands)]
            argv += ["--sandbox", "--out", str(out)]
            subprocess.run([sys.executable, "-m", "arena", *argv], check=True, capture_output=True)
            for line in (out / "games.jsonl").read_text().splitlines():
                game = json.loads(line)
                for seat, timing in enumerate(game["timing"]):
                    who = names.get(game["seats"][seat])
                    if who is None:
                        continue  # a filler sample
                    wall[who] += timing["wall_ms"]
                    cpu[who] += [c for c in timing["cpu_ms"] if c is not None]
        base_start = statistics.median(starts["sample:kit"]) * 1000
        base_wall = statistics.mean(wall["sample:kit"])
        print(f"{runs} sealed starts per bot; decisions of one round of {hands}-hand games, sealed")
        print(f"{'bot':12} {'start ms':>9} {'slowest':>8} {'x base':>7} "
              f"{'decision ms':>12} {'max':>7} {'cpu ms':>7} {'x base':>7} {'decisions':>9}")  # fmt: skip
        for label in entrants:
            start = statistics.median(starts[label]) * 1000
            mean = statistics.mean(wall[label])
            print(
                f"{label:12} {start:9.1f} {max(starts[label]) * 1000:8.1f} {start / base_start:7.2f} "
                f"{mean:12.2f} {max(wall[label]):7.1f} {statistics.mean(cpu[label] or [0]):7.2f} "
                f"{mean / base_wall:7.2f} {len(wall[label]):9d}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 10,
        int(sys.argv[2]) if len(sys.argv) > 2 else 8,
        Path(sys.argv[3]) if len(sys.argv) > 3 else None,
    )
