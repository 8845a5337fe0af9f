"""Exits with code 3 at its play request of hand 2 trick 1 (every game), after a line on stderr."""

import sys

from botlib import serve


def crash(msg, counts):
    if msg["type"] == "play" and msg["hand_number"] == 2 and msg["trick_number"] == 1:
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ZeroDivisionError: division by zero", file=sys.stderr, flush=True)
        sys.exit(3)
    return False


serve("crash_hand2", crash)
