"""The audit's memory-of-deals and collusion signals (``arena.tools.audit``), on
runs played in-process (``tests/audit_runs.py``) by cheap players: the heuristic
sample bot, and cheats that play it unless they know more."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import audit_runs
import cheatlib
import pytest

from arena.tools import audit as au

# Each test takes seconds of CPU; a busy machine stretches the wall time.
pytestmark = pytest.mark.timeout(600)


def audit(folder: Path) -> au.AuditResult:
    # Few decisions: these signals need no search; clairvoyance is tested elsewhere.
    return au.audit(au.load_run(folder), decisions=10, budget=500)


class Improver(cheatlib.HonestSearch):
    """Honest, but better with time: plays a random card with a chance that
    falls from 1 to 0 over its first ``games`` games (shared by its policies)."""

    played = 0

    def __init__(self, games: int) -> None:
        super().__init__(0)
        self.games = games

    def start(self, msg: dict[str, Any]) -> None:
        super().start(msg)
        Improver.played += 1

    def play(self, msg: dict[str, Any]) -> str:
        rng = random.Random(f"{self.seed}:{msg['hand_number']}:{msg['trick_number']}")
        if rng.random() < 1 - Improver.played / self.games:
            return str(rng.choice(msg["legal"]))
        return super().play(msg)


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """160 games of four hands at one table (40 deals of four hands, each played
    in the four rotations): two heuristic players, and one that
    writes every hand's cards to a file and, on a deal it has met, plays the
    search on all the cards it remembers; plus a player that improves over
    time (the control)."""
    base = tmp_path_factory.mktemp("m")
    Improver.played = 0
    field = {
        "heuristic": lambda: audit_runs.Heuristic(),
        "heuristic2": lambda: audit_runs.Heuristic(),
        "improver": lambda: Improver(120),
        "memory": lambda: cheatlib.Memory(str(base), 0),
    }
    return audit_runs.build_run(base / "run", field, seed="audit-m1", rounds=40, hands=4)


@pytest.fixture(scope="module")
def memory_audit(memory_run: Path) -> au.AuditResult:
    """The audit of :func:`memory_run`, made once for the tests that read it
    (the same run and arguments give the same result: its samples are drawn
    from the run's key)."""
    return audit(memory_run)


def test_a_player_that_remembers_deals_is_flagged_by_the_memory_signal(
    memory_audit: au.AuditResult,
) -> None:
    result = memory_audit
    m = result.entrants["memory"]["memory"]
    assert m["tested"] and m["flagged"] and m["deals"] == 40
    # Later games of a deal beat its first by points per hand, beyond the trend.
    assert m["gain"] > 1 and m["interval"][0] > 0 and m["later"] < m["first"]
    assert "memory" in result.flagged


def test_a_player_that_improves_over_time_is_not_flagged_by_memory(
    memory_audit: au.AuditResult,
) -> None:
    result = memory_audit
    m = result.entrants["improver"]["memory"]
    assert m["tested"] and not m["flagged"]
    assert m["trend"] < 0  # it does get better (fewer points) with time
    for name in ("heuristic", "heuristic2", "improver"):
        assert not result.entrants[name]["memory"]["flagged"]


def test_the_memory_signal_needs_the_play_order(memory_run: Path) -> None:
    """Games of one deal are ordered by started_at: shuffling the times
    between the games of each deal moves which game counts as first."""
    run = au.load_run(memory_run)
    scores = au.game_scores(run.records)
    firsts = {(s.entrant, s.deal): s.game for s in scores if s.first}
    assert len(firsts) == 4 * 40
    for (_, deal), g in firsts.items():
        same = [r for r in run.records if f"{r['deal_key']}/{r['table']}" == deal]
        assert run.records[g]["started_at"] == min(r["started_at"] for r in same)


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six entrants, 4 rounds (240 one-hand games): four heuristic players and
    a pair that tell each other their hands through files and play for the
    pair's points."""
    base = tmp_path_factory.mktemp("p")
    allies = ["ally1", "ally2"]
    field: dict[str, Any] = {f"honest{i}": (lambda: audit_runs.Heuristic()) for i in range(4)}
    field |= {a: (lambda: cheatlib.Partner(str(base), allies, 0)) for a in allies}
    return audit_runs.build_run(base / "run", field, seed="audit-p1", rounds=4)


def test_a_colluding_pair_of_six_entrants_is_flagged_by_the_pair_signal(pair_run: Path) -> None:
    result = audit(pair_run)
    assert sorted(result.flagged) == ["ally1", "ally2"]
    for name in ("ally1", "ally2"):
        k = result.entrants[name]["collusion"]
        assert k["flagged"] and k["partner"] == ("ally2" if name == "ally1" else "ally1")
        assert k["gain"] > 1 and k["interval"][0] > 0
        assert not result.entrants[name]["memory"]["flagged"]
    pair = result.pairs["ally1 + ally2"]
    assert pair["tested"] and pair["with"] < pair["without"]
    # They give each other fewer points than they give the others.
    for name in ("ally1", "ally2"):
        assert pair["points_given"][name] < pair["points_given_others"][name]
    assert result.tests == 6 * 2 + 15 or result.tests == 6 + 15  # clairvoyance may be untested


def test_with_four_entrants_the_pair_signal_is_not_tested(memory_audit: au.AuditResult) -> None:
    result = memory_audit
    pair = result.pairs["heuristic + memory"]
    assert pair["tested"] is False and pair["p"] is None
    assert pair["joint"] is not None and pair["without"] is None
    assert all(not s["collusion"]["tested"] for s in result.entrants.values())


def test_gifts_count_discards_taken_by_the_other() -> None:
    rec: Any = {
        "seats": ["a", "b", "c", "d"],
        "hands": [
            {
                "tricks": [
                    # b discards the queen and a heart on a's club trick: a took them.
                    {"leader": 0, "cards": ["AC", "QS", "2C", "5H"], "winner": 0, "points": 14},
                ]
            }
        ],
    }
    g = au.gifts([rec])
    assert g.points[("b", "a")] == 13 and g.queens[("b", "a")] == 1
    assert g.points[("d", "a")] == 1 and g.points[("c", "a")] == 0
    assert g.per_hand("b", ["a"]) == 13.0 and g.hands[("a", "b")] == 1
