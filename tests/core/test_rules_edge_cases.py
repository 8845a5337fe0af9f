"""Edge cases that other Hearts programs got wrong (public bug reports), with exact values.

Each test builds its position from explicit card names (tests/rules_helpers.py)
and names the rule it checks (RULES.md).
"""

from __future__ import annotations

import pytest
from rules_helpers import cards, make_hand, mask, names, play_names

from arena.core.cards import parse_card
from arena.core.rules import (
    Hand,
    IllegalMoveError,
    Phase,
    deal_hands,
    hand_points_after_moon,
    pass_direction,
    pass_mask,
    pass_target,
)

SUITED = [
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
]


def test_edge_1_trick_1_void_in_clubs_with_queen_heart_and_diamond_plays_the_diamond() -> None:
    """R7: void in clubs holding the QS, hearts and one diamond: only the diamond."""
    hand = make_hand(
        [
            "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
            "QS 2D 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
            "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD KH",
            "2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS AH",
        ],
        plays="2C",
    )
    assert hand.turn == 1
    assert names(hand.legal_mask()) == ["2D"]
    for card in ("QS", "2H", "QH"):
        with pytest.raises(IllegalMoveError) as exc:
            hand.play(parse_card(card))
        assert exc.value.rule == "R7"


def test_edge_2_pass_directions_hands_1_to_9_and_targets() -> None:
    """R3: left, right, across, hold, left, right, across, hold, left; exact targets."""
    expected = {
        1: ("left", [1, 2, 3, 0]),
        2: ("right", [3, 0, 1, 2]),
        3: ("across", [2, 3, 0, 1]),
        4: ("hold", [None, None, None, None]),
        5: ("left", [1, 2, 3, 0]),
        6: ("right", [3, 0, 1, 2]),
        7: ("across", [2, 3, 0, 1]),
        8: ("hold", [None, None, None, None]),
        9: ("left", [1, 2, 3, 0]),
    }
    for n, (word, targets) in expected.items():
        direction = pass_direction(n)
        assert direction.value == word, n
        assert [pass_target(s, direction) for s in range(4)] == targets, n
        hand = Hand.new(n, deal_hands(f"edge2:{n}"))
        assert hand.direction is direction
        assert hand.phase is (Phase.PLAY if word == "hold" else Phase.PASS)


def test_edge_3_two_of_clubs_passed_away_new_holder_leads() -> None:
    """R5: seat 0 passes the 2C across (hand 3) to seat 2, who leads it to trick 1."""
    hand = make_hand(
        SUITED,
        hand_number=3,
        passes=["2C 3C 4C", "2D 3D 4D", "2S 3S 4S", "2H 3H 4H"],
    )
    assert hand.turn == hand.leader == 2
    assert names(hand.legal_mask()) == ["2C"]
    assert hand.hands[2] & mask("2C 3C 4C") == mask("2C 3C 4C")
    assert not hand.hands[0] & mask("2C")
    play_names(hand, "2C")
    assert hand.turn == 3
    # Seat 3 received 2D 3D 4D (across from seat 1) and holds no club: R7 leaves the diamonds.
    assert names(hand.legal_mask()) == ["2D", "3D", "4D"]
    play_names(hand, "2D")
    assert hand.turn == 0
    assert names(hand.legal_mask()) == cards("5C 6C 7C 8C 9C TC JC QC KC AC")
    play_names(hand, "5C")
    assert hand.turn == 1
    record = hand.play(parse_card("5D"))
    assert record is not None
    assert record.leader == 2
    assert record.winner == 0  # the 5C beats the led 2C; the diamonds are of another suit


@pytest.mark.parametrize(
    ("bad_pass", "detail"),
    [
        ("AC KC", "got 2"),  # two cards
        ("AC AC KC", "got 2"),  # a duplicate card: as a mask, only two cards
        ("AC KC 2D", "does not hold"),  # a card not held
        ("AC KC QC JC", "got 4"),
    ],
)
def test_edge_4_bad_pass_rejected_naming_r3(bad_pass: str, detail: str) -> None:
    """R3: a pass of two cards, a duplicate, or a card not held raises IllegalMoveError(R3)."""
    hand = make_hand(SUITED, hand_number=1)
    before = list(hand.hands)
    with pytest.raises(IllegalMoveError, match=detail) as exc:
        hand.apply_passes([mask(bad_pass), mask("AD KD QD"), mask("AS KS QS"), mask("AH KH QH")])
    assert exc.value.rule == "R3"
    assert exc.value.seat == 0
    assert "(R3)" in str(exc.value)
    assert hand.hands == before
    assert hand.phase is Phase.PASS


