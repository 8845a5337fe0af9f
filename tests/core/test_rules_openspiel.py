"""Differential test of the rules engine against OpenSpiel's Hearts (R3, R5-R12).

Both engines play the same hands in lock step: the same deal, the same passes
and the same plays, drawn from the intersection of the two legal sets. At every
step the test compares whose turn it is, the legal set, hearts broken, and at
every trick's end the winner and the raw points taken; at the end of the hand
the points after the moon rule (``Hand.points()`` against OpenSpiel's
``state.points(seat)``; its ``returns()`` are 26 minus points, not points).

OpenSpiel (``open-spiel`` 2.0.2, game ``hearts`` with ``qs_breaks_hearts=False``)
differs from RULES.md in exactly two documented ways, which this test accepts
by predicate and nothing else:

(a) R7: on trick 1 a seat void in clubs whose hand is only hearts and the queen
    of spades may play the queen in OpenSpiel (it allows the whole hand); under
    R7 only a heart.
(b) R8: in OpenSpiel any heart played breaks hearts, under R8 only a discarded
    heart does. So after a heart is played to a heart-led trick (a lead by a
    seat holding only hearts, R9) while hearts are unbroken, OpenSpiel says
    hearts are broken and lets a later leader lead a heart; RULES.md does not.

Facts about OpenSpiel used here (found by experiment, see the module-level
tables): card id = rank * 4 + suit with suits C, D, H, S and rank 0 = "2"
(2C = 0, QS = 43); seats 0..3 play to seat + 1; the first chance action is the
pass direction (0 none, 1 left, 2 across, 3 right); the next 52 chance actions
deal card k to seat k % 4; each seat's pass is three single-card actions, seat
0 first. Hearts broken is ``state.hearts_broken()``; the points taken so far
are ``state.points(seat)`` (moon applied at the end); after a trick the
winner is ``state.current_player()`` (the next leader). The last trick's
winner is not exposed: it is checked through the points when that trick
carries points (when it carries none it affects nothing).

Deals are not all uniform: some are heart-heavy or suit-sorted, and some hands
are played by a "shooter" policy, so that the rare positions (the R7
exception, hearts led by an all-hearts hand, voids, moons) occur often enough
to be compared; the test asserts that each did occur.

A failure names the seed and the position; replay it with
``python tests/core/test_rules_openspiel.py SEED``.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter

import pytest

from arena.core.cards import (
    FULL_DECK,
    HEART_MASK,
    HEARTS,
    QS_BIT,
    QUEEN_OF_SPADES,
    SUIT_MASKS,
    cards_of,
    names_of,
)
from arena.core.rules import Hand, PassDirection, Phase

pyspiel = pytest.importorskip("pyspiel")

#: OpenSpiel's suit index of each of our suits (ours C D S H, theirs C D H S).
_OS_SUIT = (0, 1, 3, 2)
#: OpenSpiel's action id of each of our cards.
OS_ID = tuple((card % 13) * 4 + _OS_SUIT[card // 13] for card in range(52))
#: Our card bit of each OpenSpiel card id.
BIT_OF_OS = tuple(1 << OS_ID.index(a) for a in range(52))
#: OpenSpiel's pass-direction chance action of each of our directions.
OS_DIRECTION = {
    PassDirection.HOLD: 0,
    PassDirection.LEFT: 1,
    PassDirection.ACROSS: 2,
    PassDirection.RIGHT: 3,
}

BASE_SEED = 20_240_000
#: Hands of the suite's run. Its rarest position to reach (difference (a), an R7
#: queen) comes about once in 260 hands: 19 times in these 5,000. The slow run
#: plays the hands after them (the 15,000 the suite played before 2026-12-01 too).
CI_HANDS = 5_000
SLOW_HANDS = 200_000


class Divergence(AssertionError):
    """The engines disagree where RULES.md and OpenSpiel are not known to differ."""


def load_game():
    """OpenSpiel's Hearts with the queen not breaking hearts (R9, R14)."""
    return pyspiel.load_game("hearts", {"qs_breaks_hearts": False})


