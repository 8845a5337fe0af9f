"""The round-robin schedule (pure) and the runner's determinism."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, load_outputs, run_arena

from arena.core.keys import MasterKey
from arena.core.rules import deal_hands, round_robin_deal_key, table_deal
from arena.tournament.runner import TournamentSettings, chains_of, schedule_round_robin


def test_schedule_seats_every_entrant_at_every_seat_of_every_table() -> None:
    names = ["e", "a", "d", "c", "b"]
    games = schedule_round_robin(names, TournamentSettings(seed=9, rounds=2))
    assert len(games) == 5 * 4 * 2  # C(5,4) tables x 4 rotations x 2 rounds
    assert [g.game_index for g in games] == list(range(40))
    tables = {g.table: tuple(sorted(g.seats)) for g in games}
    assert sorted(tables.values()) == sorted(combinations(sorted(names), 4))
    for rnd in (1, 2):
        for t, members in tables.items():
            rotations = [g for g in games if g.round == rnd and g.table == t]
            assert [g.rotation for g in rotations] == [0, 1, 2, 3]
            # Rotation k seats the table's entrant i at seat (i + k) % 4.
            for g in rotations:
                for i, name in enumerate(members):
                    assert g.seats[(i + g.rotation) % 4] == name
            # Each entrant holds each seat (and so each seat's cards) once per round.
            for name in members:
                assert sorted(g.seats.index(name) for g in rotations) == [0, 1, 2, 3]
            assert {g.deal_key for g in rotations} == {f"r{rnd}-t{t}"}


def test_schedule_is_pure_and_orders_round_table_rotation() -> None:
    s = TournamentSettings(seed=1, rounds=3)
    a = schedule_round_robin(["w", "x", "y", "z"], s)
    b = schedule_round_robin(["z", "y", "x", "w"], s)
    assert a == b
    assert [(g.round, g.table, g.rotation) for g in a] == [
        (r, 0, k) for r in (1, 2, 3) for k in range(4)
    ]
    assert a[0].game_id == "r1-t0-k0"
    assert len({g.bot_seeds for g in a}) == len(a)


def test_deals_of_a_table_come_from_its_table_key() -> None:
    """R2 with protocol/DEALS.md: the four rotations of a table share one table
    key, HMAC(subkey("deal"), "r{round}-t{table}") of the tournament key; other
    tables and rounds get other keys, so other deals."""
    settings = TournamentSettings(seed=9, rounds=2)
    key = MasterKey.from_seed(9)
    specs = schedule_round_robin(["a", "b", "c", "d", "e"], settings)
    by_deal: dict[str, set[bytes]] = {}
    for g in specs:
        by_deal.setdefault(g.deal_key, set()).add(g.table_key)
    assert all(len(keys) == 1 for keys in by_deal.values())
    assert {k: next(iter(v)) for k, v in by_deal.items()} == {k: key.table_key(k) for k in by_deal}
    assert len({next(iter(v)) for v in by_deal.values()}) == len(by_deal) == 10
    first = deal_hands("1", key.table_key("r1-t0"))
    assert (
        first != deal_hands("1", key.table_key("r2-t0")) != deal_hands("2", key.table_key("r1-t0"))
    )
    assert sorted(bin(h).count("1") for h in first) == [13, 13, 13, 13]
    assert first == table_deal(key.table_key(round_robin_deal_key(1, 0)), 1)


def _timeless(records: list[dict[str, Any]]) -> str:
    """The records in schedule order without the fields that record times, as text."""
    out = []
    for rec in sorted(records, key=lambda r: r["game_index"]):
        out.append(json.dumps({k: v for k, v in rec.items() if k not in _TIME_FIELDS}))
    return "\n".join(out)


_TIME_FIELDS = ("started_at", "duration_s", "timing", "transcripts")


def test_golden_run_of_the_sample_bots_is_the_same_json(tmp_path: Path) -> None:
    """Same seed and entrants, same ``games.jsonl`` and standings, apart from
    times: the four default sample bots (none depends on time; a generous
    time limit) under --seed 5, two hands a game. The digest was taken on the
    main branch before records were typed (issue 15) and again after: any
    change to a record's fields, their order or a card played changes it."""
    out = tmp_path / "golden"
    args = ["run", "--seed", "5", "--hands", "2", "--time-limit", "10", "--no-sandbox"]
    assert run_arena([*args, "--out", str(out), "--quiet"]) == 0
    results, records = load_outputs(out)
    assert len(records) == 8
    first = min(records, key=lambda r: r["game_index"])
    assert (first["game_id"], first["seats"]) == (
        "r1-t0-k0",
        ["duck", "heuristic", "low", "random"],
    )
    assert first["scores"] == [6, 1, 5, 40] and first["deal_seeds"] == ["r1-t0:1", "r1-t0:2"]
    rows = [(s["name"], s["games"], s["wins"], s["points_per_hand"]) for s in results["standings"]]
    assert rows == [
        ("duck", 8, 4, 3.5),
        ("heuristic", 8, 4, 2.875),
        ("low", 8, 0, 9.125),
        ("random", 8, 1, 13.75),
    ]
    digest = hashlib.sha256(_timeless(records).encode()).hexdigest()
    assert digest == "a1e12ab5b176f7f0b294f3ad1acf59393e7f1486a31aca93e1bec5c336f178f2"


