"""The web process (issue 27): gone with its parent, even one killed with
SIGKILL (its port free again); as root, running as ``--user`` and unable
to open the key file."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_templates import migrated_sqlite

from arena.server import db, store
from arena.server.webproc import WebProcessError, WebSettings, spawn_web

ROOT = os.geteuid() == 0
USER = "nobody"
TOKEN = "a-token-of-ann-" + "t" * 30
needs_root = pytest.mark.skipif(not ROOT, reason="dropping to --user needs root")


@pytest.fixture
def folder() -> Iterator[Path]:
    """A competition folder as ``serve --init`` makes it: the folder 0711, the
    key 0600 root's, the database and uploads folders the web user's (0700).
    Outside pytest's own temporary folder, which is root's and 0700."""
    yield from _folder()


def _folder() -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="hearts-arena-web-"))
    top.chmod(0o711)
    (top / "key").write_text("00" * 32)
    (top / "key").chmod(0o600)
    (top / "db").mkdir(mode=0o700)
    (top / "uploads").mkdir(mode=0o700)
    path = top / "db" / db.DATABASE_NAME
    migrated_sqlite(path)  # set_wal and migrate, copied from a template (server_templates)
    database = db.Database(path)

    def add(conn: Any) -> None:
        p = store.add_participant(conn, "ann", 0.0)
        store.add_token(conn, p.id, store.token_hash(TOKEN), 0.0)

    database.run_write(add)
    database.close()
    if ROOT:
        uid, gid = _ids(USER)
        for p in [top / "db", top / "uploads", *(top / "db").iterdir()]:
            os.chown(p, uid, gid)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def settings(top: Path) -> WebSettings:
    return WebSettings(
        top / "db" / db.DATABASE_NAME,
        top / "uploads",
        port=0,
        user=USER if ROOT else None,
        pages="public",  # read anonymously here (docs/server-web.md, who sees what)
    )


def status_ids(pid: int) -> dict[str, list[int]]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "Groups"):
            found[key] = [int(v) for v in value.split()]
    return found


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _nice(pid: int, task: str) -> int:
    """The nice value of thread ``task`` of ``pid`` (field 19 of proc(5)'s stat)."""
    stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[16])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Path, Any, int | None]]:
    """A web process started by root as ``--user nobody`` on a folder of
    :func:`folder`'s, listening on a port below 1024 where one is free (else
    one the system picks): the two tests below only look at it and ask it
    (a web process's start is about 3 CPU-seconds). Yields the folder, the
    process and the low port (``None``: none was free). Once both are done
    it is closed and must be gone."""
    if not ROOT:
        pytest.skip("dropping to --user needs root")
    for top in _folder():
        port = next((p for p in range(1023, 900, -1) if port_free(p)), None)
        s = settings(top)
        web = spawn_web(
            WebSettings(s.database, s.uploads, port=port or 0, user=USER, pages="public")
        )
        try:
            yield top, web, port
        finally:
            web.close()
        assert not web.alive()


