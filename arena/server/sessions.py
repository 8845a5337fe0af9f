"""Sign-in on the server (issue 28): browser sessions, one-time links,
display names, participants' CLI tokens from the web, and the web process's
in-memory limits (sign-in attempts per address, event streams).

Secrets (a session id, a link's secret, a token) are 256 random bits
(``secrets.token_urlsafe(32)``, 43 characters); the database holds only
their SHA-256 (hex), so a copy of the database signs nobody in. A session's
form token (every POST form carries it) is derived from the session id
(HMAC-SHA-256), never stored. Times are seconds since the epoch (UTC), from
the caller's clock.

The database functions take an open SQLAlchemy :class:`~sqlalchemy.Connection`
(run them through :meth:`arena.server.db.Database.write_async` /
``read_async``). Errors a person can act on are :class:`SignInError` (a
one-line reason and an HTTP status).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Connection, and_, func, insert, select, update

from arena.protocol.codec import clean_text
from arena.server import db, store
from arena.server.viewer import Viewer

#: Bytes of every secret (256 bits), before URL-safe base64.
SECRET_BYTES: Final = 32
#: Seconds an organiser link lives (24 hours).
ORGANISER_LINK_SECONDS: Final = 24 * 3600.0
#: Seconds a participant's invite lives by default (7 days).
INVITE_SECONDS: Final = 7 * 24 * 3600.0
#: Seconds a session lives by default (7 days).
SESSION_SECONDS: Final = 7 * 24 * 3600.0
#: Longest display name, in characters.
DISPLAY_NAME_CHARS: Final = 32
#: First characters a display name may not have: a spreadsheet reads a CSV
#: cell starting with one of them as a formula (the exports of issue 30).
FORMULA_STARTS: Final = ("=", "+", "-", "@")
#: Most tokens a participant holds at once (unrevoked).
TOKENS_PER_PARTICIPANT: Final = 20


class SignInError(Exception):
    """A sign-in request refused: ``status`` (HTTP) and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def new_secret() -> str:
    """A fresh secret: 256 random bits, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(SECRET_BYTES)


def secret_hash(secret: str) -> str:
    """The SHA-256 (hex) of a secret's text, as stored."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def form_token(session_id: str) -> str:
    """The form token of the session ``session_id``: HMAC-SHA-256 of a fixed
    label under the session id (hex). Known to whoever holds the cookie,
    never stored, so a copy of the database forges no form."""
    return hmac.new(session_id.encode("ascii"), b"hearts-arena form token", "sha256").hexdigest()


def _plausible(secret: str) -> bool:
    return 20 <= len(secret) <= 100 and secret.isascii()


# -- display names ---------------------------------------------------------------------


def check_display_name(text: str) -> str:
    """A display name as a person typed it, cleaned (:func:`clean_text`:
    control and bidirectional characters removed, spaces collapsed).

    Raises:
        SignInError: (400) empty once cleaned, over :data:`DISPLAY_NAME_CHARS`
            characters, or starting with ``=``, ``+``, ``-`` or ``@``.
    """
    cleaned = clean_text(text, 10_000)
    if not cleaned:
        raise SignInError(400, "a display name is needed (letters, digits, spaces)")
    if len(cleaned) > DISPLAY_NAME_CHARS:
        raise SignInError(
            400, f"a display name has at most {DISPLAY_NAME_CHARS} characters, not {len(cleaned)}"
        )
    if cleaned.startswith(FORMULA_STARTS):
        raise SignInError(
            400, "a display name may not start with =, +, - or @ (a spreadsheet formula)"
        )
    return cleaned


def display_name_from(name: str) -> str:
    """The display name of a participant added by ``serve --add NAME``:
    ``NAME`` cleaned, without leading ``= + - @``, cut to
    :data:`DISPLAY_NAME_CHARS` characters (``NAME`` itself when that leaves
    nothing)."""
    shown = clean_text(name, 10_000).lstrip("".join(FORMULA_STARTS) + " ")
    return shown[:DISPLAY_NAME_CHARS].rstrip() or clean_text(name, DISPLAY_NAME_CHARS)


def set_display_name(conn: Connection, participant_id: int, text: str) -> str:
    """Change a participant's display name (checked by
    :func:`check_display_name`); returns it.

    Raises:
        SignInError: (400) a name refused; (409) taken by another, ignoring case.
    """
    shown = check_display_name(text)
    if store.display_name_taken(conn, shown, other_than=participant_id):
        raise SignInError(409, f"the display name {shown!r} is taken (ignoring case)")
    conn.execute(
        update(db.participants)
        .where(db.participants.c.id == participant_id)
        .values(display_name=shown, display_key=shown.casefold())
    )
    return shown


