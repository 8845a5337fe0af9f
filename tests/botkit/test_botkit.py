"""The bot kit (``arena.botkit``): card helpers, typed views built from real
referee messages, the protocol loop with its safety net, and the kit's sample
bot running from the package as a wheel installs it."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from arena import botkit as kit
from arena.core.rules import Hand, deal_hands


def test_card_helpers() -> None:
    assert kit.rank("2C") == 0 and kit.rank("AH") == 12 and kit.rank("TD") == 8
    assert kit.suit("QS") == "S" and kit.is_heart("3H") and not kit.is_heart("3D")
    assert [kit.points(c) for c in ("QS", "AH", "AS", "2C")] == [13, 1, 0, 0]
    assert kit.sort_cards(["AH", "2C", "QS", "TD", "3C"]) == ["2C", "3C", "TD", "QS", "AH"]
    assert kit.by_suit(["AH", "2C", "9H"]) == {"C": ["2C"], "D": [], "S": [], "H": ["9H", "AH"]}
    assert kit.highest(["2C", "KD", "KH", "9S"]) == "KH"  # equal ranks: hearts first
    assert kit.highest(["2C", "KD", "KH", "9S"], 2) == ["KH", "KD"]
    assert kit.lowest(["9C", "2D", "2H"]) == "2D"
    assert kit.default_pass(["2C", "AS", "KH", "KD", "3S"]) == ["AS", "KH", "KD"]
    played = (kit.Played(0, "5D"), kit.Played(1, "KD"), kit.Played(2, "AH"))
    assert kit.trick_winner(played) == kit.Played(1, "KD")
    with pytest.raises(ValueError, match="no cards"):
        kit.lowest([])


def _play_request(seat: int = 0) -> dict[str, Any]:
    """A real play request: hand 4 (hold) of a seeded deal, two tricks in."""
    hand = Hand.new(4, deal_hands("kit:4"))
    while not (hand.trick_number == 3 and len(hand.trick) == 1 and hand.turn == seat):
        if hand.is_over():
            raise AssertionError("no such position")
        hand.play(hand.legal_cards()[0])
    view = hand.view(seat)
    return {
        "type": "play", "id": 9, **view, "game_id": "g", "scores": [1, 2, 3, 4], "time_ms": 800,
    }  # fmt: skip


def test_play_view_from_a_real_request() -> None:
    for seat in range(4):
        try:
            msg = _play_request(seat)
        except AssertionError:
            continue
        view = kit._play_view(msg, None)
        assert view.seat == seat and view.trick_number == 3 and view.hand_number == 4
        assert view.legal == tuple(msg["legal"]) and view.hand == tuple(msg["hand"])
        assert not view.leading and view.led_suit == msg["trick"][0]["card"][1]
        assert view.winning == kit.Played(msg["trick"][0]["seat"], msg["trick"][0]["card"])
        assert len(view.tricks) == 2 and len(view.played) == 9
        assert view.passed is None and view.received is None  # a hold hand
        assert view.scores == (1, 2, 3, 4) and view.time_ms == 800
        return
    pytest.fail("no seat reached the position")


def run_kit(lines: list[dict[str, Any]], **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    source = io.StringIO("".join(json.dumps(m) + "\n" for m in lines))
    old = sys.stderr
    sys.stderr = err
    try:
        kit.run(stdin=source, stdout=out, **kwargs)
    finally:
        sys.stderr = old
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


HELLO = {"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 5000}
START = {"type": "game_start", "game_id": "g", "seat": 0, "players": ["a", "b", "c", "d"],
         "target_score": None, "hands": 1, "seed": 5}  # fmt: skip


def test_the_loop_answers_requests_and_stops_at_bye() -> None:
    hand = ["2C", "3C", "4C", "5D", "6D", "7S", "8S", "9H", "TH", "JH", "QH", "KH", "AH"]
    pass_req = {"type": "pass", "id": 2, "hand_number": 1, "direction": "left", "to": 1,
                "hand": hand, "time_ms": 1000}  # fmt: skip
    seen: list[str] = []

    class Mine(kit.Bot):
        name = "mine"
        version = "2"

        def on_game_start(self, game: kit.GameInfo) -> None:
            seen.append(f"start {game.seat} {game.seed}")

        def choose_pass(self, view: kit.PassView) -> list[str]:
            seen.append(f"pass to {view.to}")
            return list(view.hand[:3])

    replies, err = run_kit([HELLO, START, pass_req, {"type": "bye"}, HELLO], bot=Mine())
    assert replies == [
        {"type": "hello", "id": 1, "name": "mine", "version": "2"},
        {"type": "pass", "id": 2, "cards": ["2C", "3C", "4C"]},
    ]
    assert seen == ["start 0 5", "pass to 1"] and err == ""


def test_the_safety_net_replaces_bad_choices_and_logs_them() -> None:
    msg = _first_play_request()
    replies, err = run_kit(
        [msg, {**msg, "id": 10}],
        choose_play=lambda view: "XX" if view.legal else "",
        name="bad",
    )
    assert [r["card"] for r in replies] == [msg["legal"][0]] * 2
    assert "choose_play returned 'XX', not legal" in err

    def boom(view: kit.PlayView) -> str:
        raise RuntimeError("oops")

    replies, err = run_kit([msg], choose_play=boom)
    assert replies[0]["card"] == msg["legal"][0]
    assert "choose_play raised" in err and "RuntimeError: oops" in err
    # Without the net, the answer goes out as it is.
    replies, _ = run_kit([msg], choose_play=lambda view: "XX", fallback=False)
    assert replies[0]["card"] == "XX"


def _first_play_request() -> dict[str, Any]:
    hand = Hand.new(4, deal_hands("kit:first"))
    return {"type": "play", "id": 9, **hand.view(hand.turn), "game_id": "g",
            "scores": [0, 0, 0, 0], "time_ms": 1000}  # fmt: skip


def test_kit_bot_runs_from_the_installed_package_layout(open_tmp: Path) -> None:
    """A wheel installs sample_bots/ as arena/_sample_bots; the kit bot must
    import the kit from there, with no source checkout on the path."""
    site = open_tmp / "site"
    shutil.copytree(ROOT / "arena", site / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "sample_bots", site / "arena" / "_sample_bots")
    script = site / "arena" / "_sample_bots" / "kit_bot.py"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site)}
    lines = [HELLO, START, _first_play_request(), {"type": "bye"}]
    proc = subprocess.run(
        [sys.executable, "-S", str(script)],  # -S: no site-packages, no editable install
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        env=env,
        cwd=open_tmp,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert replies[0] == {
        "type": "hello",
        "id": 1,
        "name": "kit",
        "author": "hearts-arena samples",
        "version": "1",
    }
    assert replies[1]["card"] in lines[2]["legal"]
