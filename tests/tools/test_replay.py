"""``hearts-arena replay``: the messages it rebuilds from a record are the ones
the tournament sent (checked against recorded transcripts), a deterministic
bot's recorded decision is reproduced exactly, and bad references exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from conftest import ROOT, bot, run_arena

from arena.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from arena.game.referee import RefereeSettings
from arena.sandbox.launcher import Launcher
from arena.tools.replay import (
    Decision,
    ReplayError,
    choose_decision,
    load_game,
    recorded_entrant,
    replay_decision,
)

SAMPLES = ROOT / "sample_bots"
# Deterministic bots (random_bot draws from the seed game_start gives it).
ENTRANTS = [
    str(SAMPLES / "low_bot.py"),
    str(SAMPLES / "kit_bot.py"),
    str(SAMPLES / "random_bot.py"),
    bot("illegal", "illegal"),
]


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replay") / "t"
    args = ["run", *ENTRANTS, "--hands", "2", "--rounds", "1", "--seed", "21", "--quiet"]
    assert run_arena([*args, "--transcripts", "--out", str(out)]) == 0
    return out


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


def test_rebuilt_messages_equal_the_transcript_and_decisions_repeat(tournament: Path) -> None:
    run_info = json.loads((tournament / "run.json").read_text())
    settings = RefereeSettings()
    for rec in records(tournament)[:2]:
        for seat in range(4):
            entrant = recorded_entrant(run_info, rec["seats"][seat])
            assert entrant is not None
            decision = Decision(2, 13)  # the last decision: every message before it
            result = trio.run(replay_decision, rec, seat, decision, entrant, Launcher(), settings)
            sent = [e["sent"] for e in result.transcript if "sent" in e]
            recorded = [e["sent"] for e in rec["transcripts"][seat] if "sent" in e]
            assert len(sent) > 50
            # Request ids differ (a process plays several games); nothing else does.
            assert [_no_id(m) for m in sent] == [_no_id(m) for m in recorded[: len(sent)]]
            assert result.same, (rec["game_id"], seat, result)
            answers = [e["received"] for e in result.transcript if "received" in e]
            recorded_answers = [e["received"] for e in rec["transcripts"][seat] if "received" in e]
            if rec["seats"][seat] != "illegal":  # its first play is steered to the default
                assert [_no_id(m) for m in answers] == [
                    _no_id(m) for m in recorded_answers[: len(answers)]
                ]


def _no_id(message: dict) -> dict:
    return {k: v for k, v in message.items() if k != "id"}


def test_cli_reproduces_a_recorded_decision(
    tournament: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = records(tournament)[1]
    code = run_arena(
        [
            "replay",
            f"{tournament}#{rec['game_id']}",
            "--seat",
            "kit_bot",
            "--hand",
            "2",
            "--trick",
            "4",
        ]
    )
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    seat = rec["seats"].index("kit_bot")
    hand = rec["hands"][1]
    trick = hand["tricks"][3]
    card = trick["cards"][(seat - trick["leader"]) % 4]
    assert f"seat {seat} (kit_bot), hand 2 trick 4" in out
    assert f"recorded: {card}" in out and f"now:      {card}" in out
    assert "same as recorded" in out
    # A pass, by game index, with the whole exchange printed.
    code = run_arena(
        [
            "replay",
            f"{tournament / 'games.jsonl'}#{rec['game_index']}",
            "--seat",
            str(seat),
            "--pass",
            "-v",
        ]
    )
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert f"recorded: {' '.join(rec['hands'][0]['passes'][seat])}" in out
    assert out.startswith('> {"type": "game_start"')
    assert "hand 1 pass" in out


def test_a_different_bot_is_reported_different(
    tournament: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for rec in records(tournament):
        seat = rec["seats"].index("low_bot")
        # Find a play where low_bot did not play the first legal card.
        for h, hand in enumerate(rec["hands"], 1):
            for t, trick in enumerate(hand["tricks"], 1):
                if trick["cards"][(seat - trick["leader"]) % 4] != _first_legal(rec, seat, h, t):
                    ref = f"{tournament}#{rec['game_id']}"
                    args = ["replay", ref, "--seat", str(seat), "--hand", str(h), "--trick", str(t)]
                    assert run_arena([*args, "--bot", bot("first_legal")]) == EXIT_FAILED
                    assert "DIFFERENT from the record" in capsys.readouterr().out
                    return
    pytest.fail("low_bot always played the first legal card")


def _first_legal(rec: dict, seat: int, hand: int, trick: int) -> str:
    from arena.core.cards import mask_of_names, names_of
    from arena.core.rules import Hand

    h = rec["hands"][hand - 1]
    game = Hand.new(hand, [mask_of_names(c) for c in h["dealt"]])
    if h["passes"] is not None:
        game.apply_passes([mask_of_names(p) for p in h["passes"]])
    for t in h["tricks"][: trick - 1]:
        for card in t["cards"]:
            game.play(mask_of_names([card]).bit_length() - 1)
    t = h["tricks"][trick - 1]
    for card in t["cards"][: (seat - t["leader"]) % 4]:
        game.play(mask_of_names([card]).bit_length() - 1)
    return names_of(game.legal_mask())[0]


def test_the_default_decision_is_the_first_fault(
    tournament: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = records(tournament)[0]
    seat = rec["seats"].index("illegal")
    first = next(f for f in rec["faults"] if f["seat"] == seat)
    decision = choose_decision(rec, seat, None, None, False)
    assert decision == Decision(first["hand_number"], first["trick_number"])
    code = run_arena(["replay", f"{tournament}#{rec['game_id']}", "--seat", "illegal"])
    out = capsys.readouterr().out
    assert "(the referee's default move after a fault)" in out
    move = first["detail"].split(":")[0].removeprefix("played ").removeprefix("pass ")
    assert first["request"] == "pass"  # illegal.py first passes a card it does not hold
    assert f"recorded: {move}   (illegal: pass {move}" in out
    assert f"now:      {move}" in out
    assert code == EXIT_OK  # the bot repeats its illegal answer, as recorded


@pytest.mark.parametrize(
    ("ref", "extra", "fragment"),
    [
        ("{out}", [], "holds 4 games: name one"),
        ("{out}#r9-t9-k9", [], "has no game 'r9-t9-k9'"),
        ("{out}/nothing.jsonl", [], "no games file"),
        ("{out}#r1-t0-k0", ["--seat", "7"], "--seat '7': give 0..3 or one of"),
        ("{out}#r1-t0-k0", ["--seat", "0", "--hand", "3"], "the game has 2 hands, not 3"),
        ("{out}#r1-t0-k0", ["--seat", "0", "--trick", "14"], "hand 1 has tricks 1..13"),
    ],
)
def test_bad_references_exit_2(
    tournament: Path, ref: str, extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", ref.format(out=tournament), *(extra or ["--seat", "0"])]
    assert run_arena(args) == EXIT_USAGE
    assert fragment in capsys.readouterr().err


def test_load_game_by_file_of_one_game(tournament: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((tournament / "games.jsonl").read_text().splitlines()[2] + "\n")
    record, run_info, path = load_game(str(one))
    assert run_info is None and path == one
    rec = dict(record)
    rec["hands"] = [dict(record["hands"][0], passes=None)]
    with pytest.raises(ReplayError, match="hold hand"):
        choose_decision(rec, 0, 1, None, True)


# -- issue 14, items 7 and 8: reaching the faulting request; every fault kind judged alike --


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One round of 2-hand games with a bot that crashes at hand 2 trick 1
    and one that answers its second play with a line that is not JSON."""
    out = tmp_path_factory.mktemp("replay14") / "t"
    entrants = [
        bot("crash_hand2"),
        bot("garbage"),
        str(SAMPLES / "low_bot.py"),
        bot("illegal", "illegal"),
    ]
    args = ["run", *entrants, "--hands", "2", "--rounds", "1", "--seed", "5", "--quiet"]
    run_arena([*args, "--out", str(out)])  # exits 0 or with faults: both fine here
    return out


