"""The competition server's database (arena/server/db.py, migrate.py, store.py):
a real SQLite file in a temporary folder."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import trio
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, insert, select, text

from arena.server import db, store
from arena.server.migrate import backup, current_revision, migrate


@pytest.fixture
def database(tmp_path: Path) -> db.Database:
    path = tmp_path / db.DATABASE_NAME
    db.set_wal(path)
    d = db.Database(path)
    migrate(d)
    yield d
    d.close()


def test_migrations_make_the_tables_of_the_metadata(database: db.Database) -> None:
    assert current_revision(database) == db.SCHEMA_VERSION
    with database.writer.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), db.metadata)
    assert diffs == []
    with database.read() as conn:
        names = {
            r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))
        }
    assert {"meta", "participants", "tokens", "submissions", "tables", "games", "ratings"} <= names


def test_wal_mode_and_busy_timeout(database: db.Database) -> None:
    with database.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_write_transactions_take_the_write_lock_at_begin(database: db.Database) -> None:
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
