"""Plays the first legal card after sleeping argv[1] seconds; exits at the end of its input."""

import sys
import time

from botlib import serve

DELAY = float(sys.argv[1])


def slow(msg, counts):
    if msg["type"] == "play":
        time.sleep(DELAY)
    return False


serve("slow-legal", slow)
