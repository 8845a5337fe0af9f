"""The report of a real 5-entrant, 1-round tournament: every page, and the
numbers on the pages checked against ``results.json`` and ``games.jsonl``.

One run (20 games of one hand, instant bots: five entrants, one more than a
table seats, so that no table holds everyone) is shared by the module.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, load_outputs, run_arena

from arena.report.outputs import CSV_COLUMNS

ENTRANTS = {
    "first": "first_legal",
    "alpha": "random_legal",
    "bravo": "random_legal",
    "charlie": "random_legal",
    "delta": "random_legal",
}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
SUITS = {"C": "♣", "D": "♦", "S": "♠", "H": "♥"}


class Doc(HTMLParser):
    """A small DOM summary: closed elements with their text, table rows by
    table id, links, and ids."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[dict[str, Any]] = []
        self.elements: list[dict[str, Any]] = []
        self.tables: dict[str, list[list[dict[str, Any]]]] = {}
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key])
        if "id" in a:
            self.ids.add(a["id"])
        if tag in VOID:
            self.elements.append({"tag": tag, "attrs": a, "text": ""})
            return
        self.stack.append({"tag": tag, "attrs": a, "parts": [], "cells": [], "rows": []})

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            frame = self.stack.pop()
            text = "".join(frame["parts"])
            if self.stack:
                self.stack[-1]["parts"].append(text)
            el = {"tag": frame["tag"], "attrs": frame["attrs"], "text": text}
            self.elements.append(el)
            if frame["tag"] in ("td", "th"):
                self._nearest("tr")["cells"].append(el)
            elif frame["tag"] == "tr":
                self._nearest("table")["rows"].append(frame["cells"])
            elif frame["tag"] == "table" and frame["attrs"].get("id"):
                self.tables[frame["attrs"]["id"]] = frame["rows"]
            if frame["tag"] == tag:
                break

    def _nearest(self, tag: str) -> dict[str, Any]:
        return next(f for f in reversed(self.stack) if f["tag"] == tag)

    def handle_data(self, data: str) -> None:
        if self.stack:
            self.stack[-1]["parts"].append(data)

    def data_cols(self) -> dict[str, str]:
        """Text of each element with a ``data-col`` (the first of each name)."""
        out: dict[str, str] = {}
        for el in self.elements:
            col = el["attrs"].get("data-col")
            if col and col not in out:
                out[col] = el["text"].strip()
        return out

    def rows(self, table: str) -> list[list[str]]:
        """Body rows of a table (header rows of ``th`` only are left out)."""
        return [
            [c["text"].strip() for c in row]
            for row in self.tables[table]
            if any(c["tag"] == "td" for c in row)
        ]


def parse(path: Path) -> Doc:
    return Doc(path.read_text(encoding="utf-8"))


def fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}".replace("-", "−")  # one minus sign


def signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}".replace("-", "−")


def card_text(card: str) -> str:
    return ("10" if card[0] == "T" else card[0]) + SUITS[card[1]]


