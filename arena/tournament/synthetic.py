"""Synthetic tournaments: ``games.jsonl`` records played by the rules engine
in-process, no bot processes. For benchmarks of the report and for tests.

The schedule is the real one (:class:`arena.tournament.runner.ScheduleStream`, the
games of :func:`arena.tournament.runner.schedule_round_robin` made one at a time)
and every record goes through :meth:`arena.protocol.records.GameRecord.to_json`, so
the lines have the same fields as a real run's. Each entrant gets a *policy*:

* ``"low"`` plays the lowest legal card and passes the default three highest
  cards (a weak-ish but steady player);
* ``"random"`` plays and passes uniformly at random among the legal choices.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from arena.core.cards import cards_of
from arena.core.rules import Game, Phase, deal_hands, deal_name, default_pass, default_play
from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import GameRecord, GameRecordJSON, GameSpec, hand_json
from arena.results.rating import InOrderRatings, RatingTable
from arena.tournament.runner import ScheduleStream, TournamentSettings

POLICIES = ("low", "random")


def _choose_pass(policy: str, hand: int, rng: random.Random) -> int:
    if policy == "low":
        return default_pass(hand)
    mask = 0
    for card in rng.sample(cards_of(hand), 3):
        mask |= 1 << card
    return mask


def _choose_play(policy: str, legal: int, rng: random.Random) -> int:
    if policy == "low":
        return default_play(legal)
    return rng.choice(cards_of(legal))


def play_game(spec: GameSpec, policies: Mapping[str, str]) -> GameRecord:
    """Play one game of a schedule with the entrants' policies (seeded by the
    seats' ``bot_seeds``, so a game is reproducible) and return its record.

    The game is the rules' :class:`arena.core.rules.Game` (pass cycle R3, end
    and tie-break R13), as the referee plays it. The deals are public:
    :func:`arena.core.rules.deal_hands` of the deal's name
    (:func:`arena.core.rules.deal_name`), not of the secret table key."""
    rngs = [random.Random(s) for s in spec.bot_seeds]
    pol = [policies.get(name, "random") for name in spec.seats]
    record = GameRecord(spec)
    game = Game(spec.target_score, spec.hands)
    while not game.is_over():
        deal_seed = deal_name(spec.deal_key, game.hand_number + 1)
        hand = game.start_hand(deal_hands(deal_seed))
        if hand.phase is Phase.PASS:
            hand.apply_passes([_choose_pass(pol[s], hand.hands[s], rngs[s]) for s in range(4)])
        while not hand.is_over():
            seat = hand.turn
            hand.play_unchecked(_choose_play(pol[seat], hand.legal_mask(), rngs[seat]))
        game.end_hand()
        record.hands.append(hand_json(hand, deal_seed, game.scores))
    record.scores = game.scores
    record.ranks = game.ranks()
    record.bot_names = [f"{pol[s]}-bot" for s in range(4)]
    record.timing = [{"requests": 0, "mean_ms": 0.0, "max_ms": 0.0} for _ in range(4)]
    return record


def synthesize(
    names: Sequence[str],
    settings: TournamentSettings,
    policies: Mapping[str, str] | None = None,
    faults: Mapping[str, str] | None = None,
    stderr: Mapping[str, str] | None = None,
) -> list[GameRecordJSON]:
    """The ``games.jsonl`` records of a whole synthetic tournament.

    Args:
        names: the entrants.
        settings: schedule and game length (``hands`` or ``target_score``).
        policies: entrant name -> ``"low"`` or ``"random"`` (default random).
        faults: entrant name -> a fault detail text; that entrant gets one
            ``illegal`` fault (on hand 1, trick 1) in each of its games.
        stderr: entrant name -> text recorded as that seat's stderr in each game.

    Returns:
        Records in schedule order, as ``GameRecord.to_json`` gives them.
    """
    return list(iter_synthesize(names, settings, policies, faults, stderr))


def iter_synthesize(
    names: Sequence[str],
    settings: TournamentSettings,
    policies: Mapping[str, str] | None = None,
    faults: Mapping[str, str] | None = None,
    stderr: Mapping[str, str] | None = None,
) -> Iterator[GameRecordJSON]:
    """The records of :func:`synthesize`, made one game at a time from a
    streamed schedule (nothing is kept)."""
    policies = policies or {}
    for spec in ScheduleStream(names, settings):
        record = play_game(spec, policies)
        for seat, name in enumerate(spec.seats):
            if faults and name in faults:
                record.faults.append(
                    Fault(seat, name, FaultKind.ILLEGAL, faults[name], 1, 1, "play", 1)
                )
            if stderr and name in stderr:
                record.stderr[seat] = stderr[name]
        yield record.to_json()


def synthetic_run(
    names: Sequence[str],
    settings: TournamentSettings,
    journal: Path,
    policies: Mapping[str, str] | None = None,
) -> RatingTable:
    """A long run without bot processes, as the runner does it without the
    report: the schedule streamed, each game's record written as a
    ``games.jsonl`` line (not synced to disk) and its result applied to the
    ratings in schedule order (:class:`arena.results.rating.InOrderRatings`), then
    dropped. Memory does not grow with the number of games (benchmarks/
    schedule_scale.py measures it).

    Returns:
        The ratings after every game (without history), equal to
        :func:`arena.results.standings.compute_standings`'s on the same records.
    """
    table = RatingTable(names, keep_history=False)
    rater = InOrderRatings(table)
    out: IO[str]
    with journal.open("w", encoding="utf-8") as out:
        for record in iter_synthesize(names, settings, policies):
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            rater.add(record["game_index"], record["seats"], record["ranks"])
    return table
