"""The server's tables on Dask (``hearts-arena serve DIR --executor dask``):
the :class:`~arena.server.tables.TablePlayer` that sends each table to a
cluster of the organiser's machines as one task.

* **One task per table** (:func:`play_table_task`): its four games in order
  with the launch options and each game's table key and bot seeds, the
  settings :meth:`~arena.tournament.runner.TournamentSettings.without_key`:
  never the master key. Priorities: validation, then ladder
  (:data:`arena.server.tables.PRIORITIES`); one unit of the worker resource
  ``table`` each.
* **Each archive sent once per worker** (:func:`seat_archive`,
  :func:`fetch_archive`): a ``.py`` as its bytes, a zip submission as a zip of
  its stored folder made the same way every time (made once by the runner).
  A task carries only the archives' SHA-256s. The runner puts each archive
  once in the scheduler's metadata (``Client.set_metadata`` under
  ``[ARCHIVE_METADATA, sha]``), before the first task that needs it; a
  worker that lacks one in its cache (:func:`worker_cache`, shared by the
  worker processes of one machine and user) gets it from the scheduler, over
  the worker's own connection (its ``worker`` certificate: ``dask worker
  --tls-cert`` gives it no client certificate), checks it on arrival (its
  SHA-256, then :func:`arena.server.uploads.store_upload`'s checks, as an
  upload is) and keeps it under its SHA-256. The scheduler holds it, so a
  table rerun after any worker died still finds it. (``Client.scatter``
  would leave it on workers only: scattered data that was only on a dead
  worker is lost and the scheduler cancels the tasks needing it, seen in
  the four-kill test; carrying the bytes with every task sent them to a
  worker once per table.) A scheduler started again has lost its
  metadata: a task that finds an archive missing says so
  (:class:`ArchivesMissing`), and the runner puts it back and sends the
  task once more.
* **The join check** (:class:`AdmissionPlugin`, registered with the client,
  so run on every worker present and on every worker that joins later):
  :func:`arena.server.workers.admission_problem`. A worker that fails sets
  its ``table`` resource to 0 (no table is scheduled there), reports on the
  topic :data:`TOPIC`, and the runner retires it and records it (``serve
  --list``). A task that lands on a worker not (yet) admitted is rescheduled.
* **From Trio.** Every blocking client call runs in ``trio.to_thread``; a
  table's future hands its completion back with a done-callback calling
  ``TrioToken.run_sync_soon`` (and a look at the future every
  :data:`POLL_SECONDS`, in case a callback of a rerun future never comes);
  the local cluster is started outside the loop (:meth:`DaskTables.start`).
* **Stopped when cancelled.** Dask lets a running task's thread run on after
  its future is cancelled; a table's task looks every
  :data:`RELEASE_POLL_SECONDS` at whether the scheduler still wants it and,
  released (the runner's time budget, its stop), cancels its games: the
  referee and bots are closed, not left playing. A check's task stops its
  check the same way.
* **Nothing listening but TLS.** A local cluster's scheduler and workers
  start an HTTP server whatever the dashboard setting; it gets no route
  (:data:`LOCAL_HTTP_OFF`) and is closed (:class:`HttpOffPlugin` on every
  worker, restarted ones too).
* **Lost work.** Dask reruns a table whose worker died up to
  ``allowed-failures`` (:data:`ALLOWED_FAILURES`) times; a worker silent for
  ``worker-ttl`` (:data:`WORKER_TTL`) is presumed dead. A table lost once
  more is void (:class:`~arena.server.tables.TableVoid`) with its four
  submissions named. The database is the record (:mod:`arena.server.runner`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import functools
import hashlib
import io
import logging
import os
import queue
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import dask
import trio
from distributed import Client, Future, LocalCluster, Reschedule, Security, WorkerPlugin, get_worker
from distributed.utils import sync

from arena.protocol.records import GameRecordJSON, GameSpec
from arena.sandbox.isolation import IsolationError
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.server import gate, store, uploads, workers
from arena.server.folder import CompetitionSettings
from arena.server.tables import (
    PRIORITIES,
    PRIORITY_VALIDATION,
    CheckRun,
    RecordSink,
    SeatSource,
    TableVoid,
)
from arena.server.workers import TABLE_RESOURCE, Expected
from arena.tournament.dask_executor import LOCAL_CLUSTER_CONFIG
from arena.tournament.runner import TournamentRunner, TournamentSettings

#: The topic of the join check's reports (``Worker.log_event``).
TOPIC: Final = "hearts-arena-workers"
#: The admission plugin's name on each worker.
PLUGIN_NAME: Final = "hearts-arena-admission"
#: Times the scheduler reruns a table whose worker died before it is lost.
ALLOWED_FAILURES: Final = 3
#: A worker silent this long is presumed dead (Dask's ``worker-ttl``).
WORKER_TTL: Final = "60s"
#: Seconds to wait for the scheduler and for a first worker.
CONNECT_TIMEOUT: Final = 60.0
#: Seconds between two looks at a table's future besides its callback.
POLL_SECONDS: Final = 2.0
#: Seconds between two looks, inside a running task, at whether the scheduler
#: still wants it (cancelled: the runner's time budget, its stop).
RELEASE_POLL_SECONDS: Final = 0.5
#: A worker task's states once the scheduler no longer wants its result.
RELEASED: Final = frozenset({"cancelled", "released", "forgotten"})
#: A fixed time for every entry of an archive (zip's first representable).
ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
#: The scheduler's metadata key under which each archive is kept
#: (``[ARCHIVE_METADATA, sha256]``: its bytes).
ARCHIVE_METADATA: Final = "hearts-arena-archives"

_log = logging.getLogger(__name__)


def scheduler_config() -> dict[str, Any]:
    """The Dask settings of the scheduler the runner relies on (a local
    cluster gets them; the organiser's ``dask scheduler`` is started with
    the same, docs/competition-server-dask.md)."""
    return {
        "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
        "distributed.scheduler.worker-ttl": WORKER_TTL,
    }


#: A local cluster's Dask settings besides :func:`scheduler_config`: no
#: route on the HTTP servers Dask starts in the scheduler and each worker
#: whatever the dashboard setting (its pages list tasks and workers), which
#: :func:`_stop_http` then closes: an unsealed bot could reach loopback.
LOCAL_HTTP_OFF: Final[dict[str, list[str]]] = {
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
}
#: The plugin that closes a local cluster's workers' HTTP servers.
HTTP_OFF_PLUGIN: Final = "hearts-arena-http-off"


async def _stop_http(server: Any) -> None:
    """Close a Dask scheduler's or worker's HTTP server (in its event loop)."""
    http = getattr(server, "http_server", None)
    if http is not None:
        http.stop()


class HttpOffPlugin(WorkerPlugin):
    """On a local cluster's workers (restarted ones too): no HTTP server."""

    name = HTTP_OFF_PLUGIN

    async def setup(self, worker: Any) -> None:
        """Close this worker's HTTP server."""
        await _stop_http(worker)


