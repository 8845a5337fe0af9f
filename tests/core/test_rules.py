"""Unit tests of the rules engine (arena/core/rules.py), each named for the rule it checks.

Rule ids R1..R14 refer to RULES.md; default moves and what a seat may see refer
to PROTOCOL.md. Positions are built from explicit card names (tests/rules_helpers.py).
"""

from __future__ import annotations

import random

import pytest
from rules_helpers import cards, make_hand, mask, names, play_names

from arena.core.cards import (
    CARD_NAMES,
    FULL_DECK,
    HEART_MASK,
    QUEEN_OF_SPADES,
    RANKS,
    SUITS,
    card_name,
    parse_card,
    points_of,
    rank_of,
    suit_of,
)
from arena.core.rules import (
    MAX_TIEBREAK_HANDS,
    GameScore,
    Hand,
    IllegalMoveError,
    PassDirection,
    Phase,
    competition_ranks,
    deal_hands,
    default_pass,
    default_play,
    hand_points_after_moon,
    pass_direction,
    pass_mask,
    pass_source,
    pass_target,
)

# Each seat holds one whole suit: seat 0 clubs, 1 diamonds, 2 spades, 3 hearts.
SUITED = [
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
]

# A deal for R5-R11 (a hold hand, hand 4). Play used by several tests:
#   trick 1: 0:2C 1:KC 2:AD 3:AC   -> seat 3 (the AD is higher as a number, never wins: R10)
#   trick 2: 3:QS 0:3C 1:2D 2:2S   -> seat 3, 13 points; the queen does not break hearts
#   trick 3: 3:2H 0:KH 1:3D 2:3S   -> seat 0, 2 points; a led heart does not break hearts
#   trick 4: seat 0 leads, holding clubs and AH: clubs only (R9)
RULE_DEAL = [
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KH AH",
    "KC 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS AD",
    "AC QS 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
]
TRICK1 = "2C KC AD AC"
TRICK2 = "QS 3C 2D 2S"
TRICK3 = "2H KH 3D 3S"


def rule_of(exc: pytest.ExceptionInfo[IllegalMoveError]) -> str:
    return exc.value.rule


# -- R1, R2: seats, deck, deal -------------------------------------------------------


def test_r1_deck_has_52_distinct_cards_in_four_suits_ranked_2_to_ace() -> None:
    """R1: 52 cards, 4 suits of 13, ranks 2 < ... < A; names round-trip."""
    assert len(set(CARD_NAMES)) == 52
    assert RANKS == "23456789TJQKA"
    assert sorted(SUITS) == sorted("CDHS")
    for card in range(52):
        assert parse_card(card_name(card)) == card
        assert card == suit_of(card) * 13 + rank_of(card)
    assert card_name(0) == "2C"
    assert card_name(QUEEN_OF_SPADES) == "QS"


def test_r1_a_hand_has_exactly_four_seats() -> None:
    """R1: a deal is four hands; three or five is refused."""
    dealt = deal_hands("r1")
    with pytest.raises(ValueError, match="R1"):
        Hand.new(1, dealt[:3])
    with pytest.raises(ValueError, match="R1"):
        Hand.new(1, [*dealt, 0])


@pytest.mark.parametrize("thing", [None, "3H", 3.0, True, [0], -1, 52])
def test_r1_playing_what_is_not_a_card_is_an_illegal_move(thing: object) -> None:
    """R1: only the 52 cards 0..51 can be played; a name, None, a float, a bool or
    a number off the deck raises IllegalMoveError naming R1 (never a TypeError),
    and the hand is unchanged."""
    hand = Hand.new(1, deal_hands("r1-not-a-card"))
    hand.apply_passes([default_pass(h) for h in hand.hands])
    before = hand.copy()
    for attempt in (hand.play, lambda c: hand.check_play(hand.turn, c)):
        with pytest.raises(IllegalMoveError) as exc:
            attempt(thing)  # type: ignore[operator]
        assert rule_of(exc) == "R1"
        assert exc.value.seat == hand.turn
    assert hand.hands == before.hands and hand.trick == before.trick
    assert hand.legal_mask() == before.legal_mask()


def test_r2_deal_gives_13_disjoint_cards_to_each_seat() -> None:
    """R2: all 52 cards dealt, 13 to each seat, no card twice."""
    for seed in ("a", "b", "7:1:1", "tournament:3:12"):
        hands = deal_hands(seed)
        assert [h.bit_count() for h in hands] == [13, 13, 13, 13]
        assert hands[0] | hands[1] | hands[2] | hands[3] == FULL_DECK
        assert sum(h.bit_count() for h in hands) == 52


