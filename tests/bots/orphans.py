"""Plays the first legal card; at start it leaves five orphans: each a
grandchild whose parent (the bot's child) exits at once, so that the kernel
re-parents it to PID 1 of the pid namespace, which alone can reap it."""

import json
import os
import sys

for _ in range(5):
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            os._exit(0)  # the grandchild: exits, orphaned
        os._exit(0)  # the child: exits without waiting for it
    os.waitpid(child, 0)

for line in sys.stdin:
    msg = json.loads(line)
    kind = msg["type"]
    if kind == "hello":
        reply = {"name": "orphans"}
    elif kind == "pass":
        reply = {"cards": msg["hand"][:3]}
    elif kind == "play":
        reply = {"card": msg["legal"][0]}
    elif kind == "bye":
        break
    else:
        continue
    print(json.dumps({"type": kind, "id": msg["id"], **reply}), flush=True)
