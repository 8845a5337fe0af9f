"""The competition server's HTTP side (issue 27): httpx against the
application under Trio, a real SQLite file in a temporary folder. The
runner's steps (check, validation, ladder tables) are written with the
store's own queries, as the runner writes them."""

from __future__ import annotations

import io
import itertools
import json
import platform
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from server_templates import migrated_sqlite

from arena.live.server import SECURITY_HEADERS
from arena.server import db, store
from arena.server.uploads import UploadLimits
from arena.server.web import (
    READ_TIMEOUT,
    SERVER_CSP,
    WebConfig,
    hypercorn_config,
    make_app,
)
from arena.server.webstore import RateLimit

GOLDEN = Path(__file__).parents[1] / "golden" / "games.jsonl"
BOT_PY = b"import sys\nfor line in sys.stdin:\n    pass\n"
SECRET_OUTPUT = "Traceback: check-output-only-for-its-owner"
SECRET_STDERR = "stderr-of-a-seat-never-public"


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Server:
    database: db.Database
    config: WebConfig
    clock: Clock
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)

    def add(self, name: str) -> str:
        token = f"token-{len(self.tokens)}-" + "x" * 20

        def run(conn: Any) -> int:
            p = store.add_participant(conn, name, self.clock())
            store.add_token(conn, p.id, store.token_hash(token), self.clock())
            return p.id

        self.ids[name] = self.database.run_write(run)
        self.tokens[name] = token
        return token


@pytest.fixture
def server(tmp_path: Path) -> Any:
    path = tmp_path / db.DATABASE_NAME
    migrated_sqlite(path)  # set_wal and migrate, from a template (server_templates)
    database = db.Database(path)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    clock = Clock()
    config = WebConfig(
        database,
        uploads,
        clock=clock,
        limits=UploadLimits(body_bytes=64 * 1024),
        pages="public",  # these tests are anonymous; who sees what is test_visibility.py's
    )
    yield Server(database, config, clock)
    database.close()


