"""The web process's sign-in (issue 28): the middleware that puts a request's
:class:`~arena.server.viewer.Viewer` in its ASGI scope, one-time links,
sessions, the form rules, and the minimal pages of a participant (tokens,
display name, upload) and of the organiser (invites, ending sessions).

Routes (the page routes of :mod:`arena.server.pages` may restyle the pages;
the rules stay here):

* ``GET /signin/{secret}``: a one-time link's page, a button; only
  ``POST /signin/{secret}`` uses the link (mail scanners open links), makes
  the session and redirects (303) to ``/me`` or ``/organiser``, an address
  without the secret. A second use: 410; an expired link: 410; unknown: 404.
* ``GET /signin``, ``POST /signin`` (field ``token``): sign in with a CLI token.
* ``POST /signout``: ends the session on the server.
* ``GET /me``; ``POST /me/tokens`` (a new token, shown once),
  ``POST /me/tokens/{id}/revoke``, ``POST /me/name`` (``display_name``),
  ``POST /me/submissions`` (a ``multipart/form-data`` form: ``file``).
* ``GET /organiser``; ``POST /organiser/invites`` (``display_name``: a new
  participant and its link, shown once), ``POST
  /organiser/participants/{id}/link``, ``POST
  /organiser/participants/{id}/sessions/end``.

The rules: every POST here checks ``Origin`` (or, without one,
``Sec-Fetch-Site: same-origin``): 403 otherwise; every POST of a signed-in
page carries the session's form token (``form_token``, compared in constant
time): 403 otherwise. The session cookie is ``HttpOnly``, ``SameSite=Lax``,
``Path=/``, and over TLS or behind a proxy ``Secure`` with the ``__Host-``
prefix. Link exchanges and token sign-ins: at most
:attr:`~arena.server.sessions.SiteSettings.sign_in_per_minute` per client
address a minute (429 with ``Retry-After``). The API (``/api/``) never
reads the cookie (it takes a token in ``Authorization`` only).
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncGenerator, Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any, Final

from arena.protocol.codec import clean_text
from arena.server import sessions, store
from arena.server.db import Database
from arena.server.sessions import SignInError, SiteSettings
from arena.server.uploads import UploadError, UploadLimits, check_length
from arena.server.viewer import ANONYMOUS, SCOPE_KEY, Viewer

#: The session cookie's name over plain HTTP (loopback only).
COOKIE: Final = "arena_session"
#: Its name over TLS or behind a proxy (the browser then insists on
#: ``Secure``, ``Path=/`` and no ``Domain``).
SECURE_COOKIE: Final = "__Host-arena_session"
#: Paths the middleware never resolves a session for (the API takes no
#: cookie; static files need none).
NO_SESSION_PREFIXES: Final = ("/api/", "/static/")

#: The templates of these pages (loaded before the web process drops privileges).
TEMPLATES: Final = (
    "signin_link.html.j2",
    "signin_token.html.j2",
    "signin_message.html.j2",
    "signin_me.html.j2",
    "signin_organiser.html.j2",
)

Render = Callable[..., str]
#: Store a participant's upload: ``(participant_id, bytes) -> the submission's JSON``,
#: raising an error with ``status`` (the API's rules: rate limit, caps, quota).
Accept = Callable[[int, bytes], Awaitable[dict[str, Any]]]


def loggable_path(path: str) -> str:
    """A request's path as the server's log may hold it: a one-time link's
    secret replaced by ``...``."""
    return "/signin/..." if path.startswith("/signin/") else path


def cookie_name(secure: bool) -> str:
    """The session cookie's name (:data:`SECURE_COOKIE` when ``secure``)."""
    return SECURE_COOKIE if secure else COOKIE


def session_id_of(headers: list[tuple[bytes, bytes]], secure: bool) -> str | None:
    """The session id in a request's ``Cookie`` headers, or ``None``."""
    name = cookie_name(secure)
    for key, value in headers:
        if key != b"cookie":
            continue
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(value.decode("latin-1"))
        except CookieError:
            continue
        if name in jar:
            return jar[name].value
    return None


