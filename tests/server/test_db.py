"""The competition server's database (arena/server/db.py, migrate.py, store.py):
the storage contract on a real SQLite file in a temporary folder and on a
fresh database of a private PostgreSQL server (tests/server/conftest.py);
the tests of one engine's own means (WAL, BEGIN IMMEDIATE, the backup API;
the advisory locks) on that engine."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import trio
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from server_templates import migrated_sqlite
from sqlalchemy import Connection, insert, inspect, select, text

from arena.server import db, folder, store
from arena.server.migrate import (
    MIGRATIONS,
    backup,
    current_revision,
    head_revision,
    migrate,
    revisions,
    upgrade_to,
)
from arena.server.runlock import RunnerLockError, hold_runner_lock

# The database fixtures (SQLite, a private PostgreSQL): tests/server/db_fixtures.py.
pytest_plugins = ["db_fixtures"]


def _open(backend: str | None, tmp_path: Path) -> db.Database:
    if backend is None:
        path = tmp_path / db.DATABASE_NAME
        db.set_wal(path)
        return db.Database(path)
    return db.Database(db.DatabaseLocation(url=backend))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[db.Database]:
    """A migrated database: SQLite, then PostgreSQL; a copy of the migrated
    template (server_templates: ``migrate`` ran once per test process; the
    migrations' own tests run them)."""
    if request.param == "sqlite":
        path = tmp_path / db.DATABASE_NAME
        migrated_sqlite(path)
        d = db.Database(path)
    else:
        d = db.Database(db.DatabaseLocation(url=request.getfixturevalue("migrated_postgres_url")))
    yield d
    d.close()


@pytest.fixture
def sqlite_database(tmp_path: Path) -> Iterator[db.Database]:
    path = tmp_path / db.DATABASE_NAME
    db.set_wal(path)
    d = db.Database(path)
    migrate(d)
    yield d
    d.close()


@pytest.fixture
def pg_database(postgres_url: str) -> Iterator[db.Database]:
    d = db.Database(db.DatabaseLocation(url=postgres_url))
    migrate(d)
    yield d
    d.close()


def test_migrations_make_the_tables_of_the_metadata(backend: str | None, tmp_path: Path) -> None:
    """The migrations themselves (the ``database`` fixture is a copy of what they made)."""
    database = _open(backend, tmp_path)
    try:
        migrate(database)
        assert current_revision(database) == db.SCHEMA_VERSION
        with database.writer.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), db.metadata)
        assert diffs == []
        names = set(inspect(database.reader).get_table_names())
        assert {
            "meta",
            "participants",
            "tokens",
            "submissions",
            "tables",
            "games",
            "ratings",
        } <= names
    finally:
        database.close()


def test_wal_mode_and_busy_timeout(sqlite_database: db.Database) -> None:
    database = sqlite_database
    with database.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_write_transactions_take_the_write_lock_at_begin(sqlite_database: db.Database) -> None:
    database = sqlite_database
    assert database.path is not None
    # BEGIN IMMEDIATE: while one writer's transaction is open (even before it
    # writes anything), another process's BEGIN IMMEDIATE cannot start.
    other = sqlite3.connect(database.path, timeout=0.05, isolation_level=None)
    with database.write() as conn:
        conn.execute(select(db.meta.c.key)).all()  # a read only: a deferred BEGIN locks nothing
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    # A reader is not blocked by a writer (WAL).
    with database.write() as conn:
        conn.execute(insert(db.meta).values(key="k", value="v"))
        assert other.execute("SELECT count(*) FROM meta").fetchone() == (0,)
    assert other.execute("SELECT value FROM meta").fetchone() == ("v",)
    other.close()


def test_a_failed_write_rolls_back(database: db.Database) -> None:
    def twice(conn: Connection) -> None:
        store.set_meta(conn, "key_sha256", "ab" * 32)
        store.add_participant(conn, "ann", 1.0)
        store.add_participant(conn, "ann", 2.0)

    with pytest.raises(store.StoreError, match="a participant named 'ann' exists already"):
        database.run_write(twice)
    with database.read() as conn:
        assert store.get_meta(conn, "key_sha256") is None
        assert store.list_participants(conn) == []


