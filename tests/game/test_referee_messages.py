"""Every message the referee sends is valid under protocol/schema.json, and a seat
only ever sees its own cards (PROTOCOL.md, "What a seat may see")."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from conftest import BOTS, load_outputs, run_arena

from arena.protocol.codec import check_referee_message


def test_messages_validate_and_views_are_private(tmp_path: Path, open_tmp: Path) -> None:
    logs = {name: open_tmp / f"{name}.jsonl" for name in "abcd"}
    for log in logs.values():  # each bot process may run as its own user
        log.touch(mode=0o666)
        log.chmod(0o666)
    entrants = [f"{name}={BOTS / 'recorder.py'} {log}" for name, log in logs.items()]
    out = tmp_path / "out"
    code = run_arena(
        [
            "run",
            *entrants,
            "--hands",
            "1",
            "--rounds",
            "2",
            "--seed",
            "3",
            "--jobs",
            "1",
            "--out",
            str(out),
            "--quiet",
            "--no-sandbox",  # the recorders write logs outside their folders: no seal
        ]
    )
    assert code == 0
    results, records = load_outputs(out)
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    games = {r["game_id"]: r for r in records}
    assert len(games) == 8
    for log in logs.values():
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        by_pid: dict[int, list[dict]] = defaultdict(list)
        for entry in lines:
            check_referee_message(entry["msg"])
            by_pid[entry["pid"]].append(entry["msg"])
        # Processes are reused along a chain: each plays both rounds (rotation
        # k starts at round 1 + k mod 2, so the rotations start on different deals).
        assert len(by_pid) == 4
        for msgs in by_pid.values():
            assert msgs[0]["type"] == "hello"
            starts = [m for m in msgs if m["type"] == "game_start"]
            rounds = [games[m["game_id"]]["round"] for m in starts]
            rotation = games[starts[0]["game_id"]]["rotation"]
            assert rounds == ([1, 2] if rotation % 2 == 0 else [2, 1])
            assert msgs[-1]["type"] == "bye"
            check_privacy(msgs, games)


def check_privacy(msgs: list[dict], games: dict[str, dict]) -> None:
    game = seat = None
    hand_no = 0
    for m in msgs:
        if m["type"] == "game_start":
            game, seat = games[m["game_id"]], m["seat"]
            assert game["seats"][seat] == m["players"][seat]
            continue
        if game is None or m["type"] in ("hello", "bye"):
            continue
        hand_no = m.get("hand_number", hand_no)
        hand = game["hands"][hand_no - 1] if hand_no else None
        own_dealt = set(hand["dealt"][seat]) if hand else set()
        own_passed = set(hand["passes"][seat]) if hand and hand["passes"] else set()
        received = set()
        if hand and hand["passes"]:
            offset = {"left": 1, "right": 3, "across": 2}[hand["direction"]]
            received = set(hand["passes"][(seat - offset) % 4])
        visible = own_dealt | received
        if m["type"] == "deal":
            assert m["hand"] == hand["dealt"][seat]
        if m["type"] in ("pass", "deal"):
            assert set(m["hand"]) <= own_dealt
        if m["type"] == "passed":
            assert set(m["received"]) == received
        if m["type"] == "play":
            played = {c["card"] for t in m["tricks"] for c in t["cards"]} | {
                c["card"] for c in m["trick"]
            }
            assert set(m["hand"]) <= visible - own_passed
            assert set(m["legal"]) <= set(m["hand"])
            if m["passed"] is not None:
                assert set(m["passed"]["cards"]) == own_passed
                assert set(m["received"]["cards"]) == received
            # Nothing else in the message names a card beyond what is visible or played.
            text = json.dumps({k: v for k, v in m.items() if k not in ("game_id",)})
            for card in {c for h in hand["dealt"] for c in h} - visible - played - own_passed:
                assert f'"{card}"' not in text
