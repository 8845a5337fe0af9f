"""The standings table printed on the terminal after a run and by ``report``.

Names are untrusted and may be any Unicode: columns are aligned by display
width (``wcwidth``: a CJK character or an emoji takes two columns, a
combining mark none), and control or invisible characters are shown as
escapes rather than acting on the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wcwidth import wcswidth

from arena.protocol.codec import visible_text


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (``len`` for what wcwidth cannot measure)."""
    width = wcswidth(text)
    return width if width >= 0 else len(text)


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` display columns."""
    return text + " " * max(0, width - display_width(text))


def _name(row: Mapping[str, Any]) -> str:
    name = visible_text(str(row["name"])).replace("\n", "\\n").replace("\t", "\\t")
    return name + (" (disqualified)" if row.get("disqualified") else "")


def standings_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The standings as aligned lines: a header, then one line per row
    (``rank``, name, ``mu - 3 sigma``, ``mu``, ``sigma``, games, wins,
    points per hand, faults); a disqualified entrant's name says so."""
    names = [_name(r) for r in rows]
    width = max([display_width(n) for n in names] + [6])
    lines = [
        f"{'#':>2}  {pad('entrant', width)}  {'mu-3sigma':>9}  {'mu':>6}  {'sigma':>5}  "
        f"{'games':>5}  {'wins':>4}  {'pts/hand':>8}  faults"
    ]
    for r, name in zip(rows, names, strict=True):
        ppH = "-" if r["points_per_hand"] is None else f"{r['points_per_hand']:.2f}"
        faults = sum(r["faults"].values())
        lines.append(
            f"{r['rank']:>2}  {pad(name, width)}  {r['conservative']:>9.2f}  {r['mu']:>6.2f}  "
            f"{r['sigma']:>5.2f}  {r['games']:>5}  {r['wins']:>4}  {ppH:>8}  {faults}"
        )
    return lines
