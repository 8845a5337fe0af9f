"""The competition server's pages (issue 28): what each viewer sees, and the
organiser's forms. Mounted by :func:`arena.server.web.make_app` (one line:
``*pages.routes(config)``); who may see each page is
:mod:`arena.server.visibility`'s (``RULES``), the viewer is the one the
sign-in layer put in the ASGI scope (:func:`arena.server.viewer.viewer_of`).

Pages (docs/server-web.md, "Who sees what", is the table):

* ``/``, ``/tables``, ``/tables/{n}`` (the replay player, and beside it the
  stderr of each seat the viewer may see), ``/environment``;
* ``/tables/{n}/seats/{s}?rotation=R``: one seat's stderr and transcript;
  ``.../stderr`` and ``.../transcript`` download them;
* ``/submissions`` (a participant's own, the organiser's everyone's; the
  upload form is on the participant's page, ``/me``:
  :mod:`arena.server.signin`), ``/submissions/{id}`` (its steps),
  ``/submissions/{id}/output`` (the check's report; ``/output.txt``
  downloads it);
* the organiser's: ``/participants`` (suspend, restore), ``/voids``,
  ``/actions``, ``/tables/{n}/manage`` (play again, void with a reason).

Hostile text: a bot's stderr, transcript and check report go through
:func:`arena.protocol.codec.visible_text` (control and bidirectional
characters as escapes) into autoescaped templates, cut at
:data:`SHOWN_CHARS`, on pages whose ``Content-Security-Policy`` adds
``sandbox`` (``sandbox allow-scripts`` where the replay player runs: no
same origin, no forms, no pop-ups); a download is ``text/plain`` with
``nosniff`` and ``Content-Disposition: attachment``; names and reasons go
through :func:`~arena.protocol.codec.clean_text`; JSON reaches a page only
through ``json_script`` / ``tojson``.

Forms (``POST``): the organiser's actions, each checked for this site's
``Origin`` and the session's form token (:func:`form_ok`), answered with
``303`` to the page it changed.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from arena.live.server import SECURITY_HEADERS
from arena.protocol.codec import clean_text, visible_text
from arena.report.outputs import json_script, replay_data
from arena.server import actions, db, store, visibility, webstore
from arena.server.deadline import deadline_json
from arena.server.environment import environment
from arena.server.folder import settings_of
from arena.server.viewer import Viewer, viewer_of

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

#: The server's Content-Security-Policy (:data:`arena.server.web.SERVER_CSP`,
#: the same text: the live view's, with forms posting to this site only).
SERVER_CSP: Final = SECURITY_HEADERS["Content-Security-Policy"].replace(
    "form-action 'none'", "form-action 'self'"
)


class PageConfig(Protocol):
    """What the pages read of :class:`arena.server.web.WebConfig`."""

    @property
    def database(self) -> db.Database:
        """The competition's database."""

    @property
    def pages(self) -> str:
        """``"signed-in"`` or ``"public"``."""

    @property
    def clock(self) -> Callable[[], float]:
        """Seconds since the epoch."""

    @property
    def uploads(self) -> Path:
        """The competition's uploads folder (its settings file is beside it)."""


#: Renders a template with its context (:func:`arena.server.web.render`).
Render = Callable[..., str]

#: Characters of a stderr, transcript or check report shown on a page (the
#: download holds it all, as the record or the database keeps it).
SHOWN_CHARS: Final = 64_000
#: Finished tables listed on ``/tables``.
TABLES_SHOWN: Final = 200
#: The pages' own templates (loaded when the routes are made, before the web
#: process drops its privileges).
TEMPLATES: Final = (
    "_macros.html.j2",
    "base.html.j2",
    "standings.html.j2",
    "tables.html.j2",
    "table.html.j2",
    "environment.html.j2",
    "missing.html.j2",
    "signin.html.j2",
    "seat.html.j2",
    "submissions.html.j2",
    "submission.html.j2",
    "output.html.j2",
    "participants.html.j2",
    "voids.html.j2",
    "actions.html.j2",
    "manage.html.j2",
)


