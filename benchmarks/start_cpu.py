"""The CPU of one sealed bot start and stop, broken down: the uid lease
(:func:`arena.sandbox.isolation.lease_uid`), the control group's creation
(:meth:`arena.sandbox.cgroups.RunGroups.create`), the rest of the arena's
own work (the spec, the start, the stop and the release), the process tree
below it (the spawn server, bubblewrap and the bot), and one forget of what
sealed bots can read (:func:`arena.sandbox.forget.forget`, ``evict`` mode)
as a server table does it: over the seal's roots plus a fresh copy folder.

    python benchmarks/start_cpu.py [--starts N] [--base DIR] [--rounds R]

Each start is ``Launcher.spec`` of a sealed entrant whose program is
``/usr/bin/true``, :meth:`ConfinedProcess.start`, its exit, ``kill_tree``,
the reaping and :meth:`ConfinedProcess.finish` (which releases the spec:
group removed, lease given back). CPU, not wall time: the arena's parts
are the calling thread's CPU (``time.thread_time``) around each function,
the whole is this process's user + system (``getrusage(RUSAGE_SELF)``, its
threads included) plus the tree's: the spawn server's own user + system
(``/proc/PID/stat``) and each bot's control group's CPU
(:meth:`ConfinedProcess.cpu_ns`: both bubblewrap processes, the shell and
the program; bubblewrap's inner process is orphaned and reaped by init, so
no ``getrusage`` of the arena's sees it). Figures in ms a start.

``--base DIR`` (a checkout of another tree, e.g. ``git worktree add
/tmp/base main``) runs the same measure with that tree's ``arena`` package
in a child process, alternated with this tree's ``--rounds`` times (default
3), and prints the ratio this / base of each part: both in the same run, on
the same machine load. Needs root (uids and control groups) and bubblewrap.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
PARTS = ("lease", "cgroup", "arena_other", "tree", "total", "forget")


def _own_ms(pid: int) -> float:
    """utime + stime of ``pid`` (not its children's), in ms (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:13]) * 1000 / _TICK


def _reaped(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def _rusage_ms(who: int) -> float:
    ru = resource.getrusage(who)
    return (ru.ru_utime + ru.ru_stime) * 1000


def _measure(starts: int) -> dict[str, float]:
    """Run ``starts`` sealed starts in this process; ms of CPU a start per part."""
    import trio

    from arena.sandbox import cgroups, isolation, spawn
    from arena.sandbox.entrants import parse_entrant
    from arena.sandbox.forget import forget
    from arena.sandbox.launcher import Launcher, LaunchOptions
    from arena.sandbox.spawn import ConfinedProcess

    spent = {"lease": 0.0, "cgroup": 0.0}
    group_ns = [0]  # CPU of the bots' control groups: bubblewrap (both), sh, the program

    def timed(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += (time.thread_time() - t0) * 1000

        return wrapper

    isolation.lease_uid = timed("lease", isolation.lease_uid)  # type: ignore[assignment]
    cgroups.RunGroups.create = timed("cgroup", cgroups.RunGroups.create)  # type: ignore[method-assign]

    folder = Path(tempfile.mkdtemp(prefix="start-cpu-"))
    folder.chmod(0o755)
    shutil.copy("/usr/bin/true", folder / "true")
    entrant = parse_entrant(f"true={folder / 'true'}")

    async def one(launcher: Launcher) -> None:
        spec = launcher.spec(entrant)
        proc = await ConfinedProcess.start(spec)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(proc.watch_exit)
            await proc.exited.wait()
        assert proc.exit_status() == "exit code 0", proc.exit_status()
        proc.wind_down()
        await proc.kill_tree()
        for _ in range(10_000):  # the server reaps it on request: until it is gone
            if _reaped(proc.pid):
                break
            await trio.sleep(0.001)
        used = proc.cpu_ns()
        if used is None:
            raise SystemExit("no CPU accounting of the bots' control groups here")
        group_ns[0] += used
        await proc.finish()

    async def run() -> dict[str, float]:
        launcher = Launcher(LaunchOptions(sandbox=True))
        try:
            launcher.check([entrant])
            if not launcher.sealed:
                raise SystemExit("bots are not sealed here (bubblewrap, root)")
            await one(launcher)  # the spawn server started, caches warm
            server = spawn._server
            spid = server.pid if server is not None else 0
            for k in spent:
                spent[k] = 0.0
            group_ns[0] = 0
            self0, srv0 = _rusage_ms(resource.RUSAGE_SELF), _own_ms(spid)
            for _ in range(starts):
                await one(launcher)
            self_ms = _rusage_ms(resource.RUSAGE_SELF) - self0
            tree = group_ns[0] / 1e6 + (_own_ms(spid) - srv0 if spid else 0)
            # One forget of a server table: the roots, with a copy folder the
            # process has not seen (a new table's copies), each time.
            roots = launcher.readable_roots()
            forgets = 5
            t0 = time.process_time()
            for i in range(forgets):
                fresh = folder / f"copy{i}"
                fresh.mkdir()
                (fresh / "bot.py").write_text("print()\n")
                forget([*roots, fresh], mode="evict")
            forget_ms = (time.process_time() - t0) * 1000 / forgets
        finally:
            launcher.close()
        out = {k: v / starts for k, v in spent.items()}
        out["arena_other"] = self_ms / starts - out["lease"] - out["cgroup"]
        out["tree"] = tree / starts
        out["total"] = (self_ms + tree) / starts
        out["forget"] = forget_ms
        return out

    try:
        return trio.run(run)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _child(tree: Path | None, starts: int) -> dict[str, float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--starts", str(starts), "--json"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--base", type=Path, help="another tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        import arena

        print(f"arena from {Path(arena.__file__).parent}", file=sys.stderr)
        print(json.dumps(_measure(args.starts)))
        return
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.base is not None:
        trees.append(("base", args.base.resolve()))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        for name, tree in trees if r % 2 == 0 else trees[::-1]:
            runs[name].append(_child(tree, args.starts))
    print(f"ms of CPU a sealed start and stop ({args.starts} starts, median of {args.rounds} runs)")
    print(
        f"{'part':12}"
        + "".join(f"{name:>10}" for name, _ in trees)
        + ("     ratio" if args.base else "")
    )
    for part in PARTS:
        vals = [statistics.median(run[part] for run in runs[name]) for name, _ in trees]
        line = f"{part:12}" + "".join(f"{v:10.2f}" for v in vals)
        if args.base and vals[1] > 0:
            line += f"{vals[0] / vals[1]:10.2f}"
        print(line)
    print("(forget: ms of CPU of one forget over the roots and a new copy folder)")


if __name__ == "__main__":
    main()
