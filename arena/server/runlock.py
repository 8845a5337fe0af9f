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

A lock can also be lost while its runner runs: on PostgreSQL the session
ends (the server restarts, ``pg_terminate_backend``, the network drops) and
the runner's other connections reconnect; with SQLite the lock file is
removed or replaced, and a second runner would lock a new one.
:meth:`RunnerLock.lost` says so; the runner looks every
:data:`arena.server.runner.LOCK_CHECK_SECONDS` and stops.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable
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


class RunnerLockLost(RunnerLockError):
    """The runner's lock went while it ran (one line saying how)."""


class RunnerLock:
    """A held runner lock: :meth:`lost` says whether it still holds.

    Made by :func:`hold_runner_lock`; released with the database
    (:meth:`arena.server.db.Database.close`). ``check`` is the way to look:
    ``None`` while held, else one line saying how it went.
    """

    def __init__(self, check: Callable[[], str | None]) -> None:
        self._check = check

    def lost(self) -> str | None:
        """``None`` while the lock holds, else how it went (one line).
        Blocks for a database round trip on PostgreSQL (call it from a
        thread); never raises."""
        return self._check()


def hold_runner_lock(comp: Competition) -> RunnerLock:
    """Take the competition's runner lock, held until ``comp.database`` is
    closed.

    Raises:
        RunnerLockError: another runner holds it.
        FolderError: the lock cannot be taken (the lock file cannot be made,
            the database cannot be reached).
    """
    if comp.database.dialect == "postgresql":
        return _hold_advisory(comp.database)
    return _hold_file(comp.paths.runner / LOCK_FILE, comp.database)


def _hold_file(path: Path, database: db.Database) -> RunnerLock:
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

    held = os.fstat(fd)
    closed = False

    def release() -> None:
        nonlocal closed
        closed = True
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the one descriptor drops the flock

    def check() -> str | None:
        if closed:
            return "the runner lock was released (the database is closed)"
        try:
            now = os.stat(path, follow_symlinks=False)
        except OSError as exc:
            return f"the runner lock file {path} is gone ({exc.strerror or exc})"
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            return f"the runner lock file {path} was replaced by another file"
        return None

    database.close_with(release)
    return RunnerLock(check)


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


def _hold_advisory(database: db.Database) -> RunnerLock:
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

    def check() -> str | None:
        try:
            held = conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    "AND classid = :space AND objid = :key AND granted "
                    "AND pid = pg_backend_pid()"
                ),
                {"space": db.LOCK_SPACE, "key": db.RUNNER_LOCK},
            ).scalar_one()
            conn.commit()
        except SQLAlchemyError as exc:
            first = str(exc.orig if hasattr(exc, "orig") else exc).strip().splitlines()
            return (
                f"the session holding the runner lock in {database.describe()} ended "
                f"({first[0] if first else type(exc).__name__})"
            )
        if not held:
            return f"the runner lock's session in {database.describe()} no longer holds it"
        return None

    database.close_with(release)
    return RunnerLock(check)