def test_r2_deal_is_deterministic_fixed_value() -> None:
    """R2: a deal is derived from its key and label alone (a fixed, replayable
    value; the same vector is in protocol/DEALS.md for other languages)."""
    key = bytes(range(32))
    assert [names(h) for h in deal_hands("1", key)] == [
        cards("2C 8C QC 3D 4D 8D 9D 2S 4S KS 5H 8H KH"),
        cards("3C 7C 2D 6D 7D JD AD 5S 9S TS QS 4H AH"),
        cards("9C TC JC KC 5D QD 7S 8S JS 3H 9H JH QH"),
        cards("4C 5C 6C AC TD KD 3S 6S AS 2H 6H 7H TH"),
    ]
    # The key matters as much as the label: another key, another deal.
    assert deal_hands("1", key) != deal_hands("1", bytes(32))
    assert deal_hands("1", key) != deal_hands("2", key)


def test_r2_different_seeds_give_different_deals() -> None:
    """R2: different seeds deal differently (no collisions among 200 seeds)."""
    deals = {deal_hands(f"7:1:{n}") for n in range(200)}
    assert len(deals) == 200
    assert deal_hands("7:1:1") != deal_hands("7:1:2")
    assert deal_hands("7:1:1") != deal_hands("8:1:1")


def test_r2_hand_new_rejects_a_bad_deal() -> None:
    """R2: a deal with a short hand, a card twice, or a card missing is refused."""
    good = list(deal_hands("r2"))
    short = list(good)
    short[0] &= short[0] - 1  # drop one card
    with pytest.raises(ValueError, match="R2"):
        Hand.new(1, short)
    twice = list(good)
    low0 = good[0] & -good[0]
    low1 = good[1] & -good[1]
    twice[1] = (good[1] ^ low1) | low0  # seat 1 gets one of seat 0's cards
    with pytest.raises(ValueError, match="R2"):
        Hand.new(1, twice)


# -- R3, R4: the pass -------------------------------------------------------------


def test_r3_pass_direction_cycles_left_right_across_hold() -> None:
    """R3: n % 4 == 1 left, 2 right, 3 across, 0 hold; the cycle continues."""
    expected = ["left", "right", "across", "hold"] * 3
    assert [pass_direction(n).value for n in range(1, 13)] == expected
    with pytest.raises(ValueError, match="start at 1"):
        pass_direction(0)


def test_r3_pass_targets_and_sources() -> None:
    """R3: left to seat + 1, right to seat + 3, across to seat + 2, hold none."""
    assert [pass_target(s, PassDirection.LEFT) for s in range(4)] == [1, 2, 3, 0]
    assert [pass_target(s, PassDirection.RIGHT) for s in range(4)] == [3, 0, 1, 2]
    assert [pass_target(s, PassDirection.ACROSS) for s in range(4)] == [2, 3, 0, 1]
    assert [pass_target(s, PassDirection.HOLD) for s in range(4)] == [None] * 4
    assert [pass_source(s, PassDirection.LEFT) for s in range(4)] == [3, 0, 1, 2]
    assert [pass_source(s, PassDirection.RIGHT) for s in range(4)] == [1, 2, 3, 0]
    assert [pass_source(s, PassDirection.ACROSS) for s in range(4)] == [2, 3, 0, 1]
    assert [pass_source(s, PassDirection.HOLD) for s in range(4)] == [None] * 4


def test_r3_passes_move_three_cards_to_the_target() -> None:
    """R3: on hand 2 (right) each seat's three cards go to seat + 3."""
    hand = make_hand(SUITED, hand_number=2)
    assert hand.phase is Phase.PASS
    passes = ["AC KC QC", "AD KD QD", "AS KS QS", "AH KH QH"]
    hand.apply_passes([mask(p) for p in passes])
    assert hand.phase is Phase.PLAY
    for seat in range(4):
        source = (seat + 1) % 4  # right: I receive from seat + 1
        assert hand.received_by(seat) == mask(passes[source])
        assert hand.passed_by(seat) == mask(passes[seat])
        assert hand.hands[seat] & mask(passes[source]) == mask(passes[source])
        assert not hand.hands[seat] & mask(passes[seat])
        assert hand.hands[seat].bit_count() == 13


