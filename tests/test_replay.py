"""``hearts-arena replay``: the messages it rebuilds from a record are the ones
the tournament sent (checked against recorded transcripts), a deterministic
bot's recorded decision is reproduced exactly, and bad references exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from conftest import ROOT, bot, run_arena

from arena.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from arena.launcher import Launcher
from arena.referee import RefereeSettings
from arena.replay import (
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
    from arena.cards import mask_of_names, names_of
    from arena.rules import Hand

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
