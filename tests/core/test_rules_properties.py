"""Property tests of the rules engine: random deals, random passes, random legal play.

Checked on every hand (rule ids from RULES.md):
- R11, R12: hand points add to 26, or to 78 with a moon (0 for the shooter, 26 each other);
- R2, R3, R10: no card is lost or duplicated through the pass and the play;
- R5-R9: the legal set is never empty and always a subset of the seat's hand;
- R5: the holder of the 2C after the pass leads trick 1;
- PROTOCOL.md "What a seat may see": ``Hand.view(seat)`` never shows another
  seat's unplayed cards, except the three the seat itself passed.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.core.cards import CARD_NAMES, FULL_DECK, TWO_CLUBS_BIT, names_of, parse_card
from arena.core.rules import Hand, Phase, hand_points_after_moon

CARD_NAME_SET = frozenset(CARD_NAMES)

deals = st.permutations(range(52)).map(
    lambda deck: [sum(1 << c for c in deck[13 * s : 13 * s + 13]) for s in range(4)]
)
hand_numbers = st.integers(min_value=1, max_value=16)
# Every example plays a whole hand (13 tricks), so keep the count moderate.
SETTINGS = settings(max_examples=100, deadline=None)


def _cards_in(obj: Any) -> set[str]:
    """Every card name anywhere in a view (keys and values, nested)."""
    found: set[str] = set()
    if isinstance(obj, str):
        if obj in CARD_NAME_SET:
            found.add(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            found |= _cards_in(k) | _cards_in(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            found |= _cards_in(v)
    return found


def _random_pass(rng: random.Random, hand: Hand) -> list[int]:
    passes = []
    for seat in range(4):
        held = [c for c in range(52) if hand.hands[seat] >> c & 1]
        passes.append(sum(1 << c for c in rng.sample(held, 3)))
    return passes


def _check_conservation(hand: Hand) -> None:
    """Every card is in exactly one place: a hand, the current trick, or taken."""
    places = [*hand.hands, *hand.taken]
    trick = 0
    for c in hand.trick:
        assert not trick >> c & 1
        trick |= 1 << c
    places.append(trick)
    union = 0
    total = 0
    for m in places:
        assert not union & m, "a card is in two places"
        union |= m
        total += m.bit_count()
    assert union == FULL_DECK
    assert total == 52
    held = hand.hands[0] | hand.hands[1] | hand.hands[2] | hand.hands[3]
    assert hand.played == FULL_DECK & ~held


def _check_view(hand: Hand, seat: int) -> None:
    """PROTOCOL.md: no other seat's unplayed card, except the three this seat passed."""
    view = hand.view(seat)
    shown = {parse_card(n) for n in _cards_in(view)}
    others_unplayed = 0
    for other in range(4):
        if other != seat:
            others_unplayed |= hand.hands[other]
    own_passed = hand.passed_by(seat)
    for card in shown:
        bit = 1 << card
        if others_unplayed & bit:
            assert own_passed & bit, f"seat {seat} sees {CARD_NAMES[card]} of another seat"
    assert view["hand"] == names_of(hand.hands[seat])
    if seat != hand.turn:
        assert view["legal"] == []


def play_out(hand: Hand, rng: random.Random, views: bool = False) -> None:
    """Pass (if due) and play the hand to its end with random legal moves, checking as it goes.

    With ``views``, every seat's view is checked before every move.
    """
    if hand.phase is Phase.PASS:
        if views:
            for seat in range(4):
                _check_view(hand, seat)
        hand.apply_passes(_random_pass(rng, hand))
    _check_conservation(hand)
    if hand.played == 0:
        # R5: the holder of the 2C after the pass leads trick 1.
        holder = next(s for s in range(4) if hand.hands[s] & TWO_CLUBS_BIT)
        assert hand.turn == hand.leader == holder
    while not hand.is_over():
        legal = hand.legal_mask()
        assert legal, "empty legal set"
        assert legal & ~hand.hands[hand.turn] == 0, "a legal card not in hand"
        if views:
            for seat in range(4):
                _check_view(hand, seat)
        cards = [c for c in range(52) if legal >> c & 1]
        hand.play(rng.choice(cards))
        _check_conservation(hand)
    assert hand.legal_mask() == 0


