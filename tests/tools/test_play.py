"""``hearts-arena play``: a game in the terminal. The human mode is driven
through a pseudo-terminal (the ``pty`` module), as a person would type."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import select
import sys
import time
from pathlib import Path

import pytest
from conftest import BOTS, ROOT, bot, run_arena

from arena.cli.main import EXIT_USAGE
from arena.cli.tools import draw_seed
from arena.core.keys import MasterKey
from arena.tools.play import parse_cards, show_cards


def _readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has something to read within ``timeout`` seconds (poll, not
    select: a test process may hold descriptors numbered past select's 1024)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


class Terminal:
    """A child process on a pseudo-terminal, with ``expect`` and ``send``."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.chdir(cwd)
            env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
            os.execve(sys.executable, [sys.executable, "-m", "arena", *argv], env)
        self.buffer = b""
        self.seen = b""

    def expect(self, pattern: bytes, timeout: float = 120) -> re.Match[bytes]:
        end = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.buffer)
            if match:
                self.seen += self.buffer[: match.end()]
                self.buffer = self.buffer[match.end() :]
                return match
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} in ...{self.buffer[-800:]!r}")
            if _readable(self.fd, min(left, 0.5)):
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"ended without {pattern!r}: ...{self.buffer[-800:]!r}")
                self.buffer += chunk

    def send(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\n")

    def wait(self) -> int:
        try:  # drain what is left so the child never blocks on a full terminal
            while _readable(self.fd, 0.2) and os.read(self.fd, 65536):
                pass
        except OSError:
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def test_a_person_plays_a_hand_at_the_prompt(open_tmp: Path) -> None:
    bots = [bot("first_legal", n) for n in ("north", "east", "south")]
    term = Terminal(["play", *bots, "--human", "--hands", "1", "--seed", "5"], open_tmp)
    try:
        term.expect(rb"== hand 1: pass left")
        hand = term.expect(rb"your hand: ([^\r\n]*)").group(1).decode()
        cards = [c for c in hand.replace("|", " ").split() if c != "-"]
        assert len(cards) == 13
        term.expect(rb"your pass \(three cards, e\.g\. QS AH KH\): ")
        term.send("QS QS")  # two cards, and the same twice
        term.expect(rb"a pass is three cards, you gave 2; try again")
        term.send("xx yy zz")
        term.expect(rb"you do not hold XX YY ZZ; try again")
        term.send(", ".join(c.lower() for c in cards[-3:]).replace("t", "10"))
        term.expect(rb"you receive \w\w \w\w \w\w from seat 2 \(south\)")
        plays = 0
        while True:
            m = term.expect(rb"your hand: ([^\r\n]*)|game over: [^\r\n]*")
            if m.group(0).startswith(b"game over"):
                break
            held = [c for c in m.group(1).decode().replace("|", " ").split() if c != "-"]
            legal = term.expect(rb"your card \[([^\]]*)\]: ").group(1).decode().split()
            assert set(legal) <= set(held)
            if plays == 0:  # bad answers are explained and asked again
                term.send("nonsense")
                term.expect(rb"'NONSENSE' is not a card")
                term.expect(rb"your card \[")
                missing = next(c for c in ("AS", "KS", "2C", "3D") if c not in held)
                term.send(missing)
                term.expect(
                    re.escape(
                        f"you do not hold {missing}; you may play: {' '.join(legal)}".encode()
                    )
                )
                term.expect(rb"your card \[")
            if plays == 1 and set(held) - set(legal):
                wrong = sorted(set(held) - set(legal))[0]
                term.send(wrong)
                term.expect(re.escape(f"{wrong} is not allowed now (R5-R9)".encode()))
                term.expect(rb"your card \[")
            term.send(legal[-1])
            plays += 1
        assert plays == 13
        assert term.wait() == 0
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(term.pid, 9)
    text = term.seen.decode(errors="replace")
    assert "trick 13:" in text
    assert "seat 3 (you)" in text
    assert re.search(r"hand 1 points: \d+ \d+ \d+ \d+; totals", text)


def test_end_of_input_stops_the_game(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process, its standard input at its end (the prompt reads it
    with ``input()``, as from a closed pipe; a terminal's Ctrl-C:
    test_ctrl_c_at_the_prompt_stops_at_once)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = run_arena(["play", *[bot("first_legal", n) for n in "abc"], "--human", "--hands", "1"])
    assert code == 130
    assert "stopped" in capsys.readouterr().out


def test_four_bots_play_a_game_to_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    four = [bot("first_legal", n) for n in "abcd"]
    assert run_arena(["play", *four, "--hands", "2", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "game play, 2 hands" in out
    assert out.count("== hand") == 2
    assert "seat 0 (a): " in out and "seat 3 (d) receives" in out  # every hand and pass shown
    assert out.count("trick 13:") == 2
    assert "game over: totals" in out


def test_bots_are_not_given_the_seed_of_the_deals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11: the game id a bot got was ``play-SEED``, and with the seed it
    computed every hand, the human's too; a drawn seed was below 2^31, within
    a search from the bot's own ``seed``. Now the game id is ``play`` and a
    drawn seed is below 2^63."""
    log = tmp_path / "messages.jsonl"
    rec = f"rec={BOTS / 'recorder.py'} {log}"
    others = [bot("first_legal", n) for n in "abc"]
    # Unsealed and as the arena's user, so that the recorder may write its file.
    flags = ["--hands", "1", "--seed", "12345", "--no-sandbox", "--same-user"]
    assert run_arena(["play", rec, *others, *flags]) == 0
    capsys.readouterr()
    start = next(
        m["msg"]
        for line in log.read_text().splitlines()
        if (m := json.loads(line))["msg"]["type"] == "game_start"
    )
    assert start["game_id"] == "play" and "12345" not in json.dumps(start)
    assert start["seed"] == MasterKey.from_seed("play:12345").bot_seeds("play")[start["seat"]]
    draws = [draw_seed() for _ in range(64)]
    assert all(0 <= d < 2**63 for d in draws) and max(draws) >= 2**40


def test_too_many_bots_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena(["play", *[bot("first_legal", n) for n in "abcd"], "--human"]) == EXIT_USAGE
    assert "give at most 3 bots, got 4" in capsys.readouterr().err


def test_sample_bots_fill_the_empty_seats(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_arena(["play", bot("first_legal", "low"), "--hands", "1", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "players 0: low, 1: duck, 2: heuristic, 3: random" in out


def test_card_input_and_display_helpers() -> None:
    assert parse_cards(" qs, 10h  2c ") == ["QS", "TH", "2C"]
    assert show_cards(["2C", "TC", "QS", "AH"]) == "2C TC | - | QS | AH"


@pytest.mark.parametrize("prompt", [rb"your pass \(three", rb"your card \["])
def test_ctrl_c_at_the_prompt_stops_at_once(open_tmp: Path, prompt: bytes) -> None:
    """Issue 14, item 13: Ctrl-C at the prompt waited for Enter. Here no Enter
    is ever typed: the game must end on the Ctrl-C alone, with exit 130 and
    the bots stopped."""
    bots = [bot("first_legal", n) for n in ("north", "east", "south")]
    term = Terminal(["play", *bots, "--human", "--hands", "1", "--seed", "5"], open_tmp)
    try:
        if prompt != rb"your pass \(three":  # pass first, then wait for a card prompt
            term.expect(rb"your hand: ([^\r\n]*)")
            term.expect(rb"your pass \(three cards, e\.g\. QS AH KH\): ")
            held = term.seen.decode(errors="replace").rsplit("your hand: ", 1)[1].split("\n")[0]
            term.send(" ".join([c for c in held.replace("|", " ").split() if c != "-"][:3]))
        term.expect(prompt)
        os.write(term.fd, b"\x03")  # Ctrl-C: the terminal sends SIGINT
        term.expect(rb"interrupted")
        assert term.wait() == 130
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(term.pid, 9)
    assert b"Traceback" not in term.seen + term.buffer
    assert _bot_processes(bots) == []


def _bot_processes(bots: list[str]) -> list[tuple[int, str]]:
    from conftest import processes_matching

    return [
        p for b in bots for p in processes_matching(b.split("=", 1)[1]) if "--human" not in p[1]
    ]


def test_the_seats_are_filled_with_sample_bots_and_bad_bots_raise_play_error() -> None:
    """The tool raises its own error (the command line makes it exit 2)."""
    from arena.tools.play import HUMAN, PlayError, seat_entrants

    mine = seat_entrants([bot("first_legal", "mine")], 4)
    assert [e.name for e in mine] == ["mine", "duck", "heuristic", "low"]
    assert [e.name for e in seat_entrants([], 3)] == ["duck", "heuristic", "low"]
    with pytest.raises(PlayError, match="play: give at most 3 bots, got 4"):
        seat_entrants([bot("first_legal", n) for n in "abcd"], 3)
    with pytest.raises(PlayError, match="the human's name"):
        seat_entrants([bot("first_legal", HUMAN)], 3)
