"""Games on a Dask distributed cluster (``--executor dask``).

Imported only when ``--executor dask`` is asked for: it needs the optional
extra ``pip install 'hearts-arena[dask]'`` (``dask[distributed]``).

The coordinator (the ``run`` command) sends each *work unit* -- all the games
of one table (:func:`work_units`), so the games of one deal are never in play
at once -- to the cluster as one task, with the settings without the master
key: each game carries its own table key and bot seeds. The task runs on a
worker with Trio: the unit's games one after another, with four bot processes at a time
(:class:`TournamentRunner` with ``jobs=1``), and returns their
``games.jsonl`` records. The coordinator keeps the journal, the ratings and
the report, and records each game once (by ``game_index``) as its task
completes.

The coordinator's side is async (:meth:`DaskExecutor.play` is awaited in
its Trio loop): the client's blocking calls run in threads
(:func:`trio.to_thread.run_sync`), and each future's completion comes back
to the loop from a thread that waits on them (``as_completed``, then
``TrioToken.run_sync_soon``); the records
are handed to the sink in the loop's thread. The client (and a local
cluster) is made when the executor is, outside the loop or in a thread
(``await trio.to_thread.run_sync(make_executor, ...)``). Cancelling a call
sets a Dask ``Event`` its tasks watch: a unit in play stops (its bots
closed) and returns the games it finished, which are recorded; a unit not
started returns at once.

Resources: a task asks for one unit of the custom worker resource
``table`` (:data:`TABLE_RESOURCE`). Declare on each worker as many as the
games it may play at once, normally its core count (``dask worker ADDRESS
--nthreads 8 --resources table=8``): a game has one seat deciding at a time,
so a table keeps about one core busy, and asking for four CPUs instead would
never schedule on a two-core worker. Tasks wait until a worker with a free
``table`` can take them.

A lost worker: Dask reruns the tasks it held on another worker (up to the
scheduler's ``allowed-failures``, 3 by default). A unit's records are sent
only when the whole unit is done, and its games are deterministic, so the
rerun gives the same records and each game is recorded once; the cost is
the games that were in flight. Bot processes of a killed worker get
end-of-file on their input and exit (a bot that ignores it is killed when
its uid is next leased on that machine).

Bot files reach the workers by a shared path: every entrant's program and
folder must exist at the same absolute path on every worker (a shared file
system, or the same checkout at the same place). ``.py`` entrants run with
the worker's own Python. :class:`DaskExecutor` checks every connected
worker before the first game (files present, readable by the bot users).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import dask
import trio
from distributed import Client, Event, Future, LocalCluster, Security, as_completed
from distributed.client import FutureCancelledError

from arena.game.referee import GameSpec
from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant
from arena.sandbox.isolation import IsolationError
from arena.sandbox.launcher import Launcher, LaunchOptions, _program_file
from arena.tournament.runner import Games, TournamentRunner, TournamentSettings
from arena.tournament.work import Cancelling, ExecutorUnavailable, RecordSink, work_units

#: The custom Dask worker resource one work unit (one table) takes.
TABLE_RESOURCE: Final = "table"
#: Seconds to wait for the scheduler and for a first worker.
CONNECT_TIMEOUT: Final = 30.0
#: Seconds a unit's watcher waits on its call's stop event between two looks.
STOP_POLL: Final = 0.5
#: Seconds a cancelled call waits for its units to stop and return the games
#: they finished, before it cancels what is left.
STOP_WAIT: Final = 30.0
#: Dask settings of a local cluster the arena starts (its scheduler, nannies
#: and worker processes, restarted ones too): no profiling of the worker
#: threads every 10 ms (Dask's default; it feeds the dashboard, which is
#: off), the event loop's health measured each second rather than every
#: 20 ms, host metrics every 5 s rather than 0.5 s, and each worker's memory
#: looked at each second rather than every 0.1 s. Idle, a cluster of two
#: workers burns a quarter of its default CPU (0.012 CPU-s a second against
#: 0.04-0.06, two runs of 60 s on the shared two-core machine, 2026-12-01);
#: what the scheduler relies on (heartbeats, ``worker-ttl``, reruns) is
#: unchanged.
LOCAL_CLUSTER_CONFIG: Final[dict[str, Any]] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


@dataclass(frozen=True)
class TableJob:
    """What a worker needs besides the games (sent with every task).

    Attributes:
        entrants: every entrant, as the coordinator parsed them.
        settings: the tournament settings.
        options: how bot processes are started (limits, sandbox, users, run id).
        python: the coordinator's ``sys.executable``; an entrant command
            starting with it runs with the worker's Python instead.
    """

    entrants: tuple[Entrant, ...]
    settings: TournamentSettings
    options: LaunchOptions
    python: str


def _local_entrants(job: TableJob) -> list[Entrant]:
    """The entrants with the coordinator's Python replaced by this worker's."""
    out = []
    for e in job.entrants:
        if e.argv and e.argv[0] == job.python:
            e = replace(e, argv=(sys.executable, *e.argv[1:]))
        out.append(e)
    return out


def play_unit(
    job: TableJob, games: Sequence[GameSpec], stop: str | None = None
) -> list[GameRecordJSON]:
    """Play one work unit on this worker (runs inside a Dask task). With
    ``stop``, the name of a Dask ``Event``: once it is set, the games in
    play stop (their bots closed) and no more start.

    Returns:
        The records of the games finished, in schedule order (all of them
        unless stopped).
    """
    entrants = _local_entrants(job)
    settings = replace(job.settings, jobs=1)
    records: list[GameRecordJSON] = []
    runner = TournamentRunner(entrants, settings, Launcher(job.options), records.append)
    event = Event(stop) if stop is not None else None

    async def watch(scope: trio.CancelScope) -> None:
        assert event is not None
        # A quick look each STOP_POLL, not Event.wait: a wait still pending on
        # the scheduler when the cluster closes makes Dask log an ERROR
        # (its event_wait cancelled), seen in tests on a loaded machine.
        while not await trio.to_thread.run_sync(event.is_set, abandon_on_cancel=True):  # noqa: ASYNC110
            await trio.sleep(STOP_POLL)
        scope.cancel()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            if event is not None:
                if event.is_set():
                    return
                nursery.start_soon(watch, nursery.cancel_scope)
            await runner.run(list(games))
            nursery.cancel_scope.cancel()

    trio.run(main)
    return sorted(records, key=lambda r: int(r["game_index"]))


def check_worker(job: TableJob) -> str | None:
    """Check on a worker that every entrant's program and folder exist and
    that the bot users can reach them; returns the problem, or ``None``."""
    for e in _local_entrants(job):
        if not e.cwd.is_dir():
            return f"entrant {e.name!r}: folder {e.cwd} is missing"
        program = _program_file(e)
        if not Path(program).exists():
            return f"entrant {e.name!r}: {program} is missing"
    try:
        Launcher(job.options).check(_local_entrants(job))
    except IsolationError as exc:
        return str(exc)
    return None


class DaskExecutor:
    """Plays work units on a Dask cluster; see the module docstring.

    Args:
        entrants: every entrant.
        settings: the tournament settings.
        options: how bot processes are started on the workers.
        scheduler: the scheduler's address (``tcp://host:8786``), or
            ``None`` to start a ``LocalCluster`` of ``settings.jobs``
            single-threaded worker processes, each with ``table=1``.

    Raises:
        ExecutorUnavailable: the scheduler cannot be reached, no worker came
            within :data:`CONNECT_TIMEOUT` seconds, no worker declares the
            ``table`` resource, or a worker cannot run an entrant.
    """

    def __init__(
        self,
        entrants: Sequence[Entrant],
        settings: TournamentSettings,
        options: LaunchOptions,
        scheduler: str | None = None,
    ) -> None:
        self.job = TableJob(tuple(entrants), settings.without_key(), options, sys.executable)
        self.settings = settings
        self.cluster: LocalCluster | None = None
        self._token = secrets.token_hex(4)
        self._recorded: set[int] = set()
        self._cancelling = Cancelling()
        try:
            if scheduler is None:
                # Its ports are on loopback, where bots (when not sealed) could
                # connect: TLS with a throw-away certificate authority.
                security = Security.temporary()
                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self.cluster = LocalCluster(
                        security=security,
                        n_workers=settings.jobs,
                        threads_per_worker=1,
                        processes=True,
                        resources={TABLE_RESOURCE: 1},
                        dashboard_address=None,
                        silence_logs=logging.ERROR,
                    )
                self.client = Client(self.cluster)
            else:
                self.client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            self.close()
            where = scheduler or "a local cluster"
            raise ExecutorUnavailable(f"cannot start Dask on {where}: {exc}") from None
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
            self._check_workers()
        except BaseException as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                raise ExecutorUnavailable(
                    f"no Dask worker joined {scheduler} within {CONNECT_TIMEOUT:g} s"
                ) from None
            raise

    def _check_workers(self) -> None:
        workers = self.client.scheduler_info().get("workers", {})
        if not any(w.get("resources", {}).get(TABLE_RESOURCE, 0) >= 1 for w in workers.values()):
            raise ExecutorUnavailable(
                f"no Dask worker declares the resource {TABLE_RESOURCE!r}: start workers "
                f"with 'dask worker ADDRESS --resources {TABLE_RESOURCE}=N' (N: their cores)"
            )
        problems = self.client.run(check_worker, self.job)
        for address, problem in sorted(problems.items()):
            if problem:
                raise ExecutorUnavailable(f"Dask worker {address}: {problem}")

    async def play(self, games: Games, on_record: RecordSink) -> None:
        """Send ``games`` to the cluster as work units (in schedule order) and
        hand their records to ``on_record`` as units complete, each
        ``game_index`` once. A stream is walked whole into units first (this
        executor is not streamed). See :meth:`arena.tournament.work.Executor.play`.

        Raises:
            ExecutorUnavailable: a unit was lost with too many workers in a
                row (Dask's ``KilledWorker``); finished games are recorded.
            ExecutorCancelled: :meth:`cancel` stopped it.
        """
        with self._cancelling.playing():
            units = work_units(games)
            if not units:
                return
            stop = f"hearts-stop-{self._token}-{uuid.uuid4().hex[:8]}"
            futures = await trio.to_thread.run_sync(self._submit, units, stop)
            send, arrivals = trio.open_memory_channel[Future[Any]](math.inf)
            trio_token = trio.lowlevel.current_trio_token()

            def arrived(fut: Future[Any]) -> None:  # in the loop's thread
                with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                    send.send_nowait(fut)

            def gather() -> None:  # in a thread of its own, until every future is done
                with contextlib.suppress(trio.RunFinishedError):
                    try:
                        for fut in as_completed([f for f, _ in futures]):
                            trio_token.run_sync_soon(arrived, fut)
                    except Exception:  # the client is gone: the call ends (EndOfChannel)
                        trio_token.run_sync_soon(send.close)

            left: dict[Any, tuple[Future[Any], list[GameSpec]]] = {
                fut.key: (fut, unit) for fut, unit in futures
            }
            with send, arrivals:
                threading.Thread(target=gather, name="hearts-dask-gather", daemon=True).start()
                try:
                    await self._collect(arrivals, left, on_record)
                except BaseException:
                    with trio.CancelScope(shield=True):
                        await self._stop(stop, arrivals, left, on_record)
                    raise

    def _submit(
        self, units: list[list[GameSpec]], stop: str
    ) -> list[tuple[Future[Any], list[GameSpec]]]:
        """Submit every unit (blocking: in a thread)."""
        futures = []
        for unit in units:
            key = f"hearts-table-{unit[0].game_id}-{self._token}-{uuid.uuid4().hex[:8]}"
            fut = self.client.submit(
                play_unit,
                self.job,
                unit,
                stop,
                key=key,
                resources={TABLE_RESOURCE: 1},
                pure=False,
            )
            futures.append((fut, unit))
        return futures

    async def _collect(
        self,
        arrivals: trio.MemoryReceiveChannel[Future[Any]],
        left: dict[Any, tuple[Future[Any], list[GameSpec]]],
        on_record: RecordSink,
        lenient: bool = False,
    ) -> None:
        """Take the futures as they complete until ``left`` is empty, each
        unit's records to ``on_record`` (its result gathered in a thread).
        ``lenient``: a unit that failed or was cancelled is skipped."""
        while left:
            try:
                fut = await arrivals.receive()
            except trio.EndOfChannel:
                raise ExecutorUnavailable(
                    "lost the Dask client while games were in play; finished games "
                    "are kept: continue with --resume"
                ) from None
            found = left.pop(fut.key, None)
            if found is None:
                continue
            unit = found[1]
            try:
                records = await trio.to_thread.run_sync(fut.result)
            except FutureCancelledError:
                if lenient:
                    continue
                raise
            except Exception as exc:
                if lenient:
                    continue
                if type(exc).__name__ == "KilledWorker":
                    ids = ", ".join(g.game_id for g in unit)
                    raise ExecutorUnavailable(
                        f"games {ids} were lost with a Dask worker too many times "
                        "in a row; finished games are kept: continue with --resume"
                    ) from None
                raise
            for record in records:
                index = int(record["game_index"])
                if index not in self._recorded:
                    self._recorded.add(index)
                    on_record(record)

    async def _stop(
        self,
        stop: str,
        arrivals: trio.MemoryReceiveChannel[Future[Any]],
        left: dict[Any, tuple[Future[Any], list[GameSpec]]],
        on_record: RecordSink,
    ) -> None:
        """Tell the call's units to stop (its Dask ``Event``), record the games
        they finished, and cancel what has not returned within :data:`STOP_WAIT`."""
        if not left:
            return
        try:
            await trio.to_thread.run_sync(lambda: Event(stop, client=self.client).set())
            with trio.move_on_after(STOP_WAIT):
                await self._collect(arrivals, left, on_record, lenient=True)
        except Exception:  # the cluster is gone: nothing more comes back
            logging.getLogger(__name__).debug("stopping Dask units", exc_info=True)
        finally:
            if left:
                rest = [fut for fut, _ in left.values()]
                with contextlib.suppress(Exception):
                    await trio.to_thread.run_sync(self.client.cancel, rest)

    def cancel(self) -> None:
        """See :meth:`arena.tournament.work.Executor.cancel`."""
        self._cancelling.cancel()

    async def aclose(self) -> None:
        """:meth:`close`, in a thread."""
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Close the client and the local cluster it started, if any."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
