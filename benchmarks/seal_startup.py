"""What the seal costs when a bot process starts: the time from asking for a
process of ``sample:low`` to its ``hello`` reply, and the time to close it,
sealed and with ``--no-sandbox``, through the arena's own launcher.

    python benchmarks/seal_startup.py [RUNS] [SAMPLE]

Prints, per mode, the median and the slowest of RUNS starts (default 20), in
milliseconds, of the sample bot SAMPLE (default ``low``; ``kit`` is the
bot-kit sample). The start includes leasing a uid when the arena runs as root.
"""

from __future__ import annotations

import statistics
import sys
import time

import trio

from arena.sandbox.entrants import sample_entrant
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.seats.process import BotProcess
from arena.seats.seat import Request

SAMPLE = sys.argv[2] if len(sys.argv) > 2 else "low"


async def _once(launcher: Launcher) -> tuple[float, float]:
    """Seconds from the spec to the hello reply, and to close the process."""
    entrant = sample_entrant(SAMPLE)
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()
        bot = await BotProcess.start(launcher.spec(entrant), nursery)
        reply = await bot.request(Request("hello", {"protocol": 1}, 10.0))
        t1 = time.perf_counter()
        if reply.message is None:
            raise RuntimeError(f"the bot did not start: {reply.detail}")
        await bot.close()
        return t1 - t0, time.perf_counter() - t1


async def _main(runs: int) -> None:
    for sealed in (False, True):
        launcher = Launcher(LaunchOptions(sandbox=sealed))
        launcher.check([sample_entrant(SAMPLE)])
        await _once(launcher)  # warm up: file caches, the uid pool
        starts, closes = zip(*[await _once(launcher) for _ in range(runs)], strict=True)
        launcher.close()
        print(
            f"{'sealed' if sealed else '--no-sandbox':>12}: start to hello "
            f"median {statistics.median(starts) * 1000:.0f} ms, slowest "
            f"{max(starts) * 1000:.0f} ms; close median {statistics.median(closes) * 1000:.0f} ms"
            f" ({runs} runs of sample:{SAMPLE})"
        )


if __name__ == "__main__":
    trio.run(_main, int(sys.argv[1]) if len(sys.argv) > 1 else 20)
