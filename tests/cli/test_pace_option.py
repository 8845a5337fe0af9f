"""``--pace`` and ``--wall-cap`` (issue 22 items 6 and 8): flags and
``--config`` keys alike, checked with one-line errors, recorded in
``run.json``'s settings (only when not the default, so older runs still
resume); a resume with another value is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import bot_path, run_arena

from arena.cli.errors import EXIT_USAGE, CliError
from arena.cli.main import build_parser
from arena.cli.options import option_for
from arena.cli.settings import tournament_settings
from arena.core.keys import MasterKey
from arena.game.referee import DEFAULT_WALL_CAP, RefereeSettings
from arena.tournament.runner import TournamentSettings


def test_the_flags_reach_the_referee() -> None:
    args = build_parser().parse_args(["run", "--pace", "1.05", "--wall-cap", "3"])
    referee = tournament_settings(args, MasterKey.from_seed("pace")).referee
    assert (referee.pace, referee.wall_cap) == (1.05, 3.0)
    default = build_parser().parse_args(["run"])
    assert (default.pace, default.wall_cap) == (0.0, DEFAULT_WALL_CAP) == (0.0, 2.0)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--pace", "-1", "a pace is 0..3600 seconds, got '-1'"),
        ("--pace", "soon", "not a number of seconds: 'soon'"),
        ("--wall-cap", "0.5", "a wall-clock cap is 1..100 times the time limit, got '0.5'"),
    ],
)
def test_bad_values_are_one_line_usage_errors(flag: str, value: str, message: str) -> None:
    from arena.cli.options import UsageParser, add_run_options

    parser = UsageParser(prog="hearts-arena run")
    add_run_options(parser)
    with pytest.raises(CliError, match=re.escape(message)) as info:
        parser.parse_args([flag, value])
    assert info.value.code == EXIT_USAGE


def test_a_config_file_sets_them_as_the_flags_do(tmp_path: Path) -> None:
    pace, cap = option_for("pace"), option_for("wall_cap")
    assert pace is not None and cap is not None
    assert pace.convert(1.5, "pace", tmp_path) == 1.5
    assert cap.convert(1, "wall-cap", tmp_path) == 1.0
    with pytest.raises(CliError, match=re.escape("pace: a pace is 0..3600 seconds")):
        pace.convert(-2, "pace", tmp_path)


def test_run_json_records_them_only_when_set() -> None:
    key = MasterKey.from_seed("pace")
    plain = TournamentSettings(seed=None, key=key).to_json()
    assert "pace" not in plain and "wall_cap" not in plain
    paced = TournamentSettings(
        seed=None, key=key, referee=RefereeSettings(pace=0.5, wall_cap=1.0)
    ).to_json()
    assert (paced["pace"], paced["wall_cap"]) == (0.5, 1.0)


def test_a_paced_run_records_its_pace_and_resumes_with_it(open_tmp: Path) -> None:
    out = open_tmp / "out"
    bots = [f"{n}={bot_path('first_legal')}" for n in "abcd"]
    argv = ["run", *bots, "--rounds", "1", "--hands", "1", "--pace", "0.01", "--quiet"]
    assert run_arena([*argv, "--out", str(out), "--seed", "3"]) == 0
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["pace"] == 0.01
    records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines() if x]
    assert len(records) == 4 and all(r["faults"] == [] for r in records)
    # 52 plays and the pass's tick at the least: 0.53 s a game.
    assert all(r["duration_s"] >= 0.53 for r in records)
    # A resume with another pace is refused (exit 3), before any game.
    assert run_arena(["run", "--resume", "--out", str(out), "--pace", "0.02", "--quiet"]) == 3
