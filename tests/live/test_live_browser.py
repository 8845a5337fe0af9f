"""The live view in a real browser (issue 17): ``run --live`` while games are
played, then ``watch`` on the finished run.

Headless Chromium (Debian's ``chromium``, through Playwright's
``executable_path``; never ``playwright install``) opens the page; the test
also reads the page's event stream itself and asks for hidden hands, and
checks against the run's ``games.jsonl`` that:

* the standings and a card table change while games are played;
* no card of a hand in play is ever sent: every card in a table state is a
  card already played to that trick, as the game record has it;
* a game's dealt hands are given only once every game of its deal has ended
  (none of a deal a later rotation still plays), and no other part of the
  stream carries a card;
* a hostile entrant name is shown as text, the page makes no request outside
  its origin, and logs no console error.

Skipped where Chromium or Playwright is missing. Screenshots go to
``test-output/`` at the repository root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BOTS, ROOT
from live_checks import cards_in, check_hands, check_tables

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install -y chromium)"
)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)

SHOTS = ROOT / "test-output"
HOSTILE = "<b>x&amp;"
FLAGS = ["--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def _entrants() -> list[str]:
    return [
        "duck=sample:duck",
        "heuristic=sample:heuristic",
        f"{HOSTILE}=sample:random",
        f"illegal={BOTS / 'illegal.py'}",
        f"slow={sys.executable} {BOTS / 'slow_legal.py'} 0.003",
    ]


def _start(args: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start the arena with ``args``; returns it and the page's URL from its stderr."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
            env=env,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"live view: (http://\S+)", log.read_text(errors="replace"))
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no live view address: {log.read_text(errors='replace')}")


class Stream(threading.Thread):
    """Reads the page's event stream: ``(seconds since the epoch, event, data)``."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.messages: list[tuple[float, str, Any]] = []

    def run(self) -> None:
        event = ""
        with urllib.request.urlopen(self.url, timeout=120) as reply:
            for raw in reply:
                line = raw.decode("utf-8").rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    self.messages.append((time.time(), event, json.loads(line[6:])))
                    if event == "end":
                        return


