"""The golden run (issue 15): the same ``--seed`` and entrants give the same
``games.jsonl`` and ``results.json`` as the arena did before the package was
re-laid out, except for fields that record times.

The run, the stored files (``tests/golden/``, written by commit 393ea18) and
the comparison are described in ``tests/golden_run.py``. In short: five
entrants whose moves do not depend on time (heuristic and kit sample bots, the
search sample bot with fixed budgets, the faulting test bots ``illegal`` and
``garbage``), sealed as by default, ``--seed 15``, 20 games of two hands, a
30-second time limit. Ignored, by place: ``results.json`` ``generated_at``;
per game ``started_at``, ``duration_s`` (seconds) and the seats' ``timing``
``mean_ms``, ``max_ms``, ``cpu_mean_ms``, ``cpu_max_ms``, ``wall_ms``,
``cpu_ms`` (milliseconds). Every other field the base wrote must be present and
equal; a field the current code ADDS to an object is allowed (records may grow,
never change or lose a field); a changed, missing or extra list item fails.
Changes made on purpose since the base are listed with their reasons in
``golden_run.INTENDED_CHANGES`` and applied to the base first (so far: a card
not held is labelled R2, not R6).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, needs_seal
from golden_run import (
    TIME_FIELDS_GAME,
    TIME_FIELDS_RESULTS,
    differences,
    golden_differences,
    run_golden,
    with_intended_changes,
)


def test_differences_ignore_only_times_and_allow_added_fields() -> None:
    game = {
        "scores": [1, 2],
        "started_at": 5.0,
        "timing": [{"requests": 3, "wall_ms": [1.0]}],
        "faults": [{"reason": "illegal", "answer": None}],
    }
    same = {
        "scores": [1, 2],
        "started_at": 9.0,
        "timing": [{"requests": 3, "wall_ms": [7.0, 8.0]}],
        "faults": [{"reason": "illegal", "answer": None, "card": "QS"}],
    }
    assert list(differences(game, same, TIME_FIELDS_GAME)) == []
    changed = {
        "scores": [1, 3],
        "timing": [{"requests": 4, "wall_ms": []}],
        "faults": [{"reason": "malformed", "answer": False}],
    }
    assert list(differences(game, changed, TIME_FIELDS_GAME)) == [
        "scores/[1]: 2 became 3",
        "timing/[0]/requests: 3 became 4",
        "faults/[0]/reason: 'illegal' became 'malformed'",
        "faults/[0]/answer: None became False",
    ]
    assert list(differences(game, {**same, "faults": []}, TIME_FIELDS_GAME)) == [
        "faults: 1 items became 0"
    ]
    assert list(differences({"mu": 1.5}, {}, TIME_FIELDS_RESULTS)) == ["mu: missing"]
    # A time field's name elsewhere is compared: only its place is ignored.
    assert list(
        differences({"x": {"started_at": 1}}, {"x": {"started_at": 2}}, TIME_FIELDS_GAME)
    ) == ["x/started_at: 1 became 2"]


def test_intended_changes_touch_only_their_field() -> None:
    base = {
        "detail": "played 3C: seat 2: does not hold 3C (R6); legal: 2C",
        "answer": "does not hold 3C (R6)",
        "faults": [{"detail": "seat 1: does not follow suit (R6)"}],
    }
    assert with_intended_changes(base) == {
        "detail": "played 3C: seat 2: does not hold 3C (R2); legal: 2C",
        "answer": "does not hold 3C (R6)",  # not a detail: unchanged
        "faults": [{"detail": "seat 1: does not follow suit (R6)"}],  # R6 proper
    }


@needs_seal
@pytest.mark.skipif(
    os.geteuid() != 0, reason="the golden run was made as root (bots as users of their own)"
)
def test_golden_run_matches_the_run_before_the_layout(open_tmp: Path) -> None:
    games_text, results_text = run_golden(ROOT, open_tmp)
    found = golden_differences(games_text, results_text)
    assert not found, f"{len(found)} differences from tests/golden/:\n" + "\n".join(found[:30])
    # The run is not trivial: every entrant played, and the faults were recorded.
    results = json.loads(results_text)
    faults = {row["name"]: row["faults"] for row in results["standings"]}
    assert results["games_played"] == 20
    assert faults["illegal"]["illegal"] == 32
    assert faults["garbage"]["malformed"] == 16
    assert (
        sum(sum(f.values()) for name, f in faults.items() if name not in ("illegal", "garbage"))
        == 0
    )
