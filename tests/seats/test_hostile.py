"""Hostile bots cannot hurt the arena: each misbehaves one way in a real
tournament; the test checks the exact faults recorded against it (and none
against anyone else), that every game finished with its points adding up, and
that no bot process (or anything it started) survives the run.

A case that needs settings of its own (a time, memory or CPU limit) or that
loads the machine (a 200 MB line, 8 GiB, a CPU burner, a fork bomb) plays
alone against three well-behaved bots. The others share tables, three or
four to a table (:data:`GROUPS`): each hostile entrant's faults are still
counted and checked on their own (a fault charged to the wrong seat fails),
so sharing a table loses no check and plays a third of the games."""

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
    strikes: int = 3  # consecutive timeouts before a seat is struck out (--strikes)


def hostile(name: str, *argv: str) -> str:
    return f"{name}={bot_path('hostile_' + name)} {' '.join(argv)}".strip()


CASES = {
    "never answers": Case(hostile("never_answers"), {"timeout": 3 * GAMES}, LATE, struck_out=True),
    "trickles bytes past the deadline": Case(
        hostile("trickle"), {"timeout": 3 * GAMES}, LATE, struck_out=True
    ),
    # Its output is never empty (no wait for it to be readable): the read
    # loop still lets the deadline in between chunks. One strike a game: each
    # timeout is half a second of the referee reading a flood at full speed
    # (the bot writing it on the other core), and one a game shows the
    # deadline holds; striking out after three is the other cases' check.
    "floods blank lines, never answers": Case(
        hostile("blank_flood"),
        {"timeout": GAMES},
        LATE,
        args=["--strikes", "1"],
        struck_out=True,
        strikes=1,
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
    "closes stdout, exits 0.2 s later, frozen": Case(
        hostile("slow_exit"), {"crashed": GAMES}, "exited (exit code 5)"
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


#: Cases that play alone against three well-behaved bots: their own settings,
#: or a load on the machine that should not share a table.
#: Bots that load the referee (a flood it must read at full speed) would make
#: the 500 ms clock of a neighbour at their table run out on a busy machine.
LOADS_THE_REFEREE = {"floods blank lines, never answers", "megabytes on stderr"}
ALONE = {name for name, case in CASES.items() if case.args} | ROOT_ONLY | LOADS_THE_REFEREE
#: Cases that time out three times a game (then are struck out): one a table,
#: so that no table waits out two of them in every game.
STRUCK_OUT = [name for name, case in CASES.items() if case.struck_out and name not in ALONE]
_REST = [name for name in CASES if name not in ALONE and name not in STRUCK_OUT]
#: The other cases share tables: one that times out three times a game and
#: the others dealt round, so two tables have a well-behaved bot (whose zero
#: faults are checked) and the last is four hostile bots (a run costs seconds
#: of start-up whatever it plays: one run fewer).
GROUPS: list[tuple[str, ...]] = [(name,) for name in CASES if name in ALONE] + [
    (slow, *_REST[i :: len(STRUCK_OUT)]) for i, slow in enumerate(STRUCK_OUT)
]


def test_every_case_is_played_once() -> None:
    played = [name for group in GROUPS for name in group]
    assert sorted(played) == sorted(CASES)
    assert all(1 <= len(group) <= 4 for group in GROUPS)
    assert all(len(set(group) & set(STRUCK_OUT)) <= 1 for group in GROUPS)


@pytest.mark.parametrize("group", GROUPS, ids=[" + ".join(g) for g in GROUPS])
def test_hostile_bot(group: tuple[str, ...], tmp_path: Path) -> None:
    if set(group) & ROOT_ONLY and os.geteuid() != 0:
        pytest.skip("the process limit binds only when bots run as their own user (arena as root)")
    cases = {f"h{i}": CASES[name] for i, name in enumerate(group)}  # entrant name: case
    out = tmp_path / "out"
    entrants = [f"{name}={case.bot.split('=', 1)[1]}" for name, case in cases.items()]
    good = [f"ok{i}" for i in range(4 - len(cases))]
    entrants += [bot("first_legal", name) for name in good]
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
        *(arg for case in cases.values() for arg in case.args),
    ]
    assert run_arena(args) == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert len(records) == GAMES
    rows = {r["name"]: r for r in results["standings"]}
    for name, case in cases.items():
        expected = {"timeout": 0, "malformed": 0, "illegal": 0, "crashed": 0, **case.faults}
        assert rows[name]["faults"] == expected, (group, name)
    for name in good:
        assert sum(rows[name]["faults"].values()) == 0
    for rec in records:
        for f in rec["faults"]:
            assert f["entrant"] == rec["seats"][f["seat"]] in cases, f
            assert cases[f["entrant"]].detail in f["detail"], (f, group)
        for name, case in cases.items():
            seat = rec["seats"].index(name)
            assert (seat in rec["struck_out"]) == case.struck_out, (group, name)
            if case.struck_out:
                own = [f for f in rec["faults"] if f["seat"] == seat]
                assert len(own) == case.strikes
                assert f"struck out after {case.strikes} consecutive timeouts" in own[-1]["detail"]
            if case.stderr:
                assert case.stderr in rec["stderr"][seat]
        for hand in rec["hands"]:
            assert len(hand["tricks"]) == 13
            assert sum(hand["raw_points"]) == 26
            assert sum(hand["points"]) in (26, 78)
        assert [sum(h["points"][s] for h in rec["hands"]) for s in range(4)] == rec["scores"]
        assert all(len(text) < 20_000 for text in rec["stderr"])
    assert run_processes(out) == []
