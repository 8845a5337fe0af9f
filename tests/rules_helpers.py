"""Helpers for the rules-engine tests: hands and positions built from card names.

``make_hand`` builds a :class:`arena.core.rules.Hand` from four explicit hands written
as card names (``"2C 3C AH ..."``), optionally applies the passes and then plays
a list of cards, so a test can set up an exact position in a few lines::

    hand = make_hand(
        ["2C ...", "...", "...", "..."],
        hand_number=4,  # a hold hand: play starts at once
        plays="2C 3C 4C AC",
    )
    assert names(hand.legal_mask()) == [...]
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.cards import mask_of_names, names_of, parse_card
from arena.core.rules import Hand


def mask(text: str) -> int:
    """Mask of space-separated card names (``"2C QS AH"``)."""
    return mask_of_names(text.split())


def cards(text: str) -> list[str]:
    """A list of card names from space-separated text (``"2C QS"`` -> ``["2C", "QS"]``)."""
    return text.split()


def names(m: int) -> list[str]:
    """Card names of a mask, in protocol sort order."""
    return names_of(m)


def make_hand(
    hands: Sequence[str],
    *,
    hand_number: int = 4,
    passes: Sequence[str] | None = None,
    plays: str = "",
) -> Hand:
    """A :class:`Hand` dealt the four given hands, passed and played up to a position.

    Args:
        hands: four strings of 13 space-separated card names, by seat.
        hand_number: 1-based; 4 (a hold hand) starts play at once.
        passes: four strings of three card names, required on a pass hand
            (hand_number % 4 != 0) when ``plays`` is given.
        plays: card names played in order, from whoever's turn it is (each is
            checked by :meth:`Hand.play`, so the position is a legal one).
    """
    dealt = [mask(h) for h in hands]
    hand = Hand.new(hand_number, dealt)
    if passes is not None:
        hand.apply_passes([mask(p) for p in passes])
    for name in plays.split():
        hand.play(parse_card(name))
    return hand


def play_names(hand: Hand, plays: str) -> None:
    """Play space-separated card names in order (each checked)."""
    for name in plays.split():
        hand.play(parse_card(name))
