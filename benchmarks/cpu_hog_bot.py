"""A CPU-hogging bot: ``cpu_hog_bot.py N`` starts N children, each in a session
of its own (``setsid``: each gets its own scheduler autogroup), that spin for
good, then answers every request at once with the first legal card."""

from __future__ import annotations

import json
import os
import sys

for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "bye":
        break
    if "id" not in msg:
        continue
    kind = msg["type"]
    if kind == "hello":
        answer: dict[str, object] = {"name": "cpu-hog"}
    elif kind == "pass":
        answer = {"cards": msg["hand"][:3]}
    else:
        answer = {"card": msg["legal"][0]}
    sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
    sys.stdout.flush()
