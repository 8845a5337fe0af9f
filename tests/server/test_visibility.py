"""Who sees what (issue 28): the table of docs/server-web.md, "Who sees
what", read from the doc and checked as written: every page, for every
viewer, under both ``pages`` settings. The viewer is put in the ASGI scope
as the sign-in layer does (arena.server.viewer.SCOPE_KEY), by a test
wrapper; a real SQLite file holds ann's and bob's submissions and the golden
run's first table as ladder table 0 (test_web.play_table), with each seat's
stderr its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio
from test_web import SECRET_OUTPUT, Clock, Server, play_table

from arena.server import db, signin, store
from arena.server.migrate import migrate
from arena.server.viewer import ANONYMOUS, SCOPE_KEY, Viewer
from arena.server.web import WebConfig, make_app, render

DOC = Path(__file__).parents[2] / "docs" / "server-web.md"
ROLES = ("anyone", "participant", "organiser")
PARTICIPANT = Viewer("participant", participant_id=1, session_sha256="a" * 64, form_token="ft-a")
OTHER = Viewer("participant", participant_id=2, session_sha256="b" * 64, form_token="ft-b")
ORGANISER = Viewer("organiser", session_sha256="c" * 64, form_token="ft-o")


def doc_table() -> list[dict[str, str]]:
    """The rows of the doc's table: page, and the cell for each role and setting."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Who sees what") :]
    lines = [x for x in section.splitlines() if x.startswith("| `/")]
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 6, line
        rows.append(
            {
                "page": cells[0].strip("`"),
                "public": cells[2],
                "signed-in": cells[3],
                "participant": cells[4],
                "organiser": cells[5],
            }
        )
    return rows


ROWS = doc_table()


def test_the_doc_table_names_every_page_route() -> None:
    """Every GET route of the pages is in the doc's table (nothing shown
    that the table does not say)."""
    from starlette.routing import Route

    from arena.server import pages

    config = WebConfig(db.Database(Path("/nonexistent")), Path("/nonexistent"))
    documented = {row["page"].replace("N", "{number}").replace("S", "{seat}") for row in ROWS}
    routed = {
        re.sub(r"\{(number|id)\}", "{number}", r.path)
        for r in pages.routes(config, render)
        if isinstance(r, Route) and r.methods and "GET" in r.methods
    }
    routed |= {"/events", "/api/standings", "/api/environment", "/final", "/api/final"}
    assert routed == documented
    assert len(ROWS) == 20