def test_r3_pass_must_be_three_cards_of_the_own_hand() -> None:
    """R3: two cards, four cards, or a card not held: IllegalMoveError naming R3."""
    hand = make_hand(SUITED, hand_number=1)
    for bad in ("2C 3C", "2C 3C 4C 5C", "2C 3C 2D"):
        with pytest.raises(IllegalMoveError) as exc:
            hand.check_pass(0, mask(bad))
        assert rule_of(exc) == "R3"
        assert exc.value.seat == 0
    hand.check_pass(0, mask("2C 3C 4C"))  # fine


def test_r3_pass_mask_rejects_a_duplicate_card_and_a_wrong_count() -> None:
    """R3: a pass given as a list must be three distinct cards."""
    c = parse_card
    assert pass_mask(2, [c("2C"), c("AS"), c("QH")]) == mask("2C AS QH")
    with pytest.raises(IllegalMoveError, match="twice") as exc:
        pass_mask(2, [c("AS"), c("AS"), c("QH")])
    assert rule_of(exc) == "R3"
    with pytest.raises(IllegalMoveError) as exc:
        pass_mask(2, [c("AS"), c("QH")])
    assert rule_of(exc) == "R3"


def test_r3_no_pass_on_a_hold_hand() -> None:
    """R3: hand 4 is a hold hand: play starts at once, a pass is refused."""
    hand = make_hand(SUITED, hand_number=4)
    assert hand.direction is PassDirection.HOLD
    assert hand.phase is Phase.PLAY
    assert hand.turn == 0  # R5: holder of the 2C
    with pytest.raises(IllegalMoveError) as exc:
        hand.check_pass(0, mask("2C 3C 4C"))
    assert rule_of(exc) == "R3"
    assert hand.passed_by(0) == 0
    assert hand.received_by(0) == 0


def test_r4_received_cards_cannot_be_passed_on() -> None:
    """R4: a pass is judged against the dealt hand, never the cards to be received."""
    hand = make_hand(SUITED, hand_number=1)  # left: seat 1 would receive seat 0's clubs
    with pytest.raises(IllegalMoveError) as exc:
        hand.apply_passes([mask("AC KC QC"), mask("AC KC AD"), mask("AS KS QS"), mask("AH KH QH")])
    assert rule_of(exc) == "R3"
    assert exc.value.seat == 1


def test_r4_a_rejected_pass_leaves_the_hand_unchanged() -> None:
    """R4: the four passes are applied together or not at all."""
    hand = make_hand(SUITED, hand_number=3)
    before = list(hand.hands)
    with pytest.raises(IllegalMoveError):
        hand.apply_passes([mask("AC KC QC"), mask("AD KD QD"), mask("AS KS"), mask("AH KH QH")])
    assert hand.hands == before
    assert hand.phase is Phase.PASS
    assert hand.passes is None


def test_r4_nothing_of_a_pass_is_visible_before_all_four_are_final() -> None:
    """R4: during the pass phase the view shows no passed or received cards."""
    hand = make_hand(SUITED, hand_number=1)
    for seat in range(4):
        view = hand.view(seat)
        assert view["passed"] is None
        assert view["received"] is None
        assert view["legal"] == []
        assert view["hand"] == SUITED[seat].split()
    hand.apply_passes([mask("AC KC QC"), mask("AD KD QD"), mask("AS KS QS"), mask("AH KH QH")])
    view = hand.view(1)
    assert view["passed"] == {"to": 2, "cards": ["QD", "KD", "AD"]}
    assert view["received"] == {"from": 0, "cards": ["QC", "KC", "AC"]}


# -- R5: the two of clubs leads ---------------------------------------------------------


def test_r5_two_of_clubs_holder_leads_it() -> None:
    """R5: the 2C holder leads, and the 2C is the only legal lead of trick 1."""
    hand = make_hand(RULE_DEAL)
    assert hand.turn == hand.leader == 0
    assert names(hand.legal_mask()) == ["2C"]
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("3C"))
    assert rule_of(exc) == "R5"


def test_r5_two_of_clubs_holder_after_the_pass_leads() -> None:
    """R5: the 2C passed to seat 1 (hand 1, left): seat 1 leads it."""
    hand = make_hand(SUITED, hand_number=1)
    hand.apply_passes([mask("2C KC AC"), mask("AD KD QD"), mask("AS KS QS"), mask("AH KH QH")])
    assert hand.turn == hand.leader == 1
    assert names(hand.legal_mask()) == ["2C"]


