"""Answers hello, then closes its standard output and exits 0.2 s later
with code 5, by then frozen off move (the arena freezes a bot once it has
answered): its exit, not a closed pipe, must be the reason recorded. The
arena thaws a bot whose pipe ended before it waits for its exit
(arena.seats.process); before that, a bot killed just after a reply (over
its CPU limit, by a thread it left running) stayed frozen half dead, and
was recorded as having closed its output while still running."""

import json
import os
import sys
import time

msg = json.loads(sys.stdin.readline())
print(json.dumps({"type": "hello", "id": msg["id"], "name": "slow-exit"}), flush=True)
os.close(1)
time.sleep(0.2)
sys.exit(5)
