"""Plays a random legal card, seeded from game_start's seed (deterministic for a seed)."""

import random

from botlib import reply, serve

rng = random.Random()


def seed(msg):
    if msg["type"] == "game_start":
        rng.seed(msg["seed"])


def choose(msg, counts):
    if msg["type"] == "play":
        reply(msg, card=rng.choice(msg["legal"]))
        return True
    if msg["type"] == "pass":
        reply(msg, cards=rng.sample(msg["hand"], 3))
        return True
    return False


serve("random-legal", choose, seed)
