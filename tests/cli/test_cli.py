"""The command line: exit codes, one-line errors, the output folder, dry runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOTS, ROOT, bot, load_outputs, run_arena

from arena.cli.main import EXIT_OUTPUT, EXIT_USAGE

FOUR = [bot("first_legal", n) for n in "abcd"]
#: The settings of the shared run (:func:`finished`), as given on its command line.
FINISHED_ARGS = ["--hands", "1", "--rounds", "1", "--seed", "8", "--time-limit", "0.5",
                 "--startup-time", "3"]  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run of FOUR with FINISHED_ARGS, for the tests that read it
    or start from a folder that holds a tournament (they copy it)."""
    out = tmp_path_factory.mktemp("finished") / "o"
    assert run_arena(["run", *FOUR, *FINISHED_ARGS, "--out", str(out), "--quiet"]) == 0
    return out


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert "\n" not in err
    return err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (FOUR[:3], "at least four entrants, got 3"),
        ([*FOUR[:3], "missing_bot.py"], "bot file not found: missing_bot.py"),
        ([*FOUR, "--rounds", "0"], "--rounds: must be at least 1"),
        ([*FOUR, "--time-limit", "-1"], "--time-limit: must be a positive number"),
        ([*FOUR, "--time-limit", "nan"], "--time-limit: must be a positive number"),
        ([*FOUR, "--bogus"], "unrecognized arguments: --bogus"),
        ([*FOUR, "--hands", "2", "--target-score", "50"], "not allowed with argument"),
        ([*FOUR[:3], bot("first_legal", "a")], "two entrants are named 'a'"),
        ([*FOUR[:3], f"e\u202eevil={BOTS / 'first_legal.py'}"], "bidirectional character U+202E"),
        (
            [*FOUR[:3], f"e\x1bvil={BOTS / 'first_legal.py'}"],
            "control or bidirectional character U+001B",
        ),
        ([*FOUR[:3], str(BOTS)], "is a folder"),
        ([*FOUR[:3], str(BOTS / "botlib.py").replace(".py", "")], "bot file not found"),
        (
            [*FOUR[:3], "x=/nonexistent/folder/bot --fast"],
            "entrant 'x': bot file not found: /nonexistent/folder/bot",
        ),
        ([*FOUR[:3], "sample:nosuch"], "no sample bot 'nosuch'; the samples are"),
        ([*FOUR, "--round", "2"], "unrecognized arguments: --round"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    args: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_arena(["run", *args, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    assert fragment in one_line_error(capsys)
    assert not (tmp_path / "o" / "games.jsonl").exists()


def test_sample_bots_by_name(tmp_path: Path) -> None:
    out = tmp_path / "o"
    code = run_arena(
        [
            "run",
            FOUR[0],
            "sample:low",
            "d=sample:duck",
            "sample:random",
            "--hands",
            "1",
            "--rounds",
            "1",
            "--seed",
            "2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    results, _ = load_outputs(out)
    assert sorted(row["name"] for row in results["standings"]) == ["a", "d", "low", "random"]
    given = {e["name"]: e["given"] for e in results["settings"]["entrants"]}
    assert given["d"] == "sample:duck"


def test_an_output_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert run_arena(["run", *FOUR, "--out", str(blocker / "sub")]) == EXIT_OUTPUT
    assert "cannot create the output folder" in one_line_error(capsys)


def test_not_executable_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "prog"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o644)
    assert run_arena(["run", *FOUR[:3], str(prog), "--out", str(tmp_path / "o")]) == EXIT_USAGE
    assert "is not executable" in one_line_error(capsys)


def test_output_folder_is_not_overwritten_unless_asked(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    shutil.copytree(finished, out)  # a folder that holds a tournament
    base = [
        "run",
        *FOUR,
        "--hands",
        "1",
        "--rounds",
        "1",
        "--seed",
        "4",
        "--out",
        str(out),
        "--quiet",
    ]
    capsys.readouterr()
    first = (out / "games.jsonl").read_text()
    assert run_arena(base) == EXIT_OUTPUT
    assert "already holds a tournament" in one_line_error(capsys)
    assert (out / "games.jsonl").read_text() == first
    assert run_arena([*base, "--overwrite"]) == 0
    results, records = load_outputs(out)
    assert len(records) == 4 and results["complete"] is True
    assert results["settings"]["seed"] == 4  # played again, not the folder's run


def test_drawn_key_commitment_is_printed_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    assert (
        run_arena(["run", *FOUR, "--hands", "1", "--rounds", "1", "--out", str(out), "--quiet"])
        == 0
    )
    err = capsys.readouterr().err
    results, _ = load_outputs(out)
    assert f"key commitment: SHA-256 {results['key_commitment']} (the key is revealed" in err
    assert results["settings"]["key_commitment"] == results["key_commitment"]
    assert results["seed"] is None and results["settings"]["seed"] is None


def test_dry_run_prints_tables_games_and_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    five = [*FOUR, bot("first_legal", "e")]
    code = run_arena(
        ["run", *five, "--rounds", "3", "--seed", "1", "--dry-run", "--out", str(tmp_path / "o")]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "5 entrants, 5 tables, 3 rounds x 4 rotations" in out
    assert "table 0: a, b, c, d" in out
    assert "table 4: b, c, d, e" in out
    assert "60 games, each to 100" in out
    assert "estimated time: about" in out
    assert not (tmp_path / "o").exists()


def test_settings_are_recorded_with_flag_names_in_seconds(finished: Path) -> None:
    settings = json.loads((finished / "results.json").read_text())["settings"]
    assert settings["time_limit"] == 0.5
    assert settings["startup_time"] == 3.0
    assert settings["hands"] == 1 and settings["target_score"] is None
    assert settings["rounds"] == 1 and settings["seed"] == 8
    assert [e["name"] for e in settings["entrants"]] == list("abcd")


def test_cli_end_to_end_in_a_subprocess(open_tmp: Path) -> None:
    """``python -m arena run`` with test bots, from another folder: writes every output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena",
            "run",
            *FOUR,
            "--hands",
            "1",
            "--rounds",
            "1",
            "--seed",
            "2",
        ],
        cwd=open_tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results, _ = load_outputs(open_tmp / "reports")
    assert (open_tmp / "reports" / "index.html").exists()
    assert [row["games"] for row in results["standings"]] == [4, 4, 4, 4]
    assert "report: reports/index.html" in proc.stdout


def test_a_command_not_on_path_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, item 13: ``NAME=missing-cmd`` said "bot file not found: <cwd>/missing-cmd"."""
    args = ["run", *FOUR[:3], "x=no-such-command-14 --fast", "--out", str(tmp_path / "o")]
    assert run_arena(args) == EXIT_USAGE
    assert one_line_error(capsys) == (
        "error: entrant 'x': command 'no-such-command-14' was not found on PATH "
        "(give a path such as ./prog for a program in this folder)"
    )
    # A command that is on PATH is found and recorded with its words as given.
    assert run_arena(["run", *FOUR[:3], "x=sh -c 'exit 0'", "--dry-run"]) == 0
    capsys.readouterr()


def test_name_equals_file_is_the_file_unsplit(open_tmp: Path) -> None:
    """``NAME=FILE`` whose whole text is a file (here with a space and a quote)
    is that file, run in its folder, with no shell quoting needed."""
    folder = open_tmp / "my bots's"
    folder.mkdir()
    folder.chmod(0o755)
    program = folder / "first legal.py"
    program.write_text((BOTS / "first_legal.py").read_text())
    program.chmod(0o644)
    out = open_tmp / "o"
    args = ["run", f"mine={program}", *FOUR[1:], "--hands", "1", "--rounds", "1", "--quiet"]
    assert run_arena([*args, "--out", str(out), "--fail-if", "faults>0"]) == 0
    (mine,) = [e for e in json.loads((out / "run.json").read_text())["settings"]["entrants"]
               if e["name"] == "mine"]  # fmt: skip
    assert mine["argv"] == [sys.executable, str(program)]
    assert (mine["cwd"], mine["given"]) == (str(folder), f"mine={program}")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert run_arena(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"hearts-arena {version('hearts-arena')} (Python 3.")
    proc = subprocess.run(
        [sys.executable, "-m", "arena", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stdout == out
    # Into a closed pipe, or with standard output closed: still 0, no traceback.
    for redirect in ("| true", ">&-"):
        shell = subprocess.run(
            f"{sys.executable} -m arena --version {redirect}; echo ${{PIPESTATUS[0]}} >&2",
            shell=True, executable="/bin/bash", capture_output=True, text=True, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert shell.stdout == "" and shell.stderr.endswith("0\n")  # the exit code
        assert "Traceback" not in shell.stderr and "Exception" not in shell.stderr


def test_report_is_refused_while_a_run_writes_the_folder(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.run.folder import out_lock

    out = tmp_path / "o"
    shutil.copytree(finished, out)  # a finished run (its report is rebuilt below)
    capsys.readouterr()
    with out_lock(out):  # as a running tournament holds it
        assert run_arena(["report", str(out)]) == EXIT_OUTPUT
        assert one_line_error(capsys) == (
            f"error: a hearts-arena run is writing to {out}; rebuild its report when the run "
            "has finished (the run writes it itself at the end)"
        )
    assert run_arena(["report", str(out)]) == 0
