"""Checks of the sample bots in sample_bots/.

Each bot is run as a real subprocess and talked to over pipes (hello, a pass
request, a play request, notifications it must ignore, bye), and the
decision functions of the heuristic bot are called in-process on positions
built by hand, with exact expected cards. Rule ids (R5 ...) refer to
RULES.md; the message shapes are those of PROTOCOL.md.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

import pytest
from sample_bot_harness import SAMPLE_DIR, BotPipe, load_bot, run_match

from arena.core.cards import names_of
from arena.core.rules import Hand, deal_hands, default_pass, default_play, pass_target

BOTS = ("random", "low", "duck", "heuristic")
RANKS = "23456789TJQKA"
SUITS = "CDSH"


# -- a consistent position from the rules engine ------------------------------


def pass_request(hand: Hand, seat: int, rid: int) -> dict[str, Any]:
    return {
        "type": "pass",
        "id": rid,
        "hand_number": hand.hand_number,
        "direction": hand.direction.value,
        "to": pass_target(seat, hand.direction),
        "hand": names_of(hand.hands[seat]),
        "time_ms": 1000,
    }


def play_request(hand: Hand, rid: int) -> dict[str, Any]:
    msg = hand.view(hand.turn)
    msg.update(type="play", id=rid, game_id="t-sample", scores=[0, 0, 0, 0], time_ms=1000)
    return msg


def midgame_position() -> tuple[Hand, int]:
    """Hand 1 after the default passes, played by default moves until a seat
    must follow suit with a choice of cards (R6): returns the hand and that seat."""
    hand = Hand.new(1, deal_hands("sample-bot-test"))
    hand.apply_passes([default_pass(m) for m in hand.hands])
    while True:
        legal = hand.legal_cards()
        if hand.trick and len(legal) >= 2 and hand.trick_number >= 2:
            return hand, hand.turn
        hand.play(default_play(hand.legal_mask()))


# -- talking to a bot process --------------------------------------------------


def bot_pipe(name: str) -> BotPipe:
    """A sample bot as a subprocess."""
    return BotPipe([sys.executable, str(SAMPLE_DIR / f"{name}_bot.py")])


@pytest.mark.parametrize("name", BOTS)
def test_bot_over_pipes(name: str) -> None:
    hand = Hand.new(1, deal_hands("sample-bot-test"))
    later, seat = midgame_position()  # the seat whose play request comes below
    bot = bot_pipe(name)
    try:
        hello = bot.ask({"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 5000})
        assert hello["type"] == "hello"
        assert hello["id"] == 1
        assert isinstance(hello["name"], str) and hello["name"]

        # Notifications get no answer; unknown types, extra fields and junk lines are ignored.
        bot.send(
            {
                "type": "game_start",
                "game_id": "t-sample",
                "seat": seat,
                "players": list(BOTS),
                "target_score": 100,
                "hands": None,
                "seed": 7,
                "some_future_field": {"x": 1},
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
        bot.send({"type": "weather", "sunny": True})
        bot.send("this is not json")
        bot.send("[1, 2, 3]")

        request = pass_request(hand, seat, 2)
        request["extra"] = "ignored"
        passed = bot.ask(request)
        assert passed["type"] == "pass"
        assert passed["id"] == 2
        cards = passed["cards"]
        assert len(cards) == 3 and len(set(cards)) == 3  # R3
        assert set(cards) <= set(request["hand"])

        play = play_request(later, 3)
        bot.send(
            {
                "type": "passed",
                "hand_number": 1,
                "from": play["received"]["from"],
                "received": play["received"]["cards"],
                "hand": names_of(later.dealt[seat]),
            }
        )
        reply = bot.ask(play)
        assert reply["type"] == "play"
        assert reply["id"] == 3
        assert reply["card"] in play["legal"]

        bot.send({"type": "bye"})
        code, out, err = bot.finish()
    finally:
        if bot.proc.poll() is None:
            bot.proc.kill()
            bot.proc.wait()
    assert code == 0, err
    assert out == ""  # nothing after bye, and nothing ever for a notification
    assert err == ""


@pytest.mark.parametrize("name", BOTS)
def test_bot_exits_on_end_of_input(name: str) -> None:
    bot = bot_pipe(name)
    assert (
        bot.ask({"type": "hello", "id": 5, "protocol": "hearts-arena/1", "time_ms": 5000})["id"]
        == 5
    )
    assert bot.proc.stdin is not None
    bot.proc.stdin.close()
    assert bot.proc.wait(timeout=60) == 0  # a hang guard, not a time bound


@pytest.mark.parametrize("name", BOTS)
def test_bot_uses_only_the_standard_library(name: str) -> None:
    tree = ast.parse((SAMPLE_DIR / f"{name}_bot.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_random_bot_is_deterministic_per_seed() -> None:
    position, _ = midgame_position()
    hand = Hand.new(1, deal_hands("sample-bot-test"))

    def run(seed: int) -> tuple[list[str], list[str]]:
        bot = load_bot("random", f"det{seed}")
        bot.handle({"type": "game_start", "seed": seed})
        passes = bot.choose_pass(pass_request(hand, 0, 1))
        plays = [bot.choose_play(play_request(position, 2)) for _ in range(8)]
        return passes, plays

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_low_bot_plays_lowest_rank_and_passes_highest() -> None:
    low = load_bot("low", "t")
    msg = {"legal": ["9C", "4D", "2S", "2H"], "trick": [], "hand": []}
    assert low.choose_play(msg) == "2S"  # lowest rank; 2S before 2H in legal order
    hand = ["2C", "KC", "5D", "KD", "3S", "QS", "2H", "KH", "AH", "4C", "6C", "7C", "8C"]
    assert sorted(low.choose_pass({"hand": hand})) == sorted(["AH", "KH", "KD"])


def test_low_bot_pass_is_the_referees_default_pass() -> None:
    low = load_bot("low", "default")
    for i in range(50):
        for dealt in deal_hands(f"low-pass-{i}"):
            assert sorted(low.choose_pass({"hand": names_of(dealt)})) == sorted(
                names_of(default_pass(dealt))
            )


def test_duck_bot_ducks_and_dumps() -> None:
    duck = load_bot("duck", "t")
    follow = {"legal": ["5D", "TD", "QD", "AD"], "trick": [{"seat": 1, "card": "JD"}]}
    assert duck.choose_play(follow) == "TD"
    void = {"legal": ["3C", "KC", "QS", "AH"], "trick": [{"seat": 1, "card": "JD"}]}
    assert duck.choose_play(void) == "QS"


def test_harness_smoke() -> None:
    stats = run_match(list(BOTS), deals=2, prefix="smoke")
    assert {s.hands for s in stats.values()} == {8}
    # Each deal's 4 hands add to 4 x 26, plus 52 per moon (R11, R12).
    total = round(sum(s.mean for s in stats.values()) * 4 * 2)
    moons = sum(s.moons for s in stats.values())
    assert total == 8 * 26 + 52 * moons


# -- the heuristic bot on positions built by hand ------------------------------


def rank(card: str) -> int:
    return RANKS.index(card[0])


def done_trick(leader: int, *cards: str) -> dict[str, Any]:
    """A finished trick record as the ``play`` request carries it (R10, R11)."""
    played = [{"seat": (leader + i) % 4, "card": c} for i, c in enumerate(cards)]
    led = cards[0][1]
    win = max((p for p in played if p["card"][1] == led), key=lambda p: rank(p["card"]))
    pts = sum(13 if c == "QS" else (1 if c[1] == "H" else 0) for c in cards)
    return {"leader": leader, "cards": played, "winner": win["seat"], "points": pts}


def position(
    seat: int,
    hand: list[str],
    tricks: list[dict[str, Any]],
    trick: list[str],
    legal: list[str] | None = None,
) -> dict[str, Any]:
    """The ``play`` request of ``seat`` after ``tricks``, with ``trick`` played so far.

    The leader is the last trick's winner (R10); ``legal`` defaults to the
    led suit if held, else the whole hand (R6, past trick 1).
    """
    all_cards = [c for t in tricks for p in t["cards"] for c in [p["card"]]] + trick + hand
    assert len(all_cards) == len(set(all_cards)), "a card appears twice"
    assert len(hand) == 13 - len(tricks)
    leader = tricks[-1]["winner"] if tricks else seat
    assert (leader + len(trick)) % 4 == seat, "not this seat's turn"
    if legal is None:
        legal = [c for c in hand if c[1] == trick[0][1]] or list(hand)
    points = [0, 0, 0, 0]
    for t in tricks:
        points[t["winner"]] += t["points"]
    broken = any(
        p["card"][1] == "H" != t["cards"][0]["card"][1] for t in tricks for p in t["cards"]
    )
    order = {c: i for i, c in enumerate(r + s for s in SUITS for r in RANKS)}
    return {
        "type": "play", "id": 9, "game_id": "t", "seat": seat, "hand_number": 4,
        "trick_number": len(tricks) + 1, "leader": leader,
        "trick": [{"seat": (leader + i) % 4, "card": c} for i, c in enumerate(trick)],
        "tricks": tricks, "hand": sorted(hand, key=order.__getitem__),
        "legal": sorted(legal, key=order.__getitem__), "hearts_broken": broken,
        "passed": None, "received": None, "hand_points": points,
        "scores": [0, 0, 0, 0], "time_ms": 1000,
    }  # fmt: skip


@pytest.fixture(scope="module")
def heuristic() -> Any:
    return load_bot("heuristic", "positions")


# Two quiet club tricks: seat 1 led the 2C (R5) and seat 0 won with the AC;
# then seat 0 led the 3C and seat 1 won with the KC. No points taken yet.
QUIET = [done_trick(1, "2C", "4C", "5C", "AC"), done_trick(0, "3C", "KC", "6C", "7C")]


def test_heuristic_dumps_queen_when_void(heuristic: Any) -> None:
    # Seat 1 leads a diamond; seat 2 has none and holds the queen (R6).
    msg = position(
        2, ["8C", "9C", "TC", "JC", "QC", "3S", "4S", "QS", "2H", "KH", "AH"], QUIET, ["5D"]
    )
    assert heuristic.choose_play(msg) == "QS"


def test_heuristic_dumps_top_heart_when_void_without_queen(heuristic: Any) -> None:
    msg = position(
        2, ["8C", "9C", "TC", "JC", "QC", "3S", "4S", "5S", "2H", "KH", "AH"], QUIET, ["5D"]
    )
    assert heuristic.choose_play(msg) == "AH"


def test_heuristic_ducks_under_the_winning_card(heuristic: Any) -> None:
    # Second to play after the jack of diamonds: the ten is the highest card that loses.
    msg = position(
        2, ["8C", "9C", "5D", "TD", "QD", "AD", "3S", "4S", "2H", "3H", "4H"], QUIET, ["JD"]
    )
    assert heuristic.choose_play(msg) == "TD"


def test_heuristic_ducks_last_when_points_are_on_the_trick(heuristic: Any) -> None:
    # Last to play, a heart thrown on the trick: duck under the jack, do not take it.
    msg = position(
        0,
        ["8C", "9C", "5D", "TD", "QD", "AD", "3S", "4S", "2H", "3H", "4H"],
        QUIET,
        ["8D", "JD", "5H"],
    )
    assert heuristic.choose_play(msg) == "TD"


def test_heuristic_takes_a_free_trick_with_its_top_card(heuristic: Any) -> None:
    # Last to play and no points on the trick: winning it costs nothing, so unload the ace.
    msg = position(
        0,
        ["8C", "9C", "5D", "TD", "QD", "AD", "3S", "4S", "2H", "3H", "4H"],
        QUIET,
        ["8D", "JD", "9D"],
    )
    assert heuristic.choose_play(msg) == "AD"


def test_heuristic_drops_queen_under_the_ace(heuristic: Any) -> None:
    msg = position(
        2, ["8C", "9C", "TC", "3S", "9S", "QS", "2H", "3H", "4H", "5H", "6H"], QUIET, ["AS"]
    )
    assert heuristic.choose_play(msg) == "QS"


# Seat 1 wins every trick; seat 3 feeds it the queen and three hearts.
MOON_TRICKS = [
    done_trick(0, "2C", "AC", "4C", "5C"),
    done_trick(1, "AD", "2D", "3D", "4D"),
    done_trick(1, "KD", "5D", "QS", "6D"),
    done_trick(1, "AS", "2S", "AH", "3S"),
    done_trick(1, "KS", "4S", "KH", "5S"),
    done_trick(1, "QD", "7D", "QH", "8D"),
]
MOON_HAND = ["6C", "7C", "8C", "9C", "2H", "TH", "JH"]


def test_heuristic_takes_a_heart_to_stop_a_moon(heuristic: Any) -> None:
    msg = position(0, MOON_HAND, MOON_TRICKS, ["9H", "3H", "4H"])
    assert msg["hand_points"] == [0, 16, 0, 0]
    # Otherwise this bot ducks with the 2H (next test); with a moon coming it
    # wins the heart trick.
    assert heuristic.choose_play(msg) == "JH"


def test_heuristic_ducks_the_same_trick_when_points_are_shared(heuristic: Any) -> None:
    # As above, but seat 2 took the AH with the AS: nobody can shoot the moon.
    tricks = [
        *MOON_TRICKS[:3],
        done_trick(1, "2S", "AS", "AH", "3S"),
        done_trick(2, "4S", "TC", "6S", "KS"),
        MOON_TRICKS[5],
    ]
    msg = position(0, ["6C", "7C", "8C", "9C", "2H", "TH", "JH"], tricks, ["9H", "3H", "4H"])
    assert msg["hand_points"] == [0, 14, 1, 0]
    assert heuristic.choose_play(msg) == "2H"


def test_heuristic_passes_unguarded_spades(heuristic: Any) -> None:
    hand = ["2C", "5C", "9C", "3D", "6D", "8D", "TD", "QS", "KS", "AS", "4H", "7H", "9H"]
    assert sorted(heuristic.choose_pass({"hand": hand})) == ["AS", "KS", "QS"]


def test_heuristic_keeps_guarded_queen_and_voids_a_short_suit(heuristic: Any) -> None:
    # The queen behind three small spades is safe; both diamonds and the ace of hearts go.
    hand = ["2C", "5C", "9C", "JC", "3D", "QD", "2S", "5S", "8S", "QS", "4H", "7H", "AH"]
    assert sorted(heuristic.choose_pass({"hand": hand})) == ["3D", "AH", "QD"]


def test_heuristic_does_not_lead_spades_with_a_bare_queen(heuristic: Any) -> None:
    # On lead after the quiet club tricks (seat 1 won the last one); hearts unbroken (R9).
    msg = position(
        1,
        ["8C", "9C", "TC", "8D", "9D", "TD", "JD", "2S", "QS", "5H", "6H"],
        QUIET,
        [],
        legal=["8C", "9C", "TC", "8D", "9D", "TD", "JD", "2S", "QS"],
    )
    assert heuristic.choose_play(msg) == "8C"


def test_heuristic_leads_low_spades_to_flush_the_queen(heuristic: Any) -> None:
    msg = position(
        1,
        ["8C", "9C", "TC", "8D", "9D", "TD", "JD", "2S", "3S", "5H", "6H"],
        QUIET,
        [],
        legal=["8C", "9C", "TC", "8D", "9D", "TD", "JD", "2S", "3S"],
    )
    assert heuristic.choose_play(msg) == "2S"


def test_heuristic_plays_legal_cards_in_many_hands() -> None:
    # The harness checks every pass and play against the rules engine.
    stats = run_match(["heuristic", "heuristic", "duck", "random"], deals=25, prefix="legal")
    assert stats["heuristic"].hands == 200