def test_writers_from_trio_go_one_at_a_time(database: db.Database) -> None:
    inside = 0
    most = 0
    lock = threading.Lock()

    def write(conn: object, i: int) -> int:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        store.add_participant(conn, f"p{i}", float(i))  # type: ignore[arg-type]
        with lock:
            inside -= 1
        return i

    async def main() -> list[int]:
        done: list[int] = []

        async def one(i: int) -> None:
            done.append(await database.write_async(write, i))

        async with trio.open_nursery() as nursery:
            for i in range(8):
                nursery.start_soon(one, i)
        return done

    assert sorted(trio.run(main)) == list(range(8))
    assert most == 1
    names = database.run_read(lambda c: [p.name for p in store.list_participants(c)])
    assert names == [f"p{i}" for i in range(8)]


def test_migrate_refuses_a_database_from_a_newer_arena(database: db.Database) -> None:
    with database.write() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(RuntimeError, match="revision 9999, unknown to this arena"):
        migrate(database)


def test_postgres_writers_take_the_write_lock_at_begin_and_readers_a_snapshot(
    pg_database: db.Database,
) -> None:
    # The advisory write lock is taken by BEGIN, before anything is written:
    # another session cannot take it while the write transaction is open.
    database = pg_database
    other = db.postgres_engine(database.location, None)
    try:
        with other.connect() as probe:

            def lock_free() -> bool:
                got = probe.execute(
                    text("SELECT pg_try_advisory_xact_lock(:s, :k)"),
                    {"s": db.LOCK_SPACE, "k": db.WRITE_LOCK},
                ).scalar_one()
                probe.rollback()
                return bool(got)

            assert lock_free()
            with database.write() as conn:
                conn.execute(select(db.meta.c.key)).all()
                assert not lock_free()
            assert lock_free()
            # A reader sees one snapshot: a write committed meanwhile is not in it,
            # and a read transaction cannot write.
            with database.read() as conn:
                assert store.list_participants(conn) == []
                database.run_write(store.add_participant, "ann", 1.0)
                assert store.list_participants(conn) == []
                assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == (
                    "repeatable read"
                )
                assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
            assert [p.name for p in database.run_read(store.list_participants)] == ["ann"]
            assert probe.exec_driver_sql("SHOW lock_timeout").scalar() == "30s"
    finally:
        other.dispose()


def test_a_nul_from_a_bot_is_stored(database: db.Database) -> None:
    # PostgreSQL's text cannot hold NUL: it becomes U+FFFD there (SQLite keeps it).
    def add(conn: Connection) -> int:
        p = store.add_participant(conn, "ann", 1.0)
        s, _ = store.add_submission(conn, p.id, "a" * 64, "py", 1, 1.0)
        store.record_step(conn, s.id, "check", False, 2.0, "bad\x00line", "out\x00put")
        return s.id

    sid = database.run_write(add)
    row = database.run_read(store.submission, sid)
    assert row is not None
    nul = "\x00" if database.dialect == "sqlite" else "\ufffd"
    assert (row.reason, row.check_output) == (f"bad{nul}line", f"out{nul}put")


def test_a_game_record_is_stored_as_compact_json_and_read_back_equal(
    database: db.Database,
) -> None:
    """A JSON column holds orjson's compact UTF-8 text (db.json_dumps:
    storing a game record cost a third of the runner's own CPU with the
    standard library's encoder); what is read back equals what was stored,
    keys in order, an integer key made a string as before, an integer beyond
    64 bits and a lone surrogate through the standard library's."""
    record = {"rotation": 1, "seats": ["s1", "é", "🂡", "x\x00y"], "scores": [1.5, -2, 0]}

    def add(conn: Connection, rec: dict[str, Any]) -> int:
        t = store.add_table(conn, "ladder", 0, "L0", ["a", "b", "c", "d"], ["a"] * 4, 0.0)
        store.add_game(conn, t.id, int(rec["rotation"]), rec)
        return t.id

    tid = database.run_write(add, record)
    assert database.run_read(store.table_records, tid) == [record]
    with database.read() as conn:
        raw = conn.execute(text("SELECT CAST(record AS TEXT) FROM games")).scalar_one()
    # (PostgreSQL's json keeps the text as given.)
    assert raw == '{"rotation":1,"seats":["s1","é","🂡","x\\u0000y"],"scores":[1.5,-2,0]}'
    assert db.json_loads(db.json_dumps({3: [10**30], "s": "\ud800"})) == {
        "3": [10**30],
        "s": "\ud800",
    }
    assert list(db.json_loads(db.json_dumps({"b": 1, "a": 2}))) == ["b", "a"]


