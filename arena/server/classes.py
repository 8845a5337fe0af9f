"""The runner's hooks for a class's end (issue 30): the final, the
gauntlet, challenges and practice, kept out of :mod:`arena.server.runner`
(which calls :func:`start_tables` once a scheduler round, after its
validation and ladder tables, and :func:`specs`, :func:`extra_entrants` and
:func:`finish_table` for tables of :data:`NUMBERINGS`).

Order on free slots: a chosen table of these numberings that is not playing
(a restart's) first, then the final's, the gauntlet's, a challenge's and a
practice table: the final is the result, the gauntlet the grades,
challenges and practice what is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio
from sqlalchemy import Connection

from arena.protocol.records import GameRecordJSON, GameSpec
from arena.server import challenges, deadline, final, gauntlet, store
from arena.server.ladder import faulted_seats, table_specs

if TYPE_CHECKING:
    from arena.core.keys import MasterKey
    from arena.server.db import Database
    from arena.server.folder import CompetitionSettings


class Runner(Protocol):
    """What these hooks use of :class:`arena.server.runner.Runner`."""

    settings: CompetitionSettings
    key: MasterKey
    database: Database
    config: Any
    _playing: set[int]

    def _launch(self, nursery: trio.Nursery, table: store.TableRow) -> None: ...

    def log(self, event: str, **fields: Any) -> None: ...


class Finished(Protocol):
    """What :func:`finish_table` reads of the runner's table end."""

    @property
    def void_reason(self) -> str | None: ...

    @property
    def records(self) -> list[GameRecordJSON]: ...


#: The numberings these hooks play (never on the ladder's fold).
NUMBERINGS: Final = ("final", "gauntlet", "challenge", "practice")
#: Numberings whose tables in play are not sent to the public live view: a
#: challenge is its four seats' owners' own, a gauntlet deal opens only once
#: every participant has played it.
PRIVATE: Final = ("gauntlet", "challenge")


def _choosers(runner: Runner) -> list[Callable[[Connection, float], store.TableRow | None]]:
    s = runner.settings
    return [
        lambda conn, now: final.choose_final(conn, s, runner.key, now),
        lambda conn, now: gauntlet.choose_gauntlet(conn, s, now),
        lambda conn, now: challenges.choose_challenge(conn, s, now),
        lambda conn, now: deadline.choose_practice(conn, s, now),
    ]


def choose_next(runner: Runner, conn: Connection, now: float) -> store.TableRow | None:
    """The next table of these numberings, in the module's order, or ``None``."""
    for choose in _choosers(runner):
        t = choose(conn, now)
        if t is not None:
            return t
    return None


async def start_tables(runner: Runner, nursery: trio.Nursery) -> int:
    """The scheduler's hook: start the final when it is time (logs
    ``final_started`` with the finalists' submissions), then fill free slots
    with these numberings' tables. Returns the tables started."""
    seeds = None
    if await runner.database.read_async(final.ready, runner.settings, time.time()):
        seeds = await runner.database.write_async(final.start_final, runner.settings, time.time())
    if seeds is not None:
        runner.log("final_started", finalists=seeds, kind=runner.settings.klass.final)
    started = 0
    # One write transaction for each free slot (none while every slot is
    # taken): a table of these numberings chosen and not playing (a
    # restart's), in their order, then a new one (a read of each numbering
    # and a write for the choosers, before, at every round).
    while len(runner._playing) < runner.config.slots:
        t = await runner.database.write_async(
            lambda conn, playing, now: next_table(runner, conn, playing, now),
            frozenset(runner._playing),
            time.time(),
        )
        if t is None:
            break
        runner._launch(nursery, t)
        started += 1
    return started


def next_table(
    runner: Runner, conn: Connection, playing: frozenset[int], now: float
) -> store.TableRow | None:
    """The next table of these numberings to play: one chosen and not in
    ``playing`` (by numbering in the module's order, then by number), else
    a new one (:func:`choose_next`), else ``None``."""
    for numbering in NUMBERINGS:
        for row in store.tables_in(conn, numbering, ["chosen"]):
            if row.id not in playing:
                return row
    return choose_next(runner, conn, now)


def specs(key: MasterKey, settings: CompetitionSettings, table: store.TableRow) -> list[GameSpec]:
    """The four games of a table of :data:`NUMBERINGS`, at the competition's
    game length: :func:`arena.server.final.specs`, :func:`arena.server.gauntlet.specs`,
    :func:`arena.server.challenges.specs`, or for practice ids ``p<n>-k<k>``."""
    g = settings.game
    if table.numbering == "final":
        return final.specs(key, table, g.hands, g.target_score)
    if table.numbering == "gauntlet":
        return gauntlet.specs(key, table, g.hands, g.target_score)
    if table.numbering == "challenge":
        return challenges.specs(key, table, g.hands, g.target_score)
    return table_specs(
        key, table.deal_key, "p", table.number, table.seating, g.hands, g.target_score
    )


def extra_entrants(settings: CompetitionSettings) -> dict[str, str]:
    """Labels -> sample bots the runner seats beside the house bots: the
    gauntlet's reference bots."""
    return gauntlet.reference_entrants(settings)


def finish_table(
    conn: Connection,
    settings: CompetitionSettings,
    table: store.TableRow,
    done: Finished,
    now: float,
) -> list[tuple[str, dict[str, Any]]]:
    """A finished table of :data:`NUMBERINGS`: ``done``, or ``void`` with its
    reason (the server's, or a house or reference bot's fault: the machine's,
    charged to nobody). Never rated, never counted as ranked games.
    ``done``: the runner's table end (its ``records`` and ``void_reason``)."""
    void_reason, records = done.void_reason, done.records
    machine = set(settings.house_labels) | set(gauntlet.reference_labels(settings))
    if void_reason is None:
        void_reason = next(
            (
                f"house bot {rec['seats'][s]} faulted"
                for rec in records
                for s in sorted(faulted_seats(rec) | {f["seat"] for f in rec["faults"]})
                if rec["seats"][s] in machine
            ),
            None,
        )
    where = {"numbering": table.numbering, "number": table.number}
    if void_reason is not None:
        store.set_table_status(conn, table.id, "void", now, void_reason)
        return [("void", {**where, "reason": void_reason}), *_folded(conn, table)]
    store.set_table_status(conn, table.id, "done", now)
    return [("done", where), *_folded(conn, table)]


def _folded(conn: Connection, table: store.TableRow) -> list[tuple[str, dict[str, Any]]]:
    if table.numbering != "final":
        return []
    return [("final_rated", {"through": final.fold_final(conn)})]
