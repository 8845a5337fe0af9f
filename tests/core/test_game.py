"""The whole game (arena/core/rules.py ``Game``) and the deal functions, each
test named for the rule it checks (R-ids of RULES.md)."""

from __future__ import annotations

import pytest
from rules_helpers import cards, make_hand, mask, names

from arena.core.cards import FULL_DECK
from arena.core.rules import (
    Game,
    GameScore,
    Hand,
    IllegalMoveError,
    PassDirection,
    Phase,
    deal_hands,
    deal_name,
    deal_with,
    default_pass,
    default_play,
    ladder_deal_key,
    pass_mask,
    round_robin_deal_key,
    shuffled_deck,
    table_deal,
)

# Each seat holds one whole suit (seat 0 clubs ... seat 3 hearts).
SUITED = [
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
]
KEY = bytes(range(32))


def play_low(hand: Hand) -> None:
    """Default passes and default plays (the referee's default moves) to the end."""
    if hand.phase is Phase.PASS:
        hand.apply_passes([default_pass(hand.hands[s]) for s in range(4)])
    while not hand.is_over():
        hand.play(default_play(hand.legal_mask()))


def play_game(game: Game, deal_key: str) -> list[Hand]:
    hands = []
    while not game.is_over():
        hand = game.start_hand(deal_hands(deal_name(deal_key, game.hand_number + 1)))
        play_low(hand)
        game.end_hand()
        hands.append(hand)
    return hands


# -- R1, R2: not a card, a card not held ------------------------------------------------


def test_r1_play_52_and_minus_1_raise_illegal_move_error_naming_r1() -> None:
    """R1: the deck is cards 0..51: play(52) and play(-1) raise IllegalMoveError
    (rule R1), not IndexError or ValueError from a shift, and change nothing."""
    hand = make_hand(SUITED)  # hand 4, a hold hand: seat 0 leads the 2C
    for card in (52, -1, 60):
        with pytest.raises(IllegalMoveError) as exc:
            hand.play(card)
        assert exc.value.rule == "R1" and exc.value.seat == 0
        assert f"{card} is not a card" in str(exc.value)
        with pytest.raises(IllegalMoveError) as exc:
            hand.check_play(0, card)
        assert exc.value.rule == "R1"
    assert hand.turn == 0 and names(hand.legal_mask()) == ["2C"] and hand.played == 0


def test_r1_a_pass_of_something_that_is_not_a_card_names_r1() -> None:
    """R1 on the pass: a number outside 0..51 in a pass list, or a mask bit
    past the deck, is refused as R1 (pass_mask used to raise ValueError for -1)."""
    for bad in ([-1, 0, 1], [0, 1, 52]):
        with pytest.raises(IllegalMoveError) as exc:
            pass_mask(2, bad)
        assert exc.value.rule == "R1" and exc.value.seat == 2
    hand = make_hand(SUITED, hand_number=1)
    with pytest.raises(IllegalMoveError) as exc:
        hand.check_pass(0, mask("2C 3C") | 1 << 52)
    assert exc.value.rule == "R1"
    assert hand.phase is Phase.PASS


def test_r2_a_card_held_by_another_seat_names_r2() -> None:
    """R2: seat 0 (all clubs) leading the 2D, held by seat 1, breaks R2, not R6."""
    hand = make_hand(SUITED)
    with pytest.raises(IllegalMoveError, match="does not hold 2D") as exc:
        hand.check_play(0, mask("2D").bit_length() - 1)
    assert exc.value.rule == "R2"


# -- R2: deals ------------------------------------------------------------------------


def test_r2_deal_name_is_the_deal_key_and_hand_number() -> None:
    """R2: the public name of a deal, a record's ``deal_seed``."""
    assert deal_name("r1-t3", 2) == "r1-t3:2"
    assert deal_name("L7", 12) == "L7:12"
    assert deal_name(round_robin_deal_key(1, 3), 2) == "r1-t3:2"
    assert deal_name(ladder_deal_key(7), 12) == "L7:12"


def test_r2_table_deal_is_the_keyed_deal_of_the_hand_number() -> None:
    """R2: hand h of a table is deal_hands(str(h), table key); the fixed vector
    of protocol/DEALS.md (tests/core/test_rules.py has it too)."""
    assert [names(m) for m in table_deal(KEY, 1)] == [
        cards("2C 8C QC 3D 4D 8D 9D 2S 4S KS 5H 8H KH"),
        cards("3C 7C 2D 6D 7D JD AD 5S 9S TS QS 4H AH"),
        cards("9C TC JC KC 5D QD 7S 8S JS 3H 9H JH QH"),
        cards("4C 5C 6C AC TD KD 3S 6S AS 2H 6H 7H TH"),
    ]
    assert table_deal(KEY, 2) == deal_hands("2", KEY) != table_deal(KEY, 1)


def test_r2_deal_with_places_the_given_cards_and_deals_the_rest_in_shuffle_order() -> None:
    """R2: the checker's constructed deals: given cards stay with their seat,
    the others follow shuffled_deck's order, filling seats 0..3 to 13 each."""
    fixed = [mask("2C 3C"), 0, mask("QS AH"), 0]
    dealt = deal_with(fixed, "2", KEY)
    assert [m.bit_count() for m in dealt] == [13, 13, 13, 13]
    assert dealt[0] | dealt[1] | dealt[2] | dealt[3] == FULL_DECK
    assert dealt[0] & fixed[0] == fixed[0] and dealt[2] & fixed[2] == fixed[2]
    rest = [c for c in shuffled_deck(KEY, "2") if c not in (0, 1, 36, 51)]
    assert dealt[0] == fixed[0] | sum(1 << c for c in rest[:11])
    assert dealt[1] == sum(1 << c for c in rest[11:24])
    assert dealt[3] == sum(1 << c for c in rest[35:])
    assert deal_with([0, 0, 0, 0], "2", KEY) == deal_hands("2", KEY)


