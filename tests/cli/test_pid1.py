"""The arena as PID 1 of a pid namespace, as a container's entrypoint runs
it (issue 24 item 15): orphans re-parented to PID 1 are reaped (12 zombies
after 12 games, each holding a bot uid out of the pool, before), the arena's
own processes stay its own, and a signal sent to PID 1 reaches the arena.
``unshare --pid --fork --mount-proc`` (root) runs the command as PID 1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, bot, bot_path

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)


def _start(out: Path, entrants: list[str], extra: list[str]) -> subprocess.Popen[str]:
    args = ["--hands", "1", "--seed", "3", "--no-sandbox", "--quiet", "--out", str(out)]
    return subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc",
         sys.executable, "-m", "arena", "run", *entrants, *args, *extra],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _children(parent: int) -> list[tuple[int, str]]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None and st[1] == parent:
            out.append((int(entry), st[0]))
    return out


def _pid1(proc: subprocess.Popen[str]) -> int:
    """The host pid of the namespace's PID 1 (unshare's child)."""
    for _ in range(2000):
        found = _children(proc.pid)
        if found:
            return found[0][0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError("unshare started no child")


def _games(out: Path) -> int:
    journal = out / "games.jsonl"
    return len(journal.read_text().splitlines()) if journal.exists() else 0


def test_pid_1_reaps_the_orphans_of_bots(open_tmp: Path) -> None:
    out = open_tmp / "o"
    # 4 entrants x 3 rounds: 12 games; each bot process leaves 5 orphans.
    entrants = [bot("orphans", n) for n in ("a", "b", "c")] + [f"s={bot_path('slow_legal')} 0.01"]
    proc = _start(out, entrants, ["--rounds", "3", "--jobs", "1", "--fresh-processes"])
    init = _pid1(proc)
    counts: list[int] = []
    while proc.poll() is None:
        if _games(out) >= 4:  # 4 games: 4 x 3 orphaning processes, 60 orphans made
            counts.append(sum(state == "Z" for _, state in _children(init)))
        time.sleep(0.02)
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert _games(out) == 12
    assert counts
    # Never reaped, the zombies only grow (60 and more after 4 games); reaped,
    # a burst (a game's 15 orphans) may wait for PID 1 to be scheduled, but the
    # count falls back: its least is well under one game's orphans.
    assert min(counts) < 15, counts
    results = json.loads((out / "results.json").read_text())
    assert sum(sum(r["faults"].values()) for r in results["standings"]) == 0


def test_a_signal_to_pid_1_reaches_the_arena(open_tmp: Path) -> None:
    """``docker stop`` sends SIGTERM to PID 1: the arena stops as it does on
    SIGTERM (partial standings, the resume line, exit 130)."""
    out = open_tmp / "o"
    entrants = [f"{n}={bot_path('slow_legal')} 0.05" for n in "abcd"]
    proc = _start(out, entrants, ["--rounds", "5", "--jobs", "1"])
    init = _pid1(proc)
    while _games(out) < 1:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    os.kill(init, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"continue with: hearts-arena run --resume --out {out}\n" in err
    assert json.loads((out / "results.json").read_text())["complete"] is False
