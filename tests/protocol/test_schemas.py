"""Checks of protocol/schema.json, the JSON Schemas of the hearts-arena/1 wire messages.

Every message definition must accept a realistic example and reject the concrete mistakes a
bot (or a buggy referee) can make. Moves that are well formed but against the rules (a pass of
two cards, a duplicate card) must pass the schema: they are judged *illegal* later, not
*malformed*. Rule ids (R3, ...) refer to RULES.md.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "protocol" / "schema.json"
README_PATH = ROOT / "protocol" / "README.md"
SCHEMA_ID = "urn:hearts-arena:protocol:1"

SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
REGISTRY: Registry = Registry().with_resource(SCHEMA_ID, Resource.from_contents(SCHEMA))

SHARED_DEFS = {"card", "seat", "cards", "played_card", "trick_record", "scores4", "request_id"}
REFEREE_TYPES = (
    "hello", "game_start", "deal", "pass", "passed", "play",
    "trick", "hand_end", "game_end", "forfeit", "bye",
)  # fmt: skip
BOT_TYPES = ("hello", "pass", "play")
MESSAGE_DEFS = {f"referee_{t}" for t in REFEREE_TYPES} | {f"bot_{t}" for t in BOT_TYPES}

SUITS = "CDSH"
RANKS = "23456789TJQKA"


def by_ref(name: str) -> Draft202012Validator:
    """The validator the arena builds: a $ref into the schema, resolved through a registry."""
    return Draft202012Validator({"$ref": f"{SCHEMA_ID}#/$defs/{name}"}, registry=REGISTRY)


def embedded(name: str) -> Draft202012Validator:
    """The same definition, standalone: the $defs copied next to a local $ref."""
    return Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{name}"})


VALIDATORS = {name: by_ref(name) for name in SCHEMA["$defs"]}
EMBEDDED = {name: embedded(name) for name in SCHEMA["$defs"]}


def sort_cards(cards: list[str]) -> list[str]:
    return sorted(cards, key=lambda c: (SUITS.index(c[1]), RANKS.index(c[0])))


# One deal, used throughout: hand 1, seat 0 passes left to seat 1 and receives from seat 3;
# seat 3 holds the two of clubs and leads it (R5), seat 0 must follow in clubs (R6).
HAND = ["9C", "TC", "QC", "3D", "5D", "6D", "7D", "TD", "7S", "QS", "TH", "JH", "AH"]
PASSED = ["QS", "JH", "AH"]
RECEIVED = ["KD", "QH", "KH"]
AFTER = sort_cards([c for c in HAND if c not in PASSED] + RECEIVED)
TRICK_1 = {
    "leader": 3,
    "cards": [
        {"seat": 3, "card": "2C"},
        {"seat": 0, "card": "QC"},
        {"seat": 1, "card": "AC"},
        {"seat": 2, "card": "5C"},
    ],
    "winner": 1,
    "points": 0,
}

VALID: dict[str, dict[str, Any]] = {
    "referee_hello": {"type": "hello", "id": 1, "protocol": "hearts-arena/1", "time_ms": 5000},
    "referee_game_start": {
        "type": "game_start",
        "game_id": "t1-g0007",
        "seat": 0,
        "players": ["my-bot", "greedy", "random", "lowball"],
        "target_score": 100,
        "hands": None,
        "seed": 681204397,
    },
    "referee_deal": {
        "type": "deal",
        "hand_number": 1,
        "hand": HAND,
        "pass_direction": "left",
        "scores": [0, 0, 0, 0],
    },
    "referee_pass": {
        "type": "pass",
        "id": 2,
        "hand_number": 1,
        "direction": "left",
        "to": 1,
        "hand": HAND,
        "time_ms": 1000,
    },
    "referee_passed": {
        "type": "passed",
        "hand_number": 1,
        "from": 3,
        "received": RECEIVED,
        "hand": AFTER,
    },
    "referee_play": {
        "type": "play",
        "id": 4,
        "game_id": "t1-g0007",
        "seat": 0,
        "hand_number": 1,
        "trick_number": 2,
        "leader": 1,
        "trick": [{"seat": 1, "card": "2D"}, {"seat": 2, "card": "KS"}, {"seat": 3, "card": "4H"}],
        "tricks": [TRICK_1],
        "hand": [c for c in AFTER if c != "QC"],
        "legal": ["3D", "5D", "6D", "7D", "TD", "KD"],
        "hearts_broken": True,
        "passed": {"to": 1, "cards": PASSED},
        "received": {"from": 3, "cards": RECEIVED},
        "hand_points": [0, 0, 0, 0],
        "scores": [0, 0, 0, 0],
        "time_ms": 1000,
    },
    "referee_trick": {"type": "trick", "hand_number": 1, "trick_number": 1, **TRICK_1},
    "referee_hand_end": {
        "type": "hand_end",
        "hand_number": 2,
        "points": [26, 26, 26, 0],
        "moon": 3,
        "scores": [44, 32, 28, 0],
    },
    "referee_game_end": {
        "type": "game_end",
        "game_id": "t1-g0007",
        "scores": [101, 57, 57, 88],
        "ranks": [4, 1, 1, 3],
    },
    "referee_forfeit": {
        "type": "forfeit",
        "request_id": 3,
        "reason": "timeout",
        "detail": "no reply within 1000 ms",
        "played": "9C",
    },
    "referee_bye": {"type": "bye"},
    "bot_hello": {
        "type": "hello",
        "id": 1,
        "name": "my-bot",
        "author": "A. Player",
        "version": "0.3",
    },
    "bot_pass": {"type": "pass", "id": 2, "cards": PASSED},
    "bot_play": {"type": "play", "id": 3, "card": "QC"},
    # building blocks
    "card": "TD",
    "seat": 3,
    "cards": HAND,
    "played_card": {"seat": 2, "card": "QS"},
    "trick_record": TRICK_1,
    "scores4": [18, 6, 2, 0],
    "request_id": 0,
}


DROP = object()


def with_(base: str, /, **changes: Any) -> dict[str, Any]:
    """A deep copy of VALID[base] with fields replaced (a value of DROP removes the field)."""
    msg = copy.deepcopy(VALID[base])
    for key, value in changes.items():
        if value is DROP:
            del msg[key]
        else:
            msg[key] = value
    return msg


def error_sites(name: str, instance: Any) -> set[tuple[tuple[Any, ...], str]]:
    """(path into the instance, failing keyword) of every error, via the arena's validator."""
    return {
        (tuple(e.absolute_path), str(e.validator)) for e in VALIDATORS[name].iter_errors(instance)
    }


