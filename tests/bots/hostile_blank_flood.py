"""Shakes hands, then answers every pass or play request with blank lines,
64 KiB at a time, for ever: lines the arena skips, written faster than it
reads them, so its output is never empty. Only the deadline can end the request."""

import sys

from botlib import serve

BLANK = b"\n" * 65536


def flood(msg, counts):
    if msg["type"] == "hello":
        return False
    while True:
        sys.stdout.buffer.write(BLANK)
        sys.stdout.flush()


serve("blank-flood", flood)
