"""The options of ``run`` (arena/cli/options.py): each declared once, each
default read from the settings class that owns it, and one conversion for a
flag and its ``--config`` key."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from arena.cli.errors import EXIT_USAGE, CliError
from arena.cli.main import build_parser
from arena.cli.options import RUN_OPTIONS, exclusive_partners, field_default, option_for
from arena.game.referee import RefereeSettings
from arena.sandbox import budget
from arena.sandbox.isolation import Limits
from arena.sandbox.launcher import LaunchOptions
from arena.tournament.runner import TournamentSettings


def test_each_flag_of_run_is_declared_once() -> None:
    flags = Counter(flag for option in RUN_OPTIONS for flag in option.flags)
    assert [f for f, n in flags.items() if n > 1] == []
    assert {"--time-limit", "--no-sandbox", "--fail-if", "--live-delay"} <= set(flags)
    # The parser of run holds exactly the table's flags (and --help).
    run = build_parser().parse_args(["run"])
    assert set(vars(run)) == {"command"} | {o.dest for o in RUN_OPTIONS}


def test_the_defaults_of_run_are_those_of_the_settings_classes() -> None:
    args = build_parser().parse_args(["run"])
    referee, limits = RefereeSettings(), Limits()
    assert (args.time_limit, args.startup_time, args.strikes, args.transcript_cap) == (
        referee.time_limit,
        referee.startup_time,
        referee.strikes,
        referee.transcript_cap,
    )
    # The memory bound is fitted to --jobs at start (arena.sandbox.budget), from the same default.
    assert args.memory_limit is None and limits.memory_mb == budget.DEFAULT_MEMORY_MB
    assert args.stderr_limit == limits.stderr_kib == 1024
    assert (args.cpu_limit, args.max_processes, args.max_open_files) == (
        limits.cpu_seconds,
        limits.processes,
        limits.open_files,
    )
    assert args.tmp_size == field_default(LaunchOptions, "tmp_mb") == 64
    assert (args.rounds, args.seating, args.format) == (2, "rotations", "round-robin")
    assert args.rounds == TournamentSettings().rounds
    assert args.sandbox is None and args.sandbox_ro == [] and args.bots == []
    # The tools take the same defaults.
    check = build_parser().parse_args(["check", "bot.py"])
    assert (check.time_limit, check.startup_time, check.strikes) == (1.0, 10.0, 3)


def test_a_flag_and_its_file_key_are_checked_alike(tmp_path: Path) -> None:
    time_limit = option_for("time_limit")
    assert time_limit is not None
    assert time_limit.convert(0.25, "k", tmp_path) == 0.25
    parsed = build_parser().parse_args(["run", "--time-limit", "0.25"])
    assert parsed.time_limit == 0.25
    with pytest.raises(CliError, match="k: must be a positive number of seconds") as info:
        time_limit.convert(-1, "k", tmp_path)
    assert info.value.code == EXIT_USAGE
    with pytest.raises(CliError, match="must be a positive number of seconds"):
        build_parser().parse_args(["run", "--time-limit", "-1"])
    out = option_for("out")
    assert out is not None and out.convert("o", "k", tmp_path) == tmp_path / "o"
    assert option_for("bots") is None and option_for("config") is None
    assert option_for("sandbox") is not None  # --sandbox and --no-sandbox share it
    assert exclusive_partners() == {"hands": {"target_score"}, "target_score": {"hands"}}