class Watch:
    """What a page did: console errors and requests."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.hands: list[tuple[float, int, int]] = []

    def attach(self, context: Any, page: Any) -> None:
        def route(route: Any) -> None:
            if route.request.url.startswith(self.origin):
                route.continue_()
            else:
                self.blocked.append(route.request.url)
                route.abort()

        context.route("**/*", route)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append(r.url))

        def response(r: Any) -> None:
            found = re.search(r"/api/game/(\d+)", r.url)
            if found:
                self.hands.append((time.time(), int(found.group(1)), r.status))

        page.on("response", response)

    def check(self) -> None:
        assert self.errors == [], self.errors
        assert self.blocked == [], f"requests left the page's origin: {self.blocked}"
        assert all(u.startswith(self.origin) for u in self.requests), self.requests


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    flags = FLAGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        try:
            yield b
        finally:
            b.close()


def _ask_hands(base: str, token: str, finished: dict[str, Any]) -> list[tuple[float, int, int]]:
    out = []
    for g in finished["games"]:
        url = f"{base}/api/game/{g['game_index']}?token={token}"
        try:
            with urllib.request.urlopen(url, timeout=60) as reply:
                body = json.loads(reply.read())
                status = reply.status
        except urllib.error.HTTPError as exc:
            body, status = None, exc.code
        out.append((time.time(), g["game_index"], status))
        if status == 200:
            # The listing may be older than the answer (the deal's last game can
            # end in between): whether hands came too early is judged from the
            # games' own times by check_hands, not from the listing.
            assert [len(h) for h in body["hands"][0]["dealt"]] == [13, 13, 13, 13]
    return out


#: Clicks the paced player's pause button in one task of the page, only while
#: it plays and at least eight moments before its game's end; whether it did.
_PAUSE_WHILE_PLAYING_JS = """() => {
  const player = paced.player;
  if (!player || player.timer === null || player.i > player.list.length - 8) return false;
  document.querySelector("#player button[data-action=play]").click();
  return player.timer === null;
}"""


def _wait(predicate: Any, seconds: float, what: str) -> None:
    """Poll ``predicate`` until it holds. ``seconds`` is what it takes on a quiet
    machine; a busy one may take many times that, so the wait gives up only
    after ten times as long (the test's own timeout bounds it too)."""
    deadline = time.monotonic() + 10 * seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


#: Games of the live run: five entrants, one round (5 tables of 4 rotations).
GAMES = 20
#: The live run's pace, seconds a decision (``--pace``): one hand a game, each
#: decision's result delivered no earlier than this after it was asked, so
#: that the run lasts (20 games of about 56 decisions, two at once: at least
#: 22 s, 35 s here) while the page is checked, at the CPU cost of one hand a game (games
#: to 100 points made it last by playing about six hands each; a busy machine
#: could still finish it before the page saw a fault, and the wait for one
#: then hung until the test's timeout).
PACE = "0.04"
#: Milliseconds the page may take to show something the run is still playing
#: (pytest-timeout bounds the test too): a run that ended first fails here.
SHOWN_MS = 120_000


@pytest.mark.timeout(600)  # a loaded machine plays the games slowly
def test_live_run_then_watch(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    # --no-sandbox: bots could reach a loopback port, so the page must want its token.
    args = [
        "run",
        *_entrants(),
        "--rounds",
        "1",
        "--jobs",
        "2",
        "--time-limit",
        "2",
        "--hands",
        "1",
        "--pace",
        PACE,
        "--no-sandbox",
    ]
    log = tmp_path / "run.log"
    proc, viewer_url = _start([*args, "--out", str(out), "--quiet", "--live", "0"], log)
    try:
        origin = viewer_url.split("/?")[0]
        token = viewer_url.split("token=")[1]  # bots run unsealed: a token is required
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"{origin}/events", timeout=60)
        assert denied.value.code == 403
        _wait(lambda: "organiser's" in log.read_text(), 10, "the organiser's address")
        found = re.search(r"live view, organiser's .*?: (http://\S+)", log.read_text())
        assert found, log.read_text()
        url = found.group(1)  # the tables in play are on the organiser's address only
        organiser = url.split("token=")[1]
        assert organiser != token
        # The viewer's stream never carries a table in play.
        with urllib.request.urlopen(f"{origin}/events?token={token}", timeout=60) as reply:
            head = b""
            while b"event: finished" not in head:
                head += reply.readline()
        assert b"event: tables" not in head and b'"organiser":false' in head
        stream = Stream(f"{origin}/events?token={organiser}")
        stream.start()
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        context.set_default_timeout(0)  # pytest-timeout bounds the test
        watch = Watch(origin)
        page = context.new_page()
        watch.attach(context, page)
        page.goto(url)
        page.wait_for_selector("#standings tbody tr")
        first_prefix = page.inner_text("#prefix")
        page.wait_for_selector("#tables .table")
        first_tables = page.inner_text("#tables")
        _wait(lambda: page.inner_text("#tables") != first_tables, 30, "a table to change")
        # Only the cards of the current trick are on the tables, never a hand.
        cards = page.eval_on_selector_all(
            "#tables .card", "els => els.map(e => !!e.closest('.trick'))"
        )
        assert all(cards)
        per_table = page.eval_on_selector_all(
            "#tables .table", "els => els.map(e => e.querySelectorAll('.card').length)"
        )
        assert all(n <= 4 for n in per_table), per_table
        # The hostile entrant name is text, not markup.
        assert HOSTILE in page.inner_text("#standings")
        assert page.locator("#standings b").count() == 0
        try:
            page.wait_for_selector("#tables .faults li, #tables .seat-faults", timeout=SHOWN_MS)
        except sync_api.TimeoutError:
            ended = "the run had ended" if proc.poll() is not None else "the run still played"
            raise AssertionError(f"no fault shown on a table in play ({ended})") from None
        answers: list[tuple[float, int, int]] = []

        def standings_moved() -> bool:
            latest = [m for m in stream.messages if m[1] == "finished"]
            if latest:
                answers.extend(_ask_hands(origin, token, latest[-1][2]))
            return page.inner_text("#prefix") != first_prefix

        _wait(standings_moved, 90, "the standings to change")
        # A game not finished yet (the last one the page has not listed):
        # its hands must be refused whatever the timing of the others.
        latest = [m for m in stream.messages if m[1] == "finished"]
        listed = {g["game_index"] for g in latest[-1][2]["games"]} if latest else set()
        unfinished = max(i for i in range(GAMES) if i not in listed)
        unplayed = _ask_hands(origin, token, {"games": [{"game_index": unfinished}]})
        assert unplayed[0][2] == 404, unplayed
        answers.extend(unplayed)
        button = page.locator("#finished button.show")
        if button.count():
            button.first.click()
            page.wait_for_selector("#hands table.hands")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "live.png"), full_page=False)
        assert proc.poll() is None, "the run ended before the page was checked"
        watch.check()
        context.close()
        assert proc.wait(timeout=300) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    stream.join(timeout=30)
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(records) == GAMES
    assert stream.messages[-1][1] == "end"
    assert check_tables(stream.messages, records) > 50
    check_hands(answers + watch.hands, records)
    assert any(status == 404 for _, _, status in answers + watch.hands) or not answers
    assert any(t["faults"] for _, e, d in stream.messages if e == "tables" for t in d["tables"])

    # -- watch on the finished run -------------------------------------------------
    watch_log = tmp_path / "watch.log"
    proc, url = _start(["watch", str(out), "--live", "0"], watch_log)
    try:
        assert "token=" not in url  # loopback, and no bot of this command
        origin = url.rstrip("/")
        rebound = urllib.request.Request(f"{origin}/", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(rebound, timeout=60)  # a DNS-rebound page is refused
        assert denied.value.code == 403
        stream = Stream(f"{origin}/events")
        stream.start()
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(0)  # pytest-timeout bounds the test
        watch = Watch(origin)
        page = context.new_page()
        watch.attach(context, page)
        page.goto(url)
        page.wait_for_selector("#standings tbody tr")
        page.wait_for_selector("#finished tbody tr")
        assert page.locator("#standings tbody tr").count() == 5
        assert f"{GAMES} of {GAMES} games" in page.inner_text("#played")
        assert page.is_hidden("#tables-section")
        assert "finished games" in page.inner_text("#note")
        assert page.locator("#finished button.show").count() == 12  # every deal is over
        page.locator("#finished button.show").first.click()
        page.wait_for_selector("#hands table.hands")
        first_hand = page.locator("#hands table.hands tr").first
        assert first_hand.locator(".card").count() == 52
        assert HOSTILE in page.inner_text("#standings")
        page.wait_for_selector("#player:not([hidden]) .pl-table")
        page.screenshot(path=str(SHOTS / "live-watch.png"), full_page=False)
        # The page has its standings; this test's own stream reads them in a
        # thread of its own, which a loaded machine can leave behind the page
        # (a loaded run failed here on a stream with no standings yet).
        _wait(
            lambda: any(m[1] == "standings" for m in stream.messages) or not stream.is_alive(),
            5,
            "the event stream's standings",
        )
        assert any(m[1] == "standings" for m in stream.messages), stream.messages
        for _, event, data in stream.messages:
            assert event != "tables" or data["tables"] == []
            assert cards_in(data) == []
        results = json.loads((out / "results.json").read_text())
        shown = [m for m in stream.messages if m[1] == "standings"][-1][2]
        assert [r["name"] for r in shown["rows"]] == [r["name"] for r in results["standings"]]
        assert shown["verdict"]["text"] == results["confidence"]["verdict"]["text"]
        # Issue 24 item 8: another run replaces this one (as run --overwrite
        # does: the journal and run.json removed, then the new run's written).
        from arena.tournament.runner import TournamentSettings
        from arena.tournament.synthetic import synthesize

        run_info = json.loads((out / "run.json").read_text())
        (out / "games.jsonl").unlink()
        (out / "run.json").unlink()
        new_names = ["fay", "gus", "hal", "ivy"]
        new_settings = TournamentSettings(seed=9, rounds=1, hands=1, target_score=None)
        new_records = synthesize(new_names, new_settings)
        entrants = [
            {**run_info["settings"]["entrants"][i], "name": n} for i, n in enumerate(new_names)
        ]
        run_info.update(
            settings={**new_settings.to_json(), "entrants": entrants},
            games_total=len(new_records),
        )
        (out / "run.json").write_text(json.dumps(run_info))
        (out / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in new_records[:2]))
        _wait(lambda: "2 of 4 games" in page.inner_text("#played"), 30, "the new run's games")
        rows = page.eval_on_selector_all("#standings tbody td.name", "els => els.map(e => e.title)")
        _wait(
            lambda: (
                set(
                    page.eval_on_selector_all(
                        "#standings tbody td.name", "els => els.map(e => e.title)"
                    )
                )
                == set(new_names)
            ),
            30,
            f"the new run's standings (shown: {rows})",
        )
        watch.check()
        context.close()
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        assert code == 130, f"watch exited {code}: {watch_log.read_text(errors='replace')[-4000:]}"