# -- the document itself ------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == SCHEMA_ID


def test_schema_holds_only_definitions() -> None:
    # Annotations are fine at the top; no keyword may constrain an instance there.
    assert set(SCHEMA) <= {"$schema", "$id", "$defs", "title", "description"}
    assert Draft202012Validator(SCHEMA).is_valid(["anything", 1, None])


def test_definition_names_are_exactly_the_contracted_ones() -> None:
    assert set(SCHEMA["$defs"]) == SHARED_DEFS | MESSAGE_DEFS


@pytest.mark.parametrize("name", sorted(SHARED_DEFS | MESSAGE_DEFS))
def test_every_definition_has_a_description(name: str) -> None:
    assert SCHEMA["$defs"][name]["description"].strip()


@pytest.mark.parametrize("name", sorted(MESSAGE_DEFS))
def test_message_type_is_a_required_const_matching_the_name(name: str) -> None:
    definition = SCHEMA["$defs"][name]
    assert definition["properties"]["type"] == {"const": name.split("_", 1)[1]}
    assert "type" in definition["required"]


def test_all_refs_are_local_and_resolve() -> None:
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(SCHEMA)
    assert refs
    for ref in refs:
        assert re.fullmatch(r"#/\$defs/\w+", ref), ref
        assert ref.removeprefix("#/$defs/") in SCHEMA["$defs"], ref


# -- accepted instances -------------------------------------------------------------------------


def test_valid_examples_cover_every_definition() -> None:
    assert set(VALID) == set(SCHEMA["$defs"])


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_example_passes_both_ways(name: str) -> None:
    assert error_sites(name, VALID[name]) == set()
    assert EMBEDDED[name].is_valid(VALID[name])


def test_example_deal_is_consistent() -> None:
    # The fixtures above obey the rules, so they double as documentation.
    assert sort_cards(HAND) == HAND
    assert len(set(AFTER)) == 13
    assert set(PASSED) <= set(HAND)
    assert not set(RECEIVED) & set(HAND)


