"""What an executor is and the work it is given: the :class:`Executor`
interface, the :data:`RecordSink` it hands each finished game to,
:class:`ExecutorUnavailable`, and :func:`work_units` (the tables a remote
worker plays as one task).

Both executors import this module: :mod:`arena.tournament.executors` (the
local one and the factory) and :mod:`arena.tournament.dask_executor`, so
neither imports the other at load time (the factory imports the Dask one
only when asked for it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import Final, Protocol

from arena.game.referee import GameSpec
from arena.protocol import records
from arena.tournament.runner import Games

#: Executor names of ``--executor``.
EXECUTORS: Final = ("local", "dask")

#: Called with each finished game's JSON record.
RecordSink = records.RecordSink


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot run here (Dask not installed, or the
    cluster unreachable or unfit); the message is one line for the user."""


class Executor(Protocol):
    """Plays games; see the module docstring."""

    def play(self, games: Games, on_record: RecordSink) -> None:
        """Play ``games`` (a list, or a :class:`arena.tournament.runner.ScheduleStream`
        walked lazily by the local executor), calling ``on_record`` once per finished game in
        the calling thread. Returns when every game is recorded.

        A ``KeyboardInterrupt`` stops the games in flight (their bot
        processes are closed) and propagates; games finished before it were
        already handed to ``on_record``.
        """
        ...

    def close(self) -> None:
        """Release what the executor holds (a cluster it started)."""
        ...


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
