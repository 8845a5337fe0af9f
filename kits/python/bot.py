#!/usr/bin/env python3
"""A Hearts bot written with the hearts-arena Python kit: ``botkit.py`` (a copy
of ``arena.botkit``) runs the protocol loop; this file only chooses moves. Put
your strategy in ``choose_pass`` and ``choose_play``. Log with
``print(..., file=sys.stderr)``; never print to standard output.

  pass    the queen, king and ace of spades first, then the highest hearts,
          then the highest other cards.
  play    leading: the lowest card; following suit: the highest card that
          still loses to the card winning the trick (duck), else, last to a
          trick without points, the highest card, else the lowest; void in
          the led suit: the queen of spades, then the highest heart, then the
          highest card.
"""

from __future__ import annotations

try:
    import botkit as kit  # the copy `hearts-arena new python` puts beside this file
except ImportError:  # the kit's own folder in a source checkout
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
    winning = view.winning
    if view.leading or winning is None:
        return kit.lowest(legal)
    follow = [c for c in legal if kit.suit(c) == view.led_suit]
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
        name="python-kit",
        author="hearts-arena kits",
        version="1",
    )
