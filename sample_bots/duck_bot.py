#!/usr/bin/env python3
"""duck_bot: tries never to win a trick, one request at a time.

  * Following suit: play the highest card that still LOSES to the card
    currently winning the trick ("ducking" under it). A high card that
    loses now cannot win a painful trick later. If every card would win,
    play the lowest.
  * Leading: play the lowest card (by rank) of ``legal``.
  * Void in the led suit (any card goes): dump the most dangerous card:
    the queen of spades, else the highest heart, else the highest card.
  * Pass: the queen, king and ace of spades if held, then the highest cards.

No memory, no randomness. Only the Python standard library is used. See
random_bot.py for the protocol basics.
"""

from __future__ import annotations

import json
import sys

NAME = "duck"
RANKS = "23456789TJQKA"  # a card is rank + suit, e.g. "TD" is the ten of diamonds
SUITS = "CDSH"  # the referee's sort order of suits


def rank(card: str) -> int:
    """0 for a two ... 12 for an ace."""
    return RANKS.index(card[0])


def suit(card: str) -> str:
    return card[1]


def choose_pass(msg: dict) -> list[str]:
    """QS, AS, KS first (if held), then the highest cards by rank."""

    def danger(card: str) -> tuple[int, int]:
        first = 1 if card in ("QS", "AS", "KS") else 0
        return (first, rank(card))

    return sorted(msg["hand"], key=danger, reverse=True)[:3]


def choose_play(msg: dict) -> str:
    legal = msg["legal"]
    trick = msg["trick"]  # cards played to this trick so far, leader first
    if not trick:
        return min(legal, key=rank)  # leading: lowest card
    led = suit(trick[0]["card"])
    # The card to beat: the highest card of the led suit played so far.
    winning = max((p["card"] for p in trick if suit(p["card"]) == led), key=rank)
    if suit(legal[0]) == led:  # legal holds only led-suit cards when we can follow (R6)
        losers = [c for c in legal if rank(c) < rank(winning)]
        if losers:
            return max(losers, key=rank)  # duck under the winning card
        return min(legal, key=rank)  # we must win: with the lowest
    # Void in the led suit: throw away the worst card we hold.
    if "QS" in legal:
        return "QS"
    hearts = [c for c in legal if suit(c) == "H"]
    if hearts:
        return max(hearts, key=rank)
    return max(legal, key=rank)


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
