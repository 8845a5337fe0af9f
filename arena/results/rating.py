"""TrueSkill ratings from finished games: a thin layer over the ``trueskill`` package.

Each game is a four-player free-for-all: four teams of one, ranked by the
game's final competition ranks (a shared rank is a draw between those seats).
Elo and Glicko rate two-player games and cannot rate a four-way result.

A rating is ``mu`` (the estimated skill) and ``sigma`` (its uncertainty); the
leaderboard sorts by the conservative rating ``mu - 3 * sigma``, a skill the
entrant exceeds with about 99% confidence (Herbrich, Minka and Graepel,
"TrueSkill: A Bayesian Skill Rating System", NIPS 2006). The environment is
``trueskill``'s default: mu 25, sigma 25/3, beta 25/6, tau 25/300, draw
probability 0.10.

Ratings depend on the order games are applied in, so callers apply them in
schedule order (``game_index``), never in completion order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import trueskill


def environment() -> trueskill.TrueSkill:
    """The TrueSkill environment used for every tournament (the package defaults)."""
    return trueskill.TrueSkill()


def environment_settings(env: trueskill.TrueSkill) -> dict[str, float]:
    """The environment's parameters, for the settings record."""
    return {
        "mu": env.mu,
        "sigma": env.sigma,
        "beta": env.beta,
        "tau": env.tau,
        "draw_probability": env.draw_probability,
    }


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """An entrant's rating after one game (for history charts)."""

    game_index: int
    mu: float
    sigma: float


class RatingTable:
    """Current TrueSkill ratings of a set of entrants, updated game by game."""

    def __init__(
        self,
        names: Iterable[str],
        env: trueskill.TrueSkill | None = None,
        *,
        keep_history: bool = True,
    ) -> None:
        self.env = env or environment()
        self.ratings: dict[str, trueskill.Rating] = {n: self.env.create_rating() for n in names}
        #: Each entrant's rating after each of its games (empty when
        #: ``keep_history`` is false: then memory does not grow with the games).
        self.history: dict[str, list[RatingPoint]] = {n: [] for n in self.ratings}
        self.keep_history = keep_history

    def apply(self, game_index: int, seats: Sequence[str], ranks: Sequence[int]) -> None:
        """Update the four seated entrants from one game's final ranks (1 is best).

        Raises:
            ValueError: a seat's entrant is unknown or appears twice.
        """
        if len(set(seats)) != len(seats):
            raise ValueError(f"an entrant holds two seats in game {game_index}: {list(seats)}")
        for name in seats:
            if name not in self.ratings:
                raise ValueError(f"unknown entrant {name!r} in game {game_index}")
        groups = [(self.ratings[name],) for name in seats]
        rated = self.env.rate(groups, ranks=[r - 1 for r in ranks])
        for name, (rating,) in zip(seats, rated, strict=True):
            self.ratings[name] = rating
            if self.keep_history:
                self.history[name].append(RatingPoint(game_index, rating.mu, rating.sigma))

    def conservative(self, name: str) -> float:
        """``mu - 3 * sigma`` of an entrant."""
        r = self.ratings[name]
        return float(r.mu - 3 * r.sigma)

    def snapshot(self, name: str) -> dict[str, Any]:
        """``mu``, ``sigma`` and ``conservative`` of an entrant, as plain data."""
        r = self.ratings[name]
        return {"mu": r.mu, "sigma": r.sigma, "conservative": r.mu - 3 * r.sigma}


class InOrderRatings:
    """Applies game results to a :class:`RatingTable` in schedule order as they
    arrive in any order: a result waits until every game before it (from
    ``first`` on) has been applied. Only the waiting results are kept, so
    memory is bounded by how far completions run ahead (``--jobs`` chains),
    not by the number of games.

    Args:
        table: the ratings to update.
        first: the ``game_index`` of the first game to apply.
    """

    def __init__(self, table: RatingTable, first: int = 0) -> None:
        self.table = table
        self.next = first
        self._waiting: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}

    def add(self, game_index: int, seats: Sequence[str], ranks: Sequence[int]) -> int:
        """Take one game's result; apply it and any waiting results that now
        follow in order. Returns how many games were applied.

        Raises:
            ValueError: the game was already applied or is waiting (a
                duplicate), or see :meth:`RatingTable.apply`.
        """
        if game_index < self.next or game_index in self._waiting:
            raise ValueError(f"game {game_index} was given twice")
        self._waiting[game_index] = (tuple(seats), tuple(ranks))
        applied = 0
        while self.next in self._waiting:
            seated, ranked = self._waiting.pop(self.next)
            self.table.apply(self.next, seated, ranked)
            self.next += 1
            applied += 1
        return applied

    @property
    def waiting(self) -> int:
        """Results held until an earlier game arrives."""
        return len(self._waiting)
