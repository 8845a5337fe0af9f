"""Hints for the commonest mistakes a bot makes in ``check``, in the
protocol's words and then in the bot's language's (:data:`LANGUAGE_HINTS`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from arena.seats.stand_ins import Exchange

#: Hints for the commonest mistakes, keyed by what the fault detail holds.
HINT_NOT_JSON: Final = (
    "hint: stdout carries protocol lines only, one JSON object a line; a debug print "
    "there is a line that is not JSON. Write debug output to stderr"
)
HINT_ONE_LINE: Final = (
    "hint: a reply is one JSON object on one line, ended by a newline; pretty-printed "
    "JSON spreads an object over several lines, and its first line alone is not JSON"
)
HINT_FLUSH: Final = (
    "hint: did you flush stdout? An answer left in the bot's output buffer never "
    "reaches the referee: flush after each line"
)
HINT_CARD: Final = (
    'hint: a card is two characters, rank then suit: "TS" is the ten of spades '
    "(ranks 2-9 T J Q K A, suits C D S H)"
)

#: The language's own words for a hint (after the protocol's), by hint and by
#: the bot's language (:func:`bot_language`); ``compiled`` is a program whose
#: language the command does not tell (a C, C++, Go or Rust binary).
LANGUAGE_HINTS: Final[dict[str, dict[str, str]]] = {
    HINT_NOT_JSON: {
        "python": "in Python: print(..., file=sys.stderr)",
        "javascript": "in JavaScript: console.error(...)",
        "java": "in Java: System.err.println(...)",
        "compiled": (
            "in C: fprintf(stderr, ...); C++: std::cerr << ...; "
            "Go: fmt.Fprintln(os.Stderr, ...); Rust: eprintln!(...)"
        ),
    },
    HINT_ONE_LINE: {
        "python": "in Python: json.dumps(reply) with no indent=, then print(..., flush=True)",
        "javascript": "in JavaScript: JSON.stringify(reply) with no spacing argument",
        "java": "in Java: gson.toJson(reply) on a Gson made without setPrettyPrinting()",
        "compiled": (
            "in C++ (nlohmann): j.dump() with no indent; Go: json.Marshal, not "
            "MarshalIndent; Rust: serde_json::to_string, not to_string_pretty"
        ),
    },
    HINT_FLUSH: {
        "python": "in Python: print(..., flush=True), or sys.stdout.flush() after each line",
        "javascript": "in JavaScript: process.stdout.write(line + '\\n') (console.log also works)",
        "java": "in Java: System.out.println(...) then System.out.flush()",
        "compiled": (
            "in C: fflush(stdout); C++: std::cout << line << std::endl; "
            "Go: w.Flush() on a bufio.Writer; Rust: std::io::stdout().flush()"
        ),
    },
}


def bot_language(argv: Sequence[str]) -> str:
    """The bot's language as far as its command tells: ``python``,
    ``javascript``, ``java`` or ``compiled`` (anything else)."""
    for word in argv[:3]:
        base = Path(word).name.lower()
        if base.endswith(".py") or base.startswith("python") or base == "pypy3":
            return "python"
        if base.endswith((".js", ".mjs", ".cjs")) or base in ("node", "nodejs"):
            return "javascript"
        if base.endswith((".jar", ".class")) or base == "java":
            return "java"
    return "compiled"


def _pretty_printed(detail: str) -> bool:
    """Whether a "not JSON" line looks like a piece of pretty-printed JSON:
    a lone brace or bracket, or a ``"key": value`` line."""
    match = re.search(r"at column \d+: (.*)$", detail)
    if match is None:
        return False
    line = match.group(1).strip("'\"").strip()
    return line in ("{", "[", "}", "]", "},", "],") or re.match(r'^"\w+"\s*:', line) is not None


def hint_for(ex: Exchange) -> str | None:
    """A hint for the fault of ``ex`` when it looks like one of the commonest
    mistakes, in the protocol's words (:func:`arena.tools.check.report.format_report` adds the bot's
    language's): a debug print to stdout (a line that is not JSON or not an
    object), pretty-printed JSON (an object over several lines), a missing
    flush (a timeout), a card written ``"10S"``."""
    detail = ex.detail or ""
    if ex.fault == "malformed" and "line is not JSON" in detail and _pretty_printed(detail):
        return HINT_ONE_LINE
    if ex.fault == "malformed" and (
        "line is not JSON" in detail or "line is JSON but not an object" in detail
    ):
        return HINT_NOT_JSON
    if ex.fault == "timeout":
        return HINT_FLUSH
    if ex.fault == "malformed" and "is not a card" in detail:
        return HINT_CARD
    return None
