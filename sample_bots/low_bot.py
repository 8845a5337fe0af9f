#!/usr/bin/env python3
"""low_bot: always plays its lowest legal card, passes its three highest.

"Lowest" means lowest by RANK (2 < 3 < ... < K < A), whatever the suit.
When several legal cards share the lowest rank (say 4C and 4H while void in
the led suit), the one listed first in ``legal`` wins the tie; the referee
sorts ``legal`` clubs, diamonds, spades, hearts, so the club goes first.
This is NOT the same as ``legal[0]``, which would be the first card in suit
order (a 9C before a 2D).

The pass is the three highest cards by rank, ties going to hearts first,
then spades, diamonds, clubs (the same cards the referee's default pass
chooses).

No memory, no randomness: the same request always gets the same answer.
Only the Python standard library is used. See random_bot.py for the
protocol basics.
"""

from __future__ import annotations

import json
import sys

NAME = "low"
RANKS = "23456789TJQKA"  # a card is rank + suit, e.g. "TD" is the ten of diamonds
SUITS = "CDSH"  # the referee's sort order of suits


def rank(card: str) -> int:
    """0 for a two ... 12 for an ace."""
    return RANKS.index(card[0])


def choose_pass(msg: dict) -> list[str]:
    """The three highest cards by rank; equal ranks: hearts, spades, diamonds, clubs."""
    ordered = sorted(msg["hand"], key=lambda c: (rank(c), SUITS.index(c[1])), reverse=True)
    return ordered[:3]


def choose_play(msg: dict) -> str:
    """The lowest-ranked legal card (first in ``legal`` order among equal ranks)."""
    # min() returns the first of several equal minima, hence the documented tie rule.
    return min(msg["legal"], key=rank)


def handle(msg: dict) -> dict | None:
    """React to one message from the referee; return the reply, or None."""
    kind = msg.get("type")
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
