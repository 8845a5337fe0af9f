"""Executors: where a tournament's games are played.

An executor plays a list of games (any subset of a schedule, or one ladder
batch), awaited in the caller's Trio loop (:class:`arena.tournament.work.Executor`:
``await executor.play(games, on_record)``, ``executor.cancel()``,
``await executor.aclose()``), and hands each finished game's JSON record to a
sink in the loop's thread, in completion order. The coordinator -- the ``run`` command -- keeps
the journal, the ratings and the report; ratings are applied in schedule
order, so the standings do not depend on the executor.

* :class:`LocalExecutor` (``--executor local``, the default): bot processes
  on this machine, ``--jobs`` games at a time (:class:`TournamentRunner`).
* :class:`arena.tournament.dask_executor.DaskExecutor` (``--executor dask``): tables
  sent to a Dask distributed cluster. Dask is an optional extra
  (``pip install 'hearts-arena[dask]'``); it is imported only when asked
  for (:func:`dask_available`, :func:`make_executor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.tournament.pool import ProcessPool, worker_count
from arena.tournament.runner import (
    DealLocks,
    Games,
    SeatFactory,
    TournamentRunner,
    TournamentSettings,
)
from arena.tournament.work import (
    EXECUTORS,
    Cancelling,
    Executor,
    ExecutorCancelled,
    ExecutorUnavailable,
    RecordSink,
    dask_available,
    work_units,
)

#: Games per worker process below which a local run stays in one process.
POOL_MIN_GAMES: int = 8


class LocalExecutor:
    """Games on this machine: ``settings.jobs`` chains at once, each keeping
    its bot processes along its games while no other chain needs a deal they
    have seen (:class:`TournamentRunner`). Calls of :meth:`play` made at once
    share the ``settings.jobs`` limit and the custody of deals.

    Args:
        entrants: every entrant.
        settings: the tournament settings.
        launcher: starts the bot processes.
        live: the live view's bounded queue (``--live``), or ``None``.
        seats: where seats come from (default: bot processes,
            :class:`arena.tournament.runner.ProcessSeats`); with a factory
            given, games are always played in this process (no worker pool).
    """

    def __init__(
        self,
        entrants: Sequence[Entrant],
        settings: TournamentSettings,
        launcher: Launcher,
        live: Any = None,
        seats: SeatFactory | None = None,
    ) -> None:
        self.live = live  # the live view's bounded queue (--live), or None
        self.entrants = list(entrants)
        self.settings = settings
        self.launcher = launcher
        self.seats = seats
        self._pool: ProcessPool | None = None
        self._cancelling = Cancelling()
        self._limiter = trio.CapacityLimiter(settings.jobs)
        self._locks = DealLocks()

    async def play(self, games: Games, on_record: RecordSink) -> None:
        """See :meth:`Executor.play`. With ``--jobs`` above 1 on a machine
        with several cores, and at least :data:`POOL_MIN_GAMES` games per
        worker, the games run in worker processes (:class:`arena.tournament.pool.ProcessPool`),
        since one Trio referee uses one core; fewer games run here, where
        starting the workers (about half a second) would cost more than it saves.

        Raises:
            ExecutorCancelled: :meth:`cancel` stopped it (or came before).
            arena.tournament.pool.WorkerError: a worker process failed.
        """
        with self._cancelling.playing():
            if not games:
                return
            workers = worker_count(self.settings.jobs)
            if self.seats is None and (
                self._pool is not None or (workers > 1 and len(games) >= POOL_MIN_GAMES * workers)
            ):
                if self._pool is None:
                    self._pool = ProcessPool(
                        self.entrants, self.settings, self.launcher.options, workers, self.live
                    )
                await self._pool.play(games, on_record)
                return
            feed = None
            if self.live is not None:
                from arena.game.feed import LiveFeed

                feed = LiveFeed(self.live)
            runner = TournamentRunner(
                self.entrants,
                self.settings,
                self.launcher,
                on_record,
                deal_locks=self._locks,
                live=feed,
                seats=self.seats,
                limiter=self._limiter,
            )
            await runner.run(games)

    def cancel(self) -> None:
        """See :meth:`Executor.cancel`."""
        self._cancelling.cancel()

    async def aclose(self) -> None:
        """Stop the worker processes, if any (in a thread: they are joined)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()


def make_executor(
    kind: str,
    entrants: Sequence[Entrant],
    settings: TournamentSettings,
    launcher: Launcher,
    scheduler: str | None = None,
    live: Any = None,
) -> Executor:
    """The executor named ``kind`` (see :data:`EXECUTORS`).

    Args:
        kind: ``"local"`` or ``"dask"``.
        live: for ``"local"``, the live view's bounded queue (``--live``),
            or ``None``; Dask games send no events (the view shows finished
            games only).
        scheduler: for ``"dask"``, the scheduler's address
            (``tcp://host:8786``); ``None`` starts a ``LocalCluster`` of
            ``settings.jobs`` single-threaded workers, each declaring the
            resource ``table=1``.

    Raises:
        ExecutorUnavailable: Dask is not installed, the scheduler cannot be
            reached, no worker declares the ``table`` resource, or a worker
            cannot run the entrants' programs.
        ValueError: an unknown ``kind``.
    """
    if kind == "local":
        return LocalExecutor(entrants, settings, launcher, live)
    if kind != "dask":
        raise ValueError(f"unknown executor {kind!r}")
    if not dask_available():
        raise ExecutorUnavailable(
            "--executor dask needs Dask distributed: pip install 'hearts-arena[dask]'"
        )
    from arena.tournament.dask_executor import DaskExecutor

    return DaskExecutor(entrants, settings, launcher.options, scheduler)


__all__ = [
    "EXECUTORS",
    "POOL_MIN_GAMES",
    "Executor",
    "ExecutorCancelled",
    "ExecutorUnavailable",
    "LocalExecutor",
    "RecordSink",
    "dask_available",
    "make_executor",
    "work_units",
]
