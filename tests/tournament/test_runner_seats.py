"""The runner with seats in memory (:class:`arena.tournament.runner.SeatFactory`)
under Trio's ``MockClock``: process reuse along a chain, ``--fresh-processes``,
a crashed bot replaced for the next game, the custody of deals across chains
(no seat that has seen a deal is alive while another seat holds its cards),
the order chains are played in (:func:`chains_of`: :func:`play_order` over
:func:`diagonal`), and the async executor: awaited in the caller's loop,
cancelled by :meth:`~arena.tournament.executors.LocalExecutor.cancel` or the
caller's cancel scope, called by several tasks at once."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from arena.game.referee import GameSpec, handshake
from arena.protocol.faults import Fault
from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.seats.memory import BotEnd, MemoryBot, MemorySeat, first_legal
from arena.seats.seat import Message, Seat
from arena.tournament.executors import ExecutorCancelled, LocalExecutor
from arena.tournament.runner import (
    DealLocks,
    TournamentRunner,
    TournamentSettings,
    chains_of,
    schedule,
)

NAMES = ["ann", "bob", "cy", "dee"]
FIVE = [*NAMES, "eve"]


def entrants(names: Sequence[str]) -> list[Entrant]:
    return [Entrant(n, ("memory",), Path("/"), n) for n in names]


@dataclass
class Life:
    """What one seat did: its entrant, the games it played (with the Trio
    times they started and ended) and when it was closed."""

    name: str
    number: int  # the n-th seat started for this entrant (0-based)
    seat: MemorySeat | None = None
    games: list[tuple[str, float, float]] = field(default_factory=list)  # game id, start, end
    closed_at: float | None = None


#: Decides whether the ``number``-th seat of ``name`` crashes at ``message``.
CrashRule = Callable[[str, int, Message], bool]


class MemorySeats:
    """A :class:`SeatFactory` of :class:`MemorySeat` s playing the default
    moves (each request answered after ``think`` seconds of the mock clock), logging
    every seat's life."""

    def __init__(self, crash: CrashRule | None = None, think: float = 0.0) -> None:
        self.crash = crash
        self.think = think
        self.lives: list[Life] = []
        self.alive = 0
        self.most_alive = 0

    def bot(self, life: Life) -> MemoryBot:
        async def run(end: BotEnd) -> None:
            while (message := await end.receive()) is not None:
                kind = message["type"]
                if kind == "bye":
                    return
                if kind == "game_start":
                    life.games.append((message["game_id"], trio.current_time(), -1.0))
                elif kind == "game_end":
                    game_id, started, _ = life.games[-1]
                    life.games[-1] = (game_id, started, trio.current_time())
                elif kind == "hello":
                    end.reply(message, name=life.name)
                elif "id" in message:
                    if self.crash is not None and self.crash(life.name, life.number, message):
                        raise RuntimeError("crashed on purpose")
                    await trio.sleep(self.think)
                    answer = first_legal(message)
                    assert isinstance(answer, dict)
                    end.reply(message, **answer)

        return run

    async def start(
        self, entrant: Entrant, seat: int, nursery: trio.Nursery
    ) -> tuple[Seat | None, Fault | None]:
        number = sum(1 for life in self.lives if life.name == entrant.name)
        life = Life(entrant.name, number)
        self.lives.append(life)
        memory = MemorySeat(entrant.name, self.bot(life))
        life.seat = memory
        await memory.start(nursery)
        self.alive += 1
        self.most_alive = max(self.most_alive, self.alive)
        try:
            return memory, await handshake(memory, seat, 10.0)
        except BaseException:
            await self.close([memory])
            raise

    def reusable(self, seat: Seat) -> bool:
        return seat.dead is None

    async def close(self, seats: Sequence[Seat]) -> None:
        with trio.CancelScope(shield=True):
            for seat in seats:
                await seat.close(0.5)
                life = next(x for x in self.lives if x.seat is seat)
                assert life.closed_at is None, "a seat closed twice"
                life.closed_at = trio.current_time()
                self.alive -= 1

    def of(self, name: str) -> list[Life]:
        return [life for life in self.lives if life.name == name]


