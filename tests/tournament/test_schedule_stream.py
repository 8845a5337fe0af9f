"""Streamed schedules (issue 16): the same games in the same order as a
schedule built whole, the same chains, and a runner that plays a stream."""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, load_outputs, run_arena

from arena.game.referee import GameSpec
from arena.tournament.runner import (
    SEAT_PERMUTATIONS,
    ScheduleStream,
    TournamentSettings,
    chains_of,
    iter_chains,
    schedule,
    scheduled_games,
)


def built_schedule(
    names: Sequence[str], settings: TournamentSettings, candidate: str | None
) -> list[GameSpec]:
    """The schedule as it was built whole before streaming (the reference):
    every table of ``C(n, 4)`` in a list, each round, table and seating."""
    key = settings.master_key
    tables = list(itertools.combinations(sorted(names), 4))
    if settings.seating == "full":
        seatings: Sequence[Sequence[int]] = SEAT_PERMUTATIONS
        tag = "p"
    else:
        seatings, tag = [[(i + k) % 4 for i in range(4)] for k in range(4)], "k"
    games: list[GameSpec] = []
    for rnd in range(1, settings.rounds + 1):
        for t, table in enumerate(tables):
            if candidate is not None and candidate not in table:
                continue
            deal_key = f"r{rnd}-t{t}"
            for k in range(len(seatings)):
                game_id = f"r{rnd}-t{t}-{tag}{k}"
                seats = ["", "", "", ""]
                for i, name in enumerate(table):
                    seats[seatings[k][i]] = name
                games.append(
                    GameSpec(
                        game_index=len(games),
                        game_id=game_id,
                        round=rnd,
                        table=t,
                        rotation=k,
                        seats=(seats[0], seats[1], seats[2], seats[3]),
                        deal_key=deal_key,
                        bot_seeds=key.bot_seeds(game_id),
                        target_score=settings.target_score,
                        hands=settings.hands,
                        table_key=key.table_key(deal_key),
                    )
                )
    return games


NAMES = ["eve", "bob", "amy", "dan", "cat", "fay"]
FORMATS: list[dict[str, Any]] = [
    {"rounds": 1},
    {"rounds": 3},
    {"rounds": 2, "seating": "full"},
    {"rounds": 3, "format": "gauntlet", "candidate": "cat"},
    {"rounds": 2, "format": "gauntlet", "candidate": "amy", "seating": "full"},
]


@pytest.mark.parametrize("kw", FORMATS)
def test_stream_gives_the_built_games_in_the_built_order(kw: dict[str, Any]) -> None:
    settings = TournamentSettings(seed=5, hands=2, target_score=None, **kw)
    built = built_schedule(NAMES, settings, kw.get("candidate"))
    stream = ScheduleStream(NAMES, settings)
    assert list(stream) == built
    assert list(stream) == built  # iterable again, the same
    assert schedule(NAMES, settings) == built
    assert len(stream) == len(built) == scheduled_games(len(NAMES), settings)
    # table keys and seeds are compared too (GameSpec equality covers them)
    assert [g.table_key for g in stream] == [g.table_key for g in built]


@pytest.mark.parametrize("kw", FORMATS)
def test_stream_chains_are_the_built_chains_in_the_same_order(kw: dict[str, Any]) -> None:
    settings = TournamentSettings(seed=6, hands=1, target_score=None, **kw)
    built = built_schedule(NAMES, settings, kw.get("candidate"))
    assert list(ScheduleStream(NAMES, settings).chains()) == chains_of(built)
    assert list(iter_chains(ScheduleStream(NAMES, settings))) == chains_of(built)
    assert list(iter_chains(built)) == chains_of(built)


@pytest.mark.parametrize("kw", FORMATS)
def test_stream_with_games_skipped_leaves_exactly_those_out(kw: dict[str, Any]) -> None:
    settings = TournamentSettings(seed=7, hands=1, target_score=None, **kw)
    built = built_schedule(NAMES, settings, kw.get("candidate"))
    done = {g.game_index for g in built if g.game_index % 3 == 1} | {10**6, -1}
    left = [g for g in built if g.game_index not in done]
    stream = ScheduleStream(NAMES, settings, skip=done)
    assert list(stream) == left
    assert len(stream) == len(left)
    # The same chains (as sets of games in the same turn), in seating then table order.
    chains = list(stream.chains())
    assert sorted(map(tuple, chains), key=lambda c: (c[0].table, c[0].rotation)) == sorted(
        map(tuple, chains_of(left)), key=lambda c: (c[0].table, c[0].rotation)
    )
    # Diagonal order (issue 22: the chains in play at once are of different
    # tables; issue 23: an entrant's first and later games of deals interleave):
    # the n-th table's p-th chain comes at step n + p, each table's rotations in
    # play_order's order (which rotation goes first varies).
    first_seen: dict[int, int] = {}
    for c in chains:
        first_seen.setdefault(c[0].table, len(first_seen))
    steps = []
    place: Counter[int] = Counter()
    for c in chains:
        steps.append((first_seen[c[0].table] + place[c[0].table], first_seen[c[0].table]))
        place[c[0].table] += 1
    assert steps == sorted(steps)
    for t in place:
        assert [c[0].rotation for c in chains if c[0].table == t] == [
            c[0].rotation for c in chains_of(left) if c[0].table == t
        ]


