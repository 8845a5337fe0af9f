"""Reports on stderr, as one JSON line, what it can do where it runs: write its
own folder, write HOME, reach a TCP port (argv[1]) on 127.0.0.1, see other
processes, and whether it is root. Then plays correctly."""

import json
import os
import socket
import sys

from botlib import serve


def can_write(folder):
    path = os.path.join(folder, f"probe-{os.getpid()}.tmp")
    try:
        with open(path, "w") as f:
            f.write("x")
        os.remove(path)
        return True
    except OSError:
        return False


def can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


report = {
    "uid": os.getuid(),
    "write_cwd": can_write(os.getcwd()),
    "write_home": can_write(os.environ["HOME"]),
    "home_private": os.stat(os.environ["HOME"]).st_mode & 0o077 == 0,
    "home_owned": os.stat(os.environ["HOME"]).st_uid == os.getuid(),
    "connect": can_connect(int(sys.argv[1])),
    "processes_visible": sum(1 for p in os.listdir("/proc") if p.isdigit()),
    "env": sorted(os.environ),
}
print("PROBE " + json.dumps(report), file=sys.stderr, flush=True)
serve("probe")
