"""The replay player (``arena/report/templates/replay.js``) in a real browser: headless
Chromium (Debian's ``chromium``, never a downloaded one) driven by Playwright.

Each check compares what the page shows with the game record (the journal,
``games.jsonl``), through a small reference written here in Python: which
cards each seat holds at a moment, and which cards a seat knew then (its
dealt cards, the cards it passed and received, the cards played so far, R3).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from test_browser import CHROMIUM, SHOTS, Watch, browser  # noqa: F401 (fixtures)

from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import FaultJSON
from arena.report.outputs import write_outputs
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed")

NAMES = ["ada", "bob", "cy", "fay"]
ILLEGAL = "played 2H: R7, no heart on the first trick"
TIMEOUT = "no answer in 1000 ms"
OFFSETS = {"left": 1, "right": 3, "across": 2, "hold": 0}
SUITS = {"C": "♣", "D": "♦", "S": "♠", "H": "♥"}
ORDER = {r + s: i for i, (s, r) in enumerate((s, r) for s in "CDSH" for r in "23456789TJQKA")}


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Four games of three hands; fay faults (illegal, hand 1 trick 1) in each
    game, and in game 0 seat 2 times out on the pass of hand 1."""
    out = tmp_path_factory.mktemp("replay")
    settings = TournamentSettings(seed=11, rounds=1, hands=3, target_score=None)
    records = synthesize(NAMES, settings, faults={"fay": ILLEGAL})
    rec = records[0]
    assert rec["hands"][0]["direction"] == "left"
    rec["faults"].append(
        Fault(2, rec["seats"][2], "timeout", TIMEOUT, 1, None, "pass", 3).to_json()
    )
    entrants = [{"name": n, "command": f"bots/{n}", "cwd": "."} for n in NAMES]
    write_outputs(out, {**settings.to_json(), "entrants": entrants}, NAMES, records, len(records))
    return out, records


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, Watch]]:  # noqa: F811
    yield from _page(browser, javascript=True)


@pytest.fixture
def page_no_js(browser: Any) -> Iterator[tuple[Any, Watch]]:  # noqa: F811
    yield from _page(browser, javascript=False)


