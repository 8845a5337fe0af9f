#!/usr/bin/env python3
"""random_bot: the simplest possible hearts-arena bot.

It plays a uniformly random card of ``legal`` and passes three random cards
of its hand. Its random numbers come from one generator that is re-seeded
with the ``seed`` of every ``game_start``, so a game played with the same
seed and the same deal is played the same way again.

The protocol in three lines (see protocol/README.md for the whole story):
  * the referee writes one JSON object per line on our standard input;
  * a message with an integer ``id`` is a request: answer it with ONE line
    ``{"type": <same type>, "id": <same id>, ...}`` and flush;
  * a message without ``id`` is a notification: read it, never answer it.

Only the Python standard library is used; copy the file and change
``choose_pass`` / ``choose_play`` to write your own bot.
"""

from __future__ import annotations

import json
import random
import sys

NAME = "random"

# The bot's only state. It lives at module level so that choose_pass and
# choose_play can stay one-argument functions; handle() re-seeds it when a
# game starts. (A process may play several games in a row.)
RNG = random.Random(0)


def new_game(seed: object) -> None:
    """Re-seed the generator for a new game (called on ``game_start``)."""
    # random.Random accepts int, str and bytes seeds deterministically.
    RNG.seed(seed if isinstance(seed, (int, str, bytes)) else 0)


def choose_pass(msg: dict) -> list[str]:
    """Three distinct random cards of ``msg["hand"]``."""
    return RNG.sample(msg["hand"], 3)


def choose_play(msg: dict) -> str:
    """A random card of ``msg["legal"]`` (the referee lists every allowed card)."""
    return RNG.choice(msg["legal"])


def handle(msg: dict) -> dict | None:
    """React to one message from the referee; return the reply, or None."""
    kind = msg.get("type")
    if kind == "game_start":
        new_game(msg.get("seed"))
        return None
    if "id" not in msg:
        return None  # deal, passed, trick, hand_end, game_end, forfeit, ...: no answer
    if kind == "hello":
        return {
            "type": "hello",
            "id": msg["id"],
            "name": NAME,
            "author": "hearts-arena samples",
            "version": "1",
        }
    if kind == "pass":
        try:
            cards = choose_pass(msg)
        except Exception as exc:  # never die on a surprise: fall back to a valid move
            print(f"{NAME}: choose_pass failed: {exc!r}", file=sys.stderr)
            cards = msg["hand"][:3]
        return {"type": "pass", "id": msg["id"], "cards": cards}
    if kind == "play":
        try:
            card = choose_play(msg)
        except Exception as exc:
            print(f"{NAME}: choose_play failed: {exc!r}", file=sys.stderr)
            card = msg["legal"][0]
        return {"type": "play", "id": msg["id"], "card": card}
    return None  # a request type we do not know: stay silent


def main() -> None:
    while True:
        line = sys.stdin.readline()
        if not line:
            break  # end of input: the referee has gone
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # not JSON: ignore it
        if not isinstance(msg, dict):
            continue
        if msg.get("type") == "bye":
            break
        try:
            reply = handle(msg)
        except Exception as exc:  # e.g. a request missing "hand": log it, keep running
            print(f"{NAME}: cannot handle {msg.get('type')!r}: {exc!r}", file=sys.stderr)
            continue
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()  # pipes are buffered: without this the referee waits in vain


if __name__ == "__main__":
    main()