def run(server: Server, test: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
    async def main() -> None:
        app = make_app(server.config)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            await test(client)

    trio.run(main)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def a_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bot.toml", 'command = "main.py"\n')
        archive.writestr("main.py", BOT_PY)
    return buffer.getvalue()


def assert_paced(pushes: list[float]) -> None:
    """Two seconds of changes reached a stream at most twice a second: four to
    six pushes (mock-clock times, seconds), never closer than PUSH_INTERVAL."""
    from arena.live.server import PUSH_INTERVAL

    gaps = [b - a for a, b in itertools.pairwise(pushes)]
    assert 4 <= len(pushes) <= 6  # 2 s of changes, one push per 0.5 s
    assert all(g >= PUSH_INTERVAL - 1e-9 for g in gaps)


def test_submit_py_and_zip_then_status(server: Server) -> None:
    token = server.add("ann")

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.post("/api/submissions", content=BOT_PY, headers=auth(token))
        assert r.status_code == 201, r.text
        first = r.json()
        assert (first["status"], first["place"], first["kind"], first["superseded"]) == (
            "queued",
            1,
            "py",
            [],
        )
        assert first["steps"][0] == {"step": "check", "result": "waiting", "place": 1}
        server.clock.now += 121
        # A zip, as a form (multipart/form-data): replaces the one waiting for its check.
        r = await client.post(
            "/api/submissions",
            files={"file": ("whatever-name.zip", a_zip(), "application/zip")},
            headers=auth(token),
        )
        assert r.status_code == 201, r.text
        second = r.json()
        assert (second["kind"], second["superseded"]) == ("zip", [first["submission"]])
        r = await client.get("/api/submissions", headers=auth(token))
        listed = r.json()
        assert listed["participant"] == "ann"
        assert [(s["submission"], s["status"]) for s in listed["submissions"]] == [
            (second["submission"], "queued"),
            (first["submission"], "superseded"),
        ]
        r = await client.get(f"/api/submissions/{second['submission']}", headers=auth(token))
        assert r.json()["sha256"] == second["sha256"]

    run(server, test)
    folders = sorted(p.name for p in server.config.uploads.iterdir())
    assert len(folders) == 2 and all(len(f) == 64 for f in folders)


def test_a_failed_check_is_shown_to_its_owner_only(server: Server) -> None:
    ann, bob = server.add("ann"), server.add("bob")

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.post("/api/submissions", content=BOT_PY, headers=auth(ann))
        sid = r.json()["submission"]

        def fail(conn: Any) -> None:
            store.start_step(conn, sid, "check", server.clock())
            store.record_step(
                conn,
                sid,
                "check",
                False,
                server.clock(),
                "crashed at its first move",
                SECRET_OUTPUT,
            )

        server.database.run_write(fail)
        r = await client.get("/api/submissions", headers=auth(ann))
        (mine,) = r.json()["submissions"]
        assert (mine["status"], mine["failed_step"], mine["output"]) == (
            "failed",
            "check",
            SECRET_OUTPUT,
        )
        assert mine["steps"][0] == {
            "step": "check",
            "result": "failed",
            "reason": "crashed at its first move",
        }
        assert [s["result"] for s in mine["steps"][1:]] == ["skipped", "skipped"]
        r = await client.get("/api/submissions", headers=auth(bob))
        assert r.json()["submissions"] == []
        r = await client.get(f"/api/submissions/{sid}", headers=auth(bob))
        assert r.status_code == 404
        for page in ("/", "/tables", "/api/standings", "/environment"):
            r = await client.get(page)
            assert r.status_code == 200
            assert SECRET_OUTPUT not in r.text

    run(server, test)


def test_rate_limit_429_with_retry_after(server: Server) -> None:
    token = server.add("ann")

    async def test(client: httpx.AsyncClient) -> None:
        assert (
            await client.post("/api/submissions", content=BOT_PY, headers=auth(token))
        ).status_code == 201
        server.clock.now += 30
        r = await client.post("/api/submissions", content=BOT_PY + b"#2", headers=auth(token))
        assert r.status_code == 429
        assert r.headers["Retry-After"] == "90"
        assert "try again in 90 s" in r.json()["error"]
        server.clock.now += 90
        r = await client.post("/api/submissions", content=BOT_PY + b"#2", headers=auth(token))
        assert r.status_code == 201

    run(server, test)


def test_rate_limit_per_day(server: Server) -> None:
    token = server.add("ann")
    server.config.rate = RateLimit(interval_seconds=60, per_day=3)

    async def test(client: httpx.AsyncClient) -> None:
        start = server.clock.now
        for i in range(3):
            r = await client.post(
                "/api/submissions", content=BOT_PY + b"#%d" % i, headers=auth(token)
            )
            assert r.status_code == 201
            server.clock.now += 3600
        r = await client.post("/api/submissions", content=BOT_PY + b"#9", headers=auth(token))
        assert r.status_code == 429
        # the first of the day's three ages out 24 hours after it came
        assert int(r.headers["Retry-After"]) == int(start + 86400 - server.clock.now)
        assert len(list(server.config.uploads.iterdir())) == 3  # the refused one not stored

    run(server, test)


def test_token_only_in_the_authorization_header(server: Server) -> None:
    token = server.add("ann")
    server.add("sue")
    server.database.run_write(lambda c: store.set_participant_status(c, "sue", "suspended", 0.0))

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.post(f"/api/submissions?token={token}", content=BOT_PY)
        assert r.status_code == 400 and "never in the URL" in r.json()["error"]
        r = await client.get("/api/submissions", params={"access_token": token})
        assert r.status_code == 400
        r = await client.get("/api/submissions", headers={"Cookie": f"token={token}"})
        assert r.status_code == 400 and "no cookies" in r.json()["error"]
        # a cookie is refused even beside a good header
        r = await client.get("/api/submissions", headers={**auth(token), "Cookie": "a=b"})
        assert r.status_code == 400
        r = await client.get("/api/submissions")
        assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
        r = await client.get("/api/submissions", headers=auth("not-a-token"))
        assert r.status_code == 401
        r = await client.get("/api/submissions", headers={"Authorization": f"Basic {token}"})
        assert r.status_code == 401
        r = await client.post(
            "/api/submissions", content=BOT_PY, headers=auth(server.tokens["sue"])
        )
        assert r.status_code == 403 and "suspended" in r.json()["error"]
        # a suspended participant still reads their own submissions
        r = await client.get("/api/submissions", headers=auth(server.tokens["sue"]))
        assert r.status_code == 200 and r.json()["participant"] == "sue"
        assert (await client.get("/api/submissions", headers=auth(token))).status_code == 200

    run(server, test)


def test_body_over_the_cap_with_and_without_content_length(server: Server) -> None:
    token = server.add("ann")
    cap = server.config.limits.body_bytes
    read: list[int] = []

    async def body(chunks: int) -> AsyncIterator[bytes]:
        for i in range(chunks):
            read.append(i)
            yield b"#" * 16384

    async def test(client: httpx.AsyncClient) -> None:
        # Content-Length over the cap: refused before a byte is read
        headers = {**auth(token), "Content-Length": str(cap + 1)}
        r = await client.post("/api/submissions", content=body(8), headers=headers)
        assert r.status_code == 413 and f"{cap + 1} bytes is over the limit" in r.json()["error"]
        assert read == []
        # no Content-Length (chunked): counted as read
        r = await client.post("/api/submissions", content=body(8), headers=auth(token))
        assert r.status_code == 413
        assert r.json()["error"] == "upload is over the limit of 65536 bytes"
        assert len(read) == 5  # 4 chunks of 16 KiB make the cap; the 5th passes it, 3 unread
        # a zip refused with its one line; nothing stored
        r = await client.post(
            "/api/submissions", content=a_zip().replace(b"main.py", b"../x.py"), headers=auth(token)
        )
        assert r.status_code == 400 and "holds '..'" in r.json()["error"]

    run(server, test)
    assert list(server.config.uploads.iterdir()) == []
    with server.database.read() as conn:
        assert store.submissions_of(conn, server.ids["ann"]) == []


def play_table(server: Server) -> None:
    """What the runner writes: ann's and bob's submissions ranked, ladder
    table 0 (the golden run's first table, relabelled) done, a fold stored."""
    records = [json.loads(line) for line in GOLDEN.read_text().splitlines()[:4]]
    now = server.clock()

    def write(conn: Any) -> None:
        labels = {}
        for name, bot in (("ann", "garbage"), ("bob", "heuristic_bot")):
            row, _ = store.add_submission(conn, server.ids[name], "a" * 64, "py", 10, now)
            store.start_step(conn, row.id, "check", now)
            store.record_step(conn, row.id, "check", True, now)
            store.start_step(conn, row.id, "validation", now)
            store.record_step(conn, row.id, "validation", True, now)
            labels[bot] = row.label
        labels["illegal"], labels["kit_bot"] = "house:low", "house:random"
        seating = [labels[s] for s in records[0]["seats"]]
        table = store.add_table(conn, "ladder", 0, "L0", seating, seating, now)
        store.set_table_status(conn, table.id, "playing", now)
        for rec in records:
            rec["seats"] = [labels[s] for s in rec["seats"]]
            rec["entrants"] = sorted(labels[s] for s in rec["entrants"])
            rec["stderr"] = [SECRET_STDERR] * 4
            store.add_game(conn, table.id, rec["rotation"], rec)
        store.set_table_status(conn, table.id, "done", now)
        store.store_fold(
            conn,
            1,
            {
                labels["garbage"]: store.Rating(20.0, 5.0, 4),
                labels["heuristic_bot"]: store.Rating(30.0, 4.0, 4),
                "house:low": store.Rating(22.0, 6.0, 4),
                "house:random": store.Rating(25.0, 7.0, 4),
            },
        )

    server.database.run_write(write)


def test_the_standings_api_answers_from_its_last_answer_until_something_changes(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /api/standings reads the standings again only when
    webstore.standings_mark changed (a client asking each second made the
    query each second): the same bytes while nothing changed; a table
    played and folded, then a participant suspended, are seen at once."""
    from arena.server import webstore

    server.add("ann")
    server.add("bob")
    reads: list[int] = []
    real = webstore.standings_json

    def counted(conn: Any) -> dict[str, Any]:
        reads.append(1)
        return real(conn)

    monkeypatch.setattr(webstore, "standings_json", counted)

    async def test(client: httpx.AsyncClient) -> None:
        first = [(await client.get("/api/standings")).content for _ in range(3)]
        assert len(set(first)) == 1 and len(reads) == 1
        assert json.loads(first[0])["rated_through"] == 0
        play_table(server)
        r = await client.get("/api/standings")
        assert r.headers["content-type"] == "application/json"
        data = r.json()
        assert data["rated_through"] == 1 and len(reads) == 2
        assert [x["participant"] for x in data["rows"]][:2] == ["bob", "ann"]
        assert (await client.get("/api/standings")).content == r.content and len(reads) == 2
        server.database.run_write(store.set_participant_status, "bob", "suspended", 1.0)
        again = (await client.get("/api/standings")).json()
        assert len(reads) == 3 and again == json.loads(json.dumps(server.database.run_read(real)))

    run(server, test)


def test_standings_tables_and_replay(server: Server) -> None:
    server.add("ann")
    server.add("bob")

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.get("/tables/0")
        assert r.status_code == 404  # not played yet
        play_table(server)
        r = await client.get("/api/standings")
        data = r.json()
        assert data["rated_through"] == 1 and data["tables_in_play"] == 0
        rows = [(x["participant"], x["games"], x["mu"], x["sigma"]) for x in data["rows"]]
        assert rows == [
            ("bob", 4, 30.0, 4.0),  # mu - 3 sigma: 18
            ("ann", 4, 20.0, 5.0),  # 5
            ("house:low", 4, 22.0, 6.0),  # 4
            ("house:random", 4, 25.0, 7.0),  # 4, after house:low by name
        ]
        assert data["rows"][0]["conservative"] == 18.0 and data["rows"][0]["rank"] == 1
        assert {
            "participant",
            "submission",
            "games",
            "mu",
            "sigma",
            "conservative",
            "status",
        } <= set(data["rows"][0])
        page = (await client.get("/")).text
        assert '<td class="name">bob</td>' in page and "18.00" in page
        tables = (await client.get("/tables")).text
        assert 'href="/tables/0"' in tables and "ann (s1)" in tables
        assert "72 · 53 · 43 · 92" in tables  # the golden table: 15+18+15+24 for ann...
        r = await client.get("/tables/0?rotation=2")
        assert r.status_code == 200
        assert SECRET_STDERR not in r.text and "transcripts" not in r.text
        start = r.text.index('id="replay-data">') + len('id="replay-data">')
        replay = json.loads(r.text[start : r.text.index("</script>", start)])
        assert replay["seats"] == ["house:low", "house:random", "ann (s1)", "bob (s2)"]
        golden = json.loads(GOLDEN.read_text().splitlines()[2])
        assert [h["dealt"] for h in replay["hands"]] == [h["dealt"] for h in golden["hands"]]
        assert (await client.get("/static/replay.js")).status_code == 200
        assert (await client.get("/tables/0?rotation=4")).status_code == 404

    run(server, test)


def test_security_headers_and_host_check(server: Server) -> None:
    async def test(client: httpx.AsyncClient) -> None:
        for path in ("/", "/api/standings", "/nowhere", "/static/server.js", "/api/submissions"):
            r = await client.get(path)
            for name, value in SECURITY_HEADERS.items():
                # The live view's, but forms may post to this site (issue 28's sign-in).
                expected = SERVER_CSP if name == "Content-Security-Policy" else value
                assert r.headers[name] == expected, (path, name)
            assert "strict-transport-security" not in r.headers  # plain HTTP: no HSTS
        assert "form-action 'self'" in SERVER_CSP
        assert "<script>" not in (await client.get("/")).text  # no inline script
        r = await client.get("/", headers={"Host": "attacker.example"})
        assert r.status_code == 403
        assert r.headers["Content-Security-Policy"] == SERVER_CSP
        assert (await client.get("/", headers={"Host": "localhost:8000"})).status_code == 200

    run(server, test)


def test_names_are_cleaned_and_escaped(server: Server) -> None:
    server.add("<script>alert(1)</script>\u202e")
    server.add("bob")
    server.ids["ann"] = server.ids.pop("<script>alert(1)</script>\u202e")
    play_table(server)

    async def test(client: httpx.AsyncClient) -> None:
        for path in ("/", "/tables", "/tables/0"):
            text = (await client.get(path)).text
            assert "<script>alert" not in text and "\u202e" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (await client.get("/")).text

    run(server, test)


def test_environment_page(server: Server) -> None:
    async def test(client: httpx.AsyncClient) -> None:
        text = (await client.get("/environment")).text
        assert platform.machine() in text and platform.python_version() in text
        data = (await client.get("/api/environment")).json()
        assert data["libc"][0] == platform.libc_ver()[0] and data["machine"] == platform.machine()
        assert {"name": "trio", "version": trio.__version__} in data["packages"]

    run(server, test)


def test_live_standings_over_server_sent_events(server: Server) -> None:
    """The event stream's first write holds the standings; a change in the
    database (a fold) reaches it as one more write."""
    server.add("ann")
    server.add("bob")
    server.config.poll_seconds = 0.05
    app = make_app(server.config)
    writes: list[bytes] = []

    async def main() -> None:
        got = trio.Event()
        second = trio.Event()

        async def receive() -> dict[str, Any]:
            await trio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                writes.append(message["body"])
                got.set()
                if len(writes) >= 2:
                    second.set()

        scope = {
            "type": "http",
            "method": "GET",
            "path": "/events",
            "raw_path": b"/events",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1")],
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5000),
            "root_path": "",
            "http_version": "1.1",
            "asgi": {"version": "3.0"},
        }
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app, scope, receive, send)
            with trio.fail_after(30):
                await got.wait()
                play_table(server)
                await second.wait()
            nursery.cancel_scope.cancel()

    trio.run(main)
    first = writes[0].decode()
    assert first.startswith("event: standings\ndata: ")
    assert json.loads(first.split("\n")[1].removeprefix("data: "))["rows"] == []
    later = writes[1].decode()
    standings = json.loads(later.split("\n")[1].removeprefix("data: "))
    assert standings["rows"][0]["participant"] == "bob"
    assert "event: finished" in later


def test_hypercorn_read_timeout_is_set() -> None:
    config = hypercorn_config("127.0.0.1:0")
    assert config.read_timeout == READ_TIMEOUT == 30
    assert config.accesslog is None


def test_a_failure_is_one_json_log_line_and_a_500(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(conn: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("arena.server.webstore.standings_json", broken)

    async def main() -> None:
        transport = httpx.ASGITransport(app=make_app(server.config), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            r = await client.get("/api/standings", headers={"Authorization": "Bearer secret-x"})
            assert r.status_code == 500
            assert r.json() == {"error": "the server failed (its log says why)"}

    trio.run(main)
    (line,) = capsys.readouterr().err.splitlines()
    logged = json.loads(line)
    assert (logged["event"], logged["path"], logged["error"]) == (
        "web-error",
        "/api/standings",
        "RuntimeError: disk on fire",
    )
    assert "secret-x" not in line


def test_a_new_submission_settling_is_n_of_20(server: Server) -> None:
    """Ann's newer passing submission (3 ranked games) does not replace her
    row until it has 20: the row keeps submission 1 with its rating and
    says "new submission: 3 of 20 games"."""
    server.add("ann")
    server.add("bob")
    play_table(server)

    def resubmit(conn: Any) -> int:
        row, _ = store.add_submission(conn, server.ids["ann"], "b" * 64, "py", 10, 0.0)
        for step in ("check", "validation"):
            store.start_step(conn, row.id, step, 0.0)
            store.record_step(conn, row.id, step, True, 0.0)
        store.add_ranked_games(conn, row.id, 3, 0)
        return row.id

    newer = server.database.run_write(resubmit)

    async def test(client: httpx.AsyncClient) -> None:
        rows = (await client.get("/api/standings")).json()["rows"]
        (ann,) = [r for r in rows if r["participant"] == "ann"]
        assert (ann["submission"], ann["mu"], ann["new_games"]) == (1, 20.0, 3)
        assert ann["note"] == "new submission: 3 of 20 games"
        assert "new submission: 3 of 20 games" in (await client.get("/")).text
        assert newer == 3

    run(server, test)


def test_live_pushes_at_most_twice_a_second(server: Server) -> None:
    """Changes every 0.1 s of Trio's mock clock (ann's submissions arriving)
    reach the streams in pushes at least the live view's PUSH_INTERVAL apart,
    the last change included."""
    from trio.testing import MockClock

    from arena.server.web import Feed

    server.add("ann")
    feed = Feed(server.database, poll_seconds=0.1)
    pushes: list[float] = []

    async def main() -> None:
        async def listen() -> None:
            while True:
                await feed.pusher.changed()
                pushes.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen)
            await trio.lowlevel.checkpoint()
            for i in range(20):
                server.database.run_write(
                    lambda c, i=i: store.add_submission(
                        c, server.ids["ann"], f"{i:064x}", "py", 1, float(i)
                    )
                )
                await feed.refresh()
                await trio.sleep(0.1)
            for _ in range(10):
                await feed.refresh()
                await trio.sleep(0.1)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=MockClock(rate=0, autojump_threshold=0))
    assert_paced(pushes)
    # changes were read (and encoded once) more often than they were pushed
    assert feed.versions["standings"] >= 10 > len(pushes)


def _table_states(deal: str = "L3") -> list[dict[str, Any]]:
    """The states the runner's feed sends for one game: a deal, a card, a
    fault, then its end (arena.game.feed, as the referee's events fold)."""
    import queue as queue_module

    from arena.game.feed import LiveFeed
    from arena.protocol.records import GameSpec

    sent: queue_module.Queue[dict[str, Any]] = queue_module.Queue(10)
    feed = LiveFeed(sent)
    seats = ("s1", "house:low", "s2", "<b>s3</b>")
    spec = GameSpec(12, "t3-r0", 0, 3, 0, seats, deal, (1, 2, 3, 4), None, 1, b"")
    sink = feed.sink(spec)
    out = []
    for event in (
        {"event": "deal", "hand_number": 1, "direction": "left"},
        {"event": "passed"},
        {"event": "card", "seat": 0, "card": "2C"},
        {"event": "fault", "seat": 3, "reason": "timeout"},
        {"event": "game_end", "scores": [26, 0, 0, 0]},
    ):
        sink(event)
        feed.flush()
        out.append(sent.get_nowait())
    return out


def _shows_fault(events: list[list[dict[str, Any]]]) -> bool:
    return bool(events and events[-1] and events[-1][0]["faults"])


def test_tables_in_play_reach_every_stream_from_the_live_queue(server: Server) -> None:
    """Issue 27: table states reach the web process over the live view's
    bounded queue (arena.game.feed) and every /events stream as one
    "playing" event, encoded once for all; a state's extra keys (a seat's
    stderr) never reach a page; a game over leaves the list."""
    import queue as queue_module

    from arena.server.web import receive_table_states

    states = _table_states()
    states[2]["stderr"] = SECRET_STDERR  # not a key of a table state: dropped
    live: queue_module.Queue[Any] = queue_module.Queue(1000)
    server.config.poll_seconds = 0.05
    app = make_app(server.config)
    feed = app.feed  # type: ignore[attr-defined]
    writes: dict[int, list[bytes]] = {0: [], 1: []}

    def scope() -> dict[str, Any]:
        return {
            "type": "http", "method": "GET", "path": "/events", "raw_path": b"/events",
            "query_string": b"", "headers": [(b"host", b"127.0.0.1")], "scheme": "http",
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000), "root_path": "",
            "http_version": "1.1", "asgi": {"version": "3.0"},
        }  # fmt: skip

    def playing(i: int) -> list[list[dict[str, Any]]]:
        found = []
        for body in writes[i]:
            for frame in body.decode().split("\n\n"):
                if frame.startswith("event: playing\n"):
                    found.append(json.loads(frame.split("\n")[1].removeprefix("data: ")))
        return found

    async def main() -> None:
        async def receive() -> dict[str, Any]:
            await trio.sleep_forever()
            raise AssertionError

        def sender(i: int) -> Callable[[dict[str, Any]], Awaitable[None]]:
            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body" and message.get("body"):
                    writes[i].append(message["body"])

            return send

        async def until(check: Callable[[], bool]) -> None:
            while not check():  # noqa: ASYNC110  (writes land in plain lists)
                await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive_table_states, feed, live)
            for i in (0, 1):
                nursery.start_soon(app, scope(), receive, sender(i))
            with trio.fail_after(30):
                await until(lambda: all(playing(i) == [[]] for i in (0, 1)))
                for state in states[:4]:
                    live.put(state)
                await until(lambda: all(_shows_fault(playing(i)) for i in (0, 1)))
                shown = playing(0)[-1]
                live.put(states[4])
                await until(lambda: all(playing(i)[-1] == [] for i in (0, 1)))
            nursery.cancel_scope.cancel()
        assert len(shown) == 1
        game = shown[0]
        assert (game["game_id"], game["deal_key"], game["hand"], game["phase"]) == (
            "t3-r0", "L3", 1, "play",
        )  # fmt: skip
        assert game["seats"] == ["s1", "house:low", "s2", "<b>s3</b>"]  # escaped by textContent
        assert (game["trick"], game["held"], game["turn"]) == ([[0, "2C"]], [12, 13, 13, 13], 1)
        assert game["faults"] == [[3, "timeout", 1]] and game["fault_counts"] == [0, 0, 0, 1]
        assert set(game) == set(states[3]) - {"stderr"}

    trio.run(main)
    assert playing(0) == playing(1)  # the same events on both streams
    # One encoding per change for all streams: no more versions than changes.
    assert feed.versions["playing"] <= 1 + len(states)
    assert all(SECRET_STDERR.encode() not in w for i in (0, 1) for w in writes[i])
    assert feed.playing == {}


