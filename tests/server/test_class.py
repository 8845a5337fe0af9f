"""A class's end (issue 30): the deadline, the pin, the final (both kinds),
the gauntlet and its grades, challenges, practice. The runner's bookkeeping
with its one seam to the tournament layer, ``play_games``, replaced by
scripted games whose points depend on the cards (the table key and the
seat), the bot's seed and the entrant's code (its SHA-256): a duplicate
setting in miniature. Real SQLite; no bot process (the runners start with
``sandbox=False``: nothing to seal, no probe of bubblewrap at each start)."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import math
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
import trio
import trio.lowlevel
import trueskill

from arena.protocol.faults import Fault
from arena.protocol.records import GameSpec
from arena.server import (
    challenges,
    db,
    deadline,
    downloads,
    final,
    folder,
    gauntlet,
    recheck,
    runner,
    store,
)
from arena.server import tables as server_tables
from arena.server.runner import RunnerConfig, start_runner

# init_folder fills its database from a migrated template (tests/server/db_fixtures.py).
pytestmark = pytest.mark.usefixtures("migrated_folders")
pytest_plugins = ["db_fixtures"]

PAST = "2000-01-01T00:00:00+00:00"  # a deadline that has passed
SKILL = {"house:low": 3, "house:random": 5, "house:heuristic": 1}


def _skill(name: str, shas: dict[str, str]) -> int:
    if name in SKILL:
        return SKILL[name]
    return int(shas[name][:2], 16) % 7


def _points(spec: GameSpec, seat: int, shas: dict[str, str]) -> int:
    """The cards' points (from the table key and the seat), the bot's seed's
    part and the entrant's skill."""
    cards = hashlib.sha256(spec.table_key + bytes([seat])).digest()[0] % 10
    return cards + spec.bot_seeds[seat] % 3 + _skill(spec.seats[seat], shas)


#: Game ids at which the script makes house:low crash (a reference bot's fault).
CRASH: set[str] = set()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Games played by script (see the module); returns the entrant -> SHA-256
    map the script reads (filled by :func:`_competition`)."""
    shas: dict[str, str] = {}
    CRASH.clear()

    async def play(
        entrants: Any,
        settings: Any,
        launcher: Any,
        games: Any,
        locks: Any,
        on_record: Any,
        live: Any = None,
    ) -> None:
        for spec in games:
            scores = [_points(spec, s, shas) for s in range(4)]
            order = sorted(range(4), key=lambda s: (scores[s], spec.seats[s]))
            ranks = [0, 0, 0, 0]
            for place, seat in enumerate(order):
                ranks[seat] = place + 1
            on_record(
                {
                    "game_index": spec.game_index,
                    "game_id": spec.game_id,
                    "table": spec.table,
                    "rotation": spec.rotation,
                    "seats": list(spec.seats),
                    "deal_key": spec.deal_key,
                    "ranks": ranks,
                    "scores": scores,
                    "hands": [],
                    "faults": [
                        Fault(seat, name, "crashed", "exited (exit code 3)", 1, 5, "play").to_json()
                        for seat, name in enumerate(spec.seats)
                        if name == "house:low" and spec.game_id in CRASH
                    ],
                    "struck_out": [],
                }
            )
            await trio.lowlevel.checkpoint()

    monkeypatch.setattr(server_tables, "play_games", play)
    monkeypatch.setattr(runner.Launcher, "check", lambda self, entrants: None)
    # Scripted records have no hands to replay: the re-check is test_recheck's.
    monkeypatch.setattr(recheck, "check_record", lambda *args: None)
    return shas


def _settings(**klass: Any) -> folder.CompetitionSettings:
    return folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1}, "class": klass}, "t"
    )


def _competition(
    root: Path,
    shas: dict[str, str],
    names: list[str],
    received: float = 1.0,
    code: Callable[[int], str] | None = None,
    **klass: Any,
) -> None:
    folder.init_folder(root, _settings(**klass))
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        for i, name in enumerate(names):
            p = store.add_participant(conn, name, 0.0)
            _submit(comp, conn, p.id, code(i) if code else f"{i + 1:x}" * 64, received, shas)
    comp.close()


def _submit(
    comp: folder.Competition,
    conn: Any,
    pid: int,
    sha: str,
    received: float,
    shas: dict[str, str],
) -> store.SubmissionRow:
    s, _ = store.add_submission(conn, pid, sha, "py", 1, received)
    d = folder.submission_dir(comp.paths, s.sha256)
    d.mkdir(exist_ok=True)
    (d / "bot.py").write_text("print('never run')\n")
    store.record_step(conn, s.id, "check", True, received + 1)  # the check is another test's
    shas[s.label] = sha
    return s


def _set(root: Path, **klass: Any) -> None:
    """Rewrite the folder's settings (the organiser edits competition.toml)."""
    (root / folder.SETTINGS_NAME).write_text(_settings(**klass).to_toml(), encoding="utf-8")


