"""Damaged folders, odd paths and signals give one-line errors and documented
exit codes, never a traceback (found by trying to break the arena)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOTS, ROOT, bot, load_outputs, run_arena

from arena.cli.main import EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE

FOUR = [bot("first_legal", n) for n in "abcd"]
SHORT = ["--hands", "1", "--rounds", "1", "--seed", "3", "--quiet"]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("played") / "o"
    assert run_arena(["run", *FOUR, *SHORT, "--out", str(out)]) == EXIT_OK
    return out


def copy_of(played: Path, tmp_path: Path) -> Path:
    out = tmp_path / "o"
    out.mkdir()
    for name in ("run.json", "games.jsonl"):
        (out / name).write_bytes((played / name).read_bytes())
    return out


def edit_first_game(out: Path, change: dict) -> None:
    lines = (out / "games.jsonl").read_text().splitlines()
    rec = json.loads(lines[0]) | change
    lines[0] = json.dumps(rec)
    (out / "games.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"seats": ["a", "b", "c", "<script>x</script>"]}, "is not an entrant"),
        ({"seats": ["a"]}, "seats: ['a'] is too short"),
        ({"scores": ["1", 2, 3, 4]}, "scores/0: '1' is not of type 'integer'"),
        ({"game_index": "0"}, "game_index: '0' is not of type 'integer'"),
        ({"faults": [{"seat": 9, "entrant": "a", "reason": "timeout"}]}, "faults/0/seat"),
    ],
)
def test_report_and_resume_refuse_a_damaged_game_record(
    played: Path, tmp_path: Path, change: dict, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(played, tmp_path)
    edit_first_game(out, change)
    assert run_arena(["report", str(out)]) == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "games.jsonl: line 1 is not a game record" in err
    assert fragment in err and err.count("\n") == 1
    assert run_arena(["run", *FOUR, *SHORT, "--out", str(out), "--resume"]) == EXIT_OUTPUT
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "[]", '{"settings": 3}', "{not json"])
def test_a_damaged_run_file_is_refused(
    played: Path, tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(played, tmp_path)
    (out / "run.json").write_text(content)
    assert run_arena(["report", str(out)]) == EXIT_OUTPUT
    assert "run.json" in capsys.readouterr().err
    assert run_arena(["run", *FOUR, *SHORT, "--out", str(out), "--resume"]) == EXIT_OUTPUT
    assert run_arena(["replay", f"{out}#r1-t0-k0", "--seat", "a"]) == EXIT_USAGE


def test_odd_paths_and_names_are_usage_errors(tmp_path: Path, capsys) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").touch()
    for junit in ["", str(tmp_path / "folder"), str(tmp_path / "file" / "x.xml")]:
        assert run_arena(["check", FOUR[0], "--junit", junit]) == EXIT_USAGE
    assert run_arena(["run", *FOUR, "--out", "", "--dry-run"]) == EXIT_USAGE
    long_name = "N" * 300
    assert run_arena(["run", f"{long_name}={BOTS / 'first_legal.py'}", *FOUR[1:]]) == EXIT_USAGE
    assert run_arena(["run", "x/" + long_name, *FOUR[1:]]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "longer than 64 characters" in err and "bot file not found" in err
    assert "Traceback" not in err


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only folder binds only other users")
def test_an_unwritable_out_is_an_output_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena(["run", *FOUR, *SHORT, "--out", "/proc/hearts-arena"]) == EXIT_OUTPUT
    assert capsys.readouterr().err.startswith("error: cannot")


def test_sigterm_stops_a_background_run_with_sigint_ignored(tmp_path: Path) -> None:
    """A script's background job starts with SIGINT ignored; SIGTERM still stops it."""
    out = tmp_path / "o"
    # 50 ms a card: 16 games last long enough to be stopped after the first, and
    # the bot exits at the end of its input (stubborn.py cost each game its
    # close's two grace periods; a bot outliving the arena is test_resume.py's).
    slow = [f"slow={BOTS / 'slow_legal.py'} 0.05", *FOUR[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *slow, *SHORT, "--rounds", "4", "--out", str(out)],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    journal = out / "games.jsonl"
    for _ in range(600):
        if journal.exists() and journal.read_text().count("\n") >= 1:
            break
        assert proc.poll() is None
        subprocess.run(["sleep", "0.05"], check=True)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # a hang guard
    assert proc.returncode == EXIT_INTERRUPTED, err
    results, records = load_outputs(out)
    assert results["complete"] is False and results["games_played"] == len(records) < 16


def test_replay_with_a_bot_that_fails_its_handshake_is_one_line(
    played: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = f"{BOTS / 'hostile_exit_before_hello.py'}"
    assert run_arena(["replay", f"{played}#r1-t0-k0", "--seat", "a", "--bot", bad]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: the bot failed its handshake") and err.count("\n") == 1


def test_a_schedule_too_large_is_refused_before_it_is_built(capsys) -> None:
    # Each option within its bounds, the schedule they make too large.
    huge = ["run", *FOUR, "--rounds", "250000000", "--seating", "full", "--dry-run"]
    assert run_arena(huge) == EXIT_USAGE
    assert "6,000,000,000 games: more than 1,000,000,000" in capsys.readouterr().err
    # A --rounds past its own bound is refused by the option, in one line.
    assert run_arena(["run", *FOUR, "--rounds", "99999999999999999999", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rounds: must be at most 250000000" in err


def test_a_second_run_on_a_busy_out_is_refused_even_with_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.run.folder import out_lock

    out = tmp_path / "o"
    with out_lock(out):  # as a running tournament holds it
        code = run_arena(["run", *FOUR, *SHORT, "--out", str(out), "--overwrite"])
        assert code == EXIT_OUTPUT
        assert "another hearts-arena run is writing to" in capsys.readouterr().err
    assert run_arena(["run", *FOUR, *SHORT, "--out", str(out), "--overwrite"]) == EXIT_OK


def test_a_bot_that_cannot_be_executed_leaves_no_folder(
    played: Path,
    open_tmp: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The arena's temporary folders (``hearts-bot-*``) go to a temporary
    folder of this test's own, so that other runs on the machine (which make
    and remove theirs in the shared /tmp meanwhile) cannot change what it sees."""
    import tempfile

    binary = open_tmp / "binfile"
    binary.write_bytes(b"\x7fELF\x01\x02 not a program")
    binary.chmod(0o755)
    own_tmp = Path(tempfile.mkdtemp(prefix="arena-test-tmp-"))  # not in the bot's folder
    own_tmp.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    try:
        code = run_arena(["replay", f"{played}#r1-t0-k0", "--seat", "a", "--bot", str(binary)])
        assert code == EXIT_USAGE
        assert "Exec format error" in capsys.readouterr().err
        assert list(own_tmp.iterdir()) == []
    finally:
        shutil.rmtree(own_tmp, ignore_errors=True)
