"""What a bot start costs a big arena process: through the spawn server
(arena/sandbox/spawnserver.py, which forks itself, a few MiB) against the
arena's own spawner thread (which forks the arena, as before the server), in
one run, alternated, from a parent holding a large heap of Python objects
(as a test worker or a long tournament's arena does).

    python benchmarks/spawn_cost.py [--starts N] [--heap-mb MB] [--no-sandbox]

Each start is a whole bot's life through the arena's code: a launch spec
made beforehand (not counted), :meth:`ConfinedProcess.start`, the exit of
the program (``/usr/bin/true``, sealed in bubblewrap unless bubblewrap is
missing or ``--no-sandbox``), ``kill_tree`` and its reaping. Prints, per
way, the CPU per start in milliseconds, two ways:

* the machine's (``/proc/stat``: all but idle and iowait, so every process,
  the kernel's work in both the forking parent and its child included; other
  load on the machine is counted too, and averages out over the
  alternation only on an otherwise idle machine);
* the process tree's (user + system of this process, of the spawn server,
  and of every process either waited for: the bots and their bubblewrap,
  from ``/proc/PID/stat``'s utime, stime, cutime and cstime), which other
  load does not touch;

and the ratio server / thread of each. Default: 200 starts (100 each), a
400 MB heap.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from arena.sandbox import spawn
from arena.sandbox.entrants import parse_entrant
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.sandbox.spawn import ConfinedProcess

_TICK = os.sysconf("SC_CLK_TCK")


def _busy_ticks() -> int:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def _tree_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of ``pid`` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(x) for x in fields[11:15])


def _reaped(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


async def _one(launcher: Launcher, entrant: object, served: bool) -> tuple[int, int]:
    """One start, exit and reap; (machine ticks, process tree ticks)."""
    spec = launcher.spec(entrant)  # type: ignore[arg-type]
    spawn._use_server = lambda: served  # type: ignore[assignment]
    server = spawn._server
    tree0 = _tree_ticks(os.getpid()) + (_tree_ticks(server.pid) if server else 0)
    busy0 = _busy_ticks()
    proc = await ConfinedProcess.start(spec)
    assert (proc.child.server is not None) == served
    server = proc.child.server or server
    async with trio.open_nursery() as nursery:
        nursery.start_soon(proc.watch_exit)
        await proc.exited.wait()
    assert proc.exit_status() == "exit code 0", proc.exit_status()
    proc.wind_down()  # its core token back
    await proc.kill_tree()
    for _ in range(10_000):  # the server reaps it on request: until it is gone
        if _reaped(proc.pid):
            break
        await trio.sleep(0.001)
    busy = _busy_ticks() - busy0
    tree = _tree_ticks(os.getpid()) + (_tree_ticks(server.pid) if server else 0) - tree0
    await proc.finish()
    return busy, tree


async def _main(starts: int, sandbox: bool | None, folder: Path) -> None:
    entrant = parse_entrant(f"true={folder / 'true'}")
    launcher = Launcher(LaunchOptions(sandbox=sandbox))
    try:
        launcher.check([entrant])
        print(f"sealed: {launcher.sealed}", flush=True)
        await _one(launcher, entrant, True)  # start the server, warm both ways
        await _one(launcher, entrant, False)
        results: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
        for i in range(starts):
            served = i % 2 == 0
            results[served].append(await _one(launcher, entrant, served))
    finally:
        launcher.close()
    ms = 1000 / _TICK
    per: dict[bool, tuple[float, float]] = {}
    for served, label in ((False, "spawner thread"), (True, "spawn server")):
        rows = results[served]
        machine = statistics.fmean(r[0] for r in rows) * ms
        tree = statistics.fmean(r[1] for r in rows) * ms
        per[served] = (machine, tree)
        print(
            f"{label:15} {len(rows)} starts: machine {machine:7.2f} ms CPU a start, "
            f"process tree {tree:7.2f} ms"
        )
    print(
        f"ratio server / thread: machine {per[True][0] / per[False][0]:.2f}, "
        f"process tree {per[True][1] / per[False][1]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=200, help="bot starts (half each way)")
    parser.add_argument("--heap-mb", type=int, default=400, help="MB of Python objects held")
    parser.add_argument("--no-sandbox", action="store_true", help="start bots unsealed")
    args = parser.parse_args()
    began = time.process_time()
    # 1 KiB bytes objects, each its own allocation: a heap of many small
    # objects and page-table entries, as a test worker holds.
    heap = [bytes(1000) + i.to_bytes(8, "little") for i in range(args.heap_mb * 1000)]
    print(
        f"heap: {len(heap)} objects, {args.heap_mb} MB ({time.process_time() - began:.1f} s CPU)",
        flush=True,
    )
    folder = Path(tempfile.mkdtemp(prefix="spawn-cost-"))
    try:
        folder.chmod(0o755)
        shutil.copy("/usr/bin/true", folder / "true")
        trio.run(_main, args.starts, False if args.no_sandbox else None, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    del heap
    sys.stdout.flush()


if __name__ == "__main__":
    main()