def _run(root: Path, ladder_tables: int) -> list[dict[str, Any]]:
    log = io.StringIO()
    r = start_runner(
        root, RunnerConfig(sandbox=False, ladder_tables=ladder_tables, exit_when_idle=True, log=log)
    )
    try:
        trio.run(r.run)
    finally:
        r.comp.close()
    return [json.loads(x) for x in log.getvalue().splitlines()]


def _read(root: Path, fn: Callable[..., Any], *args: Any) -> Any:
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            return fn(conn, *args)
    finally:
        comp.close()


def _write(root: Path, fn: Callable[..., Any], *args: Any) -> Any:
    comp = folder.open_folder(root)
    try:
        with comp.database.write() as conn:
            return fn(conn, *args)
    finally:
        comp.close()


def _fresh_fold(records: list[dict[str, Any]]) -> dict[str, trueskill.Rating]:
    env = trueskill.TrueSkill(tau=0.0)
    ratings: dict[str, trueskill.Rating] = {}
    for rec in records:
        seats = rec["seats"]
        groups = [(ratings.setdefault(n, env.create_rating()),) for n in seats]
        for n, (r,) in zip(
            seats, env.rate(groups, ranks=[x - 1 for x in rec["ranks"]]), strict=True
        ):
            ratings[n] = r
    return ratings


def _final_records(conn: Any) -> list[dict[str, Any]]:
    return [r for t in store.tables_in(conn, "final") for r in store.table_records(conn, t.id)]


# -- settings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("klass", "message"),
    [
        ({"deadline": "2026-12-15T17:00:00"}, "has no UTC offset"),
        ({"deadline": "next friday"}, "is not an ISO 8601 date and time"),
        ({"final_size": 13}, "final_size: 4 to 12 finalists"),
        ({"final": "knockout"}, "final: one of round-robin, ladder, none"),
        ({"reference_bots": ["sample:low", "sample:low", "sample:random"]}, "three different"),
        ({"thresholds": ["score below 3"]}, "write 'duplicate score against"),
        (
            {"thresholds": ["duplicate score against sample:first_legal at most 0"]},
            "not a reference",
        ),
    ],
)
def test_class_settings_refused_with_one_line(klass: dict[str, Any], message: str) -> None:
    with pytest.raises(folder.FolderError, match=message) as got:
        _settings(**klass)
    assert "\n" not in str(got.value)


def test_class_settings_round_trip_and_the_deadline_in_utc() -> None:
    s = _settings(deadline="2026-12-15T17:00:00+01:00", thresholds=["gauntlet score at most 2"])
    again = folder.CompetitionSettings.from_mapping(
        __import__("tomllib").loads(s.to_toml()), "again"
    )
    assert again == s
    shown = deadline.deadline_json(s, 0.0)
    assert shown["utc"] == "2026-12-15 16:00:00 UTC"
    assert shown["iso"] == "2026-12-15T16:00:00Z"
    assert shown["passed"] is False
    assert deadline.deadline_json(s, shown["deadline"])["passed"] is True


# -- the deadline, the pin, the final ---------------------------------------------------