@pytest.fixture(scope="module")
def five(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("five") / "report"
    entrants = [bot(file, name) for name, file in ENTRANTS.items()]
    code = run_arena(
        ["run", *entrants, "--hands", "1", "--rounds", "1", "--seed", "11",
         "--out", str(out), "--quiet", "--jobs", "2"]
    )  # fmt: skip
    assert code == 0
    results, records = load_outputs(out)
    records.sort(key=lambda r: r["game_index"])
    return out, results, records


#: A moment link of the replay player (arena/report/templates/replay.js).
MOMENT = re.compile(r"h=\d+&t=\d+&c=\d+&seat=(\d|open)")


def test_every_page_is_written_and_every_link_resolves(five: Any) -> None:
    out, results, records = five
    assert results["games_played"] == len(records) == 5 * 4
    pages = [out / "index.html", *sorted((out / "entrants").glob("*.html"))]
    pages += sorted((out / "games").glob("*.html"))
    assert len(pages) == 1 + 5 + 20
    for page in pages:
        doc = parse(page)
        for link in doc.links:
            assert "://" not in link, f"{page.name} links outside the report: {link}"
            target, _, fragment = link.partition("#")
            if target:
                assert (page.parent / target).resolve().is_file(), f"{page.name}: broken {link}"
            if fragment and not target and not MOMENT.fullmatch(fragment):
                # (a moment of the replay player, #h=..&t=..&c=..&seat=.., is read by its script)
                assert fragment in doc.ids, f"{page.name}: no #{fragment}"
    index = parse(out / "index.html")
    game_links = [x for x in index.links if x.startswith("games/")]
    assert len(game_links) == len(set(game_links)) == 20  # a link per game


def test_index_standings_match_results(five: Any) -> None:
    out, results, _ = five
    index = parse(out / "index.html")
    table = [row for row in index.tables["standings"] if row[0]["tag"] == "td"]
    assert len(table) == 5
    for row, expected in zip(table, results["standings"], strict=True):
        cells = {c["attrs"].get("data-col", ""): c["text"].strip() for c in row}
        assert row[0]["text"] == str(expected["rank"])
        assert row[1]["text"].strip().startswith(expected["name"])
        for col in ("conservative", "mu", "sigma", "mean_rank"):
            assert cells[col] == fmt(expected[col])
        for col in ("games", "wins", "moons", "queens"):
            assert cells[col] == str(expected[col])
        lo, hi = expected["points_per_hand_low"], expected["points_per_hand_high"]
        assert (
            cells["points_per_hand"] == f"{fmt(expected['points_per_hand'])} [{fmt(lo)}, {fmt(hi)}]"
        )
        lo, hi = expected["duplicate_low"], expected["duplicate_high"]
        assert cells["duplicate"] == f"{signed(expected['duplicate'])} [{fmt(lo)}, {fmt(hi)}]"
        assert lo <= expected["duplicate"] <= hi
        assert cells["faults"] == "0"
    verdict = results["confidence"]["verdict"]
    assert index.data_cols() and verdict["text"] in [
        e["text"] for e in index.elements if e["attrs"].get("id") == "verdict"
    ]
    settings = dict(
        zip(
            *[[e["text"] for e in index.elements if e["tag"] == t] for t in ("dt", "dd")],
            strict=False,
        )
    )
    assert (
        settings["seed"] == "11"
        and settings["seating"] == "rotations"
        and settings["rounds"] == "1"
    )


def test_duplicate_scores_balance_and_cover_every_hand(five: Any) -> None:
    _, results, _ = five
    rows = results["standings"]
    # Every board is complete (one hand per game, all rotations played), and
    # a complete board's duplicate scores add to zero.
    assert {r["duplicate_hands"] for r in rows} == {16}  # 4 tables x 4 seats
    assert sum(r["duplicate"] * r["duplicate_hands"] for r in rows) == pytest.approx(0, abs=1e-6)
    # One deal per table and round: 5 tables.
    assert results["confidence"]["bootstrap"]["deals"] == 5


def test_index_head_to_head_matches_results(five: Any) -> None:
    out, results, records = five
    index = parse(out / "index.html")
    header = [c["text"].strip() for c in index.tables["h2h"][0]][1:]
    order = [r["name"] for r in results["standings"]]
    assert header == order
    for row in index.tables["h2h"][1:]:
        me = row[0]["text"].strip()
        for opponent, cell in zip(order, row[1:], strict=True):
            if opponent == me:
                continue
            h = results["head_to_head"][me][opponent]
            assert cell["text"].split()[0] == f"{h['ahead']}–{h['behind']}"
    # And the results agree with the records: "first" vs "alpha" by final ranks.
    together = [r for r in records if "first" in r["seats"] and "alpha" in r["seats"]]
    ahead = sum(
        r["ranks"][r["seats"].index("first")] < r["ranks"][r["seats"].index("alpha")]
        for r in together
    )
    assert results["head_to_head"]["first"]["alpha"]["ahead"] == ahead
    assert (
        results["head_to_head"]["first"]["alpha"]["games"] == len(together) == 3 * 4
    )  # C(3, 2) tables hold both


def test_entrant_pages_match_results(five: Any) -> None:
    out, results, records = five
    index = parse(out / "index.html")
    for row in results["standings"]:
        link = next(
            e["attrs"]["href"]
            for e in index.elements
            if e["tag"] == "a"
            and e["text"] == row["name"]
            and e["attrs"]["href"].startswith("entrants/")
        )
        page = parse(out / link)
        cols = page.data_cols()
        assert cols["conservative"] == fmt(row["conservative"])
        assert cols["mu"] == fmt(row["mu"]) and cols["sigma"] == fmt(row["sigma"])
        assert cols["games"] == str(row["games"]) and cols["wins"] == str(row["wins"])
        assert cols["hands"] == str(row["hands"])
        assert cols["duplicate"] == signed(row["duplicate"])
        for col in ("moons", "moons_suffered", "queens"):
            assert cols[col] == str(row[col])
        games = page.rows("games")
        mine = [r for r in records if row["name"] in r["seats"]]
        assert len(games) == row["games"] == len(mine)
        for shown, rec in zip(games, mine, strict=True):
            seat = rec["seats"].index(row["name"])
            assert shown[0] == rec["game_id"]
            assert shown[7] == str(rec["scores"][seat]) and shown[9] == str(rec["ranks"][seat])
        # The points distribution has one bar per points value 0..26, adding to the hands played.
        bars = [
            e["text"] for e in page.elements if e["tag"] == "title" and e["text"].count(":") == 1
        ]
        counts = {
            int(t.split(":")[0]): int(t.split(":")[1]) for t in bars if t.split(":")[0].isdigit()
        }
        assert sorted(counts) == list(range(27))
        assert sum(counts.values()) == row["hands"]
        expected = sum(
            1 for r in mine for h in r["hands"] if h["points"][r["seats"].index(row["name"])] == 0
        )
        assert counts[0] == expected


def test_replays_match_the_records(five: Any) -> None:
    out, _, records = five
    for rec in records[::7]:
        page = parse(out / "games" / f"{rec['game_index']}-{rec['game_id']}.html")
        seats = page.rows("seats")
        assert [r[1] for r in seats] == rec["seats"]
        assert [int(r[3]) for r in seats] == rec["scores"]
        assert [int(r[4]) for r in seats] == rec["ranks"]
        hand = rec["hands"][0]
        trick_rows = page.rows("tricks-1")
        assert len(trick_rows) == 13
        running = [0, 0, 0, 0]
        for n, (shown, trick) in enumerate(zip(trick_rows, hand["tricks"], strict=True), 1):
            assert shown[0] == str(n) and shown[1] == str(trick["leader"])
            for k, card in enumerate(trick["cards"]):
                assert shown[2 + (trick["leader"] + k) % 4] == card_text(card)
            assert shown[6] == str(trick["winner"]) and shown[7] == str(trick["points"])
            running[trick["winner"]] += trick["points"]
            assert shown[8] == " · ".join(map(str, running))
        assert running == hand["raw_points"]
        # The deal: every seat's thirteen dealt cards, in the open view.
        # The deal (hand 1 passes left): per seat, the cards dealt, passed,
        # received and held after the pass, each beside a masked text for the
        # seat views (hidden by CSS in the open view).
        spans = [
            e for e in page.elements if e["tag"] == "span" and e["attrs"].get("class") == "cards"
        ]
        masked = [
            e for e in page.elements if e["tag"] == "span" and e["attrs"].get("class") == "masked"
        ]
        assert len(spans) == len(masked) == 16
        for seat in range(4):
            assert spans[4 * seat]["text"].split() == [card_text(c) for c in hand["dealt"][seat]]
            passed = spans[4 * seat + 1]["text"].split()
            assert passed == [
                *(card_text(c) for c in hand["passes"][seat]),
                "→",
                "seat",
                str((seat + 1) % 4),
            ]
            assert masked[4 * seat]["text"] == "13 cards, not seen"


def test_standings_csv_matches_results(five: Any) -> None:
    out, results, _ = five
    with (out / "standings.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_COLUMNS
    for row, expected in zip(rows, results["standings"], strict=True):
        assert row["name"] == expected["name"] and int(row["rank"]) == expected["rank"]
        for col in ("mu", "sigma", "conservative", "points_per_hand", "duplicate", "duplicate_low"):
            assert float(row[col]) == pytest.approx(expected[col], rel=1e-5)
        for col in ("games", "wins", "hands", "points", "moons", "queens", "duplicate_hands"):
            assert int(row[col]) == expected[col]
        assert int(row["faults_timeout"]) == expected["faults"]["timeout"]


def test_results_keep_the_documented_fields(five: Any) -> None:
    _, results, _ = five
    for row in results["standings"]:
        for key in ("name", "rank", "mu", "sigma", "conservative", "games", "wins", "mean_rank",
                    "points_per_hand", "moons", "faults"):  # fmt: skip
            assert key in row
        assert set(row["faults"]) == {"timeout", "malformed", "illegal", "crashed"}
    assert results["settings"]["seating"] == "rotations"
    assert {"bootstrap", "verdict", "pairs"} <= set(results["confidence"])


def test_report_command_rebuilds_the_pages_without_replaying(five: Any, tmp_path: Path) -> None:
    out, results, _ = five
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for name in ("index.html", "results.json", "standings.csv", "report.css"):
        (copy / name).unlink()
    shutil.rmtree(copy / "games")
    shutil.rmtree(copy / "entrants")
    # No bot can run: the commands point nowhere, so nothing is replayed.
    run = json.loads((copy / "run.json").read_text())
    for e in run["settings"]["entrants"]:
        e["command"] = "/nonexistent/bot"
    (copy / "run.json").write_text(json.dumps(run))
    (copy / "stale").mkdir()
    (copy / "games").mkdir()
    (copy / "games" / "999-r9-t9-k9.html").write_text("old")
    assert run_arena(["report", str(copy)]) == 0
    rebuilt = json.loads((copy / "results.json").read_text())
    assert rebuilt["standings"] == results["standings"]
    assert rebuilt["confidence"] == results["confidence"]
    assert len(list((copy / "games").glob("*.html"))) == 20  # the stale page is gone
    assert len(list((copy / "entrants").glob("*.html"))) == 5
    old = (out / "games" / "0-r1-t0-k0.html").read_text()
    new = (copy / "games" / "0-r1-t0-k0.html").read_text()
    strip = results["generated_at"], rebuilt["generated_at"]
    assert old.replace(strip[0], "") == new.replace(strip[1], "")
