"""The class's routes (arena/server/classapi.py) through the web application:
httpx against the Starlette app under Trio, a real competition folder and
SQLite file; no runner, no bot."""

from __future__ import annotations

import csv
import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from arena.server import deadline, folder, sessions, store
from arena.server.classapi import settings_of
from arena.server.signin import cookie_name
from arena.server.viewer import Viewer
from arena.server.web import WebConfig, make_app

# init_folder fills its database from a migrated template (tests/server/db_fixtures.py).
pytestmark = pytest.mark.usefixtures("migrated_folders")
pytest_plugins = ["db_fixtures"]

DEADLINE = "2030-06-01T12:00:00+02:00"  # 10:00 UTC
BEFORE = 1_900_000_000.0  # 2030-03-17, before it
AFTER = 1_920_000_000.0  # 2030-11-03, after it


class Clock:
    now = BEFORE

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def comp(tmp_path: Path) -> Any:
    settings = folder.CompetitionSettings.from_mapping(
        {"class": {"deadline": DEADLINE, "challenges_per_day": 1}}, "t"
    )
    root = tmp_path / "c"
    folder.init_folder(root, settings)
    settings_of.cache_clear()
    c = folder.open_folder(root)
    tokens = {}
    with c.database.write() as conn:
        for i, name in enumerate(["ann", "bob"]):
            p = store.add_participant(conn, name, 0.0)
            tokens[name] = f"token-{name}-" + "x" * 20
            store.add_token(conn, p.id, store.token_hash(tokens[name]), 0.0)
            s, _ = store.add_submission(conn, p.id, f"{i + 1:x}" * 64, "py", 1, 1.0)
            store.record_step(conn, s.id, "check", True, 2.0)
            store.record_step(conn, s.id, "validation", True, 3.0)
        s, _ = store.add_submission(conn, 1, "9" * 64, "py", 1, 4.0)  # ann's, failed check
        store.record_step(conn, s.id, "check", False, 5.0, "crashed")
    yield c, tokens
    c.close()


def run(
    c: Any, test: Callable[[httpx.AsyncClient], Awaitable[None]], viewer: Viewer | None = None
) -> Clock:
    clock = Clock()
    config = WebConfig(c.database, c.paths.uploads, clock=clock)

    cookies: dict[str, str] = {}
    if viewer is not None:  # a real session of the viewer's role, as a sign-in makes
        with c.database.write() as conn:
            made = sessions.start_session(conn, viewer.role, viewer.participant_id, clock())
        cookies[cookie_name(False)] = made.session_id

    async def main() -> None:
        app = make_app(config)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", cookies=cookies
        ) as client:
            await test(client)

    trio.run(main)
    return clock


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_deadline_and_the_final_page_show_utc_and_a_time_element(comp: Any) -> None:
    c, tokens = comp

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.get("/api/deadline")
        assert r.json() == {
            "deadline": 1_906_538_400.0,
            "utc": "2030-06-01 10:00:00 UTC",
            "iso": "2030-06-01T10:00:00Z",
            "passed": False,
        }
        # The final's standings are seen as the standings are (pages = "signed-in",
        # the default): not by anyone, by a participant's token.
        page = await client.get("/final")
        assert page.status_code == 401 and "sign in" in page.text
        assert "2030-06-01" not in page.text
        r = await client.get("/api/final")
        assert r.status_code == 401 and "not public" in r.json()["error"]
        final = (await client.get("/api/final", headers=auth(tokens["ann"]))).json()
        assert (final["started"], final["kind"], final["rows"]) == (False, "round-robin", [])

    run(c, test)

    async def signed_in(client: httpx.AsyncClient) -> None:
        page = await client.get("/final")
        assert page.status_code == 200
        assert (
            '<time class="local" datetime="2030-06-01T10:00:00Z">2030-06-01 10:00:00 UTC</time>'
            in page.text
        )
        assert '<script src="/class/localtime.js"></script>' in page.text
        js = await client.get("/class/localtime.js")
        assert js.headers["content-type"].startswith("text/javascript")
        assert "textContent" in js.text

    run(c, signed_in, Viewer("participant", 1))


