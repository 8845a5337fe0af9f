"""The pace (``--pace``, issue 22 item 6) and clocks counted in CPU time
(``--wall-cap``, item 8), under Trio's mock clock with in-memory seats: no
processes, no real time.

The timing channel: a sender delays each reply by an amount that carries
bits of its hand; its partner times when its own requests (and the other
messages) reach it. Under a pace, every seat's view of time is the same
whatever the sender's delays, as long as each is within the pace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing
from game_specs import one_game

from arena.core.keys import MasterKey
from arena.game.referee import (
    PACE_MARGIN,
    GameRecord,
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
    handshake,
)
from arena.protocol.faults import FaultKind
from arena.seats.memory import BotEnd, MemoryBot, MemorySeat, first_legal
from arena.seats.wire import BUDGET_SLACK, MIN_EXTENSION, cpu_deadline, next_tick

KEY = MasterKey.from_seed("pace-in-memory")
SENDER, RECEIVER = 0, 2  # partners sit opposite


def spec(hands: int = 1) -> GameSpec:
    return one_game(KEY, "pace", hands)


def instant(log: list[tuple[float, str]] | None = None) -> MemoryBot:
    """Answers at once with the default moves; notes when each message arrived."""

    async def bot(end: BotEnd) -> None:
        while (message := await end.receive()) is not None:
            if log is not None:
                log.append((trio.current_time(), message["type"]))
            if message["type"] == "bye":
                return
            if message["type"] == "hello":
                end.reply(message, name="instant")
            elif "id" in message:
                end.reply(message, **first_legal(message))  # type: ignore[arg-type]

    return bot


def sender(delays: list[float]) -> MemoryBot:
    """Waits ``delays[i]`` seconds (wall time, as the attacker sleeps) before
    its ``i``-th answer (the pass first), then plays the default move."""

    async def bot(end: BotEnd) -> None:
        asked = 0
        while (message := await end.receive()) is not None:
            if message["type"] == "bye":
                return
            if message["type"] == "hello":
                end.reply(message, name="sender")
            elif "id" in message:
                await trio.sleep(delays[asked % len(delays)])
                asked += 1
                end.reply(message, **first_legal(message))  # type: ignore[arg-type]

    return bot


class CoreSeat(MemorySeat):
    """A memory seat that must hold one of a few shared cores while asked,
    as a bot process holds a core token (:mod:`arena.sandbox.cores`)."""

    def __init__(
        self, label: str, bot: MemoryBot, cores: trio.Semaphore, late: float = 0.0, **kw: Any
    ) -> None:
        super().__init__(label, bot, **kw)
        self._cores = cores
        self._holding = False
        self.late = late  # seconds it waits before asking a core for its pass (an order)

    async def _take_core(self, pace: tuple[float, float] | None = None) -> None:
        if self.late and len(self.asked_at) == 1:  # after hello: the pass
            await trio.sleep(self.late)
        await self._cores.acquire()
        self._holding = True
        await super()._take_core(pace)

    def _release_core(self, cpu_before: int | None) -> float | None:
        if self._holding:
            self._holding = False
            self._cores.release()
        return super()._release_core(cpu_before)


@dataclass
class Played:
    record: GameRecord
    seats: list[MemorySeat]
    start: float  # Trio time the game started


def play(
    bots: dict[int, MemoryBot],
    settings: RefereeSettings,
    *,
    cores: int = 0,
    ponder: bool = False,
    seat_options: dict[int, dict[str, Any]] | None = None,
) -> Played:
    """One game of four in-memory bots (``bots`` replaces some of the
    instant ones); ``cores`` > 0 makes them share that many cores."""

    async def main() -> Played:
        gate = trio.Semaphore(cores) if cores else None
        seats: list[MemorySeat] = []
        for i, name in enumerate(spec().seats):
            bot = bots.get(i) or instant()
            options = {"ponder": ponder, **(seat_options or {}).get(i, {})}
            if gate is not None:
                seats.append(CoreSeat(name, bot, gate, **options))
            else:
                seats.append(MemorySeat(name, bot, **options))
        async with trio.open_nursery() as nursery:
            setups = []
            for i, seat in enumerate(seats):
                await seat.start(nursery)
                fault = await handshake(seat, i, settings.startup_time)
                setups.append(SeatSetup(seat.label, seat, fault))
            start = trio.current_time()
            record = await Referee(spec(), setups, settings).play()
            for seat in seats:
                await seat.close(settings.grace)
        return Played(record, seats, start)

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


# Two messages of three bits per decision, as the attack of issue 22 sends
# them: 50 + 100 L ms; here two different streams of L.
ZEROS = [0.05] * 14
CODED = [0.05 + 0.1 * (i * 5 % 8) for i in range(14)]


def receiver_view(delays: list[float], settings: RefereeSettings, **kw: Any) -> list[Any]:
    """When each message reached the receiver (relative to the game's start)."""
    log: list[tuple[float, str]] = []
    played = play({SENDER: sender(delays), RECEIVER: instant(log)}, settings, **kw)
    assert played.record.faults == []
    return [(round(t - played.start, 6), kind) for t, kind in log]


def test_without_a_pace_the_receiver_times_the_senders_delays() -> None:
    # The channel the pace closes (issue 22 item 6): the receiver's view
    # differs with what the sender encodes.
    settings = RefereeSettings(time_limit=1.0)
    assert receiver_view(ZEROS, settings) != receiver_view(CODED, settings)


@pytest.mark.parametrize("ponder", [False, True])
def test_under_a_pace_the_receiver_sees_the_same_times_whatever_the_sender_does(
    ponder: bool,
) -> None:
    # A pondering receiver is never frozen: it sees every message as it is
    # written, the flushed hand_end too, and still learns nothing.
    settings = RefereeSettings(time_limit=0.8, pace=1.0)
    seen = receiver_view(ZEROS, settings, ponder=ponder)
    assert seen == receiver_view(CODED, settings, ponder=ponder)
    # Every message came on a tick of one second (the pace) after the start.
    assert {t % 1.0 for t, _ in seen} == {0.0}
    kinds = [k for _, k in seen]
    assert kinds.count("play") == 13 and kinds.count("trick") == 13


def test_the_pace_puts_every_request_of_every_seat_on_its_tick() -> None:
    settings = RefereeSettings(time_limit=0.8, pace=1.0)
    played = play({SENDER: sender(CODED)}, settings)
    # The pass at tick 0, the passed cards at tick 1; then one decision a
    # tick: 52 plays, the first at tick 1.
    for seat in played.seats:
        asked = [round(t - played.start, 6) for t in seat.asked_at[1:]]  # after hello
        assert asked[0] == 0.0
        assert all(t == int(t) for t in asked)
    plays = sorted(round(t - played.start, 6) for s in played.seats for t in s.asked_at[2:])
    assert plays == [float(k) for k in range(1, 53)]
    assert played.record.duration == pytest.approx(53.0)


def test_a_request_that_waited_for_a_core_is_sent_on_a_tick() -> None:
    # Two cores for four bots, and the first two take a while to pass: the
    # receiver's pass waits for a core, so without a pace when it is asked
    # tells it how long the sender took; under a pace it is asked on the
    # next tick, whatever the sender did.
    quick, slow = [0.05] * 14, [0.6] + [0.05] * 13

    def view(delays: list[float], settings: RefereeSettings) -> list[Any]:
        log: list[tuple[float, str]] = []
        bots = {SENDER: sender(delays), 1: sender([0.3] + [0.0] * 13), RECEIVER: instant(log)}
        # The receiver, then seat 3, queue for a core once 0 and 1 hold both.
        late = {RECEIVER: {"late": 0.01}, 3: {"late": 0.02}}
        played = play(bots, settings, cores=2, ponder=True, seat_options=late)
        assert played.record.faults == []
        return [(round(t - played.start, 6), kind) for t, kind in log]

    free = RefereeSettings(time_limit=0.8)
    assert (0.05, "pass") in view(quick, free)
    assert (0.3, "pass") in view(slow, free)  # the first core freed: seat 1's
    paced = RefereeSettings(time_limit=0.8, pace=1.0)
    seen = view(quick, paced)
    assert seen == view(slow, paced)
    assert (1.0, "pass") in seen  # it waited for a core: sent on the next tick
    assert {t % 1.0 for t, _ in seen if t > 0} == {0.0}


def test_a_decision_over_the_pace_shows_only_as_whole_ticks() -> None:
    settings = RefereeSettings(time_limit=2.0, pace=1.0, wall_cap=1.0)
    slow = [0.05] + [1.5] + [0.05] * 12  # its first play takes a tick and a half
    log: list[tuple[float, str]] = []
    played = play({SENDER: sender(slow), RECEIVER: instant(log)}, settings)
    times = [round(t - played.start, 6) for t, _ in log]
    assert {t % 1.0 for t in times} == {0.0}
    assert played.record.duration == pytest.approx(54.0)  # one tick more


def test_the_wall_cap_stays_below_the_pace() -> None:
    assert RefereeSettings(time_limit=1.0, pace=1.5).decision_wall_cap() == pytest.approx(
        1.5 - PACE_MARGIN
    )
    assert RefereeSettings(time_limit=1.0, pace=5.0).decision_wall_cap() == 2.0
    assert RefereeSettings(time_limit=1.0, pace=1.0).decision_wall_cap() is None
    assert RefereeSettings(time_limit=1.0, wall_cap=1.0).decision_wall_cap() is None
    assert RefereeSettings(time_limit=0.5, wall_cap=3.0).decision_wall_cap() == 1.5


def test_ticks() -> None:
    assert next_tick(10.0, 0.5, 10.0) == 10.0
    assert next_tick(10.0, 0.5, 10.0, first=1) == 10.5
    assert next_tick(10.0, 0.5, 10.2) == 10.5
    assert next_tick(10.0, 0.5, 10.5) == 10.5
    assert next_tick(10.0, 0.5, 11.7, first=1) == 12.0
    # A core got within the slack: sent at once; later: on the next tick.
    assert next_tick(10.0, 0.5, 10.01, slack=0.02) == 10.01
    assert next_tick(10.0, 0.5, 10.03, slack=0.02) == 10.5
    assert next_tick(10.0, 0.5, 10.51, slack=0.02) == 10.51


# -- clocks counted in CPU time (item 8) ---------------------------------------------


def test_cpu_deadline_extends_only_a_runnable_bot_with_cpu_left() -> None:
    # due at 1.0, cap at 2.0, budget 1.0 s
    assert cpu_deadline(1.0, 0.5, 0.2, 1.0, 2.0, True) == 1.0  # not due yet
    assert cpu_deadline(1.0, 1.0, 0.7, 1.0, 2.0, True) == pytest.approx(1.3)
    assert cpu_deadline(1.0, 1.0, 0.7, 1.0, 2.0, None) == pytest.approx(1.3)  # unknown: runnable
    # Asleep with CPU left: one last look at its output, then due.
    assert cpu_deadline(1.0, 1.0, 0.7, 1.0, 2.0, False) == 1.0
    assert cpu_deadline(1.0, 1.0, 0.7, 1.0, 2.0, False, looked=True) is None
    assert cpu_deadline(1.0, 1.0, 1.0 - BUDGET_SLACK / 2, 1.0, 2.0, True) is None  # used it
    assert cpu_deadline(1.0, 1.9, 0.2, 1.0, 2.0, True) == 2.0  # at most the cap
    assert cpu_deadline(1.0, 2.0, 0.2, 1.0, 2.0, True) is None
    assert cpu_deadline(1.0, 1.5, 0.999, 1.0, 2.0, True) == pytest.approx(1.5 + MIN_EXTENSION)


def starved_bot(starve: float, think: float) -> MemoryBot:
    """Each decision: runnable without CPU for ``starve`` s (other load holds
    its core), then ``think`` s of CPU; then the default move."""

    async def bot(end: BotEnd) -> None:
        while (message := await end.receive()) is not None:
            if message["type"] == "bye":
                return
            if message["type"] == "hello":
                end.reply(message, name="starved")
            elif "id" in message:
                await end.starve(starve)
                await end.think(think)
                end.reply(message, **first_legal(message))  # type: ignore[arg-type]

    return bot


def sleeper(seconds: float) -> MemoryBot:
    """Sleeps (not runnable, no CPU) ``seconds`` before each answer."""
    return sender([seconds])


BUDGETED = {1: {"cpu_budget": True}}


def test_a_bot_kept_from_its_core_gets_its_cpu_time() -> None:
    # 0.9 s of CPU after 0.6 s without a core: 1.5 s of wall time, 0.9 s of
    # CPU, within a 1 s budget counted in CPU time.
    settings = RefereeSettings(time_limit=1.0, wall_cap=2.0)
    played = play({1: starved_bot(0.6, 0.9)}, settings, seat_options=BUDGETED)
    assert played.record.faults == []
    timing = played.record.timing[1]
    assert timing["wall_ms"] == [1500.0] * 14
    assert timing["cpu_ms"] == [900.0] * 14


def test_on_wall_time_the_same_bot_times_out() -> None:
    for settings, options in (
        (RefereeSettings(time_limit=1.0, wall_cap=1.0), BUDGETED),  # --wall-cap 1
        (RefereeSettings(time_limit=1.0), None),  # a seat without a CPU budget
    ):
        played = play({1: starved_bot(0.6, 0.9)}, settings, seat_options=options)
        faults = [f for f in played.record.faults if f.seat == 1]
        assert faults and all(f.reason is FaultKind.TIMEOUT for f in faults)
        assert faults[0].detail.startswith("no reply within 1000 ms")


def test_a_sleeping_bot_gets_no_more_than_its_time_limit() -> None:
    settings = RefereeSettings(time_limit=1.0, wall_cap=2.0, strikes=0)
    played = play({1: sleeper(1.5)}, settings, seat_options=BUDGETED)
    faults = [f for f in played.record.faults if f.seat == 1]
    assert len(faults) == 14
    assert {f.detail for f in faults} == {"no reply within 1000 ms"}
    assert played.record.timing[1]["wall_ms"] == [1000.0] * 14


def test_a_bot_starved_for_good_times_out_at_the_wall_cap() -> None:
    settings = RefereeSettings(time_limit=1.0, wall_cap=2.0, strikes=0)
    played = play({1: starved_bot(5.0, 0.0)}, settings, seat_options=BUDGETED)
    faults = [f for f in played.record.faults if f.seat == 1]
    assert len(faults) == 14
    assert faults[0].detail == (
        "no reply within 1000 ms of CPU time (used 0 ms of CPU in 2000 ms, the wall-clock cap)"
    )
    assert played.record.timing[1]["wall_ms"] == [2000.0] * 14


def test_a_bot_that_used_its_cpu_time_times_out_on_time() -> None:
    settings = RefereeSettings(time_limit=1.0, wall_cap=2.0, strikes=0)
    played = play({1: starved_bot(0.0, 1.5)}, settings, seat_options=BUDGETED)
    faults = [f for f in played.record.faults if f.seat == 1]
    assert len(faults) == 14 and faults[0].detail == "no reply within 1000 ms"
    # At most one least extension over (the clock and the deadline meet at 1 s).
    assert max(played.record.timing[1]["wall_ms"]) <= 1000 * (1.0 + MIN_EXTENSION) + 1e-6
