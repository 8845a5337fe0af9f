"""Cards, suits and card sets as 52-bit masks.

A card is an integer 0..51: ``suit * 13 + rank`` with suits in the protocol's
sort order C=0, D=1, S=2, H=3 and rank 0 = "2" .. 12 = "A" (R1). A set of cards
(a hand, the cards taken, the unseen cards) is a Python ``int`` bit mask, so
iterating its bits from low to high yields cards in the protocol's sort order
(suit C, D, S, H, then rank), as protocol/README.md asks for lists of cards in a hand.

The text form of a card is two characters, rank then suit: ``"2C"``, ``"TD"``,
``"QS"``, ``"AH"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import Final

RANKS: Final = "23456789TJQKA"
SUITS: Final = "CDSH"  # protocol sort order: clubs, diamonds, spades, hearts

CLUBS: Final = 0
DIAMONDS: Final = 1
SPADES: Final = 2
HEARTS: Final = 3

FULL_SUIT: Final = (1 << 13) - 1
SUIT_MASKS: Final = tuple(FULL_SUIT << (13 * s) for s in range(4))
CLUB_MASK, DIAMOND_MASK, SPADE_MASK, HEART_MASK = SUIT_MASKS
FULL_DECK: Final = (1 << 52) - 1

TWO_OF_CLUBS: Final = CLUBS * 13 + 0
QUEEN_OF_SPADES: Final = SPADES * 13 + 10
QS_BIT: Final = 1 << QUEEN_OF_SPADES
TWO_CLUBS_BIT: Final = 1 << TWO_OF_CLUBS

CARD_NAMES: Final = tuple(r + s for s in SUITS for r in RANKS)
_CARD_BY_NAME: Final = {name: i for i, name in enumerate(CARD_NAMES)}
#: Penalty points of each card (R11): 1 per heart, 13 for the queen of spades.
CARD_POINTS: Final = tuple(
    13 if c == QUEEN_OF_SPADES else (1 if c // 13 == HEARTS else 0) for c in range(52)
)


class CardError(ValueError):
    """A card's text is not one of the 52 two-character card names."""


def suit_of(card: int) -> int:
    """Suit index (0..3, C D S H) of ``card``."""
    return card // 13


def rank_of(card: int) -> int:
    """Rank index (0 = "2" .. 12 = "A") of ``card``."""
    return card % 13


def card_name(card: int) -> str:
    """Two-character text of ``card`` (``0`` -> ``"2C"``)."""
    return CARD_NAMES[card]


def parse_card(text: str) -> int:
    """Card index of a two-character card name.

    Raises:
        CardError: ``text`` is not a card name such as ``"QS"``.
    """
    try:
        return _CARD_BY_NAME[text]
    except (KeyError, TypeError):
        raise CardError(f"not a card: {text!r}") from None


def mask_of(cards: Iterable[int]) -> int:
    """Bit mask of an iterable of card indices."""
    mask = 0
    for c in cards:
        mask |= 1 << c
    return mask


def mask_of_names(names: Iterable[str]) -> int:
    """Bit mask of card names. Raises :class:`CardError` on a bad name."""
    return mask_of(parse_card(n) for n in names)


def cards_of(mask: int) -> list[int]:
    """Card indices of ``mask`` in protocol sort order (suit C, D, S, H, then rank)."""
    out: list[int] = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def iter_cards(mask: int) -> Iterator[int]:
    """Iterate the card indices of ``mask`` in protocol sort order."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


@cache
def _suit_names(suit: int, bits: int) -> tuple[str, ...]:
    return tuple(CARD_NAMES[suit * 13 + r] for r in range(13) if bits >> r & 1)


def names_of(mask: int) -> list[str]:
    """Card names of ``mask`` in protocol sort order."""
    out: list[str] = []
    for suit in range(4):
        bits = (mask >> (13 * suit)) & FULL_SUIT
        if bits:
            out += _suit_names(suit, bits)
    return out


def lowest(mask: int) -> int:
    """Lowest card of a non-empty ``mask`` (the first in sort order)."""
    return (mask & -mask).bit_length() - 1


def highest(mask: int) -> int:
    """Highest card of a non-empty ``mask`` (the last in sort order)."""
    return mask.bit_length() - 1


def points_of(mask: int) -> int:
    """Penalty points (R11) of the cards in ``mask``."""
    return (mask & HEART_MASK).bit_count() + (13 if mask & QS_BIT else 0)


def sorted_deck() -> list[int]:
    """The 52 cards in protocol sort order (the deck a deal shuffles, R2)."""
    return list(range(52))
