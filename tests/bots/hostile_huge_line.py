"""On its first play request of each game, writes 200 MB with no newline, then a newline."""

import sys

from botlib import serve

CHUNK = b"x" * (1 << 20)


def flood(msg, counts):
    if msg["type"] == "play" and counts["play"] == 1:
        for _ in range(200):
            sys.stdout.buffer.write(CHUNK)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
        return True
    return False


serve("huge-line", flood)