def test_schedule_refuses_fewer_than_four_and_duplicates() -> None:
    with pytest.raises(ValueError, match="at least four"):
        schedule_round_robin(["a", "b", "c"], TournamentSettings(seed=1))
    with pytest.raises(ValueError, match="unique"):
        schedule_round_robin(["a", "b", "c", "c"], TournamentSettings(seed=1))


def test_chains_keep_seating_and_differ_in_round() -> None:
    games = schedule_round_robin(list("abcde"), TournamentSettings(seed=1, rounds=3))
    chains = chains_of(games)
    assert len(chains) == 5 * 4
    assert Counter(len(c) for c in chains) == {3: 20}
    for chain in chains:
        assert len({g.seats for g in chain}) == 1
        # Rotation k starts at round 1 + k mod 3 (the rotations of a table
        # start on different deals) and goes round the rounds from there.
        k = chain[0].rotation
        assert [g.round for g in chain] == [1 + (k + i) % 3 for i in range(3)]


def test_same_seed_gives_same_standings_for_any_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "arena.tournament.executors.POOL_MIN_GAMES", 0
    )  # --jobs 2: worker processes
    entrants = [
        bot("first_legal", "a"),
        bot("random_legal", "b"),
        bot("random_legal", "c"),
        bot("random_legal", "d"),
    ]
    outputs = []
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        code = run_arena(
            [
                "run",
                *entrants,
                "--hands",
                "2",
                "--rounds",
                "2",
                "--seed",
                "21",
                "--jobs",
                str(jobs),
                "--no-sandbox",  # the subject is the schedule, not the seal: 32 bots unsealed
                "--out",
                str(out),
                "--quiet",
            ]
        )
        assert code == 0
        outputs.append(load_outputs(out))
    (res1, rec1), (res2, rec2) = outputs
    # No fault at all: equal standings made of default moves would prove nothing.
    for records in (rec1, rec2):
        assert [f for r in records for f in r.get("faults", [])] == []
    assert all(sum(row["faults"].values()) == 0 for res in (res1, res2) for row in res["standings"])
    assert res1["standings"] == res2["standings"]
    assert res1["settings"]["jobs"] == 1 and res2["settings"]["jobs"] == 2
    strip = ("duration_s", "started_at", "timing")
    games1 = {r["game_index"]: {k: v for k, v in r.items() if k not in strip} for r in rec1}
    games2 = {r["game_index"]: {k: v for k, v in r.items() if k not in strip} for r in rec2}
    assert games1 == games2
    assert len(games1) == 8
    # The random bots did not all play alike: the standings are not a tie.
    assert len({row["points_per_hand"] for row in res1["standings"]}) > 1


