"""A bot that needs a fixed share of its budget in CPU for every decision.

``cpu_bound_bot.py FRACTION [STARTUP_SECONDS]``: before answering ``hello`` it
burns ``STARTUP_SECONDS`` of CPU (default 0); for each ``pass`` and ``play``
it burns ``FRACTION`` of the request's ``time_ms`` in CPU (its own process
time, so it needs that much of a core, however the machine shares them), then
plays the first legal card (the first three cards as a pass). Before each
answer it writes ``FAIR <cpu seconds> <wall seconds> <decisions>`` to stderr,
counted from the start of the game: the CPU it got while thinking, and the
wall time that took.
"""

from __future__ import annotations

import json
import sys
import time


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def main() -> None:
    fraction = float(sys.argv[1])
    startup = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    cpu = wall = 0.0
    decisions = 0
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "bye":
            return
        if kind == "game_start":
            cpu = wall = 0.0
            decisions = 0
        if "id" not in msg:
            continue
        if kind == "hello":
            burn(startup)
            answer: dict[str, object] = {"name": "cpu-bound"}
        else:
            c0, w0 = time.process_time(), time.perf_counter()
            burn(fraction * msg["time_ms"] / 1000)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            decisions += 1
            # Before the answer: a frozen bot could not write it after.
            print(f"FAIR {cpu:.4f} {wall:.4f} {decisions}", file=sys.stderr, flush=True)
            answer = {"cards": msg["hand"][:3]} if kind == "pass" else {"card": msg["legal"][0]}
        sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
