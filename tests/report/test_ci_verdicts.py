"""Gauntlets (``run --format gauntlet --candidate``), ``--fail-if`` conditions
(exit code 5) and ``run --junit``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, bot, load_outputs, run_arena

from arena.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from arena.report.junit import Case
from arena.report.verdict import (
    ConditionError,
    check_names,
    evaluate,
    failure_lines,
    judge,
    parse_condition,
)
from arena.tournament.runner import (
    TournamentSettings,
    schedule,
    schedule_gauntlet,
    schedule_round_robin,
    tables_of,
)

NAMES = ["e", "a", "d", "c", "b", "f"]


def test_gauntlet_plays_only_the_candidates_tables_with_round_robin_deals() -> None:
    settings = TournamentSettings(seed=4, rounds=2, format="gauntlet", candidate="c")
    games = schedule_gauntlet(NAMES, settings)
    rr = schedule_round_robin(NAMES, TournamentSettings(seed=4, rounds=2))
    tables = tables_of(NAMES)
    with_c = [t for t, members in enumerate(tables) if "c" in members]
    assert len(games) == len(with_c) * 4 * 2  # C(5,3) tables x 4 rotations x 2 rounds
    assert all("c" in g.seats for g in games)
    assert sorted({g.table for g in games}) == with_c
    assert [g.game_index for g in games] == list(range(len(games)))
    # Same tables, seatings, ids and deals as the round-robin's games.
    rr_by_id = {g.game_id: g for g in rr}
    for g in games:
        twin = rr_by_id[g.game_id]
        assert (g.seats, g.deal_key, g.round, g.rotation) == (
            twin.seats, twin.deal_key, twin.round, twin.rotation,
        )  # fmt: skip
    # Each round, the candidate holds each seat of each of its tables once.
    for rnd in (1, 2):
        for t in with_c:
            seats = sorted(g.seats.index("c") for g in games if g.round == rnd and g.table == t)
            assert seats == [0, 1, 2, 3]
    assert schedule(NAMES, settings) == games
    assert len({g.bot_seeds for g in games}) == len(games)


def test_gauntlet_of_four_is_the_round_robin_and_full_seating_works() -> None:
    four = ["a", "b", "c", "d"]
    g = schedule_gauntlet(four, TournamentSettings(seed=1, format="gauntlet", candidate="a"))
    assert g == schedule_round_robin(four, TournamentSettings(seed=1))
    full = TournamentSettings(seed=1, rounds=1, seating="full", format="gauntlet", candidate="a")
    assert len(schedule(NAMES, full)) == 10 * 24


def test_gauntlet_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="not an entrant"):
        schedule_gauntlet(NAMES, TournamentSettings(seed=1, format="gauntlet", candidate="z"))
    with pytest.raises(ValueError, match="only a gauntlet"):
        TournamentSettings(seed=1, format="gauntlet")
    with pytest.raises(ValueError, match="only a gauntlet"):
        TournamentSettings(seed=1, candidate="a")
    with pytest.raises(ValueError, match="format must be"):
        TournamentSettings(seed=1, format="swiss")
    record = TournamentSettings(seed=1, format="gauntlet", candidate="a").to_json()
    assert record["format"] == "gauntlet" and record["candidate"] == "a"
    assert TournamentSettings(seed=1).to_json()["candidate"] is None


@pytest.mark.parametrize(
    ("text", "metric", "op", "value", "other"),
    [
        ("faults>0", "faults", ">", 0.0, None),
        (" points_per_hand > low ", "points_per_hand", ">", None, "low"),
        ("mean_rank>=2.5", "mean_rank", ">=", 2.5, None),
        ("faults_timeout!=0", "faults_timeout", "!=", 0.0, None),
        ("rank<=-1e1", "rank", "<=", -10.0, None),
        ("wins==my bot", "wins", "==", None, "my bot"),
    ],
)
def test_conditions_parse(text: str, metric: str, op: str, value: float, other: str) -> None:
    c = parse_condition(text)
    assert (c.metric, c.op, c.value, c.other) == (metric, op, value, other)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("faults", "expected METRIC OP VALUE"),
        ("speed>1", "unknown metric 'speed'"),
        ("faults=>1", "expected METRIC OP VALUE"),
        ("faults>", "expected METRIC OP VALUE"),
    ],
)
def test_bad_conditions_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(ConditionError, match=fragment):
        parse_condition(text)


def test_conditions_evaluate_against_standings_rows() -> None:
    rows = [
        {"name": "me", "faults": {"timeout": 2, "illegal": 1}, "points_per_hand": 7.25,
         "mean_rank": 2.0, "wins": 1, "games": 4, "rank": 2},
        {"name": "low", "faults": {"timeout": 0}, "points_per_hand": 5.1, "mean_rank": 3.0,
         "wins": 0, "games": 4, "rank": 1},
        {"name": "new", "faults": {}, "points_per_hand": None, "mean_rank": None, "wins": 0,
         "games": 0, "rank": 3},
    ]  # fmt: skip
    conds = [parse_condition(t) for t in ("faults>0", "points_per_hand>low", "mean_rank>2.5")]
    check_names(conds, ["me", "low", "new"])
    with pytest.raises(ConditionError, match="'nobody' is neither a number nor an entrant"):
        check_names([parse_condition("wins<nobody")], ["me"])
    failed = evaluate(conds, rows, ["me"])
    assert failure_lines(failed) == [
        "fail-if faults>0: me 3 > 0",
        "fail-if points_per_hand>low: me 7.25 > low 5.1",
    ]
    everyone = failure_lines(evaluate(conds, rows, ["me", "low", "new"]))
    assert (
        "fail-if mean_rank>2.5: low 3 > 2.5; new unknown > 2.5 (unknown counts as failed)"
        in everyone
    )
    assert evaluate([parse_condition("win_rate<0.2")], rows, ["me", "low"])[0][1] == [
        ("low", "low 0 < 0.2")
    ]


FIVE = [
    bot("first_legal", "a"),
    bot("random_legal", "b"),
    bot("first_legal", "c"),
    bot("illegal", "d"),
    bot("random_legal", "e"),
]
BASE = ["--hands", "1", "--rounds", "1", "--seed", "6", "--quiet", "--jobs", "2"]


def test_gauntlet_run_fails_on_a_condition_with_one_line_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, junit = tmp_path / "o", tmp_path / "junit.xml"
    args = ["run", *FIVE, *BASE, "--format", "gauntlet", "--candidate", "d", "--out", str(out)]
    code = run_arena([*args, "--fail-if", "faults>0", "--fail-if", "rank>5", "--junit", str(junit)])
    err = capsys.readouterr().err
    assert code == EXIT_FAILED
    lines = [line for line in err.splitlines() if line.startswith("fail-if")]
    assert len(lines) == 1
    assert lines[0].startswith("fail-if faults>0: d ") and lines[0].endswith(" > 0")
    results, records = load_outputs(out)
    assert len(records) == 4 * 4 and all("d" in r["seats"] for r in records)
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["format"] == "gauntlet" and settings["candidate"] == "d"
    assert results["settings"]["candidate"] == "d"
    # The report names the gauntlet and marks the candidate's row, and only it.
    html = (out / "index.html").read_text()
    assert "gauntlet of d," in html
    assert html.count('class="candidate"') == 1
    row = html[html.index('class="candidate"') :].split("</tr>")[0]
    assert '">d</a> <strong class="tag">candidate</strong>' in row
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert sorted(cases) == ["d"]  # a gauntlet's file lists the candidate only
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    failure = cases["d"].find("failure")
    assert failure is not None and failure.get("message") == lines[0]
    assert "illegal" in failure.text


def test_fail_if_judges_every_entrant_in_a_round_robin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    four = [bot("first_legal", n) for n in "abcd"]
    out = tmp_path / "o"
    code = run_arena(["run", *four, *BASE, "--out", str(out), "--fail-if", "points_per_hand>=0"])
    assert code == EXIT_FAILED
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("fail-if")]
    for name in "abcd":
        assert f"{name} " in line
    # Conditions that hold for nobody: exit 0, and every JUnit case passes.
    # (The same tournament judged again: --resume plays none of its games.)
    junit = tmp_path / "j.xml"
    args = ["--resume", "--fail-if", "rank>4", "--fail-if", "faults>0", "--junit", str(junit)]
    assert run_arena(["run", *four, *BASE, "--out", str(out), *args]) == EXIT_OK
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "0"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--fail-if", "speed>1"], "argument --fail-if: unknown metric 'speed'"),
        (["--fail-if", "faults>zed"], "'zed' is neither a number nor an entrant"),
        (["--format", "gauntlet"], "--format gauntlet needs --candidate NAME"),
        (["--candidate", "a"], "--candidate is for --format gauntlet"),
        (["--format", "gauntlet", "--candidate", "z"], "--candidate 'z' is not an entrant"),
    ],
)
def test_ci_flag_errors_exit_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    out = tmp_path / "o"
    assert run_arena(["run", *FIVE, *BASE, "--out", str(out), *extra]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert fragment in err
    assert not out.exists()


def test_gauntlet_dry_run_lists_only_the_candidates_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", *FIVE, "--format", "gauntlet", "--candidate", "a", "--dry-run", "--seed", "1"]
    assert run_arena([*args, "--out", str(tmp_path / "o")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "5 entrants, 4 tables" in out
    assert "b, c, d, e" not in out
    assert "32 games" in out


def test_gauntlet_dry_run_numbers_tables_as_the_game_ids_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14 item 3: a gauntlet's tables keep their round-robin numbers
    (game ids r1-t0, r1-t1, r1-t3, r1-t4 for ``c``); the dry run printed 0..3."""
    args = ["run", *FIVE, "--format", "gauntlet", "--candidate", "c", "--dry-run", "--seed", "1"]
    assert run_arena([*args, "--rounds", "1", "--out", str(tmp_path / "o")]) == EXIT_OK
    lines = [line for line in capsys.readouterr().out.splitlines() if "table " in line]
    assert lines == [
        "  table 0: a, b, c, d",
        "  table 1: a, b, c, e",
        "  table 3: a, c, d, e",
        "  table 4: b, c, d, e",
    ]
    games = schedule_gauntlet(
        list("abcde"), TournamentSettings(seed=1, format="gauntlet", candidate="c")
    )
    assert sorted({g.table for g in games}) == [0, 1, 3, 4]


