"""Answers hello, then closes its standard output and stays alive, reading."""

import json
import os
import sys

msg = json.loads(sys.stdin.readline())
print(json.dumps({"type": "hello", "id": msg["id"], "name": "closes-stdout"}), flush=True)
os.close(1)
for _line in sys.stdin:
    pass
