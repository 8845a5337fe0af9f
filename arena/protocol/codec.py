"""The wire protocol ``hearts-arena/1``: framing, parsing and schema checks.

Every line a bot sends is judged here before the referee looks at it:

1. :func:`decode_line` turns raw bytes into a JSON object, or raises
   :class:`ProtocolError` (not UTF-8, not JSON, not an object).
2. The bot process matches the object to the pending request by ``id``
   (protocol/README.md, "Which line answers a request").
3. :func:`check_reply` validates the object against the JSON Schema of the
   pending request's type (``protocol/schema.json``, draft 2020-12).

The validators are built once per message type and chosen by type, so
nothing on the per-move path re-reads or re-compiles a schema.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Final, cast

from arena.core.cards import CARD_NAMES
from arena.core.resources import protocol_dir
from arena.protocol.messages import BotReply, RefereeMessage

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

PROTOCOL_VERSION: Final = "hearts-arena/1"
#: Longest line a bot may send, in bytes, newline excluded (protocol/README.md).
MAX_LINE_BYTES: Final = 64 * 1024
#: Unsolicited lines (objects without the pending ``id``) tolerated per request;
#: one more makes the reply malformed (protocol/README.md, "Which line answers a request").
MAX_UNSOLICITED: Final = 16
#: Longest self-reported name shown in reports, in characters.
MAX_NAME_CHARS: Final = 64

REQUEST_TYPES: Final = ("hello", "pass", "play")
NOTIFICATION_TYPES: Final = (
    "game_start",
    "deal",
    "passed",
    "trick",
    "hand_end",
    "game_end",
    "forfeit",
    "bye",
)


class ProtocolError(ValueError):
    """A line or message that breaks the protocol (the fault ``malformed``).

    Attributes:
        detail: one line saying what was wrong, naming the field and the
            value received where there is one.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@cache
