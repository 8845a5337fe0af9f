"""Shakes hands, then never reads its input again (sleeps)."""

import json
import sys
import time

msg = json.loads(sys.stdin.readline())
print(json.dumps({"type": "hello", "id": msg["id"], "name": "stops-reading"}), flush=True)
while True:
    time.sleep(60)