def test_backup_copies_a_live_database_owner_only(tmp_path: Path) -> None:
    path = tmp_path / db.DATABASE_NAME
    db.set_wal(path)
    d = db.Database(path)
    migrate(d)
    with d.write() as conn:
        store.add_participant(conn, "ann", 1.0)
    assert migrate(d).backup is None  # at the head: nothing to do, no copy
    copy = tmp_path / "copy.sqlite3"
    backup(path, copy)
    assert copy.stat().st_mode & 0o777 == 0o600
    other = sqlite3.connect(copy)
    assert other.execute("SELECT name FROM participants").fetchall() == [("ann",)]
    other.close()
    d.close()


def test_participants_and_tokens(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 10.0)
        store.add_token(conn, ann.id, store.token_hash("t1"), 10.0)
        store.add_token(conn, ann.id, store.token_hash("t2"), 11.0)
        bob = store.add_participant(conn, "bob", 12.0)
        store.add_token(conn, bob.id, store.token_hash("t3"), 12.0)
    with database.read() as conn:
        assert store.participant_by_token_hash(conn, store.token_hash("t2")) == ann
        assert store.participant_by_token_hash(conn, store.token_hash("t3")) == bob
        assert store.participant_by_token_hash(conn, store.token_hash("t4")) is None
        stored = conn.execute(select(db.tokens.c.sha256)).scalars().all()
    assert "t1" not in stored and store.token_hash("t1") in stored
    with database.write() as conn:
        store.set_participant_status(conn, "bob", "suspended", 13.0)
        assert store.participant_by_token_hash(conn, store.token_hash("t3")).status == "suspended"  # type: ignore[union-attr]
        store.set_participant_status(conn, "bob", "revoked", 14.0)
        assert store.participant_by_token_hash(conn, store.token_hash("t3")) is None
        with pytest.raises(store.StoreError, match="no participant named 'cy'"):
            store.set_participant_status(conn, "cy", "revoked", 14.0)


def test_a_newer_submission_replaces_one_waiting_for_its_check(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 0.0)
        bob = store.add_participant(conn, "bob", 0.0)
        s1, gone = store.add_submission(conn, ann.id, "a" * 64, "py", 100, 1.0)
        assert gone == []
        b1, _ = store.add_submission(conn, bob.id, "b" * 64, "zip", 200, 2.0)
        s2, gone = store.add_submission(conn, ann.id, "c" * 64, "py", 300, 3.0)
        assert gone == [s1.id]
        assert store.queue_place(conn, b1.id) == 1
        assert store.queue_place(conn, s2.id) == 2
        assert store.queue_place(conn, s1.id) is None
        store.start_step(conn, s2.id, "check", 4.0)
        s3, gone = store.add_submission(conn, ann.id, "d" * 64, "py", 300, 5.0)
        assert gone == []  # s2 is past the queue: it keeps going
        statuses = [(s.id, s.status) for s in store.submissions_of(conn, ann.id)]
    assert statuses == [(s3.id, "queued"), (s2.id, "check"), (s1.id, "superseded")]