def test_r5_play_goes_clockwise_and_out_of_turn_is_refused() -> None:
    """R5: after the leader, seat + 1 plays; another seat's play is refused."""
    hand = make_hand(RULE_DEAL, plays="2C")
    assert hand.turn == 1
    with pytest.raises(IllegalMoveError) as exc:
        hand.check_play(2, parse_card("AD"))
    assert rule_of(exc) == "R5"
    play_names(hand, "KC")
    assert hand.turn == 2
    assert hand.trick_seats() == [0, 1]


# -- R6: follow suit ---------------------------------------------------------------


def test_r6_must_follow_suit() -> None:
    """R6: seat 1 holds the KC, its only club, and must play it on the club lead."""
    hand = make_hand(RULE_DEAL, plays="2C")
    assert names(hand.legal_mask()) == ["KC"]
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("2D"))
    assert rule_of(exc) == "R6"


def test_r6_void_seat_may_play_any_card_after_trick_1() -> None:
    """R6: seat 0, void in spades on trick 2, may play any card, hearts included."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} QS")
    assert hand.turn == 0
    assert hand.legal_mask() == hand.hands[0]
    assert "KH" in names(hand.legal_mask())


def test_r2_card_not_held_is_refused_naming_r2_not_r6() -> None:
    """R2: a seat plays from its own 13 cards; a card it does not hold is
    refused as R2 (not R6, follow suit: seat 1 holds a club here)."""
    hand = make_hand(RULE_DEAL, plays="2C")
    with pytest.raises(IllegalMoveError, match="does not hold AC") as exc:
        hand.play(parse_card("AC"))
    assert rule_of(exc) == "R2"
    assert exc.value.seat == 1
    assert hand.turn == 1 and names(hand.legal_mask()) == ["KC"]


# -- R7: first trick ----------------------------------------------------------------


def test_r7_no_heart_and_no_queen_on_trick_1() -> None:
    """R7: seat 2, void in clubs, holds spades and the 2H: the 2H and QS are out."""
    dealt = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS 2H",
        "AS 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    ]
    hand = make_hand(dealt, plays="2C 2D")
    assert names(hand.legal_mask()) == cards("2S 3S 4S 5S 6S 7S 8S 9S TS JS KS")
    for card in ("QS", "2H"):
        with pytest.raises(IllegalMoveError) as exc:
            hand.play(parse_card(card))
        assert rule_of(exc) == "R7"


def test_r7_hearts_only_exception_allows_a_heart() -> None:
    """R7: a seat with no club and nothing but hearts may play a heart on trick 1."""
    hand = make_hand(SUITED, plays="2C 2D 2S")
    assert hand.turn == 3
    assert hand.legal_mask() == HEART_MASK


def test_r7_hearts_only_exception_never_allows_the_queen() -> None:
    """R7: hearts and the queen only: a heart may be played, the queen may not."""
    dealt = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS 2H",
        "QS 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    ]
    hand = make_hand(dealt, plays="2C 2D 2S")
    assert names(hand.legal_mask()) == cards("3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH")
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(QUEEN_OF_SPADES)
    assert rule_of(exc) == "R7"


def test_r7_restrictions_end_after_trick_1() -> None:
    """R7 applies to trick 1 only: on trick 2 a void seat may discard the queen."""
    dealt = [
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD QS",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS AD",
        "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    ]
    hand = make_hand(dealt, plays="2C")
    assert names(hand.legal_mask()) == cards("2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD")
    play_names(hand, "2D 2S 2H")  # 2H: the R7 exception; seat 0 wins and leads again
    assert hand.turn == 0
    play_names(hand, "3C")
    assert "QS" in names(hand.legal_mask())
    hand.play(QUEEN_OF_SPADES)


# -- R8: hearts broken --------------------------------------------------------------


def test_r8_discarded_heart_breaks_hearts_at_once() -> None:
    """R8: a heart discarded on trick 1 (R7 exception) breaks hearts mid-trick."""
    hand = make_hand(SUITED, plays="2C 2D 2S")
    assert not hand.hearts_broken
    play_names(hand, "2H")
    assert hand.hearts_broken
    assert hand.view(0)["hearts_broken"] is True


def test_r8_queen_of_spades_does_not_break_hearts() -> None:
    """R8, R9, R14: playing the queen never breaks hearts."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2}")
    assert not hand.hearts_broken


