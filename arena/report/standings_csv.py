"""``standings.csv``: one row per entrant in rank order, for gradebooks and
spreadsheets (text a spreadsheet would run as a formula is defused)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any, Final

from arena.protocol.faults import FAULT_KINDS

#: Columns of ``standings.csv``, in order.
CSV_COLUMNS: Final = (
    "rank",
    "name",
    "conservative",
    "mu",
    "sigma",
    "games",
    "wins",
    "mean_rank",
    "hands",
    "points",
    "points_per_hand",
    "points_per_hand_low",
    "points_per_hand_high",
    "duplicate",
    "duplicate_low",
    "duplicate_high",
    "duplicate_hands",
    "moons",
    "moons_suffered",
    "queens",
    *(f"faults_{k}" for k in FAULT_KINDS),
    "self_names",
    "disqualified",
)


def _csv_text(value: str) -> str:
    """Text that a spreadsheet will not run as a formula (OWASP "CSV injection")."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def standings_csv(standings: Sequence[Mapping[str, Any]]) -> str:
    """``standings.csv``: a header of :data:`CSV_COLUMNS`, one row per entrant in
    rank order. Numbers are plain (dot decimal, empty when unknown); text cells
    that a spreadsheet would take for a formula get a leading ``'``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in standings:
        cells: list[Any] = []
        for col in CSV_COLUMNS:
            if col.startswith("faults_"):
                value: Any = row["faults"][col.removeprefix("faults_")]
            elif col == "self_names":
                value = _csv_text("; ".join(row["self_names"]))
            elif col == "name":
                value = _csv_text(row["name"])
            elif col == "disqualified":
                value = "yes" if row.get("disqualified") else "no"
            else:
                value = row.get(col)
            if isinstance(value, float):
                value = f"{value:.6g}"
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return buf.getvalue()
