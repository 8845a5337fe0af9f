"""Sign-in on the competition server (issue 28): one-time links, sessions,
the form rules, the limits. httpx against the application under Trio, a
real SQLite file; the clock is the test's own (no wall time)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from server_templates import migrated_sqlite

from arena.server import db, sessions, store
from arena.server.sessions import SiteSettings
from arena.server.signin import COOKIE, SECURE_COOKIE
from arena.server.uploads import UploadLimits
from arena.server.web import HSTS, WebConfig, make_app

BOT_PY = b"import sys\nfor line in sys.stdin:\n    pass\n"
ORIGIN = {"Origin": "http://127.0.0.1"}


@dataclass
class Clock:
    now: float = 2_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Site:
    database: db.Database
    config: WebConfig
    clock: Clock

    def organiser_link(self) -> str:
        return self.database.run_write(sessions.organiser_link, self.clock())

    def sessions_live(self) -> int:
        def count(conn: Any) -> int:
            rows = conn.execute(db.sessions.select().where(db.sessions.c.ended_at.is_(None)))
            return len(rows.all())

        return self.database.run_read(count)


@pytest.fixture
def site(tmp_path: Path) -> Any:
    path = tmp_path / db.DATABASE_NAME
    migrated_sqlite(path)  # set_wal and migrate, from a template (server_templates)
    database = db.Database(path)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    clock = Clock()
    config = WebConfig(database, uploads, clock=clock, limits=UploadLimits(body_bytes=64 * 1024))
    yield Site(database, config, clock)
    database.close()


Test = Callable[[Callable[..., httpx.AsyncClient]], Awaitable[None]]


def run(site: Site, test: Test, base: str = "http://127.0.0.1") -> None:
    """Run ``test(client)``: ``client(address)`` makes a client of the one
    application (its own cookie jar) coming from ``address``."""

    async def main() -> None:
        app = make_app(site.config)
        made: list[httpx.AsyncClient] = []

        def client(address: str = "127.0.0.1") -> httpx.AsyncClient:
            transport = httpx.ASGITransport(app=app, client=(address, 40000 + len(made)))
            c = httpx.AsyncClient(transport=transport, base_url=base)
            made.append(c)
            return c

        try:
            await test(client)
        finally:
            for c in made:
                await c.aclose()

    trio.run(main)


def form_token(page: str) -> str:
    found = re.search(r'name="form_token" value="([0-9a-f]{64})"', page)
    assert found, page
    return found.group(1)


async def use_link(client: httpx.AsyncClient, link: str) -> httpx.Response:
    """Open a link's page (GET: nothing used), then press its button (POST)."""
    path = link[link.index("/signin/") :] if "://" in link else f"/signin/{link}"
    page = await client.get(path)
    assert page.status_code == 200, page.text
    assert '<form method="post"' in page.text
    return await client.post(path, headers=ORIGIN)


def shown_link(page: str) -> str:
    found = re.search(r'<pre id="secret">(http://[^<]+)</pre>', page)
    assert found, page
    return found.group(1)


async def organiser(client: httpx.AsyncClient, site: Site) -> str:
    """Sign the client in as the organiser; its form token."""
    r = await use_link(client, site.organiser_link())
    assert r.status_code == 303 and r.headers["location"] == "/organiser"
    return form_token((await client.get("/organiser")).text)


async def invite(client: httpx.AsyncClient, token: str, name: str) -> str:
    r = await client.post(
        "/organiser/invites", data={"form_token": token, "display_name": name}, headers=ORIGIN
    )
    assert r.status_code == 201, r.text
    return shown_link(r.text)


