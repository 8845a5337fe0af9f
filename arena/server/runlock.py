"""One runner per competition (issue 29): a second ``hearts-arena serve DIR``
on a competition whose runner runs refuses to start, before it touches a
table, a control group or a bot process (its recovery would kill the first
runner's bots and replay its tables).

* SQLite: an exclusive ``flock`` on ``DIR/runner/runner.lock`` (owner-only;
  the kernel drops it when the runner dies, even by SIGKILL; the descriptor
  is close-on-exec, so no bot, check or web process inherits it). The file
  holds the holder's process id, for the error.
* PostgreSQL: a session advisory lock (``pg_try_advisory_lock``, keys
  :data:`arena.server.db.LOCK_SPACE`, :data:`arena.server.db.RUNNER_LOCK`)
  on a connection of its own, held for the runner's life; the database
  server drops it when that session ends (the runner's death closes its
  socket). It holds for runners on different machines sharing the database.

The lock goes when the database is closed (:meth:`arena.server.db.Database.close`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Final

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from arena.server import db
from arena.server.folder import Competition, FolderError

#: The lock file's name in ``runner/`` (SQLite).
LOCK_FILE: Final = "runner.lock"


class RunnerLockError(FolderError):
    """Another runner holds this competition (one line naming it)."""


def hold_runner_lock(comp: Competition) -> None:
    """Take the competition's runner lock, held until ``comp.database`` is
    closed.

    Raises:
        RunnerLockError: another runner holds it.
        FolderError: the lock cannot be taken (the lock file cannot be made,
            the database cannot be reached).
    """
    if comp.database.dialect == "postgresql":
        _hold_advisory(comp.database)
    else:
        _hold_file(comp.paths.runner / LOCK_FILE, comp.database)


def _hold_file(path: Path, database: db.Database) -> None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise FolderError(f"runner lock {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise RunnerLockError(
            f"another runner (pid {holder or '?'}) is running this competition "
            f"(it holds {path}): stop it before starting one more"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)

    def release() -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the one descriptor drops the flock

    database.close_with(release)


def _holder(conn: Connection) -> str:
    row = conn.execute(
        text(
            "SELECT a.pid, a.client_addr, a.backend_start FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.classid = :space AND l.objid = :key AND l.granted"
        ),
        {"space": db.LOCK_SPACE, "key": db.RUNNER_LOCK},
    ).first()
    if row is None:
        return "a session"
    where = f" from {row.client_addr}" if row.client_addr is not None else " on the local socket"
    return f"the session of backend pid {row.pid}{where}"


def _hold_advisory(database: db.Database) -> None:
    engine = db.postgres_engine(database.location, None)
    try:
        conn = engine.connect()
        got = conn.execute(
            text("SELECT pg_try_advisory_lock(:space, :key)"),
            {"space": db.LOCK_SPACE, "key": db.RUNNER_LOCK},
        ).scalar_one()
        conn.commit()  # the lock is the session's, not the transaction's
        if not got:
            holder = _holder(conn)
            conn.close()
            engine.dispose()
            raise RunnerLockError(
                f"another runner is running this competition: {holder} holds its advisory "
                f"lock in {database.describe()}: stop it before starting one more"
            )
    except SQLAlchemyError as exc:
        engine.dispose()
        raise FolderError(
            f"cannot take the runner lock in {database.describe()}: "
            f"{str(exc.orig if hasattr(exc, 'orig') else exc).splitlines()[0]}"
        ) from None

    def release() -> None:
        # Unlocked before the session ends: the server drops a closed
        # session's locks only once its backend has exited, after the close
        # returns, so a runner started at once could still find it held.
        with contextlib.suppress(SQLAlchemyError):
            conn.execute(
                text("SELECT pg_advisory_unlock(:space, :key)"),
                {"space": db.LOCK_SPACE, "key": db.RUNNER_LOCK},
            )
            conn.commit()
        with contextlib.suppress(SQLAlchemyError):
            conn.close()  # the session ends (a runner that dies: the server drops its lock)
        engine.dispose()

    database.close_with(release)