def test_r8_heart_led_by_all_hearts_hand_does_not_break_hearts() -> None:
    """R8: hearts led (and followed) by a seat holding only hearts: still unbroken."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2} {TRICK3}")
    assert not hand.hearts_broken
    assert hand.tricks[2].winner == 0


def test_r8_heart_discard_later_in_the_hand_breaks_hearts() -> None:
    """R8: seat 3 (hearts only) discards on a club trick: hearts are broken."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2} {TRICK3} 4C 4D 4S")
    assert not hand.hearts_broken
    play_names(hand, "3H")
    assert hand.hearts_broken
    assert names(hand.legal_mask()) == cards("5C 6C 7C 8C 9C TC JC QC AH")


# -- R9: leading hearts ------------------------------------------------------------


def test_r9_queen_of_spades_may_be_led_before_hearts_are_broken() -> None:
    """R9: the leader with the queen and hearts only may lead the queen, no heart."""
    hand = make_hand(RULE_DEAL, plays=TRICK1)
    assert hand.turn == 3
    assert names(hand.legal_mask()) == ["QS"]
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("2H"))
    assert rule_of(exc) == "R9"


def test_r9_all_hearts_leader_may_lead_a_heart() -> None:
    """R9: a leader whose whole hand is hearts may lead one though hearts are unbroken."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2}")
    assert hand.turn == 3
    assert not hand.hearts_broken
    assert names(hand.legal_mask()) == cards("2H 3H 4H 5H 6H 7H 8H 9H TH JH QH")


def test_r9_no_heart_lead_while_unbroken() -> None:
    """R9: after a led (not discarded) heart, a leader with clubs and AH leads clubs only."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2} {TRICK3}")
    assert hand.turn == 0
    assert names(hand.legal_mask()) == cards("4C 5C 6C 7C 8C 9C TC JC QC")
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("AH"))
    assert rule_of(exc) == "R9"


def test_r9_hearts_may_be_led_once_broken() -> None:
    """R9: after a discarded heart, the leader may lead a heart."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2} {TRICK3} 4C 4D 4S 3H")
    assert hand.turn == 0
    assert "AH" in names(hand.legal_mask())
    hand.play(parse_card("AH"))


# -- R10: trick winner ---------------------------------------------------------------


def test_r10_highest_card_of_the_led_suit_wins() -> None:
    """R10: the AC beats the KC; the AD (other suit) never wins; the winner leads."""
    hand = make_hand(RULE_DEAL, plays="2C KC AD")
    record = hand.play(parse_card("AC"))
    assert record is not None
    assert record.cards == tuple(parse_card(c) for c in cards("2C KC AD AC"))
    assert record.leader == 0
    assert record.winner == 3
    assert [record.seat_of(i) for i in range(4)] == [0, 1, 2, 3]
    assert hand.leader == hand.turn == 3
    assert hand.trick_number == 2
    assert hand.taken[3] == mask("2C KC AD AC")


def test_r10_lead_wins_when_nobody_follows() -> None:
    """R10: a lead nobody can follow wins its trick (the QS on trick 2)."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} QS 3C 2D")
    record = hand.play(parse_card("2S"))
    assert record is not None
    assert record.winner == 3  # QS beats 2S; the 3C and 2D are of other suits


# -- R11, R12: points ----------------------------------------------------------------


def test_r11_points_one_per_heart_thirteen_for_the_queen() -> None:
    """R11: hearts 1 each, the queen 13, 26 in all."""
    assert points_of(HEART_MASK) == 13
    assert points_of(1 << QUEEN_OF_SPADES) == 13
    assert points_of(FULL_DECK) == 26
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2} {TRICK3}")
    assert [t.points for t in hand.tricks] == [0, 13, 2]
    assert hand.taken_points == [2, 0, 0, 13]
    assert hand.view(1)["hand_points"] == [2, 0, 0, 13]


def test_r11_hand_points_add_to_26() -> None:
    """R11: a whole hand (default plays) gives points that add to 26."""
    hand = make_hand(RULE_DEAL)
    while not hand.is_over():
        hand.play(default_play(hand.legal_mask()))
    points, moon = hand.points()
    assert sum(points) == 26
    assert moon is None
    assert len(hand.tricks) == 13


