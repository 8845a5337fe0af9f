"""``arena.protocol.messages``: the hand-written message types agree with
``protocol/schema.json`` field for field (issue 26: protocol messages typed),
and a real game's messages are of them."""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from arena.protocol import messages
from arena.protocol.codec import check_referee_message, schema
from arena.protocol.messages import SCHEMA_TYPES, hello_reply, pass_reply, play_reply

DEFS: dict[str, Any] = schema()["$defs"]


def _fields(definition: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(properties, required) of a schema definition, with those of ``allOf`` refs."""
    props = set(definition.get("properties", {}))
    required = set(definition.get("required", []))
    for part in definition.get("allOf", []):
        ref = part.get("$ref", "")
        if ref.startswith("#/$defs/"):
            more, more_required = _fields(DEFS[ref.removeprefix("#/$defs/")])
            props |= more
            required |= more_required
    return props, required


def test_every_message_of_the_schema_has_a_type() -> None:
    named = {d for d in DEFS if d.startswith(("referee_", "bot_"))}
    assert named <= set(SCHEMA_TYPES), sorted(named - set(SCHEMA_TYPES))
    assert set(SCHEMA_TYPES) <= set(DEFS)


@pytest.mark.parametrize("name", sorted(SCHEMA_TYPES))
def test_fields_and_required_fields_are_the_schemas(name: str) -> None:
    kind = SCHEMA_TYPES[name]
    props, required = _fields(DEFS[name])
    assert set(get_type_hints(kind)) == props, name
    # (__required_keys__ cannot see NotRequired under postponed annotations)
    hints = get_type_hints(kind, include_extras=True)
    optional = {k for k, h in hints.items() if get_origin(h) is typing.NotRequired}
    assert set(hints) - optional == required, name


@pytest.mark.parametrize("name", sorted(n for n in SCHEMA_TYPES if "_" in n and n[0] in "rb"))
def test_the_type_field_is_the_schemas_constant(name: str) -> None:
    if name in ("played_card", "trick_record"):
        pytest.skip("not a message")
    const = DEFS[name]["properties"]["type"]["const"]
    hint = get_type_hints(SCHEMA_TYPES[name])["type"]
    assert get_origin(hint) is typing.Literal and get_args(hint) == (const,)


def test_enumerations_are_the_schemas() -> None:
    hints = get_type_hints(messages.Forfeit)
    assert set(get_args(hints["reason"])) == set(DEFS["referee_forfeit"]["properties"]["reason"]["enum"])  # fmt: skip
    deal = DEFS["referee_deal"]["properties"]["pass_direction"]["enum"]
    assert set(get_args(get_type_hints(messages.Deal)["pass_direction"])) == set(deal)
    direction = DEFS["referee_pass"]["properties"]["direction"]["enum"]
    assert set(get_args(get_type_hints(messages.PassRequest)["direction"])) == set(direction)


def test_readers_type_a_checked_reply_and_refuse_another_kind() -> None:
    assert play_reply({"type": "play", "id": 4, "card": "QS"})["card"] == "QS"
    assert pass_reply({"type": "pass", "id": 2, "cards": ["2C", "3C", "4C"]})["cards"][2] == "4C"
    assert hello_reply({"type": "hello", "id": 0, "name": "ada"})["name"] == "ada"
    with pytest.raises(ValueError, match="not a 'play' reply: type 'pass'"):
        play_reply({"type": "pass", "id": 4, "cards": []})
    with pytest.raises(ValueError, match="not a 'hello' reply"):
        hello_reply({"id": 0, "name": "ada"})


def test_typed_messages_pass_the_schema() -> None:
    """Literal messages built to the types are the schema's (mypy checks the
    literals against the types; this checks the types against the schema)."""
    game_start: messages.GameStart = {
        "type": "game_start", "game_id": "r1-t0-k0", "seat": 2,
        "players": ["a", "b", "c", "d"], "target_score": None, "hands": 3, "seed": 7,
    }  # fmt: skip
    passed: messages.Passed = {
        "type": "passed", "hand_number": 1, "from": 3,
        "received": ["2C", "3C", "4C"], "hand": [r + "C" for r in "23456789TJQKA"],
    }  # fmt: skip
    forfeit: messages.Forfeit = {
        "type": "forfeit", "request_id": 5, "reason": "timeout", "detail": "late", "played": "2C",
    }  # fmt: skip
    bye: messages.Bye = {"type": "bye"}
    for message in (game_start, passed, forfeit, bye):
        check_referee_message(dict(message))
