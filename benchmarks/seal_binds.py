"""What bubblewrap's mounts cost per sealed start: the root view
(arena/sandbox/rootview.py, one bind per top-level folder) against the
allowlisted files bound one by one (the baseline, as before the view), in
the same run, starting ``/usr/bin/true`` sealed as bots are (no filter).

    python benchmarks/seal_binds.py [RUNS]

Prints, per way, the mounts in the sandbox and the machine's CPU time per
start in milliseconds (from /proc/stat: bubblewrap's reading of the mount
table after each mount is kernel time that the process's own counters miss),
and the ratio. Run it as root on an otherwise idle machine (default 40 runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena.sandbox import seal


def _busy_ticks() -> int:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def _one_by_one(argv: list[str]) -> list[str]:
    """``argv`` with the root view's binds replaced by one bind per
    allowlisted file and folder and bubblewrap-made links (the baseline)."""
    view = seal._root_view()
    bound, links = seal._readable()
    start = argv.index("--ro-bind")
    end = start + len(view.argv())
    root = [a for p in bound for a in ("--ro-bind", p, p)]
    made = {"/"}
    for where, text in sorted(links.items(), key=lambda item: (item[0].count("/"), item[0])):
        parent = os.path.dirname(where)
        if parent not in made and not any(parent == b or parent.startswith(b + "/") for b in bound):
            root += ["--dir", parent]
            made.add(parent)
        root += ["--symlink", text, where]
    return [*argv[:start], *root, *argv[end:]]


def _cost(argv: list[str], runs: int) -> tuple[float, float]:
    """Machine CPU milliseconds and wall milliseconds per start."""
    ticks = os.sysconf("SC_CLK_TCK")
    before, t0 = _busy_ticks(), time.perf_counter()
    for _ in range(runs):
        subprocess.run(argv, check=True)
    cpu = (_busy_ticks() - before) / ticks / runs * 1000
    return cpu, (time.perf_counter() - t0) / runs * 1000


def main(runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    folder.chmod(0o755)
    base = seal.sealed_argv(["true"], folder=folder, cwd=seal.ENTRANT_DIR, tmp_mb=1, seccomp=False)
    base = [*base[: base.index("--")], "--", "/usr/bin/true"]
    mounts = ["--ro-bind", "--bind", "--dev-bind", "--proc", "--tmpfs"]
    ways = {"root view": base, "one by one": _one_by_one(base)}
    for argv in ways.values():
        _cost(argv, 3)  # warm up
    figures = {name: _cost(argv, runs) for name, argv in ways.items()}
    for name, argv in ways.items():
        cpu, wall = figures[name]
        count = sum(argv.count(m) for m in mounts)
        print(f"{name:>10}: {count:3d} mounts, {cpu:5.1f} ms CPU, {wall:5.1f} ms wall per start")
    ratio = figures["one by one"][0] / figures["root view"][0]
    print(f"one by one / root view: {ratio:.1f}x the CPU ({runs} starts each)")
    folder.rmdir()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