# -- archives ----------------------------------------------------------------------


def seat_archive(seat: SeatSource) -> bytes:
    """The bytes a submission's seat travels as: a ``.py`` submission's
    ``bot.py`` (its SHA-256 is the submission's), a zip submission's stored
    folder as a zip made the same way every time (names sorted, fixed
    times, modes 0644 or 0755), which :func:`arena.server.uploads.store_upload`
    accepts on the worker.

    Raises:
        OSError: the stored folder cannot be read.
    """
    assert seat.folder is not None
    if seat.kind == "py":
        return (seat.folder / uploads.PY_NAME).read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(p for p in seat.folder.rglob("*") if p.is_file()):
            rel = path.relative_to(seat.folder).as_posix()
            info = zipfile.ZipInfo(rel, ZIP_TIME)
            mode = 0o755 if path.stat().st_mode & stat.S_IXUSR else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    return buf.getvalue()


def worker_cache() -> Path:
    """The worker's cache of submissions by archive SHA-256:
    ``$TMPDIR/hearts-arena-worker-<uid>`` (0700, this user's own)."""
    path = Path(tempfile.gettempdir()) / f"hearts-arena-worker-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise IsolationError(f"{path} is not a private folder of this user's")
    return path


def unpack_archive(sha256: str, data: bytes) -> Path:
    """A seat's archive on the worker, checked on arrival: its SHA-256 must
    be ``sha256``, then it is checked and stored as an upload is
    (:func:`arena.server.uploads.store_upload`) in :func:`worker_cache`,
    under its SHA-256 (a second table finds it there).

    Raises:
        IsolationError: the bytes are not the archive named, or are refused.
    """
    if hashlib.sha256(data).hexdigest() != sha256:
        raise IsolationError(f"archive {sha256[:12]}... arrived with other bytes")
    try:
        stored = uploads.store_upload(data, worker_cache())
    except uploads.UploadError as exc:
        raise IsolationError(f"archive {sha256[:12]}... refused on arrival: {exc}") from None
    return stored.folder


