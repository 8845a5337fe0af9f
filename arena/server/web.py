"""The competition server's web application: the HTTP API and the public
pages, Starlette on Hypercorn's Trio worker as the live view
(:mod:`arena.live.server`, whose security headers, loopback ``Host`` check
and event pacing it reuses).

The API (JSON; errors ``{"error": one line}``):

* ``POST /api/submissions``: the body is the submission itself (a ``.py``
  or a zip, told apart by its bytes, :mod:`arena.server.uploads`), or a
  ``multipart/form-data`` form whose one file is. The token only in
  ``Authorization: Bearer TOKEN``: a token in the query string or any
  cookie is refused (400), a missing or unknown token is 401, a suspended
  or revoked participant 403. One submission per
  :attr:`~arena.server.webstore.RateLimit.interval_seconds` and
  :attr:`~arena.server.webstore.RateLimit.per_day` a day per participant,
  else 429 with ``Retry-After`` (seconds). A ``Content-Length`` over the
  cap is refused (413) before the body is read, and the bytes are counted
  as they come. 201 with the submission (``submission``, ``status``
  ``queued``, ``place``, ``superseded``: the ids it replaced).
* ``GET /api/submissions``: the participant's submissions, newest first,
  each with its steps' results and the check's ``output`` (theirs only);
  ``GET /api/submissions/{id}``: one of them.
* ``GET /api/standings``: ``{"rated_through", "tables_in_play", "rows"}``
  (:func:`arena.server.webstore.standings_json`), public.

The pages (read-only, public, no script inline): ``/`` the standings, kept
live over server-sent events (``/events``: ``standings`` and ``finished``,
each sent when the database shows a change, at most every
:data:`arena.live.server.PUSH_INTERVAL` seconds per stream, less often with
many streams); ``/tables`` the finished ladder tables; ``/tables/{n}`` a
table once its four games are done, with the report's replay player
(``?rotation=R``); ``/environment`` what bots can use here. No page shows a
seat's stderr, a transcript or a check's output; every name goes through
:func:`arena.protocol.codec.clean_text` into autoescaped templates.

Sign-in (issue 28: one-time links, sessions, the participant's and the
organiser's pages, the upload form) is :mod:`arena.server.signin`; its
middleware puts each request's :class:`~arena.server.viewer.Viewer` in the
scope. :class:`Guard` wraps everything: the loopback ``Host`` check, the
security headers (HSTS over TLS), a body cap and deadline on every route;
:class:`TrustedProxy` outside it for ``--behind-proxy``. Event streams are
capped per session, per address and in all (429 with ``Retry-After``).
"""

from __future__ import annotations

import contextlib
import json
import math
import queue as queue_module
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import trio
from sqlalchemy import select

from arena.core.resources import templates_dir
from arena.live.server import (
    KEEPALIVE,
    SECURITY_HEADERS,
    TICK,
    Pusher,
    dumps,
    host_name,
    loopback_name,
)
from arena.protocol.codec import clean_text
from arena.report.outputs import SCRIPT_FILE, STYLE_FILE
from arena.server import classapi, db, downloads, sessions, signin, store, webstore
from arena.server.db import Database
from arena.server.environment import environment
from arena.server.sessions import SiteSettings
from arena.server.uploads import (
    StoredUpload,
    UploadError,
    UploadLimits,
    check_length,
    read_capped,
    store_upload,
)
from arena.server.viewer import viewer_of
from arena.server.webstore import RateLimit

