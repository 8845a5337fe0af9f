"""The report in a real browser: headless Chromium (Debian's ``chromium``)
driven by Playwright opens the index, an entrant page and a replay, with no
console error and no request leaving the file system.

Playwright is pointed at the system Chromium (``executable_path``); never run
``playwright install``. Skipped where Chromium or Playwright is missing.
Screenshots go to ``test-output/`` (gitignored) at the repository root.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from arena.report.outputs import write_outputs
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install -y chromium)"
)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)

SHOTS = ROOT / "test-output"
NAMES = ["ada", "bob", "cy", "dee", "eve", "fay"]
FLAGS = [
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A synthetic 6-entrant tournament (60 games of two hands), with faults and stderr."""
    out = tmp_path_factory.mktemp("browser")
    settings = TournamentSettings(seed=8, rounds=1, hands=2, target_score=None)
    records = synthesize(
        NAMES,
        settings,
        policies={"ada": "low"},
        faults={"fay": "played 2H: R7, no heart on the first trick"},
        stderr={"eve": "thinking...\nchose 2C\n"},
    )
    entrants = [{"name": n, "command": f"bots/{n}", "cwd": "."} for n in NAMES]
    results = write_outputs(out, {**settings.to_json(), "entrants": entrants}, NAMES, records, 60)
    return out, results


class Watch:
    """What a page did: console errors, page errors, requests, dialogs."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.dialogs: list[str] = []

    def check(self) -> None:
        assert self.errors == [], self.errors
        assert self.blocked == [], f"requests left the file system: {self.blocked}"
        assert self.dialogs == [], f"a script ran: {self.dialogs}"
        assert all(u.startswith("file://") for u in self.requests), self.requests


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    flags = FLAGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, Watch]]:
    watch = Watch()
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            watch.blocked.append(url)
            route.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.set_default_timeout(0)  # no wall-clock bound: pytest-timeout bounds the test
    pg.on("console", lambda msg: watch.errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    pg.on("request", lambda req: watch.requests.append(req.url))
    pg.on("dialog", lambda d: (watch.dialogs.append(d.message), d.dismiss()))
    try:
        yield pg, watch
    finally:
        context.close()


def shoot(pg: Any, name: str, tmp_path: Path) -> Path:
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / name
    pg.screenshot(path=str(path), full_page=True)
    shutil.copy(path, tmp_path / name)
    assert path.stat().st_size > 10_000
    return path


def test_index_opens_offline_with_standings_chart_and_links(
    report: Any, page: Any, tmp_path: Path
) -> None:
    out, results = report
    pg, watch = page
    pg.goto((out / "index.html").as_uri())
    first = pg.locator("#standings tbody tr").first
    assert first.locator("td.name a").inner_text() == results["standings"][0]["name"]
    mu = pg.locator('#standings tbody tr >> nth=0 >> td[data-col="mu"]').inner_text()
    assert mu == f"{results['standings'][0]['mu']:.2f}"
    assert pg.locator("#verdict").inner_text() == results["confidence"]["verdict"]["text"]
    # The rating chart: one line and one band per entrant, drawn with a real size.
    assert pg.locator("svg polyline.mu").count() == 6
    assert pg.locator("svg polygon.band").count() == 6
    box = pg.locator("figure.chart svg").first.bounding_box()
    assert box["width"] > 300 and box["height"] > 150
    assert pg.locator("#h2h tbody tr").count() == 6
    assert pg.locator("#fault-summary tbody tr").count() == 1  # fay
    assert pg.locator("#games a").count() >= 60
    # The stylesheet was loaded from the folder: the verdict box has its border.
    assert (
        pg.evaluate("getComputedStyle(document.querySelector('#verdict')).borderLeftStyle")
        == "solid"
    )
    assert pg.evaluate("document.scripts.length") == 0
    assert any(u.endswith("/report.css") for u in watch.requests)
    shoot(pg, "report-index.png", tmp_path)
    watch.check()


def test_entrant_page_shows_faults_stderr_and_distribution(
    report: Any, page: Any, tmp_path: Path
) -> None:
    out, results = report
    pg, watch = page
    pg.goto((out / "index.html").as_uri())
    pg.locator("#standings a", has_text="fay").click()
    assert pg.locator("h1").inner_text() == "fay"
    row = next(r for r in results["standings"] if r["name"] == "fay")
    assert pg.locator("#faults tbody tr").count() == row["faults"]["illegal"] == row["games"]
    assert pg.locator('dd[data-col="hands"]').inner_text() == str(row["hands"])
    assert pg.locator("svg rect.bar").count() == 27
    shoot(pg, "report-entrant.png", tmp_path)
    pg.goto((out / "entrants" / "4-eve.html").as_uri())
    pg.locator("details.stderr summary").first.click()
    assert "chose 2C" in pg.locator("details.stderr pre").first.inner_text()
    watch.check()


def test_replay_switches_between_open_hands_and_one_seats_view(
    report: Any, page: Any, tmp_path: Path
) -> None:
    out, _ = report
    pg, watch = page
    pg.goto((out / "games" / "0-r1-t0-k0.html").as_uri())
    rows = pg.locator("#deal-1 tbody tr")
    dealt = [rows.nth(s).locator("td").nth(1) for s in range(4)]
    for cell in dealt:  # all hands open
        assert cell.locator(".cards").is_visible() and not cell.locator(".masked").is_visible()
    assert pg.locator("#tricks-1 tbody tr").count() == 13
    pg.locator('label[for="view-1"]').click()
    assert pg.locator("#view-1").is_checked()
    assert dealt[1].locator(".cards").is_visible()
    for s in (0, 2, 3):
        assert not dealt[s].locator(".cards").is_visible()
        assert dealt[s].locator(".masked").inner_text() == "13 cards, not seen"
    # Hand 1 passes left: seat 1 sees what seat 0 passed it, not seat 2's pass to seat 3.
    assert rows.nth(0).locator("td").nth(2).locator(".cards").is_visible()
    assert not rows.nth(2).locator("td").nth(2).locator(".cards").is_visible()
    # Played cards are public in every view.
    assert pg.locator("#tricks-1 tbody tr").first.locator("td").nth(2).is_visible()
    shoot(pg, "report-replay-seat1.png", tmp_path)
    pg.locator('label[for="view-open"]').click()
    assert dealt[3].locator(".cards").is_visible()
    pg.locator("a[rel=next]").click()
    assert pg.locator("h1").inner_text() == "Game r1-t0-k1"
    watch.check()


def test_hostile_names_stay_text_in_the_browser(page: Any, tmp_path: Path) -> None:
    from test_report_escape import SCRIPT, hostile_report

    out = tmp_path / "hostile"
    hostile_report(out)
    pg, watch = page
    for rel in ("index.html", "entrants/0-script-alert-pwned-script.html", "games/0-r1-t0-k0.html"):
        pg.goto((out / rel).as_uri())
        assert pg.evaluate("document.querySelectorAll('img, textarea, iframe').length") == 0
        # Only a replay has scripts: its game as JSON and the player (replay.js).
        scripts = pg.evaluate("[...document.scripts].map(s => s.id || s.getAttribute('src'))")
        assert scripts == (["replay-data", "../replay.js"] if rel.startswith("games/") else [])
        for details in pg.locator("details").all():
            details.evaluate("d => d.open = true")
        assert SCRIPT in pg.locator("body").inner_text()
    watch.check()