def test_after_the_deadline_no_ranked_table_a_late_validation_is_a_finalist_and_late_ones_practise(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    # p0 and p1 submitted before the deadline; their validation runs after it.
    _competition(root, scripted, ["p0", "p1"], deadline=PAST, practice_tables=2)
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        late = _submit(
            comp, conn, store.add_participant(conn, "late", 0).id, "c" * 64, time.time(), scripted
        )
    comp.close()
    log = _run(root, 4)  # four ladder tables allowed: none is chosen
    # Validated after the deadline (the runner started after it), all three.
    assert (
        _read(root, lambda c: [s.status for s in store.submissions_in(c, "ranked")])
        == ["ranked"] * 3
    )
    assert _read(root, store.tables_in, "ladder") == []  # no ranked table after the deadline
    assert _read(root, store.rated_through) == 0
    eligible = _read(root, final.eligible_rows)
    assert sorted(r.submission_id for r in eligible) == [1, 2]  # the late one is not
    assert [e["finalists"] for e in log if e["event"] == "final_started"] == [[1, 2]]
    practice = _read(root, store.tables_in, "practice")
    assert [(t.number, t.deal_key, t.seating, t.status) for t in practice] == [
        (n, f"P{n}", (late.label, "house:low", "house:random", "house:heuristic"), "done")
        for n in range(2)
    ]
    # Two finalists and two house bots: one table a round, two rounds.
    tables = _read(root, store.tables_in, "final")
    assert [(t.deal_key, t.status) for t in tables] == [("F1-t0", "done"), ("F2-t0", "done")]
    assert set(tables[0].seating) == {"s1", "s2", "house:low", "house:random"}


def test_a_pinned_submission_is_the_finalists_and_the_pin_closes_at_the_deadline(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    _competition(root, scripted, ["p0", "p1", "p2", "p3"])
    _run(root, 2)  # the ladder, before the deadline
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        newer = _submit(comp, conn, 1, "d" * 64, 5.0, scripted)  # p0's second submission
    comp.close()
    _run(root, 2)
    assert _read(root, store.submission, newer.id).status == "ranked"
    assert _read(root, store.submission, 1).status == "superseded"
    # Before the deadline: p0 pins its first submission; p1 cannot pin p0's.
    settings = _settings(deadline="2030-01-01T00:00:00Z")
    _set(root, deadline="2030-01-01T00:00:00Z")
    assert _write(root, deadline.pin, settings, 1, 1, 100.0) == 1
    with pytest.raises(deadline.DeadlineError, match="you have no submission 1"):
        _write(root, deadline.pin, settings, 2, 1, 100.0)
    after = deadline.deadline_of(settings)
    assert after is not None
    with pytest.raises(deadline.DeadlineError, match="has passed"):
        _write(root, deadline.pin, settings, 1, newer.id, after + 1)
    # Without the pin the latest passing submission would be p0's.
    assert _read(root, lambda c: deadline.final_submission(c, settings, 1).id) == 1
    _write(root, lambda c: c.execute(db.pins.delete()))
    assert _read(root, lambda c: deadline.final_submission(c, settings, 1).id) == newer.id
    assert _write(root, deadline.pin, settings, 1, 1, 100.0) == 1
    _set(root, deadline=PAST)
    _run(root, 2)
    rows = {r.participant_id: r.submission_id for r in _read(root, final.eligible_rows)}
    assert rows == {1: 1, 2: 2, 3: 3, 4: 4}
    seated = {n for t in _read(root, store.tables_in, "final") for n in t.seating}
    assert seated == {"s1", "s2", "s3", "s4"}  # s5, the newer, does not play the final


def test_round_robin_final_standings_come_from_fresh_ratings(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    names = [f"p{i}" for i in range(6)]
    _competition(root, scripted, names, final_size=5, final_rounds=2)
    _run(root, 4)
    ladder_fold = _read(root, store.fold_at, 4)
    _, ladder_rows = _read(root, store.standings_rows)
    top5 = [r.participant for r in ladder_rows if not r.house][:5]
    _set(root, deadline=PAST, final_size=5, final_rounds=2)
    _run(root, 8)
    assert len(_read(root, store.tables_in, "ladder")) == 4  # none after the deadline
    tables = _read(root, store.tables_in, "final")
    # C(5, 4) = 5 tables a round, two rounds, deal keys F<round>-t<table>.
    assert [t.deal_key for t in tables] == [f"F{r}-t{i}" for r in (1, 2) for i in range(5)]
    data = _read(root, final.final_json, _settings(deadline=PAST, final_size=5))
    assert data["complete"] is True
    assert data["tables"]["done"] == 10
    assert sorted(r["participant"] for r in data["rows"]) == sorted(top5)
    fresh = _fresh_fold(_read(root, _final_records))
    for row in data["rows"]:
        assert row["games"] == 2 * 4 * math.comb(4, 3)  # 32: every table it sits at, twice
        assert row["mu"] == pytest.approx(fresh[row["entrant"]].mu)
        assert row["sigma"] == pytest.approx(fresh[row["entrant"]].sigma)
        assert row["mu"] != pytest.approx(ladder_fold[row["entrant"]].mu)  # not the ladder's
    assert [r["rank"] for r in data["rows"]] == [1, 2, 3, 4, 5]
    conservative = [r["conservative"] for r in data["rows"]]
    assert conservative == sorted(conservative, reverse=True)
    for a, b in itertools.pairwise(data["rows"]):
        z = (a["mu"] - b["mu"]) / math.hypot(a["sigma"], b["sigma"])
        assert a["p_above_next"] == pytest.approx(NormalDist().cdf(z))
    assert data["rows"][-1]["p_above_next"] is None
    # The ladder's standings stay as they were.
    assert _read(root, store.standings_rows)[1] == ladder_rows


def test_ladder_final_gives_every_finalist_the_same_tables_within_the_budget(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    _competition(
        root, scripted, [f"p{i}" for i in range(5)], deadline=PAST, final="ladder", final_tables=6
    )
    _run(root, 0)
    tables = _read(root, store.tables_in, "final")
    # 5 finalists: k = 4 tables each (5 k / 4 whole, at most 6 tables): 5 tables.
    assert final.tables_per_finalist(5, 6) == 4
    assert [t.deal_key for t in tables] == [f"F1-t{i}" for i in range(5)]
    counts = {n: sum(n in t.seating for t in tables) for n in ("s1", "s2", "s3", "s4", "s5")}
    assert counts == dict.fromkeys(counts, 4)
    data = _read(root, final.final_json, _settings(deadline=PAST, final="ladder", final_tables=6))
    fresh = _fresh_fold(_read(root, _final_records))
    assert data["complete"] is True
    assert {r["entrant"]: r["games"] for r in data["rows"]} == dict.fromkeys(counts, 16)
    for row in data["rows"]:
        assert row["mu"] == pytest.approx(fresh[row["entrant"]].mu)


# -- the gauntlet -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "quantile"),
    [
        ([1.0, 2.0, 4.0], 4.303),
        ([0.0, 1.0, 1.0, 2.0, 3.0, 5.0], 2.571),
        ([float(i % 3) for i in range(31)], 2.042),
    ],
)
def test_the_gauntlets_interval_is_students_t_at_95_percent(
    values: list[float], quantile: float
) -> None:
    """Mean +- t_{0.975, K-1} s / sqrt(K): the quantiles from a printed table of
    Student's t (2, 5 and 30 degrees of freedom), to its three decimals."""
    mean, low, high = gauntlet._interval(values)
    assert mean == pytest.approx(sum(values) / len(values))
    assert low is not None and high is not None
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    half = (high - low) / 2
    assert mean - low == pytest.approx(half)
    assert half * math.sqrt(len(values)) / stdev == pytest.approx(quantile, abs=5e-4)
    assert gauntlet._interval([3.0]) == (3.0, None, None)
    assert gauntlet._interval([]) == (None, None, None)


def test_the_gauntlet_gives_the_same_scores_for_the_same_submission(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    same = "e" * 64
    codes = [same, "1" * 64, same]  # p0 and p2 submitted the same file
    rules = ["duplicate score against sample:heuristic at most 0", "gauntlet score at most 9"]
    _competition(
        root,
        scripted,
        ["p0", "p1", "p2"],
        code=lambda i: codes[i],
        deadline=PAST,
        gauntlet_deals=3,
        thresholds=rules,
        final="none",
    )
    _run(root, 0)
    tables = _read(root, store.tables_in, "gauntlet")
    assert [(t.number, t.deal_key, t.seating[0], t.status) for t in tables] == [
        (n, f"G{n % 3}", f"s{n // 3 + 1}", "done") for n in range(9)
    ]
    settings = _settings(deadline=PAST, gauntlet_deals=3, thresholds=rules, final="none")
    got = {r["participant"]: r for r in _read(root, gauntlet.results, settings)}
    keys = ("score", "low", "high", "against", "thresholds", "passed", "deals")
    assert {k: got["p0"][k] for k in keys} == {k: got["p2"][k] for k in keys}
    assert got["p0"]["score"] != got["p1"]["score"]
    # The scores by hand: the same cards, seeds and opponents for everyone.
    one = _read(root, lambda c: store.table_records(c, store.tables_in(c, "gauntlet")[0].id))
    mine = sum(r["scores"][r["seats"].index("s1")] for r in one)
    low = sum(r["scores"][r["seats"].index("house:low")] for r in one)
    d0 = (mine - low) / 4
    per_deal = []
    for t in tables[:3]:
        recs = _read(root, store.table_records, t.id)
        per_deal.append(gauntlet.deal_scores(recs, "s1"))
    assert per_deal[0]["house:low"] == d0
    assert got["p0"]["against"]["sample:low"]["score"] == pytest.approx(
        sum(d["house:low"] for d in per_deal) / 3
    )
    heur = got["p0"]["against"]["sample:heuristic"]["score"]
    assert got["p0"]["thresholds"][0] == {"rule": rules[0], "passed": heur <= 0}
    assert got["p0"]["complete"] is True
    own = _read(root, gauntlet.gauntlet_json, settings, 2)  # what p1's token gets
    assert [r["participant"] for r in own["rows"]] == ["p1"]
    assert own["rows"][0]["score"] == got["p1"]["score"]
    assert "records" not in own["rows"][0]
    assert own["open_deals"] == ["G0", "G1", "G2"]
    # A deal's games open only once every participant's table of it is done.
    assert _read(root, gauntlet.deal_open, "G1") is True
    _write(root, store.set_table_status, tables[4].id, "playing", 0.0)  # p1's G1
    assert _read(root, gauntlet.deal_open, "G1") is False
    assert _read(root, gauntlet.deal_open, "G0") is True
    # ... and so do its downloads: p0's G1 table waits for p1's, G0's is open.
    with pytest.raises(downloads.DownloadError, match=r"gauntlet deal G1: it opens once"):
        _read(root, downloads.table_download, settings, 1, "gauntlet", tables[1].number)
    name, data = _read(root, downloads.table_download, settings, 1, "gauntlet", tables[0].number)
    assert name.endswith(".zip") and data[:2] == b"PK"


def test_the_grades_csv_neutralises_a_formula_looking_name(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    evil = '=HYPERLINK("http://x","y")'
    _competition(root, scripted, [evil, "-2+3", "@sum", "plain"], deadline=PAST, gauntlet_deals=1)
    _run(root, 0)
    settings = _settings(deadline=PAST, gauntlet_deals=1)
    text = _read(root, gauntlet.grades_csv, settings)
    import csv

    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["display_name"] for r in rows] == ["'" + evil, "'-2+3", "'@sum", "plain"]
    assert list(rows[0])[: len(gauntlet.GRADE_COLUMNS)] == list(gauntlet.GRADE_COLUMNS)
    row = rows[3]
    assert row["submission_id"] == "4"
    assert row["sha256"] == "4" * 64
    assert row["games"] == "4"  # standings.csv's columns over its gauntlet games
    assert row["final_rank"] in {"1", "2", "3", "4"}
    assert row["passed"] == "yes"  # no thresholds: every complete gauntlet passes
    assert float(row["final_low"]) < float(row["final_high"])
    for r in rows:  # every other cell that starts so is a number
        for col, cell in r.items():
            if col != "display_name" and cell[:1] in ("=", "+", "-", "@"):
                assert _number(cell), (col, cell)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- challenges ---------------------------------------------------------------------------


def test_a_challenge_changes_no_rating_and_is_shown_to_its_seats_owners(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    _competition(root, scripted, ["p0", "p1", "p2"], challenges_per_day=2)
    _run(root, 2)
    settings = _settings(challenges_per_day=2)
    before = (_read(root, store.rated_through), _read(root, store.fold_at, 2))
    games_before = [_read(root, store.submission, i).ranked_games for i in (1, 2, 3)]
    with pytest.raises(challenges.ChallengeError, match="p1 does not accept challenges"):
        _write(root, challenges.request_challenge, settings, 1, ["p1"], 10.0)
    _write(root, challenges.set_consent, 2, True, 10.0)
    made = _write(root, challenges.request_challenge, settings, 1, ["p1", "sample:low"], 10.0)
    assert (made["opponents"], made["status"]) == (["s2", "house:low"], "waiting")
    _write(root, challenges.request_challenge, settings, 1, ["house:random"], 11.0)
    with pytest.raises(challenges.ChallengeError, match="at most 2 challenges") as limit:
        _write(root, challenges.request_challenge, settings, 1, ["house:random"], 12.0)
    assert limit.value.status == 429
    _run(root, 2)
    tables = _read(root, store.tables_in, "challenge")
    assert [(t.number, t.deal_key, t.seating, t.status) for t in tables] == [
        (0, "C0", ("s1", "s2", "house:low", "house:random"), "done"),
        (1, "C1", ("s1", "house:random", "house:low", "house:heuristic"), "done"),
    ]
    assert (_read(root, store.rated_through), _read(root, store.fold_at, 2)) == before
    assert [_read(root, store.submission, i).ranked_games for i in (1, 2, 3)] == games_before
    seen = {pid: _read(root, challenges.challenges_json, pid)["tables"] for pid in (1, 2, 3)}
    assert [t["number"] for t in seen[1]] == [0, 1]
    assert [t["number"] for t in seen[2]] == [0]  # p1 sat at C0 only
    assert seen[3] == []  # p2 sat at neither
    assert [g["rotation"] for g in seen[2][0]["games"]] == [0, 1, 2, 3]
    # After the deadline only house bots.
    late = _settings(challenges_per_day=5, deadline=PAST)
    with pytest.raises(challenges.ChallengeError, match="only house bots"):
        _write(root, challenges.request_challenge, late, 3, ["p1"], time.time())
    made = _write(root, challenges.request_challenge, late, 3, ["sample:heuristic"], time.time())
    assert made["opponents"] == ["house:heuristic"]


def test_a_void_gauntlet_table_is_played_once_more_and_its_deal_waits(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    root = tmp_path / "c"
    CRASH.add("g1-k2")  # p0's deal G1: a reference bot crashes
    _competition(root, scripted, ["p0", "p1"], deadline=PAST, gauntlet_deals=2, final="none")
    _run(root, 0)
    tables = _read(root, store.tables_in, "gauntlet")
    assert [(t.number, t.deal_key, t.seating[0], t.status) for t in tables] == [
        (0, "G0", "s1", "done"),
        (1, "G1", "s1", "void"),
        (2, "G1", "s1", "done"),  # once more, at once
        (3, "G0", "s2", "done"),
        (4, "G1", "s2", "done"),
    ]
    assert tables[1].void_reason == "house bot house:low faulted"
    settings = _settings(deadline=PAST, gauntlet_deals=2, final="none")
    got = _read(root, gauntlet.results, settings)
    assert [(r["deals"], r["complete"]) for r in got] == [(2, True), (2, True)]
    _write(root, store.set_table_status, tables[2].id, "chosen", 0.0)  # the replay pending
    assert _read(root, gauntlet.deal_open, "G1") is False
    assert _read(root, gauntlet.deal_open, "G0") is True


def test_the_example_settings_file_of_running_a_class_is_valid_as_written() -> None:
    import re
    import tomllib

    page = (Path(__file__).parents[2] / "docs" / "running-a-class.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", page, re.S)
    s = folder.CompetitionSettings.from_mapping(tomllib.loads(block), "docs/running-a-class.md")
    assert s.klass.deadline == "2026-12-15T17:00:00+01:00"
    assert deadline.deadline_json(s, 0.0)["utc"] == "2026-12-15 16:00:00 UTC"
    assert (s.klass.final, s.klass.final_size, s.klass.gauntlet_deals) == ("round-robin", 8, 8)
    assert len(s.klass.thresholds) == 2
    assert s.game.hands == 4


def test_a_class_table_is_downloadable_by_its_seats_with_its_table_key(
    tmp_path: Path, scripted: dict[str, str]
) -> None:
    """docs/checking-results.md: a participant downloads any finished table
    they sat at, of any numbering: the final's, the gauntlet's, a
    challenge's and a practice table too, each with its deal's table key."""
    from arena.core.keys import MasterKey
    from arena.server import downloads

    root = tmp_path / "c"
    _competition(
        root, scripted, ["p0", "p1"], deadline=PAST, gauntlet_deals=1, final_size=4,
        challenges_per_day=1,
    )  # fmt: skip
    _run(root, 0)
    late = _settings(deadline=PAST, challenges_per_day=1)
    _write(root, challenges.request_challenge, late, 1, ["house:low"], time.time())
    comp = folder.open_folder(root)
    try:
        with comp.database.write() as conn:  # after the deadline: practice
            _submit(comp, conn, 2, "7" * 64, time.time(), scripted)
    finally:
        comp.close()
    _run(root, 0)
    key = MasterKey.from_hex((root / "key").read_text().strip())
    settings = _settings(deadline=PAST, gauntlet_deals=1, final_size=4)
    seen = []
    for numbering in ("final", "gauntlet", "challenge", "practice"):
        for t in _read(root, store.tables_in, numbering):
            assert t.status == "done", (numbering, t.number)
            owner = next(
                _read(root, store.submission, sid).participant_id
                for label in t.seating
                if (sid := store.submission_of(label)) is not None
            )
            name, data = _read(root, downloads.table_download, settings, owner, numbering, t.number)
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                results = json.loads(z.read("results.json"))
            assert results["table_key"] == key.table_key(t.deal_key).hex(), (numbering, name)
            seen.append(numbering)
    assert sorted(set(seen)) == ["challenge", "final", "gauntlet", "practice"]


def test_verify_derives_a_gauntlet_games_bot_seeds_from_its_deal_and_rotation() -> None:
    """A gauntlet game's bots are seeded by ``G<k>-k<r>`` (the same for every
    participant, gauntlet.specs), not by its game id ``g<n>-k<r>``: verify
    checks them so (an exported class failed 'bot seeds are not the key's')."""
    from arena.core.keys import MasterKey
    from arena.server import verifying

    key = MasterKey.generate()
    seating = ["s2", "house:low", "house:random", "house:heuristic"]
    line = {"numbering": "gauntlet", "number": 3, "deal_key": "G0", "seating": seating}
    table_key = key.table_key("G0")
    row = store.TableRow(
        1, "gauntlet", 3, "G0", tuple(seating), 0, None, tuple(seating), 2, "done", None, 1, 0.0,
        1.0,
    )  # fmt: skip
    played = next(s for s in gauntlet.specs(key, row, 1, None) if s.rotation == 1)

    def problems(seeds: list[int]) -> list[str]:
        rec = {
            "game_id": "g3-k1", "deal_key": "G0", "table": 3, "rotation": 1,
            "seats": list(played.seats), "bot_seeds": seeds, "hands": [], "scores": [0, 0, 0, 0], "target_score": None, "hands_limit": 1,
        }  # fmt: skip
        return verifying._game_problems(rec, line, 1, key, table_key, 50)  # type: ignore[arg-type]

    assert list(played.bot_seeds) == list(key.bot_seeds("G0-k1"))
    assert not [p for p in problems(list(played.bot_seeds)) if "bot seeds" in p]
    assert "game g3-k1: bot seeds are not the key's" in problems(list(key.bot_seeds("g3-k1")))
