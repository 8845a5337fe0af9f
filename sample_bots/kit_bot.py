#!/usr/bin/env python3
"""kit_bot: a sample bot written with the arena's bot kit (``arena.botkit``).

The kit runs the protocol loop; this file only chooses moves:

  pass    the queen, king and ace of spades first, then the highest hearts,
          then the highest other cards.
  play    leading: the lowest card (a low card rarely wins the trick);
          following suit: the highest card that still loses to the card
          winning the trick (duck), else, playing last to a trick without
          points, the highest card (it wins anyway), else the lowest;
          void in the led suit: the queen of spades, then the highest heart,
          then the highest card (get rid of danger).

No randomness and no memory between requests: the same request always gets
the same answer. The other sample bots are standalone; this one shows how
short a bot gets with the kit. It needs the ``arena`` package importable: it
is when the arena is installed, or when run from a source checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from arena import botkit as kit
except ImportError:  # a source checkout: the package is two folders up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from arena import botkit as kit

DANGER = ("QS", "AS", "KS")


def choose_pass(view: kit.PassView) -> list[str]:
    """Spades above the jack, then high hearts, then the highest others."""
    hand = list(view.hand)
    first = [c for c in DANGER if c in hand]
    hearts = sorted((c for c in hand if kit.is_heart(c)), key=kit.rank, reverse=True)
    others = kit.highest(
        [c for c in hand if c not in first and c not in hearts],
        len(hand) - len(first) - len(hearts),
    )
    return (first + hearts + others)[:3]


def choose_play(view: kit.PlayView) -> str:
    """Duck when possible; dump danger when void."""
    legal = list(view.legal)
    if view.leading:
        return kit.lowest(legal)
    led = view.led_suit
    winning = view.winning
    if led is None or winning is None:  # not reached: someone has led
        return kit.lowest(legal)
    follow = [c for c in legal if kit.suit(c) == led]
    if follow:
        under = [c for c in follow if kit.rank(c) < kit.rank(winning.card)]
        if under:
            return kit.highest(under)
        if view.last_to_play and view.points_on_table == 0 and "QS" not in follow:
            return kit.highest(follow)
        return kit.lowest(follow)
    if "QS" in legal:
        return "QS"
    hearts = [c for c in legal if kit.is_heart(c)]
    return kit.highest(hearts) if hearts else kit.highest(legal)


if __name__ == "__main__":
    kit.run(
        choose_pass=choose_pass,
        choose_play=choose_play,
        name="kit",
        author="hearts-arena samples",
        version="1",
    )
