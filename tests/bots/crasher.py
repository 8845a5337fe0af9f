"""Exits with code 3 at its fifth play request of each game."""

import sys

from botlib import serve


def crash(msg, counts):
    if msg["type"] == "play" and counts["play"] == 5:
        print("crasher: giving up", file=sys.stderr, flush=True)
        sys.exit(3)
    return False


serve("crasher", crash)
