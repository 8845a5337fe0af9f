"""Prints a debug line to stdout (not stderr) before its first play of each game."""

from botlib import serve


def debug(msg, counts):
    if msg["type"] == "play" and counts["play"] == 1:
        print(f"thinking about {msg['legal']}", flush=True)
    return False


serve("debug_print", debug)