def test_steps_move_a_submission_and_a_failure_keeps_one_line(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 0.0)
        s1, _ = store.add_submission(conn, ann.id, "a" * 64, "py", 1, 1.0)
        store.start_step(conn, s1.id, "check", 2.0)
        assert (
            store.record_step(conn, s1.id, "check", True, 3.0, output="ok").status == "validation"
        )
        store.start_step(conn, s1.id, "validation", 4.0)
        r = store.record_step(conn, s1.id, "validation", True, 5.0)
        assert (r.status, r.ranked_at) == ("ranked", 5.0)
        s2, _ = store.add_submission(conn, ann.id, "b" * 64, "py", 1, 6.0)
        store.start_step(conn, s2.id, "check", 7.0)
        r = store.record_step(
            conn, s2.id, "check", False, 8.0, reason="crashed in hand 1\nTraceback...", output="log"
        )
        assert (r.status, r.failed_step, r.reason, r.check_output) == (
            "failed",
            "check",
            "crashed in hand 1",
            "log",
        )
        assert store.submission(conn, s1.id).status == "ranked"  # type: ignore[union-attr]
        s3, _ = store.add_submission(conn, ann.id, "c" * 64, "py", 1, 9.0)
        store.start_step(conn, s3.id, "check", 10.0)
        store.record_step(conn, s3.id, "check", True, 11.0)
        store.record_step(conn, s3.id, "validation", True, 12.0)
        assert store.submission(conn, s1.id).status == "superseded"  # type: ignore[union-attr]


def test_a_tables_games_replace_those_stored_before_and_leave_other_tables(
    database: db.Database,
) -> None:
    """store.replace_games (a table's end stores its four games at once):
    the games stored before for that table go, the new ones are read back by
    rotation whatever their order, an empty list leaves none, and another
    table's games stay."""
    seating = ["a", "b", "c", "d"]

    def setup(conn: Connection) -> tuple[int, int]:
        t = store.add_table(conn, "ladder", 0, "L0", seating, seating, 0.0)
        other = store.add_table(conn, "ladder", 1, "L1", seating, seating, 0.0)
        store.add_game(conn, t.id, 0, {"rotation": 0, "old": True})
        store.add_game(conn, t.id, 1, {"rotation": 1, "old": True})
        store.add_game(conn, other.id, 0, {"rotation": 0, "other": True})
        return t.id, other.id

    tid, other = database.run_write(setup)
    records = [{"rotation": k, "scores": [k, 0, 0, 0]} for k in (2, 0, 3, 1)]
    database.run_write(store.replace_games, tid, records)
    assert database.run_read(store.table_records, tid) == sorted(
        records, key=lambda r: r["rotation"]
    )
    database.run_write(store.replace_games, tid, [])
    assert database.run_read(store.table_records, tid) == []
    assert database.run_read(store.table_records, other) == [{"rotation": 0, "other": True}]


def test_submissions_by_id_reads_those_that_exist_in_one_query(database: db.Database) -> None:
    """store.submissions_by_id (a table's charges read its seated
    submissions so): each existing id to its row, as store.submission reads
    it; a missing id left out; none asked, none read."""

    def setup(conn: Connection) -> list[int]:
        ann = store.add_participant(conn, "ann", 0.0)
        a, _ = store.add_submission(conn, ann.id, "a" * 64, "py", 1, 1.0)
        b, _ = store.add_submission(conn, ann.id, "b" * 64, "py", 1, 2.0)
        return [a.id, b.id]

    ids = database.run_write(setup)
    found = database.run_read(store.submissions_by_id, [*ids, 999])
    assert sorted(found) == sorted(ids)
    assert all(found[i] == database.run_read(store.submission, i) for i in ids)
    assert database.run_read(store.submissions_by_id, []) == {}