# -- deals -------------------------------------------------------------------


def _deal_uniform(rng: random.Random) -> list[int]:
    deck = list(range(52))
    rng.shuffle(deck)
    return [_mask(deck[13 * s : 13 * s + 13]) for s in range(4)]


def _deal_heart_heavy(rng: random.Random) -> list[int]:
    """One seat gets many hearts (8..13) and maybe the queen: R7 exception, R9 leads, moons."""
    seat = rng.randrange(4)
    hearts = cards_of(HEART_MASK)
    rng.shuffle(hearts)
    k = rng.randint(8, 13)
    heavy = hearts[:k]
    if k < 13 and rng.random() < 0.6:
        heavy.append(QUEEN_OF_SPADES)
    rest = [c for c in range(52) if c not in heavy]
    rng.shuffle(rest)
    heavy += rest[: 13 - len(heavy)]
    taken = _mask(heavy)
    rest = [c for c in range(52) if not taken >> c & 1]
    rng.shuffle(rest)
    hands = [0, 0, 0, 0]
    hands[seat] = taken
    others = [s for s in range(4) if s != seat]
    for i, s in enumerate(others):
        hands[s] = _mask(rest[13 * i : 13 * i + 13])
    return hands


def _deal_suit_sorted(rng: random.Random) -> list[int]:
    """The deck in suit order, lightly shuffled, dealt in runs: long suits and voids."""
    deck = list(range(52))
    for _ in range(rng.randint(0, 20)):
        i, j = rng.randrange(52), rng.randrange(52)
        deck[i], deck[j] = deck[j], deck[i]
    shift = rng.randrange(4)
    return [_mask(deck[13 * ((s + shift) % 4) : 13 * ((s + shift) % 4) + 13]) for s in range(4)]


