"""Plays an illegal card on its first play request of each game, and passes a card it does not hold."""

from botlib import reply, serve

ALL = [r + s for s in "CDSH" for r in "23456789TJQKA"]


def illegal(msg, counts):
    if msg["type"] == "play" and counts["play"] == 1:
        wrong = next(c for c in ALL if c not in msg["legal"])
        reply(msg, card=wrong)
        return True
    if msg["type"] == "pass" and counts["pass"] == 1:
        foreign = next(c for c in ALL if c not in msg["hand"])
        reply(msg, cards=[*msg["hand"][:2], foreign])
        return True
    return False


serve("illegal", illegal)