def test_organiser_link_then_invites_one_use_each(site: Site) -> None:
    """The organiser's link and an invite: the GET shows a button and uses
    nothing; the POST makes the session (HttpOnly, SameSite=Lax cookie) and
    redirects to an address without the link; a second use fails (410)."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org, ann = client(), client()
        secret = site.organiser_link()
        for _ in range(2):  # a mail scanner's GETs use nothing
            assert (await org.get(f"/signin/{secret}")).status_code == 200
        r = await org.post(f"/signin/{secret}", headers=ORIGIN)
        assert r.status_code == 303 and r.headers["location"] == "/organiser"
        assert secret not in r.headers["location"]
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain HTTP on loopback
        # used once: a second POST, from another browser, fails; the GET says so
        again = await client().post(f"/signin/{secret}", headers=ORIGIN)
        assert again.status_code == 410 and "used already" in again.text
        assert (await client().get(f"/signin/{secret}")).status_code == 410
        page = await org.get("/organiser")
        assert page.status_code == 200 and "Invite a participant" in page.text
        link = await invite(org, form_token(page.text), "Ann Example")
        r = await use_link(ann, link)
        assert r.status_code == 303 and r.headers["location"] == "/me"
        me = await ann.get("/me")
        assert me.status_code == 200 and "Ann Example" in me.text
        assert (await ann.get("/organiser")).status_code == 303  # not the organiser's
        second = await client().post(link[link.index("/signin/") :], headers=ORIGIN)
        assert second.status_code == 410
        assert site.sessions_live() == 2  # the organiser's and Ann's

    run(site, test)


def test_expired_links_fail(site: Site) -> None:
    """An organiser link lives 24 hours, an invite its invite_seconds."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org = client()
        old = site.organiser_link()
        token = await organiser(org, site)
        link = await invite(org, token, "bob")
        stale = site.organiser_link()
        site.clock.now += sessions.ORGANISER_LINK_SECONDS
        r = await client().post(f"/signin/{stale}", headers=ORIGIN)
        assert r.status_code == 410 and "expired" in r.text
        assert (await client().post(f"/signin/{old}", headers=ORIGIN)).status_code == 410
        site.clock.now += site.config.site.invite_seconds
        r = await client().post(link[link.index("/signin/") :], headers=ORIGIN)
        assert r.status_code == 410 and "expired" in r.text
        assert (await client().post("/signin/" + "x" * 43, headers=ORIGIN)).status_code == 404

    run(site, test)


def test_forms_need_the_origin_and_the_form_token(site: Site) -> None:
    """A POST without the form token, with another session's, with a foreign
    Origin, or with neither Origin nor Sec-Fetch-Site: 403 and nothing done."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org, other = client(), client()
        token = await organiser(org, site)
        foreign = await organiser(other, site)
        data = {"form_token": token, "display_name": "carol"}
        attempts = [
            ({"display_name": "carol"}, ORIGIN),
            ({**data, "form_token": foreign}, ORIGIN),
            ({**data, "form_token": "0" * 64}, ORIGIN),
            (data, {"Origin": "http://attacker.example"}),
            (data, {"Origin": "null"}),
            (data, {"Origin": "https://127.0.0.1"}),  # another scheme: another origin
            (data, {}),
            (data, {"Sec-Fetch-Site": "cross-site"}),
        ]
        for form, headers in attempts:
            r = await org.post("/organiser/invites", data=form, headers=headers)
            assert r.status_code == 403, (form, headers, r.text)
        assert site.database.run_read(store.participant_by_name, "carol") is None
        # the same form from the page itself: no Origin but Sec-Fetch-Site same-origin
        r = await org.post(
            "/organiser/invites", data=data, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert r.status_code == 201
        assert site.database.run_read(store.participant_by_name, "carol") is not None
        # a link's button is a POST too: a foreign origin cannot sign a browser in
        r = await client().post(f"/signin/{site.organiser_link()}", headers={"Origin": "http://x"})
        assert r.status_code == 403 and "set-cookie" not in r.headers

    run(site, test)


def test_a_sign_in_makes_a_new_session_and_ends_the_old(site: Site) -> None:
    """No fixation: the session id a browser had before a sign-in is not
    valid after it (ended on the server), and the new id differs."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        browser = client()
        await organiser(browser, site)
        before = browser.cookies[COOKIE]
        await organiser(browser, site)  # a second sign-in from the same browser
        after = browser.cookies[COOKIE]
        assert before != after
        stale = client()
        stale.cookies.set(COOKIE, before)
        assert (await stale.get("/organiser")).status_code == 303  # signed out
        fresh = client()
        fresh.cookies.set(COOKIE, after)
        assert (await fresh.get("/organiser")).status_code == 200
        assert site.sessions_live() == 1

    run(site, test)


