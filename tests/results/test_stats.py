"""Duplicate scoring, bootstrap intervals, significance, head-to-head and ``--seating full``."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, run_arena

from arena.results import stats
from arena.tournament.runner import SEAT_PERMUTATIONS, TournamentSettings, schedule_round_robin
from arena.tournament.synthetic import synthesize

NAMES = ["a", "b", "c", "d"]


def board_records(
    base: dict[str, float],
    luck: list[float],
    deals: int = 1,
    hands_by_rotation: dict[int, int] | None = None,
    rotations: range = range(4),
    noise: random.Random | None = None,
    key: str = "s:1",
) -> list[dict[str, Any]]:
    """Records of one table in rotations: entrant ``e`` at seat ``s`` scores
    ``base[e] + luck[s]`` (plus noise) on every hand."""
    records = []
    for k in rotations:
        seats = ["", "", "", ""]
        for i, name in enumerate(sorted(base)):
            seats[(i + k) % 4] = name
        n_hands = (hands_by_rotation or {}).get(k, deals)
        hands = []
        for h in range(1, n_hands + 1):
            pts = [base[seats[s]] + luck[s] + (noise.gauss(0, 3) if noise else 0) for s in range(4)]
            hands.append({"hand_number": h, "deal_seed": f"{key}:{h}", "points": pts, "moon": None})
        records.append(
            {
                "game_index": len(records),
                "game_id": f"r1-t0-k{k}",
                "deal_key": key,
                "table": 0,
                "rotation": k,
                "seats": seats,
                "hands": hands,
                "ranks": [1, 2, 3, 4],
            }
        )
    return records


def test_duplicate_score_is_points_minus_the_mean_of_the_others_with_the_same_cards() -> None:
    # The seat's luck cancels: each entrant's duplicate score is its base
    # minus the mean base of the other three, on every board.
    base = {"a": 0.0, "b": 4.0, "c": 8.0, "d": 12.0}
    obs = stats.duplicate_observations(board_records(base, [10, 0, 3, 13]), seatings=4)
    assert len(obs) == 16  # 4 entrants x 4 boards (the four seats of the one hand)
    for name, deal, value in obs:
        others = [v for n, v in base.items() if n != name]
        assert deal == "s:1:1"
        assert value == pytest.approx(base[name] - sum(others) / 3)
    # A complete board's duplicate scores add to zero.
    assert sum(v for _, _, v in obs) == pytest.approx(0)


def test_only_hands_reached_in_every_rotation_count() -> None:
    base = {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0}
    recs = board_records(base, [0, 0, 0, 0], deals=1, hands_by_rotation={0: 3, 2: 2})
    obs = stats.duplicate_observations(recs, seatings=4)
    assert {deal for _, deal, _ in obs} == {"s:1:1"}  # hands 2 and 3 were not reached by all
    # A missing rotation (an interrupted run) leaves no complete board at all.
    assert stats.duplicate_observations(board_records(base, [0] * 4, rotations=range(3)), 4) == []
    # Full seating expects 24 games per table and round.
    assert stats.duplicate_observations(recs, seatings=24) == []


def test_statistics_are_reproducible_from_the_seed_and_intervals_cover_the_means() -> None:
    rng = random.Random(3)
    base = {"a": 5.0, "b": 6.0, "c": 7.0, "d": 8.0}
    recs = []
    for r in range(1, 9):
        for rec in board_records(
            base, [rng.uniform(0, 13) for _ in range(4)], deals=3, noise=rng, key=f"9:{r}"
        ):
            rec["game_index"] = len(recs)
            recs.append(rec)
    one = stats.compute_statistics(NAMES, recs, {"seed": 9})
    two = stats.compute_statistics(NAMES, recs, {"seed": 9})
    other = stats.compute_statistics(NAMES, recs, {"seed": 10})
    assert one == two
    assert one["entrants"]["a"]["duplicate_low"] != other["entrants"]["a"]["duplicate_low"]
    assert one["bootstrap"]["deals"] == 24 and one["bootstrap"]["unit"] == "deal"
    for name in NAMES:
        e = one["entrants"][name]
        assert e["duplicate_hands"] == 8 * 3 * 4
        assert e["duplicate_low"] < e["duplicate"] < e["duplicate_high"]
        assert e["points_per_hand_low"] < e["points_per_hand_high"]


def _noisy_tournament(
    base: dict[str, float], rounds: int, seed: int, deals: int = 4
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    recs = []
    for r in range(1, rounds + 1):
        for rec in board_records(
            base, [rng.uniform(0, 13) for _ in range(4)], deals=deals, noise=rng, key=f"1:{r}"
        ):
            rec["game_index"] = len(recs)
            recs.append(rec)
    return recs


def test_pairs_are_significant_only_for_a_real_difference() -> None:
    recs = _noisy_tournament({"a": 0.0, "b": 6.0, "c": 6.0, "d": 6.0}, rounds=10, seed=1)
    result = stats.compute_statistics(NAMES, recs, {"seed": 1})
    pairs = stats.pair_lookup(result["pairs"][stats.DUPLICATE])
    assert pairs[("a", "b")]["significant"] and pairs[("a", "b")]["difference"] < 0
    assert pairs[("b", "a")]["difference"] > 0 and pairs[("b", "a")]["low"] > 0
    assert not pairs[("b", "c")]["significant"]
    assert pairs[("b", "c")]["low"] < 0 < pairs[("b", "c")]["high"]


def test_verdict_says_settled_or_how_many_more_rounds() -> None:
    recs = _noisy_tournament({"a": 0.0, "b": 6.0, "c": 6.0, "d": 6.0}, rounds=10, seed=1)
    result = stats.compute_statistics(NAMES, recs, {"seed": 1})
    standings = [{"name": n, "games": 40} for n in ("a", "b", "c", "d")]
    v = stats.top_settled(standings, result, rounds_played=10)
    assert v["settled"] and v["metric"] == "duplicate" and v["more_rounds"] == 0
    best = min("bcd", key=lambda n: result["entrants"][n]["duplicate"])  # b, c, d are level
    assert v["runner_up"] == best
    assert v["text"].startswith(f"Settled: a leads {best} significantly (")
    assert f"than {best}, second on duplicate score" in v["text"]
    # A small lead over few rounds: not settled, with a rough number of rounds
    # (the interval's half-width over the lead, squared, times the rounds played).
    recs = _noisy_tournament({"a": 4.5, "b": 6.0, "c": 6.0, "d": 6.0}, rounds=2, seed=2, deals=6)
    result = stats.compute_statistics(NAMES, recs, {"seed": 2})
    v = stats.top_settled(standings, result, rounds_played=2)
    assert not v["settled"] and v["low"] < 0 < v["difference"] < v["high"]
    half = (v["high"] - v["low"]) / 2
    assert v["more_rounds"] == math.ceil(2 * (half / v["difference"]) ** 2) - 2
    assert f"about {v['more_rounds']} more rounds" in v["text"]
    # A ladder counts games, not rounds: the same arithmetic over its 8 games.
    v = stats.top_settled(standings, result, rounds_played=8, unit="game")
    assert (
        v["unit"] == "game" and v["more_rounds"] == math.ceil(8 * (half / v["difference"]) ** 2) - 8
    )
    assert f"about {v['more_rounds']} more games (" in v["text"] and "round" not in v["text"]
    # Level entrants: no practical number of rounds.
    recs = _noisy_tournament({"a": 5.5, "b": 6.0, "c": 6.0, "d": 6.0}, rounds=3, seed=3)
    v = stats.top_settled(standings, stats.compute_statistics(NAMES, recs, {"seed": 3}), 3)
    assert v["more_rounds"] is None and "cannot be told apart" in v["text"]
    # Too few deals (2 rounds of 3 hands): never settled, however clear the lead looks.
    recs = _noisy_tournament({"a": 0.0, "b": 6.0, "c": 6.0, "d": 6.0}, rounds=2, seed=1, deals=3)
    result = stats.compute_statistics(NAMES, recs, {"seed": 1})
    assert not result["bootstrap"]["reliable"]
    assert not any(p["significant"] for p in result["pairs"][stats.DUPLICATE])
    v = stats.top_settled(standings, result, rounds_played=2)
    assert not v["settled"] and v["more_rounds"] == 2  # 4 rounds give 12 deals, at least 10
    assert v["text"].startswith("Not settled: only 6 deals")
    # Nothing played: no verdict beyond that.
    empty = stats.compute_statistics(NAMES, [], {"seed": 2})
    assert (
        "Too few games"
        in stats.top_settled([{"name": n, "games": 0} for n in NAMES], empty, 0)["text"]
    )


def test_head_to_head_counts_are_consistent() -> None:
    names = ["p", "q", "r", "s", "t"]
    recs = synthesize(names, TournamentSettings(seed=4, rounds=1, hands=1, target_score=None))
    h2h = stats.head_to_head(names, recs)
    for x, y in itertools.permutations(names, 2):
        cell = h2h[x][y]
        assert cell["games"] == 3 * 4  # 3 tables hold both, in 4 rotations
        assert cell["ahead"] + cell["behind"] + cell["level"] == cell["games"]
        assert cell["ahead"] == h2h[y][x]["behind"] and cell["level"] == h2h[y][x]["level"]


# -- --seating full --------------------------------------------------------------


def test_full_seating_plays_all_24_permutations_per_table_and_round() -> None:
    names = ["e", "a", "d", "c", "b"]
    games = schedule_round_robin(names, TournamentSettings(seed=9, rounds=2, seating="full"))
    assert len(games) == 5 * 24 * 2
    assert len({g.game_id for g in games}) == len(games)
    assert games[0].game_id == "r1-t0-p0"
    for rnd in (1, 2):
        for t in range(5):
            table = [g for g in games if g.round == rnd and g.table == t]
            assert [g.rotation for g in table] == list(range(24))
            assert len({g.seats for g in table}) == 24  # every seating once
            members = sorted(table[0].seats)
            for g in table:
                for i, name in enumerate(members):
                    assert g.seats[SEAT_PERMUTATIONS[g.rotation][i]] == name
            # Each entrant holds each seat's cards six times per round.
            for name in members:
                assert Counter(g.seats.index(name) for g in table) == {0: 6, 1: 6, 2: 6, 3: 6}
            assert {g.deal_key for g in table} == {f"r{rnd}-t{t}"}


def test_default_seating_keeps_the_four_rotations() -> None:
    settings = TournamentSettings(seed=9, rounds=1)
    assert settings.seating == "rotations" and settings.to_json()["seating"] == "rotations"
    games = schedule_round_robin(list("abcd"), settings)
    assert [g.game_id for g in games] == ["r1-t0-k0", "r1-t0-k1", "r1-t0-k2", "r1-t0-k3"]
    with pytest.raises(ValueError, match="seating"):
        TournamentSettings(seed=1, seating="shuffled")


def test_full_seating_duplicate_scores_balance() -> None:
    settings = TournamentSettings(seed=2, rounds=1, hands=2, target_score=None, seating="full")
    recs = synthesize(NAMES, settings, policies={"a": "low"})
    result = stats.compute_statistics(NAMES, recs, settings.to_json())
    ents = result["entrants"]
    assert {e["duplicate_hands"] for e in ents.values()} == {24 * 2}
    assert sum(e["duplicate"] for e in ents.values()) == pytest.approx(0, abs=1e-9)


def test_cli_seating_flag_reaches_the_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    # A real --seating full run is 24 games of 4 process starts each; the dry
    # run goes through the same settings and schedule without starting bots,
    # and the settings record carries "seating" (TournamentSettings.to_json).
    entrants = [bot("first_legal", "a"), bot("random_legal", "b"), bot("random_legal", "c"),
                bot("random_legal", "d")]  # fmt: skip
    args = ["run", *entrants, "--rounds", "1", "--hands", "1", "--dry-run", "--seed", "3"]
    assert run_arena([*args, "--seating", "full"]) == 0
    out = capsys.readouterr().out
    assert "1 rounds x 24 seatings" in out and "24 games" in out
    assert run_arena(args) == 0
    out = capsys.readouterr().out
    assert "1 rounds x 4 rotations" in out and "4 games" in out
    assert run_arena([*args, "--seating", "bogus"]) == 2


def test_verdict_is_about_the_first_two_rows_and_says_when_duplicate_disagrees() -> None:
    """Issue 14 item 10: the table had heuristic first, the sentence named duck as leader."""
    standings = [{"name": n, "games": 40} for n in ("a", "b", "c", "d")]  # the table's order
    # b is clearly better on the same cards, though the table puts a first.
    recs = _noisy_tournament({"a": 6.0, "b": 4.0, "c": 6.0, "d": 6.0}, rounds=10, seed=1)
    result = stats.compute_statistics(NAMES, recs, {"seed": 1})
    v = stats.top_settled(standings, result, rounds_played=10)
    assert (v["leader"], v["runner_up"], v["agrees"], v["settled"]) == ("a", "b", False, False)
    assert v["difference"] < 0 and v["high"] < 0
    gap = f"{-v['difference']:.2f} more points per hand than b, first on duplicate score"
    assert f"a, first in the table, takes {gap}" in v["text"]
    assert f"95% interval {-v['high']:.2f} to {-v['low']:.2f} more" in v["text"]
    assert "the table puts a first, but b is significantly better on duplicate score" in v["text"]
    assert "disagree" in v["text"] and "lead over" not in v["text"]
    # Within the noise, the disagreement is still said in plain words.
    recs = _noisy_tournament({"a": 6.0, "b": 5.8, "c": 6.0, "d": 6.0}, rounds=2, seed=2, deals=6)
    result = stats.compute_statistics(NAMES, recs, {"seed": 2})
    v = stats.top_settled(standings, result, rounds_played=2)
    dup = {n: result["entrants"][n]["duplicate"] for n in NAMES}
    best = min("bcd", key=dup.__getitem__)  # the best of the others on the same cards
    assert v["leader"] == "a" and v["runner_up"] == best
    assert v["difference"] < 0 < v["high"] and v["low"] < 0
    assert v["agrees"] is False
    assert (
        f"The duplicate score puts {best} ahead of a: it disagrees with the table's order."
        in v["text"]
    )
    # When they agree, nothing is said about disagreement, and the gap reads "fewer".
    order = sorted(NAMES, key=dup.__getitem__)
    standings = [{"name": n, "games": 40} for n in order]
    v = stats.top_settled(standings, result, rounds_played=2)
    assert (v["leader"], v["runner_up"], v["agrees"]) == (order[0], order[1], True)
    assert "disagree" not in v["text"]
    assert (
        f"{order[0]}, first in the table, takes {v['difference']:.2f} fewer points per hand "
        f"than {order[1]}, second on duplicate score" in v["text"]
    )


def test_an_interval_end_at_zero_reads_0_00_never_minus_zero() -> None:
    """Issue 14 items 10 and 12: a pair's interval ending at 0.0 is negated
    when the pair is read the other way round; the sentence said
    "3.33 more to -0.00 fewer" (an ASCII minus, and a sign on zero)."""
    standings = [{"name": "a", "games": 8}, {"name": "b", "games": 8}]
    pair = {"a": "a", "b": "b", "difference": 1.67, "low": 0.0, "high": 3.33, "significant": False}
    statistics = {
        "entrants": {"a": {"duplicate_hands": 20}, "b": {"duplicate_hands": 20}},
        "pairs": {stats.DUPLICATE: [pair]},
        "bootstrap": {"reliable": True, "deals": 20},
    }
    v = stats.top_settled(standings, statistics, rounds_played=1)
    assert v["high"] == 0.0 and math.copysign(1.0, v["high"]) == -1.0  # the pair read b-a
    assert "a, first in the table, takes 1.67 more points per hand than b" in v["text"]
    assert "95% interval 0.00 to 3.33 more)" in v["text"]
    assert "-0" not in v["text"] and "−0" not in v["text"]


def test_verdict_names_the_entrant_second_on_its_metric_not_the_tables_second_row() -> None:
    """Issue 24 item 1: "Settled: cbot leads low significantly" while duck beat
    low on every column, significantly, and cbot's lead over duck was within
    the noise. The table (by TrueSkill) and the duplicate score order the
    field differently here: the sentence is about the entrant second on the
    duplicate score, and says settled only when the lead over it is significant."""
    standings = [{"name": n, "games": 40} for n in ("a", "b", "c", "d")]  # by TrueSkill
    # On the same cards a and c are level, b and d far behind: c is second on duplicate.
    recs = _noisy_tournament({"a": 4.0, "b": 8.0, "c": 4.2, "d": 9.0}, rounds=10, seed=3)
    result = stats.compute_statistics(NAMES, recs, {"seed": 3})
    pairs = stats.pair_lookup(result["pairs"][stats.DUPLICATE])
    assert pairs[("b", "a")]["significant"] and not pairs[("c", "a")]["significant"]
    v = stats.top_settled(standings, result, rounds_played=10)
    assert (v["leader"], v["runner_up"], v["settled"]) == ("a", "c", False)
    assert not v["text"].startswith("Settled") and not re.search(r"\bb\b", v["text"])
    assert "than c, second on duplicate score" in v["text"]
    # A clear lead over the best of the others (c, not the table's second row b): settled.
    recs = _noisy_tournament({"a": 1.0, "b": 8.0, "c": 5.0, "d": 9.0}, rounds=10, seed=3)
    result = stats.compute_statistics(NAMES, recs, {"seed": 3})
    v = stats.top_settled(standings, result, rounds_played=10)
    assert (v["leader"], v["runner_up"], v["settled"]) == ("a", "c", True)
    assert v["text"].startswith("Settled: a leads c significantly (a, first in the table")
    assert "than c, second on duplicate score" in v["text"]
    assert v["difference"] == pytest.approx(
        result["entrants"]["c"]["duplicate"] - result["entrants"]["a"]["duplicate"]
    )
    # A disqualified entrant is out of the comparison, however good its score.
    dq = [dict(r, disqualified=r["name"] == "c") for r in standings]
    v = stats.top_settled(dq, result, rounds_played=10)
    assert v["runner_up"] == "b"


def test_settled_needs_a_significant_lead_over_every_other_entrant() -> None:
    """The best of the others may be closer in the mean but surer than a third
    entrant whose interval still reaches the leader: then it is not settled."""

    def pair(a: str, b: str, diff: float, low: float, high: float) -> dict[str, Any]:
        return {"a": a, "b": b, "difference": diff, "low": low, "high": high,
                "significant": low > 0 or high < 0}  # fmt: skip

    standings = [{"name": n, "games": 40} for n in ("a", "b", "c")]
    statistics = {
        "entrants": {n: {"duplicate_hands": 40} for n in "abc"},
        "pairs": {
            stats.DUPLICATE: [
                pair("b", "a", 1.0, 0.5, 1.5),
                pair("c", "a", 2.0, -1.0, 5.0),
                pair("b", "c", -1.0, -4.0, 2.0),
            ]
        },
        "bootstrap": {"reliable": True, "deals": 40},
    }
    v = stats.top_settled(standings, statistics, rounds_played=10)
    assert (v["runner_up"], v["unseparated"], v["settled"]) == ("b", "c", False)
    assert v["text"].startswith("Not settled: a leads b significantly (")
    assert "but not c" in v["text"] and "95% interval 1.00 more to 5.00 fewer" in v["text"]


def test_run_prints_the_verdict_sentence(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 4: the sentence the report opens with is printed under the
    standings in the terminal too."""
    out = open_tmp / "o"
    args = ["run", "sample:low", "sample:duck", "sample:random", "sample:heuristic"]
    assert (
        run_arena([*args, "--rounds", "1", "--hands", "1", "--seed", "2", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out.splitlines()
    verdict = json.loads((out / "results.json").read_text())["confidence"]["verdict"]
    assert verdict["text"].startswith("Not settled: too few deals")
    assert printed[-2] == verdict["text"]
    assert printed[-1].startswith("4 of 4 games; report: ")
