"""The floor's partner: parses each line and answers a play reply at once."""

import json
import sys


def main() -> None:
    read = sys.stdin.buffer.readline
    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    loads = json.loads
    while line := read():
        msg = loads(line)
        if msg["type"] == "bye":
            return
        write(b'{"type":"play","id":%d,"card":"%s"}\n' % (msg["id"], msg["legal"][0].encode()))
        flush()


if __name__ == "__main__":
    main()