def test_every_page_shows_the_deadline_in_utc_with_a_time_element(comp: Any) -> None:
    c, _ = comp
    footer = (
        '<span id="site-deadline">deadline <time class="local" '
        'datetime="2030-06-01T10:00:00Z">2030-06-01 10:00:00 UTC</time></span>'
    )

    async def test(client: httpx.AsyncClient) -> None:
        for path in ("/", "/tables", "/environment", "/submissions"):
            page = await client.get(path)
            assert page.status_code == 200, path
            assert footer in page.text, path
            assert '<script src="/class/localtime.js"></script>' in page.text, path

    run(c, test, Viewer("organiser"))


def test_pin_through_the_api_until_the_deadline(comp: Any) -> None:
    c, tokens = comp

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.post("/api/final/pin", json={"submission": 1}, headers=auth(tokens["ann"]))
        assert r.json() == {"participant": "ann", "final_submission": 1}, r.text
        r = await client.post("/api/final/pin", json={"submission": 3}, headers=auth(tokens["ann"]))
        assert r.status_code == 409
        assert "has not passed validation (it is failed)" in r.json()["error"]
        r = await client.post("/api/final/pin", json={"submission": 2}, headers=auth(tokens["ann"]))
        assert (r.status_code, r.json()["error"]) == (409, "you have no submission 2")
        r = await client.post(
            "/api/final/pin", json={"submission": "1"}, headers=auth(tokens["ann"])
        )
        assert r.status_code == 400
        r = await client.post("/api/final/pin", json={"submission": 1})
        assert r.status_code == 401
        r = await client.post("/api/final/pin?token=abc", json={"submission": 1})
        assert r.status_code == 400  # a token goes only in the header

    run(c, test)
    with c.database.read() as conn:
        assert deadline.pinned(conn, 1) == 1


def test_pin_refused_after_the_deadline(comp: Any) -> None:
    c, tokens = comp
    Clock.now = AFTER
    try:

        async def test(client: httpx.AsyncClient) -> None:
            r = await client.post(
                "/api/final/pin", json={"submission": 1}, headers=auth(tokens["ann"])
            )
            assert r.status_code == 409
            assert r.json()["error"].startswith("the deadline (2030-06-01 10:00:00 UTC) has passed")

        run(c, test)
    finally:
        Clock.now = BEFORE


def test_challenges_consent_and_the_days_limit_through_the_api(comp: Any) -> None:
    c, tokens = comp

    async def test(client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/api/challenges", json={"opponents": ["bob"]}, headers=auth(tokens["ann"])
        )
        assert (r.status_code, r.json()["error"]) == (403, "bob does not accept challenges")
        r = await client.post(
            "/api/challenges/consent", json={"allow": True}, headers=auth(tokens["bob"])
        )
        assert r.json() == {"participant": "bob", "accepting": True}
        r = await client.post(
            "/api/challenges", json={"opponents": ["bob"]}, headers=auth(tokens["ann"])
        )
        assert r.status_code == 201, r.text
        assert (r.json()["opponents"], r.json()["status"]) == (["s2"], "waiting")
        r = await client.post(
            "/api/challenges", json={"opponents": ["sample:low"]}, headers=auth(tokens["ann"])
        )
        assert (r.status_code, r.json()["error"]) == (429, "at most 1 challenges in 24 hours")
        r = await client.post(
            "/api/challenges", json={"opponents": "bob"}, headers=auth(tokens["bob"])
        )
        assert r.status_code == 400
        mine = (await client.get("/api/challenges", headers=auth(tokens["ann"]))).json()
        assert [x["opponents"] for x in mine["mine"]] == [["s2"]]
        assert mine["accepting"] is False

    run(c, test)


def test_grades_csv_is_the_organisers_only(comp: Any) -> None:
    c, tokens = comp

    async def anonymous(client: httpx.AsyncClient) -> None:
        r = await client.get("/organiser/grades.csv", headers=auth(tokens["ann"]))
        assert r.status_code == 403
        g = (await client.get("/api/gauntlet", headers=auth(tokens["ann"]))).json()
        assert g["rows"] == []  # the final has not started: nobody is eligible yet
        assert (await client.get("/api/gauntlet")).status_code == 401

    async def organiser(client: httpx.AsyncClient) -> None:
        r = await client.get("/organiser/grades.csv")
        assert r.status_code == 200
        assert r.headers["content-disposition"] == 'attachment; filename="grades.csv"'
        header = next(csv.reader(io.StringIO(r.text)))
        assert header[:4] == ["participant_id", "display_name", "submission_id", "sha256"]
        assert "duplicate" in header and "points_per_hand" in header

    run(c, anonymous)
    run(c, organiser, Viewer("organiser"))