def test_sign_out_and_the_organisers_revoke_end_sessions_on_the_server(site: Site) -> None:
    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org, ann, ann2 = client(), client(), client()
        token = await organiser(org, site)
        await use_link(ann, await invite(org, token, "ann"))
        pid = site.database.run_read(store.participant_by_name, "ann").id
        r = await org.post(
            f"/organiser/participants/{pid}/link", data={"form_token": token}, headers=ORIGIN
        )
        await use_link(ann2, shown_link(r.text))  # Ann's second browser
        kept = ann.cookies[COOKIE]
        # sign-out: the cookie's id no longer works, even sent again
        me = await ann.get("/me")
        r = await ann.post("/signout", data={"form_token": form_token(me.text)}, headers=ORIGIN)
        assert r.status_code == 303 and f"{COOKIE}=" in r.headers["set-cookie"]
        replay = client()
        replay.cookies.set(COOKIE, kept)
        assert (await replay.get("/me")).status_code == 303
        # the organiser ends every session of Ann: her second browser is out
        assert (await ann2.get("/me")).status_code == 200
        r = await org.post(
            f"/organiser/participants/{pid}/sessions/end",
            data={"form_token": token},
            headers=ORIGIN,
        )
        assert r.status_code == 303
        assert (await ann2.get("/me")).status_code == 303
        assert site.database.run_read(sessions.live_sessions, pid, site.clock()) == 0
        # the function the route calls, for a script: nothing left to end
        assert site.database.run_write(sessions.end_sessions_of, pid, site.clock()) == 0

    run(site, test)