# -- the paced view and the organiser's tables, from a hub fed by the test ----------

LONG = "long-" + "x" * 150
SHOWN_JS = """
window.__shown = [];
document.addEventListener("DOMContentLoaded", () => {
  const node = document.getElementById("player");
  new MutationObserver(() => {
    const cards = node.querySelectorAll(".pl-center .card");
    const last = cards.length ? cards[cards.length - 1] : null;
    window.__shown.push([Number(node.dataset.game), Number(node.dataset.hand),
      Number(node.dataset.trick), Number(node.dataset.card),
      last ? last.dataset.card : null, last ? last.textContent : null]);
  }).observe(node, { attributes: true, attributeFilter: ["data-card"] });
});
"""


class Served(threading.Thread):
    """:func:`arena.live.server.serve` of a hub in a thread: :attr:`urls`
    once listening; :meth:`end` ends the run (the ``end`` event, then the
    server stops), :meth:`kill` drops it without one (a lost connection)."""

    def __init__(self, hub: Any, token: str | None, organiser: str | None) -> None:
        super().__init__(daemon=True)
        self.hub, self.token, self.organiser = hub, token, organiser
        self.channel: Any = __import__("queue").Queue()
        self.urls: dict[str, str] = {}
        self._end = threading.Event()
        self._kill = threading.Event()

    def run(self) -> None:
        import trio

        from arena.live.server import Address, serve

        async def stop() -> None:
            while not self._end.is_set():  # noqa: ASYNC110
                await trio.sleep(0.05)

        async def main() -> None:
            async with trio.open_nursery() as nursery:

                async def killer() -> None:
                    while not self._kill.is_set():  # noqa: ASYNC110
                        await trio.sleep(0.05)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(killer)
                await serve(
                    self.hub,
                    Address("127.0.0.1", 0),
                    self.token,
                    self.channel,
                    lambda url: self.urls.setdefault("viewer", url),
                    stop,
                    self.organiser,
                    lambda url: self.urls.setdefault("organiser", url),
                )
                nursery.cancel_scope.cancel()

        trio.run(main)

    def started(self) -> Served:
        self.start()
        _wait(lambda: "viewer" in self.urls, 60, "the page's server")
        return self

    def end(self) -> None:
        self._end.set()
        self.join(timeout=30)

    def kill(self) -> None:
        self._kill.set()
        self.join(timeout=30)


