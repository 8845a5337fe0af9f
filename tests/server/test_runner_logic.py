"""The runner's bookkeeping (arena/server/runner.py) with its one seam to the
tournament layer, ``arena.server.tables.play_games``, replaced by scripted games: validation
replayed after a house bot's fault, void tables never rated or charged, the
fault budget, the server's own failures. Real SQLite, then a real PostgreSQL
database (``each_database``, tests/server/db_fixtures.py): the scheduler's
contract (what is chosen, played again, void, rated, charged, and the
queries behind it) runs on both; the tests whose subject is not the storage
(the key's and the seal's refusals, a setting, the live feed, the start-up
line, the launcher's copies: ``sqlite_only``) run on SQLite alone. No bot
process: the runners here start with ``sandbox=False`` (nothing to seal, so
no probe of bubblewrap at each start), but the launcher test's, which makes
real private copies."""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from arena.protocol.faults import Fault
from arena.protocol.records import GameSpec
from arena.server import folder, recheck, runner, store
from arena.server import tables as server_tables
from arena.server.runner import RunnerConfig, start_runner

Script = Callable[[GameSpec], dict[str, Any]]

# The scheduler's contract on both databases (tests/server/db_fixtures.py).
pytestmark = pytest.mark.usefixtures("each_database")

#: A test whose subject is not the storage: SQLite only (issue 26: the
#: PostgreSQL variant took twice the SQLite one and checked nothing more).
sqlite_only = pytest.mark.parametrize("each_database", ["sqlite"], indirect=True)

# The database fixtures (SQLite, a private PostgreSQL): tests/server/db_fixtures.py.
pytest_plugins = ["db_fixtures"]


def _game(spec: GameSpec, crashed: Sequence[str] = ()) -> dict[str, Any]:
    faults = [
        Fault(seat, name, "crashed", "exited (exit code 3)", 1, 5, "play").to_json()
        for seat, name in enumerate(spec.seats)
        if name in crashed
    ]
    order = sorted(range(4), key=lambda s: spec.seats[s])  # ranks by name: deterministic
    ranks = [0, 0, 0, 0]
    for place, seat in enumerate(order):
        ranks[seat] = place + 1
    return {
        "game_index": spec.game_index,
        "game_id": spec.game_id,
        "table": spec.table,
        "rotation": spec.rotation,
        "seats": list(spec.seats),
        "deal_key": spec.deal_key,
        "ranks": ranks,
        "scores": [0, 0, 0, 0],
        "hands": [],
        "faults": faults,
        "struck_out": [],
    }


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Script | Exception]]:
    """Games played by script: each table takes the next (deal key prefix, script)
    whose prefix matches its deal key, else plays clean games."""
    plan: list[tuple[str, Script | Exception]] = []

    async def play(
        entrants: Any,
        settings: Any,
        launcher: Any,
        games: Any,
        locks: Any,
        on_record: Any,
        live: Any = None,
    ) -> None:
        deal = games[0].deal_key
        for i, (prefix, script) in enumerate(plan):
            if deal.startswith(prefix):
                del plan[i]
                if isinstance(script, Exception):
                    raise script
                break
        else:
            script = _game
        for spec in games:
            on_record(script(spec))
            await trio.lowlevel.checkpoint()

    monkeypatch.setattr(server_tables, "play_games", play)
    monkeypatch.setattr(runner.Launcher, "check", lambda self, entrants: None)
    # Scripted records have no hands to replay: the re-check is test_recheck's.
    monkeypatch.setattr(recheck, "check_record", lambda *args: None)
    return plan


def _competition(root: Path, subs: int, fault_budget: int = 8) -> None:
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1, "fault_budget": fault_budget}}, "t"
    )
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        for i in range(subs):
            p = store.add_participant(conn, f"p{i}", 0.0)
            s, _ = store.add_submission(conn, p.id, f"{i:x}" * 64, "py", 1, 1.0)
            d = folder.submission_dir(comp.paths, s.sha256)
            d.mkdir()
            (d / "bot.py").write_text("print('never run')\n")
            store.record_step(conn, s.id, "check", True, 2.0)  # the check is another test's
    comp.close()


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