def _page(browser: Any, javascript: bool) -> Iterator[tuple[Any, Watch]]:  # noqa: F811
    watch = Watch()
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
    )

    def route(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            watch.blocked.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.set_default_timeout(0)  # no wall-clock bound: pytest-timeout bounds the test

    def console(message: Any) -> None:
        if message.type == "error":
            watch.errors.append(message.text)

    pg.on("console", console)
    pg.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    pg.on("request", lambda req: watch.requests.append(req.url))

    def dialog(d: Any) -> None:
        watch.dialogs.append(d.message)
        d.dismiss()

    pg.on("dialog", dialog)
    try:
        yield pg, watch
    finally:
        context.close()


# -- the reference, from the record ---------------------------------------------------


def state(hand: dict[str, Any], t: int, c: int) -> tuple[list[list[str]], list[tuple[int, str]]]:
    """Each seat's cards in hand at a moment (sorted) and the current trick's
    ``(seat, card)`` so far. ``t = 0``: ``c = 0`` the deal, ``c = 1`` the pass."""
    held = [list(d) for d in hand["dealt"]]
    offset = OFFSETS[hand["direction"]] if hand["passes"] else 0
    if offset and (t or c):
        for s in range(4):
            held[s] = [x for x in held[s] if x not in hand["passes"][s]]
        for s in range(4):
            held[(s + offset) % 4] += hand["passes"][s]
    table: list[tuple[int, str]] = []
    for i, trick in enumerate(hand["tricks"][:t], 1):
        for k, card in enumerate(trick["cards"][: 4 if i < t else c]):
            seat = (trick["leader"] + k) % 4
            held[seat].remove(card)
            if i == t:
                table.append((seat, card))
    return [sorted(h, key=ORDER.__getitem__) for h in held], table


def knew(hand: dict[str, Any], t: int, c: int, seat: int) -> set[str]:
    """Every card ``seat`` had seen at a moment: dealt to it, passed by it or
    to it (once the pass is made), and every card played so far."""
    seen = set(hand["dealt"][seat])
    offset = OFFSETS[hand["direction"]] if hand["passes"] else 0
    if offset and (t or c):
        seen |= set(hand["passes"][seat]) | set(hand["passes"][(seat - offset) % 4])
    for i, trick in enumerate(hand["tricks"][:t], 1):
        seen |= set(trick["cards"][: 4 if i < t else c])
    return seen


#: What :func:`check_view` reads of the player, in one round trip to the page
#: (a locator a value took some 14 a view).
VIEW_JS = """() => {
  const cards = sel => [...document.querySelectorAll(sel)].map(x => x.dataset.card);
  const box = s => `#player .pl-seat[data-seat="${s}"]`;
  return JSON.stringify({
    seat: document.querySelector("#player").getAttribute("data-seat"),
    seats: [0, 1, 2, 3].map(s => ({
      faces: cards(`${box(s)} .pl-hand-cards .card:not(.back)`),
      backs: document.querySelectorAll(`${box(s)} .card.back`).length,
      total: document.querySelectorAll(`${box(s)} .pl-hand-cards .card`).length,
    })),
    center: cards("#player .pl-center .card"),
    everything: cards("#player [data-card]"),
  });
}"""


def check_view(pg: Any, hand: dict[str, Any], t: int, c: int, viewer: int | None) -> None:
    """The player's cards against the record: the viewer's (or every) hand
    exactly, the trick on the table, and no card the viewer did not know."""
    held, table = state(hand, t, c)
    seen = json.loads(pg.evaluate(VIEW_JS))
    assert seen["seat"] == ("open" if viewer is None else str(viewer))
    for s in range(4):
        cards = [str(x) for x in seen["seats"][s]["faces"]]
        if viewer is None or viewer == s:
            assert cards == held[s], (s, cards, held[s])
            assert seen["seats"][s]["backs"] == 0
        else:
            assert set(cards) <= set(held[s])
            assert seen["seats"][s]["total"] == len(held[s])
    center = [str(x) for x in seen["center"]]
    assert sorted(center) == sorted(card for _, card in table)
    if viewer is not None:
        everything = {str(x) for x in seen["everything"]}
        assert everything <= knew(hand, t, c, viewer), everything - knew(hand, t, c, viewer)
        # and at least its own hand and the table are there
        assert set(held[viewer]) | {card for _, card in table} <= everything


def at(pg: Any) -> tuple[int, int, int]:
    """Where the player stands: (hand, trick, card). Waits for the player to
    have set its place (a page just opened by a link runs its script after
    the load that a click waits for)."""
    pg.wait_for_selector("#player[data-hand][data-trick][data-card]", state="attached")
    node = pg.locator("#player")
    return tuple(int(node.get_attribute(f"data-{k}")) for k in ("hand", "trick", "card"))  # type: ignore[return-value]


# -- tests --------------------------------------------------------------------------


def test_keys_and_buttons_step_to_a_trick_and_every_view_matches_the_journal(
    replay: Any, page: Any, tmp_path: Path
) -> None:
    out, records = replay
    rec = records[0]
    pg, watch = page
    pg.goto((out / "games" / "0-r1-t0-k0.html").as_uri())
    assert pg.locator("#player").is_visible()
    assert at(pg) == (1, 0, 0)
    hand = rec["hands"][0]
    check_view(pg, hand, 0, 0, None)
    pg.keyboard.press("ArrowRight")  # the pass
    assert at(pg) == (1, 0, 1)
    check_view(pg, hand, 0, 1, None)
    for _ in range(3):
        pg.get_by_role("button", name="Next trick", exact=False).click()
    assert at(pg) == (1, 3, 4)
    pg.keyboard.press("ArrowRight")
    pg.keyboard.press("ArrowRight")
    pg.locator('#player button[data-action="next"]').click()
    assert at(pg) == (1, 4, 3)
    pg.keyboard.press("Shift+ArrowRight")
    assert at(pg) == (1, 4, 4)
    pg.keyboard.press("ArrowLeft")
    pg.keyboard.press("ArrowLeft")
    assert at(pg) == (1, 4, 2)
    trick = hand["tricks"][3]
    leader = trick["leader"]
    status = pg.locator("#player .pl-status").inner_text()
    assert status.startswith("Hand 1 · pass left · trick 4, card 2: seat ")
    assert f"seat {(leader + 1) % 4} ({rec['seats'][(leader + 1) % 4]}) played" in status
    check_view(pg, hand, 4, 2, None)
    for viewer in range(4):
        pg.locator(f'#player button[data-action="seat-{viewer}"]').click()
        check_view(pg, hand, 4, 2, viewer)
        # The static tables below follow the player's view.
        assert pg.locator(f"#view-{viewer}").is_checked()
        assert f"&seat={viewer}" in pg.url
    assert pg.url.endswith("#h=1&t=4&c=2&seat=3")
    assert pg.locator("#player a.pl-link").get_attribute("href") == "#h=1&t=4&c=2&seat=3"
    pg.keyboard.press("o")
    check_view(pg, hand, 4, 2, None)
    pg.keyboard.press("1")
    # The trick before, and the next hand's deal, in seat 1's view.
    pg.keyboard.press("Shift+ArrowLeft")
    assert at(pg) == (1, 3, 4)
    check_view(pg, hand, 3, 4, 1)
    pg.locator('#player select[data-control="hand"]').select_option("1")
    assert at(pg) == (2, 0, 0)
    check_view(pg, rec["hands"][1], 0, 0, 1)
    pg.keyboard.press("End")
    assert at(pg) == (3, 13, 4)
    check_view(pg, rec["hands"][2], 13, 4, 1)
    pg.keyboard.press("Home")
    assert at(pg) == (1, 0, 0)
    watch.check()


def test_every_moment_every_view_of_the_pure_logic_matches_the_journal(
    replay: Any, page: Any
) -> None:
    """``HeartsReplay.view`` (the player's pure logic) for every position of
    the game and every view, against the Python reference."""
    out, records = replay
    rec = records[0]
    pg, watch = page
    pg.goto((out / "games" / "0-r1-t0-k0.html").as_uri())
    # One JSON text back: Playwright's protocol checks a returned object
    # value by value (some 800 views: seconds), a string at once.
    views = json.loads(
        pg.evaluate(
            """() => {
              const data = JSON.parse(document.getElementById('replay-data').textContent);
              return JSON.stringify(HeartsReplay.positions(data).map(pos =>
                [pos, [-1, 0, 1, 2, 3].map(v => HeartsReplay.view(data, pos, v))]));
            }"""
        )
    )
    expected = sum(1 + (1 if h["passes"] else 0) + 52 for h in rec["hands"])
    assert len(views) == expected
    for pos, per_viewer in views:
        hand = rec["hands"][pos["h"]]
        held, table = state(hand, pos["t"], pos["c"])
        for viewer, v in zip([None, 0, 1, 2, 3], per_viewer, strict=True):
            assert v["hand"] == hand["hand_number"]
            assert [(x["seat"], x["card"]) for x in v["table"]] == table
            for s in range(4):
                mine = viewer is None or viewer == s
                assert v["seats"][s]["held"] == (held[s] if mine else None)
                assert v["seats"][s]["count"] == len(held[s])
            if viewer is not None:
                cards = {c for seat in v["seats"] for c in (seat["held"] or []) + seat["known"]}
                for p in v["passes"] or []:
                    cards |= set(p["passed"] or []) | set(p["received"] or [])
                assert cards <= knew(hand, pos["t"], pos["c"], viewer)
        # Points and tricks taken so far this hand, from completed tricks
        # (the one just completed included).
        complete = pos["t"] > 0 and pos["c"] == len(hand["tricks"][pos["t"] - 1]["cards"])
        done = hand["tricks"][: max(0, pos["t"] - (0 if complete else 1))]
        points = [sum(t["points"] for t in done if t["winner"] == s) for s in range(4)]
        taken = [sum(1 for t in done if t["winner"] == s) for s in range(4)]
        assert [s["points"] for s in per_viewer[0]["seats"]] == points
        assert [s["tricks"] for s in per_viewer[0]["seats"]] == taken
        # The hand's result, at its last card only: the record's points after
        # the moon rule (R12) and running totals.
        result = per_viewer[0]["result"]
        if pos["t"] == 13 and complete:
            assert sum(points) == 26
            assert result == {
                "points": hand["points"],
                "moon": hand["moon"],
                "scores": hand["scores"],
                "last": pos["h"] == len(rec["hands"]) - 1,
            }
        else:
            assert result is None
    watch.check()


def test_a_fault_link_on_the_entrant_page_opens_its_moment(replay: Any, page: Any) -> None:
    out, records = replay
    pg, watch = page
    pg.goto((out / "entrants" / "3-fay.html").as_uri())
    links = pg.locator("#faults a.moment")
    games = [r for r in records if "fay" in r["seats"]]
    assert links.count() == len(games) == 4
    links.first.click()
    rec = records[0]
    seat = rec["seats"].index("fay")
    trick = rec["hands"][0]["tricks"][0]
    place = (seat - trick["leader"]) % 4 + 1
    assert pg.locator("h1").inner_text() == f"Game {rec['game_id']}"
    assert at(pg) == (1, 1, place)
    assert pg.locator("#player").get_attribute("data-seat") == str(seat)
    assert pg.url.endswith(f"#h=1&t=1&c={place}&seat={seat}")
    fault = pg.locator("#player .pl-fault")
    assert fault.count() == 1
    assert fault.inner_text() == f"Fault: seat {seat} (fay), illegal (play request) — {ILLEGAL}"
    # The card the referee played instead is marked as a default move.
    card = trick["cards"][place - 1]
    assert pg.locator("#player .pl-center .card.auto").get_attribute("data-card") == card
    assert pg.locator("#player .pl-auto").inner_text() == (
        f"A default move: the referee played for seat {seat} (fay), after its fault above."
    )
    check_view(pg, rec["hands"][0], 1, place, seat)
    # Another seat's view marks the fault, without its detail (it may name cards).
    other = (seat + 1) % 4
    pg.locator(f'#player button[data-action="seat-{other}"]').click()
    assert "illegal" in fault.inner_text() and ILLEGAL not in fault.inner_text()
    # The pass timeout, from the game page's own faults table.
    pg.locator("#fault-1 a.moment").click()
    assert at(pg) == (1, 0, 1)
    assert pg.locator("#player").get_attribute("data-seat") == "2"
    assert TIMEOUT in pg.locator("#player .pl-fault").inner_text()
    assert "(default move)" in pg.locator('#player .pl-seat[data-seat="2"] .pl-pass').inner_text()
    check_view(pg, rec["hands"][0], 0, 1, 2)
    watch.check()


def test_back_and_forward_around_a_moment_link(replay: Any, page: Any) -> None:
    """The player replaces the address as it steps (no history entry per
    card): back from a followed fault link returns to the entrant page,
    forward to the moment last shown, and back to an earlier moment of the
    same page moves the player there."""
    out, records = replay
    pg, watch = page
    pg.goto((out / "entrants" / "3-fay.html").as_uri())
    pg.locator("#faults a.moment").first.click()
    rec = records[0]
    seat = rec["seats"].index("fay")
    place = (seat - rec["hands"][0]["tricks"][0]["leader"]) % 4 + 1
    assert at(pg) == (1, 1, place)
    pg.keyboard.press("Shift+ArrowRight")  # the end of trick 1, then of trick 2
    pg.keyboard.press("Shift+ArrowRight")
    assert at(pg) == (1, 2, 4)
    pg.go_back()
    assert pg.url.endswith("entrants/3-fay.html")
    pg.go_forward()
    assert pg.url.endswith(f"#h=1&t=2&c=4&seat={seat}")
    assert at(pg) == (1, 2, 4)
    # A new moment typed into the address adds a history entry; back returns.
    pg.goto(pg.url.split("#")[0] + "#h=2&t=7&c=1&seat=open")
    assert at(pg) == (2, 7, 1)
    assert pg.locator("#player").get_attribute("data-seat") == "open"
    pg.go_back()
    pg.wait_for_function("() => document.querySelector('#player').dataset.hand === '1'")
    assert at(pg) == (1, 2, 4)
    assert pg.locator("#player").get_attribute("data-seat") == str(seat)
    watch.check()


STRUCK = "no reply within 200 ms; struck out after 3 consecutive timeouts: default moves"


def test_a_moon_shot_and_a_struck_out_seat(page: Any, tmp_path: Path) -> None:
    """The last card of a hand shows the hand's result with the moon rule
    (R12), and a struck-out seat's later default moves say why."""
    settings = TournamentSettings(seed=27, rounds=1, hands=3, target_score=None)
    records = synthesize(NAMES, settings)
    rec = records[1]
    hand = rec["hands"][0]
    assert hand["moon"] == 3 and hand["points"] == [26, 26, 26, 0]  # seed 27: seat 3, hand 1
    struck = Fault(1, rec["seats"][1], FaultKind.TIMEOUT, STRUCK, 1, 2, "play", 9)
    rec["faults"].append(cast(FaultJSON, struck.to_json()))
    entrants = [{"name": n, "command": "x", "cwd": "."} for n in NAMES]
    write_outputs(tmp_path, {**settings.to_json(), "entrants": entrants}, NAMES, records, 4)
    pg, watch = page
    pg.goto((tmp_path / "games" / "1-r1-t0-k1.html").as_uri() + "#h=1&t=13&c=3&seat=open")
    assert at(pg) == (1, 13, 3)
    assert pg.locator("#player .pl-result").count() == 0
    pg.keyboard.press("ArrowRight")
    assert at(pg) == (1, 13, 4)
    names = rec["seats"]
    assert pg.locator("#player .pl-result").inner_text() == (
        f"Hand 1 over: seat 3 ({names[3]}) shot the moon (R12): 0 points for it, 26 for each"
        f" other seat; points 26 · 26 · 26 · 0; totals {' · '.join(map(str, hand['scores']))}."
    )
    boxes = pg.locator('#player .pl-seat[data-seat="3"] .pl-name small').inner_text()
    assert boxes.startswith(" · 26 pts in ")
    # Seat 1 struck out on hand 1, trick 2: its card in trick 3 is a default move, and says why.
    trick = hand["tricks"][2]
    place = (1 - trick["leader"]) % 4 + 1
    pg.goto(pg.url.split("#")[0] + f"#h=1&t=3&c={place}&seat=0")
    assert at(pg) == (1, 3, place)
    assert (
        pg.locator("#player .pl-center .card.auto").get_attribute("data-card")
        == (trick["cards"][place - 1])
    )
    assert pg.locator("#player .pl-auto").inner_text() == (
        f"A default move: the referee played for seat 1 ({names[1]}), which struck out at"
        " hand 1, trick 2: the referee makes its moves for the rest of the game."
    )
    # The last hand's result closes the game.
    pg.keyboard.press("End")
    last = rec["hands"][-1]
    assert (
        pg.locator("#player .pl-result")
        .inner_text()
        .endswith(f"totals {' · '.join(map(str, last['scores']))}. The game is over.")
    )
    watch.check()


def test_autoplay_advances_and_pauses(replay: Any, page: Any) -> None:
    out, _ = replay
    pg, watch = page
    pg.goto((out / "games" / "1-r1-t0-k1.html").as_uri() + "#h=2&t=5&c=1&seat=open")
    assert at(pg) == (2, 5, 1)
    pg.locator('#player select[data-control="speed"]').select_option("150")
    pg.locator('#player button[data-action="play"]').click()
    pg.wait_for_function(
        "() => Number(document.querySelector('#player').dataset.trick) >= 7", timeout=0
    )
    pg.locator('#player button[data-action="play"]').click()
    assert pg.locator('#player button[data-action="play"]').inner_text() == "Play"
    stopped = at(pg)
    pg.wait_for_timeout(600)
    assert at(pg) == stopped
    # Autoplay stops by itself at the game's last card, and P plays again from the start.
    pg.keyboard.press("End")
    pg.keyboard.press("ArrowLeft")
    pg.keyboard.press("ArrowLeft")
    pg.keyboard.press("p")
    pg.wait_for_function(
        "() => document.querySelector('#player button[data-action=\"play\"]')"
        ".textContent === 'Play'",
        timeout=0,
    )
    assert at(pg) == (3, 13, 4)
    pg.keyboard.press("p")
    pg.wait_for_function("() => document.querySelector('#player').dataset.hand === '1'")
    pg.keyboard.press("p")
    assert pg.locator('#player button[data-action="play"]').inner_text() == "Play"
    watch.check()


def test_the_replay_reads_fully_without_javascript(replay: Any, page_no_js: Any) -> None:
    out, records = replay
    pg, watch = page_no_js
    pg.goto((out / "entrants" / "3-fay.html").as_uri())
    pg.locator("#faults a.moment").first.click()
    rec = records[0]
    assert pg.locator("h1").inner_text() == f"Game {rec['game_id']}"
    # No player: the fault's row is the target, and every table is there.
    assert not pg.locator("#player").is_visible()
    target = pg.locator("tr:target")
    seat = rec["seats"].index("fay")
    assert target.get_attribute("id") == "fault-0"
    assert ILLEGAL in target.inner_text()
    for h in rec["hands"]:
        n = h["hand_number"]
        rows = pg.locator(f"#tricks-{n} tbody tr")
        assert rows.count() == 13
        first = rows.first.locator("td")
        t = h["tricks"][0]
        shown_cards = [first.nth(2 + s).inner_text().rstrip("d") for s in range(4)]
        expected = ["" for _ in range(4)]
        for k, c in enumerate(t["cards"]):
            expected[(t["leader"] + k) % 4] = ("10" if c[0] == "T" else c[0]) + SUITS[c[1]]
        assert shown_cards == expected
    # The CSS view switch still hides what the seat did not see.
    pg.locator(f'label[for="view-{seat}"]').click()
    other = (seat + 2) % 4
    dealt = pg.locator(f"#deal-1 tbody tr >> nth={other}").locator("td").nth(1)
    assert dealt.locator(".masked").inner_text() == "13 cards, not seen"
    assert not dealt.locator(".cards").is_visible()
    watch.check()


def test_a_hostile_name_cannot_leave_the_json(page: Any, tmp_path: Path) -> None:
    from test_report_escape import IMG, SCRIPT, TEXTAREA, hostile_report

    out = tmp_path / "hostile"
    _, records = hostile_report(out)
    pg, watch = page
    rec = records[0]
    pg.goto((out / "games" / "0-r1-t0-k0.html").as_uri())
    assert pg.evaluate("document.scripts.length") == 2
    assert pg.evaluate("document.querySelectorAll('img, textarea, iframe, b').length") == 0
    data = json.loads(pg.locator("#replay-data").text_content())
    assert data["seats"] == rec["seats"]
    names = pg.locator("#player .pl-seat .pl-name span").all_inner_texts()
    assert sorted(names) == sorted(rec["seats"])
    assert SCRIPT in names and IMG in names and TEXTAREA in names
    seat = rec["seats"].index(SCRIPT)
    pg.locator(f'#player button[data-action="seat-{seat}"]').click()
    pg.locator('#player button[data-action="fault-0"]').click()
    assert f"played {IMG} {TEXTAREA}" in pg.locator("#player .pl-fault").inner_text()
    watch.check()


def test_screenshot_of_the_player(replay: Any, page: Any) -> None:
    out, _ = replay
    pg, watch = page
    pg.goto((out / "games" / "0-r1-t0-k0.html").as_uri() + "#h=1&t=6&c=3&seat=1")
    assert at(pg) == (1, 6, 3)
    # The README's picture (docs/replay-player.png) is this shot, copied by hand.
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / "report-replay-player.png"
    pg.locator("#player").screenshot(path=str(path))
    assert path.stat().st_size > 10_000
    watch.check()


def test_many_faults_get_at_most_thirty_buttons(page: Any, tmp_path: Path) -> None:
    settings = TournamentSettings(seed=2, rounds=1, hands=2, target_score=None)
    records = synthesize(NAMES, settings)
    rec = records[0]
    for k in range(35):
        fault = Fault(0, rec["seats"][0], "timeout", f"late {k}", 1 + k % 2, 1 + k % 13, "play", k)
        rec["faults"].append(fault.to_json())
    entrants = [{"name": n, "command": "x", "cwd": "."} for n in NAMES]
    write_outputs(tmp_path, {**settings.to_json(), "entrants": entrants}, NAMES, records, 4)
    pg, watch = page
    pg.goto((tmp_path / "games" / "0-r1-t0-k0.html").as_uri())
    assert pg.locator("#player .pl-fault-link").count() == 30
    assert (
        pg.locator("#player .pl-faults")
        .inner_text()
        .endswith("and 5 more in the Faults table below")
    )
    pg.locator('#player button[data-action="fault-29"]').click()
    trick = rec["hands"][1]["tricks"][29 % 13]  # fault 29: hand 2, trick 4
    assert at(pg) == (2, 4, (0 - trick["leader"]) % 4 + 1)
    # Faults 3 and 29 are both at hand 2, trick 4: both are marked there.
    texts = pg.locator("#player .pl-fault").all_inner_texts()
    assert [t.rsplit(" — ", 1)[1] for t in texts] == ["late 3", "late 29"]
    watch.check()