def _positions(record: dict[str, Any]) -> list[tuple[int, int, int, str | None]]:
    """Every moment of a game's replay, as the player steps: (hand, trick,
    card, the last card on the table)."""
    out: list[tuple[int, int, int, str | None]] = []
    for hand in record["hands"]:
        n = hand["hand_number"]
        out.append((n, 0, 0, None))
        if hand["direction"] != "hold":
            out.append((n, 0, 1, None))
        for t, trick in enumerate(hand["tricks"], 1):
            out += [(n, t, c, card) for c, card in enumerate(trick["cards"], 1)]
    return out


def _shown(page: Any) -> list[tuple[int, int, int, int, str | None, str | None]]:
    return [tuple(x) for x in page.evaluate("window.__shown")]


@pytest.mark.timeout(300)
def test_paced_view_follows_finished_deals_card_by_card(browser: Any, tmp_path: Path) -> None:
    # Issue 24 items 5, 6, 7 and 9, from a hub the test feeds (no bots).
    from arena.game.feed import TableState
    from arena.live.hub import Hub, standings_rows
    from arena.results.analysis import analyse
    from arena.tournament.runner import TournamentSettings, schedule_round_robin
    from arena.tournament.synthetic import synthesize

    names = ["ada", LONG, HOSTILE, "cy", "dee"]
    settings = TournamentSettings(seed=5, rounds=1, hands=1, target_score=None)
    records = synthesize(names, settings)
    info = {**settings.to_json(), "entrants": [{"name": n} for n in names]}
    journal = tmp_path / "games.jsonl"

    def append(indexes: list[int]) -> None:
        with journal.open("a") as f:
            f.write("".join(json.dumps(records[i]) + "\n" for i in indexes))

    # Deal r1-t1 (games 4 to 7) is over; r1-t0 and r1-t2 are still played.
    first = [0, 1, 2, 4, 5, 6, 7, 8]
    append(first)
    hub = Hub(info, len(records), journal, "live", "")
    server = Served(hub, None, "orgtoken").started()
    viewer_url = server.urls["viewer"]
    assert "token" not in viewer_url and server.urls["organiser"].endswith("?token=orgtoken")
    game = schedule_round_robin(names, settings)[9]
    table = TableState(game)
    table.apply({"event": "deal", "hand_number": 1, "direction": "hold"})
    table.apply({"event": "card", "seat": 0, "card": "TH"})
    table.apply({"event": "decision", "seat": 1, "kind": "play", "deadline": time.time() + 600})
    server.channel.put(table.to_json())
    late = TableState(schedule_round_robin(names, settings)[10])
    late.apply({"event": "deal", "hand_number": 1, "direction": "hold"})
    late.apply({"event": "decision", "seat": 0, "kind": "play", "deadline": time.time() - 5})
    server.channel.put(late.to_json())

    context = browser.new_context(viewport={"width": 1280, "height": 1000})

    context.set_default_timeout(0)  # pytest-timeout bounds the test
    context.add_init_script(SHOWN_JS)
    page = context.new_page()
    origin = viewer_url.rstrip("/")
    watch = Watch(origin)
    watch.attach(context, page)
    page.goto(viewer_url + "?speed=20")
    revealed = {4, 5, 6, 7}

    def second_game_started() -> bool:
        return len({s[0] for s in _shown(page)}) >= 2

    _wait(second_game_started, 120, "the featured table to play a game through")
    shown = _shown(page)
    assert {s[0] for s in shown} <= revealed  # never a deal a game still plays
    featured = shown[0][0]
    assert featured == 7  # the newest finished deal's last game first
    steps = [s[1:5] for s in shown if s[0] == featured]
    assert steps == _positions(records[featured])  # every card, in order, once
    tens = [s for s in shown if s[4] and s[4][0] == "T"]
    assert tens and all(s[5].startswith("10") for s in tens)
    assert shown[len(steps)][0] == 6 and shown[len(steps)][1:4] == (1, 0, 0)
    # The viewer's page has no table in play; the standings count every finished game.
    assert page.is_hidden("#tables-section")
    assert page.locator("#tables .table").count() == 0
    note = page.inner_text("#prefix")
    assert "all 8 finished games of 20" in note and "Not counted yet: 12 games" in note
    expected = standings_rows(analyse(info, names, [records[i] for i in first]).standings)
    shown_names = page.eval_on_selector_all(
        "#standings tbody td.name", "els => els.map(e => e.title)"
    )
    assert shown_names == [r["name"] for r in expected]
    # A long name is cut: the standings stay on the screen.
    right = page.evaluate("document.querySelector('#standings').getBoundingClientRect().right")
    assert right <= 1280
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # nothing wider

    # Pause, step card by card, pick another table. The pause button is
    # clicked while the player plays, away from a game's end: in the pause
    # after a game's last card (autoplay stopped, the next game not yet
    # featured) the same button starts the game again, and a click that the
    # page handled there (the page runs on while Playwright acts) replayed it.
    def paused_while_playing() -> bool:
        return bool(page.evaluate(_PAUSE_WHILE_PLAYING_JS))

    _wait(paused_while_playing, 30, "a moment to pause the player while it plays")
    before = len(_shown(page))
    for _ in range(3):
        page.click("#player button[data-action=next]")
    after = _shown(page)
    assert len(after) == before + 3
    moments = [s[1:4] for s in after[-4:]]
    game6 = [p[:3] for p in _positions(records[after[-1][0]])]
    at = game6.index(moments[0])
    # "next" at a game's last moment stays there (replay.js clamps it): a
    # pause within three moments of the end steps onto the last one again.
    assert moments == [game6[min(at + i, len(game6) - 1)] for i in range(4)]
    page.select_option("#paced-pick", "4")
    _wait(lambda: _shown(page)[-1][0] == 4, 30, "game 4 to be featured")
    assert _shown(page)[-1][1:4] == (1, 0, 0)
    assert page.locator("#paced-pick option[value='0']").count() == 0
    append([3])  # deal r1-t0 is over: its games can be featured now
    page.wait_for_selector("#paced-pick option[value='0']", state="attached")

    # The organiser's page: tables in play, with a countdown only while it runs.
    organiser = context.new_page()
    watch.attach(context, organiser)
    organiser.goto(server.urls["organiser"])
    organiser.wait_for_selector("#tables .table")
    assert organiser.locator("#tables .table").count() == 2
    live = organiser.locator(f"#tables .table[data-game='{game.game_id}']")
    assert "10♥" in live.locator(".trick").inner_text()
    _wait(lambda: "s left" in live.inner_text(), 10, "a countdown")
    over = organiser.locator("#tables .table").nth(1)
    assert over.locator(".clock[data-deadline]").inner_text().strip() == ""  # deadline passed

    # Every game finishes; then the run ends at once: the last standings are final.
    append([i for i in range(len(records)) if i not in first and i != 3])
    server.end()
    final = standings_rows(analyse(info, names, records).standings)
    page.wait_for_selector(".live-tag.over")
    assert "Every game is counted" in page.inner_text("#prefix")
    cells = page.eval_on_selector_all(
        "#standings tbody tr", "els => els.map(e => [e.cells[1].title, e.cells[2].textContent])"
    )
    assert cells == [[r["name"], r["conservative"]] for r in final]
    assert "The run is over" in page.inner_text("#status")
    assert organiser.is_hidden("#tables-section")
    # The server has stopped: "show hands" says so rather than loading forever.
    page.locator("#finished button.show").first.click()
    _wait(lambda: "server has stopped" in page.inner_text("#hands"), 30, "the hands' answer")
    watch.errors = [e for e in watch.errors if "Failed to load resource" not in e]
    watch.check()
    context.close()


