"""Tries to fill /tmp and /dev/shm (argv[1] MiB each, 1 MiB at a time), which
under the seal are private tmpfs mounts of --tmp-size MiB: without that bound
a sealed bot grew the machine's shared memory at will. Writes on stderr one
line ``FILLED {"/tmp": bytes written, "/dev/shm": bytes written}``, removes
its files, then plays the first legal card."""

import contextlib
import json
import os
import sys

from botlib import serve

WANTED = int(sys.argv[1]) * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)
filled = {}
for folder in ("/tmp", "/dev/shm"):
    path = os.path.join(folder, f"hearts-fill-{os.getpid()}")
    written = 0
    try:
        with open(path, "wb", buffering=0) as f:
            while written < WANTED:
                written += f.write(CHUNK)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.remove(path)
    filled[folder] = written
print("FILLED " + json.dumps(filled), file=sys.stderr, flush=True)
serve("hostile_fills_tmp")
