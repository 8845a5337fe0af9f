"""The server's rolling ladder and gate (arena/server/ladder.py, gate.py): pure
functions, asserted on real seatings, folds and verdicts."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Any

import pytest

from arena.core.keys import MasterKey
from arena.results.rating import RatingTable
from arena.server import gate, ladder
from arena.server.folder import CompetitionSettings
from arena.server.store import Rating
from arena.tournament.ladder import table_games
from arena.tournament.runner import TournamentSettings

KEY = MasterKey.from_seed("server-ladder")
HOUSE = ("house:low", "house:random", "house:heuristic")


def _record(table: int, k: int, seats: Sequence[str], **extra: Any) -> dict[str, Any]:
    # Ranks from a fixed strength (the submission's number) plus a per-game
    # draw, so results are deterministic but not a fixed order.
    def strength(n: str) -> float:
        base = int(n[1:]) if n.startswith("s") else 0
        h = hashlib.sha256(f"{table}:{k}:{n}".encode()).digest()
        return base + h[0] / 64

    order = sorted(range(4), key=lambda s: -strength(seats[s]))
    ranks = [0, 0, 0, 0]
    for place, s in enumerate(order):
        ranks[s] = place + 1
    return {
        "game_id": f"l{table}-k{k}",
        "seats": list(seats),
        "ranks": ranks,
        "faults": [],
        "struck_out": [],
        **extra,
    }


def _simulate(
    field: list[str], tables: int, lag: int, slots: int, order_seed: int
) -> tuple[list[Any], dict[str, Rating]]:
    """A rolling ladder played with ``slots`` tables at once, tables finishing
    in an order drawn from ``order_seed``: the choices and the final fold."""
    finish = random.Random(order_seed)
    chosen: list[ladder.ChosenTable] = []
    records: dict[int, list[dict[str, Any]]] = {}
    folds: dict[int, dict[str, Rating]] = {0: {}}
    through = 0
    in_flight: list[int] = []
    statuses: list[str] = []
    joined = {n: 0 for n in field if n.startswith("s")}
    while len(chosen) < tables or in_flight:
        t = len(chosen)
        if t < tables and len(in_flight) < slots and ladder.can_choose(t, lag, through):
            fp = ladder.fold_point(t, lag)
            past = [ladder.PastTable(c.number, c.seating, c.focus) for c in chosen]
            c = ladder.choose_ladder_table(t, KEY, lag, field, folds[fp], past[fp:], joined, past)
            chosen.append(c)
            statuses.append("playing")
            in_flight.append(t)
            continue
        done = in_flight.pop(finish.randrange(len(in_flight)))
        specs = ladder.ladder_specs(KEY, done, chosen[done].seating, 1, None)
        records[done] = [_record(done, s.rotation, s.seats) for s in specs]
        statuses[done] = "done"
        reach = ladder.fold_reach(statuses, through)
        while through < reach:
            folds[through + 1] = ladder.fold_tables(folds[through], [records[through]])
            through += 1
    return chosen, folds[through]


def test_tables_and_fold_do_not_depend_on_slots_or_finishing_order() -> None:
    field = [f"s{i}" for i in range(1, 9)]
    base, fold = _simulate(field, 40, 4, 1, 0)
    for slots, seed in [(2, 1), (3, 2), (4, 3), (4, 4)]:
        other, other_fold = _simulate(field, 40, 4, slots, seed)
        assert [c.seating for c in other] == [c.seating for c in base]
        assert [c.focus for c in other] == [c.focus for c in base]
        assert other_fold == fold
    # The ladder used its ratings: after 40 tables the strongest leads.
    best = max(fold, key=lambda n: fold[n].mu - 3 * fold[n].sigma)
    assert best in ("s8", "s7")
    assert sum(r.games for r in fold.values()) == 40 * 16
    # Later tables come from folds: table 10 from tables 0..5.
    assert base[10].fold_through == 6 and base[3].fold_through == 0


def test_the_first_table_is_pinned_by_the_key() -> None:
    field = ladder.field_of(["s1", "s2", "s3", "s4", "s5"], HOUSE)
    c = ladder.choose_ladder_table(0, KEY, 16, field, {}, [], {}, [])
    again = ladder.choose_ladder_table(0, KEY, 16, field, {}, [], {}, [])
    assert c == again
    # Pinned: a change here changes every competition's tables for a given key.
    assert (c.seating, c.focus, c.fold_through) == (("s2", "s1", "s3", "s5"), "s1", 0)
    nxt = ladder.choose_ladder_table(
        1, KEY, 16, field, {}, [ladder.PastTable(0, ("s4", "s3", "s1", "s2"), "s4")], {}, []
    )
    assert nxt.focus == "s5"  # the one entrant without games at table 0
    other = ladder.choose_ladder_table(0, MasterKey.from_seed("other"), 16, field, {}, [], {}, [])
    seatings = {
        ladder.choose_ladder_table(
            0, MasterKey.from_seed(f"k{i}"), 16, field, {}, [], {}, []
        ).seating
        for i in range(12)
    }
    assert len(seatings) > 3  # the key chooses, not a fixed order
    assert other.number == 0


def test_the_table_needs_every_table_since_its_fold() -> None:
    field = ["s1", "s2", "s3", "s4"]
    with pytest.raises(ValueError, match=r"the tables 4\.\.5 are needed"):
        ladder.choose_ladder_table(
            6, KEY, 2, field, {}, [ladder.PastTable(4, tuple(field), "s1")], {}, []
        )
    assert not ladder.can_choose(20, 16, 3) and ladder.can_choose(20, 16, 4)
    assert ladder.fold_reach(["done", "void", "playing", "done"], 0) == 2
    assert ladder.fold_reach(["done", "void", "done"], 1) == 3


def test_house_bots_fill_the_field_to_four() -> None:
    assert ladder.field_of(["s2"], HOUSE) == ["house:heuristic", "house:low", "house:random", "s2"]
    assert ladder.field_of(["s2", "s5"], HOUSE) == ["house:low", "house:random", "s2", "s5"]
    assert ladder.field_of(["s1", "s2", "s3", "s4"], HOUSE) == ["s1", "s2", "s3", "s4"]
    with pytest.raises(ValueError, match="needs four entrants, got 3"):
        ladder.field_of(["s1"], HOUSE[:2])


def test_a_new_submission_is_the_focus_of_at_most_a_third_of_tables() -> None:
    field = ["s1", "s2", "s3", "s4", "s5", "s9"]
    settled = {n: Rating(25.0 + i, 2.0, 200) for i, n in enumerate(field[:-1])}
    chosen: list[ladder.ChosenTable] = []
    joined = {"s9": 0}
    for t in range(12):
        past = [ladder.PastTable(c.number, c.seating, c.focus) for c in chosen]
        # Lag 12: every table is chosen from the same fold (s9 unrated, 0 games).
        c = ladder.choose_ladder_table(t, KEY, 12, field, settled, past, joined, past)
        chosen.append(c)
        focus = sum(1 for x in chosen if x.focus == "s9")
        assert focus <= math.ceil((t + 1) / 3), (t, focus)
    assert [c.focus == "s9" for c in chosen].count(True) == 4
    # Without the rule (joined unknown) the new submission is the focus of every table.
    free = []
    for t in range(12):
        past = [ladder.PastTable(c.number, c.seating, c.focus) for c in free]
        free.append(ladder.choose_ladder_table(t, KEY, 12, field, settled, past, {}, past))
    assert all(c.focus == "s9" for c in free[:5])
    assert ladder.focus_allowed(0, 0, 0) and not ladder.focus_allowed(1, 0, 1)
    assert ladder.focus_allowed(3, 0, 1) and not ladder.focus_allowed(5, 0, 2)


def test_specs_share_one_deal_per_table_and_match_the_ladder_format() -> None:
    seating = ("s3", "house:low", "s1", "s2")
    specs = ladder.ladder_specs(KEY, 7, seating, 2, None)
    settings = TournamentSettings(key=KEY, hands=2, target_score=None)
    ref = table_games(7, 0, seating, settings)
    assert [(s.seats, s.deal_key, s.table_key, s.game_id) for s in specs] == [
        (r.seats, r.deal_key, r.table_key, r.game_id) for r in ref
    ]
    assert {s.deal_key for s in specs} == {"L7"}
    assert specs[1].seats == ("s2", "s3", "house:low", "s1")
    v = ladder.validation_specs(KEY, 0, 12, ladder.validation_seating("s12", HOUSE))
    assert {s.deal_key for s in v} == {"V12"} and {s.hands for s in v} == {1}
    assert v[0].seats == ("s12", "house:low", "house:random", "house:heuristic")
    assert v[0].table_key == KEY.table_key("V12") != specs[0].table_key
    assert [s.game_id for s in v] == ["v0-k0", "v0-k1", "v0-k2", "v0-k3"]


def test_the_fold_is_trueskill_in_table_order() -> None:
    seating = ["s1", "s2", "s3", "house:low"]
    t0 = [_record(0, k, seating[k:] + seating[:k]) for k in range(4)]
    t1 = [_record(1, k, seating[::-1]) for k in range(4)]
    fold = ladder.fold_tables({}, [t0, t1])
    ref = RatingTable(seating)
    for i, rec in enumerate(t0 + t1):
        ref.apply(i, rec["seats"], rec["ranks"])
    for n in seating:
        assert fold[n].mu == pytest.approx(ref.ratings[n].mu)
        assert fold[n].sigma == pytest.approx(ref.ratings[n].sigma)
        assert fold[n].games == 8
    assert fold["s3"].mu > 25 > fold["house:low"].mu
    # Folding in two steps gives the same as in one.
    assert ladder.fold_tables(ladder.fold_tables({}, [t0]), [t1]) == fold


def test_fault_runs_count_crashes_and_strike_outs_in_a_row() -> None:
    seats = ["s1", "s2", "s3", "s4"]
    crash = {"seat": 1, "reason": "crashed", "detail": "exit 1", "entrant": "s2"}
    games = [
        _record(0, 0, seats, faults=[crash]),
        _record(0, 1, seats, struck_out=[1]),
        _record(0, 2, seats, faults=[{**crash, "seat": 1, "reason": "illegal"}]),
        _record(0, 3, seats, faults=[crash], struck_out=[0]),
    ]
    assert ladder.fault_runs({}, games[:2]) == {"s1": 0, "s2": 2, "s3": 0, "s4": 0}
    assert ladder.fault_runs({"s2": 7}, games[:1])["s2"] == 8
    assert ladder.fault_runs({}, games) == {"s1": 1, "s2": 1, "s3": 0, "s4": 0}


CRASHER_REPORT = """checking crasher (python crasher.py), 1 s per decision
PASS  handshake                          answered hello as 'crasher' in 41.8 ms; 1 request
FAIL  pass-right                         not reached: the bot crashed in game 1 hand 1 trick 5: exited (exit code 3)
        bot stderr:
        crasher: giving up
