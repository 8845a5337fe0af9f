"""Plays a card it may not play at trick 3 of hand 1 (when one exists), otherwise plays well."""

from botlib import reply, serve


def wrong(msg, counts):
    if msg["type"] == "play" and msg["hand_number"] == 1 and msg["trick_number"] == 3:
        others = [c for c in msg["hand"] if c not in msg["legal"]]
        if others:
            reply(msg, card=others[0])
            return True
    return False


serve("illegal_trick3", wrong)