#: One lock per archive SHA-256 in this worker process: two tasks missing the
#: same archive fetch it once.
_FETCH_LOCKS: dict[str, threading.Lock] = {}
_FETCH_LOCKS_LOCK = threading.Lock()


class ArchiveMissing(IsolationError):
    """The scheduler does not hold an archive a task needs (a scheduler started
    again since the runner put it there): ``sha256`` names it."""

    def __init__(self, sha256: str) -> None:
        super().__init__(f"archive {sha256[:12]}... is not on the scheduler")
        self.sha256 = sha256


def _scheduler_archive(sha256: str) -> bytes | None:
    """The archive's bytes from the scheduler's metadata (``None``: not
    there), asked over this worker's own connection to the scheduler."""
    worker = get_worker()
    data = sync(
        worker.loop,
        worker.scheduler.get_metadata,
        keys=[ARCHIVE_METADATA, sha256],
        default=None,
    )
    return data if isinstance(data, bytes) or data is None else bytes(data)


def fetch_archive(sha256: str) -> tuple[Path, bool]:
    """A seat's unpacked archive on this worker: from :func:`worker_cache` if
    it is there, else fetched from the scheduler once (one fetch per archive
    in this process however many tasks need it at once) and checked on
    arrival (:func:`unpack_archive`). Returns the folder and whether it was
    fetched now.

    Raises:
        ArchiveMissing: the scheduler does not hold it.
        IsolationError: the bytes that arrived are not the archive, or are
            refused by the upload checks.
    """
    folder = worker_cache() / sha256
    if folder.is_dir():
        return folder, False
    with _FETCH_LOCKS_LOCK:
        lock = _FETCH_LOCKS.setdefault(sha256, threading.Lock())
    with lock:
        if folder.is_dir():  # fetched meanwhile by another task
            return folder, False
        data = _scheduler_archive(sha256)
        if data is None:
            raise ArchiveMissing(sha256)
        return unpack_archive(sha256, data), True


@dataclass(frozen=True)
class ArchivesMissing:
    """A task's result when the scheduler lacks archives it needs: their
    SHA-256s (the runner puts them back and sends the task again)."""

    sha256s: tuple[str, ...]


# -- the task on a worker ------------------------------------------------------------


def _released(worker: Any, key: Any) -> bool:
    """Whether the scheduler no longer wants the task ``key`` running in this
    worker (its future cancelled, its client gone): the worker's state of it
    (read from the task's thread; Dask lets a running thread finish)."""
    ts = worker.state.tasks.get(key)
    return ts is None or ts.state in RELEASED


