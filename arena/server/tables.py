"""How the server's runner plays one table (issue 29): its four games, in
order, somewhere, each record handed back to the runner's Trio loop.

The runner (:mod:`arena.server.runner`) decides *which* table is played and
what becomes of its records (the database, the fold, faults); this module
decides *where* and *how*:

* :func:`table_specs` and :func:`table_seats`: a stored table's four games
  (deal ``L<t>`` or ``V<submission>``, each with its table key and bot seeds
  from the competition's key) and the four seats' programs (a house bot, or a
  submission's stored folder with its SHA-256);
* :class:`TablePlayer`, the small interface the runner calls
  (``await player.play(...)``, ``await player.aclose()``), with two
  implementations:

  - :class:`InProcessTables` (the default): the games in the runner's own Trio
    loop through :func:`play_games` (the tournament layer's
    :class:`arena.tournament.runner.TournamentRunner`, with the runner's one
    launcher and deal locks);
  - :class:`arena.server.dask_tables.DaskTables` (``serve --executor dask``):
    one Dask task per table on a cluster of the organiser's machines.

Whichever plays it, the runner re-checks every record before storing it
(:mod:`arena.server.recheck`); a :class:`TableVoid` raised by :meth:`play`
makes the table void with its one-line reason, never charged to a bot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import trio
from sqlalchemy import Connection

from arena.core.keys import MasterKey
from arena.game.feed import LiveFeed
from arena.protocol.records import GameRecordJSON, GameSpec
from arena.sandbox.entrants import Entrant, EntrantError, parse_entrant
from arena.sandbox.isolation import IsolationError
from arena.sandbox.launcher import Launcher
from arena.server import classes, gate, ladder, store
from arena.server.folder import CompetitionPaths, CompetitionSettings, FolderError, submission_dir
from arena.tournament.runner import DealLocks, TournamentRunner, TournamentSettings

#: Dask priorities of a table's numbering (higher runs first): validation
#: (a new bot's first games soon), then ranked ladder tables, then
#: challenges (4 of 4: not built yet, its constant is kept here).
PRIORITY_VALIDATION: Final = 20
PRIORITY_LADDER: Final = 10
PRIORITY_CHALLENGE: Final = 0
PRIORITIES: Final = {
    "validation": PRIORITY_VALIDATION,
    "ladder": PRIORITY_LADDER,
    "challenge": PRIORITY_CHALLENGE,
}

#: Called with each finished game's record, in the runner's loop thread.
RecordSink = Callable[[GameRecordJSON], None]


@dataclass(frozen=True, slots=True)
class CheckRun:
    """A submission's ``check`` run elsewhere: its exit code (``None``: stopped
    at its time budget), its output (stdout and stderr, capped at four times
    :data:`arena.server.gate.OUTPUT_CAP` bytes), where it ran (a worker's
    address). :func:`arena.server.gate.judge_check` gives the verdict."""

    code: int | None
    output: str
    worker: str


class TableVoid(Exception):
    """A table could not be played for the server's reasons (a sandbox that
    did not start, a table lost with its worker too many times, a worker
    that is not fit); ``str(exc)`` is the void reason (one line)."""


@dataclass(frozen=True, slots=True)
class SeatSource:
    """One seat's program, as a table needs it.

    Attributes:
        name: the entrant label (``s<id>`` or ``house:<name>``).
        house: a house bot's entrant text (``sample:low``), or ``None``.
        kind: a submission's kind (``"py"`` or ``"zip"``; ``""`` for a house bot).
        sha256: a submission's SHA-256 (``""`` for a house bot).
        folder: a submission's stored folder on the server, or ``None``.
    """

    name: str
    house: str | None
    kind: str = ""
    sha256: str = ""
    folder: Path | None = None

    def entrant(self, folder: Path | None = None) -> Entrant:
        """The seat's entrant, its submission's files in ``folder`` (default:
        the server's stored folder).

        Raises:
            EntrantError: the program cannot be entered (one line).
        """
        if self.house is not None:
            return parse_entrant(f"{self.name}={self.house}")
        where = folder if folder is not None else self.folder
        assert where is not None
        return parse_entrant(gate.submission_entrant(self.name, self.kind, where))


def table_specs(
    key: MasterKey, settings: CompetitionSettings, table: store.TableRow
) -> list[GameSpec]:
    """The table's four games (rotation order), each with its table key and
    bot seeds derived from ``key``: a validation table's one hand under
    ``V<submission>``, a ladder table's under ``L<number>`` with the game settings,
    a class's tables (final, gauntlet, challenge, practice) by
    :func:`arena.server.classes.specs`."""
    if table.numbering in classes.NUMBERINGS:
        return classes.specs(key, settings, table)
    if table.numbering == "validation":
        assert table.submission_id is not None
        return ladder.validation_specs(key, table.number, table.submission_id, table.seating)
    g = settings.game
    return ladder.ladder_specs(key, table.number, table.seating, g.hands, g.target_score)


def table_seats(
    conn: Connection,
    paths: CompetitionPaths,
    settings: CompetitionSettings,
    table: store.TableRow,
) -> list[SeatSource]:
    """The four seats' programs of ``table``, in its seating's order.

    Raises:
        FolderError: a seat is neither a house bot nor a stored submission.
    """
    house = dict(zip(settings.house_labels, settings.ladder.house_bots, strict=True))
    house.update(classes.extra_entrants(settings))  # the gauntlet's reference bots
    out = []
    for name in table.seating:
        if name in house:
            out.append(SeatSource(name, house[name]))
            continue
        sid = store.submission_of(name)
        sub = store.submission(conn, sid) if sid is not None else None
        if sub is None:
            raise FolderError(f"table {table.number}: unknown entrant {name}")
        folder = submission_dir(paths, sub.sha256)
        out.append(SeatSource(name, None, sub.kind, sub.sha256, folder))
    return out


async def play_games(
    entrants: Sequence[Entrant],
    settings: TournamentSettings,
    launcher: Launcher,
    games: Sequence[GameSpec],
    deal_locks: DealLocks,
    on_record: RecordSink,
    live: LiveFeed | None = None,
) -> None:
    """Play ``games`` (one table's four) in this Trio loop and hand each record
    to ``on_record``: the in-process player's one seam to the tournament
    layer (:class:`arena.tournament.runner.TournamentRunner`). ``live``: the
    feed that sends each game's public table state to the web process (the
    live view's bounded queue, :mod:`arena.game.feed`). Cancellable: bot
    processes are closed before it returns."""
    runner = TournamentRunner(list(entrants), settings, launcher, on_record, deal_locks, live=live)
    await runner.run(list(games))


class TablePlayer(Protocol):
    """Where the runner's tables are played (see the module docstring)."""

    #: ``"in-process"`` or ``"dask"`` (the start-up line's ``executor``).
    kind: str

    async def prepare(self, seats: Sequence[SeatSource]) -> Any:
        """Make ready what the table's ``seats`` need (outside the table's
        time budget): here the launcher's check and private copies, on Dask
        each submission's archive sent to the cluster. Returns what
        :meth:`play` takes as ``prepared``.

        Raises:
            TableVoid: a seat cannot be started (one line).
        """
        ...

    async def play(
        self,
        table: store.TableRow,
        prepared: Any,
        specs: Sequence[GameSpec],
        settings: TournamentSettings,
        on_record: RecordSink,
    ) -> str | None:
        """Play ``specs`` (the table's four games, in order) with the seats
        :meth:`prepare` made ready and hand each record to ``on_record`` in the loop's thread.
        ``settings`` holds the key; a remote player sends them
        :meth:`~arena.tournament.runner.TournamentSettings.without_key`.
        Cancellable (the runner's time budget, the server's stop).

        Returns:
            Where the table was played: a Dask worker's address, or ``None``
            for this process.

        Raises:
            TableVoid: the table cannot be played for the server's reasons.
        """
        ...

    async def check(
        self, seat: SeatSource, settings: CompetitionSettings, budget: float
    ) -> CheckRun | None:
        """Run the gate's ``check`` of submission ``seat`` (:func:`gate.check_argv`
        with ``settings``) where ranked tables run, within ``budget`` seconds
        (``math.inf``: none): on a Dask worker, its archive sent as a table's
        is. ``None``: run it in this process (the runner's own subprocess)."""
        ...

    async def watch(self, report: Callable[[str, str, str, str | None], Awaitable[None]]) -> None:
        """Hand each worker's join check to ``report(address, name, status,
        reason)`` (``status`` ``"admitted"`` or ``"refused"``), for ever (a
        task of the runner's nursery); in process there are no workers."""
        ...

    async def flag(self, worker: str, reason: str) -> None:
        """``worker``'s record was refused by the re-check (``reason``, one
        line): a Dask player retires that worker and records it for
        ``serve --list``; in process there is nothing to retire."""
        ...

    async def aclose(self) -> None:
        """Release what the player holds (bot processes, a cluster it started)."""
        ...


class InProcessTables:
    """Tables in the runner's own loop (issue 27's way): the runner's one
    launcher (each submission's private copy made at its first table, under
    ``lock``) and deal locks, the live feed to the web process.

    Args:
        launcher: the runner's launcher.
        lock: serialises the launcher's checks and releases.
        deal_locks: the custody of deals shared by every table in play.
        live: the web process's feed of table states, or ``None``.
    """

    kind = "in-process"

    def __init__(
        self,
        launcher: Launcher,
        lock: trio.Lock,
        deal_locks: DealLocks,
        live: LiveFeed | None = None,
    ) -> None:
        self.launcher = launcher
        self.lock = lock
        self.deal_locks = deal_locks
        self.live = live

    async def prepare(self, seats: Sequence[SeatSource]) -> list[Entrant]:
        """See :meth:`TablePlayer.prepare`: the seats' entrants, checked by the
        launcher (each submission's private copy made at its first table).

        Raises:
            TableVoid: a seat's sandbox could not start here.
        """
        try:
            entrants = [s.entrant() for s in seats]
            async with self.lock:
                await trio.to_thread.run_sync(self.launcher.check, entrants)
        except (IsolationError, EntrantError, FolderError, OSError) as exc:
            raise TableVoid(f"a sandbox could not start: {exc}") from None
        return entrants

    async def play(
        self,
        table: store.TableRow,
        prepared: list[Entrant],
        specs: Sequence[GameSpec],
        settings: TournamentSettings,
        on_record: RecordSink,
    ) -> str | None:
        """See :meth:`TablePlayer.play`."""
        # Gauntlet and challenge tables are not shown live to the public.
        live = None if table.numbering in classes.PRIVATE else self.live
        await play_games(
            prepared, settings, self.launcher, specs, self.deal_locks, on_record, live=live
        )
        return None

    async def check(
        self, seat: SeatSource, settings: CompetitionSettings, budget: float
    ) -> CheckRun | None:
        """See :meth:`TablePlayer.check`: in this process (``None``)."""
        return None

    async def watch(self, report: Callable[[str, str, str, str | None], Awaitable[None]]) -> None:
        """See :meth:`TablePlayer.watch`: no workers here."""
        await trio.sleep_forever()

    async def flag(self, worker: str, reason: str) -> None:
        """See :meth:`TablePlayer.flag`: nothing to retire here (logged by the runner)."""

    async def aclose(self) -> None:
        """Nothing: the launcher is the runner's, closed by it."""
