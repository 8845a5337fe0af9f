"""Tries to allocate 8 GiB on its first play request of each game."""

from botlib import serve


def hog(msg, counts):
    if msg["type"] == "play" and counts["play"] == 1:
        blob = bytearray(8 << 30)
        blob[-1] = 1
    return False


serve("big-alloc", hog)