def _mask(cards: list[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def make_deal(rng: random.Random) -> tuple[str, list[int]]:
    """A deal and the name of how it was made."""
    r = rng.random()
    if r < 0.70:
        return "uniform", _deal_uniform(rng)
    if r < 0.85:
        return "heart-heavy", _deal_heart_heavy(rng)
    return "suit-sorted", _deal_suit_sorted(rng)


# -- one hand in lock step -----------------------------------------------------


def _os_mask(actions: list[int]) -> int:
    m = 0
    for a in actions:
        m |= BIT_OF_OS[a]
    return m


def run_hand(game, seed: int, stats: Counter | None = None) -> None:
    """Play one seeded hand through both engines, raising :class:`Divergence` on a difference."""
    if stats is None:
        stats = Counter()
    rng = random.Random(seed)
    hand_number = rng.randint(1, 12)
    kind, dealt = make_deal(rng)
    stats[kind] += 1
    shooter = rng.randrange(4) if rng.random() < 0.15 else None
    hand = Hand.new(hand_number, dealt)
    where = f"seed {seed} (hand {hand_number}, {hand.direction.value}, {kind} deal)"

    def fail(position: str, what: str) -> None:
        raise Divergence(
            f"{where}, {position}: {what}\n"
            f"  dealt: {[' '.join(names_of(m)) for m in dealt]}\n"
            f"  replay: python tests/core/test_rules_openspiel.py {seed}"
        )

    state = game.new_initial_state()
    state.apply_action(OS_DIRECTION[hand.direction])
    by_seat = [cards_of(m) for m in dealt]
    for j in range(13):
        for seat in range(4):
            state.apply_action(OS_ID[by_seat[seat][j]])

    # The pass (R3, R4): same three cards per seat, seat 0 first in OpenSpiel.
    if hand.phase is Phase.PASS:
        passes = [_mask(rng.sample(by_seat[s], 3)) for s in range(4)]
        for seat in range(4):
            if state.current_player() != seat:
                fail(f"pass of seat {seat}", f"OpenSpiel asks seat {state.current_player()}")
            theirs = _os_mask(state.legal_actions())
            if theirs != dealt[seat]:
                fail(
                    f"pass of seat {seat}",
                    f"OpenSpiel may pass {names_of(theirs)}, the dealt hand is "
                    f"{names_of(dealt[seat])}",
                )
            for card in cards_of(passes[seat]):
                state.apply_action(OS_ID[card])
        hand.apply_passes(passes)
        stats["passed"] += 1

    # Play (R5-R10). Difference (b) is tracked from the plays themselves, not
    # from either engine: a heart played to a heart-led trick (a lead by a seat
    # holding only hearts, R9) before any heart is discarded.
    heart_discarded = False
    led_heart_played = False
    while not hand.is_over():
        seat = hand.turn
        position = f"trick {hand.trick_number}, card {len(hand.trick) + 1}, seat {seat}"
        if state.current_player() != seat:
            fail(position, f"OpenSpiel's turn is seat {state.current_player()}")
        held = hand.hands[seat]
        ours = hand.legal_mask()
        theirs = _os_mask(state.legal_actions())
        difference_b = led_heart_played and not heart_discarded
        if hand.trick_number == 1 and hand.trick and not held & ~HEART_MASK & ~QS_BIT:
            # Difference (a): void in clubs with only hearts and the queen on
            # trick 1; OpenSpiel also allows the queen, R7 does not.
            expected = theirs & ~QS_BIT
            if held & QS_BIT:
                stats["difference (a): R7 queen"] += 1
        elif not hand.trick and difference_b and theirs & ~HEART_MASK:
            # Difference (b): OpenSpiel counts the heart as breaking hearts
            # and allows a heart lead; R9 does not while the leader holds
            # something else.
            expected = theirs & ~HEART_MASK
            if theirs & HEART_MASK:
                stats["difference (b): heart lead"] += 1
        else:
            expected = theirs
        if ours != expected:
            fail(
                position,
                f"legal sets differ: ours {names_of(ours)}, OpenSpiel {names_of(theirs)}"
                f" (ours expected {names_of(expected)}); hand {names_of(held)},"
                f" hearts broken: ours {hand.hearts_broken}, OpenSpiel {state.hearts_broken()}",
            )
        if not hand.trick and hand.trick_number > 1 and ours & HEART_MASK and held & ~HEART_MASK:
            stats["heart lead allowed"] += 1
        if hand.trick and not held & SUIT_MASKS[hand.led_suit]:
            stats["void"] += 1

        # The move: from the intersection of the two legal sets.
        legal = cards_of(ours & theirs)
        if shooter is None:
            card = legal[rng.randrange(len(legal))]
        elif seat == shooter:
            card = max(legal, key=lambda c: (c % 13, c))  # highest rank: win tricks
        else:
            card = min(legal, key=lambda c: (c % 13, -c))  # lowest rank: duck

        if card // 13 == HEARTS:
            if hand.trick and hand.led_suit != HEARTS:
                heart_discarded = True
            elif not heart_discarded:
                if not led_heart_played:
                    stats["heart played to an unbroken heart-led trick"] += 1
                led_heart_played = True
        record = hand.play(card)
        state.apply_action(OS_ID[card])

        broken_os = state.hearts_broken()
        if led_heart_played and not heart_discarded:
            ok = broken_os and not hand.hearts_broken  # difference (b)
        else:
            ok = broken_os == hand.hearts_broken
        if not ok:
            fail(
                f"{position} after {names_of(1 << card)[0]}",
                f"hearts broken: ours {hand.hearts_broken}, OpenSpiel {broken_os}"
                f" (a heart discarded: {heart_discarded}, a heart played to a heart-led"
                f" trick: {led_heart_played})",
            )

        if record is not None:
            stats["tricks"] += 1
            if not state.is_terminal():
                if state.current_player() != record.winner:
                    fail(
                        f"end of trick {len(hand.tricks)}",
                        f"winner: ours {record.winner}, OpenSpiel {state.current_player()}",
                    )
                os_points = [state.points(s) for s in range(4)]
                if os_points != hand.taken_points:
                    fail(
                        f"end of trick {len(hand.tricks)}",
                        f"points taken: ours {hand.taken_points}, OpenSpiel {os_points}",
                    )
            else:
                before = [
                    hand.taken_points[s] - (record.points if s == record.winner else 0)
                    for s in range(4)
                ]
                _check_end(hand, state, before, record, fail, stats)
    if not state.is_terminal():
        fail("end of hand", "OpenSpiel's hand is not over")


def _check_end(hand: Hand, state, before, record, fail, stats: Counter) -> None:
    """Final points (R11, R12) and the last trick's winner as far as OpenSpiel shows it."""
    points, moon = hand.points()
    os_points = [state.points(s) for s in range(4)]
    if os_points != points:
        fail("end of hand", f"points: ours {points} (moon {moon}), OpenSpiel {os_points}")
    returns = state.returns()
    if [26 - p for p in points] != [int(r) for r in returns]:
        fail("end of hand", f"OpenSpiel returns {returns} are not 26 - points {points}")
    if moon is not None:
        stats["moon"] += 1
    if record.points:
        if sum(os_points) == 78:  # a moon: the shooter took this trick too
            os_winner = os_points.index(0)
        else:
            deltas = [os_points[s] - before[s] for s in range(4)]
            os_winner = next(s for s in range(4) if deltas[s])
        if os_winner != record.winner:
            fail("end of trick 13", f"winner: ours {record.winner}, OpenSpiel {os_winner}")
    if hand.played != FULL_DECK or any(hand.hands):
        fail("end of hand", "cards left over")
    if sum(hand.taken_points) != 26:
        fail("end of hand", f"raw points {hand.taken_points} do not add to 26")
    if hand.taken[0] | hand.taken[1] | hand.taken[2] | hand.taken[3] != FULL_DECK:
        fail("end of hand", "cards taken do not cover the deck")


def run_many(count: int, base_seed: int = BASE_SEED) -> Counter:
    game = load_game()
    stats: Counter = Counter()
    for seed in range(base_seed, base_seed + count):
        run_hand(game, seed, stats)
    return stats


def _check_coverage(stats: Counter, count: int) -> None:
    """The rare positions the differential test is meant to reach did occur."""
    assert stats["tricks"] == 13 * count
    for key in (
        "difference (a): R7 queen",
        "difference (b): heart lead",
        "heart played to an unbroken heart-led trick",
        "heart lead allowed",
        "moon",
        "void",
        "passed",
        "heart-heavy",
        "suit-sorted",
    ):
        assert stats[key] > 0, f"the differential test never reached: {key} ({dict(stats)})"


@pytest.mark.timeout(600)
def test_openspiel_lock_step_5000_hands() -> None:
    """5,000 seeded hands agree with OpenSpiel except differences (a) and (b)."""
    stats = run_many(CI_HANDS)
    _check_coverage(stats, CI_HANDS)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_openspiel_lock_step_many_hands() -> None:
    """A larger run (``pytest -m slow``)."""
    stats = run_many(SLOW_HANDS, base_seed=BASE_SEED + CI_HANDS)
    _check_coverage(stats, SLOW_HANDS)


def test_openspiel_card_ids() -> None:
    """The card-id mapping agrees with OpenSpiel's own card names."""
    state = load_game().new_initial_state()
    state.apply_action(0)
    from arena.core.cards import CARD_NAMES

    for card in range(52):
        assert state.action_to_string(OS_ID[card]) == CARD_NAMES[card]
    assert OS_ID[0] == 0
    assert OS_ID[QUEEN_OF_SPADES] == 43


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for arg in sys.argv[1:]:
            run_hand(load_game(), int(arg))
            print(f"seed {arg}: agrees")
    else:
        t0 = time.perf_counter()
        s = run_many(CI_HANDS)
        print(f"{CI_HANDS} hands in {time.perf_counter() - t0:.1f} s: {dict(s)}")
