"""``hearts-arena submit`` and ``status`` (issue 27) against the web
application served by Hypercorn on a free port, a real SQLite file in a
temporary folder, and a stand-in for the runner that moves submissions
through the gate with the store's queries (as the runner does)."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from server_templates import migrated_sqlite

from arena.cli import submit as submit_module
from arena.cli.main import main
from arena.server import db, store
from arena.server.web import WebConfig, hypercorn_config, make_app
from arena.server.webstore import RateLimit

BOT_PY = b"import sys\nfor line in sys.stdin:\n    pass\n"
OUTPUT = "check: FAIL\nTraceback (most recent call last):\n  ZeroDivisionError\x1b[2J"


def rank(conn: Any, sid: int) -> None:
    store.start_step(conn, sid, "check", 0.0)
    store.record_step(conn, sid, "check", True, 0.0, output="check: PASS")
    store.start_step(conn, sid, "validation", 0.0)
    store.record_step(conn, sid, "validation", True, 0.0)


def fail_check(conn: Any, sid: int) -> None:
    store.start_step(conn, sid, "check", 0.0)
    store.record_step(conn, sid, "check", False, 0.0, "crashed: ZeroDivisionError", OUTPUT)


@contextmanager
def serving(
    tmp_path: Path, step: Callable[[Any, int], None] = rank, rate: RateLimit | None = None
) -> Iterator[tuple[str, db.Database]]:
    """The web application on 127.0.0.1 (a free port), with a stand-in
    runner applying ``step`` to every queued submission; yields the URL."""
    from hypercorn.trio import serve

    path = tmp_path / db.DATABASE_NAME
    migrated_sqlite(path)  # set_wal and migrate, from a template (server_templates)
    database = db.Database(path)
    (tmp_path / "uploads").mkdir()
    config = WebConfig(database, tmp_path / "uploads", rate=rate or RateLimit())
    ready: queue.Queue[str] = queue.Queue()
    stop = threading.Event()

    async def runner() -> None:
        while True:
            for s in await database.read_async(store.submissions_in, "queued"):
                await database.write_async(step, s.id)
            await trio.sleep(0.05)

    async def server() -> None:
        shutdown = trio.Event()
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                partial(
                    serve,
                    make_app(config),
                    hypercorn_config("127.0.0.1:0"),
                    shutdown_trigger=shutdown.wait,
                )
            )
            ready.put(binds[0])
            nursery.start_soon(runner)
            while not stop.is_set():  # noqa: ASYNC110 (a threading.Event)
                await trio.sleep(0.05)
            shutdown.set()
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(server,), daemon=True)
    thread.start()
    try:
        yield ready.get(timeout=60), database
    finally:
        stop.set()
        thread.join(30)
        database.close()


def participant(database: db.Database, name: str, token_file: Path) -> str:
    token = f"{name}-token-" + "t" * 30

    def add(conn: Any) -> None:
        p = store.add_participant(conn, name, 0.0)
        store.add_token(conn, p.id, store.token_hash(token), 0.0)

    database.run_write(add)
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    return token


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_module, "POLL_SECONDS", 0.05)
    monkeypatch.delenv(submit_module.TOKEN_VARIABLE, raising=False)


def test_submit_py_wait_until_ranked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bot = tmp_path / "mine.py"
    bot.write_bytes(BOT_PY)
    with serving(tmp_path) as (url, database):
        participant(database, "ann", tmp_path / "token")
        code = main(["submit", url, str(bot), "--token-file", str(tmp_path / "token"), "--wait"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert out.startswith("submission 1 received (py, 43 bytes, sha256 ")
        assert (
            "submission 1 [ranked] check: passed, validation: passed, ranked: playing (0 games)"
            in err
        )
        with database.read() as conn:
            assert store.submission(conn, 1).status == "ranked"  # type: ignore[union-attr]


def test_submit_folder_wait_fails_at_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text('command = "main.py"\n')
    (folder / "main.py").write_bytes(BOT_PY)
    (folder / "link.py").symlink_to("/etc/passwd")  # left out of the zip made here
    with serving(tmp_path, fail_check) as (url, database):
        participant(database, "ann", tmp_path / "token")
        args = ["submit", url, str(folder), "--token-file", str(tmp_path / "token"), "--wait"]
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 5
        assert "submission 1 received (zip" in out
        assert err.splitlines()[-1] == (
            "error: submission 1 failed at check: crashed: ZeroDivisionError"
        )
        assert "ZeroDivisionError\\x1b[2J" in err  # the owner's output, escapes shown
        # status: the step, its reason and the output
        assert main(["status", url, "--token-file", str(tmp_path / "token")]) == 0
        out, _ = capsys.readouterr()
        assert out.splitlines()[:2] == [
            "ann: 1 submission(s)",
            "submission 1 [failed] check: failed (crashed: ZeroDivisionError), "
            "validation: skipped, ranked: skipped",
        ]
        assert "    Traceback (most recent call last):" in out
        stored = next(p for p in (tmp_path / "uploads").iterdir())
        assert sorted(p.name for p in stored.iterdir()) == ["bot.toml", "main.py"]


def test_token_file_others_may_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    with serving(tmp_path) as (url, database):
        token = participant(database, "ann", token_file)
        token_file.chmod(0o644)
        assert main(["status", url, "--token-file", str(token_file)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"error: token file {token_file} can be read by other users (-rw-r--r--): make it "
            f"owner-only (chmod 600 {token_file})\n"
        )
        assert main(["status", url]) == 2
        assert "no token: give --token-file F or set HEARTS_ARENA_TOKEN" in capsys.readouterr().err
        monkeypatch.setenv("HEARTS_ARENA_TOKEN", token)
        assert main(["status", url]) == 0
        assert capsys.readouterr().out == "ann: 0 submission(s)\n"
        monkeypatch.setenv("HEARTS_ARENA_TOKEN", "wrong")
        assert main(["status", url]) == 2
        assert "refused (401): unknown or revoked token" in capsys.readouterr().err


def test_rate_limited_and_unreachable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bot = tmp_path / "mine.py"
    bot.write_bytes(BOT_PY)
    token = tmp_path / "token"
    with serving(tmp_path, rate=RateLimit(interval_seconds=600, per_day=20)) as (url, database):
        participant(database, "ann", token)
        assert main(["submit", url, str(bot), "--token-file", str(token)]) == 0
        bot.write_bytes(BOT_PY + b"# two\n")
        assert main(["submit", url, str(bot), "--token-file", str(token)]) == 4
        err = capsys.readouterr().err
        assert "too many submissions (one per 600 s, 20 a day)" in err
        retry = int(err.rsplit("Retry-After: ", 1)[1].split(" ")[0])
        assert 590 <= retry <= 600
    # the server is gone now
    assert main(["status", url, "--token-file", str(token)]) == 4
    assert f"cannot reach {url}" in capsys.readouterr().err


def test_submit_is_registered_in_the_help() -> None:
    from arena.cli.main import build_parser

    text = build_parser().format_help()
    assert "submit" in text and "status" in text
    assert os.environ.get(submit_module.TOKEN_VARIABLE) is None