def test_r11_points_only_when_the_hand_is_over() -> None:
    """R11: points() before the end of the hand is an error."""
    with pytest.raises(ValueError, match="not over"):
        make_hand(RULE_DEAL).points()


def test_r12_moon_scores_zero_and_26_to_each_other_seat() -> None:
    """R12: seat 0 (all clubs) takes every trick: 0 for it, 26 for each other seat."""
    hand = make_hand(SUITED)
    while not hand.is_over():
        hand.play(default_play(hand.legal_mask()))
    assert hand.taken_points == [26, 0, 0, 0]
    assert hand.points() == ([0, 26, 26, 26], 0)


def test_r12_moon_rule_by_points() -> None:
    """R12: only all 26 points is a moon; 13 hearts without the queen, or 12 with her, is not."""
    assert hand_points_after_moon([0, 0, 26, 0]) == ([26, 26, 0, 26], 2)
    assert hand_points_after_moon([13, 13, 0, 0]) == ([13, 13, 0, 0], None)  # 13 hearts, no QS
    assert hand_points_after_moon([25, 1, 0, 0]) == ([25, 1, 0, 0], None)  # 12 hearts + QS
    assert sum(hand_points_after_moon([0, 0, 26, 0])[0]) == 78


def test_r14_no_variant_rules() -> None:
    """R14: no jack-of-diamonds bonus, the queen breaks nothing and ends nothing, no -26."""
    assert points_of(mask("JD")) == 0
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} {TRICK2}")  # the queen fell on trick 2
    assert hand.phase is Phase.PLAY
    assert hand.trick_number == 3
    assert not hand.hearts_broken
    assert hand_points_after_moon([26, 0, 0, 0]) == ([0, 26, 26, 26], 0)  # never [-26, 0, 0, 0]


# -- R13: game end, ties, ranks ------------------------------------------------------


def test_r13_game_ends_when_a_total_reaches_the_target() -> None:
    """R13: after the hand where a total is >= 100 the game ends; lowest total wins."""
    game = GameScore(100)
    game.add_hand([26, 0, 0, 0])
    for _ in range(2):
        game.add_hand([26, 0, 0, 0])
        assert not game.is_over()
    game.add_hand([22, 3, 0, 1])  # 100 exactly
    assert game.scores == [100, 3, 0, 1]
    assert game.is_over()
    assert game.ranks() == [4, 3, 1, 2]
    with pytest.raises(ValueError, match="over"):
        game.add_hand([26, 0, 0, 0])


def test_r13_several_seats_past_100_lowest_wins() -> None:
    """R13: however many seats pass 100, the lowest total wins."""
    game = GameScore(100)
    game.add_hand([90, 90, 0, 5])
    game.add_hand([13, 13, 0, 0])
    assert game.scores == [103, 103, 0, 5]
    assert game.is_over()
    assert game.ranks() == [3, 3, 1, 2]


def test_r13_shared_lowest_total_plays_on_until_broken() -> None:
    """R13: a shared lowest total at the target plays further hands until it is not."""
    game = GameScore(100)
    game.add_hand([100, 0, 0, 20])
    assert not game.is_over()  # seats 1 and 2 share the lowest total
    assert game.tiebreak_hands == 1
    game.add_hand([0, 0, 0, 0])
    assert not game.is_over()
    game.add_hand([0, 1, 0, 25])
    assert game.is_over()
    assert game.scores == [100, 1, 0, 45]
    assert game.ranks() == [4, 2, 1, 3]


def test_r13_tiebreak_cap_shares_the_rank() -> None:
    """R13 arena setting: after max_tiebreak_hands extra hands a tie is accepted."""
    game = GameScore(100, max_tiebreak_hands=3)
    game.add_hand([100, 0, 0, 50])
    hands = 1
    while not game.is_over():
        game.add_hand([0, 0, 0, 0])
        hands += 1
    assert hands == 1 + 3
    assert game.ranks() == [4, 1, 1, 3]
    assert MAX_TIEBREAK_HANDS == 50
    assert GameScore(100).max_tiebreak_hands == MAX_TIEBREAK_HANDS


def test_r13_tie_not_at_the_bottom_does_not_extend() -> None:
    """R13: only a shared *lowest* total plays on; competition ranks 1, 2, 2, 4."""
    game = GameScore(100)
    game.add_hand([5, 100, 60, 60])
    assert game.is_over()
    assert game.ranks() == [1, 4, 2, 2]


