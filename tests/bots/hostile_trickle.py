"""Writes every pass and play reply one byte at a time, finishing well past the deadline."""

import json
import sys
import time

from botlib import default_answer, serve


def trickle(msg, counts):
    if msg["type"] == "hello":
        return False
    line = json.dumps({"type": msg["type"], "id": msg["id"], **default_answer(msg, "x")}) + "\n"
    pause = 2.0 * msg["time_ms"] / 1000 / len(line)
    for ch in line:
        sys.stdout.write(ch)
        sys.stdout.flush()
        time.sleep(pause)
    return True


serve("trickle", trickle)
