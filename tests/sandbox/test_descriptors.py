"""Open-file limits (issue 14, item 6): ``--jobs`` beyond what ``ulimit -n``
allows raised the soft limit or ran fewer games at once, never "Too many open
files" after a few games."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, bot, load_outputs

from arena.cli.main import EXIT_ENVIRONMENT
from arena.sandbox import descriptors
from arena.sandbox.descriptors import FDS_BASE, FDS_PER_GAME, DescriptorLimitError, fit_jobs, needed

FIVE = [bot("random_legal", "a"), bot("first_legal", "b"), bot("random_legal", "c"),
        bot("first_legal", "d"), bot("random_legal", "e")]  # fmt: skip


def run_limited(folder: Path, soft: int, hard: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The arena in a subprocess whose open-files limit is ``soft``/``hard``."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run(
        [sys.executable, "-m", "arena", "run", *args],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lower,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


SHORT = ["--hands", "1", "--rounds", "1", "--seed", "4", "--quiet", "--jobs", "20"]


def test_a_hard_limit_too_low_for_jobs_runs_fewer_games_with_a_note(open_tmp: Path) -> None:
    """Under ``ulimit -n 192`` (soft and hard), ``--jobs 20`` of 5 entrants
    (20 games) failed with "Too many open files"; now 3 games run at once."""
    proc = run_limited(open_tmp, 192, 192, *FIVE, *SHORT, "--out", "o")
    assert proc.returncode == 0, proc.stderr[-2000:]
    fits = (192 - FDS_BASE) // FDS_PER_GAME
    assert fits == 3
    assert proc.stderr.splitlines()[0] == (
        f"note: running 3 games at once, not 20: 20 games need about {needed(20)} open "
        "files and this system allows 192 (ulimit -n; raise the hard limit to run more)"
    )
    assert "Traceback" not in proc.stderr and "Too many open files" not in proc.stderr
    results, records = load_outputs(open_tmp / "o")
    assert len(records) == 20 and results["games_played"] == 20
    assert [f for r in records for f in r["faults"] if f["reason"] == "crashed"] == []
    assert json.loads((open_tmp / "o" / "run.json").read_text())["settings"]["jobs"] == 3


def test_the_soft_limit_is_raised_towards_the_hard_limit(open_tmp: Path) -> None:
    """Four entrants at ``--jobs 4`` (4 chains of games) need about 224 open
    files: under a soft limit of 128 they would run one game at once, with a
    note; the soft limit is raised (the hard limit is 4096) and all 4 run.
    (Twenty games at once under a hard limit are the test above's.)"""
    four_jobs = [*FIVE[:4], *SHORT[:-1], "4"]
    assert SHORT[-2] == "--jobs" and needed(4) > 128 > needed(1)
    proc = run_limited(open_tmp, 128, 4096, *four_jobs, "--out", "o")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "note:" not in proc.stderr
    # Only as many games as the schedule can run at once count: four
    # entrants have 4 chains of games, whatever --jobs says.
    four = [*FIVE[:4], "--hands", "1", "--rounds", "1", "--jobs", "64", "--dry-run"]
    dry = run_limited(open_tmp, 256, 256, *four)
    assert dry.returncode == 0 and "note:" not in dry.stderr
    assert "4 games, each 1 hands, 64 at a time" in dry.stdout
    assert json.loads((open_tmp / "o" / "run.json").read_text())["settings"]["jobs"] == 4
    assert len(load_outputs(open_tmp / "o")[1]) == 4


def test_a_limit_too_low_for_one_game_is_one_line_exit_4(open_tmp: Path) -> None:
    proc = run_limited(open_tmp, 90, 90, *FIVE, *SHORT, "--out", "o")
    assert proc.returncode == EXIT_ENVIRONMENT
    assert proc.stderr == (
        f"error: the open-files limit (90) is too low for even one game, which needs about "
        f"{needed(1)}; raise it (ulimit -n {needed(1)})\n"
    )
    assert not (open_tmp / "o" / "games.jsonl").exists()


def test_fit_jobs_decides_from_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"now": (1024, 1024)}
    monkeypatch.setattr(descriptors.resource, "getrlimit", lambda _: limits["now"])

    def setrlimit(_: int, value: tuple[int, int]) -> None:
        limits["now"] = value

    monkeypatch.setattr(descriptors.resource, "setrlimit", setrlimit)
    fit = fit_jobs(128)  # the case: --jobs 128 under ulimit -n 1024
    assert (fit.jobs, fit.limit) == ((1024 - FDS_BASE) // FDS_PER_GAME, 1024)
    assert fit.note is not None and fit.note.startswith("note: running 24 games at once, not 128")
    limits["now"] = (256, 1_000_000)  # a soft limit below a generous hard one: raised, as needed
    assert fit_jobs(32) == descriptors.JobsFit(32, needed(32))
    assert limits["now"] == (needed(32), 1_000_000)
    limits["now"] = (256, resource.RLIM_INFINITY)
    assert fit_jobs(8).jobs == 8 and limits["now"] == (needed(8), resource.RLIM_INFINITY)
    limits["now"] = (64, 64)
    with pytest.raises(DescriptorLimitError, match="too low for even one game"):
        fit_jobs(1)