async def _until_released(worker: Any, key: Any, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` once the task ``key`` is released (see :func:`_released`)."""
    # The worker's state changes in its event loop's thread: nothing to wait on here.
    while not _released(worker, key):  # noqa: ASYNC110
        await trio.sleep(RELEASE_POLL_SECONDS)
    scope.cancel()


@dataclass(frozen=True)
class TableTask:
    """What a worker is sent to play one table (no master key).

    Attributes:
        numbering: ``"validation"`` or ``"ladder"``.
        number: the table's number in its numbering.
        seats: the four seats (house bot or submission kind and SHA-256).
        archives: each seat's archive SHA-256 (``""`` for a house bot).
        specs: the four games, each with its table key and bot seeds.
        settings: the tournament settings without the key.
        options: how bot processes are started.
        expected: the join check's expectations (a task on a worker not
            checked yet checks it first).
    """

    numbering: str
    number: int
    seats: tuple[SeatSource, ...]
    archives: tuple[str, ...]
    specs: tuple[GameSpec, ...]
    settings: TournamentSettings
    options: LaunchOptions
    expected: Expected


@dataclass(frozen=True)
class TableOutcome:
    """A table's task's result: the records (rotation order), the worker's
    address, ``void``: why the table could not be played there (a sandbox
    that did not start), or ``None``, and ``fetched``: the SHA-256s of the
    archives this task fetched from the scheduler (those not in the
    worker's cache yet)."""

    records: list[GameRecordJSON]
    worker: str
    void: str | None = None
    fetched: tuple[str, ...] = ()


def _admitted(expected: Expected) -> str | None:
    """The join check's result on this worker (run now if the plugin has not)."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN_NAME)
    if isinstance(plugin, AdmissionPlugin) and plugin.checked:
        return plugin.problem
    return workers.admission_problem(
        expected,
        workers.arena_version(),
        workers.package_digest(),
        dict(worker.state.total_resources),
    )


def play_table_task(
    task: TableTask,
    on_game: Callable[[GameRecordJSON], None] | None = None,
) -> TableOutcome | ArchivesMissing:
    """Play one table on this worker (runs inside a Dask task, in a thread of
    the worker): each submission's archive from the worker's cache or
    fetched from the scheduler once (:func:`fetch_archive`), the bots
    started with ``task.options`` (this worker's Python, sealed as the
    server seals them), the four games played in order with Trio, every bot
    closed. Stopped, its bots closed, within :data:`RELEASE_POLL_SECONDS`
    of the scheduler releasing it (the runner cancelled it: its time budget,
    its stop), with the records finished so far. ``on_game``: called with
    each record as it finishes (tests). Returns :class:`ArchivesMissing` when
    the scheduler lacks an archive.

    Raises:
        distributed.Reschedule: this worker failed its join check (the
            scheduler places the table elsewhere).
    """
    worker = get_worker()
    address = worker.address
    key = worker.get_current_task()
    if _admitted(task.expected) is not None:
        raise Reschedule()
    # This machine's cores and a control-group run of the task's own; the
    # server's run id, so a runner started again finds a local cluster's bots.
    options = replace(
        task.options,
        gate=None,
        cores=0,
        cgroup_run=secrets.token_hex(8),
        arena_python=sys.executable,
    )
    fetched: list[str] = []
    launcher = Launcher(options)
    try:
        try:
            entrants = []
            for seat, sha in zip(task.seats, task.archives, strict=True):
                folder = None
                if sha:
                    folder, now = fetch_archive(sha)
                    if now:
                        fetched.append(sha)
                entrants.append(seat.entrant(folder))
            launcher.check(entrants)
        except ArchiveMissing as exc:
            return ArchivesMissing((exc.sha256,))
        except (IsolationError, OSError, ValueError) as exc:
            void = f"a sandbox could not start on {address}: {exc}"
            return TableOutcome([], address, void, tuple(fetched))
        records: list[GameRecordJSON] = []

        def sink(record: GameRecordJSON) -> None:
            records.append(record)
            if on_game is not None:
                on_game(record)

        settings = replace(task.settings, jobs=1)
        runner = TournamentRunner(entrants, settings, launcher, sink)

        async def play() -> None:
            # Stopped (its bots closed) once the scheduler no longer wants it.
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_until_released, worker, key, nursery.cancel_scope)
                await runner.run(list(task.specs))
                nursery.cancel_scope.cancel()

        trio.run(play)
    finally:
        launcher.close()
    ordered = sorted(records, key=lambda r: int(r["rotation"]))
    return TableOutcome(ordered, address, None, tuple(fetched))


@dataclass(frozen=True)
class CheckTask:
    """What a worker is sent to run a submission's ``check`` (the gate's first
    step, where ranked tables run).

    Attributes:
        seat: the submission (its label, kind and SHA-256).
        archive: its archive's SHA-256 (:func:`seat_archive`).
        settings: the competition's settings (the check's limits; no key).
        budget: seconds the check may run (``math.inf``: no budget).
        expected: the join check's expectations.
    """

    seat: SeatSource
    archive: str
    settings: CompetitionSettings
    budget: float
    expected: Expected


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    # The check gets SIGTERM (its bots stopped) if the worker dies.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def check_task(task: CheckTask) -> CheckRun | ArchivesMissing:
    """Run one submission's check on this worker (inside a Dask task, in a
    thread of the worker): its archive from the worker's cache or fetched
    from the scheduler once and checked on arrival (:func:`fetch_archive`),
    then ``python -m arena check --sandbox`` with the competition's limits
    (:func:`arena.server.gate.check_argv`, this worker's Python), stopped at
    ``task.budget`` seconds, or once the scheduler releases the task (SIGTERM,
    SIGKILL 10 s later). An archive
    refused here is the server's fault (exit code -1:
    :func:`arena.server.gate.judge_check` has it checked again); one the
    scheduler lacks gives :class:`ArchivesMissing`.

    Raises:
        distributed.Reschedule: this worker failed its join check.
    """
    worker = get_worker()
    address = worker.address
    key = worker.get_current_task()
    if _admitted(task.expected) is not None:
        raise Reschedule()
    try:
        folder, _ = fetch_archive(task.archive)
        entrant = gate.submission_entrant(task.seat.name, task.seat.kind, folder)
    except ArchiveMissing as exc:
        return ArchivesMissing((exc.sha256,))
    except (IsolationError, OSError, ValueError) as exc:
        return CheckRun(-1, f"the check could not start on {address}: {exc}", address)
    argv = gate.check_argv(entrant, task.settings, sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "HEARTS_ARENA_TOKEN"}
    timeout = None if task.budget == float("inf") else task.budget
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent,
        )
        code: int | None = None
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = RELEASE_POLL_SECONDS if end is None else end - time.monotonic()
            try:
                code = proc.wait(timeout=max(0.0, min(RELEASE_POLL_SECONDS, left)))
                break
            except subprocess.TimeoutExpired:
                if (end is not None and time.monotonic() >= end) or _released(worker, key):
                    break
        if code is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        out.seek(0)
        text = out.read(4 * gate.OUTPUT_CAP).decode("utf-8", errors="replace")
    return CheckRun(code, text, address)


class AdmissionPlugin(WorkerPlugin):
    """The join check on every worker (see the module docstring): sets
    :attr:`problem` (``None``: admitted) and :attr:`checked`."""

    name = PLUGIN_NAME

    def __init__(self, expected: Expected) -> None:
        self.expected = expected
        self.problem: str | None = None
        self.checked = False

    async def setup(self, worker: Any) -> None:
        """Run the check in a thread of the worker; a failing worker gives up
        its ``table`` resource; either way it reports on :data:`TOPIC`."""
        resources = dict(worker.state.total_resources)
        loop = asyncio.get_running_loop()
        problem = await loop.run_in_executor(
            None,
            lambda: workers.admission_problem(
                self.expected, workers.arena_version(), workers.package_digest(), resources
            ),
        )
        self.problem = problem
        self.checked = True
        if problem is not None:
            await worker.set_resources(**{TABLE_RESOURCE: 0})
        worker.log_event(
            TOPIC, {"address": worker.address, "name": str(worker.name), "problem": problem}
        )


# -- the server's side ---------------------------------------------------------------


def cluster_tables(info: Mapping[str, Any], retired: Collection[str] = ()) -> int:
    """The tables a cluster plays at once: the sum of its workers' ``table``
    resources (:data:`arena.server.workers.TABLE_RESOURCE`; a refused worker
    has set its own to 0) in ``info`` (``Client.scheduler_info()``), the
    workers in ``retired`` left out."""
    total = 0.0
    for address, worker in dict(info.get("workers", {})).items():
        if address not in retired:
            total += float(dict(worker.get("resources", {})).get(TABLE_RESOURCE, 0))
    return int(total)


#: Called in the loop with a worker's report: ``(address, name, status, reason)``.
WorkerReport = Callable[[str, str, str, str | None], Awaitable[None]]


class DaskTables:
    """Tables on a Dask cluster; see the module docstring. Made with
    :meth:`start` outside the Trio loop.

    Args:
        client: the connected client.
        cluster: the local cluster it started, or ``None``.
        options: how bot processes are started on the workers.
        task: the function each table task runs (default
            :func:`play_table_task`; tests give a wrapper).
        check_fn: the function each check task runs (default :func:`check_task`).
        log: the runner's log (``log(event, **fields)``): each table's worker
            and the archives it fetched (``table_worker``), or ``None``.
        on_capacity: called with the cluster's capacity in tables
            (:func:`cluster_tables`) at the start, as workers join and after
            each table, or ``None``.
    """

    kind = "dask"

    def __init__(
        self,
        client: Client,
        cluster: LocalCluster | None,
        options: LaunchOptions,
        task: Callable[..., TableOutcome] | None = None,
        check_fn: Callable[..., CheckRun] | None = None,
        log: Callable[..., None] | None = None,
        on_capacity: Callable[[int], None] | None = None,
    ) -> None:
        self.client = client
        self.on_capacity = on_capacity
        self.cluster = cluster
        self.options = options
        self.task = task or play_table_task
        self.check_fn = check_fn or check_task
        self.expected = Expected(workers.arena_version(), workers.package_digest(), options)
        self._archives: dict[str, bytes] = {}  # archive SHA-256 -> its bytes
        self._seat_sha: dict[tuple[str, str], str] = {}  # (kind, submission SHA) -> archive SHA
        self._published: set[str] = set()  # archive SHA-256s put in the scheduler's metadata
        self.log = log
        #: Each archive fetched by a worker: ``(worker address, archive SHA-256)``
        #: -> times (once per worker, unless its cache was emptied).
        self.fetches: collections.Counter[tuple[str, str]] = collections.Counter()
        self._token = secrets.token_hex(4)
        self._reports: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._retired: set[str] = set()
        self.client.subscribe_topic(TOPIC, lambda event: self._reports.put(event[1]))
        try:
            self.client.register_plugin(AdmissionPlugin(self.expected), name=PLUGIN_NAME)
        except Exception as exc:  # a worker's setup failed: it reported on the topic too
            _log.debug("admission plugin: %s", exc)

    @classmethod
    def start(
        cls,
        options: LaunchOptions,
        scheduler: str | None = None,
        security: Security | None = None,
        n_workers: int | None = None,
        task: Callable[..., TableOutcome] | None = None,
        log: Callable[..., None] | None = None,
        on_capacity: Callable[[int], None] | None = None,
    ) -> DaskTables:
        """Connect to ``scheduler`` (``tls://HOST:PORT``, with ``security``:
        :func:`arena.server.workers.runner_security`), or start a local
        cluster of ``n_workers`` worker processes (default: one per core),
        one thread and ``table=1`` each, TLS with a throw-away authority,
        dashboard off and no HTTP server listening (:data:`LOCAL_HTTP_OFF`),
        with :func:`scheduler_config` and
        :data:`arena.tournament.dask_executor.LOCAL_CLUSTER_CONFIG`. Blocking: call it
        outside the loop.

        Raises:
            arena.tournament.work.ExecutorUnavailable: the scheduler cannot be
                reached, or no worker joined within :data:`CONNECT_TIMEOUT`.
        """
        from arena.tournament.work import ExecutorUnavailable

        cluster = None
        try:
            if scheduler is None:
                with dask.config.set(
                    {**scheduler_config(), **LOCAL_HTTP_OFF, **LOCAL_CLUSTER_CONFIG}
                ):
                    cluster = LocalCluster(
                        security=Security.temporary(),
                        n_workers=n_workers or os.cpu_count() or 1,
                        threads_per_worker=1,
                        processes=True,
                        resources={TABLE_RESOURCE: 1},
                        dashboard_address=None,
                        silence_logs=logging.ERROR,
                    )
                cluster.sync(_stop_http, cluster.scheduler)
                client = Client(cluster)
                client.register_plugin(HttpOffPlugin(), name=HTTP_OFF_PLUGIN)
            else:
                client = Client(scheduler, security=security, timeout=CONNECT_TIMEOUT)
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            if cluster is not None:
                cluster.close()
            where = scheduler or "a local cluster"
            raise ExecutorUnavailable(f"cannot start Dask on {where}: {exc}") from None
        player = cls(client, cluster, options, task, log=log, on_capacity=on_capacity)
        player.follow_capacity()
        return player

    def follow_capacity(self) -> None:
        """Hand the cluster's capacity (:func:`cluster_tables`, the retired
        workers left out) to ``on_capacity`` (blocking; nothing without it or
        when the scheduler cannot be asked)."""
        if self.on_capacity is None:
            return
        try:
            info = self.client.scheduler_info()
        except Exception as exc:  # the scheduler away for now: the last count holds
            _log.debug("capacity: %s", exc)
            return
        self.on_capacity(cluster_tables(info, self._retired))

    # -- archives

    def _archive_of(self, seat: SeatSource) -> tuple[str, bytes | None]:
        """The seat's archive SHA-256 and bytes, made once (blocking)."""
        if seat.house is not None:
            return "", None
        known = self._seat_sha.get((seat.kind, seat.sha256))
        if known is not None and known in self._archives:
            return known, self._archives[known]
        data = seat_archive(seat)
        sha = hashlib.sha256(data).hexdigest()
        self._seat_sha[(seat.kind, seat.sha256)] = sha
        self._archives[sha] = data
        return sha, data

    async def prepare(
        self, seats: Sequence[SeatSource]
    ) -> tuple[tuple[SeatSource, ...], list[tuple[str, bytes | None]]]:
        """See :meth:`arena.server.tables.TablePlayer.prepare`: each
        submission's archive made once (kept while the runner runs).

        Raises:
            TableVoid: a stored submission cannot be read.
        """

        def make() -> list[tuple[str, bytes | None]]:
            return [self._archive_of(s) for s in seats]

        try:
            made = await trio.to_thread.run_sync(make)
        except OSError as exc:
            raise TableVoid(f"a submission's files cannot be read: {exc}") from None
        return tuple(seats), made

    async def play(
        self,
        table: store.TableRow,
        prepared: tuple[tuple[SeatSource, ...], list[tuple[str, bytes | None]]],
        specs: Sequence[GameSpec],
        settings: TournamentSettings,
        on_record: RecordSink,
    ) -> str | None:
        """See :meth:`arena.server.tables.TablePlayer.play`: one task on the
        cluster; its records handed over when it is done.

        Raises:
            TableVoid: lost with a worker more than :data:`ALLOWED_FAILURES`
                times (the four submissions named), or no sandbox there.
        """
        seats, made = prepared
        names = ", ".join(seat.name for seat in seats)
        outcome = await self._send(table, seats, made, specs, settings)
        if self.on_capacity is not None:  # a worker may have died meanwhile
            await trio.to_thread.run_sync(self.follow_capacity)
        if isinstance(outcome, str):
            raise TableVoid(f"{outcome} (its submissions: {names})")
        assert isinstance(outcome, TableOutcome)
        if outcome.void is not None:
            raise TableVoid(outcome.void)
        for record in outcome.records:
            on_record(record)
        return outcome.worker

    async def _send(
        self,
        table: store.TableRow,
        seats: tuple[SeatSource, ...],
        made: list[tuple[str, bytes | None]],
        specs: Sequence[GameSpec],
        settings: TournamentSettings,
    ) -> TableOutcome | str:
        """Submit the table's task and wait for it (its done-callback wakes
        the loop); its outcome, or the reason it was lost."""
        task = TableTask(
            table.numbering,
            table.number,
            seats,
            tuple(sha for sha, _ in made),
            tuple(specs),
            settings.without_key(),
            self.options,
            self.expected,
        )
        key = f"hearts-{table.numbering}-{table.number}-a{table.attempt}-{self._token}"
        priority = PRIORITIES.get(table.numbering, 0)
        outcome: TableOutcome | str = await self._run_task(
            self.task, task, task.archives, key, priority
        )
        if isinstance(outcome, TableOutcome):
            for sha in outcome.fetched:
                self.fetches[(outcome.worker, sha)] += 1
            if self.log is not None:
                self.log(
                    "table_worker",
                    numbering=table.numbering,
                    number=table.number,
                    worker=outcome.worker,
                    fetched=list(outcome.fetched),
                )
        return outcome

    def _publish(self, shas: Sequence[str], again: bool = False) -> None:
        """Put each archive in the scheduler's metadata once (``again``: even
        if put before: a scheduler started again lost it). Blocking."""
        for sha in dict.fromkeys(shas):
            if sha and (again or sha not in self._published):
                self.client.set_metadata([ARCHIVE_METADATA, sha], self._archives[sha])
                self._published.add(sha)

    async def _run_task(
        self,
        fn: Callable[..., Any],
        task: TableTask | CheckTask,
        shas: Sequence[str],
        key: str,
        priority: int,
    ) -> Any:
        """Publish the archives ``shas`` (:meth:`_publish`), submit ``fn(task)``
        (one unit of ``table``, no retries of Dask's beyond its reruns after a
        worker died) and wait for it: its result, or the reason it was lost
        (a string). A result :class:`ArchivesMissing` has the archives put
        back and the task sent once more."""
        again = False
        for _ in range(2):
            await trio.to_thread.run_sync(functools.partial(self._publish, shas, again))
            name = f"{key}-{secrets.token_hex(3)}"

            def submit(name: str = name) -> Future[Any]:
                return self.client.submit(
                    fn,
                    task,
                    key=name,
                    resources={TABLE_RESOURCE: 1},
                    priority=priority,
                    pure=False,
                    retries=0,
                )

            fut = await trio.to_thread.run_sync(submit)
            outcome = await self._wait(fut)
            if not isinstance(outcome, ArchivesMissing):
                return outcome
            _log.warning("archives %s missing on the scheduler: put back", outcome.sha256s)
            again = True
        return "its archives could not be kept on the scheduler"

    async def _wait(self, fut: Future[Any]) -> Any:
        """Wait for ``fut`` (its done-callback wakes the loop): its result, or
        the reason it was lost (a string); cancelled with the caller."""
        done = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def arrived(_: Any) -> None:  # in the client's thread
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        fut.add_done_callback(arrived)
        try:
            while not done.is_set():
                with trio.move_on_after(POLL_SECONDS):
                    await done.wait()
                if fut.done():
                    break
            return await trio.to_thread.run_sync(self._result, fut)
        except BaseException:
            with trio.CancelScope(shield=True), contextlib.suppress(Exception):
                await trio.to_thread.run_sync(fut.cancel)
            raise

    @staticmethod
    def _result(fut: Future[Any]) -> Any:
        """The task's outcome, or why it was lost (a string; blocking)."""
        try:
            result = fut.result()
        except Exception as exc:
            if type(exc).__name__ == "KilledWorker":
                return f"lost with a Dask worker {ALLOWED_FAILURES + 1} times"
            return f"the cluster could not play it: {type(exc).__name__}: {str(exc)[:200]}"
        return result

    # -- checks

    async def check(
        self, seat: SeatSource, settings: CompetitionSettings, budget: float
    ) -> CheckRun | None:
        """See :meth:`arena.server.tables.TablePlayer.check`: one task
        (:func:`check_task`, one unit of ``table``, before every table), the
        submission's archive put on the scheduler for the worker to fetch
        once; a check lost with its workers, or whose
        files cannot be read, is the server's (exit code -1, run again once
        by the runner)."""
        try:
            sha, data = await trio.to_thread.run_sync(self._archive_of, seat)
        except OSError as exc:
            return CheckRun(-1, f"the submission's files cannot be read: {exc}", "")
        assert data is not None
        task = CheckTask(seat, sha, settings, budget, self.expected)
        key = f"hearts-check-{seat.name}-{self._token}"
        outcome = await self._run_task(self.check_fn, task, [sha], key, PRIORITY_VALIDATION + 1)
        if isinstance(outcome, str):
            return CheckRun(-1, f"the cluster could not run the check: {outcome}", "")
        assert isinstance(outcome, CheckRun)
        return outcome

    # -- workers

    async def flag(self, worker: str, reason: str) -> None:
        """See :meth:`arena.server.tables.TablePlayer.flag`: retire ``worker``."""
        await self._retire(worker)

    async def _retire(self, address: str) -> None:
        if address in self._retired:
            return
        self._retired.add(address)
        with contextlib.suppress(Exception):
            await trio.to_thread.run_sync(
                lambda: self.client.retire_workers(workers=[address], close_workers=True)
            )

    async def watch(self, report: WorkerReport) -> None:
        """Take the join check's reports as workers join (for ever): each
        admitted or refused worker to ``report``; a refused one retired."""
        while True:
            event = await trio.to_thread.run_sync(self._next_report, abandon_on_cancel=True)
            if not event:
                continue
            address = str(event.get("address", ""))
            name = str(event.get("name", ""))
            problem = event.get("problem")
            if problem is None:
                await report(address, name, "admitted", None)
            else:
                await report(address, name, "refused", str(problem))
                await self._retire(address)
            await trio.to_thread.run_sync(self.follow_capacity)

    def _next_report(self) -> dict[str, Any]:
        return self._reports.get()

    async def aclose(self) -> None:
        """Close the client and the local cluster it started (in a thread)."""
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Close the client and the local cluster (blocking; idempotent)."""
        self._reports.put({})  # the watcher's thread, if abandoned, ends
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()
            self.cluster = None