def test_journal_after_a_kill_mid_line_drops_the_partial_line(tmp_path: Path) -> None:
    """A kill -9 while a line is written leaves a partial last line; resuming
    appends after the last complete line, and nothing else is lost."""
    from arena.tournament.runner import Journal, read_journal

    path = tmp_path / "games.jsonl"
    path.write_text('{"game_index": 0, "x": 1}\n{"game_index": 1, "x"')
    assert [r["game_index"] for r in read_journal(path, checked=False)] == [0]
    journal = Journal(path)
    journal.append({"game_index": 1, "x": 2})
    journal.close()
    assert read_journal(path, checked=False) == [
        {"game_index": 0, "x": 1},
        {"game_index": 1, "x": 2},
    ]
    assert path.read_text().count("\n") == 2


def test_journal_close_adds_only_the_records_missing_on_disk(tmp_path: Path) -> None:
    """A Ctrl-C can land after a game is recorded in memory but before (or
    while) its line is written; close() writes what is missing, once."""
    from arena.tournament.runner import Journal, read_journal

    path = tmp_path / "games.jsonl"
    path.write_text('{"game_index": 0, "x": 1}\n')
    journal = Journal(path)
    journal.append({"game_index": 1, "x": 2})  # on disk already
    records = [{"game_index": 0, "x": 1}, {"game_index": 1, "x": 2}, {"game_index": 2, "x": 3}]
    journal.close(records)
    assert [r["game_index"] for r in read_journal(path, checked=False)] == [0, 1, 2]
    assert path.read_text().count("\n") == 3


def test_scheduled_games_counts_what_schedule_makes() -> None:
    from arena.tournament.runner import schedule, scheduled_games

    names = [f"e{i}" for i in range(7)]
    for kw in [{}, {"seating": "full"}, {"format": "gauntlet", "candidate": "e0"}]:
        settings = TournamentSettings(seed=1, rounds=2, **kw)
        assert scheduled_games(7, settings) == len(schedule(names, settings))
    assert scheduled_games(7, TournamentSettings(seed=1, rounds=2)) == 35 * 4 * 2


def test_verify_checks_that_a_game_ends_where_r13_says() -> None:
    """R13 in ``verify``: a game to 30 (synthetic, the rules' Game) ends after
    the hand where a total reaches 30 with a single lowest total; a record cut
    short, one with a hand after the end, or wrong ranks is caught."""
    from arena.tools.verify import check_game_end
    from arena.tournament.synthetic import synthesize

    settings = TournamentSettings(seed=4, rounds=1, target_score=30)
    rec = synthesize(["a", "b", "c", "d"], settings)[0]
    totals = [[8, 5, 0, 13], [8, 25, 2, 17], [14, 28, 2, 34]]
    assert [h["scores"] for h in rec["hands"]] == totals  # 34 >= 30 after hand 3
    assert rec["scores"] == [14, 28, 2, 34] and rec["ranks"] == [2, 3, 1, 4]
    assert check_game_end(rec, 50) is None
    short = {**rec, "hands": rec["hands"][:-1]}
    assert check_game_end(short, 50) == "the game stops before its end (R13)"
    extra = {**rec, "hands": [*rec["hands"], {**rec["hands"][0], "hand_number": 99}]}
    assert check_game_end(extra, 50) == "hand 99 is played after the game ended (R13)"
    wrong = {**rec, "ranks": [1, 3, 2, 4]}
    assert check_game_end(wrong, 50) == "ranks are not the totals' (R13)"
    fixed = {**rec, "target_score": None, "hands_limit": len(rec["hands"])}
    assert check_game_end(fixed, 50) is None
    assert check_game_end({**fixed, "hands_limit": len(rec["hands"]) + 1}, 50) == (
        "the game stops before its end (R13)"
    )
