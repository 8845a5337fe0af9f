"""The ladder format: table choice (pure), batches, stopping, replay on resume,
and real ladders through the command line (deterministic across --jobs)."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, load_outputs, run_arena

from arena.tournament.ladder import (
    GAMES_PER_TABLE,
    LadderPlanner,
    choose_tables,
    ladder_budget,
    play_ladder,
)
from arena.tournament.runner import TournamentSettings, schedule

NAMES = [f"e{i:02d}" for i in range(12)]
LADDER = TournamentSettings(
    seed=5, target_score=None, hands=1, format="ladder", games=40, ladder_batch=3
)
STRIP = ("duration_s", "started_at", "timing")


def fake_play(games: Any, sink: Any) -> None:
    """Ranks by seat order of names: the alphabetically first entrant wins."""
    for g in reversed(list(games)):  # completion order differs from schedule order
        order = sorted(g.seats)
        sink({"game_index": g.game_index, "seats": list(g.seats),
              "ranks": [order.index(n) + 1 for n in g.seats]})  # fmt: skip


def test_choose_tables_focus_and_window() -> None:
    ratings = {n: (float(i), 8.0 - i * 0.1) for i, n in enumerate(NAMES)}
    games = dict.fromkeys(NAMES, 10)
    games["e07"] = 2  # most in need
    rng = random.Random(1)
    tables = choose_tables(ratings, games, 1, rng, window=3)
    (table,) = tables
    assert "e07" in table and len(set(table)) == 4
    # Window 3: the three entrants nearest e07 in mu (6, 8 and 5 or 9).
    assert set(table) - {"e07"} <= {"e05", "e06", "e08", "e09"}
    # Pure: same generator state, same tables, whatever the mapping order.
    again = choose_tables(dict(reversed(ratings.items())), games, 1, random.Random(1), window=3)
    assert again == tables


def test_choose_tables_spreads_one_batch_over_the_field() -> None:
    ratings = {n: (25.0, 25 / 3) for n in NAMES}
    # Distinct game counts: the entrant with the fewest games planned is unique at
    # every table, so a chooser that does not seat it is caught at once.
    games = {n: 10 * i for i, n in enumerate(NAMES)}  # +4 a table: no ties in 4 tables
    for seed in range(5):
        tables = choose_tables(ratings, games, 4, random.Random(seed))
        assert len(tables) == 4 and all(len(set(t)) == 4 for t in tables)
        planned = dict(games)
        for table in tables:
            fewest = min(NAMES, key=planned.__getitem__)
            # Each table's focus had the fewest games planned so far in the batch...
            assert fewest in table, (seed, table, fewest)
            for n in table:
                planned[n] += 4  # ...counting the games chosen earlier in the batch
        # Four tables of four from twelve: at least eight entrants seated.
        assert len(Counter(n for t in tables for n in t)) >= 8


def test_planner_batches_tables_rotations_and_deals() -> None:
    planner = LadderPlanner(NAMES, LADDER)
    batches = []
    while batch := planner.next_batch():
        batches.append(batch)
        fake_play(batch, lambda r: None)
        planner.apply({g.game_index: {"seats": g.seats, "ranks": [1, 2, 3, 4]} for g in batch})
    assert planner.stop_reason == "games"
    games = planner.scheduled
    assert len(games) == ladder_budget(LADDER) == 40  # 10 tables
    assert [len(b) for b in batches] == [12, 12, 12, 4]  # batches of 3 tables, then the rest
    assert [g.game_index for g in games] == list(range(40))
    for t in range(10):
        table = games[4 * t : 4 * t + 4]
        assert {g.table for g in table} == {t}
        assert [g.rotation for g in table] == [0, 1, 2, 3]
        assert {g.deal_key for g in table} == {f"L{t}"}  # one deal per table, never reused
        for name in table[0].seats:  # each entrant holds each seat's cards once
            assert sorted(g.seats.index(name) for g in table) == [0, 1, 2, 3]
    assert len({g.deal_key for g in games}) == 10
    assert [g.game_id for g in games[:5]] == ["l0-k0", "l0-k1", "l0-k2", "l0-k3", "l1-k0"]
    assert {g.round for g in batches[1]} == {2}


def test_planner_needs_results_between_batches() -> None:
    planner = LadderPlanner(NAMES, LADDER)
    planner.next_batch()
    with pytest.raises(RuntimeError, match="apply"):
        planner.next_batch()


def test_budget_rounds_down_to_whole_tables_and_sigma_target_stops_early() -> None:
    assert ladder_budget(replace(LADDER, games=43)) == 40
    sink: list[dict[str, Any]] = []
    planner = play_ladder(
        NAMES[:4], replace(LADDER, games=400, sigma_target=7.0), fake_play, sink.append
    )
    assert planner.stop_reason == "sigma"
    assert 0 < len(planner.scheduled) < 400 and len(sink) == len(planner.scheduled)
    assert all(r.sigma < 7.0 for r in planner.table.ratings.values())


def test_play_ladder_replays_recorded_games_and_plays_the_rest() -> None:
    full: list[dict[str, Any]] = []
    reference = play_ladder(NAMES, LADDER, fake_play, full.append)
    assert sorted(r["game_index"] for r in full) == list(range(40))
    # An interrupted run kept some games (in completion order, so not a prefix).
    kept = [r for r in full if r["game_index"] % 3 != 1][:20]
    played: list[int] = []

    def counting(games: Any, sink: Any) -> None:
        played.extend(g.game_index for g in games)
        fake_play(games, sink)

    new: list[dict[str, Any]] = []
    resumed = play_ladder(NAMES, LADDER, counting, new.append, recorded=kept)
    assert resumed.scheduled == reference.scheduled
    assert sorted(played) == sorted(set(range(40)) - {r["game_index"] for r in kept})
    assert len(new) == len(played)
    # A journal of another ladder is refused.
    wrong = [{**kept[0], "seats": list(reversed(kept[0]["seats"]))}]
    with pytest.raises(ValueError, match="ladder chose"):
        play_ladder(NAMES, LADDER, fake_play, lambda r: None, recorded=wrong)


def test_play_ladder_records_each_game_once() -> None:
    def twice(games: Any, sink: Any) -> None:
        fake_play(games, sink)
        fake_play(games, sink)

    seen: list[dict[str, Any]] = []
    play_ladder(NAMES, LADDER, twice, seen.append)
    assert sorted(r["game_index"] for r in seen) == list(range(40))


def test_schedule_has_no_ladder_up_front() -> None:
    with pytest.raises(ValueError, match="as it runs"):
        schedule(NAMES, LADDER)
    with pytest.raises(ValueError, match="game budget"):
        TournamentSettings(seed=1, format="ladder")
    with pytest.raises(ValueError, match="game budget"):
        TournamentSettings(seed=1, games=8)
    assert "games" not in TournamentSettings(seed=1).to_json()  # older runs still resume
    assert LADDER.to_json()["ladder_batch"] == 3


# -- through the command line ----------------------------------------------------

ENTRANTS = [bot("first_legal" if i % 3 == 0 else "random_legal", f"b{i:02d}") for i in range(12)]
#: Unsealed: the ladder's choices, not the seal, are the subject here, and the
#: two runs of :func:`ladder_runs` and the resumed one start 160 bot processes.
LADDER_ARGS = ["--format", "ladder", "--games", "16", "--ladder-batch", "3", "--hands", "1",
               "--seed", "17", "--quiet", "--no-sandbox"]  # fmt: skip


def _games(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["game_index"]: {k: v for k, v in r.items() if k not in STRIP} for r in records}


@pytest.fixture(scope="module")
def ladder_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    base = tmp_path_factory.mktemp("ladder")
    outs = {}
    for jobs in (1, 3):
        out = base / f"jobs{jobs}"
        assert (
            run_arena(["run", *ENTRANTS, *LADDER_ARGS, "--jobs", str(jobs), "--out", str(out)]) == 0
        )
        outs[jobs] = out
    return outs


def test_ladder_is_deterministic_across_jobs(ladder_runs: dict[int, Path]) -> None:
    (res1, rec1), (res3, rec3) = (load_outputs(ladder_runs[j]) for j in (1, 3))
    assert res1["standings"] == res3["standings"]
    assert _games(rec1) == _games(rec3)
    assert sorted(_games(rec1)) == list(range(16))  # 4 tables: batches of 3 and 1
    assert res1["games_total"] == res1["games_played"] == 16 and res1["complete"] is True
    assert res1["settings"]["format"] == "ladder" and res1["settings"]["ladder_batch"] == 3
    # A ladder chooses by need: everyone played, in 4 tables of the 495 possible.
    assert all(row["games"] > 0 for row in res1["standings"])
    assert (ladder_runs[1] / "index.html").exists()
    # Its verdict counts games (a ladder has no rounds).
    verdict = res1["confidence"]["verdict"]
    assert verdict["unit"] == "game" and "round" not in verdict["text"]


def test_ladder_resume_replays_the_choices(ladder_runs: dict[int, Path], tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    shutil.copytree(ladder_runs[1], out)
    lines = (out / "games.jsonl").read_text().splitlines()
    # Keep 13 games: three tables and one rotation of the fourth (mid-batch).
    (out / "games.jsonl").write_text("\n".join(lines[:13]) + "\n")
    assert (
        run_arena(["run", *ENTRANTS, *LADDER_ARGS, "--jobs", "2", "--out", str(out), "--resume"])
        == 0
    )
    results, records = load_outputs(out)
    reference, ref_records = load_outputs(ladder_runs[1])
    assert results["standings"] == reference["standings"]
    assert _games(records) == _games(ref_records)


def test_ladder_stops_at_sigma_target_and_reports_games_scheduled(tmp_path: Path) -> None:
    out = tmp_path / "o"
    four = [bot("first_legal", n) for n in "abcd"]
    args = ["run", *four, "--format", "ladder", "--games", "400", "--sigma-target", "7.5",
            "--ladder-batch", "1", "--hands", "1", "--seed", "2", "--quiet", "--no-sandbox",
            "--out", str(out)]  # fmt: skip
    assert run_arena(args) == 0
    results, records = load_outputs(out)
    assert 0 < len(records) < 400 and len(records) % GAMES_PER_TABLE == 0
    assert results["games_total"] == results["games_played"] == len(records)
    assert results["complete"] is True
    assert all(row["sigma"] < 7.5 for row in results["standings"])
    assert json.loads((out / "run.json").read_text())["games_total"] == len(records)
    assert run_arena(["report", str(out)]) == 0
    rebuilt = json.loads((out / "results.json").read_text())
    assert rebuilt["games_total"] == len(records) and rebuilt["standings"] == results["standings"]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--format", "ladder"], "--format ladder needs --games"),
        (["--games", "8"], "--games is for --format ladder"),
        (["--sigma-target", "2"], "--sigma-target is for --format ladder"),
        (["--format", "ladder", "--games", "8", "--seating", "full"], "--seating full"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler is for --executor dask"),
        (["--format", "ladder", "--games", "0"], "--games: must be at least 1"),
        (["--format", "ladder", "--games", "3"], "at least 4 games"),
    ],
)
def test_ladder_usage_errors(
    extra: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    four = [bot("first_legal", n) for n in "abcd"]
    assert run_arena(["run", *four, *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert fragment in err


def test_ladder_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "run",
        *ENTRANTS,
        "--format",
        "ladder",
        "--games",
        "1000",
        "--sigma-target",
        "2",
        "--dry-run",
    ]
    assert run_arena(args) == 0
    out = capsys.readouterr().out
    assert "12 entrants, ladder: up to 250 tables x 4 rotations = 1000 games" in out
    assert "below 2" in out
