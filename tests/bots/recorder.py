"""A well-behaved bot that appends every message it receives to the file named in argv[1]."""

import json
import os
import sys

from botlib import serve

log = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115


def record(msg):
    log.write(json.dumps({"pid": os.getpid(), "msg": msg}) + "\n")
    log.flush()


serve("recorder", on_message=record)
