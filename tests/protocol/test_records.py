"""Game records (arena/protocol/records.py) and faults (arena/protocol/faults.py):
built in one place, written as JSON, read back typed, checked by the schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arena.core.rules import Hand, deal_hands, default_pass, default_play
from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import (
    GameRecord,
    GameSpec,
    faults_of,
    hand_json,
    read_record,
    trick_json,
)
from arena.tournament.runner import TournamentSettings, read_journal
from arena.tournament.synthetic import synthesize

NAMES = ["ann", "bob", "cy", "dee"]
#: The key order of a fault in games.jsonl: the old fields first, never renamed.
FAULT_FIELDS = [
    "seat",
    "entrant",
    "reason",
    "detail",
    "hand_number",
    "trick_number",
    "request",
    "request_id",
    "answer",
    "cards",
    "rule",
]


def spec() -> GameSpec:
    return GameSpec(
        game_index=3,
        game_id="r1-t0-k3",
        round=1,
        table=0,
        rotation=3,
        seats=("ann", "bob", "cy", "dee"),
        deal_key="r1-t0",
        bot_seeds=(1, 2, 3, 4),
        target_score=None,
        hands=1,
        table_key=b"k" * 32,
    )


def played_hand() -> Hand:
    """Hand 1 of the public deal "records:1", default passes and plays."""
    hand = Hand.new(1, deal_hands("records:1"))
    hand.apply_passes([default_pass(hand.hands[s]) for s in range(4)])
    while not hand.is_over():
        hand.play(default_play(hand.legal_mask()))
    return hand


def test_an_illegal_fault_round_trips_with_its_kind_cards_and_rule() -> None:
    fault = Fault(2, "cy", "illegal", "played QS: ... (R7)", 1, 1, "play", 9, "QS", ["QS"], "R7")
    assert fault.reason is FaultKind.ILLEGAL  # a word given is made the kind
    data = fault.to_json()
    assert list(data) == FAULT_FIELDS
    assert data["reason"] == "illegal" and type(data["reason"]) is str
    assert (data["answer"], data["cards"], data["rule"]) == ("QS", ["QS"], "R7")
    back = Fault.from_json(json.loads(json.dumps(data)))
    assert back == fault and back.reason is FaultKind.ILLEGAL


def test_a_timeout_fault_has_no_cards_and_no_rule() -> None:
    fault = Fault(0, "ann", FaultKind.TIMEOUT, "no reply within 1000 ms", 2, None, "pass", 4)
    data = fault.to_json()
    assert (data["answer"], data["cards"], data["rule"]) == (None, None, None)
    assert Fault.from_json(data) == fault
    assert FaultKind.TIMEOUT == "timeout"  # records read back compare equal to kinds


def test_an_old_fault_without_the_new_fields_reads_its_move_from_the_detail() -> None:
    """Records from before ``answer`` (and ``cards``, ``rule``) still read."""
    base: dict[str, Any] = {"seat": 1, "entrant": "bob", "reason": "illegal"}
    play = Fault.from_json(
        {**base, "detail": "played 2D: seat 1: may not play 2D (R6); legal: KC", "request": "play"}
    )
    assert (play.answer, play.cards, play.rule, play.request_id) == ("2D", None, None, None)
    passed = Fault.from_json(
        {**base, "detail": "pass 2C 3C 9H: seat 1: passes cards ...", "request": "pass"}
    )
    assert passed.answer == ["2C", "3C", "9H"]
    crash = Fault.from_json({**base, "reason": "crashed", "detail": "exit 1", "request": "play"})
    assert crash.reason is FaultKind.CRASHED and crash.answer is None
    with pytest.raises(ValueError, match="'late'"):
        Fault.from_json({**base, "reason": "late", "detail": ""})


def test_a_trick_and_a_hand_are_built_from_the_rules_state() -> None:
    hand = played_hand()
    first = hand.tricks[0]
    assert trick_json(first) == {
        "leader": first.leader,
        "cards": [c["card"] for c in first.to_json()["cards"]],  # the wire shape's cards
        "winner": first.winner,
        "points": first.points,
    }
    # R5: seat 0 opens with the two of clubs; the jack takes it (R10).
    assert trick_json(first) == {
        "leader": 0,
        "cards": ["2C", "4C", "JC", "3C"],
        "winner": 2,
        "points": 0,
    }
    record = hand_json(hand, "r1-t0:1", [7, 3, 16, 0])
    assert list(record) == [
        "hand_number",
        "deal_seed",
        "direction",
        "dealt",
        "passes",
        "tricks",
        "raw_points",
        "points",
        "moon",
        "scores",
    ]
    assert record["direction"] == "left" and record["deal_seed"] == "r1-t0:1"
    assert len(record["tricks"]) == 13
    assert record["raw_points"] == record["points"] == [3, 6, 0, 17] and record["moon"] is None
    assert record["passes"] is not None and all(len(p) == 3 for p in record["passes"])
    assert record["scores"] == [7, 3, 16, 0]
    with pytest.raises(ValueError, match="not over"):
        hand_json(Hand.new(1, deal_hands("records:1")), "x", [0, 0, 0, 0])


def test_a_game_record_round_trips_through_json_and_the_schema() -> None:
    hand = played_hand()
    record = GameRecord(spec())
    points, _moon = hand.points()
    record.hands.append(hand_json(hand, "r1-t0:1", points))
    record.scores, record.ranks = points, [4, 2, 1, 3]
    record.faults.append(Fault(1, "bob", "illegal", "d", 1, 2, "play", 5, "9H", ["9H"], "R6"))
    record.timing = [{"requests": 0, "mean_ms": 0.0, "max_ms": 0.0}] * 4
    data = record.to_json()
    assert data["deal_seeds"] == ["r1-t0:1"] and data["entrants"] == sorted(NAMES)
    assert "transcripts" not in data and "table_key" not in json.dumps(data)
    back = read_record(json.loads(json.dumps(data)), NAMES)
    assert back == data
    assert faults_of(back) == record.faults and faults_of(back, 0) == []
    again = GameSpec.from_json(back, b"k" * 32)
    assert again == spec()


def test_the_schema_refuses_a_bad_fault_with_the_field() -> None:
    data = synthesize(NAMES, TournamentSettings(seed=1, rounds=1, hands=1, target_score=None))[0]
    read_record(data, NAMES)
    fault = Fault(0, data["seats"][0], "illegal", "x", 1, 1, "play", 1, "2C", ["2C"], "R5")
    for field, value, message in (
        ("reason", "late", "faults/0/reason"),
        ("rule", "follow suit", "faults/0/rule"),
        ("cards", ["ZZ"], "faults/0/cards/0"),
        ("seat", 4, "faults/0/seat"),
    ):
        bad = {**data, "faults": [{**fault.to_json(), field: value}]}
        with pytest.raises(ValueError, match=message):
            read_record(bad)
    with pytest.raises(ValueError, match="'zed' is not an entrant"):
        read_record({**data, "faults": [{**fault.to_json(), "entrant": "zed"}]}, NAMES)
    legacy = {k: v for k, v in fault.to_json().items() if k not in ("answer", "cards", "rule")}
    assert read_record({**data, "faults": [legacy]})["faults"] == [legacy]


def test_synthetic_records_are_written_and_read_back_typed(tmp_path: Any) -> None:
    """A synthetic tournament's lines pass the schema and read back equal."""
    settings = TournamentSettings(seed=2, rounds=1, hands=2, target_score=None)
    lines = synthesize(NAMES, settings, faults={"bob": "played 2D: ..."})
    path = tmp_path / "games.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    back = read_journal(path, NAMES)
    assert back == lines and len(back) == 4
    for rec in back:
        assert [h["hand_number"] for h in rec["hands"]] == [1, 2]
        assert [h["direction"] for h in rec["hands"]] == ["left", "right"]
        assert [h["deal_seed"] for h in rec["hands"]] == [f"{rec['deal_key']}:{n}" for n in (1, 2)]
        assert all(len(h["tricks"]) == 13 for h in rec["hands"])
        bob = rec["seats"].index("bob")
        (fault,) = faults_of(rec)
        assert (fault.seat, fault.reason, fault.detail) == (
            bob,
            FaultKind.ILLEGAL,
            "played 2D: ...",
        )
        totals = [sum(h["points"][s] for h in rec["hands"]) for s in range(4)]
        assert rec["scores"] == totals == rec["hands"][-1]["scores"]