ACCEPTED: list[tuple[str, Any]] = [
    # R3 wants three distinct own cards, but breaking that is *illegal*, not malformed.
    ("bot_pass", with_("bot_pass", cards=["QS", "AH"])),
    ("bot_pass", with_("bot_pass", cards=["QS", "QS", "AH"])),
    ("bot_pass", with_("bot_pass", cards=[])),
    ("bot_pass", with_("bot_pass", cards=["2C", "3C", "4C", "5C"])),
    ("bot_play", with_("bot_play", card="AS")),  # not in hand: illegal, not malformed
    # Extra fields are allowed in both directions.
    ("bot_play", with_("bot_play", think_ms=12, comment="ducking")),
    ("bot_pass", with_("bot_pass", reason={"void": "D"})),
    ("bot_hello", {"type": "hello", "id": 1, "name": "x"}),
    ("bot_hello", with_("bot_hello", name="")),
    ("referee_play", with_("referee_play", note="future field")),
    ("referee_bye", {"type": "bye", "why": "tournament over"}),
    # A hold hand (R3, hand 4): nothing passed or received.
    ("referee_play", with_("referee_play", passed=None, received=None)),
    ("referee_deal", with_("referee_deal", hand_number=4, pass_direction="hold")),
    # Leading the first trick: empty trick, no tricks yet, only 2C legal (R5).
    ("referee_play", with_("referee_play", trick_number=1, trick=[], tricks=[], legal=["2C"])),
    ("referee_game_start", with_("referee_game_start", target_score=None, hands=16)),
    ("referee_hand_end", with_("referee_hand_end", points=[18, 6, 2, 0], moon=None)),
    ("referee_forfeit", with_("referee_forfeit", reason="illegal", played="QC")),
    (
        "referee_forfeit",
        {
            "type": "forfeit",
            "request_id": 2,
            "reason": "malformed",
            "detail": "not JSON",
            "passed": ["QS", "AH", "JH"],
        },
    ),
]


