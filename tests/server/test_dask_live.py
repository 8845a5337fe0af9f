"""Issue 29: tables played on remote workers appear in the live view when
they finish (as with ``run --executor dask``): the runner sends each stored
game's end state (arena.game.feed.TableState.from_record) through the same
live feed the in-process tables use, gauntlet and challenge tables kept
private; the web process reads the database at once on a game's end state.

No cluster: a remote player is faked by the in-process player with
``kind = "dask"`` that sends no state of its own (a Dask worker's games send
none), its games scripted (the seam ``arena.server.tables.play_games``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
from sqlalchemy import select

from arena.game.feed import TableState
from arena.protocol.faults import Fault
from arena.protocol.records import GameSpec
from arena.server import db, folder, recheck, runner, store
from arena.server import tables as server_tables
from arena.server.runner import RunnerConfig, start_runner

PAST = "2020-01-01T00:00:00+00:00"


def _record(spec: GameSpec) -> dict[str, Any]:
    """A scripted game: scores by seat; in a ladder game the first
    submission's seat crashed in hand 1 (a validation game is clean)."""
    seat = next(i for i, name in enumerate(spec.seats) if not name.startswith("house:"))
    faulted = spec.deal_key.startswith("L")
    scores = [3 + spec.rotation, 7, 9 + spec.game_index % 5, 7]
    return {
        "game_index": spec.game_index,
        "game_id": spec.game_id,
        "table": spec.table,
        "rotation": spec.rotation,
        "seats": list(spec.seats),
        "deal_key": spec.deal_key,
        "ranks": [1, 2, 4, 3],
        "scores": scores,
        "hands": [{}],
        "faults": [
            Fault(seat, spec.seats[seat], "crashed", "exited (exit code 3)", 1, 5, "play").to_json()
        ]
        if faulted
        else [],
        "struck_out": [],
    }


class RemoteTables(server_tables.InProcessTables):
    """A player elsewhere: its games send the live feed nothing."""

    kind = "dask"

    def __init__(self, r: runner.Runner) -> None:
        super().__init__(r.launcher, r._launcher_lock, r.deal_locks, live=None)


class Queue:
    """The live view's queue, noting at each state whether its game is stored."""

    def __init__(self, root: Path) -> None:
        self.comp = folder.open_folder(root)
        self.got: list[tuple[dict[str, Any], bool]] = []

    def put_nowait(self, state: dict[str, Any]) -> None:
        with self.comp.database.read() as conn:
            ids = {row.record["game_id"] for row in conn.execute(select(db.games.c.record))}
        self.got.append((state, state["game_id"] in ids))


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    async def play(
        entrants: Any,
        settings: Any,
        launcher: Any,
        games: Any,
        locks: Any,
        on_record: Any,
        live: Any = None,
    ) -> None:
        assert live is None  # nothing card by card from a remote table
        for spec in games:
            on_record(_record(spec))
            await trio.lowlevel.checkpoint()

    monkeypatch.setattr(server_tables, "play_games", play)
    monkeypatch.setattr(runner.Launcher, "check", lambda self, entrants: None)
    # Scripted records have no hands to replay: the re-check is test_recheck's.
    monkeypatch.setattr(recheck, "check_record", lambda *args: None)


def _competition(root: Path, subs: int, klass: dict[str, Any] | None = None) -> None:
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1}, **({"class": klass} if klass else {})}, "t"
    )
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        for i in range(subs):
            p = store.add_participant(conn, f"p{i}", 0.0)
            s, _ = store.add_submission(conn, p.id, f"{i + 1:x}" * 64, "py", 1, 1.0)
            d = folder.submission_dir(comp.paths, s.sha256)
            d.mkdir()
            (d / "bot.py").write_text("print('never run')\n")
            store.record_step(conn, s.id, "check", True, 2.0)  # the check is another test's
    comp.close()


def _run_remote(root: Path, ladder_tables: int) -> tuple[list[tuple[dict[str, Any], bool]], Any]:
    sent = Queue(root)
    log = io.StringIO()
    r = start_runner(
        root,
        RunnerConfig(
            sandbox=None, ladder_tables=ladder_tables, exit_when_idle=True, log=log, live=sent
        ),
    )
    r.tables = RemoteTables(r)
    try:
        trio.run(r.run)
    finally:
        r.comp.close()
        sent.comp.close()
    return sent.got, [json.loads(x) for x in log.getvalue().splitlines()]


