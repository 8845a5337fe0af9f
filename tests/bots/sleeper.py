"""Answers its third play request of each game after the deadline; then plays on normally."""

import time

from botlib import serve


def late(msg, counts):
    if msg["type"] == "play" and counts["play"] == 3:
        time.sleep(1.3 * msg["time_ms"] / 1000)  # the stale reply goes out afterwards
    return False


serve("sleeper", late)
