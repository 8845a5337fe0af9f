"""The replay player's data (no browser): the game as JSON in the page,
escaped so no bot text leaves its script element; where each fault happened;
the entrant page's links to those moments."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import FaultJSON
from arena.report.outputs import (
    SCRIPT_FILE,
    fault_moment,
    json_script,
    moment_fragment,
    replay_data,
    seat_out,
    write_outputs,
)
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

BREAKOUT = "</script><script>alert(1)</script><!--"
NAMES = [BREAKOUT, "bob", "cy", "dee"]
DATA = re.compile(r'<script type="application/json" id="replay-data">([^<]*)</script>')


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("player")
    settings = TournamentSettings(seed=4, rounds=1, hands=2, target_score=None)
    records = synthesize(NAMES, settings, faults={BREAKOUT: f"played {BREAKOUT}"})
    rec = records[0]
    rec["faults"].append(Fault(1, "bob", "timeout", "no answer", 1, None, "pass", 2).to_json())
    rec["faults"].append(Fault(2, "cy", "crashed", "exit 1", None, None, "hello", 0).to_json())
    rec["faults"].append(Fault(3, "dee", "timeout", "late", 1, 5, "play", 40).to_json())
    entrants = [{"name": n, "command": "x", "cwd": "."} for n in NAMES]
    write_outputs(out, {**settings.to_json(), "entrants": entrants}, NAMES, records, len(records))
    return out, records


def test_json_script_cannot_end_its_element() -> None:
    value = {"name": BREAKOUT, "amp": "a & b", "lines": "x\u2028y\u2029z", "card": "10♥"}
    text = str(json_script(value))
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert "\\u003c/script\\u003e" in text
    assert json.loads(text) == value


def test_fault_moments(game: Any) -> None:
    _, records = game
    rec = records[0]
    hand = rec["hands"][0]
    faults = rec["faults"]
    # The synthetic illegal play of seat 0 on trick 1: its place from the leader.
    illegal = faults[0]
    assert (illegal["seat"], illegal["trick_number"]) == (0, 1)
    leader = hand["tricks"][0]["leader"]
    assert fault_moment(illegal, rec) == (1, 1, (0 - leader) % 4 + 1)
    assert fault_moment(faults[1], rec) == (1, 0, 1)  # a pass: the pass step (R3)
    assert fault_moment(faults[2], rec) == (1, 0, 0)  # the handshake: the first deal
    trick5 = hand["tricks"][4]
    assert fault_moment(faults[3], rec) == (1, 5, (3 - trick5["leader"]) % 4 + 1)
    assert fault_moment({**faults[3], "hand_number": 9}, rec) is None
    assert fault_moment(faults[3], {**rec, "hands": []}) is None
    assert moment_fragment((1, 5, 2), 3) == "#h=1&t=5&c=2&seat=3"
    assert moment_fragment((2, 0, 0), None) == "#h=2&t=0&c=0&seat=open"


def test_replay_data_is_the_record(game: Any) -> None:
    out, records = game
    rec = records[0]
    data = replay_data(rec)
    assert data["seats"] == rec["seats"]
    assert len(data["hands"]) == 2
    h = data["hands"][0]
    assert h["n"] == 1 and h["dir"] == rec["hands"][0]["direction"]
    assert h["dealt"] == rec["hands"][0]["dealt"]
    assert h["passes"] == rec["hands"][0]["passes"]
    assert h["tricks"][0] == [
        rec["hands"][0]["tricks"][0][k] for k in ("leader", "cards", "winner", "points")
    ]
    assert [h["points"] for h in data["hands"]] == [h["points"] for h in rec["hands"]]
    assert [h["scores"] for h in data["hands"]] == [h["scores"] for h in rec["hands"]]
    assert [h["moon"] for h in data["hands"]] == [h["moon"] for h in rec["hands"]]
    assert [f["reason"] for f in data["faults"]] == ["illegal", "timeout", "crashed", "timeout"]
    # Only the failed handshake gives the rest of the seat's game to default moves.
    assert [f["out"] for f in data["faults"]] == [None, None, "failed its handshake", None]
    # Default moves: the illegal play, the pass timeout, and every move of the
    # crashed seat 2 (it failed its handshake) from the first hand on.
    assert data["auto"]["passes"] == [[1, 1], [1, 2], [2, 2]]
    assert [1, 1, 0] in data["auto"]["plays"] and [1, 5, 3] in data["auto"]["plays"]
    assert sum(1 for p in data["auto"]["plays"] if p[2] == 2) == 26
    # The page holds exactly this, once, with the name intact and no markup.
    page = (out / "games" / "0-r1-t0-k0.html").read_text(encoding="utf-8")
    found = DATA.findall(page)
    assert len(found) == 1
    assert json.loads(found[0]) == json.loads(json.dumps(data))
    assert page.count("<script") == 2
    assert '<script src="../replay.js"></script>' in page
    assert (out / SCRIPT_FILE).read_text(encoding="utf-8").startswith("/* hearts-arena replay")


def test_entrant_fault_links_point_at_the_fault(game: Any) -> None:
    out, records = game
    page = (out / "entrants" / "0-script-script-alert-1-script.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="moment" href="([^"]+)">watch</a>', page)
    games = [r for r in records if BREAKOUT in r["seats"]]
    assert len(links) == len(games) == 4
    # In game 0 the entrant's fault is the record's fault 0.
    assert links[0] == "../games/0-r1-t0-k0.html#fault-0"
    for link, rec in zip(links, games, strict=True):
        k = int(link.rsplit("#fault-", 1)[1])
        assert rec["faults"][k]["entrant"] == BREAKOUT
    # The game page has the matching row, and a link to its moment.
    game = (out / "games" / "0-r1-t0-k0.html").read_text(encoding="utf-8")
    rec = records[0]
    place = (0 - rec["hands"][0]["tricks"][0]["leader"]) % 4 + 1
    assert f'<tr id="fault-0"><td><a href="#h=1&amp;t=1&amp;c={place}&amp;seat=0"' in game
    assert '<tr id="fault-1"><td><a href="#h=1&amp;t=0&amp;c=1&amp;seat=1"' in game
    # The index's list of every fault links to the same moments.
    index = (out / "index.html").read_text(encoding="utf-8")
    for k in range(4):
        assert f'<a class="gid" href="games/0-r1-t0-k0.html#fault-{k}">r1-t0-k0</a>' in index


def test_seat_out_names_the_faults_that_end_a_seats_game() -> None:
    def fault(reason: FaultKind, detail: str, request: str) -> FaultJSON:
        return cast(FaultJSON, Fault(1, "bob", reason, detail, 1, 2, request, 5).to_json())

    assert seat_out(fault(FaultKind.CRASHED, "exited (exit code 3)", "play")) == "crashed"
    struck = "no reply within 200 ms; struck out after 3 consecutive timeouts: default moves"
    assert seat_out(fault(FaultKind.TIMEOUT, struck, "play")) == "struck out"
    assert seat_out(fault(FaultKind.TIMEOUT, "no reply within 200 ms", "play")) is None
    assert seat_out(fault(FaultKind.ILLEGAL, "played 2H", "play")) is None
    assert seat_out(fault(FaultKind.TIMEOUT, "no hello", "hello")) == "failed its handshake"


def test_the_player_script_is_small_plain_and_loads_nothing(game: Any) -> None:
    """Issue 18: the report's ``replay.js`` is the source file as written (no
    build step), small, and has no way to load anything from elsewhere."""
    out, _ = game
    source = Path(__file__).resolve().parents[2] / "arena" / "report" / "templates" / SCRIPT_FILE
    shipped = (out / SCRIPT_FILE).read_bytes()
    assert shipped == source.read_bytes()
    assert len(shipped) < 32 * 1024  # 25.6 KB when written, comments included
    text = shipped.decode("utf-8")
    for word in (
        "http:",
        "https:",
        "//cdn",
        "import(",
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "eval(",
        "innerHTML",
        "src =",
    ):
        assert word not in text, word
