"""Plays correctly but ignores SIGTERM and bye: it must be killed with SIGKILL."""

import signal
import time

from botlib import serve

signal.signal(signal.SIGTERM, signal.SIG_IGN)
serve("ignores-term")
while True:
    time.sleep(60)