"""


def test_judge_check() -> None:
    r = gate.judge_check(5, CRASHER_REPORT)
    assert (r.passed, r.server_fault) == (False, False)
    assert r.reason == (
        "check pass-right: not reached: the bot crashed in game 1 hand 1 trick 5: exited (exit code 3)"
    )
    assert r.output == CRASHER_REPORT
    assert gate.judge_check(0, "ok").passed
    late = gate.judge_check(None, "x")
    assert (late.passed, late.server_fault, late.reason) == (
        False,
        True,
        "the check ran past its time budget",
    )
    env = gate.judge_check(4, "error: bots cannot be sealed here: no bubblewrap\n")
    assert env.server_fault and env.reason.endswith("no bubblewrap")
    assert len(gate.cap_output("x" * 200_000)) < 70_000


def test_check_argv_is_sealed_with_the_competition_settings() -> None:
    argv = gate.check_argv("s3=/c/uploads/ab/bot.py", CompetitionSettings(), "py")
    assert argv[:5] == ["py", "-m", "arena", "check", "--sandbox"]
    assert argv[argv.index("--time-limit") + 1] == "1"
    assert argv[argv.index("--memory-limit") + 1] == "4096"
    assert argv[-1] == "s3=/c/uploads/ab/bot.py"


def test_judge_validation() -> None:
    seating = ("s4", *HOUSE)
    specs = ladder.validation_specs(KEY, 0, 4, seating)
    clean = [_record(0, s.rotation, s.seats) for s in specs]
    assert gate.judge_validation(clean, "s4").passed
    bad = [dict(r) for r in clean]
    seat = bad[2]["seats"].index("s4")
    bad[2]["faults"] = [
        {"seat": seat, "reason": "illegal", "detail": "played 2H on trick 1", "entrant": "s4"}
    ]
    r = gate.judge_validation(bad, "s4")  # type: ignore[arg-type]
    assert (r.passed, r.server_fault) == (False, False)
    assert r.reason == "validation: illegal in game l0-k2: played 2H on trick 1"
    house = [dict(r) for r in clean]
    hseat = house[1]["seats"].index("house:random")
    house[1]["struck_out"] = [hseat]
    h = gate.judge_validation(house, "s4")  # type: ignore[arg-type]
    assert (h.passed, h.server_fault) == (False, True)
    assert h.reason == "house bot house:random: struck out in game l0-k1"
    with pytest.raises(ValueError, match="four games"):
        gate.judge_validation(clean[:3], "s4")  # type: ignore[arg-type]
