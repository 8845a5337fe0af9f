"""Results survive the referee itself: kill -9 then --resume gives the standings of
an uninterrupted run, and Ctrl-C stops cleanly with partial standings."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import (
    BOTS,
    ROOT,
    bot,
    bot_path,
    load_outputs,
    needs_seal,
    processes_matching,
    run_arena,
    run_processes,
)

from arena.cli.main import EXIT_FAILED, EXIT_OUTPUT
from arena.core.keys import MasterKey

ENTRANTS = [
    f"slow={bot_path('stubborn')} 0.01",
    bot("random_legal", "r1"),
    bot("random_legal", "r2"),
    bot("first_legal", "f"),
]
#: Two rounds: 8 games (one table, 4 rotations a round), enough to kill a run
#: or cut its journal mid-run (three rounds, 12 games, cost each test here 4
#: more games a run and as many resumed, about 0.15 CPU-s a game).
ARGS = ["--hands", "1", "--rounds", "2", "--seed", "99", "--jobs", "2", "--quiet"]
#: ENTRANTS with a slow bot that plays as stubborn.py does (the first legal card
#: after 10 ms) but exits at the end of its input, for the tests whose subject
#: is not a bot that outlives the arena: a stubborn bot costs each of its games
#: the close's two grace periods (a second) before its SIGKILL.
POLITE = [f"slow={bot_path('slow_legal')} 0.01", *ENTRANTS[1:]]


def start_arena(
    out: Path, entrants: list[str] = ENTRANTS, args: list[str] = ARGS, *, session: bool = False
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *entrants, *args, "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=session,
    )  # fmt: skip


def wait_for_games(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    journal = out / "games.jsonl"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if journal.exists() and len(journal.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} games after {timeout} s")


def kill_watchdog(arena: int) -> None:
    """Kill the run's watchdog (arena.sandbox.cgroups), which would otherwise end the
    bots of a killed arena before --resume could show that it does."""
    for pid, _ in processes_matching("arena.sandbox.cgroups"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == arena:
            os.kill(pid, signal.SIGKILL)


def run_tmpdirs(out: Path) -> list[Path]:
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    from arena.sandbox.entrants import copies_tag

    folder = Path(tempfile.gettempdir())
    return [
        *folder.glob(f"hearts-bot-{run_id}-*"),
        *folder.glob(f"hearts-bot-{copies_tag(run_id)}-*"),  # the entrants' copies
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run of ENTRANTS with ARGS (unsealed: sealed and
    unsealed standings are equal, tests/seats/test_seal.py), for every test
    here that compares a resumed run with it."""
    out = tmp_path_factory.mktemp("reference") / "o"
    assert run_arena(["run", *ENTRANTS, *ARGS, "--no-sandbox", "--out", str(out)]) == 0
    _, records = load_outputs(out)
    assert len(records) == 8
    return out


@pytest.mark.parametrize(
    "mode", [pytest.param((), marks=needs_seal), ("--no-sandbox",)], ids=["sealed", "no-sandbox"]
)
def test_kill_9_then_resume_gives_the_uninterrupted_standings(
    tmp_path: Path, mode: tuple[str, ...], reference: Path
) -> None:
    ref_results, _ = load_outputs(reference)

    out = tmp_path / "killed"
    proc = start_arena(out, ENTRANTS, [*ARGS, *mode])
    wait_for_games(out, 3, proc)
    kill_watchdog(proc.pid)  # as a crash of the machine would: --resume must clean up
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len((out / "games.jsonl").read_text().splitlines())
    assert 3 <= kept < 8
    if mode:
        # The bots of the games in progress outlived the arena (they ignore SIGTERM and EOF).
        time.sleep(0.2)
        assert run_processes(out) != []
    else:
        # Sealed bots die with the arena (bubblewrap's --die-with-parent).
        for _ in range(100):
            if not run_processes(out):
                break
            time.sleep(0.05)
        assert run_processes(out) == []
    assert run_tmpdirs(out) != []  # their temporary folders (or entrant copies) are left

    code = run_arena(["run", *ENTRANTS, *ARGS, *mode, "--out", str(out), "--resume"])
    assert code == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert sorted(r["game_index"] for r in records) == list(range(8))
    assert results["standings"] == ref_results["standings"]
    assert run_processes(out) == []
    assert run_tmpdirs(out) == []


