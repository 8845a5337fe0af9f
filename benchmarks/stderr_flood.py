"""What a stderr flood costs a run (issue 22 item 9): the same small
tournament with one entrant flooding its stderr (64 KiB chunks for most of
each decision, every reply in time) and with the same entrant quiet (a busy
loop for the same time), in one run of this script, alternated.

    python benchmarks/stderr_flood.py [REPEATS] [--no-sandbox] [-- RUN OPTIONS]

Each tournament: ``benchmarks/stderr_flood_bot.py`` (flood or quiet, 80% of
a 200 ms budget) against three instant bots, ``--hands 2 --rounds 1 --jobs
2`` (4 games). Three modes: quiet; flood with the default ``--stderr-limit``
(past it the arena discards the stderr unread); flood with
``--stderr-limit 0`` (every byte read, as before the cap). Prints per mode the
median wall time and CPU time (the arena's own process, all its threads;
and its bots, from the children's rusage) over REPEATS runs (default 3), the ratio of each to quiet, the bytes
the flooder wrote that the records say were not read, and the size of
``games.jsonl``. Goal: flood with the cap at most 2x quiet's wall time.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The share of each decision's budget the noisy bot spends (flooding or not).
FRACTION = 0.8


def _entrants(root: Path, mode: str) -> list[str]:
    """The flooder (or its quiet twin) and three instant bots, each in a folder of its own."""
    out = []
    for name, file, args in [
        ("noisy", "stderr_flood_bot.py", f" {mode} {FRACTION}"),
        *((f"instant{i}", "instant_bot.py", "") for i in range(3)),
    ]:
        folder = root / name
        folder.mkdir()
        shutil.copy(HERE / file, folder / file)
        out.append(f"{name}={folder / file}{args}")
    return out


#: Runs ``hearts-arena`` in a fresh interpreter and writes the CPU seconds of
#: the arena's own process (all its threads) and of its waited-for
#: descendants (bots, bubblewrap, workers) to the file ``argv[1]``.
_WRAPPER = """
import json, resource, sys
from arena.cli.main import main
code = main(sys.argv[2:])
own = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump({"arena": own.ru_utime + own.ru_stime, "bots": kids.ru_utime + kids.ru_stime}, f)
sys.exit(code)
"""


def _run(mode: str, limit: list[str], extra: list[str]) -> tuple[float, float, float, int, int]:
    """Wall seconds, the arena's CPU seconds, its descendants' CPU seconds,
    bytes not read (from the records), and ``games.jsonl``'s size, of one tournament."""
    with tempfile.TemporaryDirectory(prefix="stderr-flood-") as tmp:
        root = Path(tmp)
        args = [sys.executable, "-c", _WRAPPER, str(root / "cpu.json"), "run"]
        args += _entrants(root, mode)
        args += ["--hands", "2", "--rounds", "1", "--jobs", "2", "--seed", "7", "--quiet"]
        args += ["--time-limit", "0.2", "--out", str(root / "out"), "--overwrite", *limit, *extra]
        t0 = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
        games = root / "out" / "games.jsonl"
        skipped = 0
        for line in games.read_text().splitlines():
            rec = json.loads(line)
            text = rec["stderr"][rec["seats"].index("noisy")]
            if "more bytes not read" in text:
                skipped += int(text.rsplit("[... ", 1)[1].split()[0])
            faults = [f for f in rec["faults"] if f["entrant"] == "noisy"]
            if faults:
                raise SystemExit(f"the {mode} bot faulted: {faults[0]}")
        cpu = json.loads((root / "cpu.json").read_text())
        return wall, cpu["arena"], cpu["bots"], skipped, games.stat().st_size


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    if "--no-sandbox" in argv:
        extra.append("--no-sandbox")
        argv.remove("--no-sandbox")
    repeats = int(argv[0]) if argv else 3
    modes = {
        "quiet": ("quiet", []),
        "flood, capped (default --stderr-limit)": ("flood", []),
        "flood, --stderr-limit 0 (all read)": ("flood", ["--stderr-limit", "0"]),
    }
    results: dict[str, list[tuple[float, float, float, int, int]]] = {m: [] for m in modes}
    for _ in range(repeats):  # alternated, so the machine's load hits every mode alike
        for label, (mode, limit) in modes.items():
            results[label].append(_run(mode, limit, extra))
    base_wall = statistics.median(r[0] for r in results["quiet"])
    base_cpu = statistics.median(r[1] for r in results["quiet"])
    print(f"{repeats} runs per mode, alternated; load average {os.getloadavg()[0]:.1f}")
    for label, runs in results.items():
        wall, cpu, bots, skipped, size = (statistics.median(r[i] for r in runs) for i in range(5))
        print(
            f"{label:>40}: wall {wall:6.2f} s (x{wall / base_wall:.2f} quiet), "
            f"arena CPU {cpu:5.2f} s (x{cpu / base_cpu:.2f}), bots' CPU {bots:5.2f} s, "
            f"not read {skipped / 1e6:7.0f} MB, games.jsonl {size / 1024:.0f} KiB"
        )


if __name__ == "__main__":
    main()
