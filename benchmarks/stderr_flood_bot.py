"""A bot that spends a fixed share of each decision's budget, flooding its
stderr or not.

``stderr_flood_bot.py flood|quiet FRACTION``: for each ``pass`` and ``play``
it spends ``FRACTION`` of the request's ``time_ms`` (wall time) either
writing 64 KiB chunks to stderr as fast as it can (``flood``) or in a busy
loop (``quiet``), then plays the first legal card (the first three cards as
a pass), in time. The same bot either way but for the flood: the pair that
``benchmarks/stderr_flood.py`` compares.
"""

from __future__ import annotations

import json
import os
import sys
import time

CHUNK = b"noise " * 10922 + b"\n"  # 64 KiB


def main() -> None:
    flood = sys.argv[1] == "flood"
    fraction = float(sys.argv[2])
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "bye":
            return
        if "id" not in msg:
            continue
        if kind == "hello":
            answer: dict[str, object] = {"name": f"stderr-{sys.argv[1]}"}
        else:
            end = time.perf_counter() + fraction * msg["time_ms"] / 1000
            while time.perf_counter() < end:
                if flood:
                    os.write(2, CHUNK)
            answer = {"cards": msg["hand"][:3]} if kind == "pass" else {"card": msg["legal"][0]}
        sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
