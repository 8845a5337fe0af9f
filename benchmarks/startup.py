"""The arena's fixed cost per run (issue 26): CPU and wall time of a whole
``python -m arena`` process tree beside ``python -c pass``, measured in one
run with the modes alternated so that the machine's load touches all alike.

    python benchmarks/startup.py [--repeats N] [--only a,b,c,d] [--before DIR]

Modes, each started N times (default 5) as a subprocess of this script:

a. ``python -c pass``: the baseline (the interpreter's own start-up);
b. ``python -m arena --help``: the command line's import time;
c. a sealed run (the default mode) of the four sample bots ``low``, ``duck``,
   ``random`` and ``heuristic`` with ``--rounds 1 --hands 1 --jobs 1``: the
   smallest tournament the arena plays (one table, its deal in four seat
   rotations: four one-hand games);
d. the same run with ``--no-sandbox``;
e. (as root) the uid leases of a run's start, alone: a process leasing five
   uids (the probe's and four bots') from a private pool of 256 uids
   (3,960,000 on) whose lock files say ``in use`` but for every eighth,
   ``clean``: the pool a machine's killed runs and never-used uids leave,
   where a lease taken dirty walks every world-writable folder first.

For each mode: the median CPU seconds (user + system) of the process and
every descendant it waited for (``os.wait4``; a sealed bot's CPU counts, as
it is a child of the arena's bubblewrap), the median wall seconds, and both
as ratios to the baseline's medians.

``--before DIR``: a source tree of another version of the arena (``git
archive 1f2ef68 | tar -x -C DIR``) whose ``arena`` package runs each mode
b to d again, with ``PYTHONPATH=DIR``, alternated with the installed one in
the same loop, so that both meet the same load; its rows are marked
``(before)`` and the installed one's get a last column, after / before.

Set ``PYTHONDONTWRITEBYTECODE`` as the runs you compare do: with it every
arena process compiles its modules from source (about 0.2 s of CPU). The
run modes' output goes to a
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
BASELINE = "a python -c pass"
LEASES = """
from arena.sandbox import isolation as i
base, size = 3_960_000, 256
i.LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
for k in range(size):
    (i.LOCK_DIR / str(base + k)).write_bytes(b"clean" if k % 8 == 0 else b"in use")
i.release_leases([i.lease_uid(base, size) for _ in range(5)])
"""

#: A mode's argv and environment (``None``: this process's).
Mode = tuple[list[str], dict[str, str] | None]


def _modes(out: str, before: str | None) -> dict[str, Mode]:
    """Each mode by its letter and name; with ``before``, modes b to d twice."""
    py = sys.executable
    modes: dict[str, Mode] = {BASELINE: ([py, "-c", "pass"], None)}
    trees: list[tuple[str, dict[str, str] | None]] = [("", None)]
    if before is not None:
        trees.append((" (before)", {**os.environ, "PYTHONPATH": os.path.abspath(before)}))
    for mark, env in trees:
        folder = os.path.join(out, "before" if env else "now")
        arena = [py, "-m", "arena"]
        modes[f"b arena --help{mark}"] = ([*arena, "--help"], env)
        modes[f"c run, sealed{mark}"] = ([*arena, *RUN, "--out", f"{folder}/c"], env)
        modes[f"d run, --no-sandbox{mark}"] = (
            [*arena, *RUN, "--no-sandbox", "--out", f"{folder}/d"],
            env,
        )
        if os.geteuid() == 0:
            modes[f"e 5 uid leases{mark}"] = ([py, "-c", LEASES], env)
    return modes


def measure(
    argv: list[str], env: dict[str, str] | None = None, cwd: str = "/"
) -> tuple[float, float]:
    """CPU seconds (user + system, the process and its waited descendants)
    and wall seconds of one run of ``argv`` in the folder ``cwd`` (not this
    one: ``python -m`` and ``-c`` put the current folder first on
    ``sys.path``, and a checkout's ``arena`` would shadow the one meant);
    raises RuntimeError with its stderr's tail if it exits non-zero."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
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
        "--only", default="a,b,c,d,e", help="modes to run, by letter (the baseline always runs)"
    )
    parser.add_argument("--before", metavar="DIR", help="a source tree of another version")
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="arena-startup-")
    try:
        wanted = set(args.only.split(",")) | {"a"}
        modes = {k: mode for k, mode in _modes(out, args.before).items() if k[0] in wanted}
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
        for argv, env in modes.values():  # warm up the file caches once
            measure(argv, env, out)
        for _ in range(args.repeats):
            for name, (argv, env) in modes.items():
                samples[name].append(measure(argv, env, out))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    medians = {
        name: (statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs))
        for name, runs in samples.items()
    }
    base_cpu, base_wall = medians[BASELINE]
    load = os.getloadavg()[0]
    print(f"{args.repeats} runs per mode, medians; load average {load:.1f}; {os.cpu_count()} cores")
    print(f"{'mode':<31} {'CPU s':>7} {'x base':>7} {'wall s':>7} {'x base':>7} {'now/before':>11}")
    for name, (cpu, wall) in medians.items():
        line = (
            f"{name:<31} {cpu:>7.3f} {cpu / base_cpu:>7.1f} {wall:>7.3f} {wall / base_wall:>7.1f}"
        )
        before = medians.get(f"{name} (before)")
        if before is not None:
            line += f" {cpu / before[0]:>11.2f}"
        print(line)


if __name__ == "__main__":
    main()
