"""What a ``python -m arena`` command costs before it does its work: CPU
seconds of five commands for this source tree and for a baseline version
(default main at 785b6a6, before the command line loaded its libraries
lazily), alternated in one run so that both meet the same load.

    python benchmarks/cli_start.py [--repeats N] [--base-commit REV] [--base DIR]

Commands, each started N times (default 5) per version, from a temporary
folder, with ``PYTHONPATH`` naming the version's source tree:

1. ``--version``;
2. ``run --help``;
3. ``check --help``;
4. a small run: the four sample bots, ``--rounds 1 --hands 1 --jobs 1
   --seed 1 --no-sandbox`` (one table: its deal in four seat rotations, four
   one-hand games; the smallest tournament there is);
5. ``check sample_bots/random_bot.py --no-sandbox`` (the conformance checks).

The CPU of a command is user + system seconds of the process and every
descendant it waited for (its bots, a pool worker): the growth of
``resource.getrusage(RUSAGE_CHILDREN)`` across it (commands run one at a
time). Printed per command: the median for each version, the ratio now /
before, and the saving. ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and
``MKL_NUM_THREADS`` are removed from the commands' environment, so both
versions meet NumPy's default (one OpenBLAS thread per core) unless they
set it themselves.

The baseline is ``git archive REV arena protocol sample_bots kits`` of this
repository extracted into a temporary folder (``--base DIR``: an existing
tree instead). Compiled modules go to a cache of the run's own
(``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` is dropped), and each
command is run once per version before the timed runs, so that neither
version compiles its modules in a timed run (one whose tree had no
``__pycache__`` would pay about 0.2 s more a process). A command that fails
stops the script with its stderr. The runs take core tokens of their own
(``HEARTS_ARENA_CORE_TOKENS``, as the test suite does): on a shared machine
another arena's bots may hold the machine's, which would only make them wait.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOTS = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
SMALL_RUN = ["run", *BOTS, "--rounds", "1", "--hands", "1", "--jobs", "1", "--seed", "1"]
SMALL_RUN += ["--quiet", "--overwrite", "--no-sandbox", "--memory-limit", "512"]
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def commands(out: Path, bot: Path) -> dict[str, list[str]]:
    """The commands measured, by label: their arguments after ``python -m arena``."""
    return {
        "--version": ["--version"],
        "run --help": ["run", "--help"],
        "check --help": ["check", "--help"],
        "run (4 one-hand games)": [*SMALL_RUN, "--out", str(out)],
        "check random_bot.py": ["check", str(bot), "--no-sandbox"],
    }


def cpu_of(argv: list[str], tree: Path, cwd: Path) -> float:
    """CPU seconds (user + system, with the descendants it waited for) of
    ``python -m arena ARGV`` with ``tree`` on ``PYTHONPATH``, compiled
    modules kept under ``cwd/pycache`` (``PYTHONPYCACHEPREFIX``).

    Raises:
        SystemExit: the command failed (its stderr is printed).
    """
    drop = {*THREAD_VARIABLES, "PYTHONDONTWRITEBYTECODE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
    env["HEARTS_ARENA_CORE_TOKENS"] = str(cwd / "cores")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "arena", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} with {tree} failed:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def export(rev: str, into: Path) -> Path:
    """``git archive REV`` of the package and its data folders, extracted into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "arena", "protocol", "sample_bots", "kits"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command and version")
    parser.add_argument("--base-commit", default="785b6a6", help="the baseline's commit")
    parser.add_argument("--base", type=Path, help="an existing baseline tree instead of an export")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cli-start-"))
    (work / "cores").mkdir(mode=0o700)
    try:
        base = args.base or export(args.base_commit, work / "base")
        trees = {"now": ROOT, "before": base}
        cmds = commands(work / "out", ROOT / "sample_bots" / "random_bot.py")
        cpu: dict[tuple[str, str], list[float]] = {}
        for argv in cmds.values():
            for tree in trees.values():
                cpu_of(argv, tree, work)  # warm-up: compiles the modules
        for _ in range(args.repeats):
            for label, argv in cmds.items():
                for version, tree in trees.items():
                    cpu.setdefault((label, version), []).append(cpu_of(argv, tree, work))
        load = os.getloadavg()[0]
        print(
            f"CPU seconds (user + system, with waited-for descendants), median of "
            f"{args.repeats}, alternated; before: {args.base or args.base_commit}; "
            f"load average {load:.1f}"
        )
        print(f"{'command':26s} {'now':>8s} {'before':>8s} {'now/before':>11s} {'saved':>8s}")
        for label in cmds:
            now = statistics.median(cpu[(label, "now")])
            old = statistics.median(cpu[(label, "before")])
            print(f"{label:26s} {now:8.3f} {old:8.3f} {now / old:11.2f} {old - now:8.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