def test_r13_fixed_number_of_hands() -> None:
    """Arena setting: a fixed-hands game stops after exactly that many, ties shared."""
    game = GameScore(target_score=None, hands=2)
    game.add_hand([150, 0, 0, 0])
    assert not game.is_over()  # no target: 150 does not end it
    game.add_hand([0, 5, 0, 5])
    assert game.is_over()
    assert game.ranks() == [4, 2, 1, 2]
    with pytest.raises(ValueError, match="exactly one"):
        GameScore(target_score=100, hands=3)
    with pytest.raises(ValueError, match="exactly one"):
        GameScore(target_score=None, hands=None)
    with pytest.raises(ValueError, match="at least 1"):
        GameScore(target_score=None, hands=0)


def test_r13_competition_ranks() -> None:
    """R13 / PROTOCOL game_end: equal totals share a rank, competition style 1, 1, 3, 4."""
    assert competition_ranks([5, 5, 9, 12]) == [1, 1, 3, 4]
    assert competition_ranks([12, 9, 5, 5]) == [4, 3, 1, 1]
    assert competition_ranks([7, 7, 7, 7]) == [1, 1, 1, 1]
    assert competition_ranks([1, 2, 2, 3]) == [1, 2, 2, 4]


def test_worked_check_from_rules_md() -> None:
    """RULES.md worked check: 18, 6, 2, 0 then a moon by the fourth seat -> 44, 32, 28, 0."""
    game = GameScore(100)
    points1, moon1 = hand_points_after_moon([18, 6, 2, 0])
    assert (points1, moon1) == ([18, 6, 2, 0], None)
    game.add_hand(points1)
    points2, moon2 = hand_points_after_moon([0, 0, 0, 26])
    assert (points2, moon2) == ([26, 26, 26, 0], 3)
    game.add_hand(points2)
    assert game.scores == [44, 32, 28, 0]
    assert not game.is_over()


# -- Default moves (PROTOCOL.md, Faults) ----------------------------------------------


def test_default_play_is_the_first_card_of_legal() -> None:
    """PROTOCOL.md: the default play is the first card of legal in sort order C, D, S, H."""
    assert CARD_NAMES[default_play(mask("AC 2D"))] == "AC"
    assert CARD_NAMES[default_play(mask("2H QS 9D"))] == "9D"
    assert CARD_NAMES[default_play(mask("KH 3H"))] == "3H"


def test_default_pass_three_highest_by_rank_ties_h_s_d_c() -> None:
    """PROTOCOL.md: three highest by rank; ties by suit H, S, D, C."""
    assert names(default_pass(mask("AC AD AS AH 2C 3D 4S 5H 6C 7D 8S 9H TC"))) == [
        "AD",
        "AS",
        "AH",
    ]
    assert names(default_pass(mask("AC KD KS KH 2C 3D 4S 5H 6C 7D 8S 9H TC"))) == [
        "AC",
        "KS",
        "KH",
    ]
    assert names(default_pass(mask("QC QD 2S 3H 4C 5D 6S 7H 8C 9D TS JH 2C"))) == [
        "QC",
        "QD",
        "JH",
    ]
    assert names(default_pass(mask("JC JD 2S 3H 4C 5D 6S 7H 8C 9D TS 2D 2C"))) == [
        "JC",
        "JD",
        "TS",
    ]
    with pytest.raises(ValueError, match="three cards"):
        default_pass(mask("AC KC"))


# -- Copy, random playout, view ---------------------------------------------------------


def test_copy_is_independent() -> None:
    """Hand.copy(): playing on the copy leaves the original as it was."""
    hand = make_hand(RULE_DEAL, plays="2C KC")
    other = hand.copy()
    play_names(other, "AD AC QS")
    assert len(hand.trick) == 2
    assert hand.turn == 2
    assert hand.tricks == []
    assert len(other.tricks) == 1
    assert hand.hands[3] & (1 << QUEEN_OF_SPADES)


def test_random_playout_finishes_the_hand_and_needs_the_pass_first() -> None:
    """Hand.random_playout plays to the end (R11: 26 raw points); refused before the pass."""
    with pytest.raises(ValueError, match="pass"):
        make_hand(SUITED, hand_number=1).random_playout(random.Random(1))
    hand = make_hand(RULE_DEAL, plays=TRICK1)
    points, moon = hand.random_playout(random.Random(1))
    assert hand.is_over()
    assert sum(hand.taken_points) == 26
    assert (points, moon) == hand.points()


