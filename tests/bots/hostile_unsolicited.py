"""Sends three unsolicited lines before every reply (tolerated), and forty before
its second play reply of each game (too many: malformed)."""

import json
import sys

from botlib import serve


def chatter(msg, counts):
    n = 40 if msg["type"] == "play" and counts["play"] == 2 else 3
    for i in range(n):
        sys.stdout.write(json.dumps({"type": "log", "note": f"thinking {i}"}) + "\n")
    sys.stdout.flush()
    return False


serve("unsolicited", chatter)
