"""Issue 14, items 11 and 12: a bot that never plays cannot look good
(``--disqualify-after``), and the report never contradicts itself (default
moves marked, a crash's cause shown, one minus sign, even standings rows,
game ids whole, terminal columns aligned by display width).

One 5-entrant tournament of 20 two-hand games is shared by the module: ``bad``
answers every play with a line that is not JSON, ``crash`` exits at hand 2
trick 1 after a traceback, and ``名字😀`` has a CJK and emoji name.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, bot, load_outputs, run_arena

from arena.report import outputs as report
from arena.report.terminal import display_width, standings_table

WIDE = "名字😀"
LIMIT = 10


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[dict]]:
    out = tmp_path_factory.mktemp("issue14") / "t"
    entrants = [
        bot("all_malformed", "bad"),
        bot("crash_hand2", "crash"),
        bot("first_legal", WIDE),
        str(ROOT / "sample_bots" / "low_bot.py"),
        str(ROOT / "sample_bots" / "duck_bot.py"),
    ]
    args = ["run", *entrants, "--hands", "2", "--rounds", "1", "--seed", "4", "--quiet"]
    assert run_arena([*args, "--disqualify-after", str(LIMIT), "--out", str(out)]) == 0
    results, records = load_outputs(out)
    return out, results, sorted(records, key=lambda r: r["game_index"])


# -- item 11 ------------------------------------------------------------------------


def test_disqualified_entrants_rank_last_and_are_marked_everywhere(run: Any) -> None:
    out, results, _records = run
    rows = results["standings"]
    assert results["settings"]["disqualify_after"] == LIMIT
    by_name = {r["name"]: r for r in rows}
    assert sum(by_name["bad"]["faults"].values()) == 16 * 26  # every play of 16 games
    assert by_name["bad"]["faults"]["malformed"] == 416
    assert by_name["crash"]["faults"] == {"timeout": 0, "malformed": 0, "illegal": 0, "crashed": 16}
    assert [r["disqualified"] for r in rows] == [False, False, False, True, True]
    assert {r["name"] for r in rows[3:]} == {"bad", "crash"}
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert by_name["bad"]["disqualified_reason"] == "416 faults (the limit is 10)"
    assert by_name["crash"]["disqualified_reason"] == "16 faults (the limit is 10)"
    # Disqualified rows keep the rating order among themselves.
    assert rows[3]["conservative"] >= rows[4]["conservative"]
    with (out / "standings.csv").open(encoding="utf-8") as f:
        csv_rows = list(csv.DictReader(f))
    assert [(r["name"], r["rank"], r["disqualified"]) for r in csv_rows] == [
        (r["name"], str(r["rank"]), "yes" if r["disqualified"] else "no") for r in rows
    ]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.count('class="disqualified"') == 2
    assert index.count('title="416 faults (the limit is 10)">disqualified</strong>') == 1
    page = next((out / "entrants").glob("0-bad.html")).read_text(encoding="utf-8")
    assert "disqualified: 416 faults (the limit is 10)" in page
    # The verdict is about the first two rows, never a disqualified one.
    verdict = results["confidence"]["verdict"]
    assert (verdict["leader"], verdict["runner_up"]) == (rows[0]["name"], rows[1]["name"])


def test_their_games_still_count_for_the_others(run: Any) -> None:
    _out, results, records = run
    settings = dict(results["settings"])
    names = [e["name"] for e in settings["entrants"]]
    del settings["disqualify_after"]
    plain = report.analyse(settings, names, records)
    assert not any(r["disqualified"] for r in plain.standings)
    ratings = {r["name"]: (r["mu"], r["sigma"], r["games"]) for r in plain.standings}
    for row in results["standings"]:
        assert (row["mu"], row["sigma"], row["games"]) == pytest.approx(ratings[row["name"]])
        assert row["games"] == 16


def test_off_by_default() -> None:
    from arena.cli.main import build_parser

    args = build_parser().parse_args(["run", "a.py", "b.py", "c.py", "d.py"])
    assert args.disqualify_after is None
    rows = [{"name": "x", "faults": {"malformed": 900}, "rank": 1}]
    from arena.results.standings import disqualify

    assert disqualify(rows, None)[0]["disqualified"] is False


# -- item 12 ------------------------------------------------------------------------


def _game_html(out: Path, rec: dict) -> str:
    return (out / "games" / report.game_page(rec)).read_text(encoding="utf-8")


def _auto_cells(html: str) -> int:
    return len(re.findall(r'<td class="[a-z ]*auto">', html))


def test_default_moves_are_marked_in_the_trick_tables(run: Any) -> None:
    out, _results, records = run
    only_bad = next(r for r in records if "bad" in r["seats"] and "crash" not in r["seats"])
    html = _game_html(out, only_bad)
    assert _auto_cells(html) == 26  # both hands, every trick: the referee played for bad
    assert "marks a default move" in html
    only_crash = next(r for r in records if "crash" in r["seats"] and "bad" not in r["seats"])
    html = _game_html(out, only_crash)
    assert _auto_cells(html) == 13  # hand 2, from the crash at trick 1 on
    hand1 = html.split('id="tricks-1"')[1].split("</table>")[0]
    assert _auto_cells(hand1) == 0
    clean = [r for r in records if "bad" not in r["seats"] and "crash" not in r["seats"]]
    assert not clean  # 5 entrants, tables of 4: every game has one of them
    plays, passes = report.default_moves(only_crash)
    seat = only_crash["seats"].index("crash")
    assert plays[2] == frozenset((t, seat) for t in range(1, 14))
    assert (2, seat) not in passes  # the crash came after hand 2's pass


def test_a_crash_shows_the_start_and_the_end_of_its_stderr(run: Any) -> None:
    """Issue 24 item 3: the start of the error (Python's ``Traceback``) and its end."""
    out, _results, records = run
    start = "stderr at the crash:<br>Traceback (most recent call last):<br>"
    end = "<br>ZeroDivisionError: division by zero</span>"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert start in index and end in index
    game = next(r for r in records if "crash" in r["seats"])
    assert start in _game_html(out, game) and end in _game_html(out, game)
    page = next((out / "entrants").glob("1-crash.html")).read_text(encoding="utf-8")
    assert page.count(start) == 16 and page.count(end) == 16


def test_one_minus_sign_and_whole_game_ids(run: Any) -> None:
    out, _results, _records = run
    index = (out / "index.html").read_text(encoding="utf-8")
    standings = index.split('id="standings"')[1].split("</table>")[0]
    assert "−" in standings  # some duplicate score or interval is negative
    assert not re.search(r"[\[ ,>]-\d", standings)  # no ASCII minus before a number
    assert not re.search(r"(?<![a-z])-\d", index.split('id="verdict"')[1].split("</p>")[0])
    assert report.number_text(-1.5) == "−1.50" and report.signed_text(-1.5) == "−1.50"
    page = next((out / "entrants").glob("2-*.html")).read_text(encoding="utf-8")
    assert page.count('<a class="gid" href=') >= 16
    css = (out / "report.css").read_text(encoding="utf-8")
    assert "a.gid { white-space: nowrap; }" in css


def test_terminal_table_aligns_wide_names(run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    out, results, _records = run
    lines = standings_table(results["standings"])
    assert any(WIDE in line for line in lines)
    # Every line's columns end at the same terminal column.
    assert len({display_width(line.split("  faults")[0]) for line in lines[:1]}) == 1
    cut = [display_width(line[: line.rindex("  ")]) for line in lines]
    assert len(set(cut)) == 1, lines
    assert display_width(WIDE) == 6 and len(WIDE) == 3
    assert run_arena(["report", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[: len(lines)] == lines
    assert "(disqualified)" in printed[4] and "(disqualified)" in printed[5]


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed")
def test_standings_rows_are_even_at_1280_px(run: Any) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    out, _results, _records = run
    flags = ["--headless", "--disable-gpu"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        try:
            pg = b.new_page(viewport={"width": 1280, "height": 900})
            pg.set_default_timeout(0)  # no wall-clock bound: pytest-timeout bounds the test
            pg.goto((out / "index.html").as_uri())
            heights = [
                round(r.bounding_box()["height"]) for r in pg.locator("#standings tbody tr").all()
            ]
            table = pg.locator("#standings").bounding_box()
            wrap = pg.locator("#standings").locator("xpath=..").bounding_box()
        finally:
            b.close()
    assert len(heights) == 5
    assert max(heights) - min(heights) <= 2, heights  # one shape for every row
    assert table["width"] <= wrap["width"] + 1  # no horizontal scrolling at 1280 px


def test_terminal_table_escapes_hostile_names() -> None:
    row = {
        "rank": 1, "conservative": 1.0, "mu": 2.0, "sigma": 0.5, "games": 3, "wins": 1,
        "points_per_hand": None, "faults": {"crashed": 0},
    }  # fmt: skip
    lines = standings_table([{**row, "name": "red\x1b[31mX\u202e"}, {**row, "name": "ok"}])
    assert "\x1b" not in "".join(lines) and "\u202e" not in "".join(lines)
    assert "red\\x1b[31mX\\u202e" in lines[1]
    assert len({display_width(line) for line in lines[1:]}) == 1


def test_a_number_that_rounds_to_zero_has_no_sign() -> None:
    """Issue 14 item 12: an interval end of -0.0 (a negated 0.0) or -0.001
    was written "−0.00" in the head-to-head titles."""
    assert [report.number_text(x) for x in (-0.0, -0.001, 0.004, -0.006)] == [
        "0.00", "0.00", "0.00", "−0.01",
    ]  # fmt: skip
    assert [report.signed_text(x) for x in (-0.0, -0.004, 0.3, -0.3)] == [
        "+0.00", "+0.00", "+0.30", "−0.30",
    ]  # fmt: skip
    assert report.number_text(-0.04, 1) == "0.0" and report.number_text(None) == "–"
