"""What bubblewrap's mounts cost per sealed start: the root view
(arena/sandbox/rootview.py, one bind per top-level folder) against the
allowlisted files bound one by one (the baseline, as before the view), in
the same run, starting ``/usr/bin/true`` sealed as bots are (no filter).

    python benchmarks/seal_binds.py [RUNS] [--tmpfs-tmp]

``--tmpfs-tmp``: the temporary folder is a fresh folder of ``/dev/shm`` (a
tmpfs, as ``/tmp`` is on Debian 13, Fedora and Arch), so the root view is
made in a folder of ``rootview.VIEW_PARENTS`` on the files' file system;
"one by one" is then what such a machine's arena did before (every hard
link into the tmpfs failed and each file was bound).

Prints where the view was made, per way, the mounts in the sandbox and the machine's CPU time per
start in milliseconds (from /proc/stat: bubblewrap's reading of the mount
table after each mount is kernel time that the process's own counters miss),
and the ratio. Run it as root on an otherwise idle machine (default 40 runs).
"""

from __future__ import annotations

import os
import shutil
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


def main(runs: int, tmpfs_tmp: bool = False) -> None:
    if tmpfs_tmp:
        tmp = tempfile.mkdtemp(prefix="arena-bench-tmp-", dir="/dev/shm")
        os.chmod(tmp, 0o1777)
        tempfile.tempdir = tmp
    folder = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    folder.chmod(0o755)
    base = seal.sealed_argv(["true"], folder=folder, cwd=seal.ENTRANT_DIR, tmp_mb=1, seccomp=False)
    base = [*base[: base.index("--")], "--", "/usr/bin/true"]
    mounts = ["--ro-bind", "--bind", "--dev-bind", "--proc", "--tmpfs"]
    print(
        f"temporary folder {tempfile.gettempdir()}, root view in {seal._root_view().folder.parent}"
    )
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
    if tmpfs_tmp:
        shutil.rmtree(tempfile.gettempdir(), ignore_errors=True)


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    main(int(numbers[0]) if numbers else 40, "--tmpfs-tmp" in sys.argv[1:])
