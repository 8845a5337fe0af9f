"""Answers correctly but burns CPU in a background thread from the first play on
(and takes 0.1 s per play, so that the game lasts long enough to hit the limit)."""

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
        time.sleep(0.1)
    return False


serve("cpu-burner", start)