#: Seconds Hypercorn waits for a request's bytes before closing the connection
#: (it has no limit by default: a client sending one byte a minute holds a
#: connection forever).
READ_TIMEOUT: Final = 30
#: Seconds Hypercorn keeps an idle connection open; its idle timer runs from
#: a connection's start (or its previous response) until a request's head is
#: complete, so it also bounds the time a client may take to send the head
#: (a byte a second is dropped after it).
KEEP_ALIVE_TIMEOUT: Final = 5.0
#: Seconds a request's body may take to arrive from its first read (Hypercorn's
#: read timeout bounds each read, not a body trickled a byte at a time);
#: a 16 MiB upload at 1 Mbit/s takes 134 s.
BODY_SECONDS: Final = 300.0
#: The HSTS header sent over TLS (a year; the site's names only).
HSTS: Final = "max-age=31536000"
#: The server's Content-Security-Policy: the live view's, with forms allowed
#: to post to this site only (the sign-in and upload forms).
SERVER_CSP: Final = SECURITY_HEADERS["Content-Security-Policy"].replace(
    "form-action 'none'", "form-action 'self'"
)
#: Seconds between two looks at the database for the live standings.
POLL_SECONDS: Final = 1.0
#: Query parameters that look like a token (refused: a token goes in the header only).
TOKEN_PARAMETERS: Final = frozenset({"token", "access_token", "bearer", "auth", "key"})
#: Finished tables listed on ``/tables``.
TABLES_SHOWN: Final = 200


@dataclass
class WebConfig:
    """What the web application serves.

    Attributes:
        database: the competition's database.
        uploads: the folder submissions are stored in (by SHA-256).
        limits: the upload caps.
        rate: submissions allowed per participant.
        loopback: refuse a request whose ``Host`` is not a loopback name (403).
        clock: seconds since the epoch (``time.time``; a test's own clock).
        poll_seconds: seconds between two looks at the database for the live pages.
        pages: who sees the pages: ``"signed-in"`` (the default) or ``"public"``
            (competition.toml's ``[web] pages``; :mod:`arena.server.visibility`).
        site: the sign-in side's settings (cookies, sign-in rate, storage
            quota, body cap of forms, stream caps).
        proxy: the address of the one reverse proxy whose forwarded headers
            are trusted (``--behind-proxy``), or ``None``.
    """

    database: Database
    uploads: Path
    limits: UploadLimits = field(default_factory=UploadLimits)
    rate: RateLimit = field(default_factory=RateLimit)
    loopback: bool = True
    clock: Callable[[], float] = time.time
    poll_seconds: float = POLL_SECONDS
    pages: str = "signed-in"
    site: SiteSettings = field(default_factory=SiteSettings)
    proxy: str | None = None


