"""Speed of the rules engine on equal work, beside OpenSpiel's Hearts (issue 16).

Both engines do the same work per hand, driven from Python in this process:

1. **the same deal**: a shuffled deck made before timing; each engine is
   given those 52 cards (ours: four card masks to ``Hand.new``; OpenSpiel:
   the pass-direction chance action, then 52 deal chance actions, card ``k``
   of the deal order to seat ``k % 4``, as it deals);
2. **the same passes**: three cards per seat drawn before timing (hand
   numbers cycle 1..4: left, right, across, hold), applied by each engine
   (ours: ``apply_passes``; OpenSpiel: 12 single-card actions);
3. **random legal play to the end of the hand**: at each turn ``k =
   rng.randrange(n)`` over the ``n`` legal cards, the ``k``-th played (each
   engine with its own generator of the same seed; the cards differ since
   the engines sort cards differently, the amount of work does not);
4. the hand's points read.

Printed figures, hands per CPU second on one core, each next to OpenSpiel's in
the same run (the engines take turns in short rounds, so the machine's load
affects them alike):

* ``checked``: every card checked by the engine: ``legal_mask()`` then
  ``play(card)``, which tests the card against the legal set again (R5-R9).
  The referee does at most this much per card: it reads ``legal_mask()``,
  tests the bot's card against it itself, then calls ``play_unchecked``;
* ``unchecked``: ``play_unchecked`` after ``legal_mask()`` (search and
  playouts), proven to give the same hands as the checked path by
  ``tests/core/test_rules.py::test_unchecked_play_equals_checked_play``;
* ``playout``: ``Hand.random_playout`` (the same draws as ``unchecked``).

Usage (from the repository root)::

    python benchmarks/engine_speed.py [--seconds S] [--seed N] [--deals N]

OpenSpiel (``pip install ".[bench]"``) is optional; without it only our
figures are printed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core import rules
from arena.core.rules import Hand, PassDirection, Phase, pass_direction


def _nth_card(mask: int, k: int) -> int:  # for measuring older engines without it
    for _ in range(k):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1


nth_card = getattr(rules, "nth_card", _nth_card)
PLAY = Phase.PLAY

#: A prepared hand: its number, the deck (seat ``s`` gets ``deck[13 s: 13 s + 13]``)
#: and each seat's three passed cards (empty on a hold hand).
Prepared = tuple[int, list[int], list[list[int]]]
#: Plays one prepared hand with a generator for the play.
Player = Callable[[Prepared, random.Random], object]

#: OpenSpiel's suit index of each of our suits (ours C D S H, theirs C D H S).
_OS_SUIT = (0, 1, 3, 2)
#: OpenSpiel's action id of each of our cards.
OS_ID = tuple((card % 13) * 4 + _OS_SUIT[card // 13] for card in range(52))
#: Our pass direction (R3, :func:`arena.core.rules.pass_direction`) -> OpenSpiel's
#: pass-direction chance action (0 hold,
#: 1 left, 2 across, 3 right).
OS_DIRECTION = {
    PassDirection.LEFT: 1,
    PassDirection.RIGHT: 3,
    PassDirection.ACROSS: 2,
    PassDirection.HOLD: 0,
}


def prepare(rng: random.Random, count: int) -> list[Prepared]:
    """``count`` hands' deals and passes, drawn once for every engine."""
    out: list[Prepared] = []
    for i in range(count):
        number = i % 4 + 1
        deck = list(range(52))
        rng.shuffle(deck)
        passes = (
            []
            if pass_direction(number) is PassDirection.HOLD
            else [rng.sample(deck[13 * s : 13 * s + 13], 3) for s in range(4)]
        )
        out.append((number, deck, passes))
    return out


_BIT = tuple(1 << c for c in range(52))


def _deal_masks(deck: Sequence[int]) -> list[int]:
    bit = _BIT.__getitem__
    return [sum(map(bit, deck[13 * s : 13 * s + 13])) for s in range(4)]


def _start(prepared: Prepared) -> Hand:
    number, deck, passes = prepared
    hand = Hand.new(number, _deal_masks(deck))
    if passes:
        hand.apply_passes([(1 << a) | (1 << b) | (1 << c) for a, b, c in passes])
    return hand


