"""Starts six children, each in a new session, each holding 50 MiB of written
memory (300 MiB for the bot, 50 MiB per process), waits until each has its
memory or is gone, then plays correctly."""

import os
import time

from botlib import serve

readers = []
for _ in range(6):
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        os.setsid()
        blob = bytearray(50 << 20)
        for i in range(0, len(blob), 4096):
            blob[i] = 1
        os.write(w, b"1")
        time.sleep(1000)
        os._exit(0)
    os.close(w)
    readers.append(r)
for r in readers:
    os.read(r, 1)  # b"1", or b"" once the child was killed
serve("children-alloc")
