"""Hostile text in the report: entrant names, bots' self-names, stderr and
fault details are escaped on every page, page file names never come from
names, and standings.csv does not hand formulas to spreadsheets."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from arena.report.outputs import write_outputs
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

SCRIPT = "<script>alert('pwned')</script>"
IMG = '"><img src=x onerror=alert(1)>'
TEXTAREA = "</textarea><b>bold</b>"
FORMULA = '=HYPERLINK("http://example.invalid","x")'
NAMES = [SCRIPT, IMG, TEXTAREA, FORMULA, "plain"]
#: Terminal escapes, a bell and a right-to-left override in a bot's stderr.
TERMINAL = "\x1b[2J\x07\u202eevil"
#: Substrings that would mean a payload reached the page as markup.
RAW = ("<script", "<img", "</textarea", "<textarea", "<b>", IMG)
#: The two script elements of a replay page (report.py, game.html.j2).
PLAYER_SCRIPTS = re.compile(
    r'<script type="application/json" id="replay-data">([^<]*)</script>\n'
    r'<script src="\.\./replay\.js"></script>'
)


class Tags(HTMLParser):
    """Every start tag and attribute name of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, [k for k, _ in attrs]))


def hostile_report(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write the report of a synthetic tournament full of hostile text into ``out``."""
    settings = TournamentSettings(seed=5, rounds=1, hands=2, target_score=None)
    log = f"starting {SCRIPT}\n{IMG}\n{TEXTAREA}\n{TERMINAL}\r\n"
    records = synthesize(
        NAMES,
        settings,
        faults={SCRIPT: f"played {IMG} {TEXTAREA}"},
        stderr=dict.fromkeys(NAMES, log),
    )
    selves = [IMG, TEXTAREA, SCRIPT, FORMULA]
    for rec in records:
        rec["bot_names"] = selves[rec["rotation"] :] + selves[: rec["rotation"]]
    entrants = [{"name": n, "command": f"run {n}", "cwd": TEXTAREA, "given": IMG} for n in NAMES]
    settings_json = {**settings.to_json(), "entrants": entrants}
    out.mkdir(parents=True, exist_ok=True)
    results = write_outputs(out, settings_json, NAMES, records, len(records))
    return results, records


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("hostile")
    results, _ = hostile_report(out)
    return out, results


def test_no_hostile_text_reaches_any_page_unescaped(hostile: Any) -> None:
    out, _ = hostile
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 1 + 5 + 5 * 4  # index, entrants, games
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.parent.name == "games":
            # A replay's only scripts: its game as JSON (no "<" inside, so no
            # name can end the element) and the player, both cut out here.
            found = PLAYER_SCRIPTS.findall(text)
            assert len(found) == 1, page
            data = json.loads(found[0])
            assert set(data["seats"]) <= set(NAMES)
            assert any(f["detail"] == f"played {IMG} {TEXTAREA}" for f in data["faults"]) == (
                SCRIPT in data["seats"]
            )
            text = PLAYER_SCRIPTS.sub("", text)
        for raw in RAW:
            assert raw not in text, f"{page.relative_to(out)} holds {raw!r} unescaped"
        tags = Tags()
        tags.feed(text)
        names = {tag for tag, _ in tags.tags}
        assert not names & {"script", "img", "textarea", "b", "iframe", "object"}, page
        for tag, attrs in tags.tags:
            assert not [a for a in attrs if a.startswith("on")], (
                f"{page}: <{tag}> has an event handler"
            )
    index = (out / "index.html").read_text(encoding="utf-8")
    # The names are shown, escaped.
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in index
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in index
    assert "&lt;/textarea&gt;&lt;b&gt;bold&lt;/b&gt;" in index


def test_self_names_stderr_and_fault_details_are_shown_escaped(hostile: Any) -> None:
    out, _ = hostile
    entrant = (out / "entrants" / "0-script-alert-pwned-script.html").read_text(encoding="utf-8")
    assert "starting &lt;script&gt;" in entrant  # the stderr excerpt
    # Control and bidi characters are shown as escapes, not acted on.
    assert "\\x1b[2J\\x07\\u202eevil\n" in entrant  # (read_text makes CRLF a newline)
    assert not re.search("[\x1b\x07\u202e]", entrant)
    assert "played &#34;&gt;&lt;img" in entrant  # the fault detail
    game = (out / "games" / "0-r1-t0-k0.html").read_text(encoding="utf-8")
    assert game.count("&lt;/textarea&gt;&lt;b&gt;bold&lt;/b&gt;") >= 2  # a name and a self-name


def test_page_file_names_never_come_from_names(hostile: Any) -> None:
    out, results = hostile
    files = sorted(p.name for p in (out / "entrants").iterdir())
    assert len(files) == 5
    for name in files:
        assert re.fullmatch(r"\d+-[a-z0-9-]*\.html", name), name
    assert all(re.fullmatch(r"\d+-r\d+-t\d+-k\d+\.html", p.name) for p in (out / "games").iterdir())
    # results.json keeps the names as they are: escaping is the page's business.
    assert sorted(r["name"] for r in results["standings"]) == sorted(NAMES)
    assert json.loads((out / "results.json").read_text())["standings"][0]["name"] in NAMES


def test_csv_cells_are_not_formulas(hostile: Any) -> None:
    out, _ = hostile
    with (out / "standings.csv").open(newline="", encoding="utf-8") as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    assert "'" + FORMULA in rows
    assert SCRIPT in rows  # other text is kept as it is
    for row in rows.values():
        assert not row["name"].startswith(("=", "+", "-", "@"))
        assert not row["self_names"].startswith(("=", "+", "-", "@"))