def schema() -> dict[str, Any]:
    """The protocol's JSON Schema document (``protocol/schema.json``)."""
    with (protocol_dir() / "schema.json").open(encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


@cache
def validator(definition: str) -> Draft202012Validator:
    """A validator for one ``$defs`` entry of the schema, built once
    (jsonschema is imported here, on the first one: a command that checks no
    message, such as ``--help``, never loads it).

    Args:
        definition: ``"bot_play"``, ``"referee_deal"`` and so on.

    Raises:
        KeyError: no such definition.
    """
    from jsonschema import Draft202012Validator

    defs = schema()["$defs"]
    if definition not in defs:
        raise KeyError(f"no schema definition {definition!r}")
    return Draft202012Validator(_inline_refs(defs[definition], defs))


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Replace each ``{"$ref": "#/$defs/x", ...}`` by definition ``x`` (joined
    with the sibling keywords by ``allOf``). The protocol's schema has no
    recursive definitions, so this ends; it spares jsonschema a reference
    lookup per node, which halves validation time."""
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref: str = node["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r} in the protocol schema")
        target = _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
        rest = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
        return {"allOf": [target, rest]} if rest else target
    return {k: _inline_refs(v, defs) for k, v in node.items()}


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


#: The decoder of every bot line, built once: ``json.loads`` with a keyword
#: builds a new decoder (and its scanner) per call, half the cost of a reply.
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def decode_line(raw: bytes) -> dict[str, Any]:
    """Parse one line (without its newline) sent by a bot.

    Returns:
        The JSON object.

    Raises:
        ProtocolError: the bytes are not UTF-8, not JSON (``NaN`` and
            ``Infinity``, which Python would accept, are not JSON), nested
            too deeply for the parser, or not an object.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"line is not UTF-8 (byte {exc.start})") from None
    try:
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        obj = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            f"line is not JSON: {exc.msg} at column {exc.colno}: {_short(text)}"
        ) from None
    except RecursionError:
        detail = f"line is not JSON we accept: nested too deeply: {_short(text)}"
        raise ProtocolError(detail) from None
    except ValueError as exc:  # NaN or Infinity, or an integer too long to convert
        raise ProtocolError(f"line is not JSON we accept: {_short(str(exc))}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"line is JSON but not an object: {_short(obj)}")
    return obj


def request_id_of(obj: dict[str, Any]) -> int | None:
    """The integer ``id`` an object carries, or ``None`` (booleans and floats are not ids)."""
    value = obj.get("id")
    return value if type(value) is int else None


def carries_id(obj: dict[str, Any], rid: int) -> bool:
    """Whether ``obj`` answers request ``rid``: its ``id`` is ``rid``, or a
    value that means it although the schema refuses its type (``3.0``,
    ``"3"``), so that the reply is judged and found malformed rather than
    ignored as unsolicited (protocol/README.md, "Which line answers")."""
    value = obj.get("id")
    if type(value) is int or type(value) is float:
        return value == rid
    return type(value) is str and value.strip() == str(rid)


#: Fields of a reply kept in a transcript (all a reply needs).
_REPLY_FIELDS: Final = ("type", "id", "name", "author", "version", "card", "cards")
_TRANSCRIPT_TEXT: Final = 200  # characters kept of a bot's own text field


def transcript_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply as kept in a transcript: its protocol fields (texts cut to
    200 characters) and the names of any other fields under
    ``"ignored_fields"`` (at most 8, each cut to 40 characters), so that a
    bot cannot make the record large, deep or not strict JSON."""
    out: dict[str, Any] = {}
    for key in _REPLY_FIELDS:
        if key in reply:
            value = reply[key]
            if isinstance(value, str) and len(value) > _TRANSCRIPT_TEXT:
                value = value[:_TRANSCRIPT_TEXT] + "..."
            out[key] = value
    other = [k for k in reply if k not in _REPLY_FIELDS]
    if other:
        out["ignored_fields"] = [k[:40] for k in other[:8]]
        if len(other) > 8:
            out["ignored_fields"].append(f"... {len(other) - 8} more")
    return out


_CARD_SET: Final = frozenset(CARD_NAMES)


def _plainly_valid(kind: str, obj: dict[str, Any]) -> bool:
    """A fast sufficient test for the common reply: True only for replies the
    schema accepts (``tests/protocol/test_protocol.py`` checks this with hypothesis);
    anything else goes to jsonschema, which stays the definition of valid."""
    rid = obj.get("id")
    if type(rid) is not int or rid < 0 or obj.get("type") != kind:
        return False
    if kind == "play":
        card = obj.get("card")
        return type(card) is str and card in _CARD_SET
    if kind == "pass":
        cards = obj.get("cards")
        return (
            type(cards) is list
            and len(cards) <= 13
            and all(type(c) is str and c in _CARD_SET for c in cards)
        )
    if kind == "hello":
        # Every arena process that starts a bot checks a hello: answered
        # here, a plain one does not load jsonschema (some 60 ms of CPU).
        return type(obj.get("name")) is str and all(
            type(obj[key]) is str for key in ("author", "version") if key in obj
        )
    return False


def reply_is_valid(kind: str, obj: dict[str, Any]) -> bool:
    """Whether a reply to a ``kind`` request passes the schema (fast path first)."""
    return _plainly_valid(kind, obj) or validator(f"bot_{kind}").is_valid(obj)


def check_reply(kind: str, obj: dict[str, Any]) -> BotReply:
    """Validate a bot's reply to a request of type ``kind`` against the schema;
    return it typed (:mod:`arena.protocol.messages`: a ``HelloReply``,
    ``PassReply`` or ``PlayReply`` as ``kind`` says).

    Raises:
        ProtocolError: the reply fails the schema (wrong ``type``, a missing
            or ill-typed field); the detail names the field and the value.
    """
    if _plainly_valid(kind, obj):
        return cast(BotReply, obj)
    v = validator(f"bot_{kind}")
    if v.is_valid(obj):
        return cast(BotReply, obj)
    from jsonschema.exceptions import best_match

    error = best_match(v.iter_errors(obj))
    path = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(message)"
    is_card = bool(path) and (path[-1] == "card" or (len(path) > 1 and path[-2] == "cards"))
    if is_card and isinstance(error.instance, str) and error.instance not in _CARD_SET:
        # jsonschema would say "'10S' is too long": say what a card looks like.
        raise ProtocolError(
            f"reply to {kind!r} fails the schema at {where}: {_short(error.instance)} is "
            'not a card: a card is two characters, rank then suit, like "TS" (ten of spades)'
        )
    raise ProtocolError(
        f"reply to {kind!r} fails the schema at {where}: {_short(error.message, 160)}"
    )


def check_referee_message(obj: RefereeMessage | Mapping[str, Any]) -> None:
    """Validate a message the referee sends (used by the tests).

    Raises:
        ProtocolError: unknown ``type`` or a schema failure.
    """
    kind = obj.get("type")
    if kind not in REQUEST_TYPES and kind not in NOTIFICATION_TYPES:
        raise ProtocolError(f"unknown message type {_short(kind)}")
    v = validator(f"referee_{kind}")
    if not v.is_valid(obj):
        from jsonschema.exceptions import best_match

        error = best_match(v.iter_errors(obj))
        where = "/".join(str(p) for p in error.absolute_path) or "(message)"
        raise ProtocolError(f"referee {kind!r} fails the schema at {where}: {error.message}")


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def encode(message: RefereeMessage | Mapping[str, Any]) -> bytes:
    """One message as a protocol line: compact JSON, UTF-8, ending in ``\\n``."""
    return _ENCODER.encode(message).encode("ascii") + b"\n"


def encode_text(value: Any) -> str:
    """Compact JSON text of ``value`` (the encoder of :func:`encode`)."""
    return _ENCODER.encode(value)


def clean_text(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """Text from a bot made safe to display: control and format characters
    (including bidirectional overrides) removed, whitespace collapsed, cut to
    ``limit`` characters. HTML escaping is still the template's job."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn")
    )
    return " ".join(kept.split())[:limit]


