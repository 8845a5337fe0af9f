"""Writes the ten as "10" (not "T") when it plays one: a reply that fails the schema."""

from botlib import reply, serve


def ten(msg, counts):
    tens = [c for c in msg.get("legal", []) if c[0] == "T"]
    if msg["type"] == "play" and tens:
        reply(msg, card="10" + tens[0][1])
        return True
    return False


serve("ten", ten)
