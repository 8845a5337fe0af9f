"""Answers its second play request of each game with a line that is not JSON."""

import sys

from botlib import serve


def garbage(msg, counts):
    if msg["type"] == "play" and counts["play"] == 2:
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        return True
    return False


serve("garbage", garbage)
