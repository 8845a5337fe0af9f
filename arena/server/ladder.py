"""The server's rolling, deterministic ladder (issue 27, "The ladder"): pure
functions, no I/O; :mod:`arena.server.runner` stores what they return.

* **Choosing table t** (:func:`choose_ladder_table`): from the ratings folded
  over ladder tables ``0 .. t-B-1`` (``B`` the competition's lag,
  :func:`fold_point`; the runner waits while that prefix is not folded),
  with :func:`arena.tournament.ladder.choose_tables` and a generator seeded
  from the key's ``"ladder"`` subkey and ``t`` (:func:`table_rng`). The games
  each entrant is counted for are its rated games in that fold plus four for
  every table it sits at among ``t-B .. t-1`` (all stored with their
  seating): nothing depends on when tables finished, so for a fixed set of
  submissions the tables do not depend on cores or workers.
* **New submissions**: one with fewer than 20 rated games in the fold the
  table is chosen from (:data:`~arena.server.rating.GAMES_TO_SETTLE`) is the
  focus of at most a third of the tables from the table at which it joined
  (:func:`focus_allowed`: ``ceil((t - joined + 1) / 3)`` tables among
  ``joined .. t``); past that it is kept from the focus (it may still be
  drawn as an opponent).
* **House bots** fill the field up to four while fewer than four submissions
  are active (:func:`field_of`).
* A table's four rotations share its deal, ``L<t>`` (:func:`table_specs`);
  a validation table's is ``V<submission>``, one hand, the submission
  against the first three house bots (:func:`validation_seating`).
* **The fold** (:func:`fold_tables`): TrueSkill over finished tables in table
  order, rotations in order; void tables skipped.
* **Fault runs** (:func:`fault_runs`): games in a row in which a submission
  crashed or was struck out; at the competition's budget (8) it leaves
  ranked play.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import trueskill

from arena.core.keys import MasterKey
from arena.protocol.faults import FaultKind
from arena.protocol.records import GameRecordJSON, GameSpec, faults_of
from arena.results.rating import environment
from arena.server.rating import GAMES_TO_SETTLE, PRIOR, Rating, submission_of
from arena.tournament.ladder import GAMES_PER_TABLE, choose_tables

#: Games of one table: its deal in the four seat rotations.
ROTATIONS: Final = GAMES_PER_TABLE
#: A focus kept from a settled field's entrants: far above any real count.
_KEPT_FROM_FOCUS: Final = 10**9


def fold_point(table: int, lag: int) -> int:
    """The fold table ``table`` is chosen from: ladder tables ``0 .. through-1``
    folded, ``through = max(0, table - lag)``."""
    return max(0, table - lag)


def table_rng(key: MasterKey, table: int) -> random.Random:
    """The generator of ladder table ``table``'s choice: seeded with
    ``key.draw_seed("ladder", f"serve-t{table}")`` (the ladder subkey, the table)."""
    return random.Random(key.draw_seed("ladder", f"serve-t{table}"))


def field_of(active: Iterable[str], house: Sequence[str]) -> list[str]:
    """The entrants ladder tables are chosen from: the active submissions'
    labels, and house bots in the organiser's order while there are fewer
    than four (enough to make four), sorted.

    Raises:
        ValueError: fewer than four entrants even with every house bot.
    """
    names = sorted(set(active))
    for h in house:
        if len(names) >= 4:
            break
        names.append(h)
    if len(names) < 4:
        raise ValueError(f"a ladder table needs four entrants, got {len(names)}")
    return sorted(names)


def focus_allowed(table: int, joined: int, focus_count: int) -> bool:
    """Whether a new submission that joined at table ``joined`` and was the
    focus of ``focus_count`` tables since may be the focus of table ``table``:
    with it, at most a third of tables ``joined .. table`` (rounded up)."""
    return 3 * (focus_count + 1) <= (table - joined + 1) + 2


@dataclass(frozen=True, slots=True)
class ChosenTable:
    """A ladder table's choice: its number, the four entrants in rotation 0's
    seat order, the entrant it was chosen for (the focus), the fold it was
    chosen from and the entrants it was chosen among."""

    number: int
    seating: tuple[str, str, str, str]
    focus: str
    fold_through: int
    field: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PastTable:
    """What the choice of a later table reads of an earlier one."""

    number: int
    seating: tuple[str, ...]
    focus: str | None


def _focus(
    names: Sequence[str],
    ratings: Mapping[str, tuple[float, float]],
    games: Mapping[str, int],
    rng: random.Random,
) -> str:
    # The entrant choose_tables will make the focus: its first draws are one
    # tie-break per entrant in sorted order (arena/tournament/ladder.py);
    # the same draws on a copy of the generator give the same focus.
    probe = random.Random()
    probe.setstate(rng.getstate())
    tie = {n: probe.random() for n in sorted(ratings)}
    return min(names, key=lambda n: (games.get(n, 0), -ratings[n][1], tie[n]))


def choose_ladder_table(
    table: int,
    key: MasterKey,
    lag: int,
    field: Sequence[str],
    fold: Mapping[str, Rating],
    recent: Sequence[PastTable],
    joined: Mapping[str, int],
    since_joined: Sequence[PastTable],
) -> ChosenTable:
    """Choose ladder table ``table``.

    Args:
        table: its number (0-based).
        key: the competition's key.
        lag: B.
        field: the entrants (:func:`field_of`).
        fold: the ratings folded over tables ``0 .. fold_point(table, lag)-1``
            (entrant -> rating; missing: the prior).
        recent: the tables numbered ``fold_point .. table-1`` (every one,
            whatever its state).
        joined: each submission's table number at which it joined the ladder
            (submissions absent, and house bots, are never new).
        since_joined: the tables from the smallest ``joined`` of a new
            submission to ``table-1`` (their focus), for the third rule.

    Returns:
        The choice (pure: the same arguments give the same table).
    """
    through = fold_point(table, lag)
    expected = list(range(through, table))
    if [p.number for p in recent] != expected:
        raise ValueError(f"table {table}: the tables {through}..{table - 1} are needed")
    ratings = {n: (fold.get(n, PRIOR).mu, fold.get(n, PRIOR).sigma) for n in field}
    games = {n: fold.get(n, PRIOR).games for n in field}
    for past in recent:
        for n in past.seating:
            if n in games:
                games[n] += ROTATIONS
    chooser_games = dict(games)
    for n in field:
        settled = fold.get(n, PRIOR).games >= GAMES_TO_SETTLE  # rated games, in the fold
        if submission_of(n) is None or n not in joined or settled:
            continue
        count = sum(1 for p in since_joined if p.focus == n and p.number >= joined[n])
        if not focus_allowed(table, joined[n], count):
            chooser_games[n] = _KEPT_FROM_FOCUS
    if all(v >= _KEPT_FROM_FOCUS for v in chooser_games.values()):
        chooser_games = dict(games)
    rng = table_rng(key, table)
    focus = _focus(sorted(field), ratings, chooser_games, rng)
    (seating,) = choose_tables(ratings, chooser_games, 1, rng)
    if focus not in seating:  # choose_tables changed its rule: the test of this module says so
        raise RuntimeError(f"table {table}: focus {focus} not seated in {seating}")
    return ChosenTable(table, seating, focus, through, tuple(sorted(field)))


def validation_seating(submission: str, house: Sequence[str]) -> tuple[str, str, str, str]:
    """A validation table's seating: the submission, then the first three house bots."""
    if len(house) < 3:
        raise ValueError("a validation table needs three house bots")
    return (submission, house[0], house[1], house[2])


