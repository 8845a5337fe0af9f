"""On its second play request of each game, answers with the kind of bad line
named in argv[1]: not-object, not-utf8, wrong-type, wrong-id, missing-id, bad-card,
deep (arrays nested 20,000 deep), big-number (5,000 digits), nan, float-id, string-id."""

import json
import sys

from botlib import serve

KIND = sys.argv[1]


def bad(msg, counts):
    if msg["type"] != "play" or counts["play"] != 2:
        return False
    card = msg["legal"][0]
    if KIND == "not-object":
        out = json.dumps([msg["id"], card]).encode()
    elif KIND == "not-utf8":
        out = b'{"type": "play", "id": ' + str(msg["id"]).encode() + b', "card": "\xff\xfe"}'
    elif KIND == "wrong-type":
        out = json.dumps({"type": "pass", "id": msg["id"], "card": card}).encode()
    elif KIND == "wrong-id":
        out = json.dumps({"type": "play", "id": msg["id"] + 1000, "card": card}).encode()
    elif KIND == "missing-id":
        out = json.dumps({"type": "play", "card": card}).encode()
    elif KIND == "bad-card":
        out = json.dumps({"type": "play", "id": msg["id"], "card": "10H"}).encode()
    elif KIND == "deep":
        out = b"[" * 20_000 + b"]" * 20_000
    elif KIND == "big-number":
        out = b'{"type": "play", "id": ' + str(msg["id"]).encode() + b', "n": ' + b"9" * 5000 + b"}"
    elif KIND == "nan":
        out = b'{"type": "play", "id": %d, "card": "%s", "x": NaN}' % (msg["id"], card.encode())
    elif KIND == "float-id":
        out = b'{"type": "play", "id": %d.0, "card": "%s"}' % (msg["id"], card.encode())
    elif KIND == "string-id":
        out = json.dumps({"type": "play", "id": str(msg["id"]), "card": card}).encode()
    else:
        raise SystemExit(f"unknown kind {KIND}")
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.flush()
    return True


serve("bad-lines", bad)
