"""The web process's routes for a class's end (issue 30), mounted by one
line in :func:`arena.server.web.make_app`'s route list (``*classapi.routes(config, web)``,
``web`` the module itself: its token check, errors and templates, with no
import cycle).

Public:

* ``GET /api/deadline``: :func:`arena.server.deadline.deadline_json`.

Seen as the standings are (the ``pages`` rule of :mod:`arena.server.visibility`:
anyone under ``pages = "public"``, signed-in viewers or a participant's token
under ``"signed-in"``):

* ``GET /api/final``: the final's progress and standings
  (:func:`arena.server.final.final_json`) and the deadline; ``GET /final``
  the same as a page, the deadline in UTC and, by a small script
  (``/class/localtime.js``), in the reader's time.

With a participant's token (``Authorization: Bearer``, as the rest of the API):

* ``POST /api/final/pin`` ``{"submission": ID}`` (or ``null``: unpin) before
  the deadline; answers ``{"final_submission": ID}``.
* ``GET /api/gauntlet``: the gauntlet's deals, bots and thresholds and the
  participant's own row (the organiser reads every row in ``grades.csv``:
  the API takes no session cookie).
* ``POST /api/challenges`` ``{"opponents": [...]}``, ``GET /api/challenges``,
  ``POST /api/challenges/consent`` ``{"allow": true}``.

For the organiser's session only (the sign-in's :class:`~arena.server.viewer.Viewer`):

* ``GET /organiser/grades.csv``: :func:`arena.server.gauntlet.grades_csv`.

The settings are the competition folder's ``competition.toml`` (the
database sits in its ``db/``), read once; defaults elsewhere.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, Final

from sqlalchemy import Connection

from arena.server import challenges, deadline, final, gauntlet
from arena.server.classrules import DeadlineError
from arena.server.folder import CompetitionSettings
from arena.server.folder import settings_of as folder_settings_of
from arena.server.viewer import viewer_of

#: Bytes of a JSON request body at most.
BODY_CAP: Final = 4096


#: The settings beside an uploads folder (:func:`arena.server.folder.settings_of`).
settings_of = folder_settings_of


def routes(config: Any, web: ModuleType) -> list[Any]:
    """The routes above for ``config`` (an :class:`arena.server.web.WebConfig`)."""
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    from arena.server import pages

    database = config.database
    api_error = web.ApiError

    def settings() -> CompetitionSettings:
        return settings_of(config.uploads)

    def error(exc: Any) -> Response:
        return JSONResponse({"error": str(exc)}, exc.status, headers=exc.headers)

    async def who(request: Request) -> Any:
        token = web.bearer_token(request.headers, request.query_params, request.cookies)
        return await database.read_async(web._participant_of, token, False)

    async def body(request: Request) -> dict[str, Any]:
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > BODY_CAP:
                raise api_error(413, f"a JSON body of at most {BODY_CAP} bytes")
        try:
            data = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise api_error(400, "the body is not JSON") from None
        if not isinstance(data, dict):
            raise api_error(400, "the body is a JSON object")
        return data

    async def deadline_api(request: Request) -> Response:
        return JSONResponse(deadline.deadline_json(settings(), config.clock()))

    def final_data(conn: Connection) -> dict[str, Any]:
        return {
            **final.final_json(conn, settings()),
            "deadline": deadline.deadline_json(settings(), config.clock()),
        }

    async def final_api(request: Request) -> Response:
        if (refused := await pages.refused(request, config, "api-final")) is not None:
            return refused
        return JSONResponse(await database.read_async(final_data))

    async def final_page(request: Request) -> Response:
        if (refused := await pages.refused(request, config, "final")) is not None:
            return refused
        data = await database.read_async(final_data)
        html = web.render("final.html.j2", title="The final", final=data, deadline=data["deadline"])
        return HTMLResponse(html)

    async def local_time(request: Request) -> Response:
        from importlib import resources

        js = resources.files("arena.server").joinpath("static", "localtime.js").read_bytes()
        return Response(js, media_type="text/javascript; charset=utf-8")

    async def pin(request: Request) -> Response:
        try:
            p = await who(request)
            data = await body(request)
            sid = data.get("submission")
            if sid is not None and (isinstance(sid, bool) or not isinstance(sid, int)):
                raise api_error(400, 'give {"submission": ID} or {"submission": null}')
            try:
                got = await database.write_async(
                    deadline.pin, settings(), p.id, sid, config.clock()
                )
            except DeadlineError as exc:
                raise api_error(409, str(exc)) from None
        except api_error as exc:
            return error(exc)
        return JSONResponse({"participant": p.name, "final_submission": got})

    async def gauntlet_api(request: Request) -> Response:
        viewer = viewer_of(request.scope)
        mine: int | None = None
        if not viewer.organiser:
            try:
                mine = (await who(request)).id
            except api_error as exc:
                return error(exc)
        data = await database.read_async(gauntlet.gauntlet_json, settings(), mine)
        return JSONResponse(data)

    async def grades(request: Request) -> Response:
        if not viewer_of(request.scope).organiser:
            return JSONResponse({"error": "the grades are the organiser's: sign in as them"}, 403)
        text = await database.read_async(gauntlet.grades_csv, settings())
        return Response(
            text,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="grades.csv"'},
        )

    async def challenge(request: Request) -> Response:
        try:
            p = await who(request)
            data = await body(request)
            opponents = data.get("opponents")
            if not isinstance(opponents, list) or not all(isinstance(o, str) for o in opponents):
                raise api_error(400, 'give {"opponents": ["name", "sample:low", ...]}')
            try:
                made = await database.write_async(
                    challenges.request_challenge, settings(), p.id, opponents, config.clock()
                )
            except challenges.ChallengeError as exc:
                raise api_error(exc.status, str(exc)) from None
        except api_error as exc:
            return error(exc)
        return JSONResponse(made, 201)

    async def my_challenges(request: Request) -> Response:
        try:
            p = await who(request)
        except api_error as exc:
            return error(exc)
        return JSONResponse(await database.read_async(challenges.challenges_json, p.id))

    async def consent(request: Request) -> Response:
        try:
            p = await who(request)
            data = await body(request)
            allow = data.get("allow")
            if not isinstance(allow, bool):
                raise api_error(400, 'give {"allow": true} or {"allow": false}')
        except api_error as exc:
            return error(exc)
        await database.write_async(challenges.set_consent, p.id, allow, config.clock())
        return JSONResponse({"participant": p.name, "accepting": allow})

    return [
        Route("/api/deadline", deadline_api),
        Route("/api/final", final_api),
        Route("/final", final_page),
        Route("/class/localtime.js", local_time),
        Route("/api/final/pin", pin, methods=["POST"]),
        Route("/api/gauntlet", gauntlet_api),
        Route("/organiser/grades.csv", grades),
        Route("/api/challenges", challenge, methods=["POST"]),
        Route("/api/challenges", my_challenges, methods=["GET"]),
        Route("/api/challenges/consent", consent, methods=["POST"]),
    ]
