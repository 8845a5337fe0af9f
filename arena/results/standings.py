"""Standings: per-entrant figures computed from game records (``games.jsonl`` lines).

Everything here reads the plain JSON records, so a report can be rebuilt from
``games.jsonl`` without replaying a game. Ratings are applied in schedule
order (``game_index``), whatever order the games finished in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NotRequired, TypedDict, TypeVar

from arena.protocol.faults import FAULT_KINDS
from arena.protocol.records import GameRecordJSON
from arena.results.rating import RatingTable


class TableRow(TypedDict):
    """One entrant's row of :func:`compute_standings` (keys in this order in
    ``results.json``). Points are after the moon rule (R12); ``mean_rank``
    and ``points_per_hand`` are ``None`` before the entrant's first game or
    hand. ``disqualified`` (and, when true, ``disqualified_reason``) are set
    by :func:`disqualify`."""

    name: str
    mu: float
    sigma: float
    conservative: float  # mu - 3 sigma
    games: int
    wins: int
    mean_rank: float | None
    hands: int
    points: int
    points_per_hand: float | None
    moons: int
    moons_suffered: int
    queens: int
    self_names: list[str]
    faults: dict[str, int]  # by reason (arena.protocol.faults.FAULT_KINDS), all four
    rank: int
    disqualified: NotRequired[bool]
    disqualified_reason: NotRequired[str]


class StandingsRow(TableRow):
    """A row of ``results.json``'s ``standings``: a :class:`TableRow` with
    the duplicate score and the bootstrap intervals of
    :func:`arena.results.stats.compute_statistics` (points per hand; ``None``
    where unknown), in this order after the table's keys."""

    duplicate: float | None
    duplicate_hands: int
    points_per_hand_low: float | None
    points_per_hand_high: float | None
    duplicate_low: float | None
    duplicate_high: float | None


_Row = TypeVar("_Row", TableRow, StandingsRow)


def sort_records(records: Iterable[GameRecordJSON]) -> list[GameRecordJSON]:
    """Records in schedule order, one per ``game_index`` (a later duplicate wins)."""
    by_index = {r["game_index"]: r for r in records}
    return [by_index[i] for i in sorted(by_index)]


def compute_standings(
    names: Sequence[str], records: Iterable[GameRecordJSON]
) -> tuple[list[TableRow], RatingTable]:
    """The standings table and the rating table after ``records``.

    Args:
        names: every entrant, including those without a game yet.
        records: game records (any order; applied by ``game_index``).

    Returns:
        ``(standings, ratings)``: one :class:`TableRow` per entrant, sorted by the
        conservative rating ``mu - 3 sigma`` (best first; ties by name), with
        ``rank``, ``name``, ``mu``, ``sigma``, ``conservative``, ``games``,
        ``wins`` (shared first places count for each), ``mean_rank``,
        ``hands``, ``points``, ``points_per_hand`` (after the moon rule, R12),
        ``moons`` (moons shot), ``moons_suffered`` (hands in which another
        seat shot the moon, R12), ``queens`` (queen of spades taken),
        ``self_names`` (names the bot gave itself) and ``faults`` (counts by
        reason, always with the four keys).
    """
    ratings = RatingTable(names)
    stats: dict[str, dict[str, Any]] = {
        n: {
            "games": 0,
            "wins": 0,
            "rank_sum": 0,
            "hands": 0,
            "points": 0,
            "moons": 0,
            "moons_suffered": 0,
            "queens": 0,
            "self_names": set(),
            "faults": dict.fromkeys(FAULT_KINDS, 0),
        }
        for n in names
    }
    for rec in sort_records(records):
        seats: list[str] = rec["seats"]
        ranks: list[int] = rec["ranks"]
        ratings.apply(rec["game_index"], seats, ranks)
        for seat, name in enumerate(seats):
            st = stats[name]
            st["games"] += 1
            st["rank_sum"] += ranks[seat]
            if ranks[seat] == 1:
                st["wins"] += 1
            self_name = (rec.get("bot_names") or [None] * 4)[seat]
            if self_name:
                st["self_names"].add(self_name)
        for hand in rec["hands"]:
            for seat, name in enumerate(seats):
                stats[name]["hands"] += 1
                stats[name]["points"] += hand["points"][seat]
            if hand["moon"] is not None:
                stats[seats[hand["moon"]]]["moons"] += 1
                for seat, name in enumerate(seats):
                    if seat != hand["moon"]:
                        stats[name]["moons_suffered"] += 1
            for trick in hand["tricks"]:
                if "QS" in trick["cards"]:
                    stats[seats[trick["winner"]]]["queens"] += 1
        for fault in rec["faults"]:
            name = seats[fault["seat"]]
            stats[name]["faults"][fault["reason"]] += 1
    table: list[TableRow] = []
    for name in names:
        st = stats[name]
        games, hands = st["games"], st["hands"]
        rating = ratings.snapshot(name)
        table.append(
            {
                "name": name,
                "mu": rating["mu"],
                "sigma": rating["sigma"],
                "conservative": rating["conservative"],
                "games": games,
                "wins": st["wins"],
                "mean_rank": st["rank_sum"] / games if games else None,
                "hands": hands,
                "points": st["points"],
                "points_per_hand": st["points"] / hands if hands else None,
                "moons": st["moons"],
                "moons_suffered": st["moons_suffered"],
                "queens": st["queens"],
                "self_names": sorted(st["self_names"]),
                "faults": st["faults"],
                "rank": 0,  # numbered below, once sorted
            }
        )
    table.sort(key=lambda row: (-row["conservative"], row["name"]))
    for i, row in enumerate(table, 1):
        row["rank"] = i
    return table, ratings


def disqualify(standings: list[_Row], limit: int | None) -> list[_Row]:
    """Rank every entrant with ``limit`` or more faults (all kinds, in the
    whole tournament) after every other, in place, and return the rows.

    Each row gets ``disqualified`` (bool) and, when true,
    ``disqualified_reason`` (``"34 faults (the limit is 5)"``). Disqualified
    rows keep their order among themselves (by rating); ``rank`` is
    renumbered 1..n. With ``limit`` ``None`` nobody is disqualified. The
    entrant's games are not removed: the ratings and points of the others
    are computed from every game.
    """
    for row in standings:
        total = sum(row["faults"].values())
        out = limit is not None and total >= limit
        row["disqualified"] = out
        if out:
            row["disqualified_reason"] = f"{total} faults (the limit is {limit})"
        else:
            row.pop("disqualified_reason", None)
    standings.sort(key=lambda row: bool(row["disqualified"]))  # stable: rating order kept
    for i, row in enumerate(standings, 1):
        row["rank"] = i
    return standings
