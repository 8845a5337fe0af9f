"""The server's pure rating values and entrant labels, with no database
import (SQLAlchemy): :mod:`arena.server.ladder` and the checker of an
exported competition (:mod:`arena.server.verifying`, run by ``hearts-arena
verify`` on a participant's machine) need them without the ``[server]``
extra. :mod:`arena.server.store` re-exports every name here.

Entrant labels: a submission plays as ``s<id>`` (:func:`entrant_label`), a
house bot as ``house:<name>`` (:func:`house_label`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Ranked games after which a new submission replaces its participant's
#: previous one in the standings (and stops being a focus at most a third of tables).
GAMES_TO_SETTLE: Final = 20
#: TrueSkill's prior (the package defaults, :mod:`arena.results.rating`).
PRIOR_MU: Final = 25.0
PRIOR_SIGMA: Final = 25.0 / 3
HOUSE_PREFIX: Final = "house:"


def entrant_label(submission_id: int) -> str:
    """The entrant name a submission plays under: ``s<id>``."""
    return f"s{submission_id}"


def house_label(name: str) -> str:
    """The entrant name of house bot ``name`` (``sample:low`` -> ``house:low``)."""
    return HOUSE_PREFIX + name.removeprefix("sample:")


def submission_of(label: str) -> int | None:
    """The submission id of an entrant label, ``None`` for a house bot."""
    if label.startswith("s") and label[1:].isdigit():
        return int(label[1:])
    return None


@dataclass(frozen=True, slots=True)
class Rating:
    """One entrant's rating in a fold: TrueSkill ``mu``, ``sigma``, rated ``games``."""

    mu: float
    sigma: float
    games: int

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``."""
        return self.mu - 3 * self.sigma


PRIOR: Final = Rating(PRIOR_MU, PRIOR_SIGMA, 0)