def test_tables_in_play_are_pushed_at_most_twice_a_second(server: Server) -> None:
    """Table states every 0.05 s of Trio's mock clock reach the streams in
    pushes at least the live view's PUSH_INTERVAL apart, each an encoding
    shared by every stream; the last state is the one shown."""
    from trio.testing import MockClock

    from arena.server.web import Feed

    feed = Feed(server.database, poll_seconds=0.1)
    base = _table_states()[2]
    pushes: list[float] = []
    frames: list[bytes] = []

    async def main() -> None:
        async def listen() -> None:
            while True:
                await feed.pusher.changed()
                await feed.refresh()
                pushes.append(trio.current_time())
                frames.append(feed.frames["playing"])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen)
            await trio.lowlevel.checkpoint()
            for i in range(40):
                feed.table_state({**base, "scores": [i, 0, 0, 0]})
                await feed.refresh()
                await trio.sleep(0.05)
            for _ in range(10):
                await feed.refresh()
                await trio.sleep(0.1)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=MockClock(rate=0, autojump_threshold=0))
    assert_paced(pushes)
    last = json.loads(frames[-1].decode().split("\n")[1].removeprefix("data: "))
    assert [g["scores"] for g in last] == [[39, 0, 0, 0]]


def test_the_table_states_waiting_on_the_live_queue_come_in_one_hand_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live queue's reader takes every state waiting at once, in order:
    one hand-off from its thread for all of them (each state had one), and
    a cancel ends it while its thread still waits."""
    import queue as queue_module

    from arena.server import web

    live: queue_module.Queue[Any] = queue_module.Queue(1000)
    for k in range(5):
        live.put({"game_id": f"g{k}"})
    got: list[Any] = []
    handed: list[int] = []
    real = trio.to_thread.run_sync

    async def counted(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        out = await real(fn, *args, **kwargs)
        handed.append(len(out))
        return out

    monkeypatch.setattr(web.trio.to_thread, "run_sync", counted)

    class Feed:
        def table_state(self, state: Any) -> None:
            got.append(state)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(web.receive_table_states, Feed(), live)
            while len(got) < 5:  # noqa: ASYNC110  (the states land in a plain list)
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert got == [{"game_id": f"g{k}"} for k in range(5)]
    assert handed[:1] == [5]
