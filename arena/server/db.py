"""The competition server's database: SQLAlchemy 2 Core tables on SQLite or
PostgreSQL.

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

On PostgreSQL (``serve --init --database postgresql://...``: psycopg 3
through the same synchronous engine) the same contract holds with the
server's own means: a write transaction first takes a transaction-scoped
advisory lock (``pg_advisory_xact_lock``, :data:`WRITE_LOCK`), so writers of
every process go one at a time as ``BEGIN IMMEDIATE`` makes them on SQLite,
and each statement of a write (``READ COMMITTED``) sees every write committed
before; a read transaction is ``REPEATABLE READ, READ ONLY`` (one snapshot,
as on SQLite); ``lock_timeout`` is :data:`BUSY_TIMEOUT_SECONDS`. PostgreSQL's
text cannot hold NUL: a NUL in a string parameter (a bot's output) is stored
as U+FFFD. The URL never holds the password (:func:`parse_postgres_url`
refuses one): it comes from a file (:func:`read_password_file`) or libpq's
own ``PGPASSWORD`` / ``~/.pgpass``.

Pools are sized to the limiters: the writer engine holds
``1 + POOL_OVERFLOW`` connections (one writer at a time from Trio, the rest
for synchronous callers such as the command line), the reader engine
``readers + POOL_OVERFLOW`` (:data:`READERS` read transactions at once from
Trio, :attr:`Database.read_limiter`). A runner and a web process each hold
at most ``READERS + 2 * POOL_OVERFLOW + 2`` connections, plus the runner's
lock (:mod:`arena.server.runlock`).

Every column that holds JSON holds a JSON text (``sqlalchemy.JSON``: a JSON
text on SQLite, ``json`` on PostgreSQL), written by :func:`json_dumps`
(orjson: compact, UTF-8) and read by :func:`json_loads`. Times are seconds since the epoch
(floats, UTC). The schema is made by the Alembic migrations of :mod:`arena.server.migrate` (never by
``metadata.create_all`` outside tests); :data:`SCHEMA_VERSION` is the head
revision.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson
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
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

T = TypeVar("T")

#: The head Alembic revision: the schema this code reads and writes.
SCHEMA_VERSION: Final = "0006"
#: Seconds a connection waits for the other process's write lock.
BUSY_TIMEOUT_SECONDS: Final = 30.0
#: The database's file name inside the competition folder's ``db/``.
DATABASE_NAME: Final = "competition.sqlite3"
#: Read transactions one process runs at once from Trio (its reader pool's size).
READERS: Final = 8
#: Connections each pool may open beyond its limiter's tokens (synchronous
#: callers outside Trio: the command line, start-up, recovery).
POOL_OVERFLOW: Final = 2
#: SQLAlchemy's driver for PostgreSQL: psycopg 3 (the ``[server-postgres]`` extra).
POSTGRES_DRIVER: Final = "postgresql+psycopg"
#: The advisory lock key space of the arena on PostgreSQL (the first key of
#: the two-key form), and the second keys: every write transaction's lock
#: and the one runner's (:mod:`arena.server.runlock`).
LOCK_SPACE: Final = 0x48_41  # "HA"
WRITE_LOCK: Final = 1
RUNNER_LOCK: Final = 2

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
NUMBERINGS: Final = ("ladder", "validation", "final", "gauntlet", "challenge", "practice")
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
    # Revision 0002 (issue 28): the name pages show, and its case-folded key
    # (unique: display names are unique ignoring case; arena.server.sessions).
    Column("display_name", String(64), nullable=True),
    Column("display_key", String(64), nullable=True),
    Index("ix_participants_display_key", "display_key", unique=True),
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

#: A session's and a sign-in link's roles.
SIGN_IN_ROLES: Final = ("participant", "organiser")

#: Browser sessions (:mod:`arena.server.sessions`): only the SHA-256 (hex) of
#: the session id is stored; ``role`` in :data:`SIGN_IN_ROLES`
#: (``participant_id`` set for a participant); ``ended_at`` set at sign-out,
#: at a later sign-in from the same browser, or by the organiser.
sessions = Table(
    "sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("sha256", String(64), nullable=False, unique=True),
    Column("role", String(16), nullable=False),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("ended_at", Float, nullable=True),
    Index("ix_sessions_participant", "participant_id"),
)

#: One-time sign-in links: the organiser's (``serve --init``,
#: ``--organiser-link``) and participants' invites; the SHA-256 (hex) of the
#: link's secret only; ``used_at`` set when it is exchanged for a session.
invites = Table(
    "invites",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("sha256", String(64), nullable=False, unique=True),
    Column("role", String(16), nullable=False),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("used_at", Float, nullable=True),
)


# -- issue 28 (web: organiser actions, visibility) tables go below this line --

#: An organiser action's kinds (:mod:`arena.server.actions`).
ACTION_KINDS: Final = ("suspend", "restore", "revalidate", "replay", "void")
#: An organiser action's states: recorded by the web process (``pending``),
#: then ``applied`` or ``refused`` (with ``result``, one line) by the runner.
ACTION_STATES: Final = ("pending", "applied", "refused")

#: Organiser actions, recorded by the web process and applied by the runner:
#: ``kind`` in :data:`ACTION_KINDS` on a participant, a submission or a
#: ladder table; ``reason`` the organiser's (a void's reason; cleaned);
#: ``result`` one line; ``refold`` (a replay or void of a table that was
#: folded: ``{"from": t, "through": n, "ratings": {entrant: [mu, sigma, games]}}``,
#: the fold made again from table t, recorded at ``refolded_at``).
actions = Table(
    "actions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=True),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=True),
    Column("table_id", Integer, ForeignKey("tables.id"), nullable=True),
    Column("reason", Text, nullable=True),
    Column("status", String(16), nullable=False, default="pending"),
    Column("result", Text, nullable=True),
    Column("requested_at", Float, nullable=False),
    Column("applied_at", Float, nullable=True),
    Column("refold", JSON, nullable=True),
    Column("refolded_at", Float, nullable=True),
    Index("ix_actions_status", "status"),
)


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

#: A participant's pinned final submission (at most one; set before the
#: deadline through ``POST /api/final/pin``). Without a row the final plays
#: its latest passing submission received before the deadline.
pins = Table(
    "pins",
    metadata,
    Column("participant_id", Integer, ForeignKey("participants.id"), primary_key=True),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("pinned_at", Float, nullable=False),
)

#: The class's eligible participants, frozen when the final starts
#: (:func:`arena.server.final.start_final`): each one's final submission,
#: its ladder rank and conservative rating then, and ``seed`` (1-based
#: place among the finalists, ``None`` when not a finalist). The gauntlet
#: plays every row's submission.
eligible = Table(
    "eligible",
    metadata,
    Column("participant_id", Integer, ForeignKey("participants.id"), primary_key=True),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("ladder_rank", Integer, nullable=False),
    Column("ladder_conservative", Float, nullable=False),
    Column("seed", Integer, nullable=True),
)

#: Challenges: a participant's request for an unranked table against up to
#: three ``opponents`` (entrant labels, JSON list); ``status`` ``waiting``,
#: ``chosen`` (``table_number``: its ``challenge`` table) or ``refused``
#: (``reason``, one line).
challenges = Table(
    "challenges",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=False),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("opponents", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("status", String(16), nullable=False, default="waiting"),
    Column("table_number", Integer, nullable=True),
    Column("reason", Text, nullable=True),
    Index("ix_challenges_participant", "participant_id"),
)

#: The final's fresh rating fold (TrueSkill, tau 0), one snapshot per point
#: reached, as ``ratings`` is the ladder's: ``through`` = final tables
#: 0..through-1 folded (void ones skipped). Written by the runner as final
#: tables finish (:func:`arena.server.final.fold_final`).
final_ratings = Table(
    "final_ratings",
    metadata,
    Column("through", Integer, primary_key=True),
    Column("entrant", String(64), primary_key=True),
    Column("mu", Float, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("games", Integer, nullable=False),
)

#: Participants who let others challenge them (no row: they do not).
challenge_consent = Table(
    "challenge_consent",
    metadata,
    Column("participant_id", Integer, ForeignKey("participants.id"), primary_key=True),
    Column("allow", Integer, nullable=False, default=0),
    Column("set_at", Float, nullable=False),
)


# -- issue 30 (close, export, downloads) tables go below this line --

#: The table key (``HMAC(subkey("deal"), deal_key)``, 64 hex digits,
#: :meth:`arena.core.keys.MasterKey.table_key`) of each finished table,
#: written by the runner when the table ends (never before: a chosen table's
#: deals stay secret); the web process hands it to the participants who sat
#: at the table with its download (:mod:`arena.server.downloads`). It opens
#: that table's deals only, never another's nor a bot seed.
table_keys = Table(
    "table_keys",
    metadata,
    Column("table_id", Integer, ForeignKey("tables.id"), primary_key=True),
    Column("table_key", String(64), nullable=False),
)


class DatabaseURLError(ValueError):
    """A database URL or password file the server refuses (one line)."""


def parse_postgres_url(text: str) -> URL:
    """A PostgreSQL URL (``postgresql://USER@HOST[:PORT]/NAME``, libpq's
    query options such as ``?host=/run/postgresql`` or ``?sslmode=verify-full``
    allowed) with SQLAlchemy's psycopg 3 driver set.

    Raises:
        DatabaseURLError: not a PostgreSQL URL, no database name, or a
            password in it (a command line is readable by every user of the
            machine: the password goes in a file or ``PGPASSWORD``).
    """
    try:
        url = make_url(text)
    except ArgumentError:
        raise DatabaseURLError(f"not a database URL: {text[:80]!r}") from None
    if url.drivername not in ("postgresql", POSTGRES_DRIVER, "postgres"):
        raise DatabaseURLError(
            f"--database takes a PostgreSQL URL (postgresql://USER@HOST/NAME), "
            f"not {url.drivername}://"
        )
    if url.password is not None or "password" in url.query:
        raise DatabaseURLError(
            "the database URL holds a password: give it in a file "
            "(--database-password-file F, owner-only) or PGPASSWORD, never on a command line"
        )
    if not url.database:
        raise DatabaseURLError("the database URL names no database (postgresql://USER@HOST/NAME)")
    return url.set(drivername=POSTGRES_DRIVER)


def read_password_file(path: Path) -> str:
    """The database password: the first line of ``path``, a file its owner
    alone may read (as the key file and token files).

    Raises:
        DatabaseURLError: unreadable, readable by others, or empty.
    """
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text(encoding="utf-8")[:4096]
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DatabaseURLError(f"database password file {path}: {reason}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise DatabaseURLError(
            f"database password file {path} can be read by other users "
            f"({stat.filemode(mode)}): make it owner-only (chmod 600 {path})"
        )
    lines = text.splitlines()
    if not lines or not lines[0]:
        raise DatabaseURLError(f"database password file {path} is empty")
    return lines[0]


@dataclass(frozen=True)
class DatabaseLocation:
    """Where a competition's database is: a SQLite file (``path``) or a
    PostgreSQL database (``url``, without a password, and the ``password``
    read from its file, ``None`` to leave it to libpq: ``PGPASSWORD``,
    ``~/.pgpass``, or no password on a trusted socket). Picklable: the runner
    hands it to the web process."""

    path: Path | None = None
    url: str | None = None
    password: str | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.url is None):
            raise ValueError("a database is a SQLite path or a PostgreSQL URL, exactly one")

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return "sqlite" if self.path is not None else "postgresql"

    def describe(self) -> str:
        """For messages: the path, or the URL (never a password)."""
        if self.path is not None:
            return str(self.path)
        assert self.url is not None
        return make_url(self.url).render_as_string(hide_password=True)

    def __repr__(self) -> str:  # never the password
        return f"DatabaseLocation({self.describe()!r})"


def _on_connect(dbapi_connection: sqlite3.Connection, record: Any) -> None:
    # The dialect's recipe: stop the driver from emitting BEGIN itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def json_dumps(value: Any) -> str:
    """The JSON text a JSON column stores: orjson's (compact, UTF-8, keys in
    their order, non-string keys as strings as :func:`json.dumps` makes
    them), about ten times faster than the standard library's on a game
    record (about 100 KB with its transcripts: storing it was a third of the
    runner's own CPU, ``benchmarks/server_load.py``); the standard library's
    for what orjson refuses (an integer beyond 64 bits, a lone surrogate).
    NaN and the infinities, which JSON has not, are stored as ``null`` (the
    standard library wrote ``NaN``, which PostgreSQL's ``json`` refuses)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value)


def json_loads(text: str | bytes) -> Any:
    """A JSON column's value: orjson's parse; the standard library's for a
    text orjson refuses (a ``NaN`` stored before :func:`json_dumps`).

    Raises:
        ValueError: not JSON.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _engine(path: Path, begin: str, pool_size: int) -> Engine:
    engine = create_engine(
        f"sqlite:///{path}",
        json_serializer=json_dumps,
        json_deserializer=json_loads,
        connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        pool_size=pool_size,
        max_overflow=POOL_OVERFLOW,
        pool_timeout=BUSY_TIMEOUT_SECONDS,
    )
    event.listen(engine, "connect", _on_connect)

    def on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(begin)

    event.listen(engine, "begin", on_begin)
    return engine


def _no_nul(params: Any) -> Any:
    # PostgreSQL's text refuses NUL (psycopg raises DataError); a bot's output may hold one.
    if isinstance(params, dict):
        return {k: _no_nul(v) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return type(params)(_no_nul(v) for v in params)
    if isinstance(params, str) and "\x00" in params:
        return params.replace("\x00", "\ufffd")
    return params


def postgres_engine(location: DatabaseLocation, pool_size: int | None) -> Engine:
    """An engine on the PostgreSQL database of ``location``: pooled
    (``pool_size`` plus :data:`POOL_OVERFLOW`, connections checked before use
    so a restarted database server is reconnected), or one connection per
    use (``pool_size`` ``None``: the runner's lock). Each connection has
    ``lock_timeout`` :data:`BUSY_TIMEOUT_SECONDS` and names itself
    ``hearts-arena`` (``pg_stat_activity``)."""
    assert location.url is not None
    connect: dict[str, Any] = {
        "connect_timeout": int(BUSY_TIMEOUT_SECONDS),
        "application_name": "hearts-arena",
        "options": f"-c lock_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}",
    }
    if location.password is not None:
        connect["password"] = location.password
    url = make_url(location.url)
    json_args: dict[str, Any] = {"json_serializer": json_dumps, "json_deserializer": json_loads}
    if pool_size is None:
        engine = create_engine(url, connect_args=connect, poolclass=NullPool, **json_args)
    else:
        engine = create_engine(
            url,
            connect_args=connect,
            **json_args,
            pool_size=pool_size,
            max_overflow=POOL_OVERFLOW,
            pool_timeout=BUSY_TIMEOUT_SECONDS,
            pool_pre_ping=True,
        )

    def no_nul(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> tuple[str, Any]:
        return statement, _no_nul(params)

    event.listen(engine, "before_cursor_execute", no_nul, retval=True)
    return engine


def _postgres_engines(location: DatabaseLocation, readers: int) -> tuple[Engine, Engine]:
    writer = postgres_engine(location, 1)
    reader = postgres_engine(location, readers)

    def on_write(conn: Connection) -> None:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LOCK_SPACE}, {WRITE_LOCK})")

    def on_read(conn: Connection) -> None:
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")

    event.listen(writer, "begin", on_write)
    event.listen(reader, "begin", on_read)
    return writer, reader


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
    """The competition's database, with a writer and a reader engine.

    Args:
        target: the SQLite file (made by :func:`arena.server.migrate.migrate`),
            or a :class:`DatabaseLocation` (SQLite or PostgreSQL).
        readers: read transactions at once from Trio (:attr:`read_limiter`,
            the reader pool's size).

    Attributes:
        location: where it is; ``path`` the SQLite file (``None`` on
            PostgreSQL); ``dialect`` ``"sqlite"`` or ``"postgresql"``.
    """

    def __init__(self, target: Path | DatabaseLocation, readers: int = READERS) -> None:
        if not isinstance(target, DatabaseLocation):
            target = DatabaseLocation(Path(target))
        location = target
        self.location = location
        self.path: Path | None = location.path
        self.dialect = location.dialect
        if location.path is not None:
            self.writer = _engine(location.path, "BEGIN IMMEDIATE", 1)
            self.reader = _engine(location.path, "BEGIN", readers)
        else:
            self.writer, self.reader = _postgres_engines(location, readers)
        self.write_limiter = trio.CapacityLimiter(1)
        self.read_limiter = trio.CapacityLimiter(readers)
        self._on_close: list[Callable[[], None]] = []

    def describe(self) -> str:
        """For messages: the file or the URL (never a password)."""
        return self.location.describe()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE``; on PostgreSQL the write
        advisory lock), committed at the end of the block, rolled back if it raises."""
        with self.writer.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (a consistent snapshot; ``BEGIN``, on
        PostgreSQL ``REPEATABLE READ, READ ONLY``)."""
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
        """:meth:`run_read` from Trio, in a worker thread, at most
        :attr:`read_limiter`'s tokens at once (the reader pool's size)."""
        return await trio.to_thread.run_sync(self.run_read, fn, *args, limiter=self.read_limiter)

    def close_with(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` when the database is closed (the runner's lock goes then)."""
        self._on_close.append(fn)

    def close(self) -> None:
        """Close every pooled connection (and what :meth:`close_with` was given)."""
        while self._on_close:
            self._on_close.pop()()
        self.writer.dispose()
        self.reader.dispose()
