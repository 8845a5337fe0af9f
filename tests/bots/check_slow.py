"""Answers its play requests of trick 2 after argv[1] seconds; all else at once."""

import sys
import time

from botlib import serve

DELAY = float(sys.argv[1])


def slow(msg, counts):
    if msg["type"] == "play" and msg["trick_number"] == 2:
        time.sleep(DELAY)
    return False


serve("slow", slow)
