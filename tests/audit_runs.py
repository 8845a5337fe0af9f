"""Finished tournament folders for the audit's tests and benchmark, played
in-process (no bot processes): the real schedule and deals of a public seed,
the rules engine, and players that are policies of ``tests/bots/cheatlib.py``
(or the heuristic sample bot), each given the protocol's messages
(``game_start``, ``pass``, ``play`` from :meth:`arena.core.rules.Hand.view`,
``trick``, ``hand_end``) as a bot would be. The folder holds ``run.json``,
``games.jsonl`` and ``results.json`` with the key revealed, as a real run's.

Games are played in the order the runner would play them with ``jobs``
games in flight (:func:`lockstep`: the chains of
:func:`arena.tournament.runner.iter_chains` taken in turn, every chain in
flight playing its next game at each step unless another holds its deal);
``started_at`` counts them, so the audit reads that order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "bots"))

import cheatlib  # noqa: E402

from arena.core.cards import CARD_NAMES, mask_of_names, names_of  # noqa: E402
from arena.core.keys import MasterKey  # noqa: E402
from arena.core.rules import Game, Phase, deal_name, pass_target, table_deal  # noqa: E402
from arena.protocol.records import GameRecord, hand_json  # noqa: E402
from arena.tournament.runner import (  # noqa: E402
    ScheduleStream,
    TournamentSettings,
    iter_chains,
    settings_record,
)

Policy = Any


class Heuristic(cheatlib.HonestSearch):
    """The heuristic sample bot."""

    def play(self, msg: dict[str, Any]) -> str:
        return str(cheatlib.search.HEURISTIC.choose_play(msg))


class Random(cheatlib.HonestSearch):
    """A random legal card (seeded by the game's seed)."""

    def play(self, msg: dict[str, Any]) -> str:
        import random

        rng = random.Random(f"{self.seed}:{msg['hand_number']}:{msg['trick_number']}")
        return str(rng.choice(msg["legal"]))


def play_game(spec: Any, players: list[Policy]) -> GameRecord:
    """One game of the schedule, every seat a policy."""
    record = GameRecord(spec)
    game = Game(spec.target_score, spec.hands)
    for seat, p in enumerate(players):
        p.start(
            {
                "type": "game_start",
                "game_id": spec.game_id,
                "seat": seat,
                "players": list(spec.seats),
                "seed": spec.bot_seeds[seat],
            }
        )
    while not game.is_over():
        number = game.hand_number + 1
        dealt = table_deal(spec.table_key, number)
        hand = game.start_hand(dealt)
        if hand.phase is Phase.PASS:
            passes = []
            for s in range(4):
                msg = {
                    "type": "pass",
                    "hand_number": number,
                    "direction": hand.direction.value,
                    "to": pass_target(s, hand.direction),
                    "hand": names_of(hand.hands[s]),
                }
                passes.append(mask_of_names(players[s].pass_(msg)))
            hand.apply_passes(passes)
        while not hand.is_over():
            seat = hand.turn
            view = hand.view(seat) | {"type": "play", "game_id": spec.game_id, "time_ms": 1000}
            card = players[seat].play(view)
            done = hand.play(int(CARD_NAMES.index(card)))
            if done is not None:
                note = {"type": "trick", "hand_number": number} | done.to_json()
                for p in players:
                    p.trick(note)
        game.end_hand()
        for p in players:
            p.hand_end({"type": "hand_end", "hand_number": number})
        record.hands.append(hand_json(hand, deal_name(spec.deal_key, number), game.scores))
    record.scores = game.scores
    record.ranks = game.ranks()
    record.bot_names = [None, None, None, None]
    record.timing = [{"requests": 0, "mean_ms": 0.0, "max_ms": 0.0} for _ in range(4)]
    return record


def lockstep(chains: list[list[Any]], jobs: int) -> list[Any]:
    """The games of ``chains`` in the order ``jobs`` runner tasks of equal
    speed would start them (see the module docstring)."""
    pending = iter(chains)
    active: list[list[Any]] = []
    order: list[Any] = []
    while True:
        while len(active) < jobs:
            chain = next(pending, None)
            if chain is None:
                break
            active.append(list(chain))
        if not active:
            return order
        busy: set[str] = set()
        for chain in active:
            if chain[0].deal_key not in busy:
                busy.add(chain[0].deal_key)
                order.append(chain.pop(0))
        active = [c for c in active if c]


def build_run(
    folder: Path,
    entrants: Mapping[str, Callable[[], Policy]],
    *,
    seed: str,
    rounds: int = 1,
    hands: int = 1,
    jobs: int = 4,
) -> Path:
    """Play a whole round-robin of ``entrants`` (name -> a factory of a fresh
    policy per game) under the public ``seed`` and write its folder."""
    key = MasterKey.from_seed(seed)
    names = list(entrants)
    settings = TournamentSettings(key=key, rounds=rounds, target_score=None, hands=hands)
    folder.mkdir(parents=True, exist_ok=True)
    stream = ScheduleStream(names, settings)
    lines = []
    for order, spec in enumerate(lockstep(list(iter_chains(stream)), jobs)):
        record = play_game(spec, [entrants[n]() for n in spec.seats])
        record.started_at = float(order)
        lines.append(json.dumps(record.to_json(), separators=(",", ":")))
    record = settings_record(
        settings,
        [{"name": n} for n in names],
        {"key_commitment": key.commitment(), "seed": seed},
    )
    run = {"format_version": 2, "settings": record, "games_total": len(lines)}
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (folder / "games.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = {"format_version": 2, "key": key.hex(), "key_commitment": key.commitment()}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return folder
