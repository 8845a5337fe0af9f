"""The executors with real bot processes, awaited inside a Trio program:
the worker pool and Dask stop a cancelled call's games (bots killed and
reaped, the games finished before recorded), and a pool serves two calls at
once, one cancelled, the other played to its end."""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any

import pytest
import trio
from conftest import bot

from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant, parse_entrants
from arena.sandbox.isolation import find_processes
from arena.sandbox.launcher import RUN_VARIABLE, Launcher, LaunchOptions
from arena.tournament.executors import ExecutorCancelled, LocalExecutor
from arena.tournament.pool import ProcessPool
from arena.tournament.runner import TournamentSettings, schedule


def field(n: int) -> list[Entrant]:
    # One of them ignores SIGTERM and bye: stopping its games must kill it.
    texts = [bot("first_legal", f"b{i}") for i in range(n - 1)]
    return parse_entrants([*texts, bot("hostile_ignores_term", "stubborn")])


def options() -> LaunchOptions:
    return LaunchOptions(run_id=f"test-exec-{uuid.uuid4().hex[:8]}")


def settings(**kw: Any) -> TournamentSettings:
    return TournamentSettings(**{"seed": 9, "hands": 1, "target_score": None, **kw})


def left_behind(opts: LaunchOptions) -> list[int]:
    return find_processes(env=f"{RUN_VARIABLE}={opts.run_id}")


def test_a_pool_call_cancelled_stops_its_games_and_the_other_call_plays_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One round: table 0's four games (one deal, played in turn) for the call
    # played to its end, the other tables' sixteen for the one cancelled.
    entrants, opts = field(5), options()
    tournament = settings(rounds=1, jobs=2).without_key()
    games = schedule([e.name for e in entrants], settings(rounds=1, jobs=2))
    mine = [g for g in games if g.table == 0]
    theirs = [g for g in games if g.table != 0]
    pool = ProcessPool(entrants, tournament, opts, workers=2)
    got: dict[str, list[GameRecordJSON]] = {"mine": [], "theirs": []}
    caught: list[bool] = []

    async def main() -> None:
        async def cancelled_early() -> None:
            with trio.CancelScope() as scope:

                def on_record(record: GameRecordJSON) -> None:
                    got["theirs"].append(record)
                    scope.cancel()  # after its first game

                await pool.play(theirs, on_record)
            caught.append(scope.cancelled_caught)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancelled_early)
            nursery.start_soon(pool.play, mine, got["mine"].append)
        assert all(p.is_alive() for p in pool._procs)  # told to stop games, not killed
        await pool.aclose()

    trio.run(main)
    assert caught == [True]
    assert sorted(r["game_index"] for r in got["mine"]) == [g.game_index for g in mine]
    assert 1 <= len(got["theirs"]) < len(theirs)
    assert {r["game_index"] for r in got["theirs"]} <= {g.game_index for g in theirs}
    assert all(sum(r["scores"]) in (26, 78) for r in got["mine"] + got["theirs"])
    assert left_behind(opts) == []


def test_cancel_of_a_local_executor_in_worker_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arena.tournament.executors.POOL_MIN_GAMES", 0)
    entrants, opts = field(4), options()
    tournament = settings(rounds=3, jobs=2)
    games = schedule([e.name for e in entrants], tournament)
    ex = LocalExecutor(entrants, tournament, Launcher(opts))
    records: list[GameRecordJSON] = []

    def on_record(record: GameRecordJSON) -> None:
        records.append(record)
        if len(records) == 2:
            ex.cancel()

    async def main() -> None:
        try:
            with pytest.raises(ExecutorCancelled):
                await ex.play(games, on_record)
            assert ex._pool is not None and len(ex._pool._procs) == 2
        finally:
            await ex.aclose()

    trio.run(main)
    assert 2 <= len(records) < len(games)
    assert left_behind(opts) == []


def test_cancel_of_a_dask_call_records_what_finished() -> None:
    pytest.importorskip("distributed")
    from arena.tournament.dask_executor import DaskExecutor

    entrants = parse_entrants([bot("first_legal", f"b{i}") for i in range(5)])
    opts = options()
    tournament = settings(rounds=1, jobs=2)
    games = schedule([e.name for e in entrants], tournament)
    records: list[GameRecordJSON] = []

    async def main() -> None:
        ex = await trio.to_thread.run_sync(DaskExecutor, entrants, tournament, opts)

        def on_record(record: GameRecordJSON) -> None:
            records.append(record)
            ex.cancel()

        try:
            with pytest.raises(ExecutorCancelled):
                await ex.play(games, on_record)
        finally:
            await ex.aclose()

    trio.run(main)
    # A unit is a table's four games: the first unit's, and those that finished while stopping.
    assert 4 <= len(records) < len(games)
    assert len({r["game_index"] for r in records}) == len(records)
    assert left_behind(opts) == []


def test_pool_workers_survive_a_sighup_while_they_start() -> None:
    # A terminal's SIGHUP (or Ctrl-C) reaches the arena's whole process group.
    # Sent the moment the workers are spawned, long before their start-up code
    # ignores it (they are still importing): born with it blocked, they live on
    # and play. (Before, one died of it, and the run ended with a bare
    # "interrupted".)
    entrants, opts = field(4), options()
    tournament = settings(rounds=1, jobs=2).without_key()
    games = schedule([e.name for e in entrants], settings(rounds=1, jobs=2))
    pool = ProcessPool(entrants, tournament, opts, workers=2)
    got: list[GameRecordJSON] = []
    try:
        pool._start()
        assert len(pool._procs) == 2
        for proc in pool._procs:
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGHUP)
            os.kill(proc.pid, signal.SIGINT)

        async def main() -> None:
            await pool.play(games, got.append)
            assert all(p.is_alive() for p in pool._procs)
            await pool.aclose()

        trio.run(main)
    finally:
        for proc in pool._procs:
            proc.kill()
    assert sorted(r["game_index"] for r in got) == [g.game_index for g in games]
    assert all(p.exitcode == 0 for p in pool._procs), [p.exitcode for p in pool._procs]
    assert left_behind(opts) == []
