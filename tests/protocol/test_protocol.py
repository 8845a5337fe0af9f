"""Line decoding, reply checks, and the fast reply check against jsonschema."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.core.cards import CARD_NAMES
from arena.protocol import codec as protocol
from arena.protocol.codec import ProtocolError, check_reply, clean_text, decode_line, reply_is_valid


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"hello", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'"play"', "not an object"),
        (b'{"type": "play", "card": "\xff"}', "not UTF-8"),
        (b'{"type": "play",', "not JSON"),
        (b"[" * 20000 + b"]" * 20000, "nested too deeply"),
        (b'{"n": ' + b"9" * 5000 + b"}", "integer string conversion"),
        (b'{"type": "play", "id": 3, "card": "QS", "x": NaN}', "NaN is not a JSON number"),
        (b'{"x": -Infinity}', "-Infinity is not a JSON number"),
    ],
)
def test_decode_line_rejects_with_a_reason(raw: bytes, fragment: str) -> None:
    with pytest.raises(ProtocolError, match=fragment):
        decode_line(raw)


def test_decode_line_accepts_an_object_with_a_trailing_cr() -> None:
    assert decode_line(b'{"type":"play","id":3,"card":"QS"}\r') == {
        "type": "play",
        "id": 3,
        "card": "QS",
    }


def test_a_reply_carries_the_id_in_any_type_that_means_it() -> None:
    assert protocol.carries_id({"id": 3}, 3) and protocol.carries_id({"id": 3.0}, 3)
    assert protocol.carries_id({"id": " 3"}, 3)
    assert not protocol.carries_id({"id": True}, 1) and not protocol.carries_id({"id": 4}, 3)
    assert not protocol.carries_id({"id": [3]}, 3) and not protocol.carries_id({}, 3)


def test_transcript_keeps_a_replys_fields_and_only_names_the_others() -> None:
    reply = {"type": "hello", "id": 1, "name": "n" * 500, "version": "2"}
    reply |= {f"extra{i}": [[{"deep": "x" * 1000}]] for i in range(10)}
    kept = protocol.transcript_reply(reply)
    assert kept["name"] == "n" * 200 + "..." and kept["version"] == "2"
    assert kept["ignored_fields"] == [f"extra{i}" for i in range(8)] + ["... 2 more"]
    play = {"type": "play", "id": 7, "card": "QS"}
    assert protocol.transcript_reply(play) == play


def test_request_id_is_an_integer_never_a_bool_or_float() -> None:
    assert protocol.request_id_of({"id": 4}) == 4
    assert protocol.request_id_of({"id": True}) is None
    assert protocol.request_id_of({"id": 4.0}) is None
    assert protocol.request_id_of({}) is None


@pytest.mark.parametrize(
    ("kind", "reply", "fragment"),
    [
        ("play", {"type": "pass", "id": 1, "card": "QS"}, "at type"),
        ("play", {"type": "play", "id": 1}, "'card' is a required property"),
        ("play", {"type": "play", "id": 1, "card": "10H"}, "at card"),
        ("pass", {"type": "pass", "id": 1, "cards": "QS KS AS"}, "at cards"),
        ("pass", {"type": "pass", "id": 1, "cards": ["QS", 5, "AS"]}, "at cards/1"),
    ],
)
def test_check_reply_names_the_field(kind: str, reply: dict, fragment: str) -> None:
    with pytest.raises(ProtocolError, match=fragment):
        check_reply(kind, reply)


def test_clean_text_removes_controls_and_bidi_and_cuts() -> None:
    assert clean_text("ev\u202eil\x1b[31m bot\n\tname") == "evil[31m bot name"
    assert len(clean_text("x" * 500)) == 64


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10**12)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
cards = st.sampled_from(CARD_NAMES) | st.sampled_from(["10H", "qs", "QS ", "", "1C", "ZZ"]) | values
replies = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["play", "pass", "hello", "PLAY"]) | values,
        "id": st.integers(-2, 2**40) | st.booleans() | st.floats(allow_nan=False) | values,
        "card": cards,
        "cards": st.lists(cards, max_size=15) | values,
        "name": st.text(max_size=4) | values,
        "author": st.text(max_size=4) | values,
        "version": st.text(max_size=4) | values,
        "extra": values,
    },
)


@settings(max_examples=800, deadline=None)
@given(kind=st.sampled_from(["play", "pass", "hello"]), reply=replies)
def test_fast_reply_check_agrees_with_jsonschema(kind: str, reply: dict) -> None:
    """The hot-path check accepts only what the schema accepts, and together with
    its jsonschema fallback accepts and rejects exactly what jsonschema does."""
    schema_says = protocol.validator(f"bot_{kind}").is_valid(reply)
    if protocol._plainly_valid(kind, reply):
        assert schema_says
    assert reply_is_valid(kind, reply) == schema_says


def test_a_plain_hello_is_checked_without_jsonschema() -> None:
    # Every arena process that starts a bot checks its hello: a plain one is
    # answered by the fast path, which spares the process jsonschema's import.
    code = (
        "import sys\n"
        "from arena.protocol import codec\n"
        "codec.check_reply('hello', {'type': 'hello', 'id': 0, 'name': 'x', 'author': 'y'})\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert not protocol._plainly_valid("hello", {"type": "hello", "id": 0, "name": 5})
    assert not protocol._plainly_valid(
        "hello", {"type": "hello", "id": 0, "name": "x", "version": 2}
    )
    assert not protocol._plainly_valid("hello", {"type": "hello", "id": True, "name": "x"})