def test_past_ladder_tables_and_tables_in_read_what_they_name(database: db.Database) -> None:
    """store.past_ladder_tables (the ladder choice's reading of earlier
    tables: three columns) gives each ladder table numbered ``since`` or
    later as (number, seating, focus), by number, as the whole rows say;
    tables_in's four forms (built once, with bound parameters) filter by
    status and number; an empty status list finds none."""
    seatings = [("a", "b", "c", "d"), ("b", "c", "d", "e"), ("e", "a", "b", "c")]

    def setup(conn: Connection) -> None:
        for n, seating in enumerate(seatings):
            store.add_table(conn, "ladder", n, f"L{n}", seating, seating, 0.0, focus=seating[n % 4])
        store.add_table(conn, "validation", 0, "V1", seatings[0], seatings[0], 0.0)
        store.set_table_status(conn, store.tables_in(conn, "ladder")[1].id, "playing", 1.0)

    database.run_write(setup)
    rows = database.run_read(store.tables_in, "ladder")
    assert [r.number for r in rows] == [0, 1, 2]
    for since in (0, 1, 3):
        assert database.run_read(store.past_ladder_tables, since) == [
            (r.number, r.seating, r.focus) for r in rows if r.number >= since
        ]
    assert database.run_read(store.past_ladder_tables, 1)[1] == (2, seatings[2], "b")
    playing = database.run_read(store.tables_in, "ladder", ["playing"])
    assert [r.number for r in playing] == [1]
    chosen_since = database.run_read(store.tables_in, "ladder", ["chosen"], 1)
    assert [r.number for r in chosen_since] == [2]
    assert [r.number for r in database.run_read(store.tables_in, "ladder", None, 2)] == [2]
    assert database.run_read(store.tables_in, "ladder", []) == []
    assert [r.numbering for r in database.run_read(store.tables_in, "validation")] == ["validation"]


def test_tables_games_folds_and_standings(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 0.0)
        s1, _ = store.add_submission(conn, ann.id, "a" * 64, "py", 1, 1.0)
        store.record_step(conn, s1.id, "check", True, 2.0)
        store.record_step(conn, s1.id, "validation", True, 3.0)
        seating = ["s1", "house:low", "house:random", "house:heuristic"]
        t = store.add_table(conn, "ladder", 0, "L0", seating, seating, 4.0, focus="s1")
        with pytest.raises(store.StoreError, match="ladder table 0 exists already"):
            store.add_table(conn, "ladder", 0, "L0", seating, seating, 4.0)
        store.set_table_status(conn, t.id, "playing", 5.0)
        for k in range(4):
            store.add_game(conn, t.id, k, {"game_index": k, "seats": seating})
        store.add_game(conn, t.id, 3, {"game_index": 3, "seats": seating, "again": True})
        store.set_table_status(conn, t.id, "done", 6.0)
        fold = {
            "s1": store.Rating(27.0, 7.0, 4),
            "house:low": store.Rating(24.0, 7.5, 4),
            "house:random": store.Rating(20.0, 7.9, 4),
            "house:heuristic": store.Rating(26.0, 7.2, 4),
        }
        store.store_fold(conn, 1, fold)
        t1 = store.add_table(conn, "ladder", 1, "L1", seating, seating, 7.0)
        store.set_table_status(conn, t1.id, "void", 8.0, "house bot house:low crashed\nmore")
    with database.read() as conn:
        done = store.finished_tables(conn)
        assert [(x.number, x.status, x.attempt, x.seating) for x in done] == [
            (0, "done", 1, tuple(seating))
        ]
        records = store.table_records(conn, t.id)
        assert [r["game_index"] for r in records] == [0, 1, 2, 3] and records[3]["again"]
        assert [(v.number, v.void_reason) for v in store.void_tables(conn)] == [
            (1, "house bot house:low crashed")
        ]
        assert store.fold_at(conn, 0) == {}
        assert store.fold_at(conn, 2) is None
        assert store.fold_at(conn, 1) == fold
        through, rows = store.standings_rows(conn)
    assert through == 1
    assert [(r.participant, r.submission, r.games, r.house) for r in rows] == [
        ("ann", 1, 4, False),
        ("house:heuristic", None, 4, True),
        ("house:low", None, 4, True),
        ("house:random", None, 4, True),
    ]
    assert rows[0].to_json()["conservative"] == pytest.approx(27.0 - 21.0)


