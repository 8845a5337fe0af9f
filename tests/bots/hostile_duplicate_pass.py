"""Passes one card three times."""

from botlib import reply, serve


def dup(msg, counts):
    if msg["type"] == "pass":
        reply(msg, cards=[msg["hand"][0]] * 3)
        return True
    return False


serve("duplicate-pass", dup)