def test_r2_deal_with_refuses_a_card_twice_too_many_cards_or_no_card() -> None:
    with pytest.raises(ValueError, match=r"given twice: QS \(R2\)"):
        deal_with([mask("QS"), mask("QS 2C"), 0, 0], "x")
    with pytest.raises(ValueError, match="14 cards, more than 13"):
        deal_with([mask(SUITED[0]) | mask("2D"), 0, 0, 0], "x")
    with pytest.raises(ValueError, match="R1"):
        deal_with([1 << 52, 0, 0, 0], "x")
    with pytest.raises(ValueError, match="four hands"):
        deal_with([0, 0, 0], "x")


# -- R3, R13: the whole game -------------------------------------------------------------


def test_r3_the_pass_cycle_follows_the_hand_number_through_the_game() -> None:
    """R3: left, right, across, hold, then left again (hand 5 onwards)."""
    game = Game(target_score=None, hands=6)
    hands = play_game(game, "cycle")
    assert [h.direction for h in hands] == [
        PassDirection.LEFT,
        PassDirection.RIGHT,
        PassDirection.ACROSS,
        PassDirection.HOLD,
        PassDirection.LEFT,
        PassDirection.RIGHT,
    ]
    assert [h.hand_number for h in hands] == [1, 2, 3, 4, 5, 6]
    assert hands[3].passes is None and hands[4].passes is not None
    assert game.is_over() and game.hand_number == 6


def test_r13_a_game_to_100_matches_the_hand_by_hand_loop_with_real_totals() -> None:
    """R11-R13: Game adds each hand's points after the moon rule and ends after
    the hand where a total reaches 100 with a single lowest total; the same as
    the loop the referee, synthetic games and benchmarks each used to write."""
    game = Game(target_score=100)
    hands = play_game(game, "r1-t0")
    # The old loop, written out: GameScore and Hand.new by hand number.
    score = GameScore(100)
    number = 0
    while not score.is_over():
        number += 1
        hand = Hand.new(number, deal_hands(f"r1-t0:{number}"))
        play_low(hand)
        score.add_hand(hand.points()[0])
    assert game.scores == score.scores and game.ranks() == score.ranks()
    assert game.hand_number == number == len(hands) == 12
    # Hand 1: seat 3 shoots the moon (R12): 26, 26, 26, 0.
    assert hands[0].points() == ([26, 26, 26, 0], 3)
    assert hands[1].points() == ([0, 1, 5, 20], None)
    assert game.scores == [74, 111, 93, 86] and game.ranks() == [1, 4, 3, 2]
    assert sum(sum(h.points()[0]) for h in hands) == sum(game.scores) == 26 * 11 + 78


def test_r13_a_shared_lowest_total_plays_tie_break_hands_until_it_is_not() -> None:
    """R13: with the target reached and the lowest total shared, hands go on
    (the pass cycle continuing, R3) until the lowest total is not shared."""
    game = Game(target_score=1, max_tiebreak_hands=5)
    hands = play_game(game, "t5")
    assert [h.points()[0] for h in hands] == [[0, 13, 0, 13], [0, 12, 0, 14], [4, 7, 1, 14]]
    assert [h.direction for h in hands] == [
        PassDirection.LEFT,
        PassDirection.RIGHT,
        PassDirection.ACROSS,
    ]
    assert game.scores == [4, 32, 1, 41] and game.ranks() == [2, 3, 1, 4]
    assert game.score.tiebreak_hands == 2


def test_r13_the_tie_break_cap_accepts_a_shared_first_place() -> None:
    """R13 arena setting: after max_tiebreak_hands extra hands the shared
    lowest total is accepted, competition ranks 1, 1."""
    game = Game(target_score=1, max_tiebreak_hands=1)
    hands = play_game(game, "cap15")
    assert [h.points()[0] for h in hands] == [[22, 0, 0, 4], [5, 4, 17, 0]]
    assert game.scores == [27, 4, 17, 4] and game.ranks() == [4, 1, 3, 1]
    assert game.is_over() and game.score.tiebreak_hands == 1


def test_game_refuses_a_hand_out_of_turn() -> None:
    """A hand is started, played and scored, in that order; not after the end."""
    game = Game(target_score=None, hands=1)
    with pytest.raises(ValueError, match="no hand to score"):
        game.end_hand()
    hand = game.start_hand(table_deal(KEY, 1))
    assert hand.hand_number == 1 and hand.direction is PassDirection.LEFT
    with pytest.raises(ValueError, match="hand 1 is not finished"):
        game.start_hand(table_deal(KEY, 2))
    with pytest.raises(ValueError, match="not over"):
        game.end_hand()
    play_low(hand)
    assert game.end_hand() == ([14, 4, 8, 0], None)
    assert game.scores == [14, 4, 8, 0] and game.ranks() == [4, 2, 3, 1]
    with pytest.raises(ValueError, match="no hand to score"):
        game.end_hand()
    assert game.is_over()
    with pytest.raises(ValueError, match="the game is over"):
        game.start_hand(table_deal(KEY, 2))