def test_a_new_submission_shows_the_previous_until_it_has_20_games(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 0.0)
        ids = []
        for i in range(2):
            s, _ = store.add_submission(conn, ann.id, f"{i}" * 64, "py", 1, float(i))
            store.record_step(conn, s.id, "check", True, 2.0)
            store.record_step(conn, s.id, "validation", True, 3.0)
            ids.append(s.id)
        store.add_ranked_games(conn, ids[0], 40, 0)
        store.add_ranked_games(conn, ids[1], 8, 0)
        store.store_fold(
            conn, 3, {"s1": store.Rating(30.0, 2.0, 40), "s2": store.Rating(20.0, 6.0, 8)}
        )
        _, rows = store.standings_rows(conn)
        assert [(r.submission, r.status, r.new_games, r.mu) for r in rows] == [
            (1, "superseded", 8, 30.0)
        ]
        store.add_ranked_games(conn, ids[1], 12, 0)
        _, rows = store.standings_rows(conn)
    assert [(r.submission, r.status, r.new_games, r.mu) for r in rows] == [
        (2, "ranked", None, 20.0)
    ]


def test_standings_json_holds_the_tooling_contract(database: db.Database) -> None:
    with database.write() as conn:
        ann = store.add_participant(conn, "ann", 0.0)
        s, _ = store.add_submission(conn, ann.id, "a" * 64, "py", 1, 1.0)
        store.record_step(conn, s.id, "check", True, 2.0)
        store.record_step(conn, s.id, "validation", True, 3.0)
        seating = ["s1", "house:low", "house:random", "house:heuristic"]
        store.add_table(conn, "ladder", 0, "L0", seating, seating, 4.0)
        store.store_fold(conn, 1, {"s1": store.Rating(26.0, 5.0, 4)})
        body = store.standings_json(conn)
    assert body["rated_through"] == 1 and body["tables_in_play"] == 1
    (row,) = body["rows"]
    assert {k: row[k] for k in ("participant", "submission", "games", "mu", "sigma")} == {
        "participant": "ann",
        "submission": 1,
        "games": 4,
        "mu": 26.0,
        "sigma": 5.0,
    }
    assert row["conservative"] == pytest.approx(11.0)


# --- migrations: from an empty database, from the previous revision ----------


def _sample_value(column: sa.Column[Any], n: int) -> Any:
    kind = column.type
    if isinstance(kind, sa.JSON):
        return [f"v{n}", n]
    if isinstance(kind, sa.Integer):
        return 1 if column.foreign_keys or column.primary_key else n
    if isinstance(kind, sa.Float):
        return n + 0.5
    if isinstance(kind, sa.String | sa.Text):
        return f"v{n}"[: kind.length or 64]
    raise AssertionError(f"no sample value for {column.table.name}.{column.name}: {kind!r}")


def _fill_every_table(database: db.Database) -> dict[str, dict[str, Any]]:
    # One row in every table of the schema the database is at now (reflected,
    # so whatever that revision holds), parents before children; the ids are
    # all 1, so every foreign key points at its parent's row.
    rows: dict[str, dict[str, Any]] = {}
    with database.write() as conn:
        found = sa.MetaData()
        found.reflect(conn)
        for table in found.sorted_tables:
            if table.name == "alembic_version":
                continue
            row = {c.name: _sample_value(c, i) for i, c in enumerate(table.columns)}
            conn.execute(table.insert().values(row))
            rows[table.name] = row
    return rows


def _step_keeps_rows(database: db.Database, location: Path) -> None:
    revs = revisions(location)
    assert len(revs) >= 2
    upgrade_to(database, revs[-2], location)
    assert current_revision(database) == revs[-2]
    before = _fill_every_table(database)
    assert before, "the previous revision holds tables"
    upgrade_to(database, "head", location)
    assert current_revision(database) == revs[-1]
    with database.read() as conn:
        found = sa.MetaData()
        found.reflect(conn)
        for name, row in before.items():
            kept = [dict(r._mapping) for r in conn.execute(found.tables[name].select())]
            assert len(kept) == 1, name
            assert {k: kept[0][k] for k in row} == row, name