def app_as(config: WebConfig, viewer: Viewer) -> Any:
    """The application with ``viewer`` in every request's scope: the
    sign-in layer (arena.server.signin.SignIn, which reads the session
    cookie) replaced, where it stands, by one that puts ``viewer`` there."""

    class Given:
        def __init__(self, app: Any, *args: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                scope = {**scope, SCOPE_KEY: viewer}
            await self.app(scope, receive, send)

    real = signin.SignIn
    signin.SignIn = Given  # type: ignore[misc]
    try:
        return make_app(config)
    finally:
        signin.SignIn = real  # type: ignore[misc]


async def request(
    app: Any, path: str, headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, dict[str, str], str]:
    """One GET through the ASGI app: status, headers, the body's first part
    (an event stream is cut after its first write)."""
    target, _, query = path.partition("?")
    scope = {
        "type": "http",
        "method": "GET",
        "path": target,
        "raw_path": target.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1"), *(headers or [])],
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "root_path": "",
        "http_version": "1.1",
        "asgi": {"version": "3.0"},
    }
    start: dict[str, Any] = {}
    body = bytearray()
    done = trio.Event()

    async def receive() -> dict[str, Any]:
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))
            if body or not message.get("more_body"):
                done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(app, scope, receive, send)
        with trio.fail_after(30):
            await done.wait()
        nursery.cancel_scope.cancel()
    heads = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], heads, body.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def competition(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("visibility")
    path = tmp / db.DATABASE_NAME
    db.set_wal(path)
    database = db.Database(path)
    migrate(database)
    uploads = tmp / "uploads"
    uploads.mkdir()
    server = Server(database, WebConfig(database, uploads, clock=Clock()), Clock())
    server.add("ann")
    server.add("bob")
    play_table(server)

    def own_outputs(conn: Any) -> dict[str, Any]:
        # Each seat's stderr says whose it is; each submission has a check report.
        for game in conn.execute(db.games.select()).all():
            record = dict(game.record)
            record["stderr"] = [f"stderr-of-{label}" for label in record["seats"]]
            record["transcripts"] = [[{"t": 0, "to": label}] for label in record["seats"]]
            conn.execute(db.games.update().where(db.games.c.id == game.id).values(record=record))
        for sid in (1, 2):
            conn.execute(
                db.submissions.update()
                .where(db.submissions.c.id == sid)
                .values(check_output=f"{SECRET_OUTPUT}-s{sid}")
            )
        record = store.table_records(conn, 1)[0]
        return {"seats": record["seats"]}

    seats = database.run_write(own_outputs)["seats"]
    yield {"server": server, "seats": seats}
    database.close()


def paths(page: str, seats: list[str]) -> tuple[str, str]:
    """The page for ann (participant 1, submission s1) and for bob (s2)."""

    def fill(label: str) -> str:
        sid = label[1:]
        out = page.replace("/submissions/N", f"/submissions/{sid}")
        out = out.replace("/tables/N", "/tables/0").replace(
            "/seats/S", f"/seats/{seats.index(label)}"
        )
        return out + ("?rotation=0" if "/seats/" in out else "")

    return fill("s1"), fill("s2")


def viewer_for(role: str) -> Viewer:
    return {"anyone": ANONYMOUS, "participant": PARTICIPANT, "organiser": ORGANISER}[role]


@pytest.mark.parametrize("setting", ["public", "signed-in"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("row", ROWS, ids=[r["page"] for r in ROWS])
def test_who_sees_what_as_the_doc_says(
    competition: dict[str, Any], row: dict[str, str], role: str, setting: str
) -> None:
    server: Server = competition["server"]
    server.config.pages = setting
    cell = row[setting] if role == "anyone" else row[role]
    mine, other = paths(row["page"], competition["seats"])
    app = app_as(server.config, viewer_for(role))

    async def main() -> None:
        status, headers, body = await request(app, mine)
        secret = f"{SECRET_OUTPUT}-s1" in body or "stderr-of-s1" in body
        if cell == "yes" or cell == "own":
            assert status == 200, (mine, status, body[:300])
            page = row["page"]
            if page.endswith(("/stderr", "/transcript", ".txt")):  # downloads
                assert headers["content-type"] == "text/plain; charset=utf-8"
                assert headers["content-disposition"].startswith("attachment; filename=")
                assert headers["x-content-type-options"] == "nosniff"
            elif page in ("/tables/N", "/tables/N/seats/S", "/submissions/N/output"):
                assert "; sandbox" in headers["content-security-policy"], page  # bots' output
        elif cell == "sign in":
            assert status == 401, (mine, status)
            assert not secret and "stderr-of" not in body
            assert "sign in" in body.lower() or "Bearer" in body
        elif cell == "no":
            assert status == 404, (mine, status)
            assert not secret and "stderr-of" not in body
        else:
            raise AssertionError(f"unknown cell {cell!r} for {row['page']}")
        if cell == "own":
            status, _, body = await request(app, other)
            assert status == 404, (other, status)
            assert "stderr-of-s2" not in body and f"{SECRET_OUTPUT}-s2" not in body
        if role == "organiser" and "/N" in row["page"] and cell == "yes":
            status, _, _ = await request(app, other)
            assert status == 200

    trio.run(main)


@pytest.mark.parametrize("setting", ["public", "signed-in"])
def test_the_api_answers_a_token_under_either_setting(
    competition: dict[str, Any], setting: str
) -> None:
    server: Server = competition["server"]
    server.config.pages = setting
    app = make_app(server.config)
    token = server.tokens["ann"]

    async def main() -> None:
        for path in ("/api/standings", "/api/environment"):
            status, _, body = await request(
                app, path, [(b"authorization", f"Bearer {token}".encode())]
            )
            assert status == 200, (path, body[:200])
            status, _, body = await request(app, path, [(b"authorization", b"Bearer nope")])
            assert status == (200 if setting == "public" else 401)
        status, _, body = await request(
            app, "/api/submissions", [(b"authorization", f"Bearer {token}".encode())]
        )
        assert status == 200 and '"participant":"ann"' in body.replace(" ", "")

    trio.run(main)


def test_beside_the_replay_each_viewer_sees_only_the_seats_they_may(
    competition: dict[str, Any],
) -> None:
    server: Server = competition["server"]
    server.config.pages = "signed-in"
    seats = competition["seats"]

    async def shown(viewer: Viewer) -> set[str]:
        _, _, body = await request(app_as(server.config, viewer), "/tables/0?rotation=0")
        return {label for label in seats if f"stderr-of-{label}" in body}

    async def main() -> None:
        assert await shown(PARTICIPANT) == {"s1"}
        assert await shown(OTHER) == {"s2"}
        assert await shown(ORGANISER) == set(seats)
        assert await shown(Viewer("participant", participant_id=9, form_token="x")) == set()

    trio.run(main)