class LoggedLocks(DealLocks):
    """:class:`DealLocks` that log each take and release, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, str]] = []

    def try_take(self, deal_key: str) -> bool:
        taken = super().try_take(deal_key)
        if taken:
            self.log.append(("take", deal_key))
        return taken

    async def take(self, deal_key: str) -> None:
        await super().take(deal_key)
        self.log.append(("take", deal_key))

    def release(self, deal_key: str) -> None:
        self.log.append(("release", deal_key))
        super().release(deal_key)


def settings(**kw: Any) -> TournamentSettings:
    base: dict[str, Any] = {"seed": 26, "rounds": 3, "hands": 1, "target_score": None}
    return TournamentSettings(**{**base, **kw})


def mock_run(main: Callable[[], Any]) -> Any:
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def play_runner(
    names: Sequence[str],
    tournament: TournamentSettings,
    factory: MemorySeats,
    locks: DealLocks | None = None,
) -> list[GameRecordJSON]:
    records: list[GameRecordJSON] = []
    runner = TournamentRunner(
        entrants(names), tournament, Launcher(), records.append, deal_locks=locks, seats=factory
    )
    mock_run(lambda: runner.run(schedule(names, tournament)))
    return records


def scores(records: Sequence[GameRecordJSON]) -> dict[int, list[int]]:
    return {int(r["game_index"]): list(r["scores"]) for r in records}


def deal_of(games: Sequence[GameSpec]) -> dict[str, str]:
    return {g.game_id: g.deal_key for g in games}


def assert_every_seat_closed_once(factory: MemorySeats) -> None:
    assert factory.lives and all(life.closed_at is not None for life in factory.lives)
    assert factory.alive == 0
    for life in factory.lives:
        assert life.seat is not None and life.seat.exited.is_set()


def assert_no_deal_carried(factory: MemorySeats, games: Sequence[GameSpec]) -> None:
    """No seat that has seen a deal is alive while a seat of another game
    holds that deal's cards (issue 22)."""
    deals = deal_of(games)
    for a, b in itertools.permutations(factory.lives, 2):
        assert a.closed_at is not None
        for game_a, start_a, _ in a.games:
            for game_b, start_b, end_b in b.games:
                if game_a == game_b or deals[game_a] != deals[game_b]:
                    continue
                # a saw the deal from start_a until it was closed; b held it in its game.
                overlap = start_b < a.closed_at and start_a < end_b
                assert not overlap, (
                    f"{a.name}#{a.number} (saw {game_a}, closed at {a.closed_at}) was alive "
                    f"while {b.name}#{b.number} played {game_b} ({start_b}..{end_b})"
                )


# -- the chain --------------------------------------------------------------