def test_migrations_from_an_empty_database(backend: str | None, tmp_path: Path) -> None:
    d = _open(backend, tmp_path)
    try:
        assert current_revision(d) is None
        result = migrate(d)
        assert (result.before, result.after, result.backup) == (None, db.SCHEMA_VERSION, None)
        assert current_revision(d) == head_revision() == db.SCHEMA_VERSION
        with d.writer.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), db.metadata) == []
        d.run_write(store.add_participant, "ann", 1.0)
        assert [p.name for p in d.run_read(store.list_participants)] == ["ann"]
    finally:
        d.close()


def test_migrations_from_the_previous_revision_keep_every_row(
    backend: str | None, tmp_path: Path
) -> None:
    # The arena's own revisions: upgrade to head-1, a row in every table, then
    # to head; every row kept. With one revision there is no previous one yet
    # (the empty database is the test above): the synthetic step below runs.
    if len(revisions()) < 2:
        pytest.skip("one revision so far: no previous revision to upgrade from")
    d = _open(backend, tmp_path)
    try:
        _step_keeps_rows(d, MIGRATIONS)
        with d.writer.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), db.metadata) == []
    finally:
        d.close()


NEXT_REVISION = '''"""A synthetic next revision (tests only): a column added, a table added.

Revision ID: 9000
"""

import sqlalchemy as sa
from alembic import op

revision = "9000"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("participants") as batch:
        batch.add_column(sa.Column("synthetic_note", sa.String(64), nullable=True))
    op.create_table("extra", sa.Column("id", sa.Integer, primary_key=True))


def downgrade() -> None:
    op.drop_table("extra")
    with op.batch_alter_table("participants") as batch:
        batch.drop_column("synthetic_note")
'''


def test_the_previous_revision_step_holds_for_a_revision_added_later(
    backend: str | None, tmp_path: Path
) -> None:
    # The same procedure on the arena's migrations with one more revision (a
    # column added in batch mode, a table added): head-1 is today's head.
    location = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, location, ignore=shutil.ignore_patterns("__pycache__"))
    (location / "versions" / "v9000_next.py").write_text(
        NEXT_REVISION.replace("{head}", head_revision()), encoding="utf-8"
    )
    d = _open(backend, tmp_path)
    try:
        _step_keeps_rows(d, location)
        with d.read() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("participants")}
        assert "synthetic_note" in columns
    finally:
        d.close()


# --- one runner per competition ----------------------------------------------


def test_a_second_runner_is_refused_until_the_first_stops(
    each_database: str | None, tmp_path: Path
) -> None:
    root = tmp_path / "comp"
    folder.init_folder(root)
    first = folder.open_folder(root)
    second = folder.open_folder(root)
    try:
        hold_runner_lock(first)
        with pytest.raises(RunnerLockError, match=r"another runner .*is running this competition"):
            hold_runner_lock(second)
        first.close()  # the lock goes with the first runner's database
        hold_runner_lock(second)
    finally:
        first.close()
        second.close()


def test_a_runner_killed_by_sigkill_leaves_no_lock(
    each_database: str | None, tmp_path: Path
) -> None:
    # The holder is another process (a runner's): while it runs a second is
    # refused; killed with SIGKILL, its lock is gone (the kernel's flock, the
    # database server's session).
    root = tmp_path / "comp"
    folder.init_folder(root)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from arena.server import folder, runlock\n"
            "comp = folder.open_folder(sys.argv[1])\n"
            "runlock.hold_runner_lock(comp)\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
            str(root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    comp = folder.open_folder(root)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunnerLockError) as refused:
            hold_runner_lock(comp)
        if comp.database.dialect == "sqlite":
            assert f"pid {holder.pid}" in str(refused.value)
        holder.kill()
        holder.wait()
        for _ in range(100):  # the server sees the session's socket close
            try:
                hold_runner_lock(comp)
                break
            except RunnerLockError:
                time.sleep(0.1)
        else:
            raise AssertionError("the killed runner's lock was never released")
    finally:
        holder.kill()
        holder.wait()
        comp.close()
