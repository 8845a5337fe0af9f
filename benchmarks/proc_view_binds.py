"""What the static ``/proc`` view's binds cost bubblewrap (issue 26): the CPU
of a sealed start of ``/bin/true`` with the seal's whole argv against the
same argv without the view's binds (:func:`arena.sandbox.seal.proc_binds`,
which cover the machine's counters: never run bots so), alternated, in one
run. A measure only: it says how much fewer mounts there could save.

    python benchmarks/proc_view_binds.py [--starts N] [--uid UID]

CPU, user and system apart, of a cpuacct control group (v1) the started
process joins before it drops to ``UID`` and execs bubblewrap: both
bubblewrap processes and the program (the inner one is orphaned and reaped
by init, so no ``getrusage`` of this process sees it). Needs root and a
cgroup v1 cpuacct hierarchy at ``/sys/fs/cgroup/cpuacct``. Figures in ms a
start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from arena.sandbox import seal

_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=100, help="starts, half each way")
    parser.add_argument("--uid", type=int, default=3_999_000, help="the uid bubblewrap runs as")
    args = parser.parse_args()
    bwrap = seal.bwrap_path()
    if bwrap is None:
        raise SystemExit("bubblewrap is not installed")
    folder = Path(tempfile.mkdtemp(prefix="proc-view-binds-"))
    group = Path("/sys/fs/cgroup/cpuacct") / f"proc-view-binds-{os.getpid()}"
    group.mkdir()
    try:
        folder.chmod(0o755)
        argv = seal.sealed_argv(
            ["/bin/true"], folder=folder, cwd=seal.ENTRANT_DIR, tmp_mb=1, seccomp=False,
            bwrap=bwrap,
        )  # fmt: skip
        argv = ['exec "$@"' if a == seal.STDIO_SCRIPT else a for a in argv]
        binds = seal.proc_binds(seal.proc_view(0))
        at = argv.index("--proc") + 2
        assert argv[at : at + len(binds)] == binds
        ways = {"seal": argv, "no view binds": argv[:at] + argv[at + len(binds) :]}

        def enter() -> None:
            (group / "cgroup.procs").write_text(str(os.getpid()))
            os.setgroups([])
            os.setresgid(args.uid, args.uid, args.uid)
            os.setresuid(args.uid, args.uid, args.uid)

        def used() -> tuple[int, int]:
            rows = dict(line.split() for line in (group / "cpuacct.stat").read_text().splitlines())
            return int(rows["user"]), int(rows["system"])

        totals = {name: [0, 0, 0] for name in ways}
        names = list(ways)
        for i in range(args.starts):
            name = names[i % 2]
            u0, s0 = used()
            subprocess.run(ways[name], check=True, cwd="/", preexec_fn=enter)
            time.sleep(0.01)  # the inner process (orphaned) may outlive the outer a little
            u1, s1 = used()
            row = totals[name]
            row[0] += u1 - u0
            row[1] += s1 - s0
            row[2] += 1
        print(f"mounts of the view: {binds.count('--ro-bind')}")
        for name, (user, system, count) in totals.items():
            print(
                f"{name:14} {count} starts: user {user * _TICK_MS / count:6.2f}, "
                f"system {system * _TICK_MS / count:6.2f} ms CPU a start"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for _ in range(100):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)


if __name__ == "__main__":
    main()