@SETTINGS
@given(dealt=deals, hand_number=hand_numbers, rng=st.randoms(use_true_random=False))
def test_r11_r12_points_add_to_26_or_78_with_a_moon(
    dealt: list[int], hand_number: int, rng: random.Random
) -> None:
    """R11, R12: raw points add to 26; after the moon rule 26, or 78 with a moon."""
    hand = Hand.new(hand_number, dealt)
    play_out(hand, rng)
    assert sum(hand.taken_points) == 26
    assert sum(t.points for t in hand.tricks) == 26
    points, moon = hand.points()
    if moon is None:
        assert points == hand.taken_points
        assert sum(points) == 26
    else:
        assert hand.taken_points[moon] == 26
        assert points == [0 if s == moon else 26 for s in range(4)]
        assert sum(points) == 78


@SETTINGS
@given(dealt=deals, hand_number=hand_numbers, rng=st.randoms(use_true_random=False))
def test_r3_r10_no_card_lost_or_duplicated(
    dealt: list[int], hand_number: int, rng: random.Random
) -> None:
    """R2, R3, R10: the pass moves exactly three cards per seat; every card is taken once."""
    hand = Hand.new(hand_number, dealt)
    play_out(hand, rng)
    if hand.passes is not None:
        offset = hand.direction.offset
        for seat in range(4):
            assert hand.passes[seat].bit_count() == 3
            assert hand.passes[seat] & ~dealt[seat] == 0
            assert hand.received_by((seat + offset) % 4) == hand.passes[seat]
    seen = 0
    for t in hand.tricks:
        for c in t.cards:
            assert not seen >> c & 1
            seen |= 1 << c
    assert seen == FULL_DECK
    assert hand.taken[0] | hand.taken[1] | hand.taken[2] | hand.taken[3] == FULL_DECK


# Every seat's view is built and searched before every move: fewer examples.
@settings(max_examples=40, deadline=None)
@given(dealt=deals, hand_number=hand_numbers, rng=st.randoms(use_true_random=False))
def test_r5_to_r9_legal_set_nonempty_subset_and_views_private(
    dealt: list[int], hand_number: int, rng: random.Random
) -> None:
    """R5-R9 and PROTOCOL.md: checked at every step inside play_out."""
    hand = Hand.new(hand_number, dealt)
    play_out(hand, rng, views=True)
    assert len(hand.tricks) == 13
    for seat in range(4):
        _check_view(hand, seat)


@SETTINGS
@given(dealt=deals, hand_number=hand_numbers, rng=st.randoms(use_true_random=False))
def test_copy_plays_the_same_as_the_original(
    dealt: list[int], hand_number: int, rng: random.Random
) -> None:
    """Hand.copy(): a copy taken mid-hand and played the same way ends the same."""
    hand = Hand.new(hand_number, dealt)
    if hand.phase is Phase.PASS:
        hand.apply_passes(_random_pass(rng, hand))
    for _ in range(rng.randrange(52)):
        cards = [c for c in range(52) if hand.legal_mask() >> c & 1]
        hand.play(rng.choice(cards))
    other = hand.copy()
    seed = rng.random()
    play_out(hand, random.Random(seed))
    play_out(other, random.Random(seed))
    assert hand.tricks == other.tricks
    assert hand.points() == other.points()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 26), min_size=3, max_size=3).map(sorted), st.permutations(range(4)))
def test_r12_moon_only_for_all_26(cuts: list[int], order: list[int]) -> None:
    """R12: hand_points_after_moon changes the points only when one seat has all 26."""
    parts = [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], 26 - cuts[2]]
    raw = [parts[i] for i in order]
    assert sum(raw) == 26
    points, moon = hand_points_after_moon(raw)
    if 26 in raw:
        assert moon == raw.index(26)
        assert sorted(points) == [0, 26, 26, 26]
    else:
        assert moon is None
        assert points == raw


@SETTINGS
@given(
    dealt=deals,
    hand_number=hand_numbers,
    rng=st.randoms(use_true_random=False),
    seed=st.integers(0, 2**32),
)
def test_random_playout_plays_like_play_with_the_same_draws(
    dealt: list[int], hand_number: int, rng: random.Random, seed: int
) -> None:
    """Hand.random_playout (the simulation fast path) equals play(legal_cards()[k]) per move."""
    hand = Hand.new(hand_number, dealt)
    if hand.phase is Phase.PASS:
        hand.apply_passes(_random_pass(rng, hand))
    for _ in range(rng.randrange(52)):
        legal = hand.legal_cards()
        hand.play(legal[rng.randrange(len(legal))])
    fast = hand.copy()
    result = fast.random_playout(random.Random(seed))
    draws = random.Random(seed)
    while not hand.is_over():
        legal = hand.legal_cards()
        hand.play(legal[draws.randrange(len(legal))])
    assert fast.tricks == hand.tricks
    assert fast.taken == hand.taken
    assert result == hand.points()
    assert fast.is_over()
