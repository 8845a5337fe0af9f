"""Synthetic tournaments: ``games.jsonl`` records played by the rules engine
in-process, no bot processes. For benchmarks of the report and for tests.

The schedule is the real one (:class:`arena.tournament.runner.ScheduleStream`, the
games of :func:`arena.tournament.runner.schedule_round_robin` made one at a time)
and every record goes through :meth:`arena.game.referee.GameRecord.to_json`, so
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
from typing import IO, Any

from arena.core.cards import CARD_NAMES, cards_of
from arena.core.rules import GameScore, Hand, Phase, deal_hands, default_pass, default_play
from arena.game.referee import GameRecord, GameSpec, hand_record
from arena.protocol.faults import Fault
from arena.results.rating import InOrderRatings, Ladder
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
    seats' ``bot_seeds``, so a game is reproducible) and return its record."""
    rngs = [random.Random(s) for s in spec.bot_seeds]
    pol = [policies.get(name, "random") for name in spec.seats]
    record = GameRecord(spec)
    score = GameScore(spec.target_score, spec.hands)
    number = 0
    while not score.is_over():
        number += 1
        deal_seed = f"{spec.deal_key}:{number}"
        dealt = deal_hands(deal_seed)
        hand = Hand.new(number, dealt)
        if hand.phase is Phase.PASS:
            hand.apply_passes([_choose_pass(pol[s], hand.hands[s], rngs[s]) for s in range(4)])
        tricks: list[dict[str, Any]] = []
        while not hand.is_over():
            seat = hand.turn
            trick = hand.play_unchecked(_choose_play(pol[seat], hand.legal_mask(), rngs[seat]))
            if trick is not None:
                tricks.append(
                    {
                        "leader": trick.leader,
                        "cards": [CARD_NAMES[c] for c in trick.cards],
                        "winner": trick.winner,
                        "points": trick.points,
                    }
                )
        score.add_hand(hand.points()[0])
        record.hands.append(hand_record(hand, number, deal_seed, dealt, tricks, list(score.scores)))
    record.scores = list(score.scores)
    record.ranks = score.ranks()
    record.bot_names = [f"{pol[s]}-bot" for s in range(4)]
    record.timing = [{"requests": 0, "mean_ms": 0.0, "max_ms": 0.0} for _ in range(4)]
    return record


def synthesize(
    names: Sequence[str],
    settings: TournamentSettings,
    policies: Mapping[str, str] | None = None,
    faults: Mapping[str, str] | None = None,
    stderr: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
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
) -> Iterator[dict[str, Any]]:
    """The records of :func:`synthesize`, made one game at a time from a
    streamed schedule (nothing is kept)."""
    policies = policies or {}
    for spec in ScheduleStream(names, settings):
        record = play_game(spec, policies)
        for seat, name in enumerate(spec.seats):
            if faults and name in faults:
                record.faults.append(Fault(seat, name, "illegal", faults[name], 1, 1, "play", 1))
            if stderr and name in stderr:
                record.stderr[seat] = stderr[name]
        yield record.to_json()


def synthetic_run(
    names: Sequence[str],
    settings: TournamentSettings,
    journal: Path,
    policies: Mapping[str, str] | None = None,
) -> Ladder:
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
    ladder = Ladder(names, keep_history=False)
    rater = InOrderRatings(ladder)
    out: IO[str]
    with journal.open("w", encoding="utf-8") as out:
        for record in iter_synthesize(names, settings, policies):
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            rater.add(record["game_index"], record["seats"], record["ranks"])
    return ladder
