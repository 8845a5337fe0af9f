"""The command line helps a new user (issue 24 item 4): bare ``hearts-arena``
lists the commands, every DIR argument is described in ``--help``, and a bad
``--fail-if`` metric lists the valid ones."""

from __future__ import annotations

import pytest
from conftest import run_arena

from arena.cli.main import EXIT_OK, EXIT_USAGE, build_parser
from arena.report.verdict import METRICS


def test_bare_hearts_arena_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena([]) == EXIT_USAGE
    err = capsys.readouterr().err
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    commands = list(sub.choices)  # type: ignore[attr-defined]
    assert {"run", "check", "replay", "play", "watch", "report", "verify"} <= set(commands)
    for command in commands:
        assert f"\n    {command} " in err, command  # each with its one-line help
    assert "the following arguments are required" not in err


@pytest.mark.parametrize("command", ["report", "verify", "cleanup", "watch"])
def test_every_dir_argument_is_described(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena([command, "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"hearts-arena {command}" in out and " DIR" in out
    described = out.split("positional arguments:", 1)[1].split("options:", 1)[0]
    line = next(x for x in described.splitlines() if x.strip().startswith("DIR"))
    assert len(line.split(None, 1)) == 2 and "folder" in described  # DIR and what it is


def test_a_bad_fail_if_metric_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena(["run", "--fail-if", "pointz>1"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown metric 'pointz'" in err
    assert all(metric in err for metric in METRICS)


def test_check_prints_each_check_as_it_ends(capfd: pytest.CaptureFixture[str]) -> None:
    """``check`` printed nothing until it finished (42 s and more): a line per
    check on stderr, flushed as its scenario ends, before the report."""
    from conftest import bot_path

    code = run_arena(["check", str(bot_path("first_legal")), "--only", "handshake",
                      "--only", "one-legal-card"])  # fmt: skip
    out, err = capfd.readouterr()
    assert code == EXIT_OK, out
    lines = [x for x in err.splitlines() if x.startswith("check: ")]
    assert lines == ["check: PASS  handshake", "check: PASS  one-legal-card"]
    assert "PASS  handshake" in out  # the report on stdout, as before