# -- one-time links ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinkRow:
    """A one-time sign-in link: ``role`` in :data:`arena.server.db.SIGN_IN_ROLES`."""

    id: int
    role: str
    participant_id: int | None
    created_at: float
    expires_at: float
    used_at: float | None


def make_link(
    conn: Connection, role: str, participant_id: int | None, now: float, seconds: float
) -> str:
    """A new one-time link's secret for ``role`` (a participant's needs its
    ``participant_id``), valid for ``seconds``; only its SHA-256 is stored.

    Raises:
        ValueError: an unknown role, or a participant link without a participant.
    """
    if role not in db.SIGN_IN_ROLES or (role == "participant") != (participant_id is not None):
        raise ValueError(f"a {role} link needs a participant exactly when it is a participant's")
    secret = new_secret()
    conn.execute(
        insert(db.invites).values(
            sha256=secret_hash(secret),
            role=role,
            participant_id=participant_id,
            created_at=now,
            expires_at=now + seconds,
        )
    )
    return secret


def organiser_link(conn: Connection, now: float, seconds: float = ORGANISER_LINK_SECONDS) -> str:
    """A new organiser link's secret (``serve --init``, ``--organiser-link``:
    shell access to the server is the organiser's proof), one use, 24 hours."""
    return make_link(conn, "organiser", None, now, seconds)


def invite(
    conn: Connection, display_name: str, now: float, seconds: float = INVITE_SECONDS
) -> tuple[store.ParticipantRow, str]:
    """The organiser invites a new participant shown as ``display_name``:
    the participant is made (its name is the display name) and a one-time
    link's secret returned (shown once).

    Raises:
        SignInError: (400) a display name refused; (409) one taken.
    """
    shown = check_display_name(display_name)
    if store.display_name_taken(conn, shown) or store.participant_by_name(conn, shown):
        raise SignInError(409, f"the display name {shown!r} is taken (ignoring case)")
    p = store.add_participant(conn, shown, now, shown)
    return p, make_link(conn, "participant", p.id, now, seconds)


def invite_again(
    conn: Connection, participant_id: int, now: float, seconds: float = INVITE_SECONDS
) -> str:
    """A new one-time link for an existing participant (to sign in again).

    Raises:
        SignInError: (404) no such participant; (403) a revoked one.
    """
    p = store.participant_by_id(conn, participant_id)
    if p is None:
        raise SignInError(404, f"no participant {participant_id}")
    if p.status == "revoked":
        raise SignInError(403, f"participant {clean_text(p.display_name)} is revoked")
    return make_link(conn, "participant", p.id, now, seconds)


def link_row(conn: Connection, secret: str) -> LinkRow | None:
    """The link whose secret is ``secret`` (used or not), or ``None``."""
    if not _plausible(secret):
        return None
    row = conn.execute(select(db.invites).where(db.invites.c.sha256 == secret_hash(secret))).first()
    if row is None:
        return None
    return LinkRow(
        row.id, row.role, row.participant_id, row.created_at, row.expires_at, row.used_at
    )


def check_link(conn: Connection, secret: str, now: float) -> LinkRow:
    """The link of ``secret`` if it may still be used.

    Raises:
        SignInError: (404) unknown; (410) used already or expired; (403) its
            participant revoked.
    """
    found = link_row(conn, secret)
    if found is None:
        raise SignInError(404, "this sign-in link is not known here (ask the organiser)")
    if found.used_at is not None:
        raise SignInError(410, "this sign-in link was used already: each works once")
    if now >= found.expires_at:
        raise SignInError(410, "this sign-in link has expired: ask the organiser for a new one")
    if found.participant_id is not None:
        p = store.participant_by_id(conn, found.participant_id)
        if p is None or p.status == "revoked":
            raise SignInError(403, "this participant is revoked")
    return found


# -- sessions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewSession:
    """A session just made: ``session_id`` (the cookie's value, never
    stored), its ``viewer`` and ``expires_at``."""

    session_id: str
    viewer: Viewer
    expires_at: float


def start_session(
    conn: Connection,
    role: str,
    participant_id: int | None,
    now: float,
    seconds: float = SESSION_SECONDS,
    replacing: str | None = None,
) -> NewSession:
    """A new session (a fresh id at every sign-in: no fixation); the
    session id ``replacing`` (the cookie the browser came with) is ended."""
    if replacing:
        end_session(conn, replacing, now)
    sid = new_secret()
    conn.execute(
        insert(db.sessions).values(
            sha256=secret_hash(sid),
            role=role,
            participant_id=participant_id,
            created_at=now,
            expires_at=now + seconds,
        )
    )
    viewer = Viewer(role, participant_id, secret_hash(sid), form_token(sid))  # type: ignore[arg-type]
    return NewSession(sid, viewer, now + seconds)


