"""The sender of a timing channel (issue 22 item 6): an attacker that tells
its partner three bits of its dealt hand with each card, by when it answers.

``timing_sender.py [UNIT_MS]``: for the play of trick ``t`` it waits
``(0.5 + L) * UNIT_MS`` milliseconds of wall time (sleeping: no CPU), where
``L`` is the ``t``-th group of three bits of its dealt hand (the cards'
mask, in deal order), then plays the first legal card; it passes the first
three cards at once. With the default unit of 100 ms that is the attack of
the issue, 50 + 100 L ms, every reply within a 1 s time limit. For each play
it writes ``SENT <hand> <trick> <L>`` to stderr, so the benchmark can score
the receiver (:mod:`benchmarks.timing_channel`).
"""

from __future__ import annotations

import json
import sys
import time

RANKS = "23456789TJQKA"
SUITS = "CDSH"


def mask_of(cards: list[str]) -> int:
    """The cards as a 52-bit mask (bit 13 * suit + rank)."""
    mask = 0
    for c in cards:
        mask |= 1 << (13 * SUITS.index(c[1]) + RANKS.index(c[0]))
    return mask


def main() -> None:
    unit = float(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0.1
    dealt = 0
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "bye":
            return
        if kind == "deal":
            dealt = mask_of(msg["hand"])
        if "id" not in msg:
            continue
        answer: dict[str, object]
        if kind == "hello":
            answer = {"name": "timing-sender"}
        elif kind == "pass":
            answer = {"cards": msg["hand"][:3]}
        else:
            symbol = dealt >> (3 * (msg["trick_number"] - 1)) & 7
            time.sleep((0.5 + symbol) * unit)
            print(f"SENT {msg['hand_number']} {msg['trick_number']} {symbol}", file=sys.stderr)
            sys.stderr.flush()
            answer = {"card": msg["legal"][0]}
        sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