_INVISIBLE: Final = re.compile(
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


def visible_text(text: str) -> str:
    """A bot's stderr for display: control characters (but newline, tab and
    the carriage return of a CRLF) and invisible format characters,
    bidirectional overrides included, are shown as escapes such as ``\\x1b``
    or ``\\u202e`` instead of acting on the page. HTML escaping stays the
    template's job."""
    return _INVISIBLE.sub(lambda m: ascii(m.group())[1:-1], text)


#: Lines that open a crash's report in the common runtimes: Python's
#: traceback, node's ``file:line`` of the throw (followed by a caret line),
#: the JVM's uncaught exception, Rust's and Go's panics, C++'s terminate.
_ERROR_OPENING: Final = re.compile(
    r"Traceback \(most recent call last\):|Exception in thread |thread '.*' panicked"
    r"|panic: |fatal error: |terminate called |Uncaught "
)
_NODE_THROW: Final = re.compile(r"\S.*:\d+$")
_CARET: Final = re.compile(r"\s*\^+\s*$")
#: Lines before the end searched for where a crash's report starts.
_ERROR_WINDOW: Final = 80


def error_excerpt(text: str, first: int = 4, last: int = 4, width: int = 300) -> list[str]:
    """Where a crash's cause is in a bot's stderr: the first ``first`` lines
    of its error report and its last ``last`` lines (issue 24 item 3: node's
    last lines are its internal frames and its version, the ``TypeError``
    and the line that threw come first).

    The report starts at the last line, among the last 80 non-blank lines,
    that opens one (Python's ``Traceback``, node's ``file:line`` above a
    caret line, ``Exception in thread``, a Rust or Go panic, C++'s
    ``terminate called``); without one, the excerpt is the last
    ``first + last`` lines. Lines are cut to ``width`` characters and made
    visible (:func:`visible_text`); ``"..."`` stands for the lines left out.

    Returns:
        The lines to show (empty for a blank stderr).
    """
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    low = max(0, len(lines) - _ERROR_WINDOW)
    start = max(0, len(lines) - first - last)
    for i in range(len(lines) - 1, low - 1, -1):
        line = lines[i].lstrip()
        node = _NODE_THROW.fullmatch(lines[i]) is not None and any(
            _CARET.fullmatch(x) for x in lines[i + 1 : i + 4]
        )
        if node or _ERROR_OPENING.match(line):
            start = i
            break
    shown = lines[start:]
    if len(shown) > first + last:
        shown = [*shown[:first], "...", *shown[-last:]]

    def cut(line: str) -> str:
        line = visible_text(line)
        return line if len(line) <= width else line[: width - 3] + "..."

    return [cut(line) for line in shown]