def exchange_link(
    conn: Connection,
    secret: str,
    now: float,
    seconds: float = SESSION_SECONDS,
    replacing: str | None = None,
) -> NewSession:
    """Use a one-time link: mark it used and start its session (in one
    write transaction, so two uses at once make one session).

    Raises:
        SignInError: as :func:`check_link`.
    """
    found = check_link(conn, secret, now)
    done = conn.execute(
        update(db.invites)
        .where(and_(db.invites.c.id == found.id, db.invites.c.used_at.is_(None)))
        .values(used_at=now)
    )
    if done.rowcount != 1:
        raise SignInError(410, "this sign-in link was used already: each works once")
    return start_session(conn, found.role, found.participant_id, now, seconds, replacing)


def token_sign_in(
    conn: Connection,
    token: str,
    now: float,
    seconds: float = SESSION_SECONDS,
    replacing: str | None = None,
) -> NewSession:
    """Sign a participant in with one of their CLI tokens (a participant
    whose link is used and whose session ended signs in again this way).

    Raises:
        SignInError: (401) an unknown or revoked token; (403) a revoked participant.
    """
    token = token.strip()
    if not _plausible(token):
        raise SignInError(401, "unknown or revoked token")
    p = store.participant_by_token_hash(conn, store.token_hash(token))
    if p is None:
        raise SignInError(401, "unknown or revoked token")
    if p.status == "revoked":
        raise SignInError(403, "this participant is revoked")
    return start_session(conn, "participant", p.id, now, seconds, replacing)


def viewer_of_session(conn: Connection, session_id: str, now: float) -> Viewer | None:
    """The viewer of a live session id (the cookie's value): not ended, not
    expired, its participant not revoked; else ``None``."""
    if not _plausible(session_id):
        return None
    row = conn.execute(
        select(db.sessions).where(db.sessions.c.sha256 == secret_hash(session_id))
    ).first()
    if row is None or row.ended_at is not None or now >= row.expires_at:
        return None
    if row.participant_id is not None:
        p = store.participant_by_id(conn, row.participant_id)
        if p is None or p.status == "revoked":
            return None
    return Viewer(row.role, row.participant_id, row.sha256, form_token(session_id))


def end_session(conn: Connection, session_id: str, now: float) -> bool:
    """End the session ``session_id`` (sign-out); whether one was live."""
    return _end(conn, db.sessions.c.sha256 == secret_hash(session_id), now) > 0


def end_sessions_of(conn: Connection, participant_id: int, now: float) -> int:
    """End every live session of a participant (the organiser's revoke);
    the number ended."""
    return _end(conn, db.sessions.c.participant_id == participant_id, now)


def _end(conn: Connection, where: object, now: float) -> int:
    done = conn.execute(
        update(db.sessions)
        .where(and_(where, db.sessions.c.ended_at.is_(None)))  # type: ignore[arg-type]
        .values(ended_at=now)
    )
    return int(done.rowcount)


def live_sessions(conn: Connection, participant_id: int, now: float) -> int:
    """Live (not ended, not expired) sessions of a participant."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(db.sessions)
            .where(
                and_(
                    db.sessions.c.participant_id == participant_id,
                    db.sessions.c.ended_at.is_(None),
                    db.sessions.c.expires_at > now,
                )
            )
        ).scalar_one()
    )


# -- a participant's CLI tokens ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenRow:
    """One of a participant's CLI tokens: its row ``id``, the first 8 hex
    digits of its SHA-256 (to tell tokens apart), when made and revoked."""

    id: int
    sha256_prefix: str
    created_at: float
    revoked_at: float | None


def tokens_of(conn: Connection, participant_id: int) -> list[TokenRow]:
    """A participant's tokens, newest first (revoked ones too)."""
    rows = conn.execute(
        select(db.tokens)
        .where(db.tokens.c.participant_id == participant_id)
        .order_by(db.tokens.c.id.desc())
    )
    return [TokenRow(r.id, r.sha256[:8], r.created_at, r.revoked_at) for r in rows]


def add_token(conn: Connection, participant_id: int, now: float) -> str:
    """A new CLI token for the participant (shown once; its SHA-256 stored).

    Raises:
        SignInError: (409) :data:`TOKENS_PER_PARTICIPANT` unrevoked tokens already.
    """
    held = sum(1 for t in tokens_of(conn, participant_id) if t.revoked_at is None)
    if held >= TOKENS_PER_PARTICIPANT:
        raise SignInError(
            409, f"{held} tokens already (at most {TOKENS_PER_PARTICIPANT}): revoke one first"
        )
    token = new_secret()
    store.add_token(conn, participant_id, store.token_hash(token), now)
    return token