def test_stream_of_a_huge_field_makes_only_what_is_asked() -> None:
    """64 entrants, 2 rounds: 5,080,320 games, counted, not made."""
    names = [f"bot{i:02d}" for i in range(64)]
    stream = ScheduleStream(names, TournamentSettings(seed=1, rounds=2))
    assert len(stream) == 635_376 * 4 * 2
    first = list(itertools.islice(stream, 5))
    assert [g.game_id for g in first] == [f"r1-t0-k{k}" for k in range(4)] + ["r1-t1-k0"]
    assert first[4].seats == ("bot00", "bot01", "bot02", "bot04")  # table 1, rotation 0
    chain = next(stream.chains())
    k = chain[0].rotation  # the rotation play_order takes first at table 0
    assert [g.game_id for g in chain] == [f"r{1 + k % 2}-t0-k{k}", f"r{2 - k % 2}-t0-k{k}"]
    assert {g.game_index for g in chain} == {k, 635_376 * 4 + k}


def test_stream_refuses_what_schedule_refuses() -> None:
    with pytest.raises(ValueError, match="unique"):
        ScheduleStream(["a", "b", "c", "a"], TournamentSettings(seed=1))
    with pytest.raises(ValueError, match="at least four"):
        ScheduleStream(["a", "b", "c"], TournamentSettings(seed=1))
    with pytest.raises(ValueError, match="not an entrant"):
        ScheduleStream(NAMES, TournamentSettings(seed=1, format="gauntlet", candidate="zed"))
    with pytest.raises(ValueError, match="ladder"):
        ScheduleStream(NAMES, TournamentSettings(seed=1, format="ladder", games=8))


def test_dry_run_of_64_entrants_prints_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    entrants = [bot("first_legal", f"b{i:02d}") for i in range(64)]
    code = run_arena(["run", *entrants, "--rounds", "2", "--seed", "1", "--dry-run"])
    assert code == 0
    out = capsys.readouterr().out
    assert "64 entrants, 635376 tables, 2 rounds x 4 rotations" in out
    assert "  table 0: b00, b01, b02, b03" in out
    assert "... and 635326 more tables" in out
    assert "5083008 games" in out


