"""``arena.results.analysis``: the typed standings rows and ``results.json``
(issue 26: ``analyse`` and ``build_results`` moved out of the report, with a
typed row instead of dicts; ``results.json`` read back typed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arena.protocol.faults import FAULT_KINDS
from arena.results.analysis import (
    ResultsFileError,
    ResultsJSON,
    analyse,
    build_results,
    parse_results,
    read_results,
    standings_row,
)
from arena.results.standings import StandingsRow, TableRow
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

NAMES = ["ada", "bob", "cy", "dee", "eve"]

#: The keys of a standings row in ``results.json``, in the file's order (as
#: written by the report before the rows were typed).
ROW_KEYS = [
    "name", "mu", "sigma", "conservative", "games", "wins", "mean_rank", "hands", "points",
    "points_per_hand", "moons", "moons_suffered", "queens", "self_names", "faults", "rank",
    "disqualified", "duplicate", "duplicate_hands", "points_per_hand_low",
    "points_per_hand_high", "duplicate_low", "duplicate_high",
]  # fmt: skip
RESULTS_KEYS = [
    "format_version", "generated_at", "seed", "key_commitment", "key", "settings", "rating",
    "games_total", "games_played", "complete", "standings", "confidence", "head_to_head",
]  # fmt: skip


@pytest.fixture(scope="module")
def run() -> tuple[dict[str, Any], list[Any]]:
    settings = TournamentSettings(seed=3, rounds=1, hands=2, target_score=None, disqualify_after=3)
    records = synthesize(NAMES, settings, faults={"cy": "played 2C twice"})
    settings_json = {
        **settings.to_json(),
        "entrants": [{"name": n, "command": "synthetic", "cwd": "."} for n in NAMES],
    }
    return settings_json, records


def test_rows_are_typed_and_keep_the_files_key_order(run: tuple[dict[str, Any], list[Any]]) -> None:
    settings, records = run
    a = analyse(settings, NAMES, records)
    assert [r["name"] for r in a.standings][-1] == "cy"  # disqualified: ranked last
    cy = a.standings[-1]
    assert cy["disqualified"] is True and cy["faults"]["illegal"] == cy["games"] == 16
    assert list(cy) == [*ROW_KEYS[:17], "disqualified_reason", *ROW_KEYS[17:]]
    assert cy["disqualified_reason"] == "16 faults (the limit is 3)"
    for row in a.standings[:-1]:
        assert list(row) == ROW_KEYS
        assert set(row["faults"]) == set(FAULT_KINDS)
    assert [r["rank"] for r in a.standings] == [1, 2, 3, 4, 5]
    # The typed declarations name exactly the keys written.
    assert set(StandingsRow.__annotations__) == {*ROW_KEYS, "disqualified_reason"}
    assert set(TableRow.__annotations__) == {*ROW_KEYS[:17], "disqualified_reason"}


def test_results_hold_the_typed_rows_and_reveal_the_key_when_complete(
    run: tuple[dict[str, Any], list[Any]],
) -> None:
    settings, records = run
    results = build_results(settings, NAMES, records, len(records), key="ab" * 32)
    assert list(results) == RESULTS_KEYS and results["key"] == "ab" * 32
    assert results["complete"] and results["games_played"] == len(records) == 20
    assert sum(r["games"] for r in results["standings"]) == 4 * len(records)
    partial = build_results(settings, NAMES, records[:7], len(records), key="ab" * 32)
    assert "key" not in partial and partial["games_played"] == 7 and not partial["complete"]


def test_a_row_without_its_intervals_is_refused(run: tuple[dict[str, Any], list[Any]]) -> None:
    settings, records = run
    row = analyse(settings, NAMES, records).standings[0]
    table: TableRow = {k: v for k, v in row.items() if k in TableRow.__annotations__}  # type: ignore[assignment]
    intervals = {k: row[k] for k in ROW_KEYS[17:]}  # type: ignore[literal-required]
    assert list(standings_row(table, intervals)) == ROW_KEYS
    del intervals["duplicate_low"]
    with pytest.raises(KeyError, match="duplicate_low"):
        standings_row(table, intervals)


def test_read_results_round_trips_a_written_file(
    run: tuple[dict[str, Any], list[Any]], tmp_path: Path
) -> None:
    settings, records = run
    results: ResultsJSON = build_results(settings, NAMES, records, len(records))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results, indent=2))
    back = read_results(path)
    assert back["standings"][0]["name"] == results["standings"][0]["name"]
    assert back == json.loads(json.dumps(results))


def _results(**change: object) -> dict[str, object]:
    good: dict[str, object] = {
        "settings": {}, "games_total": 4, "games_played": 4, "complete": True, "standings": []
    }  # fmt: skip
    return {k: v for k, v in (good | change).items() if v is not None}


BAD_RESULTS = [
    ([], "is not a JSON object"),
    (_results(standings=None), "'standings'"),
    (_results(settings=[]), "'settings'"),
    (_results(games_total=True), "'games_total'"),
    (_results(complete="yes"), "'complete'"),
    (_results(standings=[{"name": "a"}]), r"standings\[0\] lacks a name or a rank"),
]


@pytest.mark.parametrize(("data", "message"), BAD_RESULTS)
def test_parse_results_names_the_key_at_fault(data: object, message: str) -> None:
    with pytest.raises(ResultsFileError, match=message) as info:
        parse_results(data, "x/results.json")
    assert "\n" not in str(info.value) and str(info.value).startswith("x/results.json")


def test_read_results_of_a_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="cannot be read"):
        read_results(tmp_path / "results.json")
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(ResultsFileError, match="cannot be read"):
        read_results(tmp_path / "results.json")
