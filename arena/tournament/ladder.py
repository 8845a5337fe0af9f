"""The ladder format: tables chosen from the current ratings, for fields too
large for a round-robin (200 entrants make 64,684,950 tables of four).

How a ladder table is chosen (:func:`choose_tables`), as hosted bot ladders
do it:

* the *focus* is the entrant most in need of games: fewest games scheduled,
  then highest ``sigma`` (the TrueSkill uncertainty), then a random
  tie-break drawn once per batch;
* its three opponents are drawn uniformly from the ``w`` other entrants
  nearest to it in ``mu`` (ties broken by the same random keys), where the
  window ``w`` is drawn uniformly from ``3 .. max(3, window)`` for every
  table, so that most games are between near equals (the games TrueSkill
  learns most from) and some reach further;
* the four are seated in random order: rotation ``k`` seats the table's
  entrant ``i`` at seat ``(i + k) % 4``, as in the round-robin.

A ladder table is one deal played in its four seat rotations, so four games
(``GAMES_PER_TABLE``) with the same ``deal_key`` (``"L{t}"`` for
table ``t``, never shared with another table; the cards come from the
tournament's master key, :mod:`arena.core.keys`), so each entrant holds each
seat's cards once (duplicate deals) and no process plays two games dealt
from the same cards. Table ``t``'s rotation ``k`` is game ``4 t + k``, with
id ``"l{t}-k{k}"``; its ``round`` is the 1-based batch number.

Determinism: tables are chosen in batches of ``settings.ladder_batch``
tables (a setting of the tournament, not of the machine: never tied to
``--jobs`` or the cluster's size), from the ratings at the start of the
batch, with a generator seeded from the master key's ``"ladder"`` subkey and
the batch number. A batch is
played whole, its results are applied in schedule order (``game_index``),
then the next batch is chosen. So the same seed and entrants give the same
tables and games whatever the parallelism, and a resumed ladder replays its
choices from the recorded games (:func:`play_ladder`).

The ladder stops after ``settings.games`` games (rounded down to whole
tables) or, checked between batches, as soon as every entrant's ``sigma``
is below ``settings.sigma_target``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Final

from arena.core.rules import ladder_deal_key
from arena.game.referee import GameSpec
from arena.protocol import records
from arena.protocol.records import GameRecordJSON
from arena.results.rating import RatingTable
from arena.tournament.runner import TournamentSettings

#: Games of one ladder table: its deal in the four seat rotations.
GAMES_PER_TABLE: Final = 4
#: Default tables per batch (``--ladder-batch``): the default of
#: :attr:`TournamentSettings.ladder_batch`, its one home.
DEFAULT_BATCH_TABLES: Final[int] = TournamentSettings().ladder_batch
#: Smallest opponent window: the three nearest entrants in ``mu``.
MIN_WINDOW: Final = 3

#: Called with each finished game's JSON record.
RecordSink = records.RecordSink
#: Plays a list of games, handing each record to the sink; returns when all are done.
PlayGames = Callable[[Sequence[GameSpec], RecordSink], None]
#: The same, awaited (an executor's :meth:`arena.tournament.work.Executor.play`).
AsyncPlayGames = Callable[[Sequence[GameSpec], RecordSink], Awaitable[None]]


def default_window(entrants: int) -> int:
    """The largest opponent window for a field of ``entrants``: an eighth of
    the field, at least :data:`MIN_WINDOW` (4 of 32 entrants, 25 of 200).

    Narrow windows ranked best in ``benchmarks/ladder_vs_roundrobin.py`` (32
    entrants, one hand per game, two seeds): windows of up to 3 or 4 reached
    a Kendall tau at 2048 games at least as high as windows of up to 6
    (0.92 to 0.95 against 0.91), and clearly higher than random tables (a
    window of 31, the round-robin's mix: 0.885)."""
    return max(MIN_WINDOW, entrants // 8)


def ladder_tables(settings: TournamentSettings) -> int:
    """Most tables the ladder of ``settings`` plays: ``games // 4``."""
    if settings.games is None:
        raise ValueError("a ladder needs a game budget (games)")
    return settings.games // GAMES_PER_TABLE


def ladder_budget(settings: TournamentSettings) -> int:
    """Most games the ladder plays: the budget rounded down to whole tables."""
    return ladder_tables(settings) * GAMES_PER_TABLE


def choose_tables(
    ratings: Mapping[str, tuple[float, float]],
    games: Mapping[str, int],
    count: int,
    rng: random.Random,
    window: int | None = None,
) -> list[tuple[str, str, str, str]]:
    """Choose ``count`` tables from one snapshot of the ratings (see the
    module docstring for the rule). Pure: the same arguments and generator
    state give the same tables, whatever the order of the mappings.

    Args:
        ratings: entrant -> ``(mu, sigma)``.
        games: entrant -> games scheduled so far (missing: 0). Games chosen
            earlier in this batch count too (4 per table), so one batch
            spreads over the field.
        count: tables to choose.
        rng: the batch's generator.
        window: largest opponent window (default :func:`default_window`).

    Returns:
        Tables in order, each the four entrants in seating order (rotation
        0 seats entrant ``i`` at seat ``i``).

    Raises:
        ValueError: fewer than four entrants.
    """
    names = sorted(ratings)
    if len(names) < 4:
        raise ValueError(f"a ladder needs at least four entrants, got {len(names)}")
    if window is None:
        window = default_window(len(names))
    wmax = min(len(names) - 1, max(MIN_WINDOW, window))
    tie = {n: rng.random() for n in names}
    planned = {n: games.get(n, 0) for n in names}
    tables: list[tuple[str, str, str, str]] = []
    for _ in range(count):
        focus = min(names, key=lambda n: (planned[n], -ratings[n][1], tie[n]))
        mu = ratings[focus][0]
        near = {n: rng.random() for n in names}  # fresh ties per table: equal mu at the start
        others = sorted(
            (n for n in names if n != focus), key=lambda n: (abs(ratings[n][0] - mu), near[n])
        )
        width = rng.randint(MIN_WINDOW, wmax)
        seats = [focus, *rng.sample(others[:width], 3)]
        rng.shuffle(seats)
        for n in seats:
            planned[n] += GAMES_PER_TABLE
        tables.append((seats[0], seats[1], seats[2], seats[3]))
    return tables


def table_games(
    table: int, batch: int, seating: Sequence[str], settings: TournamentSettings
) -> list[GameSpec]:
    """The four games of ladder table ``table`` (0-based), chosen in batch
    ``batch`` (0-based): rotation ``k`` seats ``seating[i]`` at seat
    ``(i + k) % 4``; all four play the deals named ``deal_key = f"L{table}"``
    (dealt under that name's table key, :mod:`arena.core.keys`)."""
    games = []
    key = settings.master_key
    deal_key = ladder_deal_key(table)
    table_key = key.table_key(deal_key)
    for k in range(GAMES_PER_TABLE):
        seats = ["", "", "", ""]
        for i, name in enumerate(seating):
            seats[(i + k) % 4] = name
        index = table * GAMES_PER_TABLE + k
        games.append(
            GameSpec(
                game_index=index,
                game_id=f"l{table}-k{k}",
                round=batch + 1,
                table=table,
                rotation=k,
                seats=(seats[0], seats[1], seats[2], seats[3]),
                deal_key=deal_key,
                bot_seeds=key.bot_seeds(f"l{table}-k{k}"),
                target_score=settings.target_score,
                hands=settings.hands,
                table_key=table_key,
            )
        )
    return games


class LadderPlanner:
    """The ladder's state between batches: ratings, games per entrant and the
    games scheduled so far. :meth:`next_batch` chooses, :meth:`apply` rates.

    Args:
        names: every entrant.
        settings: a ladder's settings (``format == "ladder"``).
        window: largest opponent window (default :func:`default_window`).
    """

    def __init__(
        self, names: Sequence[str], settings: TournamentSettings, window: int | None = None
    ) -> None:
        if settings.format != "ladder":
            raise ValueError(f"not a ladder: format {settings.format!r}")
        if len(set(names)) != len(names):
            raise ValueError("entrant names must be unique")
        if len(names) < 4:
            raise ValueError(f"a tournament needs at least four entrants, got {len(names)}")
        self.names = sorted(names)
        self.settings = settings
        self.window = window
        self.table = RatingTable(self.names)
        self.games: dict[str, int] = dict.fromkeys(self.names, 0)
        # Each table's seating and batch: the games are remade from them on
        # demand (:attr:`scheduled`), so a long ladder keeps ~100 bytes a table.
        self._tables: list[tuple[tuple[str, str, str, str], int]] = []
        self.batches = 0
        self.stop_reason: str | None = None
        self._pending: list[GameSpec] = []

    @property
    def tables(self) -> int:
        """Tables scheduled so far."""
        return len(self._tables)

    @property
    def games_scheduled(self) -> int:
        """Games scheduled so far (4 per table)."""
        return len(self._tables) * GAMES_PER_TABLE

    @property
    def scheduled(self) -> list[GameSpec]:
        """Every game scheduled so far, in schedule order, remade from the
        tables' seatings (a list of ``4 * tables`` games, built on each call)."""
        return [
            g
            for t, (seating, batch) in enumerate(self._tables)
            for g in table_games(t, batch, seating, self.settings)
        ]

    def sigma_reached(self) -> bool:
        """Whether every entrant's ``sigma`` is below ``settings.sigma_target``."""
        target = self.settings.sigma_target
        return target is not None and all(r.sigma < target for r in self.table.ratings.values())

    def next_batch(self) -> list[GameSpec]:
        """The games of the next batch, in schedule order; ``[]`` when the
        ladder is over (then :attr:`stop_reason` is ``"games"`` or ``"sigma"``).

        Raises:
            RuntimeError: the previous batch has not been applied.
        """
        if self._pending:
            raise RuntimeError("apply the results of the previous batch first")
        left = ladder_tables(self.settings) - self.tables
        if left <= 0:
            self.stop_reason = "games"
            return []
        if self.sigma_reached():
            self.stop_reason = "sigma"
            return []
        count = min(self.settings.ladder_batch, left)
        rng = random.Random(self.settings.master_key.draw_seed("ladder", str(self.batches)))
        snapshot = {n: (r.mu, r.sigma) for n, r in self.table.ratings.items()}
        chosen = choose_tables(snapshot, self.games, count, rng, self.window)
        first = self.tables
        batch: list[GameSpec] = []
        for i, seating in enumerate(chosen):
            batch.extend(table_games(first + i, self.batches, seating, self.settings))
            self._tables.append((seating, self.batches))
        for g in batch:
            for name in g.seats:
                self.games[name] += 1
        self.batches += 1
        self._pending = batch
        return batch

    def apply(self, records: Mapping[int, GameRecordJSON]) -> None:
        """Rate the pending batch from its records (by ``game_index``; only
        ``seats`` and ``ranks`` are read), in schedule order.

        Raises:
            KeyError: a game of the batch has no record.
            ValueError: a record seats other entrants than the ladder chose
                (a journal from another ladder).
        """
        for g in self._pending:
            rec = records[g.game_index]
            if list(rec["seats"]) != list(g.seats):
                raise ValueError(
                    f"game {g.game_index} ({g.game_id}) was recorded with seats "
                    f"{list(rec['seats'])}, the ladder chose {list(g.seats)}"
                )
        for g in self._pending:
            self.table.apply(g.game_index, g.seats, records[g.game_index]["ranks"])
        self._pending = []


def play_ladder(
    names: Sequence[str],
    settings: TournamentSettings,
    play: PlayGames,
    on_record: RecordSink,
    recorded: Iterable[GameRecordJSON] = (),
    window: int | None = None,
    on_batch: Callable[[LadderPlanner], None] | None = None,
) -> LadderPlanner:
    """Run a ladder to its end: choose a batch, play the games of it not yet
    recorded, apply its results in schedule order, repeat.

    Args:
        names: every entrant.
        settings: the ladder's settings.
        play: plays a list of games, calling its sink once per record (any
            order; an executor such as
            :meth:`arena.tournament.executors.LocalExecutor.play`).
        on_record: receives each *new* record (the journal hangs here), once
            per ``game_index`` even if ``play`` hands one over twice.
        recorded: records of an earlier, interrupted run of the same ladder
            (``--resume``): their games are not played again.
        window: largest opponent window (default :func:`default_window`).
        on_batch: called after each batch is applied (benchmarks read the
            ratings here).

    Returns:
        The planner: ``scheduled`` holds every game the ladder chose, in
        schedule order, ``stop_reason`` why it stopped.

    Raises:
        ValueError: ``recorded`` does not match the ladder's choices.
        RuntimeError: ``play`` returned without a record for a game.
    """
    loop = _LadderLoop(names, settings, on_record, recorded, window, on_batch)
    while todo := loop.next():
        play(todo, loop.sink)
    return loop.end()


async def play_ladder_async(
    names: Sequence[str],
    settings: TournamentSettings,
    play: AsyncPlayGames,
    on_record: RecordSink,
    recorded: Iterable[GameRecordJSON] = (),
    window: int | None = None,
    on_batch: Callable[[LadderPlanner], None] | None = None,
) -> LadderPlanner:
    """:func:`play_ladder` with an awaited ``play`` (an executor's
    :meth:`~arena.tournament.work.Executor.play`), in the caller's Trio loop;
    the same arguments, result and errors. A cancellation stops it between
    or inside batches (the executor records what finished)."""
    loop = _LadderLoop(names, settings, on_record, recorded, window, on_batch)
    while todo := loop.next():
        await play(todo, loop.sink)
    return loop.end()


class _LadderLoop:
    """The steps of :func:`play_ladder`: the batches' games not yet recorded
    (:meth:`next`, after applying the last batch), the sink that keeps each
    game once, and the final checks (:meth:`end`)."""

    def __init__(
        self,
        names: Sequence[str],
        settings: TournamentSettings,
        on_record: RecordSink,
        recorded: Iterable[GameRecordJSON],
        window: int | None,
        on_batch: Callable[[LadderPlanner], None] | None = None,
    ) -> None:
        # Records by game_index: every record (the run keeps them for its report anyway).
        self.results: dict[int, GameRecordJSON] = {int(r["game_index"]): r for r in recorded}
        self.planner = LadderPlanner(names, settings, window)
        self.on_record = on_record
        self.on_batch = on_batch
        self._batch: list[GameSpec] | None = None

    def sink(self, record: GameRecordJSON) -> None:
        index = int(record["game_index"])
        if index in self.results:
            return
        self.results[index] = record
        self.on_record(record)

    def _apply(self) -> None:
        batch = self._batch
        if batch is None:
            return
        self._batch = None
        missing = [g.game_index for g in batch if g.game_index not in self.results]
        if missing:
            raise RuntimeError(f"no record of ladder games {missing[:5]}")
        self.planner.apply(self.results)
        if self.on_batch is not None:
            self.on_batch(self.planner)

    def next(self) -> list[GameSpec]:
        """The games of the next batch to play (its recorded games left
        out; batches recorded whole are applied without playing); ``[]``
        when the ladder is over."""
        self._apply()
        while batch := self.planner.next_batch():
            self._batch = batch
            todo = [g for g in batch if g.game_index not in self.results]
            if todo:
                return todo
            self._apply()
        return []

    def end(self) -> LadderPlanner:
        extra = sorted(i for i in self.results if not 0 <= i < self.planner.games_scheduled)
        if extra:
            raise ValueError(f"recorded games {extra[:5]} are not in this ladder")
        return self.planner


def describe_plan(entrants: int, settings: TournamentSettings) -> list[str]:
    """Lines for ``--dry-run``: what the ladder will play at most."""
    tables = ladder_tables(settings)
    lines = [
        f"{entrants} entrants, ladder: up to {tables} tables x 4 rotations "
        f"= {tables * GAMES_PER_TABLE} games, chosen {settings.ladder_batch} tables at a time "
        f"from the ratings (opponent window up to {default_window(entrants)} nearest in mu)"
    ]
    if settings.sigma_target is not None:
        lines.append(f"stops early once every sigma is below {settings.sigma_target:g}")
    return lines
