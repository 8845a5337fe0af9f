"""Migrated SQLite templates for the server's tests (issue 26; imported by
tests/server/db_fixtures.py and by the tests that make a database file
themselves): the real :func:`arena.server.migrate.migrate` runs once per test
process, each test gets a copy (SQLite's backup API: in WAL mode, at the head
revision, empty)."""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from functools import cache
from pathlib import Path


@cache
def _sqlite_template() -> Path:
    """A SQLite database made by the real ``set_wal`` and ``migrate``, once per
    test process (its folder removed at the process's exit)."""
    from arena.server import db
    from arena.server.migrate import migrate

    top = tempfile.mkdtemp(prefix="hearts-template-")
    atexit.register(shutil.rmtree, top, True)
    path = Path(top) / db.DATABASE_NAME
    db.set_wal(path)
    database = db.Database(path)
    try:
        migrate(database)
    finally:
        database.close()
    return path


def copy_template(path: Path) -> None:
    src = sqlite3.connect(_sqlite_template())
    try:
        dst = sqlite3.connect(path)
        try:
            src.backup(dst)
            mode = dst.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            assert str(mode).lower() == "wal", mode
        finally:
            dst.close()
    finally:
        src.close()


def migrated_sqlite(path: Path) -> None:
    """Make the SQLite database ``path`` (which must not exist) as ``set_wal``
    then ``migrate`` make it: a copy of the process's migrated template."""
    assert not path.exists(), path
    copy_template(path)


def fresh_sqlite(path: Path) -> bool:
    """Whether ``path`` holds no table yet (``init_folder``'s new file)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        conn.close()
