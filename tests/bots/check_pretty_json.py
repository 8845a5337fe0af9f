"""Answers every play in pretty-printed JSON (an object over several lines)."""

import json
import sys

from botlib import default_answer, serve


def pretty(msg, counts):
    if msg["type"] != "play":
        return False
    answer = {"type": "play", "id": msg["id"], **default_answer(msg, "pretty")}
    sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    sys.stdout.flush()
    return True


serve("pretty", pretty)
