"""The competition server's database: SQLAlchemy 2 Core tables on SQLite.

Two processes write the one file (the runner: checks, tables, games,
ratings; the web process: participants' submissions), so:

* the database is in WAL mode (readers never block the writer; the WAL and
  shared-memory files sit beside the database, so its folder must be
  writable by the web process's user);
* every connection has a busy timeout (:data:`BUSY_TIMEOUT_SECONDS`): a
  writer that finds the other process writing waits instead of failing;
* write transactions are ``BEGIN IMMEDIATE`` (they take the write lock at
  their start, so two writers never deadlock on a read lock upgraded too
  late), read transactions a plain ``BEGIN``. This is the SQLite dialect's
  documented recipe for the ``sqlite3`` driver before Python 3.12: the
  driver's own transaction handling is turned off (``isolation_level =
  None`` at connect) and SQLAlchemy's ``begin`` event emits the ``BEGIN``.

Synchronous engine; Trio code calls it through :meth:`Database.write_async`
and :meth:`Database.read_async`, which run the call in a worker thread
(``trio.to_thread.run_sync``), writers through one ``CapacityLimiter(1)`` so
that a process's own writers queue in Trio rather than in SQLite's busy wait.

Every column that holds JSON holds a JSON text (``sqlalchemy.JSON`` on
SQLite). Times are seconds since the epoch (floats, UTC). The schema is
made by the Alembic migrations of :mod:`arena.server.migrate` (never by
``metadata.create_all`` outside tests); :data:`SCHEMA_VERSION` is the head
revision.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import trio
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)

T = TypeVar("T")

#: The head Alembic revision: the schema this code reads and writes.
SCHEMA_VERSION: Final = "0004"
#: Seconds a connection waits for the other process's write lock.
BUSY_TIMEOUT_SECONDS: Final = 30.0
#: The database's file name inside the competition folder's ``db/``.
DATABASE_NAME: Final = "competition.sqlite3"

#: A submission's states (issue 27, "The gate"), in the order they move.
SUBMISSION_STATES: Final = (
    "queued",  # received, waiting for its check (place: by id)
    "check",  # being checked, sealed
    "validation",  # its validation table is chosen or playing
    "ranked",  # passed: plays ladder tables
    "failed",  # a step failed: failed_step, reason, check_output
    "superseded",  # replaced by a newer one before its check, or by a newer passing one
    "retired",  # left ranked play (8 faults in a row, a participant revoked)
)
#: A table's states.
TABLE_STATES: Final = ("chosen", "playing", "done", "void")
#: A table's numberings, each counting from 0 on its own.
NUMBERINGS: Final = ("ladder", "validation")
#: A participant's states.
PARTICIPANT_STATES: Final = ("active", "suspended", "revoked")
#: The steps of the gate (``failed_step``).
STEPS: Final = ("check", "validation", "ranked")
#: A submission's kinds: one Python file, or a zip with ``bot.toml`` at its root.
KINDS: Final = ("py", "zip")

metadata = MetaData()

#: Key-value settings of the competition: ``key_sha256`` (the key file's
#: SHA-256, hex), ``schema_version``, ``created_at``, ``settings_sha256``.
meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

#: One row per participant (``--add NAME``); ``status`` in :data:`PARTICIPANT_STATES`.
participants = Table(
    "participants",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("status", String(16), nullable=False, default="active"),
    Column("created_at", Float, nullable=False),
)

#: API tokens: only their SHA-256 (hex) is stored; several per participant.
tokens = Table(
    "tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=False),
    Column("sha256", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

#: Submissions, immutable once received (their files are stored by SHA-256).
#: ``failed_step`` in :data:`STEPS`, ``reason`` one line, ``check_output`` the
#: check's report (for its owner only); ``ranked_games`` games played at ladder
#: tables; ``joined_table`` the first ladder table number chosen after it
#: became ranked (the focus rule counts from there); ``faults_in_row`` ranked
#: games in a row in which it crashed or was struck out; ``attempts`` runs of
#: its current step (a step past its time budget runs once more).
submissions = Table(
    "submissions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("size", Integer, nullable=False, default=0),
    Column("received_at", Float, nullable=False),
    Column("status", String(16), nullable=False, default="queued"),
    Column("failed_step", String(16), nullable=True),
    Column("reason", Text, nullable=True),
    Column("check_output", Text, nullable=True),
    Column("ranked_games", Integer, nullable=False, default=0),
    Column("joined_table", Integer, nullable=True),
    Column("faults_in_row", Integer, nullable=False, default=0),
    Column("attempts", Integer, nullable=False, default=0),
    Column("step_started_at", Float, nullable=True),
    Column("ranked_at", Float, nullable=True),
    Index("ix_submissions_participant", "participant_id"),
    Index("ix_submissions_status", "status"),
)

#: Tables of games: ``numbering`` in :data:`NUMBERINGS`, ``number`` from 0 in
#: its numbering; ``seating``: the four entrants (labels, :func:`arena.server.store.entrant_label`)
#: in rotation 0's seat order; ``fold_through``: the ladder tables folded into
#: the ratings it was chosen from; ``focus``: the entrant it was chosen for;
#: ``active``: the entrants that could be chosen; ``submission_id``: the
#: submission a validation table validates; ``status`` in :data:`TABLE_STATES`,
#: ``void_reason`` one line; ``attempt``: plays started (a replay after a
#: restart or a house bot's fault at validation adds one).
tables = Table(
    "tables",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("numbering", String(16), nullable=False),
    Column("number", Integer, nullable=False),
    Column("deal_key", String(32), nullable=False),
    Column("seating", JSON, nullable=False),
    Column("fold_through", Integer, nullable=False, default=0),
    Column("focus", String(64), nullable=True),
    Column("active", JSON, nullable=False),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=True),
    Column("status", String(16), nullable=False, default="chosen"),
    Column("void_reason", Text, nullable=True),
    Column("attempt", Integer, nullable=False, default=0),
    Column("chosen_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
    UniqueConstraint("numbering", "number", name="uq_tables_numbering_number"),
    Index("ix_tables_status", "status"),
)

#: The games of a table: one per rotation (0..3), its game record (the
#: ``games.jsonl`` line, :class:`arena.protocol.records.GameRecordJSON`).
games = Table(
    "games",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("table_id", Integer, ForeignKey("tables.id"), nullable=False),
    Column("rotation", Integer, nullable=False),
    Column("record", JSON, nullable=False),
    UniqueConstraint("table_id", "rotation", name="uq_games_table_rotation"),
)

#: The rating fold, one snapshot per point reached: ``through`` = ladder
#: tables 0..through-1 are folded (void ones skipped), with each entrant's
#: TrueSkill ``mu``, ``sigma`` and rated ``games``. Table t is chosen from
#: the snapshot ``through = max(0, t - B)``; the newest is the standings'.
ratings = Table(
    "ratings",
    metadata,
    Column("through", Integer, primary_key=True),
    Column("entrant", String(64), primary_key=True),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=True),
    Column("mu", Float, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("games", Integer, nullable=False),
)


# -- issue 28 (web: sessions, invites, display names) tables go below this line --


# -- issue 28 (web: organiser actions, visibility) tables go below this line --


# -- issue 29 (Dask workers, lost work) tables go below this line --

#: A worker's states in :data:`workers`.
WORKER_STATES: Final = ("admitted", "refused", "flagged")

#: The Dask workers the runner has seen (issue 29): one row per event, by
#: ``address`` (``tls://host:port``) and ``name``; ``status`` in
#: :data:`WORKER_STATES`: ``admitted`` (its join checked), ``refused`` (its
#: join check failed: retired), ``flagged`` (a record it returned was refused
#: by the server's re-check: retired); ``reason`` one line.
workers = Table(
    "workers",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("address", String(256), nullable=False),
    Column("name", String(256), nullable=False),
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=True),
    Column("at", Float, nullable=False),
    Index("ix_workers_status", "status"),
)


# -- issue 30 (deadline, final, gauntlet, challenges) tables go below this line --


# -- issue 30 (close, export, downloads) tables go below this line --


def _on_connect(dbapi_connection: sqlite3.Connection, record: Any) -> None:
    # The dialect's recipe: stop the driver from emitting BEGIN itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _engine(path: Path, begin: str) -> Engine:
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )
    event.listen(engine, "connect", _on_connect)

    def on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(begin)

    event.listen(engine, "begin", on_begin)
    return engine


def set_wal(path: Path) -> None:
    """Put the database at ``path`` in WAL mode (persistent: done once, at
    init; creates the file if missing).

    Raises:
        RuntimeError: SQLite refused (a file system without shared memory).
    """
    conn = sqlite3.connect(path)
    try:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    finally:
        conn.close()
    if str(mode).lower() != "wal":
        raise RuntimeError(f"SQLite could not put {path} in WAL mode (journal mode {mode})")


class Database:
    """The competition's database file, with a writer and a reader engine.

    Args:
        path: the SQLite file (made by :func:`arena.server.migrate.migrate`).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.writer = _engine(self.path, "BEGIN IMMEDIATE")
        self.reader = _engine(self.path, "BEGIN")
        self.write_limiter = trio.CapacityLimiter(1)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), committed at the end of
        the block, rolled back if it raises."""
        with self.writer.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (a consistent snapshot; ``BEGIN``)."""
        with self.reader.begin() as conn:
            yield conn

    def run_write(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` in one write transaction; its result."""
        with self.write() as conn:
            return fn(conn, *args)

    def run_read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(conn, *args)`` in one read transaction; its result."""
        with self.read() as conn:
            return fn(conn, *args)

    async def write_async(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run_write` from Trio: in a worker thread, one writer at a time
        (:attr:`write_limiter`)."""
        return await trio.to_thread.run_sync(self.run_write, fn, *args, limiter=self.write_limiter)

    async def read_async(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run_read` from Trio, in a worker thread."""
        return await trio.to_thread.run_sync(self.run_read, fn, *args)

    def close(self) -> None:
        """Close every pooled connection."""
        self.writer.dispose()
        self.reader.dispose()