def revoke_token(conn: Connection, participant_id: int, token_id: int, now: float) -> None:
    """Revoke one of the participant's own tokens.

    Raises:
        SignInError: (404) no such unrevoked token of theirs.
    """
    done = conn.execute(
        update(db.tokens)
        .where(
            and_(
                db.tokens.c.id == token_id,
                db.tokens.c.participant_id == participant_id,
                db.tokens.c.revoked_at.is_(None),
            )
        )
        .values(revoked_at=now)
    )
    if done.rowcount != 1:
        raise SignInError(404, f"you hold no live token {token_id}")


def stored_bytes(conn: Connection, participant_id: int) -> int:
    """Bytes of a participant's stored submissions (each stored file once,
    by its SHA-256): what the storage quota counts."""
    rows = conn.execute(
        select(db.submissions.c.sha256, func.max(db.submissions.c.size))
        .where(db.submissions.c.participant_id == participant_id)
        .group_by(db.submissions.c.sha256)
    )
    return sum(int(r[1] or 0) for r in rows)


# -- the web process's in-memory limits ---------------------------------------------------


@dataclass
class RateLimiter:
    """At most ``per_minute`` attempts per key (a client address) in any 60
    seconds of ``clock`` (seconds; ``time.time`` or a test's clock)."""

    per_minute: int
    clock: Callable[[], float]
    window: float = 60.0
    _hits: dict[str, deque[float]] = field(default_factory=dict)

    def hit(self, key: str) -> int:
        """Count one attempt of ``key``; 0 when it is allowed, else the
        seconds to wait (``Retry-After``, at least 1) and it is not counted."""
        now = self.clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.per_minute:
            return max(1, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        if len(self._hits) > 10_000:  # forget idle addresses
            for k in [k for k, v in self._hits.items() if not v or v[-1] <= now - self.window]:
                del self._hits[k]
        return 0


#: Seconds a client refused a stream is told to wait.
STREAM_RETRY_SECONDS: Final = 10


@dataclass
class StreamCaps:
    """Event streams open at once: at most ``per_session`` per session,
    ``per_address`` per address without one, ``total`` in all."""

    per_session: int = 4
    per_address: int = 4
    total: int = 500
    _open: dict[str, int] = field(default_factory=dict)
    _count: int = 0

    def acquire(self, session: str | None, address: str) -> str | None:
        """Take a place for a stream of ``session`` (its SHA-256) or, without
        one, of ``address``; the key to :meth:`release`, or ``None`` when full."""
        key = f"session:{session}" if session else f"address:{address}"
        cap = self.per_session if session else self.per_address
        if self._count >= self.total or self._open.get(key, 0) >= cap:
            return None
        self._open[key] = self._open.get(key, 0) + 1
        self._count += 1
        return key

    def release(self, key: str) -> None:
        """Give back the place :meth:`acquire` returned."""
        left = self._open.get(key, 0) - 1
        if left > 0:
            self._open[key] = left
        else:
            self._open.pop(key, None)
        self._count = max(0, self._count - 1)

    @property
    def open(self) -> int:
        """Streams open now."""
        return self._count


#: Bytes in a MiB.
MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class SiteSettings:
    """The sign-in side's settings (the web process's; defaults as issue 28).

    Attributes:
        secure: served over TLS or behind ``--behind-proxy``: the session
            cookie is ``__Host-`` prefixed and ``Secure``, and HSTS is sent
            over TLS.
        sign_in_per_minute: link exchanges and token sign-ins per client
            address in any 60 seconds (then 429 with ``Retry-After``).
        session_seconds: a session's life; ``invite_seconds`` an invite's.
        quota_bytes: a participant's stored submissions at most (bytes).
        form_bytes: the body cap of every route but the uploads (bytes).
        streams_per_session, streams_per_address, streams_total: event
            streams open at once (per session; per address without one; in all).
    """

    secure: bool = False
    sign_in_per_minute: int = 10
    session_seconds: float = SESSION_SECONDS
    invite_seconds: float = INVITE_SECONDS
    quota_bytes: int = 200 * MIB
    form_bytes: int = 64 * 1024
    streams_per_session: int = 4
    streams_per_address: int = 4
    streams_total: int = 500

    def stream_caps(self) -> StreamCaps:
        """Fresh :class:`StreamCaps` with these caps."""
        return StreamCaps(self.streams_per_session, self.streams_per_address, self.streams_total)
