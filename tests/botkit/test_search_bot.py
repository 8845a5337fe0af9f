"""The search sample bot (sample_bots/search_bot.py).

It is run as a real subprocess over pipes (hello, pass, play, bye) and through
``hearts-arena check``; its decision code is called in-process on positions
built by hand with exact expected cards, for determinism and for its time cap;
and its fast rollout is compared with the rules engine (the legal cards, R5-R9)
and with the heuristic bot it imitates. Rule ids refer to RULES.md, message
shapes to PROTOCOL.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from sample_bot_harness import SAMPLE_DIR, BotPipe, load_bot, run_match

from arena.core.cards import mask_of_names, names_of, parse_card
from arena.core.rules import Hand, Phase, deal_hands, default_pass, default_play, pass_target

BOT = SAMPLE_DIR / "search_bot.py"
RANKS = "23456789TJQKA"
SUITS = "CDSH"


@pytest.fixture(scope="module")
def search() -> Any:
    # Untimed: its answers depend on the seed and budget alone, not on the machine's load.
    return load_bot("search", "tests", untimed=True)


# -- positions -------------------------------------------------------------------


def play_request(hand: Hand, rid: int = 3, time_ms: int = 1000) -> dict[str, Any]:
    msg = hand.view(hand.turn)
    msg.update(type="play", id=rid, game_id="t-search", scores=[0, 0, 0, 0], time_ms=time_ms)
    return msg


def midgame(seed: str = "search-bot-test", trick: int = 3) -> Hand:
    """Hand 1 after the default passes, played by default moves up to a seat that
    follows suit with a choice of cards that are not interchangeable (the search
    has work to do) on trick ``trick`` or later."""
    hand = Hand.new(1, deal_hands(seed))
    hand.apply_passes([default_pass(m) for m in hand.hands])
    search = load_bot("search", "midgame")
    while True:
        if hand.trick and hand.trick_number >= trick and len(hand.legal_cards()) >= 2:
            k = search.Knowledge(play_request(hand))
            if len(search.candidate_groups(k, hand.legal_mask())) >= 2:
                return hand
        hand.play(default_play(hand.legal_mask()))


def done_trick(leader: int, *cards: str) -> dict[str, Any]:
    played = [{"seat": (leader + i) % 4, "card": c} for i, c in enumerate(cards)]
    led = cards[0][1]
    win = max((p for p in played if p["card"][1] == led), key=lambda p: RANKS.index(p["card"][0]))
    pts = sum(13 if c == "QS" else (1 if c[1] == "H" else 0) for c in cards)
    return {"leader": leader, "cards": played, "winner": win["seat"], "points": pts}


def position(
    seat: int, hand: list[str], tricks: list[dict[str, Any]], trick: list[str], time_ms: int = 1000
) -> dict[str, Any]:
    """The ``play`` request of ``seat`` on a hold hand after ``tricks``, with ``trick`` so far."""
    order = {c: i for i, c in enumerate(r + s for s in SUITS for r in RANKS)}
    seen = [p["card"] for t in tricks for p in t["cards"]] + trick + hand
    assert len(seen) == len(set(seen)) and len(hand) == 13 - len(tricks)
    leader = tricks[-1]["winner"] if tricks else seat
    assert (leader + len(trick)) % 4 == seat
    legal = [c for c in hand if trick and c[1] == trick[0][1]] or list(hand)
    points = [0, 0, 0, 0]
    for t in tricks:
        points[t["winner"]] += t["points"]
    broken = any(
        p["card"][1] == "H" != t["cards"][0]["card"][1]
        for t in [*tricks, {"cards": [{"card": c} for c in trick]}]
        for p in t["cards"]
        if t["cards"]
    )
    return {
        "type": "play", "id": 9, "game_id": "t", "seat": seat, "hand_number": 4,
        "trick_number": len(tricks) + 1, "leader": leader,
        "trick": [{"seat": (leader + i) % 4, "card": c} for i, c in enumerate(trick)],
        "tricks": tricks, "hand": sorted(hand, key=order.__getitem__),
        "legal": sorted(legal, key=order.__getitem__), "hearts_broken": broken,
        "passed": None, "received": None, "hand_points": points,
        "scores": [0, 0, 0, 0], "time_ms": time_ms,
    }  # fmt: skip


# Two quiet club tricks: seat 1 led the 2C and seat 0 won with the AC; seat 0 led
# the 3C and seat 1 won with the KC. No points taken.
QUIET = [done_trick(1, "2C", "4C", "5C", "AC"), done_trick(0, "3C", "KC", "6C", "7C")]


# -- over pipes ------------------------------------------------------------------


def search_pipe(*args: str, python_flags: tuple[str, ...] = ()) -> BotPipe:
    """The search bot as a subprocess, run from its folder."""
    return BotPipe([sys.executable, *python_flags, str(BOT), *args], cwd=SAMPLE_DIR)


@pytest.mark.parametrize("flags", [(), ("-S",)], ids=["installed", "source-tree"])
def test_answers_over_pipes_and_exits_on_bye(flags: tuple[str, ...]) -> None:
    # "-S" hides site-packages: `import arena` then works only through the bot's
    # fallback to the source tree (the repository root two folders up).
    later = midgame()
    seat = later.turn
    hand = Hand.new(1, deal_hands("search-bot-test"))
    bot = search_pipe(python_flags=flags)
    try:
        hello = bot.ask({"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 10000})
        assert hello["type"] == "hello" and hello["id"] == 1 and hello["name"] == "search"
        bot.send(
            {
                "type": "game_start",
                "game_id": "t-search",
                "seat": seat,
                "players": ["a", "b", "c", "d"],
                "target_score": 100,
                "hands": None,
                "seed": 7,
                "some_future_field": 1,
            }
        )
        bot.send(
            {
                "type": "deal",
                "hand_number": 1,
                "hand": names_of(hand.hands[seat]),
                "pass_direction": "left",
                "scores": [0, 0, 0, 0],
            }
        )
        bot.send("not json")
        bot.send({"type": "weather"})
        request = {
            "type": "pass",
            "id": 2,
            "hand_number": 1,
            "direction": "left",
            "to": pass_target(seat, hand.direction),
            "hand": names_of(hand.hands[seat]),
            "time_ms": 1000,
        }
        passed = bot.ask(request)
        assert passed["type"] == "pass" and passed["id"] == 2
        assert len(set(passed["cards"])) == 3 and set(passed["cards"]) <= set(request["hand"])
        play = play_request(later, 3)
        reply = bot.ask(play)
        assert reply["type"] == "play" and reply["id"] == 3
        assert reply["card"] in play["legal"]
        code, out, err = bot.close()
    finally:
        bot.kill()
    assert code == 0, err
    assert out == "" and err == ""


def test_runs_from_the_installed_package_layout(open_tmp: Path) -> None:
    """A wheel installs sample_bots/ as arena/_sample_bots: the bot imports the
    installed ``arena`` and the heuristic bot beside it, with no source checkout."""
    site = open_tmp / "site"
    shutil.copytree(ROOT / "arena", site / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SAMPLE_DIR, site / "arena" / "_sample_bots")
    script = site / "arena" / "_sample_bots" / "search_bot.py"
    # A time_ms the time cap never reaches (the process is compared with an untimed
    # in-process bot, whatever the machine's load).
    play = play_request(midgame(), 3, time_ms=10**8)
    lines = [
        {"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 10000},
        {"type": "game_start", "game_id": "g", "seat": play["seat"], "players": list("abcd"),
         "target_score": None, "hands": 1, "seed": 3},
        play,
        {"type": "bye"},
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-S", str(script)],  # -S: no site-packages, no editable install
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site)},
        cwd=script.parent,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 3]
    assert replies[1]["card"] in play["legal"]
    # The same answer as in-process (the heuristic bot was found: it sets the default card).
    bot = load_bot("search", "layout", untimed=True)
    bot.handle(lines[1])
    assert replies[1]["card"] == bot.choose_play(play)
    assert proc.stderr == ""


class _Ticking:
    """A clock that moves on at every reading: with ``time_ms`` 0 the deadline is the
    start, so the search stops after its first world."""

    now = 0.0

    @classmethod
    def perf_counter(cls) -> float:
        cls.now += 1.0
        return cls.now


def test_the_time_cap_stops_the_search_over_pipes(monkeypatch: Any) -> None:
    """With ``time_ms`` 0 the time cap (half of ``time_ms``) has passed after the first
    world whatever the machine's speed, so the bot over pipes answers what one world
    gives, and a position is chosen where that differs from the uncapped search's
    answer: a bot that ignored the cap would answer the latter (no wall time measured)."""
    one_world = load_bot("search", "one-world")
    monkeypatch.setattr(one_world, "time", _Ticking)
    uncapped = load_bot("search", "uncapped", untimed=True)
    for seed in range(40):
        play = play_request(midgame(seed=f"time-cap-{seed}", trick=2), 2, time_ms=0)
        for bot_module in (one_world, uncapped):
            bot_module.handle({"type": "game_start", "seed": seed})
        capped_card = one_world.choose_play(play, budget=10**9)
        if capped_card != uncapped.choose_play(play, budget=10**9):
            break
    else:
        pytest.fail("no position where one world and the full search disagree")
    bot = search_pipe("--budget", "1000000000")
    try:
        bot.ask({"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 10000})
        bot.send({"type": "game_start", "game_id": "g", "seat": play["seat"],
                  "players": list("abcd"), "target_score": None, "hands": 1, "seed": seed})  # fmt: skip
        reply = bot.ask(play)
        assert reply["card"] == capped_card
        code, _, err = bot.close()
    finally:
        bot.kill()
    assert code == 0, err


# -- in-process decisions ----------------------------------------------------------


def test_deterministic_for_its_seed(search: Any) -> None:
    msg = play_request(midgame(trick=2))
    search.handle({"type": "game_start", "seed": 11})
    first = [search.choose_play(msg) for _ in range(2)]
    other = load_bot("search", "determinism", untimed=True)
    other.handle({"type": "game_start", "seed": 11})
    assert other.choose_play(msg) == first[0] == first[1]


def test_deterministic_over_whole_hands() -> None:
    # The harness replays the same deals with the same game seeds: the same points.
    # One deal: its four rotations seat the search bot once at every seat.
    field = ["search", "heuristic", "random", "low"]
    a = run_match(field, deals=1, prefix="search-det", untimed=True)
    b = run_match(field, deals=1, prefix="search-det", untimed=True)
    assert {n: s.per_deal for n, s in a.items()} == {n: s.per_deal for n, s in b.items()}
    assert a["search"].hands == 4


def test_respects_a_tiny_time_limit_in_process(search: Any, monkeypatch: Any) -> None:
    # A clock that moves 10 ms per reading: with time_ms=50 the search may use
    # half (25 ms), so it stops at the third world although its budget is huge.
    readings: list[float] = []

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            readings.append(len(readings) * 0.010)
            return readings[-1]

    monkeypatch.setattr(search, "time", Clock)
    msg = play_request(midgame(trick=2), time_ms=50)
    search.handle({"type": "game_start", "seed": 5})
    card = search.choose_play(msg, budget=10**9)
    assert card in msg["legal"]
    assert len(readings) == 4  # the start, then one reading after each of three worlds


def test_ducks_under_the_queen(search: Any) -> None:
    # Seat 1 leads the 8D, seat 2 is void and drops the queen: the 5D ducks, any other
    # diamond takes 13 points.
    msg = position(
        3, ["8C", "9C", "5D", "TD", "KD", "AD", "3S", "4S", "2H", "3H", "4H"], QUIET, ["8D", "QS"]
    )
    assert search.choose_play(msg) == "5D"


def test_dumps_the_queen_when_void(search: Any) -> None:
    msg = position(
        2, ["8C", "9C", "TC", "JC", "QC", "3S", "4S", "QS", "2H", "KH", "AH"], QUIET, ["5D"]
    )
    assert search.choose_play(msg) == "QS"


def test_keeps_a_sure_loser_when_leading(search: Any) -> None:
    # On lead with the 2S and the AS, the queen still out: the 2S cannot win the
    # trick; the AS would catch the queen.
    msg = position(1, ["8C", "9C", "TC", "8D", "9D", "TD", "JD", "2S", "AS", "5H", "6H"], QUIET, [])
    msg["legal"] = [c for c in msg["legal"] if c[1] != "H"]  # R9: hearts not broken
    assert search.choose_play(msg) != "AS"


def test_pass_budget_0_passes_like_the_heuristic_bot(search: Any) -> None:
    # The pass search's default candidate, and its candidates' order, come from here.
    heuristic = load_bot("heuristic", "search-pass")
    for i in range(20):
        for dealt in deal_hands(f"search-pass-{i}"):
            msg = {
                "type": "pass",
                "id": 1,
                "hand": names_of(dealt),
                "direction": "left",
                "to": 1,
                "hand_number": 1,
                "time_ms": 1000,
            }
            assert search.choose_pass(msg, 0) == sorted(heuristic.choose_pass(msg), key=parse_card)


def test_legal_cards_in_whole_hands() -> None:
    stats = run_match(["search", "random", "heuristic", "low"], deals=2, prefix="search-legal")
    assert stats["search"].hands == 8  # the harness checks every card against the rules engine


# -- the rollout -------------------------------------------------------------------


def test_rollout_legal_cards_match_the_rules_engine(search: Any) -> None:
    rng = random.Random(5)
    for d in range(200):
        hand = Hand.new(d % 4 + 1, deal_hands(f"rollout-legal-{d}"))
        if hand.phase is Phase.PASS:
            hand.apply_passes([default_pass(m) for m in hand.hands])
        while not hand.is_over():
            mine = search.rollout_legal(
                hand.hands[hand.turn], hand.trick, hand.trick_number, hand.hearts_broken
            )
            assert mine == hand.legal_mask()
            hand.play(rng.choice(hand.legal_cards()))


def test_rollout_plays_as_the_heuristic_bot(search: Any) -> None:
    # On hold hands (no passes: the heuristic's one use of the passed queen does not
    # arise) the rollout takes the same points as four heuristic bots.
    heuristic = load_bot("heuristic", "rollout")
    for d in range(40):
        hand = Hand.new(4, deal_hands(f"rollout-replica-{d}"))
        dealt = list(hand.hands)
        while not hand.is_over():
            hand.play(parse_card(heuristic.choose_play(play_request(hand))))
        pts = [0, 0, 0, 0]
        leader = next(s for s in range(4) if dealt[s] & 1)
        search.playout(dealt.copy(), pts, [0, 0, 0, 0], 0, False, 1, leader, [], 0, 0)
        assert pts == hand.taken_points, d


def test_sampled_worlds_agree_with_what_the_seat_knows(search: Any) -> None:
    rng = random.Random(3)
    for d in range(30):
        hand = Hand.new(d % 3 + 1, deal_hands(f"worlds-{d}"))  # always a pass hand
        hand.apply_passes([default_pass(m) for m in hand.hands])
        stop = rng.randrange(4, 45)
        for _ in range(stop):
            hand.play(rng.choice(hand.legal_cards()))
        me = hand.turn
        msg = play_request(hand)
        k = search.Knowledge(msg)
        passed = mask_of_names(msg["passed"]["cards"])
        for _ in range(20):
            world = k.sample(rng)
            assert len(world) == 4
            assert world[me] == hand.hands[me]
            for s in range(4):
                assert world[s].bit_count() == hand.hands[s].bit_count()
                # a seat that did not follow a suit holds none of it
                assert not world[s] & k.void[s]
            assert world[0] | world[1] | world[2] | world[3] == sum(hand.hands)
            to = msg["passed"]["to"]
            assert passed & ~hand.played & world[to] == passed & ~hand.played


def test_the_pass_search_returns_three_own_cards_deterministically(search: Any) -> None:
    # Off by default (--pass-budget): a small budget here, seeded by the game seed.
    search.handle({"type": "game_start", "seed": 5})
    for i, direction in enumerate(("left", "right", "across")):
        dealt = deal_hands(f"search-pass-search-{i}")[0]
        msg = {"type": "pass", "id": 1, "hand": names_of(dealt), "direction": direction,
               "to": 1, "hand_number": i + 1, "time_ms": 1000}  # fmt: skip
        cards = search.choose_pass(msg, 2000)
        assert len(set(cards)) == 3 and set(cards) <= set(msg["hand"])
        assert search.choose_pass(msg, 2000) == cards
