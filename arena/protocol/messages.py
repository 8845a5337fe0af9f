"""The protocol's messages as types: one ``TypedDict`` per message type of
``protocol/schema.json`` (written by hand from it; ``tests/protocol/test_messages.py``
checks every field and every required field against the schema), so that
code reading a message's fields is checked by mypy.

The referee sends the ``referee_*`` messages (requests ``hello``, ``pass``,
``play``, which carry an ``id`` and ``time_ms``, the time to answer in
milliseconds; the others are notifications); a bot answers a request with the
``bot_*`` reply of the same ``type``. A reply that passed the schema
(:func:`arena.protocol.codec.check_reply`) is read through :func:`hello_reply`,
:func:`pass_reply` and :func:`play_reply`. Fields are never renamed or dropped
(``PROTOCOL.md``); new ones are added as ``NotRequired``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

#: A pass direction (R3) as the messages write it.
Direction = Literal["left", "right", "across", "hold"]


class PlayedCardJSON(TypedDict):
    """A card of a trick in play: the seat (0..3) that played it and the card."""

    seat: int
    card: str


class TrickRecordJSON(TypedDict):
    """A completed trick as messages carry it (R10, R11): the leader, the four
    cards in play order, the winner and its penalty points."""

    leader: int
    cards: list[PlayedCardJSON]
    winner: int
    points: int


# -- the referee's messages ----------------------------------------------------------


class HelloRequest(TypedDict):
    """``hello``: the handshake request; answer within ``time_ms`` milliseconds."""

    type: Literal["hello"]
    id: int
    protocol: str
    time_ms: int


class GameStart(TypedDict):
    """``game_start``: the seat (0..3), the four entrants' names, the game's
    length (``target_score`` or ``hands``, the other ``None``; R13) and the
    seat's own seed."""

    type: Literal["game_start"]
    game_id: str
    seat: int
    players: list[str]
    target_score: int | None
    hands: int | None
    seed: int


class Deal(TypedDict):
    """``deal``: the seat's 13 cards (R2), the hand's pass direction (R3) and
    the scores before the hand."""

    type: Literal["deal"]
    hand_number: int
    hand: list[str]
    pass_direction: Direction
    scores: list[int]


class PassRequest(TypedDict):
    """``pass``: choose three cards to give to seat ``to`` (R3)."""

    type: Literal["pass"]
    id: int
    hand_number: int
    direction: Literal["left", "right", "across"]
    to: int
    hand: list[str]
    time_ms: int


#: ``passed``: the three cards received from seat ``from`` and the hand after
#: the pass (R4: sent once every pass is final). ``from`` is a Python keyword,
#: so this one is declared by the functional syntax, with the schema's name.
Passed = TypedDict(
    "Passed",
    {
        "type": Literal["passed"],
        "hand_number": int,
        "from": int,
        "received": list[str],
        "hand": list[str],
    },
)


class PlayRequest(TypedDict):
    """``play``: choose a card of ``legal`` (R5..R9). ``trick`` is the trick
    so far, ``tricks`` the hand's completed tricks, ``passed``/``received``
    the seat's pass of this hand (``None`` on a hold hand), ``hand_points``
    the points taken this hand, ``scores`` the game's totals before it."""

    type: Literal["play"]
    id: int
    game_id: str
    seat: int
    hand_number: int
    trick_number: int
    leader: int
    trick: list[PlayedCardJSON]
    tricks: list[TrickRecordJSON]
    hand: list[str]
    legal: list[str]
    hearts_broken: bool
    passed: dict[str, Any] | None
    received: dict[str, Any] | None
    hand_points: list[int]
    scores: list[int]
    time_ms: int


class Trick(TypedDict):
    """``trick``: a completed trick (:class:`TrickRecordJSON`'s fields)."""

    type: Literal["trick"]
    hand_number: int
    trick_number: int
    leader: int
    cards: list[PlayedCardJSON]
    winner: int
    points: int


class HandEnd(TypedDict):
    """``hand_end``: the hand's points after the moon rule (R12), the seat
    that shot the moon or ``None``, the game's totals after it (R13)."""

    type: Literal["hand_end"]
    hand_number: int
    points: list[int]
    moon: int | None
    scores: list[int]


class GameEnd(TypedDict):
    """``game_end``: final scores and ranks (1 = best; ties share, R13)."""

    type: Literal["game_end"]
    game_id: str
    scores: list[int]
    ranks: list[int]


class Forfeit(TypedDict):
    """``forfeit``: the answer to request ``request_id`` was a fault; the
    referee ``played`` or ``passed`` for the seat (a default move)."""

    type: Literal["forfeit"]
    request_id: int
    reason: Literal["timeout", "illegal", "malformed"]
    detail: str
    played: NotRequired[str]
    passed: NotRequired[list[str]]


class Bye(TypedDict):
    """``bye``: the last message; the bot exits."""

    type: Literal["bye"]


#: Any message the referee sends.
RefereeMessage = (
    HelloRequest
    | GameStart
    | Deal
    | PassRequest
    | Passed
    | PlayRequest
    | Trick
    | HandEnd
    | GameEnd
    | Forfeit
    | Bye
)


# -- the bot's replies ------------------------------------------------------------------


class HelloReply(TypedDict):
    """The answer to ``hello``: the bot's name (cleaned before it is shown)."""

    type: Literal["hello"]
    id: int
    name: str
    author: NotRequired[str]
    version: NotRequired[str]


class PassReply(TypedDict):
    """The answer to ``pass``: three cards of the hand (judged by the referee, R3)."""

    type: Literal["pass"]
    id: int
    cards: list[str]


class PlayReply(TypedDict):
    """The answer to ``play``: one card (judged by the referee against ``legal``)."""

    type: Literal["play"]
    id: int
    card: str


#: Any reply a bot sends.
BotReply = HelloReply | PassReply | PlayReply

#: ``protocol/schema.json``'s definition name -> its type.
SCHEMA_TYPES: Final[dict[str, Any]] = {
    "played_card": PlayedCardJSON,
    "trick_record": TrickRecordJSON,
    "referee_hello": HelloRequest,
    "referee_game_start": GameStart,
    "referee_deal": Deal,
    "referee_pass": PassRequest,
    "referee_passed": Passed,
    "referee_play": PlayRequest,
    "referee_trick": Trick,
    "referee_hand_end": HandEnd,
    "referee_game_end": GameEnd,
    "referee_forfeit": Forfeit,
    "referee_bye": Bye,
    "bot_hello": HelloReply,
    "bot_pass": PassReply,
    "bot_play": PlayReply,
}


def _checked(message: Mapping[str, Any], kind: str) -> None:
    if message.get("type") != kind:
        raise ValueError(f"not a {kind!r} reply: type {message.get('type')!r}")


def hello_reply(message: Mapping[str, Any]) -> HelloReply:
    """A ``hello`` reply that passed the schema, typed.

    Raises:
        ValueError: its ``type`` is not ``hello`` (it was not checked).
    """
    _checked(message, "hello")
    return cast(HelloReply, message)


def pass_reply(message: Mapping[str, Any]) -> PassReply:
    """A ``pass`` reply that passed the schema, typed.

    Raises:
        ValueError: its ``type`` is not ``pass`` (it was not checked).
    """
    _checked(message, "pass")
    return cast(PassReply, message)


def play_reply(message: Mapping[str, Any]) -> PlayReply:
    """A ``play`` reply that passed the schema, typed.

    Raises:
        ValueError: its ``type`` is not ``play`` (it was not checked).
    """
    _checked(message, "play")
    return cast(PlayReply, message)