class ApiError(Exception):
    """A request refused: ``status`` and a one-line message; ``headers`` extra."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


# -- the security wrapper ------------------------------------------------------------


class BodyTooLarge(Exception):
    """A request body passed its route's cap while it was read (413), or
    took longer than :data:`BODY_SECONDS` to arrive (``status`` 408)."""

    def __init__(self, cap: int, status: int = 413, message: str | None = None) -> None:
        super().__init__(message or f"the request's body is over the limit of {cap} bytes")
        self.cap = cap
        self.status = status


class Guard:
    """An ASGI wrapper: on loopback, a request whose ``Host`` is not a
    loopback name is refused (403, DNS rebinding); every response gets the
    live view's :data:`~arena.live.server.SECURITY_HEADERS` (with
    :data:`SERVER_CSP`), and HSTS over TLS; every request's body is capped:
    ``body_cap(path)`` bytes (a ``Content-Length`` over it is refused with
    413 before anything is read; a body without one raises
    :class:`BodyTooLarge` from ``receive`` as it passes the cap)."""

    def __init__(
        self,
        app: Any,
        loopback: bool,
        body_cap: Callable[[str], int] | None = None,
        body_seconds: float = BODY_SECONDS,
    ) -> None:
        self.app = app
        self.loopback = loopback
        self.body_cap = body_cap
        self.body_seconds = body_seconds
        headers = {**SECURITY_HEADERS, "Content-Security-Policy": SERVER_CSP}
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def _refuse(self, send: Any, status: int, text: str) -> None:
        body = text.encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    *self.headers,
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers", [])
        if self.loopback:
            hosts = [v.decode("latin-1") for k, v in raw if k == b"host"]
            if len(hosts) != 1 or not loopback_name(host_name(hosts[0])):
                await self._refuse(
                    send, 403, "403: this server answers to a loopback host name only\n"
                )
                return
        extra = self.headers
        if scope.get("scheme") == "https":
            extra = [*extra, (b"strict-transport-security", HSTS.encode())]
        if self.body_cap is not None:
            cap = self.body_cap(str(scope.get("path", "")))
            lengths = [v for k, v in raw if k == b"content-length"]
            if any(not v.strip().isdigit() for v in lengths):
                await self._refuse(send, 400, "400: Content-Length is not a number of bytes\n")
                return
            if any(int(v) > cap for v in lengths):
                await self._refuse(send, 413, f"413: a request body here is at most {cap} bytes\n")
                return
            seen = 0
            began: float | None = None
            inner = receive
            limit = self.body_seconds

            whole = False

            async def receive(_inner: Any = inner) -> Any:
                nonlocal seen, began, whole
                if whole:  # the body is in: what follows is the wait for a disconnect
                    return await _inner()
                if began is None:
                    began = trio.current_time()
                with trio.move_on_at(began + limit):
                    message = await _inner()
                    if message.get("type") == "http.request":
                        seen += len(message.get("body", b""))
                        if seen > cap:
                            raise BodyTooLarge(cap)
                        whole = not message.get("more_body", False)
                    return message
                raise BodyTooLarge(cap, 408, f"the request's body took over {limit:g} s to arrive")

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                given = list(message.get("headers", []))
                present = {k.lower() for k, _ in given}
                added = [(k, v) for k, v in extra if k not in present]
                message = {**message, "headers": given + added}
            await send(message)

        await self.app(scope, receive, send_secured)


class TrustedProxy:
    """An ASGI wrapper for ``--behind-proxy ADDRESS``: a request from
    ``address`` (the proxy) has its client address, scheme and host taken
    from its ``X-Forwarded-For``, ``-Proto`` and ``-Host`` (the last hop:
    Hypercorn's :class:`~hypercorn.middleware.ProxyFixMiddleware`); from any
    other peer those headers are ignored."""

    def __init__(self, app: Any, address: str) -> None:
        from hypercorn.middleware import ProxyFixMiddleware

        self.app = app
        self.address = address
        self.fixed = ProxyFixMiddleware(app, mode="legacy", trusted_hops=1)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI connection."""
        client = scope.get("client")
        if scope["type"] == "http" and client and client[0] == self.address:
            await self.fixed(scope, receive, send)
        else:
            await self.app(scope, receive, send)


# -- the live feed ---------------------------------------------------------------------


class Feed:
    """The parts the live pages stream (``standings``, ``finished``), each
    an event encoded once and shared by every stream; refreshed from the
    database at most every ``poll_seconds`` whoever asks, and pushed
    through the live view's :class:`~arena.live.server.Pusher` pacing."""

    PARTS: Final = ("standings", "finished", "playing")

    def __init__(self, database: Database, poll_seconds: float) -> None:
        self.database = database
        self.poll_seconds = poll_seconds
        self.pusher = Pusher()
        self.frames: dict[str, bytes] = {}
        self.versions = dict.fromkeys(self.PARTS, 0)
        self._mark: tuple[Any, ...] | None = None
        self._last = -math.inf
        self._lock = trio.Lock()
        #: The public state of each game in play, by game id (from the runner).
        self.playing: dict[str, dict[str, Any]] = {}
        self._playing_changed = False

    def table_state(self, state: Any) -> None:
        """Take one table state from the runner's live feed
        (:class:`arena.game.feed.TableState`'s ``to_json``): kept while its
        game is in play, dropped once it is over (the finished tables show
        it then, read from the database at the next refresh rather than
        ``poll_seconds`` later: a table played on a Dask worker sends only
        its games' end states, once they are stored); the change is pushed
        at the live view's pace."""
        public = public_table_state(state)
        if public is None:
            return
        if public["phase"] == "over":
            self.playing.pop(public["game_id"], None)
            self._last = -math.inf
        else:
            self.playing[public["game_id"]] = public
        self._playing_changed = True
        self.pusher.changed_now()

    def _publish(self, name: str, value: Any) -> None:
        self.versions[name] += 1
        self.frames[name] = f"event: {name}\ndata: {dumps(value)}\n\n".encode()

    async def refresh(self) -> None:
        """Read the database when the last look is ``poll_seconds`` old;
        publish and push what changed."""
        async with self._lock:
            if self._playing_changed or "playing" not in self.frames:
                self._playing_changed = False
                states = sorted(self.playing.values(), key=lambda t: t["game_index"])
                self._publish("playing", states)
            now = trio.current_time()
            if now - self._last < self.poll_seconds:
                self.pusher.tick()
                return
            self._last = now
            mark = await self.database.read_async(webstore.change_mark)
            if mark == self._mark:
                self.pusher.tick()
                return
            standings, finished = await self.database.read_async(_live_parts)
            self._mark = mark
            self._publish("standings", standings)
            self._publish("finished", finished)
            self.pusher.changed_now()

    def message(self, sent: dict[str, int]) -> bytes:
        """The events a stream that sent versions ``sent`` must write now (``sent`` updated)."""
        out = b"".join(
            self.frames[name]
            for name in self.PARTS
            if name in self.frames and sent.get(name, 0) != self.versions[name]
        )
        sent.update(self.versions)
        return out


#: The keys of a table state a public page shows (:class:`arena.game.feed.TableState`).
TABLE_STATE_KEYS: Final = (
    "game_id", "game_index", "deal_key", "seats", "hand", "direction", "phase", "trick",
    "trick_winner", "tricks", "points", "scores", "held", "turn", "kind", "deadline",
    "faults", "fault_counts", "updated",
)  # fmt: skip


def public_table_state(state: Any) -> dict[str, Any] | None:
    """A table state from the runner as the pages show it: only
    :data:`TABLE_STATE_KEYS` (the feed holds no card of a hand, no stderr, no
    transcript), its texts (entrant names, fault reasons) cleaned; ``None``
    for anything that is not a state."""
    if not isinstance(state, dict) or not isinstance(state.get("game_id"), str):
        return None
    out = {k: state.get(k) for k in TABLE_STATE_KEYS}
    out["game_id"] = clean_text(str(out["game_id"]), 100)
    if not isinstance(out["game_index"], int):
        out["game_index"] = 0
    out["seats"] = [clean_text(str(n), 100) for n in (out["seats"] or [])][:4]
    out["faults"] = [
        [f[0], clean_text(str(f[1]), 200), f[2]]
        for f in (out["faults"] or [])
        if isinstance(f, list) and len(f) == 3
    ]
    return out


#: Seconds the live queue's thread waits for a table state before it looks
#: again (a cancelled wait is abandoned at once: this only bounds how long
#: the thread lingers after it).
LIVE_WAIT_SECONDS: Final = 2.0
#: Table states taken from the live queue in one hand-off at most.
QUEUE_DRAIN: Final = 100


async def receive_table_states(feed: Feed, live: Any) -> None:
    """Read table states from the runner's bounded queue into ``feed`` until
    cancelled or the queue closes (the runner is gone). The queue is read in
    a thread, :data:`LIVE_WAIT_SECONDS` at a time (a cancel abandons the
    wait), and every state waiting is taken at once: one hand-off from the
    thread for all of them."""

    def take() -> list[Any]:
        try:
            states = [live.get(timeout=LIVE_WAIT_SECONDS)]
        except queue_module.Empty:
            return []
        with contextlib.suppress(queue_module.Empty):
            while len(states) < QUEUE_DRAIN:
                states.append(live.get_nowait())
        return states

    while True:
        try:
            states = await trio.to_thread.run_sync(take, abandon_on_cancel=True)
        except (OSError, ValueError, EOFError):
            return
        for state in states:
            feed.table_state(state)


def _live_parts(conn: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return webstore.standings_json(conn), webstore.finished_tables_json(conn, 20)


# -- templates -------------------------------------------------------------------------


@cache
def _templates() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("arena.server", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda x, digits=2: f"{x:.{digits}f}"
    env.filters["when"] = lambda t: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return env


#: The templates of the pages.
TEMPLATES: Final = (
    "base.html.j2",
    "standings.html.j2",
    "tables.html.j2",
    "table.html.j2",
    "environment.html.j2",
    "missing.html.j2",
)


def preload() -> None:
    """Load every template, asset and lazily imported library now (the web
    process does before it drops its privileges)."""
    import anyio._backends._trio
    import anyio._core._tasks  # noqa: F401
    import jinja2.ext  # noqa: F401
    import python_multipart  # noqa: F401
    from starlette import formparsers  # noqa: F401

    from arena.sandbox import botfolder
    from arena.server import gauntlet, pages

    botfolder.preload()  # an upload's bot.toml is checked in this process
    gauntlet.preload()  # /api/gauntlet and the grades compute intervals
    for name in (*TEMPLATES, *signin.TEMPLATES, *pages.TEMPLATES):
        _templates().get_template(name)
    _assets()


def render(name: str, **context: Any) -> str:
    """Render ``arena/server/templates/NAME`` (autoescaped)."""
    return str(_templates().get_template(name).render(**context))


@cache
def _assets() -> dict[str, tuple[bytes, str]]:
    from importlib import resources

    own = resources.files("arena.server").joinpath("static")
    report = templates_dir()
    return {
        "server.js": (own.joinpath("server.js").read_bytes(), "text/javascript; charset=utf-8"),
        "server.css": (own.joinpath("server.css").read_bytes(), "text/css; charset=utf-8"),
        SCRIPT_FILE: ((report / SCRIPT_FILE).read_bytes(), "text/javascript; charset=utf-8"),
        STYLE_FILE: ((report / STYLE_FILE).read_bytes(), "text/css; charset=utf-8"),
    }


# -- the application -----------------------------------------------------------------


def bearer_token(headers: Any, query: Any, cookies: Any) -> str:
    """The token of a request, from ``Authorization: Bearer`` only.

    Raises:
        ApiError: (400) a token-like query parameter or any cookie; (401) no
            bearer token.
    """
    if any(name.lower() in TOKEN_PARAMETERS for name in query):
        raise ApiError(400, "a token goes only in the Authorization header, never in the URL")
    if cookies:
        raise ApiError(400, "this API takes no cookies: send the token in the Authorization header")
    scheme, _, given = str(headers.get("authorization", "")).partition(" ")
    token = given.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError(
            401,
            "no token: send 'Authorization: Bearer TOKEN' (the token printed by serve --add)",
            {"WWW-Authenticate": "Bearer"},
        )
    return token


def _participant_of(conn: Any, token: str, submitting: bool) -> store.ParticipantRow:
    if not token.isascii() or len(token) > 256:
        raise ApiError(401, "unknown token", {"WWW-Authenticate": "Bearer"})
    found = store.participant_by_token_hash(conn, store.token_hash(token))
    if found is None:
        raise ApiError(401, "unknown or revoked token", {"WWW-Authenticate": "Bearer"})
    if submitting and found.status != "active":
        raise ApiError(403, f"participant {found.name} is {found.status}: no submissions taken")
    return found


def make_app(config: WebConfig) -> Any:
    """The Starlette application serving ``config`` (wrapped in :class:`Guard`)."""
    from starlette.applications import Starlette
    from starlette.datastructures import Headers
    from starlette.formparsers import MultiPartException, MultiPartParser
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from arena.server import pages

    database = config.database
    feed = Feed(database, config.poll_seconds)

    def error(exc: ApiError) -> Response:
        return JSONResponse({"error": str(exc)}, exc.status, headers=exc.headers)

    async def authenticate(request: Request, submitting: bool = False) -> store.ParticipantRow:
        """The participant of the request's token (a suspended one may read, not submit)."""
        token = bearer_token(request.headers, request.query_params, request.cookies)
        return await database.read_async(_participant_of, token, submitting)

    async def upload_bytes(request: Request) -> bytes:
        try:
            check_length(request.headers.get("content-length"), config.limits)
            body = await read_capped(request.stream(), config.limits)
        except UploadError as exc:
            raise ApiError(exc.status, str(exc)) from None
        kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "multipart/form-data":
            return body

        async def again() -> AsyncGenerator[bytes, None]:
            yield body

        try:
            form = await MultiPartParser(
                Headers(raw=request.scope["headers"]),
                again(),
                max_files=1,
                max_fields=4,
            ).parse()
        except MultiPartException as exc:
            raise ApiError(400, f"a form that cannot be read: {exc.message}") from None
        files = [v for _, v in form.multi_items() if not isinstance(v, str)]
        if len(files) != 1:
            raise ApiError(400, "the form holds no file: send one .py file or one zip")
        data = await files[0].read()
        await form.close()
        return bytes(data)

    def add(conn: Any, participant_id: int, stored: StoredUpload) -> dict[str, Any]:
        if webstore.closed_at(conn) is not None:  # issue 30: serve --close
            raise ApiError(403, "the competition is closed: no new submissions")
        wait = webstore.retry_after(conn, participant_id, config.rate, config.clock())
        if wait:
            raise _rate_error(wait, config.rate)
        _check_quota(conn, participant_id, stored.size, stored.sha256, config.site.quota_bytes)
        row, superseded = store.add_submission(
            conn, participant_id, stored.sha256, stored.kind, stored.size, config.clock()
        )
        return {**webstore.submission_json(conn, row, True), "superseded": superseded}

    def may_send(conn: Any, participant_id: int) -> None:
        # Closed before the rate limit: no retry helps a closed competition.
        if webstore.closed_at(conn) is not None:
            raise ApiError(403, "the competition is closed: no new submissions")
        wait = webstore.retry_after(conn, participant_id, config.rate, config.clock())
        if wait:
            raise _rate_error(wait, config.rate)

    def may_submit(conn: Any, participant_id: int, size: int) -> None:
        may_send(conn, participant_id)
        _check_quota(conn, participant_id, size, None, config.site.quota_bytes)

    async def accept(participant_id: int, data: bytes) -> dict[str, Any]:
        """Store an upload of a participant and record its submission: the
        API's and the upload form's one path (rate limit, quota, caps).

        Raises:
            ApiError: refused (status and one line).
        """
        await database.read_async(may_submit, participant_id, len(data))
        try:
            stored = await trio.to_thread.run_sync(
                store_upload, data, config.uploads, config.limits
            )
        except UploadError as exc:
            raise ApiError(exc.status, str(exc)) from None
        return await database.write_async(add, participant_id, stored)

    async def accept_form(participant_id: int, data: bytes) -> dict[str, Any]:
        # A suspended or revoked participant submits nothing (as through the API).
        person = await database.read_async(store.participant_by_id, participant_id)
        if person is None or person.status != "active":
            state = person.status if person else "unknown"
            raise ApiError(403, f"you are {state}: no submissions taken")
        return await accept(participant_id, data)

    async def submit(request: Request) -> Response:
        try:
            who = await authenticate(request, submitting=True)
            await database.read_async(may_send, who.id)
            data = await upload_bytes(request)
            made = await accept(who.id, data)
        except ApiError as exc:
            return error(exc)
        return JSONResponse(made, 201)

    async def mine(request: Request) -> Response:
        try:
            who = await authenticate(request)
        except ApiError as exc:
            return error(exc)
        found = await database.read_async(webstore.my_submissions, who.id)
        return JSONResponse({"participant": who.name, "submissions": found})

    async def one(request: Request) -> Response:
        try:
            who = await authenticate(request)
        except ApiError as exc:
            return error(exc)
        try:
            sid = int(request.path_params["id"])
        except ValueError:
            sid = -1

        def read(conn: Any) -> dict[str, Any] | None:
            s = store.submission(conn, sid)
            if s is None or s.participant_id != who.id:
                return None
            return webstore.submission_json(conn, s, True)

        found = await database.read_async(read)
        if found is None:
            return error(ApiError(404, f"you have no submission {request.path_params['id']}"))
        return JSONResponse(found)

    # The last answer of /api/standings, by webstore.standings_mark: a
    # client asking each second costs half the query while nothing changed.
    standings_cache: dict[str, Any] = {}

    async def standings_api(request: Request) -> Response:
        if (refused := await pages.refused(request, config, "api-standings")) is not None:
            return refused

        def read(conn: Any) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
            mark = webstore.standings_mark(conn)  # and the standings in the same snapshot
            if standings_cache.get("mark") == mark:
                return mark, None
            return mark, webstore.standings_json(conn)

        mark, fresh = await database.read_async(read)
        if fresh is not None:
            standings_cache.update(mark=mark, body=JSONResponse(fresh).body)
        return Response(standings_cache["body"], media_type="application/json")

    async def environment_api(request: Request) -> Response:
        if (refused := await pages.refused(request, config, "api-environment")) is not None:
            return refused
        return JSONResponse(await trio.to_thread.run_sync(environment))

    async def static(request: Request) -> Response:
        found = _assets().get(request.path_params["name"])
        if found is None:
            return Response("not found\n", 404, media_type="text/plain")
        return Response(found[0], media_type=found[1])

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    caps = config.site.stream_caps()

    async def events(request: Request) -> Response:
        if (refused := await pages.refused(request, config, "events")) is not None:
            return refused
        who = viewer_of(request.scope)
        place = caps.acquire(who.session_sha256, signin.client_address(request))
        if place is None:
            wait = sessions.STREAM_RETRY_SECONDS
            return JSONResponse(
                {
                    "error": f"too many event streams open (at most {caps.per_session} per "
                    f"session, {caps.per_address} per address without one, {caps.total} in "
                    f"all): try again in {wait} s"
                },
                429,
                headers={"Retry-After": str(wait)},
            )

        held: str = place

        async def stream() -> AsyncIterator[bytes]:
            sent: dict[str, int] = {}
            feed.pusher.streams += 1
            quiet = 0.0
            try:
                while True:
                    await feed.refresh()
                    message = feed.message(sent)
                    if message:
                        quiet = 0.0
                        yield message
                    with trio.move_on_after(max(TICK, feed.poll_seconds)) as scope:
                        await feed.pusher.changed()
                    if scope.cancelled_caught:
                        quiet += max(TICK, feed.poll_seconds)
                        if quiet >= KEEPALIVE:
                            quiet = 0.0
                            yield b": keep-alive\n\n"
            finally:
                feed.pusher.streams -= 1

        class Capped(StreamingResponse):
            # The place is given back when the response ends, however it ends
            # (a stream never started included).
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                try:
                    await super().__call__(scope, receive, send)
                finally:
                    caps.release(held)

        return Capped(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})

    async def failed(request: Request, exc: Exception) -> Response:
        # The server's log: one JSON object a line, never a token or a body.
        line = {
            "t": round(time.time(), 3),
            "event": "web-error",
            "method": request.method,
            "path": signin.loggable_path(request.url.path)[:200],
            "error": f"{type(exc).__name__}: {exc}"[:500],
        }
        print(json.dumps(line, ensure_ascii=True), file=sys.stderr, flush=True)
        return JSONResponse({"error": "the server failed (its log says why)"}, 500)

    async def too_large(request: Request, exc: Exception) -> Response:
        message, status = str(exc), int(getattr(exc, "status", 413))
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status)
        return Response(f"{status}: {message}\n", status, media_type="text/plain")

    app = Starlette(
        exception_handlers={Exception: failed, BodyTooLarge: too_large},
        routes=[
            *signin.routes(database, config.site, config.clock, render, accept_form, config.limits),
            *pages.routes(config, render),  # the pages: arena/server/pages.py, visibility.py
            Route("/events", events),
            Route("/api/environment", environment_api),
            Route("/api/standings", standings_api),
            Route("/api/submissions", submit, methods=["POST"]),
            Route("/api/submissions", mine, methods=["GET"]),
            Route("/api/submissions/{id}", one, methods=["GET"]),
            *downloads.routes(config, authenticate, ApiError, error),  # issue 30: downloads
            Route("/static/{name}", static),
            Route("/favicon.ico", favicon),
            *classapi.routes(config, sys.modules[__name__]),  # issue 30: final, gauntlet
        ],
    )

    def body_cap(path: str) -> int:
        # An upload's own cap (read_capped's, with its message) comes first.
        if path in signin.UPLOAD_PATHS:
            return config.limits.body_bytes + config.site.form_bytes
        return config.site.form_bytes

    guarded: Any = Guard(
        signin.SignIn(app, database, config.site, config.clock), config.loopback, body_cap
    )
    if config.proxy is not None:
        guarded = TrustedProxy(guarded, config.proxy)
    guarded.feed = feed
    guarded.streams = caps
    return guarded


def _check_quota(conn: Any, participant_id: int, size: int, sha256: str | None, quota: int) -> None:
    """Refuse (413) an upload of ``size`` bytes that would take the
    participant's stored submissions over ``quota`` bytes (a file they
    already stored, same ``sha256``, adds nothing)."""
    used = sessions.stored_bytes(conn, participant_id)
    if sha256 is not None:
        held = conn.execute(
            select(db.submissions.c.id).where(
                db.submissions.c.participant_id == participant_id,
                db.submissions.c.sha256 == sha256,
            )
        ).first()
        if held is not None:
            return
    if used + size > quota:
        mib = sessions.MIB
        raise ApiError(
            413,
            f"your stored submissions would be {(used + size) / mib:.1f} MiB, over your "
            f"quota of {quota / mib:g} MiB",
        )


def _rate_error(wait: int, rate: RateLimit) -> ApiError:
    return ApiError(
        429,
        f"too many submissions (one per {rate.interval_seconds:g} s, {rate.per_day} a day): "
        f"try again in {wait} s",
        {"Retry-After": str(wait)},
    )


def hypercorn_config(
    bind: str,
    read_timeout: float = READ_TIMEOUT,
    keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    server_names: tuple[str, ...] = (),
) -> Any:
    """Hypercorn's configuration for the web process: ``bind`` (``HOST:PORT``
    or ``fd://N``, a socket bound by the runner); ``read_timeout`` seconds
    for each read of a request (Hypercorn has no limit by default) and
    ``keep_alive_timeout`` seconds for an idle connection, which also bounds
    a request's head (:data:`KEEP_ALIVE_TIMEOUT`); TLS from ``certfile`` and
    ``keyfile`` (PEM; both or neither); ``server_names``: the host names
    served (a request naming another is refused by Hypercorn; none: any);
    no access log (tokens never reach a log)."""
    from hypercorn.config import Config

    config = Config()
    config.bind = [bind]
    config.read_timeout = read_timeout  # type: ignore[assignment]
    config.keep_alive_timeout = keep_alive_timeout
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    if (certfile is None) != (keyfile is None):
        raise ValueError("TLS needs both a certificate file and its key file")
    if certfile is not None and keyfile is not None:
        config.certfile = str(certfile)
        config.keyfile = str(keyfile)
    config.server_names = list(server_names)
    return config