def test_kill_9_then_resume_with_a_secret_key(tmp_path: Path) -> None:
    """A drawn key is kept owner-only in the folder (tournament.key): --resume
    uses it without being given it, and ends with the tournament the same key
    plays uninterrupted (--key-file), revealed and verifiable."""
    # Unsealed: the key is the subject (a sealed arena killed and resumed is
    # test_kill_9_then_resume_gives_the_uninterrupted_standings[sealed]).
    args = [*(a for a in ARGS if a not in ("--seed", "99")), "--no-sandbox"]
    key_file = tmp_path / "k.key"
    key_file.write_text(MasterKey.generate().hex())
    key_file.chmod(0o600)  # a key file others may read is refused
    reference = tmp_path / "reference"
    assert (
        run_arena(["run", *POLITE, *args, "--key-file", str(key_file), "--out", str(reference)])
        == 0
    )
    out = tmp_path / "killed"
    proc = start_arena(out, POLITE, [*args, "--key-file", str(key_file)])
    wait_for_games(out, 3, proc)
    kill_watchdog(proc.pid)  # as a crash of the machine would: --resume must clean up
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 3 <= len((out / "games.jsonl").read_text().splitlines()) < 8  # killed mid-run
    assert run_arena(["run", *POLITE, *args, "--out", str(out), "--resume"]) == 0
    (ref, ref_records), (results, records) = load_outputs(reference), load_outputs(out)
    assert results["standings"] == ref["standings"]
    assert [r["hands"] for r in sorted(records, key=lambda r: r["game_index"])] == [
        r["hands"] for r in sorted(ref_records, key=lambda r: r["game_index"])
    ]
    assert results["key"] == key_file.read_text().strip()
    assert run_arena(["verify", str(out)]) == 0
    assert run_processes(out) == []


def test_resume_refuses_different_settings(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    base = [
        "run",
        *(bot("first_legal", n) for n in "abcd"),
        "--hands",
        "1",
        "--rounds",
        "1",
        "--quiet",
        "--no-sandbox",  # the settings compared, not the seal, are the subject
    ]
    assert run_arena([*base, "--seed", "5", "--out", str(out)]) == 0
    capsys.readouterr()
    assert run_arena([*base, "--seed", "6", "--out", str(out), "--resume"]) == 3
    assert "settings differ from the run" in capsys.readouterr().err
    assert run_arena([*base, "--time-limit", "2", "--out", str(out), "--resume"]) == 3
    assert "time_limit" in capsys.readouterr().err
    # --jobs may change; without --seed the stored seed is used.
    assert run_arena([*base, "--jobs", "1", "--out", str(out), "--resume"]) == 0


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["ctrl-c", "sigterm", "sighup"]
)
def test_ctrl_c_stops_cleanly_with_partial_standings(tmp_path: Path, signum: int) -> None:
    """Ctrl-C, SIGTERM and SIGHUP (issue 24 item 16: a closed terminal sends
    it to its whole process group, the worker processes too) all stop the run
    with partial standings and the line that resumes it."""
    out = tmp_path / "o"
    # About 0.7 s a game, and enough games (40) that --jobs 2 uses worker processes.
    slower = [f"slow={bot_path('stubborn')} 0.05", *ENTRANTS[1:], bot("first_legal", "g")]
    proc = start_arena(out, slower, session=True)
    wait_for_games(out, 1, proc)
    if signum == signal.SIGHUP:
        os.killpg(proc.pid, signum)  # as a terminal does: the arena's whole group
    else:
        proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)  # a hang guard
    assert proc.returncode == 130, stderr
    assert "interrupted:" in stderr
    assert f"continue with: hearts-arena run --resume --out {out}\n" in stderr
    results = json.loads((out / "results.json").read_text())
    records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert results["complete"] is False
    assert "key" not in results  # an interrupted run never reveals its key
    assert (
        results["key_commitment"]
        == json.loads((out / "run.json").read_text())["settings"]["key_commitment"]
    )
    assert results["games_played"] == len(records) < 40
    assert sum(row["games"] for row in results["standings"]) == 4 * len(records)
    assert (out / "index.html").exists()
    assert run_processes(out) == []
    assert run_tmpdirs(out) == []