def gauntlet_seed_id(deal_key: str, rotation: int) -> str:
    """The id a gauntlet game's bot seeds are drawn under
    (``key.bot_seeds(id)``): ``G<k>-k<r>``, of the deal and the rotation, not
    of the table (``g<number>-k<r>``), so every participant's reference bots
    get the same seeds (:mod:`arena.server.gauntlet`; ``verify`` checks them so)."""
    return f"{deal_key}-k{rotation}"


def table_specs(
    key: MasterKey,
    deal_key: str,
    game_id_prefix: str,
    number: int,
    seating: Sequence[str],
    hands: int | None,
    target_score: int | None,
) -> list[GameSpec]:
    """The four games of a table: rotation ``k`` seats ``seating[i]`` at seat
    ``(i + k) % 4``; all deal from ``deal_key``'s table key; ids
    ``f"{game_id_prefix}{number}-k{k}"``, game index ``4 number + k``."""
    table_key = key.table_key(deal_key)
    specs = []
    for k in range(ROTATIONS):
        seats = ["", "", "", ""]
        for i, name in enumerate(seating):
            seats[(i + k) % 4] = name
        game_id = f"{game_id_prefix}{number}-k{k}"
        specs.append(
            GameSpec(
                game_index=number * ROTATIONS + k,
                game_id=game_id,
                round=1,
                table=number,
                rotation=k,
                seats=(seats[0], seats[1], seats[2], seats[3]),
                deal_key=deal_key,
                bot_seeds=key.bot_seeds(game_id),
                target_score=target_score,
                hands=hands,
                table_key=table_key,
            )
        )
    return specs


