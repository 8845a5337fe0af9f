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

import logging
import secrets
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import trio
from distributed import Client, Future, LocalCluster, Security, as_completed
from distributed.client import FutureCancelledError

from arena.game.referee import GameSpec
from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant
from arena.sandbox.isolation import IsolationError
from arena.sandbox.launcher import Launcher, LaunchOptions, _program_file
from arena.tournament.runner import Games, TournamentRunner, TournamentSettings
from arena.tournament.work import ExecutorUnavailable, RecordSink, work_units

#: The custom Dask worker resource one work unit (one table) takes.
TABLE_RESOURCE: Final = "table"
#: Seconds to wait for the scheduler and for a first worker.
CONNECT_TIMEOUT: Final = 30.0


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


def play_unit(job: TableJob, games: Sequence[GameSpec]) -> list[GameRecordJSON]:
    """Play one work unit on this worker (runs inside a Dask task).

    Returns:
        The games' ``games.jsonl`` records, in schedule order.
    """
    entrants = _local_entrants(job)
    settings = replace(job.settings, jobs=1)
    records: list[GameRecordJSON] = []
    runner = TournamentRunner(entrants, settings, Launcher(job.options), records.append)
    trio.run(runner.run, list(games))
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
        try:
            if scheduler is None:
                # Its ports are on loopback, where bots (when not sealed) could
                # connect: TLS with a throw-away certificate authority.
                security = Security.temporary()
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

    def play(self, games: Games, on_record: RecordSink) -> None:
        """Send ``games`` to the cluster as work units (in schedule order) and
        hand their records to ``on_record`` as units complete, each
        ``game_index`` once. A stream is walked whole into units first (this
        executor is not streamed). See :meth:`arena.tournament.executors.Executor.play`.

        Raises:
            ExecutorUnavailable: a unit was lost with too many workers in a
                row (Dask's ``KilledWorker``); finished games are recorded.
        """
        units = work_units(games)
        futures: dict[Future[Any], list[GameSpec]] = {}
        for unit in units:
            key = f"hearts-table-{unit[0].game_id}-{self._token}-{uuid.uuid4().hex[:8]}"
            fut = self.client.submit(
                play_unit,
                self.job,
                unit,
                key=key,
                resources={TABLE_RESOURCE: 1},
                pure=False,
            )
            futures[fut] = unit
        try:
            for fut in as_completed(list(futures)):
                try:
                    records = fut.result()
                except FutureCancelledError:
                    raise
                except Exception as exc:
                    if type(exc).__name__ == "KilledWorker":
                        ids = ", ".join(g.game_id for g in futures[fut])
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
        except BaseException:
            self.client.cancel(list(futures))
            raise

    def close(self) -> None:
        """Close the client and the local cluster it started, if any."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
