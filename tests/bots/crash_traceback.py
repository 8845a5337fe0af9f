"""Plays the first legal card; at its third play request of a game it raises
a ZeroDivisionError six calls deep (a real traceback, after 30 lines of
debug output on stderr), and exits with code 1."""

import sys

from botlib import serve


def deeper(n):
    return deeper(n - 1) if n else 1 / 0


def crash(msg, counts):
    if msg["type"] == "play":
        print(f"debug: play {counts['play']}: legal {msg['legal']}", file=sys.stderr, flush=True)
        if counts["play"] == 3:
            for i in range(30):
                print(f"debug: thinking {i}", file=sys.stderr)
            deeper(5)
    return False


serve("crash_traceback", crash)
