"""Faults: what a bot did wrong, recorded rather than raised (protocol/README.md, "Faults")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class FaultKind(StrEnum):
    """The four faults of protocol/README.md. ``value`` is the word used in records and reports.

    A string enum: ``FaultKind.TIMEOUT == "timeout"``, so a record read back
    from JSON compares equal to the kind.
    """

    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    ILLEGAL = "illegal"
    CRASHED = "crashed"


FAULT_KINDS: tuple[str, ...] = tuple(k.value for k in FaultKind)


@dataclass(frozen=True, slots=True)
class Fault:
    """One recorded fault: built here, written by :meth:`to_json`, read back by :meth:`from_json`.

    Attributes:
        seat: the seat (0..3) whose bot faulted.
        entrant: the entrant's name.
        reason: the :class:`FaultKind` (a string given is converted; an
            unknown word raises ``ValueError``).
        detail: what happened, in one line (text from the bot is cleaned and cut).
        hand_number: the hand (1-based), or ``None`` before the first deal.
        trick_number: the trick (1..13), or ``None`` outside play.
        request: the request type (``hello``, ``pass``, ``play``) or ``None``
            for a crash noticed outside a request.
        request_id: the id of the faulted request, or ``None``.
        answer: for an ``illegal`` fault, the move the bot answered, as data:
            the card (``"QS"``) of a play, the list of cards of a pass (as
            given, possibly not three); ``None`` for the other reasons.
        cards: for an ``illegal`` fault, the offending cards: the card of a
            play (``["2C"]``); of a pass, the cards not held or given twice,
            or every card given when there are not three. ``None`` otherwise.
        rule: for an ``illegal`` fault, the id of the rule the move breaks
            (``"R2"`` a card not held, ``"R3"`` a bad pass, ``"R5"``-``"R9"``
            a card the rules forbid, protocol/RULES.md); ``None`` otherwise.

    Records written before ``answer`` existed give the move only in
    ``detail``; before ``cards`` and ``rule`` existed, those are ``None``:
    :meth:`from_json` reads all of them.
    """

    seat: int
    entrant: str
    reason: FaultKind
    detail: str
    hand_number: int | None = None
    trick_number: int | None = None
    request: str | None = None
    request_id: int | None = None
    answer: str | list[str] | None = None
    cards: list[str] | None = None
    rule: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.reason, FaultKind):
            object.__setattr__(self, "reason", FaultKind(self.reason))

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``games.jsonl`` (the fields in order; ``reason`` its word)."""
        return {
            "seat": self.seat,
            "entrant": self.entrant,
            "reason": self.reason.value,
            "detail": self.detail,
            "hand_number": self.hand_number,
            "trick_number": self.trick_number,
            "request": self.request,
            "request_id": self.request_id,
            "answer": list(self.answer) if isinstance(self.answer, list) else self.answer,
            "cards": list(self.cards) if self.cards is not None else None,
            "rule": self.rule,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        """A fault as :meth:`to_json` wrote it (or an older record: missing
        optional fields are ``None``; an ``illegal`` fault without ``answer``
        gets its move from the ``detail`` the referee wrote then,
        ``"played QS: ..."`` or ``"pass 2C 3C 9H: ..."``).

        Raises:
            ValueError: ``reason`` is not a fault kind.
            KeyError: ``seat``, ``entrant`` or ``reason`` is missing.
        """
        reason = FaultKind(data["reason"])
        detail = str(data.get("detail", ""))
        answer = data.get("answer")
        request = data.get("request")
        if answer is None and reason is FaultKind.ILLEGAL:
            answer = _legacy_answer(detail, request)
        cards = data.get("cards")
        return cls(
            seat=int(data["seat"]),
            entrant=str(data["entrant"]),
            reason=reason,
            detail=detail,
            hand_number=data.get("hand_number"),
            trick_number=data.get("trick_number"),
            request=request,
            request_id=data.get("request_id"),
            answer=[str(c) for c in answer] if isinstance(answer, list) else answer,
            cards=[str(c) for c in cards] if isinstance(cards, list) else None,
            rule=data.get("rule"),
        )


def _legacy_answer(detail: str, request: str | None) -> str | list[str] | None:
    """The move of an ``illegal`` fault recorded before the ``answer`` field:
    the referee then wrote ``"played QS: ..."`` or ``"pass 2C 3C 9H: ..."``."""
    head, sep, _rest = detail.partition(": ")
    if not sep:
        return None
    word, _, move = head.partition(" ")
    if request == "play" and word == "played" and move and " " not in move:
        return move
    if request == "pass" and word == "pass":
        return move.split()
    return None