def test_edge_4_duplicate_card_in_a_pass_list_rejected_naming_r3() -> None:
    """R3: a pass given as a card list with a card twice is refused before it becomes a mask."""
    with pytest.raises(IllegalMoveError, match="AC is given twice") as exc:
        pass_mask(0, [parse_card("AC"), parse_card("AC"), parse_card("KC")])
    assert exc.value.rule == "R3"


def test_edge_5_seat_holding_led_suit_playing_another_suit_rejected() -> None:
    """R6: seat 1 holds diamonds on a diamond lead and tries a spade: refused, hand unchanged."""
    hand = make_hand(
        [
            "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2D",
            "AC 3D 4D 5D 2S 3S 4S 5S 6S 7S 8S 9S TS",
            "6D 7D 8D 9D TD JD QD KD AD JS QS KS AS",
            "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        ],
        plays="2C AC",
    )
    # Trick 1: seat 2, void in clubs, discards the 6D; seat 3 (hearts only) a heart.
    play_names(hand, "6D 2H")
    assert hand.turn == 1
    play_names(hand, "2S JS 3H 3C")  # trick 2: seat 2's JS wins
    assert hand.leader == hand.turn == 2
    play_names(hand, "7D 4H 2D")  # trick 3: diamond lead; seat 0 follows with its 2D
    assert hand.turn == 1
    before = (list(hand.hands), list(hand.trick))
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("3S"))
    assert exc.value.rule == "R6"
    assert (list(hand.hands), list(hand.trick)) == before
    assert names(hand.legal_mask()) == ["3D", "4D", "5D"]


def test_edge_6_moon_only_for_all_26() -> None:
    """R12: [0, 9, 16, 1] is not a moon; [26, 0, 0, 0] scores [0, 26, 26, 26]."""
    assert hand_points_after_moon([0, 9, 16, 1]) == ([0, 9, 16, 1], None)
    assert hand_points_after_moon([26, 0, 0, 0]) == ([0, 26, 26, 26], 0)


# Deal for edges 7 and 8 is built per test; each comment gives the tricks played.


def test_edge_7_heart_discarded_on_trick_3_next_leader_may_lead_hearts() -> None:
    """R8, R9: a heart discarded on trick 3 breaks hearts; the next leader may lead one."""
    hand = make_hand(
        [
            "2C 5C 6C 7C 8C 9C TC JC QC KC 2D 3D 2S",
            "3C 4D 5D 6D 7D 8D 9D 2H 3H 4H 5H 6H 7H",
            "4C TD JD QD KD AD 3S 4S 5S 6S 7S 8S 9S",
            "AC TS JS QS KS AS 8H 9H TH JH QH KH AH",
        ],
        plays="2C 3C 4C AC",  # trick 1: seat 3 wins
    )
    assert hand.turn == 3
    assert names(hand.legal_mask()) == cards("TS JS QS KS AS")  # R9: no heart yet
    play_names(hand, "TS 2S 4D 3S")  # trick 2: seat 1 void in spades discards a diamond
    assert hand.turn == 3 and hand.trick_number == 3
    assert not hand.hearts_broken
    play_names(hand, "JS 2D")  # trick 3: seat 0 now void in spades discards a diamond
    play_names(hand, "2H")  # seat 1 discards a heart on trick 3
    assert hand.hearts_broken
    record = hand.play(parse_card("4S"))
    assert record is not None and record.winner == 3 and record.points == 1
    assert hand.turn == 3 and hand.trick_number == 4
    assert names(hand.legal_mask()) == cards("QS KS AS 8H 9H TH JH QH KH AH")
    hand.play(parse_card("AH"))


def test_edge_8_queen_discarded_on_diamond_trick_does_not_break_hearts() -> None:
    """R8, R9: the QS discarded on a diamond trick leaves hearts unbroken; clubs-only lead."""
    hand = make_hand(
        [
            "2C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
            "TC JC QC KC AC AD 2H 3H 4H 5H 6H 7H 8H",
            "3C 4C 2S 3S 4S 5S 6S 7S 8S 9S TS JS KS",
            "5C 6C 7C 8C 9C QS AS 9H TH JH QH KH AH",
        ],
        plays="2C AC 3C 5C",  # trick 1: seat 1 wins
    )
    assert hand.turn == 1
    play_names(hand, "AD 2S QS")  # trick 2: diamond lead, seat 3 discards the queen
    assert not hand.hearts_broken
    record = hand.play(parse_card("2D"))
    assert record is not None and record.winner == 1 and record.points == 13
    assert not hand.hearts_broken
    assert hand.turn == 1
    assert names(hand.legal_mask()) == cards("TC JC QC KC")
    with pytest.raises(IllegalMoveError) as exc:
        hand.play(parse_card("2H"))
    assert exc.value.rule == "R9"
