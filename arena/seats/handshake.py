"""The ``hello`` handshake that opens every seat's first game
(protocol/README.md, "Handshake"), through the :class:`~arena.seats.seat.Seat`
interface: the referee, the runner and the tools run it alike."""

from __future__ import annotations

from arena.protocol import codec as protocol
from arena.protocol.faults import Fault
from arena.protocol.messages import hello_reply
from arena.seats.seat import Request, Seat

__all__ = ["handshake"]


async def handshake(bot: Seat, seat: int, startup_time: float) -> Fault | None:
    """Run the ``hello`` handshake; returns the fault, or ``None`` if it passed.

    Sets ``bot.self_name`` to the cleaned self-reported name.
    """
    reply = await bot.request(
        Request("hello", {"protocol": protocol.PROTOCOL_VERSION}, startup_time)
    )
    if reply.message is None:
        assert reply.fault is not None
        return Fault(
            seat,
            bot.label,
            reply.fault,
            f"handshake: {reply.detail}",
            None,
            None,
            "hello",
            reply.request_id,
        )
    bot.self_name = protocol.clean_text(str(hello_reply(reply.message).get("name", "")))
    return None