@needs_root
def test_as_root_runs_as_the_user_and_cannot_open_the_key(
    served: tuple[Path, Any, int | None],
) -> None:
    uid, gid = _ids(USER)
    folder, web, _ = served
    assert status_ids(web.pid) == {"Uid": [uid] * 4, "Gid": [gid] * 4, "Groups": [gid]}
    # serving, every thread of it at nice 10 (the games come first), set only
    # after its start (at nice 10 beside busy loops, the start took minutes)
    assert {_nice(web.pid, task) for task in os.listdir(f"/proc/{web.pid}/task")} == {10}
    # no descriptor of the web process leads to the key
    targets = [os.readlink(f"/proc/{web.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{web.pid}/fd")]
    assert str(folder / "key") not in targets
    # a process with its ids cannot open the key: 0600 root's
    probe = subprocess.run(
        ["cat", str(folder / "key")],
        user=uid,
        group=gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 1 and "Permission denied" in probe.stderr
    # it serves, reading and writing the database as that user
    r = httpx.get(f"{web.url}/api/standings", timeout=30)
    assert r.json() == {
        "competition": {"key_sha256": None, "closed_at": None, "key": None},
        "rated_through": 0,
        "tables_in_play": 0,
        "rows": [],
    }
    headers = {"Authorization": "Bearer " + TOKEN}
    # a zip (its names decoded with a codec loaded before the drop) and a .py
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bot.toml", 'command = "main.py"\n')
        archive.writestr("main.py", "print('hi')\n")
    r = httpx.post(
        f"{web.url}/api/submissions", content=buffer.getvalue(), headers=headers, timeout=30
    )
    assert r.status_code == 201, r.text
    stored = folder / "uploads" / r.json()["sha256"]
    assert (stored.stat().st_uid, (stored / "main.py").stat().st_uid) == (uid, uid)


@needs_root
def test_as_root_without_a_user_is_refused(folder: Path) -> None:
    with pytest.raises(WebProcessError, match="needs --user USER"):
        spawn_web(
            WebSettings(
                folder / "db" / db.DATABASE_NAME, folder / "uploads", port=0, pages="public"
            )
        )


def test_an_address_in_use_is_one_line(folder: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = settings(folder)
        with pytest.raises(WebProcessError, match=f"cannot listen on 127.0.0.1:{port}"):
            spawn_web(WebSettings(s.database, s.uploads, port=port, user=s.user, pages="public"))


PARENT = """
import sys, time
from pathlib import Path
from arena.server.webproc import WebSettings, spawn_web
web = spawn_web(WebSettings(Path(sys.argv[1]), Path(sys.argv[2]), port=0, user=sys.argv[3] or None, pages="public"))
print(web.url.rsplit(":", 1)[1], web.pid, flush=True)
time.sleep(600)
"""


def test_port_free_after_the_parent_is_killed_with_sigkill(folder: Path) -> None:
    s = settings(folder)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(s.database), str(s.uploads), s.user or ""],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        port_text, pid_text = parent.stdout.readline().split()
        port, pid = int(port_text), int(pid_text)
        assert not port_free(port)
        assert httpx.get(f"http://127.0.0.1:{port}/api/standings", timeout=30).status_code == 200
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 60  # a wait, not a timing assertion
        while time.monotonic() < deadline and (_running(pid) or not port_free(port)):
            time.sleep(0.05)
        assert not _running(pid)
        assert port_free(port)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno != errno.ESRCH
    # a zombie (not reaped yet, its parent gone to init) holds no port
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@needs_root
def test_a_port_below_1024_is_bound_by_root_and_served_by_the_user(
    served: tuple[Path, Any, int | None],
) -> None:
    _, web, port = served
    if port is None:
        pytest.skip("no free port below 1024")
    assert web.url == f"http://127.0.0.1:{port}"
    assert status_ids(web.pid)["Uid"] == [_ids(USER)[0]] * 4
    assert httpx.get(f"{web.url}/api/standings", timeout=30).status_code == 200


@pytest.mark.parametrize("how", ["sent", "closed"])
def test_a_stopped_web_process_ends_when_hypercorn_has_closed(
    folder: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Issue 26: the web process's serving loop ends once Hypercorn's ``serve``
    has returned, not after a fixed wait (``SHUTDOWN_GRACE`` seconds at every
    stop before). Run here under a frozen clock (Trio's MockClock, rate 0, no
    autojump): a wait on the clock never ends, so the loop can only end on
    ``serve``'s return, and its stop on the stop pipe, never on a poll (a
    0.1 s poll of an Event before issue 29's load fix). The stop is given
    before it serves: a message on the pipe (``WebProcess.close``), or the
    pipe's other end closed (the parent gone)."""
    import multiprocessing
    import threading

    import trio.testing

    from arena.server import webproc
    from arena.server.web import WebConfig, make_app

    real_run = trio.run
    monkeypatch.setattr(
        trio, "run", lambda fn, *a, **kw: real_run(fn, *a, clock=trio.testing.MockClock(), **kw)
    )
    database = db.Database(folder / "db" / db.DATABASE_NAME)
    app = make_app(WebConfig(database, folder / "uploads", pages="public"))
    sock = webproc.listen_socket("127.0.0.1", 0)
    stop, stopper = multiprocessing.Pipe(duplex=False)
    if how == "sent":
        stopper.send_bytes(b"stop")
    else:
        stopper.close()
    sent: list[tuple[str, int]] = []

    class Ready:
        def send(self, message: tuple[str, int]) -> None:
            sent.append(message)

    serving = threading.Thread(target=webproc._serve, args=(app, database, sock, Ready(), stop))
    try:
        serving.start()
        serving.join(60)  # a wait, not a timing assertion: frozen, a fixed wait never ends
        assert not serving.is_alive(), "the web process waited on the clock after its stop"
        assert sent == [("ready", os.getpid())]
    finally:
        stop.close()
        if how == "sent":
            stopper.close()
        with contextlib.suppress(OSError):  # Hypercorn closed its descriptor
            sock.close()


def test_after_preload_an_uploads_check_and_an_interval_load_no_module(tmp_path: Path) -> None:
    """The web process drops its privileges after ``web.preload()``: what its
    requests load later must already be loaded, or a user that cannot enter
    the installation (a virtual environment under /root) gets a 500. A
    bot.toml's check (jsonschema) failed so in CI; the gauntlet's interval
    (SciPy) would have."""
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.toml").write_text('command = "main.py"\n')
    (bot / "main.py").write_text("print('hi')\n")
    code = (
        "import sys\n"
        "from arena.server import web\n"
        "web.preload()\n"
        "before = set(sys.modules)\n"
        "from arena.sandbox.botfolder import load_bot_folder\n"
        "from arena.server import gauntlet\n"
        f"load_bot_folder(__import__('pathlib').Path({str(bot)!r}))\n"
        "gauntlet._interval([1.0, 2.0, 4.0])\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
