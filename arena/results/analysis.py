"""What a tournament's game records add up to, computed once: standings,
ratings, intervals, head-to-head and the verdict (:func:`analyse`), and the
content of ``results.json`` (:func:`build_results`, typed :class:`ResultsJSON`;
read back with :func:`read_results`).

Nothing here writes a file or renders a page (that is :mod:`arena.report`);
the live view (:mod:`arena.live.hub`) and the report use the same
:class:`Analysis`, so their standings agree.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict, cast

from arena.protocol.records import FORMAT_VERSION, GameRecordJSON
from arena.results import stats
from arena.results.rating import RatingTable, environment, environment_settings
from arena.results.standings import (
    StandingsRow,
    TableRow,
    compute_standings,
    disqualify,
    sort_records,
)
from arena.results.stats import BootstrapJSON, IntervalsJSON, PairJSON, StatisticsJSON, VerdictJSON


class ConfidenceJSON(TypedDict):
    """``results.json``'s ``confidence``: the bootstrap's parameters
    (:func:`arena.results.stats.compute_statistics`), the verdict on the top
    of the table (:func:`arena.results.stats.top_settled`) and the pairwise
    differences per metric."""

    bootstrap: BootstrapJSON
    verdict: VerdictJSON
    pairs: dict[str, list[PairJSON]]


class ResultsJSON(TypedDict):
    """The content of ``results.json`` (keys in this order in the file).

    ``generated_at`` is UTC, ISO 8601 to the second; ``key`` (the master key
    in hexadecimal) only once every scheduled game was played;
    ``settings`` is ``run.json``'s settings record (flag names, times in
    seconds); ``rating`` the TrueSkill environment (``system`` and its
    parameters); ``head_to_head[a][b]`` counts of ``a``'s games against ``b``.
    """

    format_version: int
    generated_at: str
    seed: int | str | None
    key_commitment: str | None
    key: NotRequired[str]
    settings: dict[str, Any]
    rating: dict[str, Any]
    games_total: int
    games_played: int
    complete: bool
    standings: list[StandingsRow]
    confidence: ConfidenceJSON
    head_to_head: dict[str, dict[str, dict[str, int]]]


@dataclass
class Analysis:
    """Everything the outputs are made from, computed once.

    Attributes:
        settings: the settings record (``run.json``'s ``settings``).
        names: every entrant, in the settings' order.
        records: the game records in schedule order, one per ``game_index``.
        standings: :class:`StandingsRow` rows, best first (disqualified
            entrants last, :func:`arena.results.standings.disqualify`).
        ratings: the TrueSkill table after every game (with its history).
        statistics: ``stats.compute_statistics``'s result.
        head_to_head: ``stats.head_to_head``'s result.
        verdict: ``stats.top_settled``'s result (whether the top of the table is settled).
    """

    settings: dict[str, Any]
    names: list[str]
    records: list[GameRecordJSON]
    standings: list[StandingsRow]
    ratings: RatingTable
    statistics: StatisticsJSON
    head_to_head: dict[str, dict[str, dict[str, int]]]
    verdict: VerdictJSON


def standings_row(row: TableRow, intervals: IntervalsJSON) -> StandingsRow:
    """``row`` with one entrant's duplicate score and intervals
    (``stats.compute_statistics(...)["entrants"][name]``), in
    ``results.json``'s key order: the table's, then ``duplicate``,
    ``duplicate_hands``, ``points_per_hand_low``/``_high``,
    ``duplicate_low``/``_high``.

    Raises:
        KeyError: ``intervals`` lacks one of those keys.
    """
    return {
        **row,
        "duplicate": intervals["duplicate"],
        "duplicate_hands": intervals["duplicate_hands"],
        "points_per_hand_low": intervals["points_per_hand_low"],
        "points_per_hand_high": intervals["points_per_hand_high"],
        "duplicate_low": intervals["duplicate_low"],
        "duplicate_high": intervals["duplicate_high"],
    }


def analyse(
    settings: dict[str, Any], names: Sequence[str], records: Sequence[GameRecordJSON]
) -> Analysis:
    """Standings, ratings, intervals, head-to-head and verdict of ``records``
    (any order, one per ``game_index``; a later duplicate wins)."""
    ordered = sort_records(records)
    table, ratings = compute_standings(names, ordered)
    disqualify(table, settings.get("disqualify_after"))
    statistics = stats.compute_statistics(names, ordered, settings)
    standings = [standings_row(row, statistics["entrants"][row["name"]]) for row in table]
    if settings.get("format") == "ladder":  # no rounds: count games
        played, unit = len(ordered), "game"
    else:
        played, unit = len({r["deal_key"] for r in ordered}), "round"
    return Analysis(
        settings=settings,
        names=list(names),
        records=ordered,
        standings=standings,
        ratings=ratings,
        statistics=statistics,
        head_to_head=stats.head_to_head(names, ordered),
        verdict=stats.top_settled(standings, statistics, played, unit),
    )


def build_results(
    settings: dict[str, Any],
    names: Sequence[str],
    records: Sequence[GameRecordJSON],
    games_total: int,
    analysis: Analysis | None = None,
    key: str | None = None,
) -> ResultsJSON:
    """The content of ``results.json`` (:class:`ResultsJSON`).

    ``key`` (the master key in hexadecimal, :mod:`arena.core.keys`) is revealed,
    as ``key``, only when every scheduled game was played; ``key_commitment``
    (its SHA-256, printed when the run started) is always there.

    Keys: ``format_version``, ``generated_at``, ``seed``, ``key_commitment``,
    ``key`` (once complete), ``settings``
    (flag names, times in seconds), ``rating`` (the TrueSkill environment),
    ``games_total``, ``games_played``, ``complete``, ``standings``
    (:class:`StandingsRow`: each row also has ``points_per_hand_low``/``_high``,
    ``duplicate``, ``duplicate_low``/``_high`` and ``duplicate_hands``, in
    points per hand, ``None`` where unknown), ``confidence`` (``bootstrap``
    parameters, ``verdict``, and ``pairs`` per metric) and ``head_to_head``.
    """
    a = analysis or analyse(settings, names, records)
    played = len(a.records)
    complete = played >= games_total
    head: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seed": settings.get("seed"),
        "key_commitment": settings.get("key_commitment"),
    }
    if key is not None and complete:
        head["key"] = key
    confidence: ConfidenceJSON = {
        "bootstrap": a.statistics["bootstrap"],
        "verdict": a.verdict,
        "pairs": a.statistics["pairs"],
    }
    return cast(
        ResultsJSON,
        head
        | {
            "settings": settings,
            "rating": {"system": "trueskill", **environment_settings(environment())},
            "games_total": games_total,
            "games_played": played,
            "complete": complete,
            "standings": a.standings,
            "confidence": confidence,
            "head_to_head": a.head_to_head,
        },
    )


class ResultsFileError(ValueError):
    """``results.json`` cannot be read, or is not a tournament's results."""


#: The keys a ``results.json`` must hold, and the types each must have.
_REQUIRED: Final[dict[str, type | tuple[type, ...]]] = {
    "settings": dict,
    "games_total": int,
    "games_played": int,
    "complete": bool,
    "standings": list,
}


def parse_results(data: object, where: str = "results.json") -> ResultsJSON:
    """``data`` (parsed JSON) as :class:`ResultsJSON`, after checking the keys
    readers rely on: ``settings`` an object, ``games_total`` and
    ``games_played`` integers, ``complete`` a boolean, ``standings`` a list of
    objects each with a ``name`` (text) and a ``rank`` (integer). Other keys
    are passed through unchecked (older files lack some).

    Raises:
        ResultsFileError: one line, naming ``where`` and the first key at fault.
    """
    if not isinstance(data, dict):
        raise ResultsFileError(f"{where} is not a JSON object")
    for name, kind in _REQUIRED.items():
        value = data.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ResultsFileError(f"{where}: {name!r} is missing or of the wrong type")
    for i, row in enumerate(data["standings"]):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("name"), str)
            or type(row.get("rank")) is not int
        ):
            raise ResultsFileError(f"{where}: standings[{i}] lacks a name or a rank")
    return cast(ResultsJSON, data)


def read_results(path: Path) -> ResultsJSON:
    """Read a ``results.json`` (see :func:`parse_results`).

    Raises:
        ResultsFileError: the file cannot be read, is not JSON, or not results.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsFileError(f"{path} cannot be read: {exc}") from None
    return parse_results(data, str(path))