class SignIn:
    """ASGI middleware: resolves the session cookie of each HTTP request
    (but the API's and static files') into its :class:`Viewer`, stored in
    ``scope[SCOPE_KEY]`` (:data:`~arena.server.viewer.ANONYMOUS` without a
    live session)."""

    def __init__(
        self, app: Any, database: Database, settings: SiteSettings, clock: Callable[[], float]
    ) -> None:
        self.app = app
        self.database = database
        self.settings = settings
        self.clock = clock

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI connection."""
        if scope["type"] == "http":
            viewer: Viewer = ANONYMOUS
            path = str(scope.get("path", ""))
            if not path.startswith(NO_SESSION_PREFIXES):
                sid = session_id_of(scope.get("headers", []), self.settings.secure)
                if sid:
                    found = await self.database.read_async(
                        sessions.viewer_of_session, sid, self.clock()
                    )
                    viewer = found or ANONYMOUS
            scope = {**scope, SCOPE_KEY: viewer}
        await self.app(scope, receive, send)


def same_origin(headers: Any, scheme: str) -> bool:
    """Whether a request comes from this site's own pages: its ``Origin`` is
    ``scheme://Host``, or it has none (or ``null``: what Chromium sends for a
    form posted from a page under ``Referrer-Policy: no-referrer``, as every
    page here is) and says ``Sec-Fetch-Site: same-origin``."""
    origin = headers.get("origin")
    host = headers.get("host", "")
    if origin is not None and origin != "null":
        return bool(host) and origin.lower() == f"{scheme}://{host}".lower()
    return str(headers.get("sec-fetch-site", "")).lower() == "same-origin"


def client_address(request: Any) -> str:
    """The request's client address (the proxy's forwarded one when trusted)."""
    return request.client.host if request.client is not None else "unknown"


def routes(
    database: Database,
    settings: SiteSettings,
    clock: Callable[[], float],
    render: Render,
    accept: Accept,
    upload_limits: UploadLimits,
) -> list[Any]:
    """The sign-in routes (Starlette :class:`~starlette.routing.Route`\\ s)."""
    from starlette.datastructures import FormData, Headers
    from starlette.formparsers import FormParser, MultiPartException, MultiPartParser
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    limiter = sessions.RateLimiter(settings.sign_in_per_minute, clock)
    form_limits = UploadLimits(body_bytes=settings.form_bytes)

    def page(status: int, title: str, text: str, **extra: Any) -> Response:
        return HTMLResponse(
            render("signin_message.html.j2", title=title, text=text, **extra), status
        )

    def refused(exc: SignInError | UploadError | Exception, title: str = "Refused") -> Response:
        status = int(getattr(exc, "status", 400))
        headers = getattr(exc, "headers", None) or {}
        response = page(status, title, clean_text(str(exc), 300))
        response.headers.update(headers)
        return response

    def viewer(request: Request) -> Viewer:
        found = request.scope.get(SCOPE_KEY)
        return found if isinstance(found, Viewer) else ANONYMOUS

    async def read_form(request: Request, limits: UploadLimits, files: int = 0) -> FormData:
        """The POST's form, after the origin check; its body capped."""
        if not same_origin(request.headers, request.url.scheme):
            raise SignInError(403, "refused: this form was not sent from this site's own page")
        try:
            check_length(request.headers.get("content-length"), limits)
        except UploadError as exc:
            raise SignInError(exc.status, str(exc)) from None
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > limits.body_bytes:
                raise SignInError(413, f"this form is over {limits.body_bytes} bytes")

        async def again() -> AsyncGenerator[bytes, None]:
            yield body

        headers = Headers(raw=request.scope["headers"])
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        try:
            if kind == "multipart/form-data":
                return await MultiPartParser(
                    headers, again(), max_files=files, max_fields=4
                ).parse()
            if kind in ("application/x-www-form-urlencoded", ""):
                return await FormParser(headers, again()).parse()
        except MultiPartException as exc:
            raise SignInError(400, f"a form that cannot be read: {exc.message}") from None
        raise SignInError(415, f"this form is sent as the page sends it, not as {kind[:60]!r}")

    async def signed_form(
        request: Request, role: str, limits: UploadLimits | None = None, files: int = 0
    ) -> tuple[Viewer, FormData]:
        """A signed-in POST: origin, session of ``role`` (``any``: either), form token."""
        form = await read_form(request, limits or form_limits, files)
        who = viewer(request)
        if not who.signed_in or (role != "any" and who.role != role):
            await form.close()
            raise SignInError(403, "refused: sign in first (your session has ended)")
        given = form.get("form_token")
        if (
            not isinstance(given, str)
            or who.form_token is None
            or not hmac.compare_digest(given.encode(), who.form_token.encode())
        ):
            await form.close()
            raise SignInError(403, "refused: this form's token is missing or not your session's")
        return who, form

    def limited(request: Request) -> Response | None:
        wait = limiter.hit(client_address(request))
        if not wait:
            return None
        response = page(
            429,
            "Too many sign-ins",
            f"too many sign-in attempts from your address: try again in {wait} s",
        )
        response.headers["Retry-After"] = str(wait)
        return response

    def signed_in(request: Request, made: sessions.NewSession) -> Response:
        target = "/organiser" if made.viewer.organiser else "/me"
        response = RedirectResponse(target, 303)
        response.set_cookie(
            cookie_name(settings.secure),
            made.session_id,
            max_age=int(settings.session_seconds),
            path="/",
            secure=settings.secure,
            httponly=True,
            samesite="lax",
        )
        return response

    def old_session(request: Request) -> str | None:
        return session_id_of(request.scope.get("headers", []), settings.secure)

    # -- one-time links and sign-in --------------------------------------------------

    async def link_page(request: Request) -> Response:
        secret = request.path_params["secret"]

        def read(conn: Any) -> tuple[str, str]:
            found = sessions.check_link(conn, secret, clock())
            name = ""
            if found.participant_id is not None:
                p = store.participant_by_id(conn, found.participant_id)
                name = p.display_name if p else ""
            return found.role, name

        try:
            role, name = await database.read_async(read)
        except SignInError as exc:
            return refused(exc, "This link cannot be used")
        return HTMLResponse(
            render(
                "signin_link.html.j2",
                title="Sign in",
                role=role,
                person=clean_text(name),
                action=request.url.path,
            )
        )

    async def link_use(request: Request) -> Response:
        if (busy := limited(request)) is not None:
            return busy
        try:
            form = await read_form(request, form_limits)
            await form.close()
            made = await database.write_async(
                sessions.exchange_link,
                request.path_params["secret"],
                clock(),
                settings.session_seconds,
                old_session(request),
            )
        except SignInError as exc:
            return refused(exc, "This link cannot be used")
        return signed_in(request, made)

    async def token_page(request: Request) -> Response:
        return HTMLResponse(render("signin_token.html.j2", title="Sign in"))

    async def token_use(request: Request) -> Response:
        if (busy := limited(request)) is not None:
            return busy
        try:
            form = await read_form(request, form_limits)
            token = form.get("token")
            await form.close()
            if not isinstance(token, str):
                raise SignInError(400, "no token given")
            made = await database.write_async(
                sessions.token_sign_in,
                token,
                clock(),
                settings.session_seconds,
                old_session(request),
            )
        except SignInError as exc:
            return refused(exc, "Not signed in")
        return signed_in(request, made)

    async def sign_out(request: Request) -> Response:
        try:
            await signed_form(request, "any")
        except SignInError as exc:
            return refused(exc)
        sid = old_session(request)
        if sid:
            await database.write_async(sessions.end_session, sid, clock())
        response = RedirectResponse("/", 303)
        response.delete_cookie(
            cookie_name(settings.secure),
            path="/",
            secure=settings.secure,
            httponly=True,
            samesite="lax",
        )
        return response

    # -- the participant's page --------------------------------------------------------

    async def me(request: Request) -> Response:
        who = viewer(request)
        if who.role != "participant" or who.participant_id is None:
            return RedirectResponse("/signin", 303)
        pid = who.participant_id

        def read(conn: Any) -> tuple[store.ParticipantRow | None, list[Any], int]:
            return (
                store.participant_by_id(conn, pid),
                sessions.tokens_of(conn, pid),
                sessions.stored_bytes(conn, pid),
            )

        person, tokens, used = await database.read_async(read)
        if person is None:
            return RedirectResponse("/signin", 303)
        return HTMLResponse(
            render(
                "signin_me.html.j2",
                title="Your page",
                me=person,
                tokens=tokens,
                form_token=who.form_token,
                upload_mib=f"{upload_limits.body_bytes / sessions.MIB:g}",
                quota_mib=f"{settings.quota_bytes / sessions.MIB:g}",
                used_mib=f"{used / sessions.MIB:.1f}",
            )
        )

    async def new_token(request: Request) -> Response:
        try:
            who, _ = await signed_form(request, "participant")
            assert who.participant_id is not None
            token = await database.write_async(sessions.add_token, who.participant_id, clock())
        except SignInError as exc:
            return refused(exc)
        return page(
            201,
            "A new token",
            "Your new token for hearts-arena submit (--token-file or HEARTS_ARENA_TOKEN):",
            secret=token,
            back="/me",
        )

    async def revoke_token(request: Request) -> Response:
        try:
            who, _ = await signed_form(request, "participant")
            assert who.participant_id is not None
            try:
                token_id = int(request.path_params["id"])
            except ValueError:
                raise SignInError(404, "no such token") from None
            await database.write_async(sessions.revoke_token, who.participant_id, token_id, clock())
        except SignInError as exc:
            return refused(exc)
        return RedirectResponse("/me", 303)

    async def rename(request: Request) -> Response:
        try:
            who, form = await signed_form(request, "participant")
            assert who.participant_id is not None
            text = form.get("display_name")
            if not isinstance(text, str):
                raise SignInError(400, "no display name given")
            await database.write_async(sessions.set_display_name, who.participant_id, text)
        except SignInError as exc:
            return refused(exc)
        return RedirectResponse("/me", 303)

    async def upload(request: Request) -> Response:
        try:
            who, form = await signed_form(request, "participant", upload_limits, files=1)
            assert who.participant_id is not None
            try:
                files = [v for _, v in form.multi_items() if not isinstance(v, str)]
                if len(files) != 1:
                    raise SignInError(400, "the form holds no file: send one .py file or one zip")
                data = bytes(await files[0].read())
            finally:
                await form.close()
            made = await accept(who.participant_id, data)
        except SignInError as exc:
            return refused(exc, "Upload refused")
        except Exception as exc:  # the API's errors (ApiError, UploadError): status + one line
            if not hasattr(exc, "status"):
                raise
            return refused(exc, "Upload refused")
        place = f", place {made['place']} in the queue" if made.get("place") else ""
        return page(
            201,
            "Submission received",
            f"submission {made['submission']} received: {made['status']}{place}",
            back="/me",
        )

    # -- the organiser's page --------------------------------------------------------------

    async def organiser(request: Request) -> Response:
        who = viewer(request)
        if not who.organiser:
            return RedirectResponse("/signin", 303)
        now = clock()

        def read(conn: Any) -> list[dict[str, Any]]:
            return [
                {
                    "id": p.id,
                    "display_name": clean_text(p.display_name),
                    "status": p.status,
                    "sessions": sessions.live_sessions(conn, p.id, now),
                }
                for p in store.list_participants(conn)
            ]

        people = await database.read_async(read)
        return HTMLResponse(
            render(
                "signin_organiser.html.j2",
                title="Organiser",
                people=people,
                form_token=who.form_token,
                invite_days=f"{settings.invite_seconds / 86400:g}",
            )
        )

    def link_url(request: Request, secret: str) -> str:
        return f"{request.url.scheme}://{request.headers.get('host', '')}/signin/{secret}"

    async def make_invite(request: Request) -> Response:
        try:
            _, form = await signed_form(request, "organiser")
            name = form.get("display_name")
            if not isinstance(name, str):
                raise SignInError(400, "no display name given")
            person, secret = await database.write_async(
                sessions.invite, name, clock(), settings.invite_seconds
            )
        except SignInError as exc:
            return refused(exc)
        return page(
            201,
            "Invite made",
            f"The sign-in link of {clean_text(person.display_name)} (one use, "
            f"{settings.invite_seconds / 86400:g} days):",
            secret=link_url(request, secret),
            back="/organiser",
        )

    def participant_id(request: Request) -> int:
        try:
            return int(request.path_params["id"])
        except ValueError:
            raise SignInError(404, "no such participant") from None

    async def link_again(request: Request) -> Response:
        try:
            await signed_form(request, "organiser")
            secret = await database.write_async(
                sessions.invite_again, participant_id(request), clock(), settings.invite_seconds
            )
        except SignInError as exc:
            return refused(exc)
        return page(
            201, "Sign-in link made", "The new sign-in link (one use):",
            secret=link_url(request, secret), back="/organiser",
        )  # fmt: skip

    async def end_sessions(request: Request) -> Response:
        try:
            await signed_form(request, "organiser")
            await database.write_async(sessions.end_sessions_of, participant_id(request), clock())
        except SignInError as exc:
            return refused(exc)
        return RedirectResponse("/organiser", 303)

    return [
        Route("/signin/{secret}", link_page, methods=["GET"]),
        Route("/signin/{secret}", link_use, methods=["POST"]),
        Route("/signin", token_page, methods=["GET"]),
        Route("/signin", token_use, methods=["POST"]),
        Route("/signout", sign_out, methods=["POST"]),
        Route("/me", me, methods=["GET"]),
        Route("/me/tokens", new_token, methods=["POST"]),
        Route("/me/tokens/{id}/revoke", revoke_token, methods=["POST"]),
        Route("/me/name", rename, methods=["POST"]),
        Route("/me/submissions", upload, methods=["POST"]),
        Route("/organiser", organiser, methods=["GET"]),
        Route("/organiser/invites", make_invite, methods=["POST"]),
        Route("/organiser/participants/{id}/link", link_again, methods=["POST"]),
        Route("/organiser/participants/{id}/sessions/end", end_sessions, methods=["POST"]),
    ]


#: Paths whose POST bodies may be as large as an upload (the rest: ``form_bytes``).
UPLOAD_PATHS: Final = frozenset({"/api/submissions", "/me/submissions"})
