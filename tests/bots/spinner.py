"""Answers at once, but a child in a new session burns CPU all the time
(between requests too, when the arena lets it)."""

import os

from botlib import serve

if os.fork() == 0:
    os.setsid()
    while True:
        pass
serve("spinner")
