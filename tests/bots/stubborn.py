"""Plays the first legal card after sleeping argv[1] seconds; ignores SIGTERM, and
stays alive after its input closes (so it outlives an arena killed with SIGKILL)."""

import contextlib
import signal
import sys
import time

from botlib import serve

DELAY = float(sys.argv[1])
signal.signal(signal.SIGTERM, signal.SIG_IGN)


def slow(msg, counts):
    if msg["type"] == "play":
        time.sleep(DELAY)
    return False


with contextlib.suppress(OSError):  # the arena is gone (broken pipe): linger anyway
    serve("stubborn", slow)
while True:
    time.sleep(60)
