"""The rules of Hearts as the arena referees them (protocol/RULES.md R1-R14).

Pure: no I/O, no clock, no randomness of its own (a deal is an input, made from
a seed string by :func:`deal_hands`). Cards are integers 0..51 and card sets
are bit masks (see :mod:`arena.core.cards`), which keeps legal-move generation free
of allocation for bots that simulate many hands.

Three levels:

* :class:`Hand` plays one hand: the simultaneous pass (R3, R4), then thirteen
  tricks (R5-R10), then the hand's points (R11, R12).
* :class:`GameScore` adds hands' points to running totals and decides when a
  game ends and the final ranks (R13), or stops after a fixed number of hands.
* :class:`Game` is the whole game: hand after hand (the pass cycle by hand
  number, R3) until :class:`GameScore` ends it. Deals are named by
  :func:`deal_name` and made by :func:`table_deal` (or :func:`deal_with`).
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Sequence
from enum import Enum
from typing import Any, Final, NamedTuple

from arena.core.cards import (
    CARD_NAMES,
    CARD_POINTS,
    FULL_DECK,
    HEART_MASK,
    HEARTS,
    QS_BIT,
    SUIT_MASKS,
    TWO_CLUBS_BIT,
    cards_of,
    lowest,
    names_of,
)

#: Tie-break hands played after the target is reached before a shared lowest
#: total is accepted as a shared rank (an arena setting beside R13).
MAX_TIEBREAK_HANDS: Final = 50

_NON_HEARTS: Final = FULL_DECK & ~HEART_MASK
#: Cards R7 allows on trick 1 to a seat void in clubs: no heart, not the queen.
_TRICK1_SAFE: Final = FULL_DECK & ~HEART_MASK & ~QS_BIT
_FIRST_HEART: Final = HEARTS * 13
#: Suit index of each card (a table lookup is faster than ``card // 13``).
_SUIT_OF: Final = tuple(c // 13 for c in range(52))


class IllegalMoveError(ValueError):
    """A move the rules forbid.

    Attributes:
        seat: the seat that tried the move (0..3).
        rule: the id of the rule it breaks, such as ``"R6"``.
    """

    def __init__(self, seat: int, rule: str, message: str) -> None:
        super().__init__(f"seat {seat}: {message} ({rule})")
        self.seat = seat
        self.rule = rule


class PassDirection(Enum):
    """Where a hand's pass goes (R3). ``value`` is the protocol's word."""

    LEFT = "left"
    RIGHT = "right"
    ACROSS = "across"
    HOLD = "hold"

    _offset: int  # set below from _OFFSETS: read without hashing the member

    @property
    def offset(self) -> int:
        """Seat offset of the receiver: left +1, right +3, across +2, hold 0."""
        return self._offset


_OFFSETS: Final = {
    PassDirection.LEFT: 1,
    PassDirection.RIGHT: 3,
    PassDirection.ACROSS: 2,
    PassDirection.HOLD: 0,
}
for _direction, _offset in _OFFSETS.items():
    _direction._offset = _offset
del _direction, _offset
_CYCLE: Final = (PassDirection.HOLD, PassDirection.LEFT, PassDirection.RIGHT, PassDirection.ACROSS)


def pass_direction(hand_number: int) -> PassDirection:
    """Pass direction of 1-based ``hand_number`` (R3): left, right, across, hold, left, ...

    Raises:
        ValueError: ``hand_number`` is below 1.
    """
    if hand_number < 1:
        raise ValueError(f"hand numbers start at 1, got {hand_number}")
    return _CYCLE[hand_number % 4]


def pass_target(seat: int, direction: PassDirection) -> int | None:
    """Seat that receives ``seat``'s pass (R3), or ``None`` on a hold hand."""
    if direction is PassDirection.HOLD:
        return None
    return (seat + direction._offset) % 4


def pass_source(seat: int, direction: PassDirection) -> int | None:
    """Seat whose pass ``seat`` receives (R3), or ``None`` on a hold hand."""
    if direction is PassDirection.HOLD:
        return None
    return (seat - direction._offset) % 4


