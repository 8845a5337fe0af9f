"""What an executor is and the work it is given: the :class:`Executor`
interface (async and cancellable), the :data:`RecordSink` it hands each
finished game to, :class:`ExecutorUnavailable`, :class:`ExecutorCancelled`,
:class:`Cancelling` (the cancel scopes of the plays in flight, shared by the
executors) and :func:`work_units` (the tables a remote worker plays as one task).

Both executors import this module: :mod:`arena.tournament.executors` (the
local one and the factory) and :mod:`arena.tournament.dask_executor`, so
neither imports the other at load time (the factory imports the Dask one
only when asked for it).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterable, Iterator
from typing import Protocol

import trio

from arena.game.referee import GameSpec
from arena.protocol import records
from arena.tournament.runner import Games
from arena.tournament.settings import EXECUTORS as EXECUTORS  # (moved; named here too)

#: Called with each finished game's JSON record.
RecordSink = records.RecordSink


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot run here (Dask not installed, or the
    cluster unreachable or unfit); the message is one line for the user."""


class ExecutorCancelled(RuntimeError):
    """:meth:`Executor.cancel` stopped a :meth:`Executor.play` before every
    one of its games was recorded (those finished before were)."""


class Executor(Protocol):
    """Plays games, awaited inside the caller's Trio loop.

    Several tasks may await :meth:`play` at once (a competition server plays
    each table as its own task): they share the executor's ``jobs`` games at
    a time and its custody of deals (no process that has seen a deal is alive
    while another holds its cards, whichever call plays them).
    """

    async def play(self, games: Games, on_record: RecordSink) -> None:
        """Play ``games`` (a list, or a :class:`arena.tournament.runner.ScheduleStream`
        walked lazily by the local executor), calling ``on_record`` once per
        finished game in the loop's thread, in completion order. Returns when
        every game is recorded.

        Cancellation, by the caller's cancel scope (or Ctrl-C) or by
        :meth:`cancel`: no new game starts, games in progress stop (their bot
        processes killed and reaped, worker processes told to stop their
        games), and every game that finished before is handed to
        ``on_record`` before the call ends.

        Raises:
            ExecutorCancelled: :meth:`cancel` was called before every game
                was recorded (at once, for a call made after it).
            ExecutorUnavailable: the executor cannot go on (a Dask unit lost
                too often).
        """
        ...

    def cancel(self) -> None:
        """Stop every :meth:`play` in flight and refuse later ones (see
        :meth:`play`). Call it in the loop's thread (from another thread:
        ``trio.lowlevel.TrioToken.run_sync_soon(executor.cancel)``); returns
        at once, the calls of :meth:`play` end once their games are stopped."""
        ...

    async def aclose(self) -> None:
        """Release what the executor holds (worker processes, a cluster it
        started); no :meth:`play` may be in flight."""
        ...


class Cancelling:
    """The cancel scopes of the :meth:`Executor.play` calls in flight, for
    :meth:`Executor.cancel`: :meth:`playing` wraps a call, :meth:`cancel`
    cancels every scope and marks the executor cancelled for good."""

    def __init__(self) -> None:
        self.cancelled = False
        self._scopes: set[trio.CancelScope] = set()

    @contextlib.contextmanager
    def playing(self) -> Iterator[trio.CancelScope]:
        """A cancel scope around one call of :meth:`Executor.play`.

        Raises:
            ExecutorCancelled: on entry, after :meth:`cancel`; on exit, when
                :meth:`cancel` stopped the call (its scope caught the
                cancellation).
        """
        if self.cancelled:
            raise ExecutorCancelled("the executor was cancelled: no game is started")
        scope = trio.CancelScope()
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)
        if scope.cancelled_caught:
            raise ExecutorCancelled("the executor was cancelled before every game was recorded")

    def cancel(self) -> None:
        """Cancel every call in flight and the later ones."""
        self.cancelled = True
        for scope in list(self._scopes):
            scope.cancel()


def work_units(games: Iterable[GameSpec]) -> list[list[GameSpec]]:
    """The games grouped into units a remote worker plays as one task, in
    schedule order of their first games: all the games of one table (a
    ladder table's four rotations of one deal; a round-robin or gauntlet
    table's seatings over the rounds, played as chains that reuse processes).
    Games that share a deal are always in one unit, whose games the worker
    plays one at a time, so no two games of a deal are in play at once.
    Builds every unit at once (a stream is walked whole): the Dask executor
    is not streamed."""
    tables: dict[int, list[GameSpec]] = {}
    for g in sorted(games, key=lambda g: g.game_index):
        tables.setdefault(g.table, []).append(g)
    return sorted(tables.values(), key=lambda unit: unit[0].game_index)


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("distributed") is not None
    except (ImportError, ValueError):
        return False
