"""Every fault kind (protocol/README.md, "Faults"; arena.protocol.faults.FaultKind)
produced through the in-memory transport under Trio's mock clock: no
processes, no real time, deterministic.

Each faulting bot plays the referee's default moves everywhere else (the
three highest cards, the first legal card), so the referee's default move
at the fault leaves the game exactly as four default players play it: the
hands, passes, tricks and scores of every test equal those of :func:`base`.
Each test asserts the fault (kind, seat, where, detail), the default move
(in the record and in the ``forfeit`` the bot was sent) and the scores.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing
from game_specs import one_game

from arena.core.keys import MasterKey
from arena.game.referee import (
    GameRecord,
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
    handshake,
)
from arena.protocol import codec
from arena.protocol.faults import FaultKind
from arena.seats.memory import BotEnd, MemoryBot, MemorySeat, first_legal, function_bot
from arena.seats.seat import Message, Seat
from arena.seats.stand_ins import RecordingSeat, ScriptedSeat

SEAT = 2  # the misbehaving seat
KEY = MasterKey.from_seed("faults-in-memory")


def spec(hands: int = 1) -> GameSpec:
    return one_game(KEY, "memory", hands)


@dataclass
class Played:
    record: GameRecord
    seats: list[MemorySeat]
    referee: Referee

    @property
    def faults(self) -> list[dict[str, Any]]:
        return [f.to_json() for f in self.record.faults]

    def forfeits(self, seat: int = SEAT) -> list[Message]:
        return [m for m in self.seats[seat].end.received if m["type"] == "forfeit"]


def play(
    bots: dict[int, MemoryBot] | None = None,
    *,
    hands: int = 1,
    time_limit: float = 1.0,
    startup_time: float = 10.0,
    strikes: int = 3,
    seat_options: dict[str, Any] | None = None,
    stop: Callable[[int, int | None], bool] | None = None,
) -> Played:
    """Play one game of four in-memory bots (default: first legal card)
    under ``MockClock(autojump_threshold=0)``; ``bots`` replaces some seats."""
    settings = RefereeSettings(time_limit=time_limit, startup_time=startup_time, strikes=strikes)

    async def main() -> Played:
        seats = [
            MemorySeat(
                name,
                (bots or {}).get(i) or function_bot(first_legal, name),
                **((seat_options or {}) if i == SEAT else {}),
            )
            for i, name in enumerate(spec(hands).seats)
        ]
        async with trio.open_nursery() as nursery:
            setups = []
            for i, seat in enumerate(seats):
                await seat.start(nursery)
                fault = await handshake(seat, i, settings.startup_time)
                setups.append(SeatSetup(seat.label, seat, fault))
            referee = Referee(spec(hands), setups, settings, stop=stop)
            record = await referee.play()
            for seat in seats:
                await seat.close(settings.grace)
        return Played(record, seats, referee)

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@functools.cache
def base(hands: int = 1) -> GameRecord:
    """The game four default players play."""
    return play(hands=hands).record


def the_card(record: GameRecord, seat: int, hand: int, trick: int) -> str:
    t = record.hands[hand - 1]["tricks"][trick - 1]
    return str(t["cards"][(seat - t["leader"]) % 4])


def assert_same_game(played: Played, hands: int = 1) -> None:
    """The default moves left the game as four default players play it."""
    expected = base(hands)
    for got, want in zip(played.record.hands, expected.hands, strict=True):
        assert got["passes"] == want["passes"]
        assert got["tricks"] == want["tricks"]
        assert got["points"] == want["points"]
    assert played.record.scores == expected.scores
    assert played.record.ranks == expected.ranks


Act = Callable[[BotEnd, Message], Awaitable[None]]


def faulty(when: Callable[[Message], bool], act: Act, name: str = "south") -> MemoryBot:
    """A default player that does ``act`` instead of answering requests
    for which ``when(request)`` is true."""

    async def bot(end: BotEnd) -> None:
        while (message := await end.receive()) is not None:
            kind = message["type"]
            if kind == "bye":
                return
            if "id" not in message:
                continue
            if when(message):
                await act(end, message)
            elif kind == "hello":
                end.reply(message, name=name)
            else:
                answer = first_legal(message)
                assert isinstance(answer, dict)
                end.reply(message, **answer)

    return bot


def at_play(trick: int, hand: int = 1) -> Callable[[Message], bool]:
    return lambda m: m["type"] == "play" and m["hand_number"] == hand and m["trick_number"] == trick


def at_pass(hand: int = 1) -> Callable[[Message], bool]:
    return lambda m: m["type"] == "pass" and m["hand_number"] == hand


def at_hello(m: Message) -> bool:
    return bool(m["type"] == "hello")


def answer_with(fields: dict[str, Any]) -> Act:
    async def act(end: BotEnd, message: Message) -> None:
        end.reply(message, **fields)

    return act


def write(data: bytes | str) -> Act:
    async def act(end: BotEnd, message: Message) -> None:
        end.write(data)

    return act


async def hang(end: BotEnd, message: Message) -> None:
    """Never answer this request (the bot reads on)."""


def assert_play_fault(
    played: Played, kind: FaultKind, trick: int, detail: str, *, exact: bool = True
) -> dict[str, Any]:
    """One fault, of ``kind``, by :data:`SEAT` at its play of ``trick``; the
    default card was played and sent back in the ``forfeit``."""
    (fault,) = played.faults
    assert (fault["seat"], fault["entrant"], fault["reason"]) == (SEAT, "south", kind.value)
    assert (fault["hand_number"], fault["trick_number"], fault["request"]) == (1, trick, "play")
    assert fault["detail"] == detail if exact else fault["detail"].startswith(detail)
    default = the_card(base(), SEAT, 1, trick)
    assert the_card(played.record, SEAT, 1, trick) == default
    asked = [m for m in played.seats[SEAT].end.received if m.get("trick_number") == trick]
    if asked and asked[0]["type"] == "play":  # the default play: the first legal card
        assert default == asked[0]["legal"][0]
    if kind is not FaultKind.CRASHED:
        (forfeit,) = played.forfeits()
        assert forfeit["request_id"] == fault["request_id"]
        assert (forfeit["reason"], forfeit["played"]) == (kind.value, default)
    assert_same_game(played)
    return fault


def assert_pass_fault(played: Played, kind: FaultKind, detail: str) -> dict[str, Any]:
    (fault,) = played.faults
    assert (fault["seat"], fault["reason"], fault["request"]) == (SEAT, kind.value, "pass")
    assert (fault["hand_number"], fault["trick_number"]) == (1, None)
    assert fault["detail"] == detail
    expected, passes = base().hands[0]["passes"], played.record.hands[0]["passes"]
    assert expected is not None and passes is not None  # hand 1 passes left
    default = expected[SEAT]
    assert passes[SEAT] == default
    # The default pass: the three highest cards by rank, ties by suit H, S, D, C.
    dealt = played.record.hands[0]["dealt"][SEAT]
    order = {s: i for i, s in enumerate("CDSH")}
    ranks = "23456789TJQKA"
    highest = sorted(dealt, key=lambda c: (ranks.index(c[0]), order[c[1]]), reverse=True)[:3]
    assert sorted(default) == sorted(highest)
    (forfeit,) = played.forfeits()
    assert (forfeit["reason"], forfeit["passed"]) == (kind.value, default)
    assert_same_game(played)
    return fault


# -- the baseline ---------------------------------------------------------------


def test_four_default_players_play_a_whole_faultless_game() -> None:
    played = play(hands=2)
    record = played.record
    assert record.faults == []
    assert [len(h["tricks"]) for h in record.hands] == [13, 13]
    assert sum(record.hands[0]["points"]) in (26, 78)
    assert record.scores == record.hands[-1]["scores"]
    assert record.bot_names == ["north", "east", "south", "west"]
    # Each seat got 2 passes (left, right) + 26 plays, each frozen after.
    assert [t["requests"] for t in record.timing] == [28, 28, 28, 28]
    assert [s.freezes for s in played.seats] == [29, 29, 29, 29]  # and hello
    assert all(s.exit_status() == "exit code 0" for s in played.seats)  # left at bye


def test_a_reply_written_in_pieces_is_one_line() -> None:
    written: list[int] = []

    async def pieces(end: BotEnd, message: Message) -> None:
        answer = first_legal(message)
        assert isinstance(answer, dict)
        text = codec.encode({"type": "play", "id": message["id"], **answer})
        for i in range(0, len(text), 5):
            end.write(text[i : i + 5])
            written.append(i)
            await trio.sleep(0.01)

    played = play({SEAT: faulty(at_play(3), pieces)})
    assert played.faults == []
    assert len(written) > 5
    # The line was whole when its last piece came, 10 ms after each earlier one.
    assert played.record.timing[SEAT]["wall_ms"][3] == round(10.0 * (len(written) - 1), 1)
    assert_same_game(played)


# -- timeout ----------------------------------------------------------------------


def test_timeout_in_play_gets_the_default_card() -> None:
    played = play({SEAT: faulty(at_play(3), hang)}, time_limit=0.5)
    assert_play_fault(played, FaultKind.TIMEOUT, 3, "no reply within 500 ms")
    assert played.record.timing[SEAT]["wall_ms"][3] == 500.0  # the pass, tricks 1, 2, 3
    assert played.record.struck_out == []


def test_timeout_of_the_pass_gets_the_default_pass() -> None:
    played = play({SEAT: faulty(at_pass(), hang)})
    assert_pass_fault(played, FaultKind.TIMEOUT, "no reply within 1000 ms")


def test_a_partial_line_never_finished_is_a_timeout_then_spoils_the_next_line() -> None:
    played = play({SEAT: faulty(at_play(5), write('{"type": "play", "id"'))})
    faults = played.faults
    assert [(f["seat"], f["reason"], f["trick_number"]) for f in faults] == [
        (SEAT, "timeout", 5),
        (SEAT, "malformed", 6),
    ]
    assert faults[0]["detail"] == "no reply within 1000 ms"
    # The next reply ends the unfinished line: one line, not JSON.
    assert faults[1]["detail"].startswith("line is not JSON: ")
    assert [(f["reason"], f["played"]) for f in played.forfeits()] == [
        ("timeout", the_card(base(), SEAT, 1, 5)),
        ("malformed", the_card(base(), SEAT, 1, 6)),
    ]
    assert_same_game(played)


def test_a_late_reply_is_dropped_and_the_next_request_answered() -> None:
    async def late(end: BotEnd, message: Message) -> None:
        await trio.sleep(1.5)
        await answer_with({"card": message["legal"][0]})(end, message)

    played = play({SEAT: faulty(at_play(2), late)})
    assert_play_fault(played, FaultKind.TIMEOUT, 2, "no reply within 1000 ms")


def test_three_timeouts_in_a_row_strike_the_seat_out() -> None:
    def when(m: Message) -> bool:
        return bool(m["type"] == "play" and m["trick_number"] >= 4)

    played = play({SEAT: faulty(when, hang)})
    faults = played.faults
    assert [(f["reason"], f["trick_number"]) for f in faults] == [
        ("timeout", 4),
        ("timeout", 5),
        ("timeout", 6),
    ]
    assert faults[-1]["detail"] == (
        "no reply within 1000 ms; struck out after 3 consecutive timeouts:"
        " default moves for the rest of the game"
    )
    assert played.record.struck_out == [SEAT]
    # Asked nothing after the strike-out: the pass, tricks 1..6.
    assert played.record.timing[SEAT]["requests"] == 7
    assert played.seats[SEAT].exit_status() == "killed by SIGKILL"
    # The strike-out kills the bot: no forfeit for the third timeout.
    assert [f["played"] for f in played.forfeits()] == [
        the_card(base(), SEAT, 1, t) for t in (4, 5)
    ]
    assert_same_game(played)


def test_a_silent_handshake_is_a_timeout_and_the_seat_plays_by_default() -> None:
    played = play({SEAT: faulty(at_hello, hang)}, startup_time=3.0)
    (fault,) = played.faults
    assert (fault["seat"], fault["reason"], fault["request"]) == (SEAT, "timeout", "hello")
    assert fault["detail"] == "handshake: no reply within 3000 ms"
    assert fault["hand_number"] is None
    assert played.record.timing[SEAT]["requests"] == 0
    assert_same_game(played)


# -- malformed --------------------------------------------------------------------


def test_garbage_is_malformed() -> None:
    played = play({SEAT: faulty(at_play(1), write("hello there\n"))})
    assert_play_fault(
        played,
        FaultKind.MALFORMED,
        1,
        "line is not JSON: Expecting value at column 1: 'hello there'",
    )


def test_bytes_that_are_not_utf8_are_malformed() -> None:
    played = play({SEAT: faulty(at_play(2), write(b'{"card": "\xff"}\n'))})
    assert_play_fault(played, FaultKind.MALFORMED, 2, "line is not UTF-8 (byte 10)")


def test_a_reply_that_fails_the_schema_is_malformed() -> None:
    played = play({SEAT: faulty(at_play(3), answer_with({"card": "10S"}))})
    assert_play_fault(
        played,
        FaultKind.MALFORMED,
        3,
        "reply to 'play' fails the schema at card: '10S' is not a card",
        exact=False,
    )


def test_a_pass_that_fails_the_schema_is_malformed() -> None:
    played = play({SEAT: faulty(at_pass(), answer_with({"card": "2C"}))})
    fault = played.faults[0]
    assert fault["detail"].startswith("reply to 'pass' fails the schema")
    assert_pass_fault(played, FaultKind.MALFORMED, fault["detail"])


def test_a_line_over_the_cap_is_malformed() -> None:
    cap = codec.MAX_LINE_BYTES
    played = play({SEAT: faulty(at_play(4), write("x" * (cap + 10) + "\n"))})
    assert_play_fault(played, FaultKind.MALFORMED, 4, f"line longer than {cap} bytes")


def test_an_over_long_line_without_newline_is_malformed_at_once() -> None:
    async def endless(end: BotEnd, message: Message) -> None:
        for _ in range(3):
            end.write("y" * 40000)  # no newline: dropped past the cap, never kept
        await trio.sleep(0.5)
        end.write("\n")  # the end of the over-long line: the next reply is read again

    played = play({SEAT: faulty(at_play(4), endless)})
    assert_play_fault(
        played, FaultKind.MALFORMED, 4, f"line longer than {codec.MAX_LINE_BYTES} bytes"
    )
    assert played.record.timing[SEAT]["wall_ms"][4] == 0.0  # judged without waiting


def test_a_flood_of_unsolicited_lines_is_malformed_once() -> None:
    n = codec.MAX_UNSOLICITED + 5

    async def flood(end: BotEnd, message: Message) -> None:
        for i in range(n):
            end.send({"type": "chat", "n": i})
        end.reply(message, card=message["legal"][0])

    played = play({SEAT: faulty(at_play(6), flood)})
    assert_play_fault(
        played,
        FaultKind.MALFORMED,
        6,
        f"more than {codec.MAX_UNSOLICITED} unsolicited lines",
    )


def test_a_malformed_line_between_requests_is_charged_to_the_next() -> None:
    async def chatty(end: BotEnd, message: Message) -> None:
        end.reply(message, card=message["legal"][0])
        end.write("oops\n")

    played = play({SEAT: faulty(at_play(7), chatty)})
    fault = assert_play_fault(
        played,
        FaultKind.MALFORMED,
        8,
        "before the request: line is not JSON: Expecting value at column 1: 'oops'",
    )
    assert fault["request_id"] == 10  # hello, pass, plays 1..8
    assert played.record.timing[SEAT]["wall_ms"][8] == 0.0


BAD_LINES = {
    "not an object": ("[1, 2]\n", "line is JSON but not an object: [1, 2]"),
    "nested too deeply": ("[" * 20000 + "]" * 20000 + "\n", "nested too deeply"),
    "a 5,000-digit number": (
        '{"type": "play", "id": 3, "card": ' + "9" * 5000 + "}\n",
        "integer string conversion",
    ),
    "NaN": ('{"type": "play", "id": 3, "card": NaN}\n', "NaN is not"),
    "wrong type": ('{"type": "pass", "id": 3, "card": "2C"}\n', "fails the schema at type"),
    "id as a string": ('{"type": "play", "id": "3", "card": "2C"}\n', "fails the schema at id"),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_lines_are_malformed(case: str) -> None:
    line, fragment = BAD_LINES[case]
    played = play({SEAT: faulty(at_play(1), write(line))})  # request id 3: hello, pass, play
    fault = assert_play_fault(played, FaultKind.MALFORMED, 1, "", exact=False)
    assert fragment in fault["detail"]


@pytest.mark.parametrize(
    "line", ['{"type": "play", "id": 2, "card": "2C"}\n', '{"type": "play"}\n']
)
def test_a_reply_without_its_id_is_not_the_reply(line: str) -> None:
    played = play({SEAT: faulty(at_play(1), write(line))})
    assert_play_fault(played, FaultKind.TIMEOUT, 1, "no reply within 1000 ms")


def test_an_id_written_as_a_float_answers() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        card = message["legal"][0]
        end.write(f'{{"type": "play", "id": {message["id"]}.0, "card": "{card}"}}\n')

    played = play({SEAT: faulty(at_play(1), act)})
    assert played.faults == []
    assert_same_game(played)


@pytest.mark.parametrize("before", [True, False], ids=["at start", "after hello came"])
def test_a_banner_is_malformed_at_the_handshake(before: bool) -> None:
    banner = "*** Welcome to BannerBot 3000 ***\n"

    async def bot(end: BotEnd) -> None:
        if before:
            end.write(banner)  # written while starting: judged as the hello's answer
        await function_bot(first_legal, "banner")(_BannerFirst(end, banner, not before))

    played = play({SEAT: bot})
    (fault,) = played.faults
    assert (fault["seat"], fault["reason"], fault["request"]) == (SEAT, "malformed", "hello")
    assert fault["detail"] == (
        "handshake: line is not JSON: Expecting value at column 1: "
        "'*** Welcome to BannerBot 3000 ***'"
    )
    assert_same_game(played)  # played by default moves after a failed handshake


class _BannerFirst(BotEnd):
    """A bot end that writes ``banner`` once, on reading the first message."""

    def __init__(self, end: BotEnd, banner: str, armed: bool) -> None:
        super().__init__(end.seat, end._t)
        self.received = end.received
        self._banner = banner if armed else ""

    async def receive(self) -> Message | None:
        message = await super().receive()
        if self._banner:
            self.write(self._banner)
            self._banner = ""
        return message


# -- illegal ----------------------------------------------------------------------


def test_an_illegal_card_gets_the_default_card() -> None:
    asked: list[Message] = []

    async def act(end: BotEnd, message: Message) -> None:
        asked.append(message)
        held_not_legal = sorted(set(message["hand"]) - set(message["legal"]))
        end.reply(message, card=held_not_legal[0])

    played = play({SEAT: faulty(at_play(2), act)})
    (request,) = asked
    fault = assert_play_fault(played, FaultKind.ILLEGAL, 2, "played ", exact=False)
    assert fault["answer"] in request["hand"] and fault["answer"] not in request["legal"]
    assert fault["detail"].startswith(f"played {fault['answer']}: ")
    assert fault["detail"].endswith(f"; legal: {' '.join(request['legal'])}")
    # Held but not legal: it does not follow suit (R6), as data too.
    assert (fault["cards"], fault["rule"]) == ([fault["answer"]], "R6")
    assert f"may not play {fault['answer']} (R6)" in fault["detail"]


def test_a_card_not_held_is_illegal() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        foreign = next(c for c in ("AS", "AH", "AD", "AC", "KS") if c not in message["hand"])
        end.reply(message, card=foreign)

    played = play({SEAT: faulty(at_play(9), act)})
    fault = assert_play_fault(played, FaultKind.ILLEGAL, 9, "played ", exact=False)
    assert fault["detail"].startswith(f"played {fault['answer']}: ")
    # Another seat's card breaks R2 (the deal), not R6.
    assert (fault["cards"], fault["rule"]) == ([fault["answer"]], "R2")
    assert f"does not hold {fault['answer']} (R2)" in fault["detail"]


@pytest.mark.parametrize(
    ("cards", "why"),
    [
        (lambda hand: hand[:2], "a pass is three distinct cards, got 2 cards"),
        (lambda hand: hand[:4], "a pass is three distinct cards, got 4 cards"),
        (lambda hand: [hand[0], hand[0], hand[1]], "R3"),
        (lambda hand: [*hand[:2], "XX"], None),
    ],
    ids=["two cards", "four cards", "a card twice", "not a card"],
)
def test_a_wrong_pass_gets_the_default_pass(
    cards: Callable[[list[str]], list[str]], why: str | None
) -> None:
    async def act(end: BotEnd, message: Message) -> None:
        end.reply(message, cards=cards(message["hand"]))

    played = play({SEAT: faulty(at_pass(), act)})
    fault = played.faults[0]
    if why is None:  # "XX" is not a card: the schema refuses it first
        assert fault["reason"] == "malformed"
        assert_pass_fault(played, FaultKind.MALFORMED, fault["detail"])
        return
    assert why in fault["detail"] and fault["detail"].startswith("pass ")
    assert fault["rule"] == "R3"
    assert_pass_fault(played, FaultKind.ILLEGAL, fault["detail"])
    (request,) = [m for m in played.seats[SEAT].end.received if m["type"] == "pass"]
    assert fault["answer"] == cards(request["hand"])


def test_passing_a_card_not_held_is_illegal() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        foreign = [c for c in ("AS", "AH", "AD", "AC", "KS", "KH") if c not in message["hand"]]
        end.reply(message, cards=[*message["hand"][:2], foreign[0]])

    played = play({SEAT: faulty(at_pass(), act)})
    fault = played.faults[0]
    assert "R3" in fault["detail"] and "does not hold" in fault["detail"]
    # The offending card is data: the third, not in the hand.
    foreign = fault["answer"][2]
    assert foreign not in played.record.hands[0]["dealt"][SEAT]
    assert (fault["cards"], fault["rule"]) == ([foreign], "R3")
    assert_pass_fault(played, FaultKind.ILLEGAL, fault["detail"])


# -- crashed ----------------------------------------------------------------------


def exits(code: int) -> Act:
    """Exit: with code 0 by closing the input (the bot's loop then returns),
    with code 1 by raising."""

    async def act(end: BotEnd, message: Message) -> None:
        if code:
            raise RuntimeError("the bot fell over")
        end.close_input()

    return act


def assert_crash(played: Played, trick: int, detail: str) -> None:
    """A crash: recorded once, the seat played by default moves from
    ``trick`` on, no ``forfeit`` (nobody reads it)."""
    assert_play_fault(played, FaultKind.CRASHED, trick, detail)
    assert played.forfeits() == []
    assert played.record.timing[SEAT]["requests"] == 1 + trick  # the pass, tricks 1..trick


def test_a_bot_that_exits_crashes() -> None:
    played = play({SEAT: faulty(at_play(3), exits(0))})
    assert_crash(played, 3, "exited (exit code 0)")


def test_a_bot_that_raises_crashes_and_its_traceback_is_kept() -> None:
    played = play({SEAT: faulty(at_play(5), exits(1))})
    assert_crash(played, 5, "exited (exit code 1)")
    assert "RuntimeError: the bot fell over" in played.record.stderr[SEAT]


def test_a_bot_that_closes_its_output_crashes() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        end.close_output()
        await trio.sleep(3600)

    played = play({SEAT: faulty(at_play(2), act)})
    assert_crash(played, 2, "closed its output while still running")
    assert played.seats[SEAT].exit_status() == "killed by SIGTERM"  # close() ended it


def test_a_bot_that_closes_its_output_near_its_deadline_is_waited_for_as_long() -> None:
    # The wait for the bot's exit is its transport's (a process's is 0.5 s):
    # the request cut it to 0.2 s past the output's end, past the deadline,
    # and the crash was told as "gone" (a loaded run of tests/seats/test_hostile.py).
    async def act(end: BotEnd, message: Message) -> None:
        await trio.sleep(0.9)  # of the time limit's 1.0 s
        end.close_output()
        await trio.sleep(3600)

    played = play({SEAT: faulty(at_play(2), act)}, seat_options={"exit_wait": 0.5})
    assert_crash(played, 2, "closed its output while still running")


def test_a_bot_that_closes_its_input_crashes_at_the_next_write() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        end.reply(message, card=message["legal"][0])
        end.close_input()
        await trio.sleep(3600)

    played = play({SEAT: faulty(at_play(3), act)})
    # Trick 3 was answered; the notifications and request of trick 4 find the input closed.
    assert_crash(played, 4, "closed its input while still running")


def test_a_bot_that_stops_reading_crashes_past_the_outgoing_cap() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        end.reply(message, card=message["legal"][0])
        await trio.sleep(3600)  # never reads again

    played = play(
        {SEAT: faulty(at_play(1), act)},
        strikes=0,  # no strike-out: the queue grows until it passes the cap
        seat_options={"capacity": 1024, "outgoing_cap": 2000},
    )
    faults = played.faults
    # Its input full (1024 bytes), the arena queues: three requests time
    # out, the fourth does not fit in 2000 bytes: crashed.
    assert [(f["reason"], f["trick_number"]) for f in faults] == [
        ("timeout", 2),
        ("timeout", 3),
        ("timeout", 4),
        ("crashed", 5),
    ]
    assert faults[-1]["detail"].startswith("stopped reading its input (")
    assert faults[-1]["detail"].endswith(" bytes unread)")
    received = [m["type"] for m in played.seats[SEAT].end.received]
    assert received[-1] == "play" and "forfeit" not in received  # nothing read after trick 1
    assert_same_game(played)


def test_a_bot_that_exits_before_hello_crashes_at_the_handshake() -> None:
    played = play({SEAT: faulty(at_hello, exits(0))})
    (fault,) = played.faults
    assert (fault["seat"], fault["reason"], fault["request"]) == (SEAT, "crashed", "hello")
    assert fault["detail"] == "handshake: exited (exit code 0)"
    assert_same_game(played)


# -- the CPU clock and the freezer (fair clocks) ----------------------------------------


def thinker(seconds: float, *, after: bool = False) -> MemoryBot:
    """A default player that uses ``seconds`` of CPU per play, before its
    answer, or (``after``) once it has answered, off move."""

    async def bot(end: BotEnd) -> None:
        while (message := await end.receive()) is not None:
            if message["type"] == "bye":
                return
            if "id" not in message:
                continue
            if message["type"] == "hello":
                end.reply(message, name="south")
                continue
            answer = first_legal(message)
            assert isinstance(answer, dict)
            if message["type"] == "play" and not after:
                await end.think(seconds)
            end.reply(message, **answer)
            if message["type"] == "play" and after:
                await end.think(seconds)

    return bot


def test_cpu_time_per_request_is_read_from_the_seat_clock() -> None:
    played = play({SEAT: thinker(0.25)})
    timing = played.record.timing[SEAT]
    assert timing["cpu_ms"] == [0.0] + [250.0] * 13  # the pass, then 13 plays
    assert timing["wall_ms"] == [0.0] + [250.0] * 13
    assert timing["cpu_max_ms"] == 250.0
    assert played.seats[SEAT].cpu_seconds == pytest.approx(13 * 0.25)
    assert played.record.timing[0]["cpu_ms"] == [0.0] * 14
    assert played.faults == []


def test_a_frozen_bot_thinks_off_move_only_on_its_own_next_request() -> None:
    played = play({SEAT: thinker(0.25, after=True)})
    timing = played.record.timing[SEAT]
    # The first 1 ms slice runs before the arena has read the answer and
    # frozen the bot; the rest waits for the next request, which is charged
    # for it (CPU and wall).
    assert timing["cpu_ms"] == [0.0, 1.0] + [250.0] * 12
    assert timing["wall_ms"] == [0.0, 0.0] + [250.0] * 12
    seat = played.seats[SEAT]
    assert seat.freezes == 15  # hello, the pass, 13 plays
    assert seat.thaws >= 15  # each request and the bye


def test_a_pondering_bot_is_never_frozen() -> None:
    played = play({SEAT: thinker(0.25, after=True)}, seat_options={"ponder": True})
    seat = played.seats[SEAT]
    assert seat.freezes == 0 and seat.freezer_state() == "thawed"
    assert seat.cpu.ns == 13 * 250_000_000
    # The thinking after the last play (and the first slice after each
    # answer) ran on nobody's request.
    assert seat.cpu_seconds < 13 * 0.25


# -- the stop hook and a recorder around a memory seat ------------------------------


def test_the_stop_hook_ends_the_game_cleanly_after_a_trick() -> None:
    seen: list[tuple[int, int | None]] = []

    def stop(hand: int, trick: int | None) -> bool:
        seen.append((hand, trick))
        return trick == 2

    played = play(stop=stop, hands=2)
    assert played.referee.stopped
    # After the pass, then after each card: the game ends at trick 2's first card.
    assert seen == [(1, None), (1, 1), (1, 1), (1, 1), (1, 1), (1, 2)]
    assert played.record.hands == []  # no hand finished
    assert played.record.scores == [0, 0, 0, 0]
    for seat in played.seats:
        types = [m["type"] for m in seat.end.received]
        assert "hand_end" not in types and "game_end" not in types
        assert types[-1] == "bye"


def test_a_recording_seat_around_a_memory_seat_records_and_forwards() -> None:
    async def main() -> tuple[RecordingSeat, GameRecord]:
        seats: list[Seat] = []
        inner = MemorySeat("south", faulty(at_play(3), hang))
        recorder = RecordingSeat(inner)
        async with trio.open_nursery() as nursery:
            setups = []
            for i, name in enumerate(spec().seats):
                memory = inner if i == SEAT else MemorySeat(name, function_bot(first_legal, name))
                await memory.start(nursery)
                seat: Seat = recorder if i == SEAT else memory
                seats.append(seat)
                assert await handshake(seat, i, 10.0) is None
                setups.append(SeatSetup(name, seat))
            record = await Referee(spec(), setups, RefereeSettings()).play()
            for seat in seats:
                await seat.close()
        return recorder, record

    recorder, record = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [e.kind for e in recorder.exchanges] == ["hello", "pass"] + ["play"] * 13
    faulted = [e for e in recorder.exchanges if e.fault]
    assert [(e.fault, e.trick, e.detail) for e in faulted] == [
        ("timeout", 3, "no reply within 1000 ms")
    ]
    assert record.bot_names[SEAT] == "south" == recorder.self_name
    assert recorder.label == "south" and recorder.dead == "closed by the referee"
    assert record.scores == base().scores


# -- the memory bound: kills come through the Seat interface ----------------------


def test_a_bot_killed_for_its_memory_crashes_and_its_game_counts_the_kill() -> None:
    async def act(end: BotEnd, message: Message) -> None:
        await end.run_out_of_memory(processes=2)

    played = play({SEAT: faulty(at_play(4), act)})
    assert_crash(played, 4, "exited (killed by SIGKILL; out of memory (2 of its processes killed))")
    assert [t["oom_kills"] for t in played.record.timing] == [0, 0, 2, 0]
    assert played.seats[SEAT].take_oom_kills() == 0  # counted once, by the record


def test_a_memory_kill_counts_in_the_game_it_happened_in_or_the_next() -> None:
    """Seats kept across games (as the runner reuses a bot's process): a
    helper process killed during game 1 counts in game 1's record only, one
    killed between games 2 and 3 in game 3's; the bot plays on throughout."""

    async def main() -> list[GameRecord]:
        seats = [MemorySeat(name, function_bot(first_legal, name)) for name in spec().seats]
        records = []
        async with trio.open_nursery() as nursery:
            setups = []
            for i, seat in enumerate(seats):
                await seat.start(nursery)
                assert await handshake(seat, i, 10.0) is None
                setups.append(SeatSetup(seat.label, seat))

            def kill_at_trick_5(hand: int, trick: int | None) -> bool:
                if trick == 5 and seats[SEAT].oom_killed == 0:
                    seats[SEAT].oom_kill(3, bot=False)
                return False

            records.append(
                await Referee(spec(), setups, RefereeSettings(), stop=kill_at_trick_5).play()
            )
            records.append(await Referee(spec(), setups, RefereeSettings()).play())
            seats[SEAT].oom_kill(1, bot=False)
            records.append(await Referee(spec(), setups, RefereeSettings()).play())
            for seat in seats:
                await seat.close()
        return records

    records = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [[t["oom_kills"] for t in r.timing] for r in records] == [
        [0, 0, 3, 0],
        [0, 0, 0, 0],
        [0, 0, 1, 0],
    ]
    assert all(r.faults == [] and r.scores == base().scores for r in records)


def test_in_process_and_proxied_seats_answer_the_memory_kills() -> None:
    scripted = ScriptedSeat("north")
    assert scripted.take_oom_kills() == 0
    inner = MemorySeat("south", function_bot(first_legal, "south"))
    inner.oom_kill(2, bot=False)
    recorder = RecordingSeat(inner)
    assert recorder.take_oom_kills() == 2
    assert (recorder.take_oom_kills(), inner.take_oom_kills()) == (0, 0)