def junit_suite(path: Path) -> tuple[ET.Element, dict[str, ET.Element]]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return suite, {c.get("name", ""): c for c in suite.findall("testcase")}


def test_a_clean_candidate_passes_whatever_its_opponents_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, item 5: the opponent ``d`` faults, the candidate ``a`` does
    not: exit 0, and the JUnit file (the candidate's case only) passes. Four
    entrants: the candidate's one table (4 games, where five entrants play
    16; which tables a gauntlet plays is the test above's)."""
    out, junit = tmp_path / "o", tmp_path / "g.xml"
    four = [*FIVE[:3], FIVE[3]]  # a, b, c and the illegal d
    args = ["run", *four, *BASE, "--format", "gauntlet", "--candidate", "a", "--out", str(out)]
    assert run_arena([*args, "--fail-if", "faults>0", "--junit", str(junit)]) == EXIT_OK
    assert "fail-if" not in capsys.readouterr().err
    results, _ = load_outputs(out)
    d = next(r for r in results["standings"] if r["name"] == "d")
    assert d["faults"]["illegal"] > 0  # the opponent did fault
    suite, cases = junit_suite(junit)
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")
    assert list(cases) == ["a"] and cases["a"].find("failure") is None
    # Without --fail-if, --junit judges faults>0 for the candidate alone: still a pass.
    # (The same tournament judged again: --resume plays none of its games.)
    args = [*args, "--resume", "--junit", str(junit)]
    assert run_arena(args) == EXIT_OK
    assert junit_suite(junit)[0].get("failures") == "0"


def test_junit_without_fail_if_fails_on_faults_and_exits_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, junit = tmp_path / "o", tmp_path / "j.xml"
    four = [*FIVE[:3], FIVE[3]]  # a, b, c and the illegal d
    assert run_arena(["run", *four, *BASE, "--out", str(out), "--junit", str(junit)]) == EXIT_FAILED
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("fail-if")]
    assert line.startswith("fail-if faults>0 (--junit without --fail-if): d ")
    suite, cases = junit_suite(junit)
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    assert [n for n, c in cases.items() if c.find("failure") is not None] == ["d"]
    # A --fail-if that does not hold passes every case, faults or not (they
    # are in the case's output); the exit code agrees. (The same tournament
    # judged again: --resume plays none of its games.)
    args = ["--resume", "--fail-if", "games<1", "--junit", str(junit)]
    assert run_arena(["run", *four, *BASE, "--out", str(out), *args]) == EXIT_OK
    suite, cases = junit_suite(junit)
    assert (suite.get("tests"), suite.get("failures")) == ("4", "0")
    out_text = cases["d"].findtext("system-out") or ""
    assert " illegal)" in out_text and "faults (" in out_text