def test_sign_in_rate_limit_per_address(site: Site) -> None:
    """Ten link exchanges or token sign-ins a minute per address, then 429
    with Retry-After; another address is not held back; a minute later the
    address may again."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        here, there = client("10.0.0.1"), client("10.0.0.2")
        for i in range(10):
            r = await here.post("/signin", data={"token": f"wrong-token-{i:030d}"}, headers=ORIGIN)
            assert r.status_code == 401
        r = await here.post(f"/signin/{site.organiser_link()}", headers=ORIGIN)
        assert r.status_code == 429
        assert r.headers["Retry-After"] == "60"
        site.clock.now += 15
        r = await here.post("/signin", data={"token": "x" * 43}, headers=ORIGIN)
        assert r.status_code == 429 and r.headers["Retry-After"] == "45"
        assert (
            await there.post("/signin", data={"token": "x" * 43}, headers=ORIGIN)
        ).status_code == 401
        site.clock.now += 45
        r = await here.post(f"/signin/{site.organiser_link()}", headers=ORIGIN)
        assert r.status_code == 303

    run(site, test)


def test_participant_page_tokens_name_and_upload(site: Site) -> None:
    """The participant's page: a new token (shown once) works with the API
    and is revoked from the page; the display name changes under its rules;
    the upload form takes a .py under the API's rules and the quota."""

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org, ann, api = client(), client(), client()
        await use_link(ann, await invite(org, await organiser(org, site), "ann"))
        token = form_token((await ann.get("/me")).text)
        r = await ann.post("/me/tokens", data={"form_token": token}, headers=ORIGIN)
        assert r.status_code == 201
        cli = re.search(r'<pre id="secret">([A-Za-z0-9_-]{43})</pre>', r.text)
        assert cli
        bearer = {"Authorization": f"Bearer {cli.group(1)}"}
        assert (await api.get("/api/submissions", headers=bearer)).json()["participant"] == "ann"
        # the API takes no cookie, the session's included
        assert (await ann.get("/api/submissions", headers=bearer)).status_code == 400
        me = (await ann.get("/me")).text
        assert cli.group(1) not in me  # shown once
        tid = re.search(r'action="/me/tokens/(\d+)/revoke"', me)
        assert tid
        r = await ann.post(
            f"/me/tokens/{tid.group(1)}/revoke", data={"form_token": token}, headers=ORIGIN
        )
        assert r.status_code == 303
        assert (await api.get("/api/submissions", headers=bearer)).status_code == 401
        # display names
        for bad, status in (
            ("=cmd()", 400),
            ("-1", 400),
            ("@x", 400),
            ("+", 400),
            ("x" * 33, 400),
            ("\u202e", 400),
        ):
            r = await ann.post(
                "/me/name", data={"form_token": token, "display_name": bad}, headers=ORIGIN
            )
            assert r.status_code == status, bad
        await invite(org, form_token((await org.get("/organiser")).text), "Bob")
        r = await ann.post(
            "/me/name", data={"form_token": token, "display_name": "BOB"}, headers=ORIGIN
        )
        assert r.status_code == 409
        r = await ann.post(
            "/me/name",
            data={"form_token": token, "display_name": "  Ann\u200b  the\tFirst "},
            headers=ORIGIN,
        )
        assert r.status_code == 303
        assert (
            site.database.run_read(store.participant_by_name, "ann").display_name == "Ann the First"
        )
        # the upload form: without the token nothing is stored; with it, a submission
        files = {"file": ("x.py", BOT_PY, "text/x-python")}
        r = await ann.post("/me/submissions", files=files, headers=ORIGIN)
        assert r.status_code == 403
        assert not list(site.config.uploads.iterdir())
        r = await ann.post(
            "/me/submissions", data={"form_token": token}, files=files, headers=ORIGIN
        )
        assert r.status_code == 201 and "submission 1 received: queued" in r.text
        pid = site.database.run_read(store.participant_by_name, "ann").id
        assert [s.kind for s in site.database.run_read(store.submissions_of, pid)] == ["py"]

    run(site, test)


def test_storage_quota(site: Site) -> None:
    """A participant's stored submissions stay under the quota (413 past it;
    the same file again adds nothing)."""
    site.config.site = SiteSettings(quota_bytes=2 * len(BOT_PY) + 10)
    site.config.rate = site.config.rate.__class__(interval_seconds=0, per_day=100)

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        org, ann = client(), client()
        await use_link(ann, await invite(org, await organiser(org, site), "ann"))
        token = form_token((await ann.get("/me")).text)

        async def upload(data: bytes) -> httpx.Response:
            files = {"file": ("x.py", data, "text/x-python")}
            return await ann.post(
                "/me/submissions", data={"form_token": token}, files=files, headers=ORIGIN
            )

        assert (await upload(BOT_PY)).status_code == 201
        assert (await upload(BOT_PY)).status_code == 201  # the same file: no more storage
        assert (await upload(BOT_PY + b"# 2\n")).status_code == 201
        r = await upload(BOT_PY + b"# 3\n")
        assert r.status_code == 413 and "quota" in r.text

    run(site, test)


