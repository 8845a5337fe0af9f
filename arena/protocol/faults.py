"""Faults: what a bot did wrong, recorded rather than raised (protocol/README.md, "Faults")."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any


class FaultKind(Enum):
    """The four faults of protocol/README.md. ``value`` is the word used in records and reports."""

    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    ILLEGAL = "illegal"
    CRASHED = "crashed"


FAULT_KINDS: tuple[str, ...] = tuple(k.value for k in FaultKind)


@dataclass(frozen=True, slots=True)
class Fault:
    """One recorded fault.

    Attributes:
        seat: the seat (0..3) whose bot faulted.
        entrant: the entrant's name.
        reason: one of ``timeout``, ``malformed``, ``illegal``, ``crashed``.
        detail: what happened, in one line (text from the bot is cleaned and cut).
        hand_number: the hand (1-based), or ``None`` before the first deal.
        trick_number: the trick (1..13), or ``None`` outside play.
        request: the request type (``hello``, ``pass``, ``play``) or ``None``
            for a crash noticed outside a request.
        request_id: the id of the faulted request, or ``None``.
        answer: for an ``illegal`` fault, the move the bot answered, as data:
            the card (``"QS"``) of a play, the list of cards of a pass (as
            given, possibly not three); ``None`` for the other reasons.
            Records written before this field existed lack it (``replay``
            then reads the move back from ``detail``).
    """

    seat: int
    entrant: str
    reason: str
    detail: str
    hand_number: int | None = None
    trick_number: int | None = None
    request: str | None = None
    request_id: int | None = None
    answer: str | list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``games.jsonl``."""
        return asdict(self)