def test_resume_with_only_out_reads_settings_and_entrants_from_run_json(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, item 13: ``run --resume --out DIR`` alone continues the run
    in DIR as recorded; flags given must agree with the record (exit 3)."""
    spaced = open_tmp / "my bots"
    spaced.mkdir()
    spaced.chmod(0o755)
    (spaced / "first legal.py").write_text((BOTS / "first_legal.py").read_text())
    (spaced / "first legal.py").chmod(0o644)
    entrants = [*POLITE[:3], f"f={spaced / 'first legal.py'}"]
    settings = ["--time-limit", "0.7", "--strikes", "2", "--max-open-files", "200"]
    whole = open_tmp / "whole"
    assert run_arena(["run", *entrants, *ARGS, *settings, "--out", str(whole)]) == 0
    ref_results, ref_records = load_outputs(whole)
    assert len(ref_records) == 8

    # The cut run: the same run's folder (playing it again would give the same
    # files), its journal then cut to its first 3 games.
    out = open_tmp / "o"
    shutil.copytree(whole, out)
    journal = out / "games.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:3]))
    capsys.readouterr()
    # A flag that disagrees with the record: one line, exit 3, nothing played.
    assert run_arena(["run", "--resume", "--out", str(out), "--rounds", "4"]) == EXIT_OUTPUT
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --resume: settings differ from the run in {out}: rounds: recorded 2, given 4 "
        "(give only --out and --resume to continue it as recorded)"
    )
    assert len(journal.read_text().splitlines()) == 3
    # Only --out: the recorded entrants (a command with an argument, a path
    # with a space) and settings; flags that agree are accepted.
    assert run_arena(["run", "--resume", "--out", str(out), "--quiet", "--hands", "1"]) == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert sorted(r["game_index"] for r in records) == list(range(8))
    assert results["standings"] == ref_results["standings"]
    assert results["settings"] == json.loads((whole / "run.json").read_text())["settings"]


def test_a_recorded_entrant_is_read_from_its_argv_and_older_records_still_work() -> None:
    from arena.sandbox.entrants import EntrantError, entrant_from_record

    record = {"name": "x", "command": "ignored", "argv": ["run", "b 'c"], "cwd": "/srv/b c",
              "given": "x=...", "program": "/srv/b c/run"}  # fmt: skip
    e = entrant_from_record(record)
    assert (e.name, e.argv, e.cwd, e.source, e.program) == (
        "x", ("run", "b 'c"), Path("/srv/b c"), "x=...", Path("/srv/b c/run"),
    )  # fmt: skip
    old = entrant_from_record({"name": "y", "command": "python3 'my bot.py' --fast", "cwd": "/"})
    assert (old.argv, old.program) == (("python3", "my bot.py", "--fast"), None)
    with pytest.raises(EntrantError, match="no usable command and folder"):
        entrant_from_record({"name": "z", "cwd": "/"})


def test_resume_with_only_out_keeps_a_secret_key_and_disqualification(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run without --seed (a secret key in the folder) resumes from --out
    alone and ends with the standings of the whole run."""
    out = tmp_path / "o"
    unseeded = [*(a for a in ARGS if a not in ("--seed", "99")), "--no-sandbox"]  # not the seal
    assert (
        run_arena(["run", *POLITE, *unseeded, "--disqualify-after", "50", "--out", str(out)]) == 0
    )
    whole, _ = load_outputs(out)
    assert whole["settings"]["seed"] is None and whole["settings"]["disqualify_after"] == 50
    journal = out / "games.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:4]))
    capsys.readouterr()
    assert run_arena(["run", "--resume", "--out", str(out)]) == 0
    results, records = load_outputs(out)
    assert len(records) == 8 and results["standings"] == whole["standings"]
    assert results["settings"] == whole["settings"]


def test_resume_with_only_out_judges_by_the_runs_fail_if_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, items 4 and 13: an interrupted CI run resumed with only
    --out gave exit 0 and no JUnit file, though its --fail-if held: the
    verdict options are kept in run.json and judge the resumed run."""
    out, junit = tmp_path / "o", tmp_path / "j.xml"
    entrants = [*ENTRANTS[1:], bot("illegal", "bad")]
    verdict = ["--fail-if", "faults>0", "--fail-if", "mean_rank > 3.9", "--junit", str(junit)]
    unsealed = [*ARGS, "--no-sandbox"]  # the verdict, not the seal, is the subject
    assert run_arena(["run", *entrants, *unsealed, *verdict, "--out", str(out)]) == EXIT_FAILED
    info = json.loads((out / "run.json").read_text())
    assert info["verdict"] == {"fail_if": ["faults>0", "mean_rank > 3.9"], "junit": str(junit)}
    journal = out / "games.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:4]))
    junit.unlink()
    capsys.readouterr()
    assert run_arena(["run", "--resume", "--out", str(out), "--quiet"]) == EXIT_FAILED
    assert len(load_outputs(out)[1]) == 8
    err = capsys.readouterr().err
    assert [x.split(":")[0] for x in err.splitlines() if x.startswith("fail-if")] == [
        "fail-if faults>0"
    ]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("4", "1")
    # Conditions given on the command line replace the recorded ones.
    assert run_arena(["run", "--resume", "--out", str(out), "--fail-if", "games<1"]) == 0
    assert "fail-if" not in capsys.readouterr().err