@pytest.mark.timeout(300)  # a loaded machine starts the page slowly
def test_tables_of_a_lost_server_are_marked_stale(browser: Any, tmp_path: Path) -> None:
    # Issue 24 item 9: a disconnect marks the tables and stops their clocks.
    from arena.game.feed import TableState
    from arena.live.hub import Hub
    from arena.tournament.runner import TournamentSettings, schedule_round_robin

    names = ["ada", "bob", "cy", "dee"]
    settings = TournamentSettings(seed=5, rounds=1, hands=1, target_score=None)
    info = {**settings.to_json(), "entrants": [{"name": n} for n in names]}
    hub = Hub(info, 4, tmp_path / "games.jsonl", "live", "")
    server = Served(hub, None, "org").started()
    table = TableState(schedule_round_robin(names, settings)[0])
    table.apply({"event": "deal", "hand_number": 1, "direction": "hold"})
    table.apply({"event": "decision", "seat": 2, "kind": "play", "deadline": time.time() + 600})
    server.channel.put(table.to_json())
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(0)  # pytest-timeout bounds the test
    page = context.new_page()
    page.goto(server.urls["organiser"])
    page.wait_for_selector("#tables .table .clock:not(:empty)")
    server.kill()  # no end event: the connection is lost
    page.wait_for_selector("#tables .table.stale")
    assert page.is_visible("#stale") and "Disconnected" in page.inner_text("#stale")
    assert page.locator("#tables .clock[data-deadline]").inner_text().strip() == ""
    context.close()