def test_one_verdict_decides_cases_lines_and_exit() -> None:
    rows = [
        {"name": "me", "faults": {"crashed": 2}, "points_per_hand": 9.0, "mean_rank": 3.0,
         "wins": 0, "games": 4, "rank": 4},
        {"name": "low", "faults": {}, "points_per_hand": 5.0, "mean_rank": 1.5, "wins": 2,
         "games": 4, "rank": 1},
    ]  # fmt: skip
    v = judge([parse_condition("points_per_hand>low")], rows, [], candidate="me")
    assert v.subjects == ("me",) and not v.passed
    assert v.lines() == ["fail-if points_per_hand>low: me 9 > low 5"]
    assert v.cases == (
        Case("me", "hearts-arena.run", 0.0, "fail-if points_per_hand>low: me 9 > low 5",
             "fail-if points_per_hand>low: me 9 > low 5\nrank 4, 4 games, 0 wins, points per "
             "hand 9, mean rank 3; 2 faults (2 crashed)"),
    )  # fmt: skip
    assert judge([], rows, [], candidate="low", junit=True).passed
    assert judge([], rows, []).cases[0].failure is None  # no --junit, no condition: no verdict
    implicit = judge([], rows, [], junit=True)
    assert [c.failure for c in implicit.cases] == [
        "fail-if faults>0 (--junit without --fail-if): me 2 > 0",
        None,
    ]