def checked_hand(prepared: Prepared, rng: random.Random) -> object:
    """Every card checked: ``legal_mask`` then ``play`` (which checks again)."""
    hand = _start(prepared)
    randrange = rng.randrange
    legal_mask = hand.legal_mask
    play = hand.play
    while hand.phase is PLAY:
        legal = legal_mask()
        play(nth_card(legal, randrange(legal.bit_count())))
    return hand.points()


def unchecked_hand(prepared: Prepared, rng: random.Random) -> object:
    """Search's path: ``legal_mask`` then ``play_unchecked``."""
    hand = _start(prepared)
    randrange = rng.randrange
    legal_mask = hand.legal_mask
    play = hand.play_unchecked
    while hand.phase is PLAY:
        legal = legal_mask()
        play(nth_card(legal, randrange(legal.bit_count())))
    return hand.points()


def playout_hand(prepared: Prepared, rng: random.Random) -> object:
    """``Hand.random_playout`` after the same deal and passes."""
    return _start(prepared).random_playout(rng)


def make_openspiel_hand() -> Player | None:
    """OpenSpiel's Hearts on the same work, or None without open-spiel."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("hearts", {"qs_breaks_hearts": False})

    def os_hand(prepared: Prepared, rng: random.Random) -> object:
        number, deck, passes = prepared
        state = game.new_initial_state()
        apply = state.apply_action
        apply(OS_DIRECTION[pass_direction(number)])
        for k in range(52):  # card k of the deal order goes to seat k % 4
            apply(OS_ID[deck[13 * (k % 4) + k // 4]])
        for seat_cards in passes:  # seat 0 first, one card at a time
            for card in seat_cards:
                apply(OS_ID[card])
        randrange = rng.randrange
        legal_actions = state.legal_actions
        is_terminal = state.is_terminal
        while not is_terminal():
            legal = legal_actions()
            apply(legal[randrange(len(legal))])
        return [state.points(s) for s in range(4)]

    return os_hand


def measure(
    players: dict[str, Player], hands: list[Prepared], seconds: float, seed: int
) -> dict[str, float]:
    """Hands per CPU second of each player over about ``seconds`` each, the
    players taking turns in rounds of about a tenth of a second on the same
    prepared hands (in order, round and round). CPU time of this process
    (``time.process_time``), not wall time: on a shared machine the wall
    clock also counts the time other processes hold the core."""
    rngs = {name: random.Random(seed) for name in players}
    done = dict.fromkeys(players, 0)
    spent = dict.fromkeys(players, 0.0)
    for name, play in players.items():  # warm up
        for prepared in hands[:20]:
            play(prepared, rngs[name])
    rounds = max(1, round(seconds / 0.1))
    count = len(hands)
    for _ in range(rounds):
        for name, play in players.items():
            rng = rngs[name]
            n = done[name]
            start = time.process_time()
            deadline = start + seconds / rounds
            while True:
                for _ in range(10):
                    play(hands[n % count], rng)
                    n += 1
                now = time.process_time()
                if now >= deadline:
                    break
            spent[name] += now - start
            done[name] = n
    return {name: done[name] / spent[name] for name in players}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per path (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deals", type=int, default=4000, help="prepared hands (default 4000)")
    args = parser.parse_args(argv)
    hands = prepare(random.Random(args.seed), args.deals)
    players: dict[str, Player] = {
        "checked": checked_hand,
        "unchecked": unchecked_hand,
        "playout": playout_hand,
    }
    os_hand = make_openspiel_hand()
    if os_hand is not None:
        players["openspiel"] = os_hand
    rates = measure(players, hands, args.seconds, args.seed)
    print("equal work: the same deals and passes, random legal play to the end, from Python")
    theirs = rates.get("openspiel")
    print(
        f"openspiel (baseline): {theirs:.0f} hands/s"
        if theirs
        else "openspiel: not installed (pip install '.[bench]')"
    )
    labels = {
        "checked": "engine, checked (legal_mask, play: every card checked)",
        "unchecked": "engine, unchecked (search: legal_mask, play_unchecked)",
        "playout": "engine, Hand.random_playout",
    }
    for name, label in labels.items():
        ratio = f", ratio {rates[name] / theirs:.2f} (goal >= 0.8)" if theirs else ""
        if name != "checked" and theirs:
            ratio = f", ratio {rates[name] / theirs:.2f}"
        print(f"{label}: {rates[name]:.0f} hands/s{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
