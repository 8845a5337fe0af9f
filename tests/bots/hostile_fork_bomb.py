"""Tries to start 5,000 processes, reports on stderr how many it got, then plays."""

import os
import sys
import time

from botlib import serve

made = 0
for _ in range(5000):
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"fork failed after {made}: {exc.strerror}", file=sys.stderr, flush=True)
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    made += 1  # noqa: SIM113
else:
    print(f"made all {made}", file=sys.stderr, flush=True)
serve("fork-bomb")
