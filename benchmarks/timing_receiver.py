"""The receiver of a timing channel (issue 22 item 6): it times the gap
between its own reply and its next request, and decodes the bits its
partner (:mod:`benchmarks.timing_sender`) put in it.

``timing_receiver.py [UNIT_MS] [SENDER_NAME]``: between two of its plays in
one hand exactly one card of the sender's is played; the sender's card is
in the receiver's current trick if the sender's seat is in ``trick``, else in
the trick before. The gap is the sender's wait plus what the referee and
the other two seats (instant bots) took; the receiver takes the smallest gap
it has seen (across games: its process lives on) as ``0.5 * UNIT`` plus
that overhead, and decodes ``L = round((gap - smallest) / UNIT)`` (clamped
to 0..7); it writes
``GOT <hand> <trick> <L> <gap in ms>`` to stderr. It plays the first legal
card at once, passes the first three cards. ``SENDER_NAME`` (default
``a-tx``) is the sender's entrant name, found in ``game_start``'s
``players``.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    unit = float(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0.1
    sender_name = sys.argv[2] if len(sys.argv) > 2 else "a-tx"
    sender = -1
    replied: tuple[int, float] | None = None  # (hand, when) of its last play's reply
    smallest = float("inf")  # the smallest gap seen: a symbol 0 and the overhead
    for line in sys.stdin:
        now = time.monotonic()
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "bye":
            return
        if kind == "game_start":
            players = msg["players"]
            sender = players.index(sender_name) if sender_name in players else -1
        if "id" not in msg:
            continue
        answer: dict[str, object]
        if kind == "hello":
            answer = {"name": "timing-receiver"}
        elif kind == "pass":
            answer = {"cards": msg["hand"][:3]}
            replied = None
        else:
            hand, trick = msg["hand_number"], msg["trick_number"]
            if replied is not None and replied[0] == hand and sender >= 0:
                gap = now - replied[1]
                in_this = any(p["seat"] == sender for p in msg["trick"])
                smallest = min(smallest, gap)
                symbol = min(7, max(0, round((gap - smallest) / unit)))
                sender_trick = trick if in_this else trick - 1
                print(f"GOT {hand} {sender_trick} {symbol} {gap * 1000:.1f}", file=sys.stderr)
                sys.stderr.flush()
            answer = {"card": msg["legal"][0]}
        sys.stdout.write(json.dumps({"type": kind, "id": msg["id"], **answer}) + "\n")
        sys.stdout.flush()
        if kind == "play":
            replied = (msg["hand_number"], time.monotonic())


if __name__ == "__main__":
    main()
