"""The runner lock while a runner runs (arena/server/runlock.py, issue 29): a
lock that goes (the PostgreSQL session ends; the SQLite lock file is removed)
is seen, and the runner stops with one line instead of playing beside a
second runner."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import trio
from sqlalchemy import create_engine, text

from arena.server import db, folder
from arena.server import runner as runner_module
from arena.server.runlock import LOCK_FILE, RunnerLockError, RunnerLockLost, hold_runner_lock
from arena.server.runner import RunnerConfig, start_runner

# The database fixtures (SQLite, a private PostgreSQL): tests/server/db_fixtures.py.
pytest_plugins = ["db_fixtures"]


def _end_lock_session(url: str) -> int:
    """End, from another session, the session holding the runner lock (as a
    server restart or ``pg_terminate_backend`` by an administrator would);
    returns how many sessions were ended."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            ended = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
                    "WHERE locktype = 'advisory' AND classid = :space AND objid = :key "
                    "AND granted"
                ),
                {"space": db.LOCK_SPACE, "key": db.RUNNER_LOCK},
            ).scalar_one()
            conn.commit()
            return int(ended)
    finally:
        engine.dispose()


def test_a_held_lock_says_when_it_went(each_database: str | None, tmp_path: Path) -> None:
    root = tmp_path / "comp"
    folder.init_folder(root)
    first = folder.open_folder(root)
    second = folder.open_folder(root)
    try:
        lock = hold_runner_lock(first)
        assert lock.lost() is None
        assert lock.lost() is None  # looking does not change it
        with pytest.raises(RunnerLockError):
            hold_runner_lock(second)
        if each_database is None:
            (root / "runner" / LOCK_FILE).unlink()
            reason = lock.lost()
            assert reason is not None and f"{LOCK_FILE} is gone" in reason
        else:
            assert _end_lock_session(each_database) == 1
            reason = lock.lost()
            assert reason is not None and "the session holding the runner lock" in reason
            assert f"in {first.database.describe()} ended (" in reason
        # What the look guards against: a second runner now takes a lock of its own.
        other = hold_runner_lock(second)
        assert other.lost() is None
        assert lock.lost() is not None
    finally:
        first.close()
        second.close()


def test_a_replaced_lock_file_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "comp"
    folder.init_folder(root)
    comp = folder.open_folder(root)
    try:
        lock = hold_runner_lock(comp)
        path = root / "runner" / LOCK_FILE
        path.unlink()
        path.write_text("4242\n")
        reason = lock.lost()
        assert reason == f"the runner lock file {path} was replaced by another file"
    finally:
        comp.close()
    assert lock.lost() == "the runner lock was released (the database is closed)"


def test_a_runner_whose_lock_went_stops_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_module, "LOCK_CHECK_SECONDS", 0.05)
    root = tmp_path / "comp"
    folder.init_folder(root)
    log = io.StringIO()
    r = start_runner(root, RunnerConfig(sandbox=False, ladder_tables=0, log=log))
    try:
        (root / "runner" / LOCK_FILE).unlink()

        async def main() -> None:
            with trio.fail_after(60):  # a runner that does not look runs on
                await r.run()

        with pytest.raises(RunnerLockLost) as stopped:
            trio.run(main)
    finally:
        r.comp.close()
    said = str(stopped.value)
    assert said.startswith(f"the runner lock file {root / 'runner' / LOCK_FILE} is gone")
    assert said.endswith("never plays beside a second runner (start it again)")
    assert "\n" not in said
    events = [json.loads(line)["event"] for line in log.getvalue().splitlines()]
    assert events[0] == "start" and "runner_lock_lost" in events and events[-1] == "stop"
    lost = [json.loads(x) for x in log.getvalue().splitlines() if '"runner_lock_lost"' in x]
    assert lost[0]["reason"].endswith("is gone (No such file or directory)")
