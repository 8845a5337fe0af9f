"""Who sees what on the competition server's pages (issue 28): the rules in
one place. docs/server-web.md, "Who sees what", holds them as a table that
tests/server/test_visibility.py reads and checks page by page.

The rules:

* ``pages``: what everyone allowed to see pages sees (the standings, the
  finished tables and their replays, the Environment page): signed-in
  viewers under ``pages = "signed-in"`` (the default), anyone under
  ``pages = "public"``;
* ``signed-in``: any signed-in viewer, under either setting (a
  participant's own list of submissions; the organiser's is everyone's);
* ``own``: the participant it belongs to (their submissions, each step's
  result and output, their own seat's stderr and transcript) and the
  organiser;
* ``organiser``: the organiser only (every seat's output, the voids, the
  participants and the actions).

A viewer a rule refuses gets :data:`SIGN_IN` when not signed in (a page
saying how to sign in, status 401, never the content) and :data:`HIDDEN`
otherwise (404, as for a page that does not exist: a participant learns
nothing of another's submissions). The API with a bearer token is not a
viewer: it answers under either setting (:mod:`arena.server.web`).
"""

from __future__ import annotations

from typing import Final, Literal

from arena.server.viewer import Viewer

#: A page's rule (see the module's docstring).
Rule = Literal["pages", "signed-in", "own", "organiser"]
#: What a viewer gets: the page, a sign-in page, or a 404.
Decision = Literal["shown", "sign-in", "hidden"]

SHOWN: Final[Decision] = "shown"
SIGN_IN: Final[Decision] = "sign-in"
HIDDEN: Final[Decision] = "hidden"

#: Each page (by its route name in :mod:`arena.server.pages`) and its rule.
RULES: Final[dict[str, Rule]] = {
    "standings": "pages",
    "events": "pages",
    "api-standings": "pages",
    "tables": "pages",
    "table": "pages",
    "environment": "pages",
    "api-environment": "pages",
    "final": "pages",
    "api-final": "pages",
    "submissions": "signed-in",
    "submission": "own",
    "submission-output": "own",
    "seat": "own",
    "seat-stderr": "own",
    "seat-transcript": "own",
    "voids": "organiser",
    "participants": "organiser",
    "actions": "organiser",
    "table-manage": "organiser",
}


def decide(viewer: Viewer, rule: Rule, pages: str, owner: int | None = None) -> Decision:
    """What ``viewer`` gets of a page under ``rule``, with the competition's
    ``pages`` setting (``"signed-in"`` or ``"public"``); ``owner``: the
    participant id the page belongs to (``own`` pages; ``None`` when it
    belongs to nobody, a house bot's seat, so only the organiser sees it)."""
    if viewer.organiser:
        return SHOWN
    if rule == "pages":
        return SHOWN if pages == "public" or viewer.signed_in else SIGN_IN
    if not viewer.signed_in:
        return SIGN_IN
    if rule == "signed-in":
        return SHOWN
    if rule == "own":
        mine = owner is not None and viewer.participant_id == owner
        return SHOWN if viewer.role == "participant" and mine else HIDDEN
    return HIDDEN


def may_see(viewer: Viewer, page: str, pages: str, owner: int | None = None) -> Decision:
    """:func:`decide` for the page named ``page`` (a key of :data:`RULES`).

    Raises:
        KeyError: a page without a rule (every route of the pages has one).
    """
    return decide(viewer, RULES[page], pages, owner)


def sees_seat(viewer: Viewer, owner: int | None) -> bool:
    """Whether ``viewer`` sees the stderr and transcript of a seat whose
    submission belongs to participant ``owner`` (``None``: a house bot's):
    the organiser every seat, a participant their own."""
    return decide(viewer, "own", "signed-in", owner) == SHOWN
