"""Tournaments: the schedule (pure) and the runner that plays it (Trio).

Fairness of the round-robin schedule (:func:`schedule_round_robin`):

* every group of four entrants (a *table*) plays, each round, in four seat
  rotations: rotation ``k`` seats the table's entrant ``i`` (names sorted) at
  seat ``(i + k) % 4``;
* with ``seating="full"`` a table plays all 24 seatings instead: seating
  ``k`` (0..23, the ``rotation`` field) seats entrant ``i`` at seat
  ``SEAT_PERMUTATIONS[k][i]``, so each entrant also meets every order of its
  three neighbours (the pass goes left, right and across, R3), and holds each
  seat's cards six times per round;
* the rotations (or seatings) of table ``t`` in round ``r`` play the same
  deals, named by the deal key ``"r{r}-t{t}"``; hand ``h`` is dealt under the
  table key derived from the tournament's master key and that name
  (:mod:`arena.core.keys`, R2), so over the four rotations each entrant holds each
  seat's cards once per round (duplicate deals), and a game's deals and bot
  seeds depend only on its identity (round, table, rotation), never on its
  position in a schedule: a gauntlet's ``r1-t3-k2`` is the round-robin's.

The runner plays *chains*: the games of one table and rotation across the
rounds, in diagonal order over the tables (:func:`diagonal`: the chains in
play at once are of different tables); ``--jobs`` chains run at once, each with one game in
flight. Chain ``k`` of a table starts at round ``1 + k mod R`` and goes round
the rounds from there. A chain keeps its four bot processes from game to game
(their deals differ from round to round) only while no other chain needs a
deal they have seen: it holds every such deal (:class:`DealLocks`) until it
closes them, and closes them after a game as soon as another chain waits for
one. So **no process of an entrant that has seen a deal is alive while
another of its processes holds cards of that deal** (with ``--jobs 1``
processes are kept along a whole chain; with more jobs, mostly in fields of
several tables). Between an entrant's games of one deal the page cache of
what sealed bots can read is made to forget (:mod:`arena.sandbox.forget`): a
process plays a deal only if it started after a forget that followed the
deal's last holders. Processes are also replaced after a crash or a failed
handshake, and for every game with ``--fresh-processes``. Which rotation of
a table is taken first (second, ...) is drawn from the table's deals
(:func:`play_order`), so an entrant's first game of a deal is not always in
the same seat. Results are recorded as each game ends and rated later in schedule order, so the
standings do not depend on ``--jobs`` or on which processes were reused.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import trio

from arena.core.rules import round_robin_deal_key
from arena.game.referee import (
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
)
from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import FORMAT_VERSION as FORMAT_VERSION  # (moved; re-exported)
from arena.protocol.records import GameRecordJSON, read_record
from arena.sandbox.entrants import Entrant
from arena.sandbox.forget import drop_kernel_caches
from arena.sandbox.forget import forget as forget_pages
from arena.sandbox.launcher import Launcher
from arena.seats.handshake import handshake
from arena.seats.process import BotProcess, close_all
from arena.seats.seat import Seat

# The settings (no Trio: the command line's --help reads their defaults)
# live in arena.tournament.settings; named here too.
from arena.tournament.settings import FORMATS as FORMATS
from arena.tournament.settings import MAX_SCHEDULED_GAMES as MAX_SCHEDULED_GAMES
from arena.tournament.settings import RESUMABLE_DIFFERENCES as RESUMABLE_DIFFERENCES
from arena.tournament.settings import SEATINGS as SEATINGS
from arena.tournament.settings import TournamentSettings as TournamentSettings

if TYPE_CHECKING:
    from arena.game.feed import LiveFeed


#: The 24 seatings of ``--seating full``: entrant ``i`` of a table sits at
#: seat ``SEAT_PERMUTATIONS[k][i]`` (lexicographic order; ``k = 0`` is rotation 0).
SEAT_PERMUTATIONS: Final = tuple(itertools.permutations(range(4)))


def tables_of(names: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """Every group of four entrants, each group and the list in sorted order.
    Builds the whole list (``C(n, 4)`` tuples): :func:`iter_tables` walks it lazily."""
    return list(iter_tables(names))


def iter_tables(names: Sequence[str]) -> Iterator[tuple[str, str, str, str]]:
    """The groups of :func:`tables_of`, in the same order, one at a time."""
    groups = itertools.combinations(sorted(names), 4)
    return cast("Iterator[tuple[str, str, str, str]]", groups)


def schedule_round_robin(names: Sequence[str], settings: TournamentSettings) -> list[GameSpec]:
    """The games of a round-robin, in schedule order (round, table, rotation).

    With ``settings.seating == "full"`` each table plays the 24 seatings of
    :data:`SEAT_PERMUTATIONS` per round (``rotation`` 0..23, game ids
    ``r{round}-t{table}-p{k}``) instead of the 4 rotations.

    Pure: the same names and settings always give the same list. See the
    module docstring for its fairness properties. Builds every game: for a
    large field walk :class:`ScheduleStream` instead (the same games).

    Raises:
        ValueError: fewer than four entrants, or duplicate names.
    """
    return list(_stream(names, settings, None))


def schedule_gauntlet(
    names: Sequence[str], settings: TournamentSettings, candidate: str | None = None
) -> list[GameSpec]:
    """The games of a gauntlet: only the round-robin's tables that include
    ``candidate`` (default ``settings.candidate``), with the same deals, seat
    rotations (or 24 seatings) and seeds per game as
    :func:`schedule_round_robin`. Tables keep their round-robin numbers
    (``table`` and the game id), so ``r1-t3-k2`` names the same table in
    both formats; ``game_index`` counts the gauntlet's games from 0.

    Raises:
        ValueError: fewer than four entrants, duplicate names, no candidate,
            or a candidate that is not an entrant.
    """
    candidate = candidate if candidate is not None else settings.candidate
    if candidate is None:
        raise ValueError("a gauntlet needs a candidate")
    if candidate not in names:
        raise ValueError(f"the candidate {candidate!r} is not an entrant")
    return list(_stream(names, settings, candidate))


def scheduled_games(entrants: int, settings: TournamentSettings) -> int:
    """How many games :func:`schedule` would make, without making them:
    tables (every group of four, or only the candidate's) × seatings per
    table (4 rotations or 24) × rounds."""
    return _groups(entrants, settings) * _seatings_count(settings) * settings.rounds


def _groups(entrants: int, settings: TournamentSettings) -> int:
    """Tables per round: ``C(n, 4)``, or ``C(n - 1, 3)`` for a gauntlet."""
    if settings.format == "gauntlet":
        return math.comb(entrants - 1, 3)
    return math.comb(entrants, 4)


def _seatings_count(settings: TournamentSettings) -> int:
    return 24 if settings.seating == "full" else 4


def schedule(names: Sequence[str], settings: TournamentSettings) -> list[GameSpec]:
    """The games of ``settings.format``: :func:`schedule_round_robin` or
    :func:`schedule_gauntlet`. A ladder's games are chosen as it runs
    (:func:`arena.tournament.ladder.play_ladder`): it has no schedule up front.

    Raises:
        ValueError: see those functions; ``settings.format`` is ``"ladder"``.
    """
    if settings.format == "ladder":
        raise ValueError(
            "a ladder's games are chosen as it runs (arena.tournament.ladder.play_ladder)"
        )
    if settings.format == "gauntlet":
        return schedule_gauntlet(names, settings)
    return schedule_round_robin(names, settings)


def _check_names(names: Sequence[str], candidate: str | None) -> None:
    if len(set(names)) != len(names):
        raise ValueError("entrant names must be unique")
    if len(names) < 4:
        raise ValueError(f"a tournament needs at least four entrants, got {len(names)}")
    if candidate is not None and candidate not in names:
        raise ValueError(f"the candidate {candidate!r} is not an entrant")


def _seatings(settings: TournamentSettings) -> tuple[Sequence[Sequence[int]], str]:
    """The seatings of a table per round and the letter of their game ids."""
    if settings.seating == "full":
        return SEAT_PERMUTATIONS, "p"
    return tuple(tuple((i + k) % 4 for i in range(4)) for k in range(4)), "k"


class _Maker:
    """Makes the games of one schedule from their identity (round, table,
    seating) and their position (``game_index``)."""

    def __init__(self, settings: TournamentSettings) -> None:
        self.settings = settings
        self.key = settings.master_key
        self.seatings, self.tag = _seatings(settings)
        self._table_keys: dict[str, bytes] = {}

    def table_key(self, deal_key: str) -> bytes:
        # A chain asks for the same deal key only once, a round-robin walk
        # four or 24 times in a row: keep the last few only.
        found = self._table_keys.get(deal_key)
        if found is None:
            if len(self._table_keys) > 64:
                self._table_keys.clear()
            found = self._table_keys[deal_key] = self.key.table_key(deal_key)
        return found

    def game(
        self, index: int, rnd: int, t: int, k: int, table: tuple[str, str, str, str]
    ) -> GameSpec:
        deal_key = round_robin_deal_key(rnd, t)
        game_id = f"r{rnd}-t{t}-{self.tag}{k}"
        seats = ["", "", "", ""]
        for i, name in enumerate(table):
            seats[self.seatings[k][i]] = name
        return GameSpec(
            game_index=index,
            game_id=game_id,
            round=rnd,
            table=t,
            rotation=k,
            seats=(seats[0], seats[1], seats[2], seats[3]),
            deal_key=deal_key,
            bot_seeds=self.key.bot_seeds(game_id),
            target_score=self.settings.target_score,
            hands=self.settings.hands,
            table_key=self.table_key(deal_key),
        )


def _candidate_tables(
    names: Sequence[str], candidate: str | None
) -> Iterator[tuple[int, int, tuple[str, str, str, str]]]:
    """``(t, j, table)``: the round-robin number ``t`` of each table played
    (all, or the candidate's) and its position ``j`` among those played."""
    j = 0
    for t, table in enumerate(iter_tables(names)):
        if candidate is not None and candidate not in table:
            continue
        yield t, j, table
        j += 1


def _stream(
    names: Sequence[str], settings: TournamentSettings, candidate: str | None
) -> Iterator[GameSpec]:
    """Every game of a round-robin (``candidate`` ``None``) or gauntlet, in
    schedule order, made one at a time. Raises as :func:`schedule_round_robin`
    does, at the first ``next``."""
    _check_names(names, candidate)
    maker = _Maker(settings)
    index = 0
    for rnd in range(1, settings.rounds + 1):
        for t, _, table in _candidate_tables(names, candidate):
            for k in range(len(maker.seatings)):
                yield maker.game(index, rnd, t, k, table)
                index += 1


class ScheduleStream:
    """The games of a round-robin or gauntlet (``settings.format``), walked
    lazily: the same games in the same order as :func:`schedule`, but none
    is kept, so memory does not grow with the schedule. Iterable more than
    once; ``len()`` is computed, not counted.

    Args:
        names: the entrants.
        settings: a round-robin's or gauntlet's settings.
        skip: ``game_index`` values left out (games already played, on
            ``--resume``); indices outside the schedule are ignored.

    Raises:
        ValueError: a ladder (it has no schedule), duplicate names, fewer than
            four entrants, or a gauntlet's candidate that is not an entrant.
    """

    def __init__(
        self, names: Sequence[str], settings: TournamentSettings, skip: Iterable[int] = ()
    ) -> None:
        if settings.format == "ladder":
            raise ValueError(
                "a ladder's games are chosen as it runs (arena.tournament.ladder.play_ladder)"
            )
        self.names = list(names)
        self.settings = settings
        self.candidate = settings.candidate if settings.format == "gauntlet" else None
        _check_names(self.names, self.candidate)
        self.total = scheduled_games(len(self.names), settings)
        self.skip = frozenset(i for i in skip if 0 <= i < self.total)

    def __len__(self) -> int:
        """Games in the stream (the schedule's, less those skipped)."""
        return self.total - len(self.skip)

    def __iter__(self) -> Iterator[GameSpec]:
        """The games in schedule order (``game_index`` increasing)."""
        for game in _stream(self.names, self.settings, self.candidate):
            if game.game_index not in self.skip:
                yield game

    def chains(self) -> Iterator[list[GameSpec]]:
        """The chains of :func:`chains_of` over this stream's games, made one
        at a time, in :func:`diagonal` order: at step ``s`` the ``n``-th table
        plays its chain ranked ``s - n`` by :func:`play_order` (ranked from
        each chain's lowest-round game). Only the tables of the current steps
        are held (at most one per seating), so a huge field's chains are made
        as they are asked for. For a whole schedule they are exactly
        :func:`chains_of`'s, in the same order; with games skipped each chain
        is the same, but the order may differ (:func:`chains_of` orders them
        by their first game left)."""
        maker = _Maker(self.settings)
        seatings = len(maker.seatings)
        per_round = _groups(len(self.names), self.settings) * seatings
        rounds = range(1, self.settings.rounds + 1)

        def index(rnd: int, j: int, k: int) -> int:
            return (rnd - 1) * per_round + j * seatings + k

        def ranked(t: int, j: int, table: tuple[str, str, str, str]) -> list[int]:
            found = []
            for k in range(seatings):
                first = next((r for r in rounds if index(r, j, k) not in self.skip), None)
                if first is not None:
                    game = maker.game(index(first, j, k), first, t, k, table)
                    found.append((_chain_rank([game]), k))
            return [k for _, k in sorted(found)]

        tables = iter(_candidate_tables(self.names, self.candidate))
        Table = tuple[str, str, str, str]
        window: collections.deque[tuple[int, int, Table, list[int]]] = collections.deque()
        first_n = step = 0  # the number of the window's first table; the step
        more = True
        while True:
            if more:  # table `step` joins at its first step
                nxt = next(tables, None)
                if nxt is None:
                    more = False
                else:
                    t, j, table = nxt
                    window.append((t, j, table, ranked(t, j, table)))
            while window and first_n + seatings <= step:  # done after step n + seatings - 1
                window.popleft()
                first_n += 1
            if not window:
                return
            for n, (t, j, table, order) in enumerate(window, start=first_n):
                if step - n >= len(order):
                    continue
                k = order[step - n]
                chain = [
                    maker.game(index(rnd, j, k), rnd, t, k, table)
                    for rnd in rounds
                    if index(rnd, j, k) not in self.skip
                ]
                shift = k % len(chain)
                yield chain[shift:] + chain[:shift]
            step += 1


#: Games given to a runner: a list (any subset of a schedule) or a stream.
Games = Sequence[GameSpec] | ScheduleStream


def iter_chains(games: Games) -> Iterator[list[GameSpec]]:
    """The chains of ``games``: :meth:`ScheduleStream.chains` made as they are
    needed, or :func:`chains_of` of a list."""
    if isinstance(games, ScheduleStream):
        return games.chains()
    return iter(chains_of(games))


def chains_of(games: Iterable[GameSpec]) -> list[list[GameSpec]]:
    """Group games into chains that one set of processes can play in turn:
    same table and rotation (so the same entrant at each seat), different
    rounds. Each table's chains take their places in :func:`play_order`'s
    order, and the places of the tables are walked in :func:`diagonal` order,
    so that the chains in play at once are mostly of different tables
    (whose deals differ) and keep their processes (see
    :meth:`TournamentRunner.run_chain`). Chain ``k`` of a table is turned to
    start at its ``k mod n``-th game (of ``n``), so the rotations of a table
    start on different deals where there are rounds enough (see the module
    docstring). Only the order of play changes: each game keeps its
    identity, deals and seeds, and ratings are applied in schedule order."""
    chains: dict[tuple[int, int], list[GameSpec]] = {}
    for g in sorted(games, key=lambda g: g.game_index):
        chains.setdefault((g.table, g.rotation), []).append(g)
    ordered = sorted(chains.values(), key=lambda c: (c[0].rotation, c[0].game_index))
    turned = []
    for chain in ordered:
        shift = chain[0].rotation % len(chain)
        turned.append(chain[shift:] + chain[:shift])
    return diagonal(play_order(turned))


def diagonal(chains: list[list[GameSpec]]) -> list[list[GameSpec]]:
    """The chains in diagonal order: the chain at place ``p`` of the ``j``-th
    table (places as ``chains`` has them, tables by first appearance) comes at
    step ``j + p``, the tables of one step in order. So the chains in play at
    once are of different tables (they keep their processes, issue 22), and an
    entrant's first games of some deals come among its later games of others:
    order of play is not time, so the audit can tell a bot that remembers deals
    from one that improves (issue 23)."""
    tables: dict[int, int] = {}
    places: list[tuple[int, int]] = []
    seen: dict[int, int] = {}
    for chain in chains:
        table = chain[0].table
        j = tables.setdefault(table, len(tables))
        place = seen.get(table, 0)
        seen[table] = place + 1
        places.append((j + place, j))
    order = sorted(range(len(chains)), key=places.__getitem__)
    return [chains[i] for i in order]


def play_order(chains: list[list[GameSpec]]) -> list[list[GameSpec]]:
    """The chains in the order they are played: each table's chains keep the
    places its chains hold in ``chains``, but fill them in an order drawn from
    the table's deals (by ``SHA-256(table_key + rotation)`` of each chain's
    earliest game, the table key of its lowest round in a whole schedule), so
    that which rotation, hence which seat of each entrant, plays a table's
    deals first varies from table to table and cannot be told from the seats:
    the audit's memory-of-deals signal (:mod:`arena.tools.audit`) compares an
    entrant's first game of a deal with its later ones. Only the order of
    play changes: games, their ids and indices, deals and seeds do not, and
    ratings are applied in ``game_index`` order anyway."""
    places: dict[int, list[int]] = {}
    for i, chain in enumerate(chains):
        places.setdefault(chain[0].table, []).append(i)
    out = list(chains)
    for where in places.values():
        mine = [chains[i] for i in where]
        mine.sort(key=_chain_rank)
        for i, chain in zip(where, mine, strict=True):
            out[i] = chain
    return out


def _chain_rank(chain: list[GameSpec]) -> tuple[bytes, int]:
    first = min(chain, key=lambda g: g.round)
    digest = hashlib.sha256(first.table_key + first.rotation.to_bytes(2, "big")).digest()
    return digest, first.rotation


#: Stripes of the record of when each deal's holders were last closed
#: (:meth:`DealLocks.released_at`): deal keys are hashed onto them, and a stripe
#: keeps the latest of its deals, so the record stays small whatever the
#: schedule (a shared stripe only asks for a process more, never one less).
DIRTY_STRIPES: Final = 4096


def deal_stripe(deal_key: str, stripes: int) -> int:
    """The stripe (``0 .. stripes - 1``) of ``deal_key``: the first four bytes
    of its SHA-256, modulo ``stripes``."""
    digest = hashlib.sha256(deal_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % stripes


class DealLockSet(Protocol):
    """Custody of deals: which chain's processes may hold a deal's cards, and
    the forgets (:mod:`arena.sandbox.forget`) that separate them.

    A chain *takes* a deal before its game and keeps it while any process
    that played the game may be alive (across later games of the chain);
    it *releases* it once those processes are closed. Forgets are counted:
    ``started()`` of them have begun and ``finished()`` have ended. A release
    notes ``started()`` (:meth:`released_at`), and a process born when
    ``finished()`` was ``f`` may play a deal only if ``f`` is above it: a
    forget began after the deal's last holders were closed and ended before
    the process was started (:meth:`TournamentRunner.run_chain`).
    """

    def try_take(self, deal_key: str) -> bool:
        """Take ``deal_key`` if no one holds it; whether it was taken."""
        ...

    async def take(self, deal_key: str) -> None:
        """Wait until no one holds ``deal_key`` and take it (meanwhile
        :meth:`wanted` is true for it)."""
        ...

    def release(self, deal_key: str) -> None:
        """Give ``deal_key`` back: its holder's processes are closed."""
        ...

    def wanted(self, deal_key: str) -> bool:
        """Whether a chain waits for ``deal_key``."""
        ...

    def released_at(self, deal_key: str) -> int:
        """``started()`` when ``deal_key`` was last released (``-1``: never)."""
        ...

    def finished(self) -> int:
        """Forgets ended so far."""
        ...

    async def forget_after(self, mark: int, forget: Callable[[], object]) -> None:
        """Return once a forget that began after ``started()`` was ``mark``
        has ended (``finished() > mark``), running ``forget`` (blocking, in a
        thread) if none has; one forget at a time."""
        ...


class DealLocks:
    """Custody of deals (:class:`DealLockSet`) within this process: a Trio
    lock per deal key in play, and the forget counts.

    Holding a deal across a chain's games (not only for one game) is what
    keeps an entrant's process that has seen a deal from being alive while
    another of its processes holds the deal's cards (issue 22).
    :class:`arena.tournament.pool.SharedDealLocks` does the same across
    worker processes.
    """

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}
        self._waiting: dict[str, int] = {}
        self._released = [-1] * DIRTY_STRIPES
        self._started = 0
        self._finished = 0
        self._forgetting = trio.Lock()

    def try_take(self, deal_key: str) -> bool:
        """See :meth:`DealLockSet.try_take`."""
        lock = self._locks.setdefault(deal_key, trio.Lock())
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            return False
        return True

    async def take(self, deal_key: str) -> None:
        """See :meth:`DealLockSet.take`."""
        lock = self._locks.setdefault(deal_key, trio.Lock())
        self._waiting[deal_key] = self._waiting.get(deal_key, 0) + 1
        try:
            await lock.acquire()
        finally:
            left = self._waiting[deal_key] - 1
            if left:
                self._waiting[deal_key] = left
            else:
                del self._waiting[deal_key]

    def release(self, deal_key: str) -> None:
        """See :meth:`DealLockSet.release`."""
        stripe = deal_stripe(deal_key, DIRTY_STRIPES)
        self._released[stripe] = max(self._released[stripe], self._started)
        lock = self._locks[deal_key]
        lock.release()
        if not lock.locked() and lock.statistics().tasks_waiting == 0:
            self._locks.pop(deal_key, None)

    def wanted(self, deal_key: str) -> bool:
        """See :meth:`DealLockSet.wanted`."""
        return deal_key in self._waiting

    def released_at(self, deal_key: str) -> int:
        """See :meth:`DealLockSet.released_at`."""
        return self._released[deal_stripe(deal_key, DIRTY_STRIPES)]

    def finished(self) -> int:
        """See :meth:`DealLockSet.finished`."""
        return self._finished

    async def forget_after(self, mark: int, forget: Callable[[], object]) -> None:
        """See :meth:`DealLockSet.forget_after`."""
        async with self._forgetting:
            if self._finished > mark:
                return
            self._started += 1
            await trio.to_thread.run_sync(forget)
            self._finished = self._started


# -- the journal -------------------------------------------------------------


class Journal:
    """``games.jsonl``: one line per finished game, appended, flushed and
    synced to disk as each game ends, so a crash of the arena loses only the
    games in progress."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _drop_partial_line(path)
        self._fd = -1
        self._open()

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def append(self, record: GameRecordJSON) -> None:
        """Write one record as a line and make it durable.

        Raises:
            OSError: the line could not be written whole (a full disk): the
                file is cut back to its last complete line before raising.
        """
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        fd = self._fd
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
                os.fsync(fd)
            raise

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def close(self, records: Iterable[GameRecordJSON] = ()) -> None:
        """Close the file, first appending any of ``records`` whose game is
        not on disk: a Ctrl-C can land between a game's end and its line.
        What is on disk is read back (only its ``game_index`` values are
        kept, one line at a time), so no game is written twice.

        Raises:
            OSError: a missing line could not be written (the file keeps only
                complete lines).
        """
        self._close_fd()
        _drop_partial_line(self.path)
        on_disk = journal_indices(self.path)
        missing = [r for r in records if r["game_index"] not in on_disk]
        if missing:
            self._open()
            try:
                for record in missing:
                    self.append(record)
            finally:
                self._close_fd()


def journal_indices(path: Path) -> set[int]:
    """The ``game_index`` of every complete record line of a ``games.jsonl``,
    read one line at a time (the records themselves are not kept). Lines that
    are not JSON objects with an integer ``game_index`` are skipped.

    Raises:
        OSError: the file cannot be read.
    """
    found: set[int] = set()
    if not path.exists():
        return found
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # cut short by a kill: not on disk
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and type(rec.get("game_index")) is int:
                found.add(rec["game_index"])
    return found


def _drop_partial_line(path: Path) -> None:
    """Cut a last line left unfinished by a killed arena, so that appending
    starts on a line of its own (:func:`read_journal` ignores that line too)."""
    if not path.exists():
        return
    with path.open("rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        # Find the end of the last complete line.
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                f.truncate(pos - step + nl + 1)
                return
            pos -= step
        f.truncate(0)


def check_record(record: Any, names: Sequence[str] | None = None) -> None:
    """Check one game record against :data:`arena.protocol.records.RECORD_SCHEMA`
    and, given the tournament's entrant ``names``, that its seats and faults
    name them (:func:`arena.protocol.records.read_record`).

    Raises:
        ValueError: the first problem, naming the field.
    """
    read_record(record, names)


def read_journal(
    path: Path, names: Sequence[str] | None = None, *, checked: bool = True
) -> list[GameRecordJSON]:
    """The records of a ``games.jsonl``, typed; a truncated last line (from a killed
    arena) is ignored. A missing file gives no records. Each record is
    checked by :func:`check_record` (against ``names`` if given) unless
    ``checked`` is false (then only that it is an object with a ``game_index``).

    Raises:
        ValueError: a line other than the last is not JSON, or not a game
            record; the message names the file, the line and the field.
        OSError: the file cannot be read.
    """
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    records: list[GameRecordJSON] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            if i >= len(lines) - 2:  # the last line, cut short by a kill
                break
            raise ValueError(f"{path}: line {i + 1} is not JSON") from None
        try:
            if checked:
                records.append(read_record(rec, names))
            elif not isinstance(rec, dict) or "game_index" not in rec:
                raise ValueError("not an object with a game_index")
            else:
                records.append(cast(GameRecordJSON, rec))
        except ValueError as exc:
            raise ValueError(f"{path}: line {i + 1} is not a game record: {exc}") from None
    return records


# -- running ------------------------------------------------------------------


class SeatFactory(Protocol):
    """Where the runner's seats come from: bot processes
    (:class:`ProcessSeats`, the default) or, in tests, seats in memory.

    The runner keeps a chain's seats from game to game (see
    :meth:`TournamentRunner.run_chain`); the factory starts them, says
    whether a kept one can play again, and ends them.
    """

    async def start(
        self, entrant: Entrant, seat: int, nursery: trio.Nursery
    ) -> tuple[Seat | None, Fault | None]:
        """Start the seat of ``entrant`` at ``seat`` (0..3) for a game, its
        tasks in ``nursery`` (the chain's), and shake hands with it. A start
        cancelled half-way ends what it started before it raises.

        Returns:
            ``(seat, None)`` when it is ready; ``(None, fault)`` when it could
            not be started; ``(seat, fault)`` when it failed the handshake
            (the runner closes it and plays its seat by the default moves).
        """
        ...

    def reusable(self, seat: Seat) -> bool:
        """Whether a kept seat may play another game (alive and answering);
        the runner checks the deals it has seen itself."""
        ...

    async def close(self, seats: Sequence[Seat]) -> None:
        """End ``seats`` together (killed if they do not exit, and reaped).
        Shielded from cancellation: it returns once they are gone."""
        ...


class ProcessSeats:
    """Bot processes as seats (:class:`SeatFactory`): each started from its
    entrant's launch spec (:meth:`arena.sandbox.launcher.Launcher.spec`) and
    shaken hands with within ``referee.startup_time`` seconds (a program
    that cannot be started is a ``crashed`` fault of the handshake); closed with
    ``referee.grace`` seconds to exit after ``bye`` (:func:`close_all`: the
    uids of processes closed together are purged in one search).

    Args:
        launcher: makes the launch specs.
        referee: the referee's settings (startup time, grace).
    """

    def __init__(self, launcher: Launcher, referee: RefereeSettings) -> None:
        self.launcher = launcher
        self.referee = referee

    async def start(
        self, entrant: Entrant, seat: int, nursery: trio.Nursery
    ) -> tuple[Seat | None, Fault | None]:
        """See :meth:`SeatFactory.start`."""
        spec = self.launcher.spec(entrant)
        try:
            bot = await BotProcess.start(spec, nursery)
        except OSError as exc:
            detail = f"could not start {spec.argv[0]!r}: {exc.strerror or exc}"
            return None, Fault(
                seat, spec.label, FaultKind.CRASHED, detail, None, None, "hello", None
            )
        try:
            return bot, await handshake(bot, seat, self.referee.startup_time)
        except BaseException:  # cancelled during the handshake: the process is not lost
            await close_all([bot], self.referee.grace)
            raise

    def reusable(self, seat: Seat) -> bool:
        """See :meth:`SeatFactory.reusable`: the process is alive."""
        return seat.dead is None

    async def close(self, seats: Sequence[Seat]) -> None:
        """See :meth:`SeatFactory.close`."""
        if seats:
            await close_all(cast("Sequence[BotProcess]", seats), self.referee.grace)


@dataclass
class RunState:
    """What the runner has done so far (read by progress displays)."""

    total: int
    done: int = 0
    records: list[GameRecordJSON] = field(default_factory=list)


class TournamentRunner:
    """Plays a list of games with bot processes, ``settings.jobs`` at a time.

    Args:
        entrants: every entrant, by name.
        settings: the tournament settings.
        launcher: makes launch specs for bot processes, and names what sealed
            bots can read (the page cache's forgets, :meth:`forget`).
        on_record: called with each finished game's JSON record, in
            completion order (the journal and progress display hang here).
        deal_locks: what keeps two games of one deal key from being played at
            once (:class:`DealLocks` by default; worker processes share
            :class:`arena.tournament.pool.SharedDealLocks`; runners of one
            executor share one).
        live: the spectator's feed (``--live``, :class:`arena.game.feed.LiveFeed`)
            each game's referee tells its public events to, or ``None``.
        seats: where seats come from (:class:`SeatFactory`; default
            :class:`ProcessSeats` of ``launcher``).
        limiter: the games in flight at once, shared by runners of one
            executor; default a limiter of ``settings.jobs`` for each :meth:`run`.
    """

    def __init__(
        self,
        entrants: Sequence[Entrant],
        settings: TournamentSettings,
        launcher: Launcher,
        on_record: Callable[[GameRecordJSON], None],
        deal_locks: DealLockSet | None = None,
        live: LiveFeed | None = None,
        seats: SeatFactory | None = None,
        limiter: trio.CapacityLimiter | None = None,
    ) -> None:
        self.live = live
        self.entrants = {e.name: e for e in entrants}
        self.settings = settings
        self.launcher = launcher
        self.on_record = on_record
        self.deal_locks: DealLockSet = deal_locks if deal_locks is not None else DealLocks()
        self.seats: SeatFactory = (
            seats if seats is not None else ProcessSeats(launcher, settings.referee)
        )
        self.limiter = limiter

    async def run(self, games: Games) -> None:
        """Play ``games`` (any subset of a schedule, or a :class:`ScheduleStream`).
        Returns when all are done.

        ``settings.jobs`` tasks take chains in order (:func:`iter_chains`),
        one at a time, so a stream's chains are made only as they start and
        memory does not grow with the schedule; each plays its chain holding
        a token of the limiter (:attr:`limiter`, shared, or one of
        ``settings.jobs`` for this call).

        Cancellation (Ctrl-C, or the caller's cancel scope) stops the games
        in play and closes every seat (shielded) before propagating; games
        finished before it were already handed to ``on_record``.
        """
        chains = iter_chains(games)
        limiter = (
            self.limiter if self.limiter is not None else trio.CapacityLimiter(self.settings.jobs)
        )

        async def take() -> None:
            for chain in chains:  # shared: each chain goes to one task
                await self.run_chain(chain, limiter)

        async with trio.open_nursery() as outer:
            if self.live is not None:
                outer.start_soon(self.live.run)
            async with trio.open_nursery() as nursery:
                for _ in range(self.settings.jobs):
                    nursery.start_soon(take)
            outer.cancel_scope.cancel()

    async def run_chain(
        self,
        chain: list[GameSpec],
        limiter: trio.CapacityLimiter,
        on_record: Callable[[GameRecordJSON], None] | None = None,
    ) -> None:
        """Play one chain's games in turn, holding a ``limiter`` token
        meanwhile (one game in flight), with one set of seats as long
        as no other chain needs one of the deals they have seen; each
        record goes to ``on_record`` (default :attr:`on_record`).

        The chain takes each game's deal (:class:`DealLockSet`) before it and
        keeps every deal its processes have seen until it closes them: so no
        process of an entrant that has seen a deal is alive while another of
        its processes holds cards of that deal (issue 22). Its processes are
        closed, and its deals released, (1) after a game, when another chain
        waits for one of its deals; (2) before a game whose deal another
        chain holds (the chain then waits holding nothing, so chains never
        wait for each other in a circle); (3) after every game with
        ``--fresh-processes``; (4) at its end. A process is reused for a
        game only if the factory calls it reusable (alive), it has not played
        the deal, and was started after a forget of the page cache
        (:meth:`forget`) that followed the last release of the deal;
        otherwise it is replaced, after such a forget if none has happened yet.
        """
        sink = on_record if on_record is not None else self.on_record
        locks = self.deal_locks
        factory = self.seats
        procs: list[Seat | None] = [None, None, None, None]
        born = [0, 0, 0, 0]  # locks.finished() when each seat's process was started
        held: list[str] = []

        async def drop(dead: Sequence[Seat] = ()) -> None:
            alive = [*dead, *(b for b in procs if b is not None)]
            procs[:] = [None, None, None, None]
            try:
                if alive:  # together: their uids are purged in one search
                    await factory.close(alive)
            finally:
                for deal in held:
                    locks.release(deal)
                held.clear()

        async with limiter, trio.open_nursery() as host:
            # The seats' tasks run in a nursery shielded from the chain's
            # cancellation, so that a cancelled chain still closes its seats
            # in order (bye, grace, kill, reap); it is cancelled once they are closed.
            nursery, seat_scope, seats_done = await host.start(_seat_nursery)
            try:
                for game in chain:
                    if not locks.try_take(game.deal_key):
                        await drop()
                        await locks.take(game.deal_key)
                    held.append(game.deal_key)
                    setups = await self._seat_processes(game, procs, born, nursery)
                    events = self.live.sink(game) if self.live is not None else None
                    referee = Referee(game, setups, self.settings.referee, events)
                    record = await referee.play()
                    closing: list[Seat] = []
                    for seat in range(4):
                        bot = procs[seat]
                        if bot is None:
                            continue
                        bot.games_played.add(game.deal_key)
                        if not factory.reusable(bot):
                            procs[seat] = None
                            closing.append(bot)
                    if self.settings.fresh_processes or any(locks.wanted(d) for d in held):
                        await drop(closing)
                    elif closing:  # together: their uids are purged in one search
                        await factory.close(closing)
                    sink(record.to_json())
            except BaseException:
                await drop()
                seat_scope.cancel()
                raise
            else:
                await drop()
            finally:
                seats_done.set()

    def forget(self) -> None:
        """Make the page cache of what sealed bots can read forget what bots
        wrote in it (:func:`arena.sandbox.forget.forget` over
        :meth:`arena.sandbox.launcher.Launcher.readable_roots`; nothing when
        bots are not sealed), and with ``drop_kernel_caches`` the machine's
        dentries and inodes (:func:`arena.sandbox.forget.drop_kernel_caches`).
        Blocking: run in a thread.

        Raises:
            OSError: ``drop_kernel_caches`` and the arena is not root.
        """
        roots = self.launcher.readable_roots()
        if roots:
            forget_pages(roots)
            if self.settings.drop_kernel_caches:
                drop_kernel_caches()

    async def _seat_processes(
        self,
        game: GameSpec,
        procs: list[Seat | None],
        born: list[int],
        nursery: trio.Nursery,
    ) -> list[SeatSetup]:
        """Reuse each seat's process if it may play this game (see
        :meth:`run_chain`), else start (and shake hands with) a new one;
        the processes replaced are closed together first (their uids purged
        in one search), then the page cache is made to forget if the deal
        asks for it, then all starts of a game run concurrently."""
        setups: list[SeatSetup] = [SeatSetup(name, None) for name in game.seats]
        locks = self.deal_locks
        factory = self.seats
        mark = locks.released_at(game.deal_key)

        async def fresh(seat: int) -> None:
            entrant = self.entrants[game.seats[seat]]
            born[seat] = locks.finished()
            bot, fault = await factory.start(entrant, seat, nursery)
            if fault is not None:
                setups[seat].startup_fault = fault
                if bot is not None:
                    await factory.close([bot])
                    setups[seat].startup_stderr = bot.stderr.take()
                return
            procs[seat] = bot
            setups[seat].bot = bot

        starting: list[int] = []
        replaced: list[Seat] = []
        for seat in range(4):
            bot = procs[seat]
            if (
                bot is not None
                and factory.reusable(bot)
                and game.deal_key not in bot.games_played
                and born[seat] > mark
            ):
                setups[seat].bot = bot
            else:
                starting.append(seat)
                if bot is not None:
                    procs[seat] = None
                    replaced.append(bot)
        if replaced:  # closed together first: their uids are purged in one search
            await factory.close(replaced)
        if starting and locks.finished() <= mark:
            await locks.forget_after(mark, self.forget)
        async with trio.open_nursery() as starter:
            for seat in starting:
                starter.start_soon(fresh, seat)
        return setups


async def _seat_nursery(
    task_status: trio.TaskStatus[tuple[trio.Nursery, trio.CancelScope, trio.Event]],
) -> None:
    """A nursery for a chain's seats, shielded from outside cancellation:
    gives ``(nursery, its scope, an event)``; the nursery ends (its tasks
    finished) once the event is set, at once when its scope is cancelled."""
    with trio.CancelScope(shield=True) as scope:
        async with trio.open_nursery() as nursery:
            done = trio.Event()
            task_status.started((nursery, scope, done))
            await done.wait()


def settings_record(
    settings: TournamentSettings,
    entrants: list[dict[str, str]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``settings`` object stored in ``run.json`` and ``results.json``."""
    out = settings.to_json()
    out["entrants"] = entrants
    if extra:
        out.update(extra)
    return out


def settings_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Names of settings that differ between two settings records, ignoring
    those a resumed run may change (``jobs``)."""
    keys = (set(old) | set(new)) - RESUMABLE_DIFFERENCES
    return sorted(k for k in keys if old.get(k) != new.get(k))


def referee_settings_json(ref: RefereeSettings) -> dict[str, Any]:
    """The referee settings as plain data."""
    return asdict(ref)
