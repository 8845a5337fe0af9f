"""A whole tournament through arena.run.run.Run from inside a Trio program:
cancelled half-way by the caller's cancel scope, resumed from its folder's
store, with the standings of a run never interrupted (sample bots, real
processes, a fixed key, one hand a game)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from arena.core.keys import MasterKey
from arena.protocol.records import GameRecordJSON
from arena.run import host
from arena.run.folder import KEY_FILE, FolderStore, read_key_file, stored_key
from arena.run.host import Launcher, LaunchOptions, sample_entrants
from arena.run.run import Outcome, Run, plan
from arena.tournament.runner import TournamentSettings
from arena.tournament.settings import LaunchSettings, RunFile

KEY = MasterKey.from_hex("5e" * 32)


def _run_file(launcher: Launcher) -> tuple[Any, RunFile]:
    settings = TournamentSettings(key=KEY, rounds=2, hands=1, target_score=None, jobs=1)
    the_plan = plan(sample_entrants(), settings)
    options = launcher.options
    return the_plan, the_plan.run_file(
        LaunchSettings.from_json(options.describe()), options.run_id, None
    )


def _play(out: Path, *, resume: bool, stop_after: int | None) -> tuple[Outcome, list[int]]:
    """Play (or resume) the run in ``out`` from inside ``trio.run``; with
    ``stop_after``, cancel the caller's scope once that many games are kept."""
    launcher = Launcher(LaunchOptions(sandbox=False, separate_users=False))
    progress: list[int] = []
    try:
        the_plan, run_file = _run_file(launcher)
        host.check_launcher(launcher, the_plan.entrants)

        async def main() -> Outcome:
            store = FolderStore.open(out, run_file, resume=resume, overwrite=False)
            store.write_key(the_plan.key)
            run = Run(the_plan, launcher)
            run.take(store)
            with trio.CancelScope() as scope:

                def on_record(record: GameRecordJSON) -> None:
                    if stop_after is not None and len(store.records()) >= stop_after:
                        scope.cancel()

                await run.play(on_record, lambda done, total: progress.append(done))
            assert scope.cancelled_caught == (stop_after is not None)
            return run.finish()

        return trio.run(main), progress
    finally:
        launcher.close()


def _table(outcome: Outcome) -> list[tuple[Any, ...]]:
    return [
        (row["name"], row["mu"], row["sigma"], row["games"], row["wins"], row["faults"])
        for row in outcome.results["standings"]
    ]


def test_cancelled_half_way_then_resumed_has_the_standings_of_one_run(tmp_path: Path) -> None:
    whole, _ = _play(tmp_path / "whole", resume=False, stop_after=None)
    assert not whole.interrupted and whole.verdict is not None
    assert len(whole.records) == 8 == whole.total  # 1 table x 4 rotations x 2 rounds
    assert whole.results["key"] == KEY.hex()

    out = tmp_path / "cut"
    cut, progress = _play(out, resume=False, stop_after=3)
    assert cut.interrupted and cut.verdict is None
    kept = len(cut.records)
    assert 3 <= kept < 8  # games ending as the scope was cancelled are kept
    assert progress[:3] == [1, 2, 3]
    assert cut.results.get("key") is None  # not revealed before every game is played
    assert cut.results["games_played"] == kept
    assert read_key_file(out / KEY_FILE) == KEY

    resumed, progress = _play(out, resume=True, stop_after=None)
    assert not resumed.interrupted and resumed.verdict is not None
    assert progress == list(range(kept + 1, 9))
    assert sorted(r["game_index"] for r in resumed.records) == list(range(8))
    assert _table(resumed) == _table(whole)
    assert resumed.results["key"] == KEY.hex()
    run = RunFile.read(out / "run.json")
    assert stored_key(out, run) == KEY
