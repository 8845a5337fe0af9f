"""The checker's scenarios, played in process against many bot policies: every
message they send is valid under the protocol schema, consistent with what
the seat holds, and every check's position is reached with its expectations
met whatever the bot chooses (so a failed check is the bot's doing, never
the scenario's)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio

from arena.game.referee import SeatSetup
from arena.protocol.codec import check_referee_message, check_reply
from arena.seats.stand_ins import Exchange, InProcessSeat
from arena.tools.check import (
    CheckSettings,
    Scenario,
    ScenarioRun,
    judge,
    load_scenarios,
    play_scenario,
)

SCENARIOS = load_scenarios()


class PolicySeat(InProcessSeat):
    """An in-process bot: random (seeded) or first-choice moves; records every
    message it is sent and every request as an :class:`Exchange`."""

    def __init__(self, rng: random.Random | None, validate: bool) -> None:
        super().__init__("policy")
        self.rng = rng
        self.validate = validate
        self.messages: list[dict[str, Any]] = []
        self.exchanges: list[Exchange] = []
        self.game = 0

    def on_message(self, message: dict[str, Any]) -> None:
        if self.validate:
            check_referee_message(message)
        self.messages.append(message)
        if message["type"] == "game_start":
            self.game += 1

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        kind = request["type"]
        if kind == "pass":
            hand = request["hand"]
            cards = self.rng.sample(hand, 3) if self.rng else hand[-3:]
            reply = {"cards": cards}
        else:
            legal = request["legal"]
            assert legal and set(legal) <= set(request["hand"])
            reply = {"card": self.rng.choice(legal) if self.rng else legal[-1]}
        if self.validate:
            check_reply(kind, {"type": kind, "id": request["id"], **reply})
        self.exchanges.append(
            Exchange(self.game, kind, request, {"type": kind, **reply}, None, "", 0.0)
        )
        return reply


def run_in_process(
    scenario: Scenario, rng: random.Random | None, validate: bool = False
) -> tuple[ScenarioRun, PolicySeat]:
    seat = PolicySeat(rng, validate)
    hello = {"type": "hello", "id": 0, "protocol": "hearts-arena/1", "time_ms": 10000}
    check_referee_message(hello)
    seat.exchanges.append(Exchange(0, "hello", hello, {"name": "policy"}, None, "", 0.0))
    setup = SeatSetup("policy", seat)  # type: ignore[arg-type]
    run = trio.run(play_scenario, scenario, setup, CheckSettings())
    run.exchanges = seat.exchanges
    run.bye = (True, "exited", 0.0)
    return run, seat


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_position_is_reached_whatever_the_bot_plays(scenario: Scenario) -> None:
    policies: list[random.Random | None] = [None, *(random.Random(i) for i in range(12))]
    for i, rng in enumerate(policies):
        run, seat = run_in_process(scenario, rng, validate=i < 2)  # the schema is slow
        assert run.stopped is None
        for result in judge(run):
            assert result.passed, f"{scenario.name} / {result.name}: {result.reason}"
        starts = [m for m in seat.messages if m["type"] == "game_start"]
        assert len(starts) == scenario.games
        assert all(m["seat"] == scenario.seat for m in starts)
        assert (
            sum(m["type"] == "hand_end" for m in seat.messages) == scenario.games * scenario.hands
        )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_messages_are_consistent_with_the_seat_hand(scenario: Scenario) -> None:
    _run, seat = run_in_process(scenario, random.Random(7), validate=True)
    hand: set[str] = set()
    for m in seat.messages:
        if m["type"] == "deal":
            hand = set(m["hand"])
            assert len(hand) == 13
        elif m["type"] == "pass":
            assert set(m["hand"]) == hand
        elif m["type"] == "passed":
            hand = set(m["hand"])
        elif m["type"] == "play":
            assert set(m["hand"]) == hand
            assert set(m["legal"]) <= hand
        elif m["type"] == "trick":
            mine = [c["card"] for c in m["cards"] if c["seat"] == scenario.seat]
            hand -= set(mine)


def test_constructed_deals_are_full_deals() -> None:
    for scenario in SCENARIOS:
        for game in range(1, scenario.games + 1):
            for hand in range(1, scenario.hands + 1):
                _seed, masks = scenario.deal(game, hand)
                assert [m.bit_count() for m in masks] == [13] * 4
                assert masks[0] | masks[1] | masks[2] | masks[3] == (1 << 52) - 1
                assert scenario.deal(game, hand) == (_seed, masks)  # deterministic