def _arena_into_closed_pipes(
    folder: Path, *extra: str, buffered: bool, close_stderr: bool = False
) -> tuple[int, str]:
    """Run the arena with stdout (and maybe stderr) a pipe nobody reads, as
    ``hearts-arena ... | true`` does; returns the exit code and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    err_file = folder / "stderr.txt"
    with err_file.open("w") as err:
        proc = subprocess.run(
            [sys.executable, "-m", "arena", *extra],
            stdout=write,
            stderr=write if close_stderr else err,
            cwd=folder,
            env=env,
            timeout=300,
        )
    os.close(write)
    return proc.returncode, err_file.read_text()


@pytest.mark.parametrize(
    ("buffered", "close_stderr"), [(False, False), (True, False), (True, True)]
)
def test_a_closed_pipe_changes_neither_the_verdict_nor_the_files(
    open_tmp: Path, buffered: bool, close_stderr: bool
) -> None:
    """Issue 14, item 4: ``run bad_bot.py ... --junit j.xml --fail-if faults>0
    | true`` exited 1 without j.xml (120 and "Exception ignored" when buffered)."""
    bots = [bot("illegal", "bad"), "sample:low", "sample:duck", "sample:random"]
    # Unsealed: the pipes are the arena's own; the seal's start-up probe would
    # only add seconds to each of the three processes.
    args = [*bots, "--rounds", "1", "--hands", "1", "--seed", "2", "--out", "o", "--no-sandbox"]
    code, err = _arena_into_closed_pipes(
        open_tmp, "run", *args, "--junit", "j.xml", "--fail-if", "faults>0",
        buffered=buffered, close_stderr=close_stderr,
    )  # fmt: skip
    assert code == EXIT_FAILED
    suite, cases = junit_suite(open_tmp / "j.xml")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    assert cases["bad"].find("failure") is not None
    assert (open_tmp / "o" / "index.html").exists() and (open_tmp / "o" / "results.json").exists()
    assert "Exception ignored" not in err and "Traceback" not in err
    if not close_stderr:
        assert "fail-if faults>0: bad " in err


def test_check_into_a_closed_pipe_keeps_its_verdict_and_junit(open_tmp: Path) -> None:
    args = ["check", bot("illegal", "bad"), "--only", "handshake", "--only", "pass-left"]
    code, err = _arena_into_closed_pipes(open_tmp, *args, "--junit", "c.xml", buffered=True)
    assert code == EXIT_FAILED
    suite, cases = junit_suite(open_tmp / "c.xml")
    assert suite.get("failures") != "0" and cases["handshake"].find("failure") is None
    assert "Exception ignored" not in err and "Traceback" not in err
