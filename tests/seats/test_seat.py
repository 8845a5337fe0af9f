"""The :class:`~arena.seats.seat.Request` goes whole through every seat
wrapper (issue 26): the options a wrapper never names (``pace``,
``wall_cap``, ``deadline``, ``encoded``) reach the seat that acts on them."""

from __future__ import annotations

import io

import trio
import trio.testing

from arena.seats.memory import BotEnd, MemorySeat
from arena.seats.seat import Request, Seat
from arena.seats.stand_ins import RecordingSeat, SeatProxy
from arena.seats.wire import SEND_SLACK, next_tick
from arena.tools.play import Narrator, WatchedSeat


def test_a_request_reaches_the_seat_whole_through_three_wrappers() -> None:
    async def main() -> tuple[MemorySeat, RecordingSeat, list[float]]:
        async def slow(end: BotEnd) -> None:  # kept from its core for 3 s, then answers
            while (message := await end.receive()) is not None:
                if message["type"] == "hello":
                    end.reply(message, name="slow")
                elif message["type"] == "play":
                    await end.starve(3.0)
                    end.reply(message, card=message["legal"][0])

        inner = MemorySeat("south", slow, cpu_budget=True)
        recorder = RecordingSeat(SeatProxy(inner))
        seat: Seat = WatchedSeat(recorder, 2, Narrator(["n", "e", "s", "w"], None, io.StringIO()))
        times = []
        async with trio.open_nursery() as nursery:
            await inner.start(nursery)
            await trio.sleep(0.1)
            hello = await seat.request(Request("hello", {"protocol": 1}, 5.0, pace=(0.0, 0.25)))
            assert hello.fault is None
            times.append(trio.current_time())
            # 1 s of time limit counted in CPU time, up to a 4 s wall cap: a bot
            # kept from its core for 3 s (no CPU used) is answered at 3 s.
            fields = {"legal": ["2C"], "hand_number": 1, "trick_number": 1}
            play = Request("play", fields, 1.0, wall_cap=4.0, encoded=("tricks", [], "[]"))
            reply = await seat.request(play)
            assert (reply.fault, reply.message) == (None, {"type": "play", "id": 2, "card": "2C"})
            await seat.close()
        return inner, recorder, times

    inner, recorder, _ = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    # pace: sent on the first tick at or after the core was taken (t = 0.1).
    assert inner.asked_at[0] == next_tick(0.0, 0.25, 0.1, slack=SEND_SLACK) == 0.25
    # wall_cap: the 1 s limit ran in CPU time, so the starved bot was not timed out.
    (hello, play) = recorder.exchanges
    assert play.fault is None and play.elapsed == 3.0
    # encoded: the field went on the wire, and the recorder saw the whole message.
    assert play.request == {
        "type": "play",
        "id": 2,
        "legal": ["2C"],
        "hand_number": 1,
        "trick_number": 1,
        "time_ms": 1000,
        "tricks": [],
    }
    assert inner.end.received[1]["tricks"] == [] and hello.request["time_ms"] == 5000


def test_request_message_is_what_the_bot_is_sent() -> None:
    request = Request("pass", {"hand": ["2C"]}, 0.25, encoded=("x", 1, "1"))
    assert request.message(7) == {"type": "pass", "id": 7, "hand": ["2C"], "time_ms": 250, "x": 1}