def test_a_house_bot_fault_at_validation_replays_it_once_and_charges_nothing(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 1)
    scripted.append(("V", lambda spec: _game(spec, crashed=["house:random"])))
    log = _run(root, 0)
    tables = _read(root, store.tables_in, "validation")
    assert [(t.number, t.status, t.deal_key, t.void_reason) for t in tables] == [
        (0, "void", "V1", "house bot house:random: crashed in game v0-k0: exited (exit code 3)"),
        (1, "done", "V1", None),
    ]
    sub = _read(root, store.submission, 1)
    assert (sub.status, sub.failed_step, sub.faults_in_row) == ("ranked", None, 0)
    assert [e["event"] for e in log if e["event"] in ("void", "validated")] == ["void", "validated"]


def test_a_house_bot_faulting_twice_fails_validation_as_the_servers(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 1)
    for _ in range(2):
        scripted.append(("V", lambda spec: _game(spec, crashed=["house:low"])))
    _run(root, 0)
    sub = _read(root, store.submission, 1)
    assert (sub.status, sub.failed_step) == ("failed", "validation")
    assert sub.reason.startswith("the server could not validate it twice (house bot house:low")
    assert [t.status for t in _read(root, store.tables_in, "validation")] == ["void", "void"]


def test_a_submission_faulting_at_validation_fails_it(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 1)
    scripted.append(("V", lambda spec: _game(spec, crashed=["s1"])))
    _run(root, 0)
    sub = _read(root, store.submission, 1)
    assert (sub.status, sub.failed_step, sub.reason) == (
        "failed",
        "validation",
        "validation: crashed in game v0-k0: exited (exit code 3)",
    )
    assert _read(root, store.tables_in, "ladder") == []


