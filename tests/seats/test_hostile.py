"""Hostile bots cannot hurt the arena: each misbehaves one way in a real
tournament against three well-behaved bots; the test checks the exact faults
recorded, that every game finished with its points adding up, and that no bot
process (or anything it started) survives the run."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import bot, bot_path, load_outputs, run_arena, run_processes

GAMES = 4  # one table, four rotations, one round
TIME_LIMIT = "0.5"
LATE = "no reply within 500 ms"


@dataclass
class Case:
    bot: str  # entrant text
    faults: dict[str, int]  # expected fault counts over the tournament
    detail: str = ""  # a fragment every fault's detail contains
    args: list[str] = field(default_factory=list)
    stderr: str = ""  # a fragment of the hostile seat's stderr in every game
    struck_out: bool = False


def hostile(name: str, *argv: str) -> str:
    return f"{name}={bot_path('hostile_' + name)} {' '.join(argv)}".strip()


CASES = {
    "never answers": Case(hostile("never_answers"), {"timeout": 3 * GAMES}, LATE, struck_out=True),
    "trickles bytes past the deadline": Case(
        hostile("trickle"), {"timeout": 3 * GAMES}, LATE, struck_out=True
    ),
    "answers late, then normally": Case(bot("sleeper", "late"), {"timeout": GAMES}, LATE),
    "exits mid-game": Case(bot("crasher", "exits"), {"crashed": GAMES}, "exited (exit code 3)"),
    "exits before the handshake": Case(
        hostile("exit_before_hello"),
        {"crashed": GAMES},
        "handshake: exited (exit code 7)",
        stderr="cannot start, missing a model file",
    ),
    # Faults of the protocol alone (lines that are not JSON, not objects, not
    # UTF-8, fail the schema or carry no id; floods; illegal moves; a banner
    # before hello) are tested without processes, under a mock clock, in
    # tests/game/test_faults_memory.py: the same protocol code as a pipe's.
    # The time limit covers the 200 MB the bot writes (its next request must not time out).
    "a 200 MB line": Case(
        hostile("huge_line"),
        {"malformed": GAMES},
        "line longer than 65536 bytes",
        args=["--time-limit", "3"],
    ),
    "megabytes on stderr": Case(hostile("stderr_flood"), {}, stderr="bytes not kept"),
    "stops reading its input": Case(
        hostile("stops_reading"), {"timeout": 3 * GAMES}, LATE, struck_out=True
    ),
    "closes stdout, stays alive": Case(
        hostile("closes_stdout"), {"crashed": GAMES}, "closed its output while still running"
    ),
    "ignores SIGTERM and bye": Case(hostile("ignores_term"), {}),
    "grandchild keeps the pipes": Case(hostile("grandchild", "pipes"), {}),
    "grandchild in a new session": Case(hostile("grandchild", "setsid"), {}),
    "allocates 8 GiB": Case(
        hostile("big_alloc"),
        {"crashed": GAMES},
        "out of memory: its limit is 512 MiB",
        # Under a memory control group the allocation succeeds and the pages
        # are written until the kernel kills it at the bound: that takes time
        # (a smaller bound, and a longer clock, keep it well inside one request).
        args=["--memory-limit", "512", "--time-limit", "10"],
    ),
    "burns CPU": Case(
        hostile("cpu_burner"),
        {"crashed": GAMES},
        "over its CPU limit of 1 s per game",
        args=["--cpu-limit", "1", "--hands", "3", "--time-limit", "1"],
    ),
}
ROOT_ONLY = {"starts thousands of processes"}
CASES["starts thousands of processes"] = Case(hostile("fork_bomb"), {}, stderr="fork failed after")


@pytest.mark.parametrize("case_name", list(CASES))
def test_hostile_bot(case_name: str, tmp_path: Path) -> None:
    if case_name in ROOT_ONLY and os.geteuid() != 0:
        pytest.skip("the process limit binds only when bots run as their own user (arena as root)")
    case = CASES[case_name]
    out = tmp_path / "out"
    entrants = [case.bot, bot("first_legal", "a"), bot("first_legal", "b"), bot("first_legal", "c")]
    args = [
        "run",
        *entrants,
        "--hands",
        "1",
        "--rounds",
        "1",
        "--time-limit",
        TIME_LIMIT,
        "--seed",
        "17",
        "--out",
        str(out),
        "--quiet",
        *case.args,
    ]
    assert run_arena(args) == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert len(records) == GAMES
    name = case.bot.split("=", 1)[0]
    expected = {"timeout": 0, "malformed": 0, "illegal": 0, "crashed": 0, **case.faults}
    rows = {r["name"]: r for r in results["standings"]}
    assert rows[name]["faults"] == expected
    for other in "abc":
        assert sum(rows[other]["faults"].values()) == 0
    for rec in records:
        seat = rec["seats"].index(name)
        assert all(f["seat"] == seat and f["entrant"] == name for f in rec["faults"])
        for f in rec["faults"]:
            assert case.detail in f["detail"]
        assert (seat in rec["struck_out"]) == case.struck_out
        if case.struck_out:
            assert "struck out after 3 consecutive timeouts" in rec["faults"][-1]["detail"]
        for hand in rec["hands"]:
            assert len(hand["tricks"]) == 13
            assert sum(hand["raw_points"]) == 26
            assert sum(hand["points"]) in (26, 78)
        assert [sum(h["points"][s] for h in rec["hands"]) for s in range(4)] == rec["scores"]
        if case.stderr:
            assert case.stderr in rec["stderr"][seat]
        assert all(len(text) < 20_000 for text in rec["stderr"])
    assert run_processes(out) == []
