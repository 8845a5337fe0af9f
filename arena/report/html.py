"""HTML pieces of the report and the live page: the Jinja2 environment (every
template rendered with ``autoescape=True``: bot names and stderr are untrusted
and never marked safe), numbers as the pages write them, cards, the trick
table's rows and JSON safe inside a ``<script>`` element.

The only text marked safe here is built from constants (the 52 cards' HTML)
and integers; any other text is escaped.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Final

import jinja2
from markupsafe import Markup, escape

from arena.core.resources import templates_dir
from arena.protocol.codec import visible_text
from arena.protocol.records import TrickJSON

_SUIT_SYMBOLS: Final = {"C": "♣", "D": "♦", "S": "♠", "H": "♥"}
_CARD_ORDER: Final = {
    r + s: i for i, (s, r) in enumerate((s, r) for s in "CDSH" for r in "23456789TJQKA")
}
#: The HTML of each of the 52 cards (constant text: safe to mark). Kept
#: short: a replay page holds about 180 cards per hand.
_CARD_HTML: Final = {
    name: Markup(
        f'<i class="{name[1].lower()}">'
        f"{'10' if name[0] == 'T' else name[0]}{_SUIT_SYMBOLS[name[1]]}</i>"
    )
    for name in _CARD_ORDER
}
#: ``<td>`` cells of a trick table: card name -> the four cell variants by class.
_CARD_TD: Final = {
    name: {
        cls: Markup(f'<td class="{cls}">{html}</td>' if cls else f"<td>{html}</td>")
        for cls in ("", "lead", "win", "lead win")
    }
    for name, html in _CARD_HTML.items()
}
_TD_CLASS: Final = (("", "win"), ("lead", "lead win"))


# -- Jinja --------------------------------------------------------------------


class _QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja2's bytecode cache, which leaves a template uncached where its
    bytecode cannot be written (a full disk, a process whose privileges
    were dropped) instead of failing the page."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def template_cache_dir() -> Path:
    """Where the compiled templates are kept: ``hearts-arena/templates``
    in ``$XDG_CACHE_HOME``, else in ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "hearts-arena", "templates")


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Jinja2's bytecode cache in :func:`template_cache_dir`, or ``None``
    (templates compiled in each process, some 84 ms of CPU) where it cannot
    be made or could hold another user's code: the folder and its parent
    must be this user's and writable by no one else, since the cache holds
    code this process runs. ``HEARTS_ARENA_TEMPLATE_CACHE=0`` turns it off."""
    if os.environ.get("HEARTS_ARENA_TEMPLATE_CACHE") == "0":
        return None
    folder = template_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for path in (folder.parent, folder):
            st = path.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return None
    except OSError:
        return None
    return _QuietBytecodeCache(str(folder))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The report's Jinja2 environment (one, cached): templates from the
    package, autoescaped, undefined names an error, compiled ones kept
    between processes (:func:`_bytecode_cache`); filters ``num``
    (:func:`number_text`), ``setting``, ``signed`` (:func:`signed_text`) and
    ``visible`` (:func:`arena.protocol.codec.visible_text`)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["num"] = number_text
    env.filters["setting"] = _setting
    env.filters["signed"] = signed_text
    env.filters["visible"] = visible_text
    return env


def _setting(value: object) -> str:
    """A settings value as plain text: ``on``/``off``, ``–`` for none, and
    nested settings as ``key value, ...``."""
    if value is None:
        return "–"
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {_setting(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_setting(v) for v in value)
    return str(value)


#: The minus sign of every number on the pages (values and intervals alike).
MINUS: Final = "\u2212"


def number_text(value: float | None, digits: int = 2) -> str:
    """A number with ``digits`` decimals, negative ones with U+2212 (the
    same sign as :func:`signed_text`); ``–`` for none (the report's and the
    live page's one way of writing a number)."""
    if value is None:
        return "–"
    return f"{_unsigned_zero(value, digits):.{digits}f}".replace("-", MINUS)


def signed_text(value: float | None, digits: int = 2) -> str:
    """As :func:`number_text`, with the sign always written."""
    if value is None:
        return "–"
    return f"{_unsigned_zero(value, digits):+.{digits}f}".replace("-", MINUS)


def _unsigned_zero(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` decimals, a zero without its sign (an
    interval's end of ``-0.0001`` or ``-0.0`` reads ``0.00``, not ``−0.00``)."""
    return round(value, digits) + 0.0


def card_html(name: str) -> Markup:
    """One card as HTML (``"QS"`` -> Q♠ in a span); unknown text is escaped."""
    return _CARD_HTML.get(name) or escape(name)


def cards_html(names: Sequence[str] | None, presorted: bool = False) -> Markup:
    """Cards as HTML, in the protocol's sort order (suit C, D, S, H, then
    rank); ``presorted`` lists (as the referee records them) are kept as given."""
    if not names:
        return Markup("")
    ordered = names if presorted else sorted(names, key=lambda c: _CARD_ORDER.get(c, 99))
    # Each piece is one of the 52 constant cards or escaped text.
    return Markup(" ".join(_CARD_HTML.get(c) or escape(c) for c in ordered))


#: The mark after a card the referee played for a seat (a default move, protocol "Faults").
DEFAULT_MARK: Final = Markup(
    '<sup class="auto-mark" title="a default move made by the referee">d</sup>'
)


def tricks_html(
    tricks: Sequence[TrickJSON], defaults: frozenset[tuple[int, int]] = frozenset()
) -> Markup:
    """The ``<tr>`` rows of a hand's trick table: number, leader, the card of
    each seat 0..3 (leader's cell ``lead``, winner's ``win``; a default move
    the referee made, ``(trick number, seat)`` in ``defaults``, has class
    ``auto`` and the mark :data:`DEFAULT_MARK`), winner, points, and each
    seat's points taken so far this hand (before the moon rule).

    Built here rather than in the template because a replay has up to
    thirteen such rows per hand and they dominate the report's render time;
    the rows hold only integers (``int()``-converted) and card HTML (one of
    the 52 constants, or escaped text), never a name or other bot text.
    """
    rows = []
    running = [0, 0, 0, 0]
    for n, trick in enumerate(tricks, 1):
        leader, winner, points = int(trick["leader"]), int(trick["winner"]), int(trick["points"])
        cells = ["<td></td>"] * 4
        for k, c in enumerate(trick["cards"]):
            seat = (leader + k) % 4
            cls = _TD_CLASS[seat == leader][seat == winner]
            if (n, seat) in defaults:
                klass = f"{cls} auto".strip()
                cells[seat] = f'<td class="{klass}">{card_html(c)}{DEFAULT_MARK}</td>'
                continue
            td = _CARD_TD.get(c)
            cells[seat] = td[cls] if td else f'<td class="{cls}">{escape(c)}</td>'
        running[winner % 4] += points
        rows.append(
            f"<tr><td>{n}</td><td>{leader}</td>{''.join(cells)}<td>{winner}</td>"
            f'<td>{points}</td><td class="name">{running[0]} · {running[1]} · '
            f"{running[2]} · {running[3]}</td></tr>"
        )
    return Markup("\n".join(rows))


#: Characters that must not appear raw inside a ``<script>`` element.
_SCRIPT_UNSAFE: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_script(data: object) -> Markup:
    """``data`` as JSON safe to put inside ``<script type="application/json">``:
    ``<``, ``>`` and ``&`` (and U+2028/U+2029) are written as ``\\u`` escapes,
    so no text in it (a bot's name holding ``</script>`` or ``<!--``) can end
    the element or start markup; ``JSON.parse`` reads the same values back."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.translate(_SCRIPT_UNSAFE))
