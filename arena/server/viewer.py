"""Who is asking: the viewer of a web request (issue 28, "Who sees what").

The seam between the web process's sign-in (sessions, invites: it decides
who a request comes from and stores that in the ASGI scope) and its pages
(which decide what that viewer may see). A request nobody signed in for is
:data:`ANONYMOUS`. The API's bearer tokens are not viewers: the API
authenticates each request itself and never reads a cookie.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

#: The ASGI scope key holding a request's :class:`Viewer`.
SCOPE_KEY: Final = "hearts_arena.viewer"

#: A viewer's roles, from the least to the most allowed.
Role = Literal["anonymous", "participant", "organiser"]


@dataclass(frozen=True, slots=True)
class Viewer:
    """The person behind a web request.

    Attributes:
        role: ``anonymous`` (no session), ``participant`` or ``organiser``.
        participant_id: the participant's id (``participants.id``) when the
            role is ``participant``, else ``None``.
        session_sha256: the SHA-256 (hex) of the session id, when signed in.
        form_token: the session's form token (every POST form carries it).
    """

    role: Role
    participant_id: int | None = None
    session_sha256: str | None = None
    form_token: str | None = None

    @property
    def signed_in(self) -> bool:
        """Whether a session stands behind the request."""
        return self.role != "anonymous"

    @property
    def organiser(self) -> bool:
        """Whether the viewer is the organiser."""
        return self.role == "organiser"


#: The viewer of a request without a (valid) session.
ANONYMOUS: Final = Viewer("anonymous")


def viewer_of(scope: Mapping[str, Any]) -> Viewer:
    """The viewer the sign-in layer put in an ASGI ``scope`` (a Starlette
    request's ``request.scope``); :data:`ANONYMOUS` when none."""
    found = scope.get(SCOPE_KEY)
    return found if isinstance(found, Viewer) else ANONYMOUS