def shuffled_deck(key: bytes, label: str) -> list[int]:
    """The 52 cards (0..51, protocol order) shuffled under ``key`` for ``label`` (R2).

    The algorithm (``protocol/DEALS.md``, portable to any language): a stream of
    32-bit big-endian words taken in order from the blocks
    ``HMAC-SHA256(key, UTF-8(label + ":" + n))`` for ``n = 0, 1, 2, ...``
    (``n`` in decimal; 8 words a block); then Fisher-Yates from the top: for
    ``i = 51`` down to ``1``, with ``m = i + 1``, take words until one is below
    ``2^32 - (2^32 mod m)`` (rejection sampling, so no card is favoured), let
    ``j = word mod m`` and swap the cards at ``i`` and ``j``.
    """
    deck = list(range(52))
    block = 0
    words: list[int] = []
    pos = 0
    for i in range(51, 0, -1):
        m = i + 1
        limit = (1 << 32) - ((1 << 32) % m)
        while True:
            if pos == len(words):
                digest = hmac.new(key, f"{label}:{block}".encode(), hashlib.sha256).digest()
                block += 1
                words = [int.from_bytes(digest[k : k + 4], "big") for k in range(0, 32, 4)]
                pos = 0
            word = words[pos]
            pos += 1
            if word < limit:
                break
        j = word % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deal_hands(label: str, key: bytes = b"") -> tuple[int, int, int, int]:
    """Deal 13 cards to each seat (R2): seat ``s`` gets cards ``13*s .. 13*s+12``
    of :func:`shuffled_deck` ``(key, label)``.

    In a tournament ``key`` is the game's table key (:meth:`arena.core.keys.MasterKey.table_key`,
    secret until the key is revealed) and ``label`` the hand number; with the
    empty key (the default) the deal is public, for tests and examples.

    Returns:
        The four hands as card masks (bit ``c`` set for card ``c``).
    """
    hands = [0, 0, 0, 0]
    for i, card in enumerate(shuffled_deck(key, label)):
        hands[i // 13] |= 1 << card
    return hands[0], hands[1], hands[2], hands[3]


def round_robin_deal_key(round_: int, table: int) -> str:
    """The deal key of ``table`` (0-based) in round ``round_`` (1-based) of a
    round robin or gauntlet: ``"r1-t3"``. Every seating of the table in that
    round plays its deals (duplicate play, R2)."""
    return f"r{round_}-t{table}"


def ladder_deal_key(table: int) -> str:
    """The deal key of ladder table ``table`` (0-based): ``"L17"``."""
    return f"L{table}"


def deal_name(deal_key: str, hand_number: int) -> str:
    """The public name of hand ``hand_number``'s deal in the games named
    ``deal_key`` (R2): ``deal_name("r1-t3", 2) == "r1-t3:2"``. It is a game
    record's ``deal_seed`` and what reports group duplicate deals by; the
    cards come from :func:`table_deal`."""
    return f"{deal_key}:{hand_number}"


def table_deal(table_key: bytes, hand_number: int) -> tuple[int, int, int, int]:
    """The four dealt card masks of hand ``hand_number`` (1-based) of a game
    whose table key is ``table_key`` (R2): ``deal_hands(str(hand_number), table_key)``.

    Every game of one deal key (all seatings of a table in a round) gets the
    same cards for the same hand number (duplicate play).
    """
    return deal_hands(str(hand_number), table_key)


def deal_with(fixed: Sequence[int], label: str, key: bytes = b"") -> tuple[int, int, int, int]:
    """A deal with some cards placed (R2): seat ``s`` gets the cards of mask
    ``fixed[s]``, and the cards nobody was given fill the seats in seat order
    up to 13 each, in the order :func:`shuffled_deck` ``(key, label)`` puts
    them. With every ``fixed[s]`` empty this is :func:`deal_hands`.

    Raises:
        ValueError: not four masks, a card placed twice or not a card
            0..51, or a seat given more than 13 cards.
    """
    if len(fixed) != 4:
        raise ValueError("a deal has four hands (R1)")
    taken = 0
    for s, mask in enumerate(fixed):
        if mask < 0 or mask & ~FULL_DECK:
            raise ValueError(f"seat {s} is given something that is not a card (R1)")
        if mask & taken:
            raise ValueError(f"a card is given twice: {' '.join(names_of(mask & taken))} (R2)")
        if mask.bit_count() > 13:
            raise ValueError(f"seat {s} is given {mask.bit_count()} cards, more than 13 (R2)")
        taken |= mask
    if not taken:
        return deal_hands(label, key)
    masks = list(fixed)
    rest = iter([c for c in shuffled_deck(key, label) if not taken >> c & 1])
    for s in range(4):
        for _ in range(13 - masks[s].bit_count()):
            masks[s] |= 1 << next(rest)
    return masks[0], masks[1], masks[2], masks[3]


def pass_mask(seat: int, cards: Sequence[int]) -> int:
    """Mask of a pass given as a list of cards, checking that they are three distinct cards (R3).

    Whether the seat holds them is :meth:`Hand.check_pass`'s business.

    Raises:
        IllegalMoveError: not three cards, or a card given twice (rule ``"R3"``);
            a number that is not a card 0..51 (``"R1"``).
    """
    m = 0
    for card in cards:
        if not 0 <= card < 52:
            raise IllegalMoveError(seat, "R1", f"{card!r} is not a card of the 52-card deck")
        bit = 1 << card
        if m & bit:
            raise IllegalMoveError(
                seat, "R3", f"a pass is three distinct cards, {CARD_NAMES[card]} is given twice"
            )
        m |= bit
    if len(cards) != 3:
        raise IllegalMoveError(seat, "R3", f"a pass is three distinct cards, got {len(cards)}")
    return m


def nth_card(mask: int, k: int) -> int:
    """The ``k``-th card (0-based, protocol sort order) of ``mask``:
    ``cards_of(mask)[k]`` without building the list.

    Raises:
        ValueError: ``mask`` has ``k`` cards or fewer, or ``k`` is negative.
    """
    if k < 0:
        raise ValueError(f"k must be at least 0, got {k}")
    while k:
        mask &= mask - 1  # drop the lowest card
        k -= 1
    if not mask:
        raise ValueError("the mask has too few cards")
    return (mask & -mask).bit_length() - 1


def default_play(legal: int) -> int:
    """The referee's default play (protocol/README.md): the first card of ``legal``."""
    return lowest(legal)


def default_pass(hand: int) -> int:
    """The referee's default pass (protocol/README.md), as a mask of three cards.

    The three highest cards of ``hand`` by rank, ties broken by suit in the
    order H, S, D, C. Raises ``ValueError`` if ``hand`` has fewer than 3 cards.
    """
    # Suit indices are C=0, D=1, S=2, H=3, so the tie order H, S, D, C is
    # simply the higher suit index first.
    ordered = sorted(cards_of(hand), key=lambda c: (c % 13, c // 13), reverse=True)
    if len(ordered) < 3:
        raise ValueError("a pass needs three cards in hand")
    return (1 << ordered[0]) | (1 << ordered[1]) | (1 << ordered[2])


def hand_points_after_moon(taken: Sequence[int]) -> tuple[list[int], int | None]:
    """Apply the moon rule (R12) to raw hand points.

    Args:
        taken: the four seats' raw points for the hand (R11, adding to 26).

    Returns:
        ``(points, moon)``: if one seat took all 26 it scores 0 and the others
        26 each, and ``moon`` is that seat; otherwise the points unchanged and
        ``moon`` is ``None``.
    """
    for seat, pts in enumerate(taken):
        if pts == 26:
            return [0 if s == seat else 26 for s in range(4)], seat
    return list(taken), None


class TrickRecord(NamedTuple):
    """A completed trick (a named tuple: cheap to make, 13 times a hand).

    Attributes:
        leader: the seat that led it.
        cards: the four cards in play order from the leader.
        winner: the seat that took it (R10).
        points: its penalty points (R11).
    """

    leader: int
    cards: tuple[int, int, int, int]
    winner: int
    points: int

    def seat_of(self, index: int) -> int:
        """Seat that played ``cards[index]``."""
        return (self.leader + index) % 4

    def to_json(self) -> dict[str, Any]:
        """The protocol's form: ``{"leader", "cards": [{"seat", "card"}], "winner", "points"}``."""
        return {
            "leader": self.leader,
            "cards": [
                {"seat": (self.leader + i) % 4, "card": CARD_NAMES[c]}
                for i, c in enumerate(self.cards)
            ],
            "winner": self.winner,
            "points": self.points,
        }


class Phase(Enum):
    """Where a :class:`Hand` is: waiting for the four passes, in play, or over."""

    PASS = "pass"
    PLAY = "play"
    OVER = "over"


_new_tuple: Final = tuple.__new__

# Module constants: a global read is cheaper than ``Phase.PLAY`` on hot paths.
_PASS: Final = Phase.PASS
_PLAY: Final = Phase.PLAY
_OVER: Final = Phase.OVER


class Hand:
    """One hand of Hearts: the pass, thirteen tricks and the hand's points.

    Construct with :meth:`new` from four dealt card masks. On a pass hand the
    phase starts at :attr:`Phase.PASS` and :meth:`apply_passes` takes all four
    passes at once (R4); on a hold hand play starts at once. Then
    :meth:`play` takes one card at a time from :attr:`turn`.

    Attributes are public for speed (bots simulate with this class) but should
    be treated as read-only; change the state only through the methods.
    """

    __slots__ = (
        "_legal",
        "dealt",
        "direction",
        "hand_number",
        "hands",
        "hearts_broken",
        "leader",
        "led_suit",
        "passes",
        "phase",
        "played",
        "taken",
        "taken_points",
        "trick",
        "trick_number",
        "tricks",
        "turn",
    )

    hand_number: int
    direction: PassDirection
    dealt: tuple[int, int, int, int]
    hands: list[int]
    passes: tuple[int, int, int, int] | None
    phase: Phase
    trick_number: int
    leader: int
    turn: int
    trick: list[int]
    led_suit: int
    hearts_broken: bool
    played: int
    taken: list[int]
    taken_points: list[int]
    tricks: list[TrickRecord]
    #: :meth:`legal_mask` of the current position, or -1 until computed
    #: (only in play: it is 0 while the pass is due and once the hand is over).
    _legal: int

    @classmethod
    def new(cls, hand_number: int, dealt: Sequence[int]) -> Hand:
        """Start hand ``hand_number`` (1-based) from four dealt card masks.

        Raises:
            ValueError: the masks are not four disjoint 13-card hands covering
                the deck (R2), or ``hand_number`` < 1.
        """
        if len(dealt) != 4:
            raise ValueError("a deal has four hands (R1)")
        d0, d1, d2, d3 = dealt
        # Four 13-card masks whose union is the 52-card deck are disjoint: the
        # common case is checked at once, the loop says what is wrong otherwise.
        if not (
            d0 | d1 | d2 | d3 == FULL_DECK
            and d0.bit_count() == 13
            and d1.bit_count() == 13
            and d2.bit_count() == 13
            and d3.bit_count() == 13
        ):
            union = 0
            for i, mask in enumerate(dealt):
                if mask.bit_count() != 13:
                    raise ValueError(f"seat {i} is dealt {mask.bit_count()} cards, not 13 (R2)")
                if union & mask:
                    raise ValueError("a card is dealt twice (R2)")
                union |= mask
            raise ValueError("the deal does not cover the deck (R2)")
        if hand_number < 1:
            raise ValueError(f"hand numbers start at 1, got {hand_number}")
        self = cls.__new__(cls)
        self.hand_number = hand_number
        self.direction = _CYCLE[hand_number % 4]  # R3, as pass_direction
        self.dealt = (d0, d1, d2, d3)
        self.hands = [d0, d1, d2, d3]
        self.passes = None
        self.trick_number = 1
        self.trick = []
        self.led_suit = -1
        self.hearts_broken = False
        self.played = 0
        self.taken = [0, 0, 0, 0]
        self.taken_points = [0, 0, 0, 0]
        self.tricks = []
        self._legal = 0  # nothing to play until the pass is done
        if self.direction is PassDirection.HOLD:
            self._start_play()
        else:
            self.phase = _PASS
            self.leader = self.turn = -1
        return self

    def copy(self) -> Hand:
        """An independent copy, cheap enough for simulations."""
        other = Hand.__new__(Hand)
        other.dealt = self.dealt
        other.direction = self.direction
        other.hand_number = self.hand_number
        other.hands = self.hands.copy()
        other.hearts_broken = self.hearts_broken
        other.leader = self.leader
        other.led_suit = self.led_suit
        other.passes = self.passes
        other.phase = self.phase
        other.played = self.played
        other.taken = self.taken.copy()
        other.taken_points = self.taken_points.copy()
        other.trick = self.trick.copy()
        other.trick_number = self.trick_number
        other.tricks = self.tricks.copy()
        other.turn = self.turn
        other._legal = self._legal
        return other

    def _start_play(self) -> None:
        self.phase = _PLAY
        self._legal = -1
        # R5: the holder of the two of clubs leads the first trick.
        for seat in range(4):
            if self.hands[seat] & TWO_CLUBS_BIT:
                self.leader = self.turn = seat
                return
        raise AssertionError("nobody holds the two of clubs")  # excluded by new()

    # -- the pass ---------------------------------------------------------

    def check_pass(self, seat: int, cards: int) -> None:
        """Check one seat's pass (R3) without applying it.

        Raises:
            IllegalMoveError: bits outside the deck (``"R1"``), not exactly
                three cards, or a card not held (``"R3"``).
        """
        if self.phase is not _PASS:
            raise IllegalMoveError(seat, "R3", "no pass is due now")
        if cards < 0 or cards & ~FULL_DECK:
            raise IllegalMoveError(seat, "R1", "a pass of something that is not a card")
        if cards.bit_count() != 3:
            raise IllegalMoveError(
                seat, "R3", f"a pass is three distinct cards, got {cards.bit_count()}"
            )
        # R4: a pass comes from the dealt hand; received cards cannot be passed on.
        not_held = cards & ~self.dealt[seat]
        if not_held:
            raise IllegalMoveError(
                seat, "R3", f"passes cards it does not hold: {' '.join(names_of(not_held))}"
            )

    def apply_passes(self, passes: Sequence[int]) -> None:
        """Exchange the four seats' passes at once (R3, R4) and start play (R5).

        Args:
            passes: four masks of three cards each, by seat.

        Raises:
            IllegalMoveError: a pass is not three distinct cards of that seat's
                dealt hand; the hand is unchanged.
        """
        if len(passes) != 4:
            raise ValueError("four passes are needed (R4)")
        # The checks of check_pass, inline; on a fault check_pass says which.
        ok = self.phase is _PASS
        dealt = self.dealt
        for seat in range(4):
            cards = passes[seat]
            if not ok or cards.bit_count() != 3 or cards & ~dealt[seat]:
                self.check_pass(seat, cards)  # raises
        offset = self.direction._offset
        hands = self.hands
        new = [hands[s] & ~passes[s] for s in range(4)]
        for seat in range(4):
            new[(seat + offset) % 4] |= passes[seat]
        self.hands = new
        self.passes = (passes[0], passes[1], passes[2], passes[3])
        self._start_play()

    def passed_by(self, seat: int) -> int:
        """Mask of the cards ``seat`` passed (0 before the pass or on a hold hand)."""
        return self.passes[seat] if self.passes is not None else 0

    def received_by(self, seat: int) -> int:
        """Mask of the cards ``seat`` received (0 before the pass or on a hold hand)."""
        source = pass_source(seat, self.direction)
        if self.passes is None or source is None:
            return 0
        return self.passes[source]

    # -- play -------------------------------------------------------------

    def legal_mask(self) -> int:
        """Mask of the cards :attr:`turn` may play now (R5-R9). Empty if not in play.

        Computed once per position (kept until the next card is played)."""
        legal = self._legal
        if legal >= 0:
            return legal  # also 0 when not in play (see _legal)
        hand = self.hands[self.turn]
        trick = self.trick
        if not trick:
            if self.trick_number == 1:
                legal = TWO_CLUBS_BIT  # R5: the two of clubs opens.
            elif not self.hearts_broken and hand & _NON_HEARTS:
                legal = hand & _NON_HEARTS  # R9: no heart lead before hearts are broken.
            else:
                legal = hand
        else:
            legal = hand & SUIT_MASKS[self.led_suit]  # R6: follow suit.
            if not legal:
                legal = hand
                if self.trick_number == 1:
                    # R7: no heart, no queen of spades on trick 1; unless only
                    # hearts and the queen are left, then only hearts.
                    legal = hand & _TRICK1_SAFE or hand & HEART_MASK or hand
        self._legal = legal
        return legal

    def legal_cards(self) -> list[int]:
        """The cards :attr:`turn` may play now, in protocol sort order."""
        return cards_of(self.legal_mask())

    def check_play(self, seat: int, card: int) -> None:
        """Check that ``seat`` may play ``card`` now.

        Raises:
            IllegalMoveError: not this seat's turn or no play due (R5), not a
                card 0..51 (R1), a card the seat does not hold (R2), or a
                rule forbids it (R5-R9); :attr:`IllegalMoveError.rule` names it.
        """
        if self.phase is not _PLAY:
            raise IllegalMoveError(seat, "R5", "no play is due now")
        if seat != self.turn:
            raise IllegalMoveError(seat, "R5", f"it is seat {self.turn}'s turn")
        if type(card) is not int or not 0 <= card < 52:
            # R1: the deck is the 52 cards 0..51; anything else (a name, None, a
            # bool) is no card at all.
            raise IllegalMoveError(seat, "R1", f"{card!r} is not a card of the 52-card deck")
        bit = 1 << card
        if not self.hands[seat] & bit:
            # R2: a seat plays from the 13 cards it was dealt (after the pass, R3).
            raise IllegalMoveError(seat, "R2", f"does not hold {CARD_NAMES[card]}")
        if not self.legal_mask() & bit:
            raise IllegalMoveError(
                seat, self._broken_rule(card), f"may not play {CARD_NAMES[card]}"
            )

    def _broken_rule(self, card: int) -> str:
        holds_led = bool(self.trick) and bool(self.hands[self.turn] & SUIT_MASKS[self.led_suit])
        return broken_play_rule(not self.trick, self.trick_number, holds_led)

    def play(self, card: int) -> TrickRecord | None:
        """Play ``card`` for :attr:`turn`; returns the trick if this card completed it.

        Raises:
            IllegalMoveError: see :meth:`check_play` (``play(52)``, ``play(-1)``
                and anything not an ``int``, such as ``None`` or ``"3H"``: rule
                ``"R1"``); the hand is unchanged.
        """
        legal = self._legal
        if legal < 0:
            legal = self.legal_mask()  # 0 when not in play
        if type(card) is not int or card < 0 or not legal >> card & 1:
            self.check_play(self.turn, card)  # raises: says which rule
        return self.play_unchecked(card)

    def play_unchecked(self, card: int) -> TrickRecord | None:
        """Play a card already known to be legal (for simulations). See :meth:`play`."""
        bit = 1 << card
        turn = self.turn
        self.hands[turn] ^= bit
        self.played |= bit
        self._legal = -1
        trick = self.trick
        if not trick:
            self.led_suit = _SUIT_OF[card]
        elif card >= _FIRST_HEART and self.led_suit != HEARTS:
            self.hearts_broken = True  # R8: a heart discarded breaks hearts.
        trick.append(card)
        if len(trick) < 4:
            self.turn = (turn + 1) & 3
            return None
        return self._end_trick()

    def random_playout(self, rng: random.Random) -> tuple[list[int], int | None]:
        """Play the hand to its end with uniformly random legal cards; return :meth:`points`.

        A fast path for bots' simulations (on a :meth:`copy`). Each move draws
        ``k = rng.randrange(n)`` over the ``n`` legal cards and plays the
        ``k``-th in sort order, exactly as ``play(legal_cards()[k])`` would.

        Raises:
            ValueError: the pass is still due.
        """
        if self.phase is _PASS:
            raise ValueError("the pass is due before play")
        randrange = rng.randrange
        legal_mask = self.legal_mask
        play = self.play_unchecked
        while self.phase is _PLAY:
            legal = legal_mask()
            for _ in range(randrange(legal.bit_count())):
                legal &= legal - 1  # drop the lowest card, k times
            play((legal & -legal).bit_length() - 1)
        return self.points()

    def _end_trick(self) -> TrickRecord:
        c0, c1, c2, c3 = self.trick
        led = self.led_suit
        # R10: the highest card of the led suit wins (c0 is of the led suit).
        best, top = 0, c0
        if c1 > top and _SUIT_OF[c1] == led:
            best, top = 1, c1
        if c2 > top and _SUIT_OF[c2] == led:
            best, top = 2, c2
        if c3 > top and _SUIT_OF[c3] == led:
            best = 3
        leader = self.leader
        winner = (leader + best) & 3
        points = CARD_POINTS[c0] + CARD_POINTS[c1] + CARD_POINTS[c2] + CARD_POINTS[c3]
        # tuple.__new__ skips the named tuple's Python-level __new__.
        record = _new_tuple(TrickRecord, (leader, (c0, c1, c2, c3), winner, points))
        self.tricks.append(record)
        self.taken[winner] |= (1 << c0) | (1 << c1) | (1 << c2) | (1 << c3)
        if points:
            self.taken_points[winner] += points
        self.trick = []
        self.led_suit = -1
        self.leader = self.turn = winner
        if self.trick_number == 13:
            self.phase = _OVER
            self._legal = 0
        else:
            self.trick_number += 1
        return record

    def is_over(self) -> bool:
        """True once the thirteenth trick is complete."""
        return self.phase is _OVER

    def points(self) -> tuple[list[int], int | None]:
        """The hand's points after the moon rule (R11, R12) and the moon seat or ``None``.

        Raises:
            ValueError: the hand is not over.
        """
        if self.phase is not _OVER:
            raise ValueError("the hand is not over")
        return hand_points_after_moon(self.taken_points)

    def trick_seats(self) -> list[int]:
        """Seats that played the current trick's cards, in play order."""
        return [(self.leader + i) % 4 for i in range(len(self.trick))]

    def view(self, seat: int, *, include_tricks: bool = True) -> dict[str, Any]:
        """What ``seat`` may see of the hand now, in the protocol's field names.

        The keys are those of the ``play`` request that the hand knows:
        ``seat``, ``hand_number``, ``trick_number``, ``leader``, ``trick``,
        ``tricks``, ``hand``, ``legal`` (empty unless it is ``seat``'s turn),
        ``hearts_broken``, ``passed``, ``received``, ``hand_points``. It
        never holds another seat's unplayed cards except the three ``seat``
        passed (protocol/README.md, "What a seat may see"). With ``include_tricks``
        false the ``tricks`` key is left out (the referee keeps them encoded).
        """
        passed = received = None
        target = pass_target(seat, self.direction)
        if self.passes is not None and target is not None:
            passed = {"to": target, "cards": names_of(self.passes[seat])}
            source = pass_source(seat, self.direction)
            received = {"from": source, "cards": names_of(self.received_by(seat))}
        leader = self.leader
        view = {
            "seat": seat,
            "hand_number": self.hand_number,
            "trick_number": self.trick_number,
            "leader": leader,
            "trick": [
                {"seat": (leader + i) % 4, "card": CARD_NAMES[c]} for i, c in enumerate(self.trick)
            ],
            "tricks": [t.to_json() for t in self.tricks] if include_tricks else None,
            "hand": names_of(self.hands[seat]),
            "legal": names_of(self.legal_mask()) if seat == self.turn else [],
            "hearts_broken": self.hearts_broken,
            "passed": passed,
            "received": received,
            "hand_points": list(self.taken_points),
        }
        if not include_tricks:
            del view["tricks"]
        return view


def broken_play_rule(leading: bool, trick_number: int, holds_led_suit: bool) -> str:
    """The rule a held card that is not legal now breaks: leading, ``R5`` on
    trick 1 (the 2 of clubs leads) else ``R9`` (hearts not broken);
    following, ``R6`` when the seat holds the led suit, else ``R7`` (no
    points on trick 1). The referee and ``replay`` name faults with it."""
    if leading:
        return "R5" if trick_number == 1 else "R9"
    return "R6" if holds_led_suit else "R7"


def competition_ranks(scores: Sequence[int]) -> list[int]:
    """Competition ranks of totals, lowest first: ``[5, 5, 9, 12] -> [1, 1, 3, 4]``."""
    return [1 + sum(1 for other in scores if other < mine) for mine in scores]


class GameScore:
    """Running totals of a game and when it ends (R13).

    Args:
        target_score: end after the hand where a total reaches this, lowest
            total winning; a shared lowest total plays further hands, at most
            ``max_tiebreak_hands`` of them, after which the rank is shared.
        hands: instead of a target, play exactly this many hands (no
            tie-break hands).

    Raises:
        ValueError: neither or both of ``target_score`` and ``hands`` given,
            or a value below 1.
    """

    def __init__(
        self,
        target_score: int | None = 100,
        hands: int | None = None,
        max_tiebreak_hands: int = MAX_TIEBREAK_HANDS,
    ) -> None:
        if (target_score is None) == (hands is None):
            raise ValueError("give exactly one of target_score and hands")
        if (target_score is not None and target_score < 1) or (hands is not None and hands < 1):
            raise ValueError("target_score and hands must be at least 1")
        self.target_score = target_score
        self.hands = hands
        self.max_tiebreak_hands = max_tiebreak_hands
        self.scores = [0, 0, 0, 0]
        self.hands_played = 0
        self.tiebreak_hands = 0
        self._over = False

    def add_hand(self, points: Sequence[int]) -> None:
        """Add one hand's points (after the moon rule) to the totals.

        Raises:
            ValueError: the game is already over.
        """
        if self._over:
            raise ValueError("the game is over")
        for seat in range(4):
            self.scores[seat] += points[seat]
        self.hands_played += 1
        if self.hands is not None:
            self._over = self.hands_played >= self.hands
            return
        assert self.target_score is not None
        if max(self.scores) >= self.target_score:
            low = min(self.scores)
            if self.scores.count(low) == 1 or self.tiebreak_hands >= self.max_tiebreak_hands:
                self._over = True
            else:
                self.tiebreak_hands += 1

    def is_over(self) -> bool:
        """True when no further hand is to be played."""
        return self._over

    def ranks(self) -> list[int]:
        """Competition ranks of the totals (1, 1, 3, 4), lowest total first."""
        return competition_ranks(self.scores)


class Game:
    """A whole game of Hearts: hands one after another until :class:`GameScore`
    says the game is over (R13), each hand's pass direction set by its number
    (R3: left, right, across, hold, and on through tie-break hands).

    Pure, like :class:`Hand`: the cards of each hand are an input (a deal
    made by :func:`table_deal`, :func:`deal_hands` or :func:`deal_with`), so
    the referee, synthetic tournaments, the conformance checker and the
    benchmarks all drive this one loop::

        game = Game(target_score=100)
        while not game.is_over():
            hand = game.start_hand(table_deal(key, game.hand_number + 1))
            ...  # the pass (R3, R4) and thirteen tricks (R5-R10) on ``hand``
            points, moon = game.end_hand()  # R11, R12; totals and the end (R13)

    Args:
        target_score, hands, max_tiebreak_hands: as :class:`GameScore`.

    Raises:
        ValueError: as :class:`GameScore`.

    Attributes:
        score: the running totals and the end of the game (R13).
        hand: the hand in play, the last one once it has ended, or ``None``
            before the first.
        hand_number: the number of the current (or last) hand, 0 before the first.
    """

    __slots__ = ("hand", "hand_number", "score")

    def __init__(
        self,
        target_score: int | None = 100,
        hands: int | None = None,
        max_tiebreak_hands: int = MAX_TIEBREAK_HANDS,
    ) -> None:
        self.score = GameScore(target_score, hands, max_tiebreak_hands)
        self.hand: Hand | None = None
        self.hand_number = 0

    @property
    def scores(self) -> list[int]:
        """The four running totals (R13), a copy."""
        return list(self.score.scores)

    def is_over(self) -> bool:
        """True when no further hand is to be played (R13, or the fixed number of hands)."""
        return self.score.is_over()

    def start_hand(self, dealt: Sequence[int]) -> Hand:
        """Start the next hand (number :attr:`hand_number` + 1) from four dealt
        card masks; its pass direction follows its number (R3).

        Raises:
            ValueError: the game is over, the hand before is not finished
                (:meth:`end_hand` not called), or the deal is not four
                13-card hands covering the deck (R2).
        """
        if self.score.is_over():
            raise ValueError("the game is over (R13)")
        if self.score.hands_played < self.hand_number:
            raise ValueError(f"hand {self.hand_number} is not finished (end_hand)")
        hand = Hand.new(self.hand_number + 1, dealt)
        self.hand = hand
        self.hand_number += 1
        return hand

    def end_hand(self) -> tuple[list[int], int | None]:
        """Score the finished hand (R11, R12) into the running totals (R13).

        Returns:
            The hand's points after the moon rule and the seat that shot
            the moon, or ``None`` (as :meth:`Hand.points`).

        Raises:
            ValueError: no hand, the hand is not over, or it was scored already.
        """
        hand = self.hand
        if hand is None or self.score.hands_played >= self.hand_number:
            raise ValueError("no hand to score")
        points, moon = hand.points()  # raises if the hand is not over
        self.score.add_hand(points)
        return points, moon

    def ranks(self) -> list[int]:
        """Competition ranks of the totals, lowest first (R13): ``[1, 1, 3, 4]``."""
        return self.score.ranks()
