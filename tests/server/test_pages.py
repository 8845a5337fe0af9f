"""The pages' forms and hostile output (issue 28): the organiser's action
forms, each checked for this site's Origin and the session's form token;
a bot's stderr holding markup, ANSI escapes, a bidirectional override and
CRLF-forged log lines shown as text on a sandboxed page; the runner's log
one JSON object a line whatever a bot writes. httpx against the app under
Trio, a real SQLite file; the viewer put in the scope as sign-in does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import trio
from test_runner_logic import Script, _competition, _game, _run, scripted
from test_visibility import ORGANISER, OTHER, PARTICIPANT, app_as
from test_web import Server, play_table, server

from arena.protocol.faults import Fault
from arena.protocol.records import GameSpec
from arena.server import actions, db
from arena.server.viewer import Viewer
from arena.server.web import SERVER_CSP

__all__ = ["scripted", "server"]

ORIGIN = "http://127.0.0.1"
HOSTILE = (
    "<script>alert(1)</script>\n"
    '<img src=x onerror="alert(2)">\n'
    "\x1b[31mred\x1b[0m \x1b]0;title\x07\n"
    "abc\u202edcba\u2066x\u2069\n"
    '\r\n{"t": 0, "event": "forged", "by": "a bot"}\r\nend\n'
)


def run_as(server: Server, viewer: Viewer, test: Any) -> None:
    async def main() -> None:
        transport = httpx.ASGITransport(app=app_as(server.config, viewer))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers={"Origin": ORIGIN}
        ) as client:
            await test(client)

    trio.run(main)


def _actions(server: Server) -> list[actions.ActionRow]:
    return server.database.run_read(actions.all_actions)


def test_the_organiser_s_forms_record_actions_with_the_form_token_only(server: Server) -> None:
    server.config.pages = "signed-in"
    server.add("ann")
    server.add("bob")
    play_table(server)

    async def organiser(client: httpx.AsyncClient) -> None:
        r = await client.get("/tables/0/manage")
        assert r.status_code == 200 and 'name="form_token" value="ft-o"' in r.text
        assert r.headers["content-security-policy"] == SERVER_CSP
        r = await client.post("/actions/void/0", data={"reason": "collusion"})
        assert r.status_code == 403 and _actions(server) == []
        r = await client.post(  # the right token from another site's page
            "/actions/void/0",
            data={"reason": "collusion", "form_token": "ft-o"},
            headers={"Origin": "http://attacker.example"},
        )
        assert r.status_code == 403 and _actions(server) == []
        r = await client.post("/actions/void/0", data={"reason": "collusion", "form_token": "ft-a"})
        assert r.status_code == 403 and _actions(server) == []
        for fetch_site in ("cross-site", "same-site"):  # Origin: null, another page's
            r = await client.post(
                "/actions/void/0",
                data={"reason": "collusion", "form_token": "ft-o"},
                headers={"Origin": "null", "Sec-Fetch-Site": fetch_site},
            )
            assert r.status_code == 403 and _actions(server) == []
        r = await client.post("/actions/void/0", data={"reason": " ", "form_token": "ft-o"})
        assert r.status_code == 303 and "give+a+reason" in r.headers["location"]
        r = await client.post(
            "/actions/void/0", data={"reason": "collusion\u202e", "form_token": "ft-o"}
        )
        assert (r.status_code, r.headers["location"]) == (303, "/tables/0/manage")
        r = await client.post(  # Chromium's own form under Referrer-Policy: no-referrer
            "/actions/suspend/2",
            data={"form_token": "ft-o"},
            headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        )
        assert (r.status_code, r.headers["location"]) == (303, "/participants")
        (suspend, void) = _actions(server)
        assert (void.kind, void.status, void.reason, void.table_id) == (
            "void",
            "pending",
            "collusion",
            1,
        )
        assert (suspend.kind, suspend.participant_id) == ("suspend", 2)
        page = (await client.get("/tables/0/manage")).text
        assert "voided by hand" in page and "pending" in page and "collusion" in page
        assert "suspended" in (await client.get("/participants")).text
        assert "ladder table 0" in (await client.get("/actions")).text

    run_as(server, ORGANISER, organiser)

    async def participant(client: httpx.AsyncClient) -> None:
        r = await client.post("/actions/replay/0", data={"form_token": "ft-a"})
        assert r.status_code == 404
        assert (await client.get("/tables/0/manage")).status_code == 404

    run_as(server, PARTICIPANT, participant)
    assert len(_actions(server)) == 2


def _hostile(server: Server) -> None:
    def write(conn: Any) -> None:
        for game in conn.execute(db.games.select()).all():
            record = dict(game.record)
            record["stderr"] = [HOSTILE] * 4
            record["transcripts"] = [[{"t": 0, "reply": HOSTILE}]] * 4
            conn.execute(db.games.update().where(db.games.c.id == game.id).values(record=record))
        conn.execute(db.submissions.update().values(check_output=HOSTILE))

    server.database.run_write(write)


def _assert_shown_as_text(body: str) -> None:
    assert "<script>alert" not in body and "<img" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in body
    for raw in ("\x1b", "\x07", "\u202e", "\u2066", "\u2069"):
        assert raw not in body
    for escape in ("\\x1b[31mred", "\\x07", "abc\\u202edcba\\u2066x\\u2069"):
        assert escape in body


def test_hostile_stderr_is_text_on_sandboxed_pages(server: Server) -> None:
    server.config.pages = "signed-in"
    server.add("ann")
    server.add("bob")
    play_table(server)
    _hostile(server)

    async def test(client: httpx.AsyncClient) -> None:
        for path in (
            "/tables/0?rotation=1",
            "/tables/0/seats/2?rotation=1",
            "/submissions/1/output",
        ):
            r = await client.get(path)
            assert r.status_code == 200, path
            policy = r.headers["content-security-policy"]
            assert policy.startswith(SERVER_CSP.replace("form-action 'self'", "form-action 'none'"))
            assert "; sandbox" in policy and "allow-same-origin" not in policy
            assert "allow-forms" not in policy and "form-action 'none'" in policy
            _assert_shown_as_text(r.text)
        r = await client.get("/tables/0/seats/2/stderr?rotation=1")
        assert r.content == HOSTILE.encode()
        assert r.headers["content-type"] == "text/plain; charset=utf-8"
        assert r.headers["content-disposition"] == (
            'attachment; filename="table-0-rotation-1-seat-2-stderr.txt"'
        )
        assert r.headers["x-content-type-options"] == "nosniff"
        r = await client.get("/tables/0/seats/2/transcript?rotation=1")
        assert json.loads(r.text.splitlines()[0]) == {"t": 0, "reply": HOSTILE}
        assert r.headers["content-disposition"].startswith("attachment")

    run_as(server, ORGANISER, test)

    async def participant(client: httpx.AsyncClient) -> None:
        r = await client.get("/tables/0?rotation=1")  # its own seat only
        assert r.text.count('class="hostile"') == 1
        _assert_shown_as_text(r.text)

    run_as(server, OTHER, participant)


def test_the_runner_s_log_stays_one_json_object_a_line(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    """A bot's CRLF-forged lines in a fault's detail reach the log (the
    validation's reason) as one escaped JSON line."""

    def forged(spec: GameSpec) -> dict[str, Any]:
        game = _game(spec)
        seat = list(spec.seats).index("s1")
        game["faults"] = [Fault(seat, "s1", "crashed", HOSTILE, 1, 5, "play").to_json()]
        return game

    root = tmp_path / "c"
    _competition(root, 1)
    scripted.append(("V", forged))
    log = _run(root, 0)  # every line parses as one JSON object
    assert all(isinstance(e, dict) and "event" in e for e in log)
    assert "forged" not in [e["event"] for e in log]
    (validated,) = [e for e in log if e["event"] == "validated"]
    assert validated["passed"] is False
    assert "\r" not in validated["reason"] and "\n" not in validated["reason"]
    assert '{"t": 0, "event": "forged", "by": "a bot"}' in validated["reason"]
