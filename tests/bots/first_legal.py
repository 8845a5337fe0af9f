"""A minimal bot for tests: plays the first legal card, passes its first three cards."""

import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    kind = msg["type"]
    if kind == "hello":
        reply = {"name": "first-legal"}
    elif kind == "pass":
        reply = {"cards": msg["hand"][:3]}
    elif kind == "play":
        reply = {"card": msg["legal"][0]}
    elif kind == "bye":
        break
    else:
        continue
    print(json.dumps({"type": kind, "id": msg["id"], **reply}), flush=True)