def test_without_a_hand_replay_goes_to_the_crash_not_hand_1s_pass(
    faulty: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = records(faulty)[0]
    seat = rec["seats"].index("crash_hand2")
    [crash] = [f for f in rec["faults"] if f["seat"] == seat]
    assert (crash["reason"], crash["hand_number"], crash["trick_number"]) == ("crashed", 2, 1)
    assert choose_decision(rec, seat, None, None, False) == Decision(2, 1)
    code = run_arena(["replay", f"{faulty}#{rec['game_id']}", "--seat", "crash_hand2"])
    out = capsys.readouterr().out
    assert "hand 2 trick 1" in out and "hand 1 pass" not in out
    assert "now:      fault: crashed" in out
    assert out.rstrip().endswith("same as recorded (the same crashed fault)")
    assert code == EXIT_OK


def test_the_crashing_request_replays_with_a_fixed_bot(
    faulty: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = records(faulty)[0]
    seat = rec["seats"].index("crash_hand2")
    ref = f"{faulty}#{rec['game_id']}"
    args = ["replay", ref, "--seat", str(seat), "--hand", "2", "--trick", "1"]
    code = run_arena([*args, "--bot", bot("crash_hand2_fixed")])
    out = capsys.readouterr().out
    legal_first = _first_legal(rec, seat, 2, 1)
    assert f"now:      {legal_first}" in out
    assert "the recorded crashed fault is gone (a legal move now)" in out
    assert code == EXIT_FAILED  # different from the record, and says why
    # After the crash the bot was never asked again: a plain one-line refusal.
    assert run_arena(["replay", ref, "--seat", str(seat), "--hand", "2", "--trick", "2"]) == (
        EXIT_USAGE
    )
    err = capsys.readouterr().err
    assert "crashed at hand 2 trick 1, before hand 2 trick 2" in err


def test_a_repeated_malformed_line_is_same_as_recorded_like_an_illegal_card(
    faulty: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = records(faulty)[0]
    for name, reason in (("garbage", "malformed"), ("illegal", "illegal")):
        seat = rec["seats"].index(name)
        first = next(f for f in rec["faults"] if f["seat"] == seat and f["request"] == "play")
        assert first["reason"] == reason
        args = ["replay", f"{faulty}#{rec['game_id']}", "--seat", name]
        args += ["--hand", str(first["hand_number"]), "--trick", str(first["trick_number"])]
        code = run_arena(args)
        out = capsys.readouterr().out
        assert out.rstrip().endswith(f"same as recorded (the same {reason} fault)"), out
        assert code == EXIT_OK
        if reason == "illegal":  # explained as the referee did, with its rule id
            assert f"(illegal: {first['detail']}; " in out, (first["detail"], out)


def test_the_illegal_card_is_recorded_as_data_and_old_records_still_replay(faulty: Path) -> None:
    from arena.protocol.faults import Fault
    from arena.tools.replay import recorded_illegal_move

    rec = records(faulty)[0]
    seat = rec["seats"].index("illegal")
    play = next(f for f in rec["faults"] if f["seat"] == seat and f["request"] == "play")
    passed = next(f for f in rec["faults"] if f["seat"] == seat and f["request"] == "pass")
    assert play["detail"].startswith(f"played {play['answer']}: ")
    assert isinstance(passed["answer"], list) and len(passed["answer"]) == 3
    # The offending cards and the rule, as data: the card played; the pass's
    # third card, which illegal.py takes from outside its hand (R3).
    assert play["cards"] == [play["answer"]] and play["rule"] in play["detail"]
    assert passed["cards"] == [passed["answer"][2]] and passed["rule"] == "R3"
    assert recorded_illegal_move(Fault.from_json(play)) == play["answer"]
    old = {k: v for k, v in play.items() if k not in ("answer", "cards", "rule")}  # older record
    assert recorded_illegal_move(Fault.from_json(old)) == play["answer"]
    old_pass = {k: v for k, v in passed.items() if k not in ("answer", "cards", "rule")}
    assert recorded_illegal_move(Fault.from_json(old_pass)) == passed["answer"]
    malformed = {"seat": 0, "entrant": "x", "reason": "malformed", "detail": "x"}
    assert recorded_illegal_move(Fault.from_json(malformed)) is None


def test_a_different_illegal_card_or_a_fault_now_is_different() -> None:
    from arena.tools.replay import ReplayResult

    request = {"type": "play", "legal": ["2C"], "hand": ["2C", "3D"]}
    base = dict(request=request, recorded="2C", elapsed=0.0)
    then_illegal = dict(base, recorded_fault="illegal: played 3D: ...", recorded_answer="3D")
    assert ReplayResult(**then_illegal, answer="3D", fault="illegal: x").same
    assert not ReplayResult(**then_illegal, answer="2C", fault=None).same
    then_bad = dict(base, recorded_fault="malformed: not JSON", recorded_answer=None)
    assert ReplayResult(**then_bad, answer=None, fault="malformed: other text").same
    assert not ReplayResult(**then_bad, answer=None, fault="timeout: no reply").same
    then_ok = dict(base, recorded_fault=None, recorded_answer="2C")
    assert ReplayResult(**then_ok, answer="2C", fault=None).same
    assert not ReplayResult(**then_ok, answer=None, fault="crashed: exit code 1").same


def test_a_recorded_path_with_spaces_and_quotes_replays_unsplit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, items 1-2: replay's default bot is the one run.json records,
    rebuilt from its argv (not its command text split again)."""
    folder = tmp_path / "my 'odd' bots"
    folder.mkdir()
    (folder / "first legal.py").write_text((ROOT / "tests" / "bots" / "first_legal.py").read_text())
    out = tmp_path / "o"
    bots = [f"odd={folder / 'first legal.py'}", "sample:low", "sample:duck", "sample:random"]
    args = ["--hands", "1", "--rounds", "1", "--seed", "8", "--quiet", "--same-user"]
    assert run_arena(["run", *bots, *args, "--out", str(out)]) == EXIT_OK
    capsys.readouterr()
    code = run_arena(["replay", f"{out}#0", "--seat", "odd", "--same-user"])
    assert code == EXIT_OK, capsys.readouterr()
    assert "same as recorded" in capsys.readouterr().out


def test_replay_settings_are_the_recorded_ones_unless_given() -> None:
    from arena.tools.replay import recorded_settings

    run_info = {"settings": {"time_limit": 0.5, "startup_time": 4.0, "strikes": 2, "grace": 0.2}}
    got = recorded_settings(run_info, None, None)
    assert (got.time_limit, got.startup_time, got.strikes, got.grace) == (0.5, 4.0, 2, 0.2)
    got = recorded_settings(run_info, 2.0, None)
    assert (got.time_limit, got.startup_time) == (2.0, 4.0)
    default = RefereeSettings()
    got = recorded_settings(None, None, 3.0)  # a games file alone: the referee's defaults
    assert (got.time_limit, got.startup_time, got.strikes, got.grace) == (
        default.time_limit,
        3.0,
        default.strikes,
        default.grace,
    )


def test_an_illegal_answer_is_explained_in_the_referees_words() -> None:
    """Replay named every illegal play "not in legal"; the record said which
    rule the move broke (R2 a card not held, R5-R9 a card the rules forbid now)."""
    from arena.tools.replay import illegal_reason

    hand = ["5C", "6C", "2D", "3S", "2H"]
    follow = {"type": "play", "trick_number": 2, "hand": hand, "legal": ["5C", "6C"],
              "trick": [{"seat": 1, "card": "9C"}]}  # fmt: skip
    assert (
        illegal_reason(follow, "2D", 2) == "played 2D: seat 2: may not play 2D (R6); legal: 5C 6C"
    )
    assert illegal_reason(follow, "AS", 2) == (
        "played AS: seat 2: does not hold AS (R2); legal: 5C 6C"
    )
    assert illegal_reason(follow, "6C", 2) is None
    void = dict(follow, trick_number=1, hand=["2D", "QS", "2H"], legal=["2D"])
    assert illegal_reason(void, "QS", 0) == "played QS: seat 0: may not play QS (R7); legal: 2D"
    lead = dict(follow, trick=[], trick_number=3, legal=["5C", "6C", "2D", "3S"])
    assert illegal_reason(lead, "2H", 1) == (
        "played 2H: seat 1: may not play 2H (R9); legal: 5C 6C 2D 3S"
    )
    first = dict(lead, trick_number=1, hand=["2C", "3C"], legal=["2C"])
    assert illegal_reason(first, "3C", 1) == "played 3C: seat 1: may not play 3C (R5); legal: 2C"
    pass_ = {"type": "pass", "hand": hand}
    assert illegal_reason(pass_, ["AH", "5C", "KD"], 3) == (
        "pass AH 5C KD: seat 3: passes cards it does not hold: KD AH (R3)"
    )
    assert illegal_reason(pass_, ["5C", "5C", "6C"], 3) == (
        "pass 5C 5C 6C: seat 3: a pass is three distinct cards, got 2 (R3)"
    )
    assert illegal_reason(pass_, ["5C", "6C"], 3) == (
        "pass 5C 6C: seat 3: a pass is three distinct cards, got 2 cards (R3)"
    )
    assert illegal_reason(pass_, ["5C", "6C", "2H"], 3) is None