def ladder_specs(
    key: MasterKey, number: int, seating: Sequence[str], hands: int | None, target: int | None
) -> list[GameSpec]:
    """Ladder table ``number``'s four games: deal ``L<number>``, ids ``l<number>-k<k>``."""
    return table_specs(key, f"L{number}", "l", number, seating, hands, target)


def validation_specs(
    key: MasterKey, number: int, submission_id: int, seating: Sequence[str]
) -> list[GameSpec]:
    """A validation table's four games of one hand: deal ``V<submission>``,
    ids ``v<number>-k<k>``."""
    return table_specs(key, f"V{submission_id}", "v", number, seating, 1, None)


def _trueskill(r: Rating, env: trueskill.TrueSkill) -> trueskill.Rating:
    return env.create_rating(mu=r.mu, sigma=r.sigma)


def fold_tables(
    fold: Mapping[str, Rating], tables: Iterable[Sequence[GameRecordJSON]]
) -> dict[str, Rating]:
    """The fold after ``tables`` (each a finished table's four records, by
    rotation; the caller leaves void tables out), applied in order to ``fold``
    (entrant -> rating; an entrant not in it starts at the prior). Every
    entrant of ``fold`` stays in the result."""
    env = environment()
    current = {n: _trueskill(r, env) for n, r in fold.items()}
    games = {n: r.games for n, r in fold.items()}
    for records in tables:
        for rec in records:
            seats = list(rec["seats"])
            for n in seats:
                if n not in current:
                    current[n] = env.create_rating()
                    games[n] = 0
            groups = [(current[n],) for n in seats]
            rated = env.rate(groups, ranks=[r - 1 for r in rec["ranks"]])
            for n, (rating,) in zip(seats, rated, strict=True):
                current[n] = rating
                games[n] += 1
    return {n: Rating(float(r.mu), float(r.sigma), games[n]) for n, r in current.items()}


def faulted_seats(record: GameRecordJSON) -> set[int]:
    """Seats that crashed or were struck out in a game."""
    seats = {f.seat for f in faults_of(record) if f.reason == FaultKind.CRASHED}
    return seats | set(record["struck_out"])


def fault_runs(runs: Mapping[str, int], records: Iterable[GameRecordJSON]) -> dict[str, int]:
    """Each entrant's games in a row ending in a crash or a strike-out, after
    ``records`` (in order); a clean game resets it to 0."""
    out = dict(runs)
    for rec in records:
        bad = faulted_seats(rec)
        for seat, name in enumerate(rec["seats"]):
            out[name] = out.get(name, 0) + 1 if seat in bad else 0
    return out


def can_choose(table: int, lag: int, rated_through: int) -> bool:
    """Whether ladder table ``table`` can be chosen: the fold it is chosen
    from (:func:`fold_point`) is reached."""
    return fold_point(table, lag) <= rated_through


def fold_reach(statuses: Sequence[str], rated_through: int) -> int:
    """How far the fold can go: the first ladder table at or after
    ``rated_through`` that is neither ``done`` nor ``void`` (``statuses[i]``
    is table i's), or ``len(statuses)``."""
    t = rated_through
    while t < len(statuses) and statuses[t] in ("done", "void"):
        t += 1
    return t
