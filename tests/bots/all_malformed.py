"""Answers every play request with a line that is not JSON (the referee plays all its cards)."""

import sys

from botlib import serve


def garbage(msg, counts):
    if msg["type"] == "play":
        sys.stdout.write("card please\n")
        sys.stdout.flush()
        return True
    return False


serve("all_malformed", garbage)
