"""Plays correctly but ignores bye: it only stops at the end of its input."""

import json
import sys

from botlib import default_answer, reply

for line in sys.stdin:
    msg = json.loads(line)
    if "id" in msg:
        reply(msg, **default_answer(msg, "ignores-bye"))
