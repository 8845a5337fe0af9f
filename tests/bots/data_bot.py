"""A bot that reads a data file next to itself by a relative path (as many
bots load their tables), then plays the first legal card. It crashes when it
is not started in its own folder."""

import json
import sys

with open("data_bot.txt", encoding="utf-8") as f:  # relative: the bot's folder
    NAME = f.read().strip()

for line in sys.stdin:
    msg = json.loads(line)
    kind = msg["type"]
    if kind == "hello":
        reply = {"name": NAME}
    elif kind == "pass":
        reply = {"cards": msg["hand"][:3]}
    elif kind == "play":
        reply = {"card": msg["legal"][0]}
    elif kind == "bye":
        break
    else:
        continue
    print(json.dumps({"type": kind, "id": msg["id"], **reply}), flush=True)
