"""Faults in a real tournament: a bot past its deadline, one that crashes, one that
answers garbage (PROTOCOL.md, "Faults"), named on stderr, and no bot process left.
Every fault kind, the default moves and the scores are tested without
processes in test_faults_memory.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import bot, load_outputs, run_arena, run_processes, standings_by_name


def test_faults_are_counted_against_the_right_entrant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = run_arena(
        [
            "run",
            bot("sleeper"),
            bot("crasher"),
            bot("garbage"),
            bot("first_legal"),
            "--hands",
            "1",
            "--rounds",
            "1",
            "--time-limit",
            "0.3",
            "--jobs",
            "2",
            "--seed",
            "11",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    # Every entrant that faulted is named on stderr after the standings.
    assert "warning: crasher: 4 crashed (first: exited (exit code 3))" in err
    assert "warning: garbage: 4 malformed (first: line is not JSON" in err
    assert "warning: sleeper: 4 timeout (first: no reply within 300 ms)" in err
    assert "warning: first_legal" not in err
    results, records = load_outputs(out)
    assert len(records) == 4
    rows = standings_by_name(results)
    # One fault of each kind per game, for the entrant that misbehaved.
    assert rows["sleeper"]["faults"] == {"timeout": 4, "malformed": 0, "illegal": 0, "crashed": 0}
    assert rows["crasher"]["faults"] == {"timeout": 0, "malformed": 0, "illegal": 0, "crashed": 4}
    assert rows["garbage"]["faults"] == {"timeout": 0, "malformed": 4, "illegal": 0, "crashed": 0}
    assert rows["first_legal"]["faults"] == {
        "timeout": 0,
        "malformed": 0,
        "illegal": 0,
        "crashed": 0,
    }
    for rec in records:
        seat_of = {name: seat for seat, name in enumerate(rec["seats"])}
        by_reason = {f["reason"]: f for f in rec["faults"]}
        assert set(by_reason) == {"timeout", "crashed", "malformed"}
        timeout = by_reason["timeout"]
        assert timeout["seat"] == seat_of["sleeper"]
        assert timeout["detail"] == "no reply within 300 ms"
        assert timeout["request"] == "play"
        assert by_reason["crashed"]["seat"] == seat_of["crasher"]
        assert by_reason["crashed"]["detail"] == "exited (exit code 3)"
        assert "not JSON" in by_reason["malformed"]["detail"]
        assert by_reason["malformed"]["seat"] == seat_of["garbage"]
        assert "crasher: giving up" in rec["stderr"][seat_of["crasher"]]
        # The game went on: 13 tricks, the points add up to 26 (or 78 with a moon).
        (hand,) = rec["hands"]
        assert len(hand["tricks"]) == 13
        assert sum(hand["points"]) in (26, 78)
        assert hand["scores"] == rec["scores"]
    assert run_processes(out) == []