def test_a_resumed_run_plays_the_stream_of_what_is_left(tmp_path: Path) -> None:
    """A run cut after some games, resumed: the journal then holds every game
    once, the same as a run in one go."""
    entrants = [bot("first_legal", n) for n in ("a", "b", "c", "d", "e")]
    # Unsealed: the stream, not the seal, is the subject, and the two runs
    # start 120 bot processes.
    common = ["--hands", "1", "--rounds", "2", "--seed", "3", "--quiet", "--no-sandbox"]
    whole = tmp_path / "whole"
    assert run_arena(["run", *entrants, *common, "--out", str(whole)]) == 0
    _, want = load_outputs(whole)
    # The cut run: the same run's folder (playing it again would give the same
    # files), its journal then cut to every game but a quarter.
    part = tmp_path / "part"
    shutil.copytree(whole, part)
    lines = (part / "games.jsonl").read_text().splitlines()
    kept = [ln for i, ln in enumerate(lines) if i % 4 != 2]
    (part / "games.jsonl").write_text("\n".join(kept) + "\n")
    assert run_arena(["run", *entrants, *common, "--out", str(part), "--resume"]) == 0
    _, got = load_outputs(part)
    assert len(got) == len(want) == 5 * 4 * 2
    strip = ("duration_s", "started_at", "timing")

    def by_index(recs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        return {r["game_index"]: {k: v for k, v in r.items() if k not in strip} for r in recs}

    assert by_index(got) == by_index(want)


def test_in_order_ratings_equal_the_standings_for_any_arrival_order() -> None:
    from arena.results.rating import InOrderRatings, RatingTable
    from arena.results.standings import compute_standings
    from arena.tournament.synthetic import synthesize

    names = ["a", "b", "c", "d", "e"]
    recs = synthesize(names, TournamentSettings(seed=9, rounds=2, hands=1, target_score=None))
    _, want = compute_standings(names, recs)
    table = RatingTable(names, keep_history=False)
    rater = InOrderRatings(table)
    shuffled = recs[1::2] + recs[0::2]  # every odd game arrives before every even one
    applied = [rater.add(r["game_index"], r["seats"], r["ranks"]) for r in shuffled]
    assert applied[: len(recs[1::2])] == [0] * len(recs[1::2])  # all wait for game 0
    assert sum(applied) == len(recs) and rater.waiting == 0
    assert table.ratings == want.ratings
    assert table.history == {n: [] for n in names}
    with pytest.raises(ValueError, match="twice"):
        rater.add(0, recs[0]["seats"], recs[0]["ranks"])


def test_synthetic_run_writes_the_records_and_rates_in_schedule_order(tmp_path: Path) -> None:
    import json

    from arena.results.standings import compute_standings
    from arena.tournament.synthetic import synthesize, synthetic_run

    names = ["a", "b", "c", "d", "e"]
    settings = TournamentSettings(seed=2, rounds=2, hands=1, target_score=None)
    table = synthetic_run(names, settings, tmp_path / "games.jsonl", {"a": "low"})
    recs = synthesize(names, settings, {"a": "low"})
    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    assert [json.loads(ln) for ln in lines] == recs
    assert len(recs) == 40
    _, want = compute_standings(names, recs)
    assert table.ratings == want.ratings


def test_runner_takes_the_chains_of_a_stream_in_order_and_lazily(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--jobs 2`` over a stream: chains are taken in chains_of's order, and
    no more are made than the chains in play (at most ``jobs``)."""
    import trio

    import arena.tournament.runner as tournament
    from arena.sandbox.launcher import Launcher, LaunchOptions

    settings = TournamentSettings(seed=4, rounds=2, hands=1, target_score=None, jobs=2)
    stream = ScheduleStream(NAMES, settings)
    made = 0
    real = tournament.iter_chains

    def counting(games: Any) -> Any:
        nonlocal made
        for chain in real(games):
            made += 1
            yield chain

    monkeypatch.setattr(tournament, "iter_chains", counting)
    started: list[tuple[int, int]] = []
    finished = 0
    most_ahead = 0

    class Fake(tournament.TournamentRunner):
        async def run_chain(self, chain: list[GameSpec], limiter: trio.CapacityLimiter) -> None:
            nonlocal finished, most_ahead
            # Taken (right after the runner drew it from the stream), then played.
            started.append((chain[0].table, chain[0].rotation))
            most_ahead = max(most_ahead, made - finished)
            async with limiter:
                await trio.sleep(0.001 * (len(started) % 3))
            finished += 1

    runner = Fake([], settings, Launcher(LaunchOptions()), lambda r: None)
    trio.run(runner.run, stream)
    want = [(c[0].table, c[0].rotation) for c in chains_of(schedule(NAMES, settings))]
    assert started == want and len(started) == 15 * 4
    assert finished == 60
    assert most_ahead == settings.jobs  # made only as taken: no schedule held in memory


def test_journal_indices_reads_only_the_indices_of_complete_lines(tmp_path: Path) -> None:
    from arena.tournament.runner import journal_indices

    path = tmp_path / "games.jsonl"
    assert journal_indices(path) == set()
    path.write_text(
        '{"game_index": 3, "x": 1}\nnot json\n[1]\n{"game_index": "4"}\n{"game_index": 7}\n'
        '{"game_index": 9, "cut'
    )
    assert journal_indices(path) == {3, 7}


def test_play_order_varies_which_rotation_of_a_table_plays_first() -> None:
    """The audit's memory-of-deals signal needs an entrant's first game of a
    deal in varying seats: over 35 tables of seven entrants, the rotation
    played first is not always the same; only the order changes (the same
    games, ids and indices), and it is the same for the same key."""
    names = [f"e{i}" for i in range(7)]
    settings = TournamentSettings(seed=3, hands=1, target_score=None)
    built = schedule(names, settings)
    chains = chains_of(built)
    firsts: dict[int, int] = {}
    for chain in chains:
        firsts.setdefault(chain[0].table, chain[0].rotation)
    assert len(firsts) == 35
    counts = Counter(firsts.values())
    assert len(counts) == 4 and min(counts.values()) >= 3
    assert sorted(g.game_index for c in chains for g in c) == list(range(len(built)))
    assert chains_of(schedule(names, settings)) == chains
    other = chains_of(schedule(names, TournamentSettings(seed=4, hands=1, target_score=None)))
    assert [c[0].rotation for c in other] != [c[0].rotation for c in chains]
