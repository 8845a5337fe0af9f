"""Random-playout speed of the rules engine, beside OpenSpiel's Hearts driven the same way.

Both engines play whole hands from Python with random choices: a random deal,
a random pass of three cards per seat (hand numbers cycle 1..4, so left, right,
across, hold), then a random legal card at every turn, until the hand is over
and its points are read. The figure is hands per second on one core.

The main figure (``engine``) plays each card through the public step API
(``legal_mask`` then ``play``), as OpenSpiel is driven through
``legal_actions`` then ``apply_action``; a second figure plays the hand with
``Hand.random_playout``, the fast path for bots' simulations. The engines
take turns in short rounds so that the machine's load affects both alike.

Usage (from the repository root)::

    python benchmarks/engine_speed.py [--seconds S] [--seed N]

OpenSpiel (``pip install open-spiel``) is optional; without it only our figure
is printed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.cards import cards_of
from arena.rules import Hand, Phase


def ours_hand(rng: random.Random, hand_number: int) -> None:
    """One random hand through arena.rules."""
    deck = list(range(52))
    rng.shuffle(deck)
    dealt = [0, 0, 0, 0]
    for i, card in enumerate(deck):
        dealt[i & 3] |= 1 << card
    hand = Hand.new(hand_number, dealt)
    if hand.phase is Phase.PASS:
        passes = []
        for seat in range(4):
            passes.append(sum(1 << c for c in rng.sample(cards_of(dealt[seat]), 3)))
        hand.apply_passes(passes)
    while hand.phase is Phase.PLAY:
        legal = cards_of(hand.legal_mask())
        hand.play(legal[rng.randrange(len(legal))])
    hand.points()


def make_openspiel_hand() -> Callable[[random.Random, int], None] | None:
    """One random hand through OpenSpiel's Hearts, or None without open-spiel."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game("hearts", {"qs_breaks_hearts": False})
    direction = {1: 1, 2: 3, 3: 2, 0: 0}  # our hand number % 4 -> OpenSpiel's pass direction

    def os_hand(rng: random.Random, hand_number: int) -> None:
        state = game.new_initial_state()
        state.apply_action(direction[hand_number % 4])
        while not state.is_terminal():  # the deal, the pass and the play
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
        [state.points(s) for s in range(4)]

    return os_hand


def playout_hand(rng: random.Random, hand_number: int) -> None:
    """One random hand through arena.rules using ``Hand.random_playout`` for the play."""
    deck = list(range(52))
    rng.shuffle(deck)
    dealt = [0, 0, 0, 0]
    for i, card in enumerate(deck):
        dealt[i & 3] |= 1 << card
    hand = Hand.new(hand_number, dealt)
    if hand.phase is Phase.PASS:
        passes = []
        for seat in range(4):
            passes.append(sum(1 << c for c in rng.sample(cards_of(dealt[seat]), 3)))
        hand.apply_passes(passes)
    hand.random_playout(rng)


def measure(
    players: dict[str, Callable[[random.Random, int], None]], seconds: float, seed: int
) -> dict[str, float]:
    """Hands per second of each player, over about ``seconds`` each.

    The players take turns in short rounds, so that a change in the machine's
    load during the run affects them alike and the ratio stays fair.
    """
    rngs = {name: random.Random(seed) for name in players}
    hands = dict.fromkeys(players, 0)
    spent = dict.fromkeys(players, 0.0)
    for name, play in players.items():  # warm up
        for n in range(20):
            play(rngs[name], n % 4 + 1)
    rounds = max(1, round(seconds / 0.25))
    for _ in range(rounds):
        for name, play in players.items():
            rng = rngs[name]
            n = hands[name]
            start = time.perf_counter()
            deadline = start + seconds / rounds
            while True:
                for _ in range(10):
                    play(rng, n % 4 + 1)
                    n += 1
                now = time.perf_counter()
                if now >= deadline:
                    break
            spent[name] += now - start
            hands[name] = n
    return {name: hands[name] / spent[name] for name in players}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per engine (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    players: dict[str, Callable[[random.Random, int], None]] = {
        "engine": ours_hand,
        "playout": playout_hand,
    }
    os_hand = make_openspiel_hand()
    if os_hand is not None:
        players["openspiel"] = os_hand
    rates = measure(players, args.seconds, args.seed)
    ours = rates["engine"]
    if os_hand is None:
        print(f"engine: {ours:.0f} hands/s, openspiel: not installed")
    else:
        theirs = rates["openspiel"]
        print(
            f"engine: {ours:.0f} hands/s, openspiel: {theirs:.0f} hands/s,"
            f" ratio: {ours / theirs:.2f}"
        )
    print(
        f"engine with Hand.random_playout: {rates['playout']:.0f} hands/s"
        + (f", ratio: {rates['playout'] / rates['openspiel']:.2f}" if os_hand else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
