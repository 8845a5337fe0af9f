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
    """

    seat: int
    entrant: str
    reason: str
    detail: str
    hand_number: int | None = None
    trick_number: int | None = None
    request: str | None = None
    request_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``games.jsonl``."""
        return asdict(self)
