"""The arena's fixed cost per run (issue 26): CPU and wall time of a whole
``python -m arena`` process tree beside ``python -c pass``, measured in one
run with the modes alternated so that the machine's load touches all alike.

    python benchmarks/startup.py [--repeats N] [--only a,b,c,d]

Modes, each started N times (default 5) as a subprocess of this script:

a. ``python -c pass``: the baseline (the interpreter's own start-up);
b. ``python -m arena --help``: the command line's import time;
c. a sealed run (the default mode) of the four sample bots ``low``, ``duck``,
   ``random`` and ``heuristic`` with ``--rounds 1 --hands 1 --jobs 1``: the
   smallest tournament the arena plays (one table, its deal in four seat
   rotations: four one-hand games);
d. the same run with ``--no-sandbox``.

For each mode: the median CPU seconds (user + system) of the process and
every descendant it waited for (``os.wait4``; a sealed bot's CPU counts, as
it is a child of the arena's bubblewrap), the median wall seconds, and both
as ratios to the baseline's medians. The run modes' output goes to a
temporary folder removed at the end; a run that fails stops the script with
its stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BOTS = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
RUN = ["run", *BOTS, "--rounds", "1", "--hands", "1", "--jobs", "1", "--seed", "1"]
RUN += ["--quiet", "--overwrite", "--memory-limit", "512"]


def _modes(out: str) -> dict[str, list[str]]:
    """The argv of each mode, by its letter and name."""
    py = sys.executable
    return {
        "a python -c pass": [py, "-c", "pass"],
        "b arena --help": [py, "-m", "arena", "--help"],
        "c run, sealed": [py, "-m", "arena", *RUN, "--out", os.path.join(out, "c")],
        "d run, --no-sandbox": [
            py,
            "-m",
            "arena",
            *RUN,
            "--no-sandbox",
            "--out",
            os.path.join(out, "d"),
        ],
    }


def measure(argv: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system, the process and its waited descendants)
    and wall seconds of one run of ``argv``; raises RuntimeError with its
    stderr's tail if it exits non-zero."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}"
        )
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    """Parse the options, alternate the modes N times, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each mode (default 5)")
    parser.add_argument(
        "--only", default="a,b,c,d", help="modes to run, by letter (the baseline always runs)"
    )
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="arena-startup-")
    try:
        wanted = set(args.only.split(",")) | {"a"}
        modes = {name: argv for name, argv in _modes(out).items() if name[0] in wanted}
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
        for argv in modes.values():  # warm up the file caches once
            measure(argv)
        for _ in range(args.repeats):
            for name, argv in modes.items():
                samples[name].append(measure(argv))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    base_cpu = statistics.median(c for c, _ in samples["a python -c pass"])
    base_wall = statistics.median(w for _, w in samples["a python -c pass"])
    load = os.getloadavg()[0]
    print(f"{args.repeats} runs per mode, medians; load average {load:.1f}; {os.cpu_count()} cores")
    print(f"{'mode':<22} {'CPU s':>8} {'x base':>8} {'wall s':>8} {'x base':>8}")
    for name, runs in samples.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        print(
            f"{name:<22} {cpu:>8.3f} {cpu / base_cpu:>8.1f} {wall:>8.3f} {wall / base_wall:>8.1f}"
        )


if __name__ == "__main__":
    main()