def test_body_cap_on_every_route(site: Site) -> None:
    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        c = client()
        cap = site.config.site.form_bytes
        r = await c.post(
            "/signin",
            content=b"token=" + b"x" * cap,
            headers={**ORIGIN, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 413

        async def chunks() -> Any:
            for _ in range(cap // 1024 + 2):
                yield b"x" * 1024

        r = await c.post(
            "/signin",
            content=chunks(),
            headers={**ORIGIN, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 413
        r = await c.post("/nowhere", content=b"x" * (cap + 1))
        assert r.status_code == 413

    run(site, test)


async def _stream_status(app: Any, cookie: str | None, address: str, started: list[int]) -> None:
    headers = [(b"host", b"127.0.0.1")]
    if cookie:
        headers.append((b"cookie", f"{COOKIE}={cookie}".encode()))
    scope = {
        "type": "http", "method": "GET", "path": "/events", "raw_path": b"/events",
        "query_string": b"", "headers": headers, "scheme": "http",
        "server": ("127.0.0.1", 8000), "client": (address, 5000), "root_path": "",
        "http_version": "1.1", "asgi": {"version": "3.0"},
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message["status"])
            if message["status"] == 429:
                assert dict(message["headers"])[b"retry-after"] == b"10"

    await app(scope, receive, send)


def test_event_stream_caps(site: Site) -> None:
    """At most 4 streams per session, 4 per address without one, and the
    total; a closed stream gives its place back."""
    site.config.site = SiteSettings(streams_total=9)
    site.config.poll_seconds = 3600
    site.config.pages = "public"  # streams without a session (docs/server-web.md, who sees what)

    async def main() -> None:
        app = make_app(site.config)
        sid = site.database.run_write(
            lambda conn: sessions.start_session(conn, "organiser", None, site.clock()).session_id
        )
        statuses: list[int] = []
        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(_stream_status, app, sid, "10.0.0.1", statuses)
            for _ in range(5):
                nursery.start_soon(_stream_status, app, None, "10.0.0.2", statuses)
            with trio.fail_after(30):
                while len(statuses) < 10:  # noqa: ASYNC110
                    await trio.sleep(0.01)
            assert sorted(statuses) == [200] * 8 + [429] * 2
            assert app.streams.open == 8
            # the total: one more place (9), from a third address
            nursery.start_soon(_stream_status, app, None, "10.0.0.3", statuses)
            nursery.start_soon(_stream_status, app, None, "10.0.0.4", statuses)
            with trio.fail_after(30):
                while len(statuses) < 12:  # noqa: ASYNC110
                    await trio.sleep(0.01)
            assert sorted(statuses[10:]) == [200, 429]
            nursery.cancel_scope.cancel()
        assert app.streams.open == 0

    trio.run(main)


def test_hsts_and_secure_cookie_over_tls(site: Site) -> None:
    """Over TLS (scheme https) every response carries HSTS and the session
    cookie is __Host- prefixed and Secure."""
    site.config.site = SiteSettings(secure=True)

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        c = client()
        r = await c.get("/")
        assert r.headers["strict-transport-security"] == HSTS
        secret = site.organiser_link()
        r = await c.post(f"/signin/{secret}", headers={"Origin": "https://127.0.0.1"})
        assert r.status_code == 303
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{SECURE_COOKIE}=") and "Secure" in cookie and "Path=/" in cookie
        assert "Domain" not in cookie
        assert (await c.get("/organiser")).status_code == 200

    run(site, test, base="https://127.0.0.1")


def test_forwarded_headers_trusted_from_the_proxy_only(site: Site) -> None:
    """Behind --behind-proxy 10.9.9.9: the proxy's X-Forwarded-For names the
    client (the rate limit counts it), anyone else's is ignored."""
    site.config.proxy = "10.9.9.9"
    site.config.loopback = False
    site.config.site = SiteSettings(secure=True, sign_in_per_minute=1)

    async def test(client: Callable[..., httpx.AsyncClient]) -> None:
        proxy, direct = client("10.9.9.9"), client("10.0.0.7")
        fwd = {"X-Forwarded-Proto": "https", "Origin": "https://arena.example"}

        def via(address: str) -> dict[str, str]:
            return {**fwd, "X-Forwarded-For": address, "Host": "arena.example"}

        assert (
            await proxy.post("/signin", data={"token": "x" * 43}, headers=via("1.1.1.1"))
        ).status_code == 401
        assert (
            await proxy.post("/signin", data={"token": "x" * 43}, headers=via("1.1.1.1"))
        ).status_code == 429
        assert (
            await proxy.post("/signin", data={"token": "x" * 43}, headers=via("2.2.2.2"))
        ).status_code == 401
        r = await proxy.get("/", headers=via("3.3.3.3"))
        assert r.headers["strict-transport-security"] == HSTS  # https at the proxy
        # not the proxy: its forwarded headers change nothing (its own address counts)
        headers = {**via("4.4.4.4"), "Origin": "http://arena.example"}
        assert (
            await direct.post("/signin", data={"token": "x" * 43}, headers=headers)
        ).status_code == 401
        assert (
            await direct.post(
                "/signin",
                data={"token": "x" * 43},
                headers={**via("5.5.5.5"), "Origin": "http://arena.example"},
            )
        ).status_code == 429
        assert (
            "strict-transport-security"
            not in (await direct.get("/", headers=via("6.6.6.6"))).headers
        )

    run(site, test, base="http://arena.example")


def test_migration_0002_fills_display_names(tmp_path: Path) -> None:
    """A database at revision 0001 with participants "Ann" and "ann" (names
    were unique, not ignoring case) gets display names unique ignoring case,
    after its backup copy."""
    from alembic import command
    from sqlalchemy import insert, select

    from arena.server import migrate as migration

    path = tmp_path / db.DATABASE_NAME
    db.set_wal(path)
    database = db.Database(path)
    try:
        config = migration._config()
        with database.writer.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0001")
        with database.writer.begin() as conn:
            for name in ("Ann", "ann", "=sum(A1)"):
                # the 0001 columns only (the table object knows 0002's too)
                conn.execute(
                    insert(db.participants).values(name=name, status="active", created_at=0.0)
                )
        result = migration.migrate(database)
        assert (result.before, result.after) == ("0001", db.SCHEMA_VERSION)
        assert result.backup is not None and result.backup.is_file()
        with database.read() as conn:
            shown = conn.execute(
                select(db.participants.c.display_name, db.participants.c.display_key).order_by(
                    db.participants.c.id
                )
            ).all()
        assert [tuple(r) for r in shown] == [
            ("Ann", "ann"),
            ("ann (2)", "ann (2)"),
            ("=sum(A1)", "=sum(a1)"),
        ]
    finally:
        database.close()


def test_add_gives_a_display_name_unique_ignoring_case(tmp_path: Path) -> None:
    """serve --add NAME: the display name is NAME without a formula's first
    character; a name whose display name is taken ignoring case is refused."""
    from arena.server import folder

    root = tmp_path / "srv"
    folder.init_folder(root, web_user=None)
    comp = folder.open_folder(root)
    try:
        folder.add_participant(comp, "Ann")
        folder.add_participant(comp, "=cmd|calc")
        with pytest.raises(folder.FolderError, match="display name 'ann' is taken"):
            folder.add_participant(comp, "ann")
        with comp.database.read() as conn:
            assert store.participant_by_name(conn, "Ann").display_name == "Ann"
            assert store.participant_by_name(conn, "=cmd|calc").display_name == "cmd|calc"
            assert store.participant_by_name(conn, "ann") is None
    finally:
        comp.close()


def test_a_trickled_body_is_cut_off(site: Site) -> None:
    """A body sent a chunk every 90 s (each read within Hypercorn's read
    timeout) is refused with 408 once BODY_SECONDS have passed since its
    first read (Trio's MockClock: no wall time), before it is complete."""
    from arena.server.web import BODY_SECONDS

    app = make_app(site.config)
    sent: list[dict[str, Any]] = []
    chunks = 0

    async def receive() -> dict[str, Any]:
        nonlocal chunks
        await trio.sleep(90)
        chunks += 1
        return {"type": "http.request", "body": b"t", "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "method": "POST", "path": "/signin", "raw_path": b"/signin",
        "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000), "root_path": "", "http_version": "1.1",
        "asgi": {"version": "3.0"},
        "headers": [
            (b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1"),
            (b"content-type", b"application/x-www-form-urlencoded"),
        ],
    }  # fmt: skip

    async def main() -> None:
        await app(scope, receive, send)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 408
    assert chunks == int(BODY_SECONDS // 90) == 3  # at 90, 180 and 270 s; then cut off
    assert b"took over 300 s" in b"".join(m.get("body", b"") for m in sent[1:])
