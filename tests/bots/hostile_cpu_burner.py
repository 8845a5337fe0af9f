"""Answers correctly but burns CPU in a background thread from the first play on
(and takes 0.3 s per play, so that it reaches the limit whatever share of a
core it gets: it burns only while thawed, on its own plays. With 0.1 s a play
and a busy suite beside it, a game of 39 plays could end before its thread had
its 1 s of CPU: the likely cause of one failure of the case in a whole-suite run)."""

import threading
import time

from botlib import serve


def burn():
    while True:
        pass


def start(msg, counts):
    if msg["type"] == "play" and counts["play"] == 1 and threading.active_count() == 1:
        threading.Thread(target=burn, daemon=True).start()
    if msg["type"] == "play":
        time.sleep(0.3)
    return False


serve("cpu-burner", start)