def test_one_job_keeps_four_seats_along_each_chain() -> None:
    tournament = settings()
    games = schedule(NAMES, tournament)
    factory = MemorySeats()
    locks = LoggedLocks()
    records = play_runner(NAMES, tournament, factory, locks)
    assert scores(records) == one_job_scores(tuple(NAMES), 3)
    assert len(records) == 12
    # One table, four rotations: four chains of three rounds, one set of four seats each.
    assert len(factory.lives) == 16
    chains = chains_of(games)
    assert [r["game_id"] for r in records] == [g.game_id for c in chains for g in c]
    for n, life in enumerate(factory.lives):
        chain = chains[n // 4]
        assert [g for g, _, _ in life.games] == [g.game_id for g in chain]
        assert life.seat is not None and life.seat.games_played == {g.deal_key for g in chain}
    assert_every_seat_closed_once(factory)
    # Each chain takes its three deals one by one and gives them back together at its end.
    expected: list[tuple[str, str]] = []
    for chain in chains:
        expected += [("take", g.deal_key) for g in chain]
        expected += [("release", g.deal_key) for g in chain]
    assert locks.log == expected
    for r in records:  # one hand each: 26 points in all, or a moon shot's 78
        assert sum(r["scores"]) in (26, 78)
        assert not r["faults"]


def test_fresh_processes_start_four_seats_for_every_game_and_score_the_same() -> None:
    factory = MemorySeats()
    fresh = play_runner(NAMES, settings(fresh_processes=True), factory)
    assert len(factory.lives) == 4 * 12
    assert all(len(life.games) == 1 for life in factory.lives)
    assert_every_seat_closed_once(factory)
    assert scores(fresh) == one_job_scores(tuple(NAMES), 3)


def test_a_crashed_bot_is_replaced_by_a_fresh_one_for_the_next_game() -> None:
    # bob's first seat crashes at its first play request; his others never do.
    def crash(name: str, number: int, message: Message) -> bool:
        return name == "bob" and number == 0 and message["type"] == "play"

    tournament = settings()
    games = schedule(NAMES, tournament)
    factory = MemorySeats(crash)
    records = play_runner(NAMES, tournament, factory)
    first_chain = chains_of(games)[0]
    first, second = (next(r for r in records if r["game_id"] == g.game_id) for g in first_chain[:2])
    bob_seat = first["seats"].index("bob")
    assert [(f["seat"], f["reason"]) for f in first["faults"]] == [(bob_seat, "crashed")]
    assert not second["faults"]
    # The crashed seat was closed after its game, a new one played the next
    # two games of the chain; the other three seats were kept.
    bobs = factory.of("bob")
    assert [g for g, _, _ in bobs[0].games] == [first_chain[0].game_id]
    assert [g for g, _, _ in bobs[1].games] == [g.game_id for g in first_chain[1:]]
    assert bobs[0].closed_at is not None and bobs[0].closed_at <= bobs[1].games[0][1]
    for name in ("ann", "cy", "dee"):
        assert [g for g, _, _ in factory.of(name)[0].games] == [g.game_id for g in first_chain]
    assert len(factory.lives) == 17
    assert_every_seat_closed_once(factory)
    # Every other game scores as a faultless run does.
    clean = one_job_scores(tuple(NAMES), 3)
    assert {i: s for i, s in scores(records).items() if i != first["game_index"]} == {
        i: s for i, s in clean.items() if i != first["game_index"]
    }


@functools.cache
def one_job_scores(names: tuple[str, ...], rounds: int) -> dict[int, list[int]]:
    """The scores of a run with one job: the reference of the others."""
    return scores(play_runner(names, settings(rounds=rounds), MemorySeats()))


def test_chains_at_once_never_carry_a_deal_into_another_chain() -> None:
    jobs = 3
    tournament = settings(rounds=2, jobs=jobs)
    games = schedule(FIVE, tournament)
    factory = MemorySeats()
    locks = LoggedLocks()
    records = play_runner(FIVE, tournament, factory, locks)
    assert len(records) == len(games) == 5 * 4 * 2
    assert_every_seat_closed_once(factory)
    assert_no_deal_carried(factory, games)
    assert factory.most_alive <= 4 * jobs
    # Seats were reused (fields of several tables), yet fewer than with one job.
    assert 4 * len(chains_of(games)) <= len(factory.lives) < 4 * len(games)
    # The locks: a deal is taken only when free, and every take is released.
    holding: set[str] = set()
    for kind, deal in locks.log:
        if kind == "take":
            assert deal not in holding
            holding.add(deal)
        else:
            holding.remove(deal)
    assert not holding
    assert scores(records) == one_job_scores(tuple(FIVE), 2)


# -- the executor -----------------------------------------------------------


def executor(
    names: Sequence[str], tournament: TournamentSettings, factory: MemorySeats
) -> LocalExecutor:
    return LocalExecutor(entrants(names), tournament, Launcher(), seats=factory)


def test_cancel_stops_the_games_in_play_and_keeps_the_finished_ones() -> None:
    tournament = settings(jobs=2)
    games = schedule(NAMES, tournament)
    factory = MemorySeats(think=0.01)
    ex = executor(NAMES, tournament, factory)
    records: list[GameRecordJSON] = []
    outcome: list[str] = []

    def on_record(record: GameRecordJSON) -> None:
        records.append(record)
        if len(records) == 5:
            ex.cancel()

    async def main() -> None:
        with pytest.raises(ExecutorCancelled):
            await ex.play(games, on_record)
        outcome.append("cancelled")
        with pytest.raises(ExecutorCancelled):  # no game starts after cancel()
            await ex.play(games, on_record)
        await ex.aclose()

    mock_run(main)
    assert outcome == ["cancelled"]
    assert 5 <= len(records) < len(games)
    assert len({r["game_index"] for r in records}) == len(records)
    assert_every_seat_closed_once(factory)
    # A game in play when cancelled left no record; those recorded are whole.
    assert all(sum(r["scores"]) in (26, 78) for r in records)
    started = {g for life in factory.lives for g, _, _ in life.games}
    assert {r["game_id"] for r in records} < started


def test_the_callers_cancel_scope_stops_play_and_closes_every_seat() -> None:
    tournament = settings()
    factory = MemorySeats(think=0.01)
    ex = executor(NAMES, tournament, factory)
    records: list[GameRecordJSON] = []
    times: list[float] = []

    async def main() -> None:
        full = trio.current_time()
        with trio.move_on_after(1.0) as scope:  # a game takes about 0.13 s of the mock clock
            await ex.play(schedule(NAMES, tournament), records.append)
        times.append(trio.current_time() - full)
        assert scope.cancelled_caught
        await ex.aclose()

    mock_run(main)
    assert 1 <= len(records) < 12
    assert times[0] < 2.0  # stopped at once (seats closed within their grace)
    assert_every_seat_closed_once(factory)


def test_plays_at_once_share_the_jobs_and_the_deals() -> None:
    # Two tasks play halves of one schedule through one executor of two jobs:
    # at most eight seats alive, and no deal carried from one call into the other.
    tournament = settings(rounds=2, jobs=2)
    games = schedule(FIVE, tournament)
    factory = MemorySeats()
    ex = executor(FIVE, tournament, factory)
    got: dict[str, list[GameRecordJSON]] = {"even": [], "odd": []}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ex.play, [g for g in games if g.table % 2 == 0], got["even"].append)
            nursery.start_soon(ex.play, [g for g in games if g.table % 2 == 1], got["odd"].append)
        await ex.aclose()

    mock_run(main)
    assert {r["game_index"] for r in got["even"]} == {
        g.game_index for g in games if g.table % 2 == 0
    }
    assert {r["game_index"] for r in got["odd"]} == {
        g.game_index for g in games if g.table % 2 == 1
    }
    assert factory.most_alive <= 8
    assert_every_seat_closed_once(factory)
    assert_no_deal_carried(factory, games)
    assert scores(got["even"] + got["odd"]) == one_job_scores(tuple(FIVE), 2)