def csp(sandbox: str | None = None) -> str:
    """The server's ``Content-Security-Policy`` (:data:`SERVER_CSP`); on a
    page that shows a bot's output, ``sandbox`` (plus its allowances, e.g.
    ``"allow-scripts"``; ``""`` for none) and no form at all
    (``form-action 'none'``)."""
    if sandbox is None:
        return SERVER_CSP
    policy = SERVER_CSP.replace("form-action 'self'", "form-action 'none'")
    return policy + "; sandbox" + (f" {sandbox}" if sandbox else "")


def form_ok(request: Request, viewer: Viewer, given: str | None) -> bool:
    """Whether a form's ``POST`` may be taken: it comes from this site's own
    pages (``Origin``, or ``Sec-Fetch-Site: same-origin``:
    :func:`arena.server.signin.same_origin`) and carries the viewer's
    session's form token (:func:`form_token_ok`). The one check of every
    form of these pages."""
    from arena.server.signin import same_origin

    return same_origin(request.headers, request.url.scheme) and form_token_ok(viewer, given)


def form_token_ok(viewer: Viewer, given: str | None) -> bool:
    """Whether a form's ``form_token`` is the viewer's session's (compared in
    constant time); never for a viewer without one."""
    want = viewer.form_token
    if not want or not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), want.encode("utf-8", "replace"))


def shown(text: str | None, limit: int = SHOWN_CHARS) -> dict[str, Any]:
    """Hostile text for a template: ``text`` through :func:`visible_text`,
    cut at ``limit`` characters; ``more`` the characters left out."""
    raw = text or ""
    return {"text": visible_text(raw[:limit]), "more": max(0, len(raw) - limit), "empty": not raw}


def transcript_text(entries: Any) -> str:
    """A seat's transcript as JSON lines (one message a line, ASCII)."""
    if not isinstance(entries, list):
        return ""
    return "".join(json.dumps(e, ensure_ascii=True, sort_keys=True) + "\n" for e in entries)


def _owners(conn: Any) -> dict[str, int]:
    """Entrant label -> the participant id it belongs to."""
    rows = conn.execute(
        db.submissions.select().with_only_columns(
            db.submissions.c.id, db.submissions.c.participant_id
        )
    )
    return {store.entrant_label(int(r.id)): int(r.participant_id) for r in rows}


def _table_data(conn: Any, number: int, organiser: bool) -> dict[str, Any] | None:
    """A ladder table a viewer may open: done with its four games, or (the
    organiser) void; its records, names, owners and actions."""
    table = store.table_by_number(conn, "ladder", number)
    if table is None:
        return None
    records = store.table_records(conn, table.id)
    if not (table.status == "done" and len(records) == 4) and not (
        organiser and table.status == "void"
    ):
        return None
    return {
        "table": table,
        "records": records,
        "names": webstore.entrant_names(conn),
        "owners": _owners(conn),
        "actions": actions.actions_on(conn, table_id=table.id),
    }


def _public(record: dict[str, Any], names: dict[str, str]) -> Any:
    """A game record as the replay player gets it: no stderr, no
    transcripts, the seats named by participant."""
    out = {k: v for k, v in record.items() if k not in ("stderr", "transcripts")}
    out["seats"] = [webstore.shown_name(str(s), names) for s in record.get("seats", [])]
    out["bot_names"] = [
        clean_text(n) if isinstance(n, str) else None for n in record.get("bot_names", [])
    ]
    return out