def test_a_remote_tables_games_reach_the_live_feed_once_stored_with_their_end_state(
    tmp_path: Path, scripted: None
) -> None:
    root = tmp_path / "c"
    _competition(root, 2)
    got, log = _run_remote(root, ladder_tables=2)
    assert log[0]["executor"] == "dask", log
    keys = [(s["deal_key"], s["game_id"]) for s, _ in got]
    # Every game of the two validation tables and the two ladder tables, once each.
    assert sorted({k for k, _ in keys}) == ["L0", "L1", "V1", "V2"]
    assert len(keys) == len(set(keys)) == 16
    assert all(stored for _, stored in got)  # sent after the game is in the database
    by_id = {s["game_id"]: s for s, _ in got}
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            records = [row.record for row in conn.execute(select(db.games.c.record))]
    finally:
        comp.close()
    assert len(records) == 16
    for rec in records:
        state = by_id[rec["game_id"]]
        assert state["phase"] == "over"
        assert state["seats"] == rec["seats"]
        assert state["game_index"] == rec["game_index"]
        assert state["scores"] == rec["scores"]
        assert (state["hand"], state["held"], state["turn"]) == (1, [0, 0, 0, 0], None)
        seat = next(i for i, name in enumerate(rec["seats"]) if not name.startswith("house:"))
        faulted = rec["deal_key"].startswith("L")
        assert state["faults"] == ([[seat, "crashed", 1]] if faulted else [])
        assert state["fault_counts"] == [int(faulted and s == seat) for s in range(4)]
        assert {"stderr", "transcripts", "hands", "bot_seeds"}.isdisjoint(state)


def test_a_remote_gauntlet_table_is_not_sent_live(tmp_path: Path, scripted: None) -> None:
    """Gauntlet tables stay private (classes.PRIVATE) on Dask as in process."""
    root = tmp_path / "c"
    _competition(root, 1, {"deadline": PAST, "gauntlet_deals": 2, "final": "none"})
    got, _ = _run_remote(root, ladder_tables=0)
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            gauntlet = store.tables_in(conn, "gauntlet")
    finally:
        comp.close()
    assert [t.status for t in gauntlet] == ["done", "done"]  # played, 8 games
    assert sorted({s["deal_key"] for s, _ in got}) == ["V1"]  # its validation only
    assert len(got) == 4


def test_an_end_state_from_a_record_holds_no_card_and_keeps_the_newest_faults() -> None:
    seats = ["s1", "house:low", "s2", "s3"]
    faults = [
        Fault(i % 4, seats[i % 4], "timeout", "late", i, 1, "play").to_json() for i in range(10)
    ]
    record = {
        "game_index": 7,
        "game_id": "l3-k1",
        "deal_key": "L3",
        "seats": seats,
        "scores": [26, 0, 0, 104],
        "hands": [{"dealt": [["2C"]]}] * 5,
        "faults": faults,
    }
    state = TableState.from_record(record).to_json()  # type: ignore[arg-type]
    assert (state["game_index"], state["hand"], state["phase"]) == (7, 5, "over")
    assert state["scores"] == [26, 0, 0, 104]
    assert state["fault_counts"] == [3, 3, 2, 2]
    assert state["faults"] == [[i % 4, "timeout", i] for i in range(2, 10)]  # FAULTS_SHOWN
    assert "2C" not in json.dumps(state)


class _Database:
    """The web process's database, counting its looks."""

    def __init__(self) -> None:
        self.looks = 0

    async def read_async(self, fn: Any, *args: Any) -> Any:
        if fn.__name__ == "change_mark":
            self.looks += 1
            return (1,)
        return {}, []


def test_the_web_reads_the_database_at_once_when_a_game_ends() -> None:
    """A remote table's end states make the finished tables show at the next
    refresh, not ``poll_seconds`` later; a state in play does not."""
    from arena.server.web import Feed

    database = _Database()
    feed = Feed(database, poll_seconds=3600.0)  # type: ignore[arg-type]
    state = TableState.from_record(
        {"game_index": 0, "game_id": "l0-k0", "deal_key": "L0", "seats": ["a", "b", "c", "d"]}  # type: ignore[typeddict-item]
    ).to_json()

    async def main() -> list[int]:
        looks = []
        await feed.refresh()
        looks.append(database.looks)
        feed.table_state({**state, "phase": "play"})
        await feed.refresh()
        looks.append(database.looks)
        feed.table_state(state)
        await feed.refresh()
        looks.append(database.looks)
        await feed.refresh()
        looks.append(database.looks)
        return looks

    assert trio.run(main) == [1, 1, 2, 2]
