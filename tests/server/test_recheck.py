"""The server's re-check of every record before it is stored
(arena/server/recheck.py, issue 29): the table's games as the rules engine
plays them from the table key pass; a record with two dealt cards swapped
(R2), a card played out of turn or against follow suit (R4-R8), a bot seed,
a game id or seats not the table's, a hand played after the game's end
(R13), a missing or doubled rotation, or a malformed record is refused with
one line naming the game."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from arena.core.keys import MasterKey
from arena.core.rules import Game, Phase, table_deal
from arena.protocol.records import GameRecord, GameRecordJSON, GameSpec, hand_json
from arena.server import ladder
from arena.server.recheck import check_record, check_table

KEY = MasterKey.from_seed("recheck")
SEATING = ("s1", "s2", "house:low", "house:random")
TIEBREAK = 10


def _play(spec: GameSpec) -> GameRecordJSON:
    """One game as the referee plays it, its deals from the table key (R2),
    random legal moves seeded by the seats' bot seeds."""
    rngs = [random.Random(s) for s in spec.bot_seeds]
    record = GameRecord(spec)
    game = Game(spec.target_score, spec.hands)
    while not game.is_over():
        number = game.hand_number + 1
        hand = game.start_hand(table_deal(spec.table_key, number))
        if hand.phase is Phase.PASS:
            passes = []
            for s in range(4):
                cards = [c for c in range(52) if hand.hands[s] >> c & 1]
                chosen = rngs[s].sample(cards, 3)
                passes.append(sum(1 << c for c in chosen))
            hand.apply_passes(passes)
        while not hand.is_over():
            legal = hand.legal_mask()
            cards = [c for c in range(52) if legal >> c & 1]
            hand.play_unchecked(rngs[hand.turn].choice(cards))
        game.end_hand()
        record.hands.append(hand_json(hand, f"table-{number}", game.scores))
    record.scores = game.scores
    record.ranks = game.ranks()
    return record.to_json()


@pytest.fixture(scope="module")
def table() -> tuple[list[GameSpec], list[GameRecordJSON]]:
    specs = ladder.ladder_specs(KEY, 3, SEATING, 2, None)
    return specs, [_play(s) for s in specs]


def _one(table: tuple[list[GameSpec], list[GameRecordJSON]], k: int) -> Any:
    return copy.deepcopy(table[1][k])


def test_the_tables_games_from_its_key_pass(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    specs, records = table
    assert [len(r["hands"]) for r in records] == [2, 2, 2, 2]
    assert check_table(records, specs, TIEBREAK) is None


def test_two_dealt_cards_swapped_between_seats_are_refused_r2(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    rec = _one(table, 2)
    dealt = rec["hands"][1]["dealt"]
    dealt[0][0], dealt[1][0] = dealt[1][0], dealt[0][0]
    assert check_record(rec, table[0], TIEBREAK) == (
        "game l3-k2 hand 2: dealt cards are not the key's deal (R2)"
    )


def test_an_altered_bot_seed_is_refused(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    rec = _one(table, 1)
    rec["bot_seeds"][3] += 1
    assert check_record(rec, table[0], TIEBREAK) == "game l3-k1: bot seeds are not the key's"


def test_another_tables_game_id_seats_or_deal_key_is_refused(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    specs = table[0]
    rec = _one(table, 0)
    rec["game_id"] = "l4-k0"
    assert check_record(rec, specs, TIEBREAK) == "game l3-k0: the record's game id is 'l4-k0'"
    rec = _one(table, 0)
    rec["seats"] = list(reversed(rec["seats"]))
    assert check_record(rec, specs, TIEBREAK) == "game l3-k0: seats are not the table's"
    rec = _one(table, 0)
    rec["deal_key"] = "L4"
    assert check_record(rec, specs, TIEBREAK) == "game l3-k0: deal key is not the table's"


def test_two_cards_of_a_trick_swapped_do_not_replay_r4_r8(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    rec = _one(table, 3)
    trick = rec["hands"][0]["tricks"][4]
    trick["cards"][0], trick["cards"][1] = trick["cards"][1], trick["cards"][0]
    problem = check_record(rec, table[0], TIEBREAK)
    assert problem is not None and problem.startswith("game l3-k3 hand 1: ")


def test_a_hand_after_the_games_end_and_a_short_game_are_refused_r13(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    rec = _one(table, 0)
    rec["hands_limit"] = 1  # the table plays two hands a game
    assert check_record(rec, table[0], TIEBREAK) == "game l3-k0: its length is not the table's"
    rec = _one(table, 0)
    rec["ranks"] = [1, 1, 1, 1]
    assert check_record(rec, table[0], TIEBREAK) == "game l3-k0: ranks are not the totals' (R13)"
    rec = _one(table, 0)
    rec["hands"] = rec["hands"][:1]
    rec["scores"] = rec["hands"][0]["scores"]
    assert check_record(rec, table[0], TIEBREAK) == (
        "game l3-k0: the game stops before its end (R13)"
    )


def test_a_missing_or_doubled_rotation_and_a_malformed_record_are_refused(
    table: tuple[list[GameSpec], list[GameRecordJSON]],
) -> None:
    specs, records = table
    assert check_table(records[:3], specs, TIEBREAK) == (
        "the table's records are rotations [0, 1, 2], not one per game"
    )
    assert check_table([*records[:3], records[2]], specs, TIEBREAK) == (
        "the table's records are rotations [0, 1, 2, 2], not one per game"
    )
    rec = _one(table, 1)
    del rec["hands"][0]["hand_number"]
    problem = check_record(rec, specs, TIEBREAK)
    assert problem is not None and problem.startswith("game l3-k1: a malformed record (KeyError")
    assert check_record({"seats": []}, specs, TIEBREAK) == "a record without a rotation or game id"  # type: ignore[typeddict-item]