def test_a_void_first_ladder_table_does_not_stall_the_ladder(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    """Issue 29 (found by the four-kill Dask test): with table 0 void the fold
    through 1 rates nothing and stores no row; table 2 (lag 1) is chosen from
    it once table 1 is done, instead of waiting for ever."""
    root = tmp_path / "c"
    _competition(root, 2)
    scripted.append(("L0", OSError(28, "No space left on device")))
    _run(root, 3)
    tables = _read(root, store.tables_in, "ladder")
    assert [(t.number, t.status, t.fold_through) for t in tables] == [
        (0, "void", 0),
        (1, "done", 0),
        (2, "done", 1),
    ]
    assert _read(root, store.fold_at, 1) == {}
    assert _read(root, store.rated_through) == 3


def test_void_ladder_tables_are_skipped_by_the_fold_and_never_charged(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 2)
    scripted.append(("L1", lambda spec: _game(spec, crashed=["house:low"])))
    scripted.append(("L2", OSError(28, "No space left on device")))
    _run(root, 4)
    tables = _read(root, store.tables_in, "ladder")
    assert [(t.number, t.status, t.void_reason) for t in tables] == [
        (0, "done", None),
        (1, "void", "house bot house:low faulted"),
        (2, "void", "the server could not play it: OSError: [Errno 28] No space left on device"),
        (3, "done", None),
    ]
    assert _read(root, store.rated_through) == 4
    fold = _read(root, store.fold_at, 4)
    assert {n: r.games for n, r in fold.items()} == dict.fromkeys(
        ["house:low", "house:random", "s1", "s2"], 8
    )
    assert _read(root, store.fold_at, 2) == _read(root, store.fold_at, 1)  # table 1 skipped
    for sid in (1, 2):
        sub = _read(root, store.submission, sid)
        assert (sub.ranked_games, sub.faults_in_row, sub.status) == (8, 0, "ranked")
    lines = folder.listing(folder.open_folder(root))
    assert "  ladder table 1 (L1): house bot house:low faulted" in lines


def test_a_submission_crashing_in_8_games_in_a_row_leaves_ranked_play(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 4)  # four submissions: every table seats all four
    for t in range(3):
        scripted.append((f"L{t}", lambda spec: _game(spec, crashed=["s2"])))
    log = _run(root, 4)
    tables = _read(root, store.tables_in, "ladder")
    sub = _read(root, store.submission, 2)
    assert (sub.status, sub.faults_in_row, sub.ranked_games) == ("retired", 8, 8)
    assert sub.reason == "crashed or struck out in 8 games in a row: left ranked play"
    assert [e["submission"] for e in log if e["event"] == "retired"] == [2]
    assert ["s2" in t.seating for t in tables] == [True, True, False, False]
    # A house bot takes its place in a field of three.
    assert sorted(tables[2].seating) == ["house:low", "s1", "s3", "s4"]
    assert [t.status for t in tables] == ["done"] * 4


@sqlite_only
def test_the_runner_refuses_another_key_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.cli.main import main
    from arena.core.keys import MasterKey

    root = tmp_path / "c"
    made = folder.init_folder(root)
    made.paths.key.write_text(MasterKey.generate().hex() + "\n")
    assert main(["serve", str(root), "--user", "nobody"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"error: key file {made.paths.key} is not this competition's")
    if os.geteuid() == 0:
        assert main(["serve", str(root)]) == 2
        assert "serve needs --user" in capsys.readouterr().err


@sqlite_only
def test_the_runner_refuses_to_start_where_bots_cannot_be_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena.sandbox import seal

    root = tmp_path / "c"
    folder.init_folder(root)
    monkeypatch.setattr(seal, "bwrap_path", lambda: None)
    with pytest.raises(
        folder.FolderError, match=r"^the server cannot start: --sandbox needs bubblewrap"
    ):
        start_runner(root, RunnerConfig())


def test_a_validation_past_its_time_budget_is_the_servers_and_runs_again(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    _competition(root, 1)
    (root / "competition.toml").write_text(
        (root / "competition.toml")
        .read_text()
        .replace("validation_seconds = 900.0", "validation_seconds = 1.0")
    )
    real = server_tables.play_games
    calls = []

    async def slow_once(*args: Any, **kw: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            await trio.sleep_forever()
        await real(*args, **kw)

    monkeypatch.setattr(server_tables, "play_games", slow_once)
    _run(root, 0)
    tables = _read(root, store.tables_in, "validation")
    assert [(t.status, t.void_reason) for t in tables] == [
        ("void", "the server stopped it: past its time budget of 1 s"),
        ("done", None),
    ]
    assert _read(root, store.submission, 1).status == "ranked"


def _budgeted_competition(root: Path, table_seconds: float) -> None:
    _competition(root, 2)
    toml = root / "competition.toml"
    text = toml.read_text()
    assert "table_seconds = 3600.0" in text  # the default, written at --init
    toml.write_text(text.replace("table_seconds = 3600.0", f"table_seconds = {table_seconds}"))


def _run_on_mock_clock(root: Path, ladder_tables: int) -> tuple[list[dict[str, Any]], float]:
    """The runner on Trio's MockClock (autojump): a hung table costs no wall
    time. Returns the log and the mock seconds the run took. No outer
    deadline: the clock jumps to the nearest one whenever every task waits
    (a database thread counts), so only the budget is certain to come first."""
    log = io.StringIO()
    r = start_runner(
        root, RunnerConfig(sandbox=False, ladder_tables=ladder_tables, exit_when_idle=True, log=log)
    )
    clock = trio.testing.MockClock(autojump_threshold=0)

    try:
        trio.run(r.run, clock=clock)
    finally:
        r.comp.close()
    return [json.loads(x) for x in log.getvalue().splitlines()], clock.current_time()


#: Mock seconds a hung table sleeps before it plays on (without a budget, the
#: test sees it played once, late).
HANG = 10**7


def _hang_at(monkeypatch: pytest.MonkeyPatch, deal: str, times: int) -> list[str]:
    """Make the first ``times`` plays of the table dealt ``deal`` hang; the
    deal keys of every play, in order."""
    real = server_tables.play_games
    plays: list[str] = []

    async def play(*args: Any, **kw: Any) -> None:
        key = args[3][0].deal_key
        plays.append(key)
        if key == deal and plays.count(key) <= times:
            args[5]({**_game(args[3][0]), "scores": [99, 0, 0, 0]})  # one game, then a hang
            await trio.sleep(HANG)
        await real(*args, **kw)

    monkeypatch.setattr(server_tables, "play_games", play)
    return plays


def test_a_ladder_table_past_its_time_budget_is_stopped_and_played_again_once(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gate rule "every step has a time budget": a ladder table hung past
    ``[ladder] table_seconds`` is stopped as the server's and played again
    from scratch under its deal; nothing is charged and the fold goes on."""
    root = tmp_path / "c"
    _budgeted_competition(root, 60.0)
    plays = _hang_at(monkeypatch, "L1", 1)
    log, took = _run_on_mock_clock(root, 3)
    assert [p for p in plays if p.startswith("L")] == ["L0", "L1", "L1", "L2"]
    assert 60 <= took < HANG
    tables = _read(root, store.tables_in, "ladder")
    assert [(t.number, t.status, t.void_reason, t.attempt) for t in tables] == [
        (0, "done", None, 1),
        (1, "done", None, 2),
        (2, "done", None, 1),
    ]
    games = _read(root, store.table_records, tables[1].id)
    assert [(g["rotation"], g["scores"]) for g in games] == [(r, [0, 0, 0, 0]) for r in range(4)]
    stopped = [e for e in log if e["event"] == "table_stopped"]
    assert [(e["number"], e["run"], e["reason"]) for e in stopped] == [
        (1, 1, "past its time budget of 60 s")
    ]
    assert _read(root, store.rated_through) == 3
    for sid in (1, 2):
        sub = _read(root, store.submission, sid)
        assert (sub.ranked_games, sub.faults_in_row, sub.status) == (12, 0, "ranked")


def test_a_ladder_table_stopped_twice_is_void_and_skipped_by_the_fold(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    _budgeted_competition(root, 30.0)
    plays = _hang_at(monkeypatch, "L1", 2)
    _run_on_mock_clock(root, 3)
    assert [p for p in plays if p.startswith("L")] == ["L0", "L1", "L1", "L2"]
    tables = _read(root, store.tables_in, "ladder")
    assert [(t.number, t.status, t.void_reason) for t in tables] == [
        (0, "done", None),
        (1, "void", "the server stopped it twice: past its time budget of 30 s"),
        (2, "done", None),
    ]
    assert _read(root, store.rated_through) == 3
    assert _read(root, store.fold_at, 2) == _read(root, store.fold_at, 1)  # table 1 skipped
    for sid in (1, 2):
        sub = _read(root, store.submission, sid)
        assert (sub.ranked_games, sub.faults_in_row) == (8, 0)
    assert "  ladder table 1 (L1): the server stopped it twice: past its time budget of 30 s" in (
        folder.listing(folder.open_folder(root))
    )


@sqlite_only
def test_a_ladder_table_budget_is_a_setting_checked_at_init(tmp_path: Path) -> None:
    with pytest.raises(folder.FolderError, match=r"^\[ladder\] table_seconds must be 0"):
        folder.CompetitionSettings.from_mapping({"ladder": {"table_seconds": -1.0}}, "t")
    for bad in (math.inf, math.nan):
        with pytest.raises(folder.FolderError, match=r"table_seconds: a finite number$"):
            folder.CompetitionSettings.from_mapping({"ladder": {"table_seconds": bad}}, "t")
    s = folder.CompetitionSettings.from_mapping({"ladder": {"table_seconds": 0}}, "t")
    assert s.ladder.table_seconds == 0.0


@sqlite_only
def test_the_runner_sends_table_states_over_the_live_queue(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: the games of every table feed the live view's bounded queue
    (arena.game.feed.LiveFeed, the web process's side of it is test_web's)."""
    import queue as queue_module

    from arena.game.feed import LiveFeed

    root = tmp_path / "c"
    _competition(root, 2)
    real = server_tables.play_games
    feeds: list[Any] = []

    async def play(*args: Any, live: Any = None) -> None:
        feeds.append(live)
        assert isinstance(live, LiveFeed)
        for spec in args[3]:
            live.sink(spec)({"event": "deal", "hand_number": 1, "direction": "left"})
        live.flush()
        await real(*args)

    monkeypatch.setattr(server_tables, "play_games", play)
    sent: queue_module.Queue[dict[str, Any]] = queue_module.Queue(100)
    r = start_runner(
        root,
        RunnerConfig(sandbox=False, ladder_tables=2, exit_when_idle=True, log=io.StringIO(),
                     live=sent),
    )  # fmt: skip
    try:
        trio.run(r.run)
    finally:
        r.comp.close()
    states = [sent.get_nowait() for _ in range(sent.qsize())]
    assert len({id(f) for f in feeds}) == 1 and len(feeds) == 4  # 2 validation, 2 ladder tables
    assert [(s["deal_key"], s["hand"]) for s in states if s["deal_key"].startswith("L")] == [
        ("L0", 1), ("L0", 1), ("L0", 1), ("L0", 1), ("L1", 1), ("L1", 1), ("L1", 1), ("L1", 1),
    ]  # fmt: skip
    assert {"stderr", "transcripts"}.isdisjoint(states[0])


@sqlite_only
def test_the_start_up_line_says_what_is_weaker_without_root(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: started as a user other than root, the runner's start-up
    line (the log's "start" event) says what is weaker (docs/security.md,
    "A competition server started without root")."""
    root = tmp_path / "c"
    _competition(root, 1)
    start = next(e for e in _run(root, 0) if e["event"] == "start")
    assert start["uid"] == os.geteuid()
    if os.geteuid() == 0:
        assert all(not w.startswith("not root") for w in start["weaker"])
    monkeypatch.setattr(runner.os, "geteuid", lambda: 4242)
    start = next(e for e in _run(root, 0) if e["event"] == "start")
    assert start["uid"] == 4242
    assert [w.split(":")[0] for w in start["weaker"][:2]] == ["not root", "not root"]
    assert "process limit is not applied" in start["weaker"][0]
    assert "could read the key file" in start["weaker"][1]


@sqlite_only
def test_the_launcher_lets_go_of_each_submission_that_retires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: the runner's one launcher copies a submission's folder when it
    first plays and releases the copy when the submission retires, once no
    chosen or playing table seats it: s3 after failing its validation, s1
    when s4 (the same participant's) is ranked, s5 when its participant is
    revoked during ladder table 0 (which still plays it, as chosen), s2 after
    crashing in that table's 4 games (fault budget 4). The launcher's real
    ``check`` makes the copies; the games are scripted."""
    root = tmp_path / "c"
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1, "fault_budget": 4}}, "t"
    )
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        people = [store.add_participant(conn, f"p{i}", 0.0) for i in range(4)]
        for i, p in enumerate([people[0], people[1], people[2], people[0], people[3]]):
            s, _ = store.add_submission(conn, p.id, f"{i + 1:x}" * 64, "py", 1, 1.0)
            d = folder.submission_dir(comp.paths, s.sha256)
            d.mkdir()
            (d / "bot.py").write_text(f"print('submission {s.id}')\n")
            store.record_step(conn, s.id, "check", True, 2.0)
    comp.close()

    held: list[tuple[str, list[str]]] = []  # deal key, submissions' copies at its start
    folders: dict[str, Path] = {}

    async def play(
        entrants: Any,
        settings: Any,
        launcher: Any,
        games: Any,
        locks: Any,
        on_record: Any,
        live: Any = None,
    ) -> None:
        deal = games[0].deal_key
        copies = launcher.copies()
        for name, path in folders.items():  # a copy released earlier is gone
            if copies.get(name) != path:
                assert not path.exists(), (deal, name)
        folders.update(copies)
        mine = sorted(n for n in copies if n.startswith("s"))
        held.append((deal, mine))
        assert {e.name for e in entrants} <= set(copies)
        if deal == "L0":
            other = folder.open_folder(root)
            try:
                with other.database.write() as conn:
                    store.set_participant_status(conn, "p3", "revoked", 3.0)
            finally:
                other.close()
        crashed = {"V3": ["s3"], "L0": ["s2"]}.get(deal, [])
        for spec in games:
            on_record(_game(spec, crashed=crashed))
            await trio.lowlevel.checkpoint()

    monkeypatch.setattr(recheck, "check_record", lambda *args: None)
    monkeypatch.setattr(server_tables, "play_games", play)
    log = io.StringIO()
    r = start_runner(
        root, RunnerConfig(sandbox=None, ladder_tables=2, exit_when_idle=True, log=log)
    )
    try:
        if not r.options.uses_separate_users and not r.launcher.sealed:
            pytest.skip("no private copies here: bots neither sealed nor run as separate users")
        trio.run(r.run)
    finally:
        r.comp.close()
    assert held == [
        ("V1", ["s1"]),
        ("V2", ["s1", "s2"]),
        ("V3", ["s1", "s2", "s3"]),
        ("V4", ["s1", "s2", "s4"]),  # s3 failed its validation
        ("V5", ["s2", "s4", "s5"]),  # s1 superseded by s4
        ("L0", ["s2", "s4", "s5"]),
        ("L1", ["s4"]),  # s5 revoked, s2 retired after its faults
    ]
    events = [json.loads(x) for x in log.getvalue().splitlines()]
    released = [(e["submission"], e["copy"]) for e in events if e["event"] == "released"]
    assert sorted(released) == [(1, "released"), (2, "released"), (3, "released"), (5, "released")]
    statuses = [_read(root, store.submission, sid).status for sid in range(1, 6)]
    assert statuses == ["superseded", "retired", "failed", "ranked", "retired"]
    assert not any(p.exists() for p in folders.values())  # the runner's close removed s4's


def test_a_retired_submission_keeps_its_copy_while_a_chosen_table_seats_it(
    tmp_path: Path,
) -> None:
    """A ladder table chosen (not yet playing) with a submission that has since
    been superseded plays as chosen: its copy is kept until that table is
    done; a suspended participant's ranked submission lets go of its copy,
    one waiting for its validation keeps it."""
    root = tmp_path / "c"
    _competition(root, 3)
    comp = folder.open_folder(root)
    try:
        with comp.database.write() as conn:
            for sid in (1, 2):
                store.record_step(conn, sid, "validation", True, 3.0)
            table = store.add_table(
                conn, "ladder", 0, "L0", ["house:low", "house:random", "s1", "s2"], [], 4.0
            )
            store.retire_submission(conn, 1, "replaced")
            store.set_participant_status(conn, "p1", "suspended", 5.0)
        held = ["s1", "s2", "s3", "house:low"]
        with comp.database.read() as conn:
            assert runner.Runner._retired(conn, held) == []  # both seated at table 0
        with comp.database.write() as conn:
            store.set_table_status(conn, table.id, "done", 6.0)
        with comp.database.read() as conn:
            assert runner.Runner._retired(conn, held) == ["s1", "s2"]  # s3 awaits validation
    finally:
        comp.close()