def test_view_shows_own_hand_legal_and_played_cards() -> None:
    """PROTOCOL.md play request fields from Hand.view: own hand, legal, trick, tricks."""
    hand = make_hand(RULE_DEAL, plays=f"{TRICK1} QS")
    view = hand.view(0)
    assert view["seat"] == 0
    assert view["trick_number"] == 2
    assert view["leader"] == 3
    assert view["trick"] == [{"seat": 3, "card": "QS"}]
    assert view["tricks"] == [
        {
            "leader": 0,
            "cards": [
                {"seat": 0, "card": "2C"},
                {"seat": 1, "card": "KC"},
                {"seat": 2, "card": "AD"},
                {"seat": 3, "card": "AC"},
            ],
            "winner": 3,
            "points": 0,
        }
    ]
    assert view["hand"] == cards("3C 4C 5C 6C 7C 8C 9C TC JC QC KH AH")
    assert view["legal"] == view["hand"]
    assert view["hearts_broken"] is False
    assert view["passed"] is None
    assert view["received"] is None
    assert hand.view(1)["legal"] == []


def _hand_state(hand: Hand) -> tuple[object, ...]:
    return (
        hand.phase,
        hand.hands,
        hand.turn,
        hand.leader,
        hand.trick,
        hand.trick_number,
        hand.hearts_broken,
        hand.played,
        hand.taken,
        hand.taken_points,
        hand.tricks,
    )


def test_unchecked_play_equals_checked_play() -> None:
    """The unchecked path (play_unchecked, random_playout) gives the same
    hand as the checked one (play) card for card: 400 random hands, with
    passes, compared after every card, then the points and moon seat."""
    from arena.core.rules import nth_card

    rng = random.Random(16)
    for n in range(400):
        deck = list(range(52))
        rng.shuffle(deck)
        dealt = [sum(1 << c for c in deck[13 * s : 13 * s + 13]) for s in range(4)]
        checked = Hand.new(n % 4 + 1, dealt)
        if checked.phase is Phase.PASS:
            checked.apply_passes(
                [sum(1 << c for c in rng.sample(deck[13 * s : 13 * s + 13], 3)) for s in range(4)]
            )
        unchecked = checked.copy()
        playout = checked.copy()
        seed = rng.random()
        draws = random.Random(seed)
        while checked.phase is Phase.PLAY:
            legal = checked.legal_mask()
            assert legal == unchecked.legal_mask() == mask(" ".join(names(legal)))
            k = draws.randrange(legal.bit_count())
            card = nth_card(legal, k)
            assert card == [c for c in range(52) if legal >> c & 1][k]
            assert checked.play(card) == unchecked.play_unchecked(card)
            assert _hand_state(checked) == _hand_state(unchecked)
        assert playout.random_playout(random.Random(seed)) == checked.points()
        assert _hand_state(playout) == _hand_state(checked)
        assert checked.points() == unchecked.points()


def test_nth_card_is_the_kth_card_in_sort_order() -> None:
    from arena.core.rules import nth_card

    held = mask("2C TD QS 3H AH")
    assert [CARD_NAMES[nth_card(held, k)] for k in range(5)] == ["2C", "TD", "QS", "3H", "AH"]
    with pytest.raises(ValueError, match="too few"):
        nth_card(held, 5)
    with pytest.raises(ValueError, match="at least 0"):
        nth_card(held, -1)


def test_a_refused_play_leaves_the_cached_legal_set_right() -> None:
    """play() checks against the legal set kept for the position: a refused
    card changes nothing, and after a card is played the set is the new one."""
    hand = make_hand(RULE_DEAL)
    assert names(hand.legal_mask()) == ["2C"]
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("3C"))
    assert rule_of(exc) == "R5"
    assert names(hand.legal_mask()) == ["2C"] and hand.turn == 0
    hand.play(parse_card("2C"))
    assert names(hand.legal_mask()) == ["KC"] and hand.turn == 1
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("2D"))
    assert rule_of(exc) == "R6"
    copy = hand.copy()
    assert copy.play(parse_card("KC")) is None
    # seat 2, void in clubs, holds no heart nor the queen: its whole hand (R6, R7)
    assert copy.legal_mask() == mask(RULE_DEAL[2]) and copy.turn == 2
    assert names(hand.legal_mask()) == ["KC"]  # the original kept its own
