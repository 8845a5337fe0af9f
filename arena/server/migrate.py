"""Bring a competition's database to :data:`arena.server.db.SCHEMA_VERSION`
with Alembic (the revisions in ``arena/server/migrations/versions``), run by
the server at every start and by ``serve --init``.

Before a database that already holds data is upgraded, a copy of it is made
with SQLite's online backup API (``sqlite3.Connection.backup``: consistent
even while the other process writes) beside it, named after the revision it
was at: ``competition.sqlite3.before-0001``. On PostgreSQL no copy is
made: the upgrade runs in one transaction (PostgreSQL's DDL is
transactional, and the write advisory lock keeps every other writer out), so
a failed upgrade leaves the database as it was; docs/competition-server.md
tells the organiser to ``pg_dump`` it before installing a newer arena.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from arena.server.db import Database

MIGRATIONS = Path(__file__).with_name("migrations")


@dataclass(frozen=True)
class MigrationResult:
    """What :func:`migrate` did: ``before`` the revision found (``None``: an
    empty database), ``after`` the head, ``backup`` the copy made (``None``
    when nothing was upgraded or the database was empty)."""

    before: str | None
    after: str
    backup: Path | None


def _config(location: Path = MIGRATIONS) -> Config:
    config = Config()
    config.set_main_option("script_location", str(location))
    return config


def head_revision() -> str:
    """The newest revision of the migrations."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no Alembic revisions in {MIGRATIONS}")
    return head


def current_revision(db: Database) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    with db.writer.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def revisions(location: Path = MIGRATIONS) -> list[str]:
    """Every revision of the migrations in ``location``, oldest first."""
    walked = ScriptDirectory.from_config(_config(location)).walk_revisions()
    return [s.revision for s in reversed(list(walked))]


def upgrade_to(db: Database, revision: str, location: Path = MIGRATIONS) -> None:
    """Upgrade ``db`` to ``revision`` of the migrations in ``location`` (no
    copy made; tests step through the revisions with it)."""
    config = _config(location)
    with db.writer.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def backup(source: Path, target: Path) -> None:
    """Copy the SQLite database ``source`` to ``target`` with SQLite's backup
    API (a consistent copy, WAL included). ``target`` is made owner-only."""
    src = sqlite3.connect(source)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    target.chmod(0o600)


def migrate(db: Database) -> MigrationResult:
    """Upgrade ``db`` to the head revision, after a backup copy when it is a
    SQLite file holding a schema older than the head.

    Raises:
        RuntimeError: the database is at a revision this code does not know
            (made by a newer arena).
    """
    config = _config()
    head = head_revision()
    before = current_revision(db)
    if before is not None:
        known = {s.revision for s in ScriptDirectory.from_config(config).walk_revisions()}
        if before not in known:
            raise RuntimeError(
                f"the database {db.describe()} is at revision {before}, unknown to this arena "
                f"(its newest is {head}): made by a newer version"
            )
    copy: Path | None = None
    if before is not None and before != head and db.path is not None:
        copy = db.path.with_name(f"{db.path.name}.before-{before}")
        backup(db.path, copy)
    if before != head:
        upgrade_to(db, "head")
    return MigrationResult(before, head, copy)