@pytest.mark.parametrize(("name", "instance"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
def test_accepted(name: str, instance: Any) -> None:
    assert error_sites(name, instance) == set()
    assert EMBEDDED[name].is_valid(instance)


# -- rejected instances: (definition, instance, an expected (path, keyword) among the errors) --

REJECTED: list[tuple[str, Any, tuple[tuple[Any, ...], str]]] = [
    # card spelling
    ("bot_play", with_("bot_play", card="1C"), (("card",), "pattern")),
    ("bot_play", with_("bot_play", card="QX"), (("card",), "pattern")),
    ("bot_play", with_("bot_play", card="10H"), (("card",), "pattern")),
    ("bot_play", with_("bot_play", card="qs"), (("card",), "pattern")),
    ("bot_play", with_("bot_play", card="QS\n"), (("card",), "maxLength")),  # Python's $ quirk
    ("bot_play", with_("bot_play", card=12), (("card",), "type")),
    ("bot_play", with_("bot_play", card=["QS"]), (("card",), "type")),
    ("bot_pass", with_("bot_pass", cards=["QS", "1H", "AH"]), (("cards", 1), "pattern")),
    ("bot_pass", with_("bot_pass", cards="QS JH AH"), (("cards",), "type")),
    ("bot_pass", with_("bot_pass", cards=[*HAND, "2C"]), (("cards",), "maxItems")),
    # ids
    ("bot_play", with_("bot_play", id="3"), (("id",), "type")),
    ("bot_play", with_("bot_play", id=True), (("id",), "type")),
    ("bot_play", with_("bot_play", id=2.5), (("id",), "type")),
    ("bot_play", with_("bot_play", id=-1), (("id",), "minimum")),
    ("bot_pass", with_("bot_pass", id=None), (("id",), "type")),
    ("bot_hello", with_("bot_hello", id=False), (("id",), "type")),
    # missing fields, wrong type const, not an object
    ("bot_play", with_("bot_play", card=DROP), ((), "required")),
    ("bot_play", with_("bot_play", id=DROP), ((), "required")),
    ("bot_play", with_("bot_play", type=DROP), ((), "required")),
    ("bot_pass", with_("bot_pass", cards=DROP), ((), "required")),
    ("bot_hello", with_("bot_hello", name=DROP), ((), "required")),
    ("bot_play", with_("bot_play", type="pass"), (("type",), "const")),
    ("bot_play", with_("bot_play", type="PLAY"), (("type",), "const")),
    ("bot_hello", with_("bot_hello", name=42), (("name",), "type")),
    ("bot_hello", with_("bot_hello", version=3), (("version",), "type")),
    ("bot_play", ["play", 3, "QC"], ((), "type")),
    ("bot_play", "play QC", ((), "type")),
    # referee messages
    ("referee_hello", with_("referee_hello", protocol="hearts-arena/2"), (("protocol",), "const")),
    ("referee_hello", with_("referee_hello", time_ms=-1), (("time_ms",), "minimum")),
    ("referee_hello", with_("referee_hello", id=DROP), ((), "required")),
    ("referee_game_start", with_("referee_game_start", seat=4), (("seat",), "maximum")),
    ("referee_game_start", with_("referee_game_start", seat=-1), (("seat",), "minimum")),
    (
        "referee_game_start",
        with_("referee_game_start", players=["a", "b", "c"]),
        (("players",), "minItems"),
    ),
    (
        "referee_game_start",
        with_("referee_game_start", target_score="100"),
        (("target_score",), "type"),
    ),
    ("referee_game_start", with_("referee_game_start", hands=DROP), ((), "required")),
    ("referee_game_start", with_("referee_game_start", seed=None), (("seed",), "type")),
    ("referee_deal", with_("referee_deal", pass_direction="north"), (("pass_direction",), "enum")),
    ("referee_deal", with_("referee_deal", hand=HAND[:12]), (("hand",), "minItems")),
    ("referee_deal", with_("referee_deal", hand=[*HAND[:12], "9C"]), (("hand",), "uniqueItems")),
    ("referee_deal", with_("referee_deal", scores=[0, 0, 0]), (("scores",), "minItems")),
    ("referee_deal", with_("referee_deal", hand_number=0), (("hand_number",), "minimum")),
    ("referee_pass", with_("referee_pass", direction="hold"), (("direction",), "enum")),
    ("referee_pass", with_("referee_pass", to=4), (("to",), "maximum")),
    ("referee_pass", with_("referee_pass", time_ms=DROP), ((), "required")),
    ("referee_passed", with_("referee_passed", received=RECEIVED[:2]), (("received",), "minItems")),
    ("referee_passed", with_("referee_passed", **{"from": 4}), (("from",), "maximum")),
    # play request: `passed` / `received` must be {to|from, 3 cards} or null
    ("referee_play", with_("referee_play", passed={"to": 1}), (("passed",), "required")),
    (
        "referee_play",
        with_("referee_play", passed={"to": 1, "cards": PASSED[:2]}),
        (("passed", "cards"), "minItems"),
    ),
    (
        "referee_play",
        with_("referee_play", passed={"to": 4, "cards": PASSED}),
        (("passed", "to"), "maximum"),
    ),
    (
        "referee_play",
        with_("referee_play", passed={"to": 1, "cards": ["QS", "JH", "10H"]}),
        (("passed", "cards", 2), "pattern"),
    ),
    ("referee_play", with_("referee_play", passed=PASSED), (("passed",), "type")),
    ("referee_play", with_("referee_play", passed=DROP), ((), "required")),
    (
        "referee_play",
        with_("referee_play", received={"to": 3, "cards": RECEIVED}),
        (("received",), "required"),
    ),
    ("referee_play", with_("referee_play", trick_number=14), (("trick_number",), "maximum")),
    ("referee_play", with_("referee_play", trick=TRICK_1["cards"]), (("trick",), "maxItems")),
    (
        "referee_play",
        with_("referee_play", tricks=[{**TRICK_1, "cards": TRICK_1["cards"][:3]}]),
        (("tricks", 0, "cards"), "minItems"),
    ),
    ("referee_play", with_("referee_play", legal=[]), (("legal",), "minItems")),
    ("referee_play", with_("referee_play", hearts_broken="no"), (("hearts_broken",), "type")),
    (
        "referee_play",
        with_("referee_play", hand_points=[0, 0, 0, 0, 0]),
        (("hand_points",), "maxItems"),
    ),
    ("referee_trick", with_("referee_trick", winner=4), (("winner",), "maximum")),
    ("referee_trick", with_("referee_trick", points=17), (("points",), "maximum")),
    ("referee_trick", with_("referee_trick", cards=TRICK_1["cards"][:3]), (("cards",), "minItems")),
    ("referee_trick", with_("referee_trick", leader=DROP), ((), "required")),
    ("referee_hand_end", with_("referee_hand_end", moon=4), (("moon",), "oneOf")),
    ("referee_hand_end", with_("referee_hand_end", moon=DROP), ((), "required")),
    ("referee_game_end", with_("referee_game_end", ranks=[0, 1, 2, 3]), (("ranks", 0), "minimum")),
    ("referee_game_end", with_("referee_game_end", scores=[1, 2, "3", 4]), (("scores", 2), "type")),
    # forfeit: exactly one of played / passed
    ("referee_forfeit", with_("referee_forfeit", passed=PASSED), ((), "oneOf")),
    ("referee_forfeit", with_("referee_forfeit", played=DROP), ((), "oneOf")),
    ("referee_forfeit", with_("referee_forfeit", played="10C"), (("played",), "pattern")),
    (
        "referee_forfeit",
        with_("referee_forfeit", played=DROP, passed=PASSED[:2]),
        (("passed",), "minItems"),
    ),
    ("referee_forfeit", with_("referee_forfeit", reason="crashed"), (("reason",), "enum")),
    ("referee_forfeit", with_("referee_forfeit", request_id="3"), (("request_id",), "type")),
    ("referee_bye", {"type": "goodbye"}, (("type",), "const")),
    # building blocks
    ("seat", 4, ((), "maximum")),
    ("seat", True, ((), "type")),
    ("card", "AC ", ((), "maxLength")),
    ("scores4", [0, 0, -1, 0], ((2,), "minimum")),
    ("request_id", True, ((), "type")),
]


def rejected_id(case: tuple[str, Any, tuple[tuple[Any, ...], str]]) -> str:
    name, _, (path, keyword) = case
    return f"{name}:{'/'.join(map(str, path)) or '.'}:{keyword}"


@pytest.mark.parametrize(("name", "instance", "site"), REJECTED, ids=map(rejected_id, REJECTED))
def test_rejected(name: str, instance: Any, site: tuple[tuple[Any, ...], str]) -> None:
    assert site in error_sites(name, instance)
    assert not EMBEDDED[name].is_valid(instance)


# -- the README's example exchange must itself be valid -----------------------------------------


def readme_example_lines() -> list[tuple[str, dict[str, Any]]]:
    lines = []
    for line in README_PATH.read_text(encoding="utf-8").splitlines():
        if line.startswith(("> {", "< {")):
            message = json.loads(line[2:])
            side = "referee" if line[0] == ">" else "bot"
            lines.append((f"{side}_{message['type']}", message))
    return lines


def test_readme_example_exchange_validates() -> None:
    lines = readme_example_lines()
    assert [name for name, _ in lines] == [
        "referee_hello", "bot_hello", "referee_game_start", "referee_deal", "referee_pass",
        "bot_pass", "referee_passed", "referee_play", "bot_play", "referee_forfeit",
    ]  # fmt: skip
    for name, message in lines:
        assert error_sites(name, message) == set(), (name, message)


def test_readme_example_exchange_is_consistent_with_the_rules() -> None:
    msgs = dict(readme_example_lines())
    deal, request, reply = msgs["referee_deal"], msgs["referee_pass"], msgs["bot_pass"]
    passed, play, played = msgs["referee_passed"], msgs["referee_play"], msgs["bot_play"]
    seat = msgs["referee_game_start"]["seat"]
    assert deal["hand"] == sort_cards(deal["hand"]) == request["hand"]
    assert (deal["pass_direction"], request["to"], passed["from"]) == ("left", seat + 1, seat + 3)
    assert request["id"] == reply["id"]
    assert len(set(reply["cards"]) & set(deal["hand"])) == 3
    kept = [c for c in deal["hand"] if c not in reply["cards"]]
    assert passed["hand"] == sort_cards(kept + passed["received"]) == play["hand"]
    assert play["passed"] == {"to": request["to"], "cards": reply["cards"]}
    assert play["received"] == {"from": passed["from"], "cards": passed["received"]}
    led = play["trick"][0]["card"]
    assert led == "2C"
    assert play["legal"] == [c for c in play["hand"] if c[1] == "C"]
    assert played["id"] == play["id"]
    assert played["card"] in play["legal"]
    forfeit = msgs["referee_forfeit"]
    assert forfeit["request_id"] == play["id"]
    assert forfeit["played"] == play["legal"][0]