def _int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def routes(config: PageConfig, render: Render) -> list[Any]:
    """The pages' Starlette routes for ``config`` (its ``pages`` setting says
    who sees the public ones), rendering with ``render`` (autoescaped
    templates; :data:`TEMPLATES` are this module's)."""
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    database = config.database

    def page(
        request: Request,
        template: str,
        status: int = 200,
        sandbox: str | None = None,
        **context: Any,
    ) -> Response:
        viewer = viewer_of(request.scope)
        # The deadline on every page (issue 30), in UTC; the reader's time by
        # /class/localtime.js where the page may run scripts.
        site_deadline = deadline_json(settings_of(config.uploads), config.clock())
        body = render(
            template, viewer=viewer, pages=config.pages, site_deadline=site_deadline, **context
        )
        return HTMLResponse(body, status, headers={"Content-Security-Policy": csp(sandbox)})

    def refusal(request: Request, decision: str, what: str) -> Response:
        if decision == visibility.SIGN_IN:
            return page(request, "signin.html.j2", 401, title="Sign in", what=what)
        return page(
            request, "missing.html.j2", 404, title="Not found", text=f"there is no {what} here"
        )

    def decide(request: Request, name: str, owner: int | None = None) -> str:
        return visibility.may_see(viewer_of(request.scope), name, config.pages, owner)

    def download(text: str, filename: str) -> Response:
        return Response(
            text,
            media_type="text/plain; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="{filename}"',
                "Content-Security-Policy": csp(""),
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def index(request: Request) -> Response:
        if (d := decide(request, "standings")) != visibility.SHOWN:
            return refusal(request, d, "standings page")
        data = await database.read_async(webstore.standings_json)
        return page(request, "standings.html.j2", title="Standings", data=data)

    async def tables_page(request: Request) -> Response:
        if (d := decide(request, "tables")) != visibility.SHOWN:
            return refusal(request, d, "list of tables")
        rows = await database.read_async(webstore.finished_tables_json, TABLES_SHOWN)
        return page(request, "tables.html.j2", title="Finished tables", tables=rows)

    async def table_page(request: Request) -> Response:
        viewer = viewer_of(request.scope)
        if (d := decide(request, "table")) != visibility.SHOWN:
            return refusal(request, d, "table")
        number = _int(request.path_params["number"])
        rotation = _int(request.query_params.get("rotation", "0"))
        found = await database.read_async(_table_data, number, viewer.organiser)
        if found is None or (found["records"] and not 0 <= rotation < len(found["records"])):
            return page(
                request,
                "missing.html.j2",
                404,
                title="Not finished",
                text=f"ladder table {clean_text(request.path_params['number'], 20)} is not "
                "finished (a table is shown once its four games are done)",
            )
        table, records, names, owners = (
            found["table"],
            found["records"],
            found["names"],
            found["owners"],
        )
        record = records[rotation] if records else None
        seats_out = []
        if record is not None:
            for seat, label in enumerate(record.get("seats", [])):
                if not visibility.sees_seat(viewer, owners.get(str(label))):
                    continue
                stderr = record.get("stderr") or []
                seats_out.append(
                    {
                        "seat": seat,
                        "name": webstore.shown_name(str(label), names),
                        "stderr": shown(stderr[seat] if seat < len(stderr) else ""),
                    }
                )
        return page(
            request,
            "table.html.j2",
            sandbox="allow-scripts",
            title=f"Table {table.number}",
            table=table,
            rotation=rotation,
            games=[
                {
                    "rotation": i,
                    "seats": [webstore.shown_name(s, names) for s in r.get("seats", [])],
                    "scores": r.get("scores", []),
                }
                for i, r in enumerate(records)
            ],
            seating=[webstore.shown_name(s, names) for s in table.seating],
            replay_json=json_script(replay_data(_public(record, names))) if record else None,
            seats=seats_out,
            actions=found["actions"],
            void_reason=clean_text(table.void_reason or "", 300),
        )

    async def seat_data(request: Request) -> tuple[Response | None, dict[str, Any]]:
        """The record and seat a seat page names, or the refusal."""
        viewer = viewer_of(request.scope)
        if not viewer.signed_in:
            return refusal(request, visibility.SIGN_IN, "seat"), {}
        number = _int(request.path_params["number"])
        seat = _int(request.path_params["seat"])
        rotation = _int(request.query_params.get("rotation", "0"))
        found = await database.read_async(_table_data, number, viewer.organiser)
        records = found["records"] if found else []
        if found is None or not 0 <= rotation < len(records) or not 0 <= seat < 4:
            return refusal(request, visibility.HIDDEN, "seat"), {}
        record = records[rotation]
        label = str(record.get("seats", ["", "", "", ""])[seat])
        owner = found["owners"].get(label)
        if (d := decide(request, "seat", owner)) != visibility.SHOWN:
            return refusal(request, d, "seat"), {}
        stderr = record.get("stderr") or []
        transcripts = record.get("transcripts") or []
        return None, {
            "table": found["table"],
            "rotation": rotation,
            "seat": seat,
            "name": webstore.shown_name(label, found["names"]),
            "stderr": stderr[seat] if seat < len(stderr) and isinstance(stderr[seat], str) else "",
            "transcript": transcript_text(transcripts[seat] if seat < len(transcripts) else []),
        }

    async def seat_page(request: Request) -> Response:
        refused, data = await seat_data(request)
        if refused is not None:
            return refused
        return page(
            request,
            "seat.html.j2",
            sandbox="",
            title=f"Table {data['table'].number}, rotation {data['rotation']}, seat {data['seat']}",
            table=data["table"],
            rotation=data["rotation"],
            seat=data["seat"],
            seat_name=data["name"],
            stderr=shown(data["stderr"]),
            transcript=shown(data["transcript"]),
        )

    async def seat_stderr(request: Request) -> Response:
        refused, data = await seat_data(request)
        if refused is not None:
            return refused
        t, r, s = data["table"].number, data["rotation"], data["seat"]
        return download(data["stderr"], f"table-{t}-rotation-{r}-seat-{s}-stderr.txt")

    async def seat_transcript(request: Request) -> Response:
        refused, data = await seat_data(request)
        if refused is not None:
            return refused
        t, r, s = data["table"].number, data["rotation"], data["seat"]
        return download(data["transcript"], f"table-{t}-rotation-{r}-seat-{s}-transcript.txt")

    async def environment_page(request: Request) -> Response:
        if (d := decide(request, "environment")) != visibility.SHOWN:
            return refusal(request, d, "Environment page")
        found = await trio.to_thread.run_sync(environment)
        return page(request, "environment.html.j2", title="Environment", env=found)

    # -- submissions -------------------------------------------------------------------

    def submissions_of(conn: Any, viewer: Viewer) -> list[dict[str, Any]]:
        rows: list[store.SubmissionRow | None]
        if viewer.organiser:
            rows = [
                store.submission(conn, int(r.id))
                for r in conn.execute(
                    db.submissions.select()
                    .with_only_columns(db.submissions.c.id)
                    .order_by(db.submissions.c.id.desc())
                    .limit(500)
                )
            ]
        else:
            assert viewer.participant_id is not None
            rows = list(store.submissions_of(conn, viewer.participant_id))
        names = webstore.entrant_names(conn)
        out = []
        for s in rows:
            assert s is not None
            out.append({**webstore.submission_json(conn, s, False), "name": names.get(s.label, "")})
        return out

    async def submissions_page(request: Request) -> Response:
        viewer = viewer_of(request.scope)
        if (d := decide(request, "submissions")) != visibility.SHOWN:
            return refusal(request, d, "list of submissions")
        rows = await database.read_async(submissions_of, viewer)
        me = (
            await database.read_async(store.participant_by_id, viewer.participant_id)
            if viewer.participant_id is not None
            else None
        )
        return page(
            request,
            "submissions.html.j2",
            title="Submissions" if viewer.organiser else "Your submissions",
            submissions=rows,
            me=me,
            error=clean_text(request.query_params.get("error", ""), 300),
        )

    def back(path: str, error: str) -> Response:
        from urllib.parse import urlencode

        return RedirectResponse(f"{path}?{urlencode({'error': error[:300]})}", 303)

    def forbidden(request: Request) -> Response:
        return page(
            request,
            "missing.html.j2",
            403,
            title="Refused",
            text="refused: this form does not come from this site's page with your session's "
            "token: reload the page and send it again",
        )

    def submission_data(conn: Any, sid: int) -> dict[str, Any] | None:
        s = store.submission(conn, sid)
        if s is None:
            return None
        p = store.participant_by_id(conn, s.participant_id)
        return {
            "row": s,
            "json": webstore.submission_json(conn, s, True),
            "participant": clean_text(p.name) if p else "",
            "actions": actions.actions_on(conn, submission_id=sid),
        }

    async def one_submission(request: Request, name: str) -> tuple[Response | None, Any]:
        viewer = viewer_of(request.scope)
        if not viewer.signed_in:
            return refusal(request, visibility.SIGN_IN, "submission"), None
        found = await database.read_async(submission_data, _int(request.path_params["id"]))
        owner = found["row"].participant_id if found else None
        if found is None or decide(request, name, owner) != visibility.SHOWN:
            return refusal(request, visibility.HIDDEN, "submission"), None
        return None, found

    async def submission_page(request: Request) -> Response:
        refused, found = await one_submission(request, "submission")
        if refused is not None:
            return refused
        return page(
            request,
            "submission.html.j2",
            title=f"Submission {found['row'].id}",
            s=found["json"],
            participant=found["participant"],
            actions=found["actions"],
            has_output=bool(found["row"].check_output),
            error=clean_text(request.query_params.get("error", ""), 300),
        )

    async def output_page(request: Request) -> Response:
        refused, found = await one_submission(request, "submission-output")
        if refused is not None:
            return refused
        return page(
            request,
            "output.html.j2",
            sandbox="",
            title=f"Submission {found['row'].id}: the check's report",
            sid=found["row"].id,
            output=shown(found["row"].check_output),
        )

    async def output_download(request: Request) -> Response:
        refused, found = await one_submission(request, "submission-output")
        if refused is not None:
            return refused
        sid = found["row"].id
        return download(found["row"].check_output or "", f"submission-{sid}-check.txt")

    # -- the organiser's pages and forms ------------------------------------------------

    def organiser_page(
        name: str, what: str, load: Callable[[Any], dict[str, Any]], template: str, title: str
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            if (d := decide(request, name)) != visibility.SHOWN:
                return refusal(request, d, what)
            data = await database.read_async(load)
            return page(
                request,
                template,
                title=title,
                error=clean_text(request.query_params.get("error", ""), 300),
                **data,
            )

        return handler

    def participants_data(conn: Any) -> dict[str, Any]:
        out = []
        for p in store.list_participants(conn):
            subs = store.submissions_of(conn, p.id)
            out.append(
                {
                    "id": p.id,
                    "name": clean_text(p.name),
                    "status": p.status,
                    "latest": subs[0] if subs else None,
                    "actions": actions.actions_on(conn, participant_id=p.id),
                }
            )
        return {"participants": out}

    def voids_data(conn: Any) -> dict[str, Any]:
        rows = [
            {
                "numbering": t.numbering,
                "number": t.number,
                "deal_key": t.deal_key,
                "reason": clean_text(t.void_reason or "", 300),
                "finished_at": t.finished_at,
            }
            for t in store.void_tables(conn)
        ]
        return {"voids": rows}

    def actions_data(conn: Any) -> dict[str, Any]:
        return {"actions": actions.all_actions(conn), "targets": _targets(conn)}

    def manage_data(number: int) -> Callable[[Any], dict[str, Any] | None]:
        def load(conn: Any) -> dict[str, Any] | None:
            table = store.table_by_number(conn, "ladder", number)
            if table is None:
                return None
            names = webstore.entrant_names(conn)
            return {
                "table": table,
                "seating": [webstore.shown_name(s, names) for s in table.seating],
                "actions": actions.actions_on(conn, table_id=table.id),
                "void_reason": clean_text(table.void_reason or "", 300),
            }

        return load

    async def manage_page(request: Request) -> Response:
        if (d := decide(request, "table-manage")) != visibility.SHOWN:
            return refusal(request, d, "table")
        number = _int(request.path_params["number"])
        found = await database.read_async(manage_data(number))
        if found is None:
            return refusal(request, visibility.HIDDEN, "table")
        return page(
            request,
            "manage.html.j2",
            title=f"Table {number}: the organiser's actions",
            error=clean_text(request.query_params.get("error", ""), 300),
            **found,
        )

    async def act(request: Request) -> Response:
        """``POST`` of an organiser's action form: recorded pending (the
        runner applies it), then back to the page it changes."""
        viewer = viewer_of(request.scope)
        if not viewer.organiser:
            return refusal(
                request, visibility.SIGN_IN if not viewer.signed_in else visibility.HIDDEN, "form"
            )
        form = await request.form(max_files=0, max_fields=8)
        token = form.get("form_token")
        if not form_ok(request, viewer, token if isinstance(token, str) else None):
            return forbidden(request)
        kind = str(request.path_params["kind"])
        target = _int(request.path_params["target"])
        where = {
            "suspend": "/participants",
            "restore": "/participants",
            "revalidate": f"/submissions/{target}",
            "replay": f"/tables/{target}/manage",
            "void": f"/tables/{target}/manage",
        }.get(kind)
        if where is None:
            return refusal(request, visibility.HIDDEN, "action")
        reason = form.get("reason")
        keys: dict[str, Any] = {
            "suspend": {"participant_id": target},
            "restore": {"participant_id": target},
            "revalidate": {"submission_id": target},
        }.get(kind, {"table_number": target})

        def record(conn: Any) -> None:
            actions.request_action(
                conn,
                kind,
                config.clock(),
                reason=reason if isinstance(reason, str) else None,
                **keys,
            )

        try:
            await database.write_async(record)
        except actions.ActionError as exc:
            return back(where, str(exc))
        return RedirectResponse(where, 303)

    return [
        Route("/", index),
        Route("/tables", tables_page),
        Route("/tables/{number}", table_page),
        Route("/tables/{number}/manage", manage_page),
        Route("/tables/{number}/seats/{seat}", seat_page),
        Route("/tables/{number}/seats/{seat}/stderr", seat_stderr),
        Route("/tables/{number}/seats/{seat}/transcript", seat_transcript),
        Route("/environment", environment_page),
        Route("/submissions", submissions_page),
        Route("/submissions/{id}", submission_page),
        Route("/submissions/{id}/output", output_page),
        Route("/submissions/{id}/output.txt", output_download),
        Route(
            "/participants",
            organiser_page(
                "participants", "page", participants_data, "participants.html.j2", "Participants"
            ),
        ),
        Route(
            "/voids", organiser_page("voids", "page", voids_data, "voids.html.j2", "Void tables")
        ),
        Route(
            "/actions",
            organiser_page("actions", "page", actions_data, "actions.html.j2", "Actions"),
        ),
        Route("/actions/{kind}/{target}", act, methods=["POST"]),
    ]


def _targets(conn: Any) -> dict[int, str]:
    """Action id -> what it was taken on, as the actions page shows it."""
    out: dict[int, str] = {}
    for a in actions.all_actions(conn):
        if a.participant_id is not None:
            p = store.participant_by_id(conn, a.participant_id)
            out[a.id] = f"participant {clean_text(p.name) if p else a.participant_id}"
        elif a.submission_id is not None:
            out[a.id] = f"submission {a.submission_id}"
        elif a.table_id is not None:
            t = store.table_by_id(conn, a.table_id)
            out[a.id] = f"ladder table {t.number if t else '?'}"
    return out


async def refused(request: Request, config: PageConfig, name: str) -> Response | None:
    """The refusal of a route that lives in :mod:`arena.server.web` (the
    live standings ``/events``, ``/api/standings``, ``/api/environment``)
    for this request's viewer, or ``None`` when it may be answered. An API
    route (``api-...``) is also answered for a request carrying a valid
    participant's token (``Authorization: Bearer``) under either ``pages``
    setting; refused, it answers ``{"error"}`` with 401."""
    from starlette.responses import JSONResponse, PlainTextResponse

    decision = visibility.may_see(viewer_of(request.scope), name, config.pages)
    if decision == visibility.SHOWN:
        return None
    if name.startswith("api-"):
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        token = given.strip()
        if scheme.lower() == "bearer" and token.isascii() and 0 < len(token) <= 256:
            who = await config.database.read_async(
                store.participant_by_token_hash, store.token_hash(token)
            )
            if who is not None:
                return None
        return JSONResponse(
            {"error": "sign in, or send 'Authorization: Bearer TOKEN': these pages are not public"},
            401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return PlainTextResponse("sign in to see the standings\n", 401)
