"""Plays correctly but exits after its first game_end: it cannot play a second game."""

import sys

from botlib import serve


def on_message(msg):
    if msg["type"] == "game_end":
        sys.exit(0)


serve("one-game", on_message=on_message)
