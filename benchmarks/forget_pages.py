"""What making the page cache forget costs (issue 22, attack 4), per way of
doing it: the time of one forget over what sealed bots can read, and the
start-up time (spec to ``hello`` reply) of the next sealed ``sample:low``
bot, against a bot started with nothing forgotten, in the same run.

    python benchmarks/forget_pages.py [--runs N] [--modes evict,reread,drop_caches]
        [--roots PATH ...]

``--roots`` defaults to the seal's readable roots
(:meth:`arena.sandbox.launcher.Launcher.readable_roots`). ``drop_caches``
writes ``1`` to ``/proc/sys/vm/drop_caches`` (root only; it empties the
clean page cache of the whole machine, not only of what bots read). Prints
per mode the median over N runs (default 3) of the forget in milliseconds,
the files and MiB it covered, and the next start-up in milliseconds beside
the warm start-up.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import trio

from arena.sandbox.entrants import sample_entrant
from arena.sandbox.forget import forget
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.seats.process import BotProcess
from arena.seats.seat import Request


async def _start(launcher: Launcher) -> float:
    """Seconds from the spec to the hello reply of one sealed sample bot."""
    entrant = sample_entrant("low")
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()
        bot = await BotProcess.start(launcher.spec(entrant), nursery)
        reply = await bot.request(Request("hello", {"protocol": 1}, 30.0))
        t1 = time.perf_counter()
        if reply.message is None:
            raise RuntimeError(f"the bot did not start: {reply.detail}")
        await bot.close()
        return t1 - t0


def _drop_caches() -> None:
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="evict,reread,drop_caches")
    parser.add_argument("--roots", nargs="*", type=Path)
    args = parser.parse_args()
    launcher = Launcher(LaunchOptions(sandbox=True))
    launcher.check([sample_entrant("low")])
    roots = args.roots or launcher.readable_roots()
    print("roots:", " ".join(str(r) for r in roots))
    trio.run(_start, launcher)  # warm up once
    warm = [trio.run(_start, launcher) for _ in range(args.runs)]
    print(f"{'mode':12} {'forget ms':>10} {'files':>8} {'MiB':>8} {'next start ms':>14}")
    print(f"{'(none)':12} {0:>10} {0:>8} {0:>8} {statistics.median(warm) * 1000:>14.0f}")
    for mode in args.modes.split(","):  # evict, reread, drop (drop_caches)
        costs: list[float] = []
        starts: list[float] = []
        files = size = 0
        for _ in range(args.runs):
            t0 = time.perf_counter()
            if mode == "drop_caches":
                _drop_caches()
            else:
                stats = forget(roots, mode)
                files, size = stats.files, stats.bytes
            costs.append(time.perf_counter() - t0)
            starts.append(trio.run(_start, launcher))
        print(
            f"{mode:12} {statistics.median(costs) * 1000:>10.0f} {files:>8} "
            f"{size / 2**20:>8.0f} {statistics.median(starts) * 1000:>14.0f}"
        )
    launcher.close()


if __name__ == "__main__":
    main()
