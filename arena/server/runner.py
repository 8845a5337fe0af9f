"""The server's runner: one Trio program that holds the key, runs each
submission's check, chooses and plays validation and ladder tables as tasks
of its loop, and writes every result through one database-writer task.

Structure (:class:`Runner`):

* a **scheduler** that fills ``slots`` (tables at once: the runner's cores)
  with validation tables first (a new bot's first games soon), then ladder
  tables as far as the lag allows (:mod:`arena.server.ladder`);
* a **gate** task that checks queued submissions one at a time (``check``
  sealed, in a process of its own: :mod:`arena.server.gate`), each within its
  time budget, run once more if the failure was the server's;
* the scheduler's first step each round gives back the launcher's private
  copy (and group) of every submission that no longer plays, once no chosen
  or playing table seats it (:meth:`Runner._release_retired`);
* one task per table, playing its four games through :attr:`Runner.tables`
  (:mod:`arena.server.tables`: in this loop, or one Dask task per table);
  each record is re-checked (:mod:`arena.server.recheck`) as it comes and
  kept; at the table's end its records go to a memory channel;
* one **writer** task that reads the channel and writes, in one transaction
  per table: its four game records, its state (done or void), the gate step
  it decided, the fold as far as it reaches (ratings per submission, in table
  order, void tables skipped), ranked games, fault runs and retirements. (A
  table's games are stored at its end, not one by one as they finish: a
  table stopped in play is played again from scratch, so a game stored
  before its end was never kept, and each game's own transaction was the
  largest part of the runner's own CPU, ``benchmarks/server_load.py``.)

At start (:meth:`Runner.recover`) it removes what a killed runner left (the
control groups recorded in ``runner/``, every bot process carrying the last
run id, their temporary folders and copies) and puts each table that was
playing back to ``chosen``: it is played again from scratch under the same
deal. A table is void (never rated, never charged) when its games could not
be played (a sandbox that did not start, the server's error), when a house
bot faults at a ladder table, or when it was stopped more than
:data:`MAX_TABLE_ATTEMPTS` times.

The log is one JSON object a line (stderr by default); text from bots and
participants passes :func:`arena.protocol.codec.clean_text`; tokens are never
logged.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import trio
from sqlalchemy import Connection, bindparam, select, update

from arena.core.keys import MasterKey
from arena.game.feed import QUEUE_SIZE, LiveFeed
from arena.protocol.codec import clean_text
from arena.protocol.records import GameRecordJSON
from arena.sandbox import cgroups, seal
from arena.sandbox.cores import CoreGate
from arena.sandbox.entrants import remove_tmpdirs_of_run
from arena.sandbox.isolation import IsolationError, kill_all
from arena.sandbox.launcher import RUN_VARIABLE, Launcher, LaunchOptions
from arena.server import (
    actions,
    classes,
    db,
    deadline,
    downloads,
    export,
    gate,
    ladder,
    recheck,
    store,
    tables,
    workers,
)
from arena.server.folder import (
    Competition,
    CompetitionSettings,
    FolderError,
    check_key,
    open_folder,
    submission_dir,
)
from arena.server.rating import GAMES_TO_SETTLE, PRIOR
from arena.server.runlock import RunnerLock, RunnerLockLost, hold_runner_lock
from arena.tournament.runner import DealLocks, TournamentSettings

#: Plays of one table at most (a restart replays it; a third stop voids it).
MAX_TABLE_ATTEMPTS: Final = 3
#: Seconds the scheduler and the gate first sleep when nothing woke them (new
#: submissions and organiser actions arrive from the web process and the
#: command line through the database, so they are polled for).
POLL_SECONDS: Final = 1.0
#: The longest sleep. The scheduler wakes at its own events (a table's end,
#: a check's end); between them it looks at the database for the others'
#: changes (an organiser's action, a participant suspended from the command
#: line, the close, a deadline passed) after a sleep that doubles from
#: :data:`POLL_SECONDS` up to this with each round that found none, and
#: starts again from :data:`POLL_SECONDS` after a round that applied an
#: action or released a copy. The gate likewise, started again by a queued
#: submission. So an idle server reads its database a few times in this long,
#: and a new submission's check or an action starts within about this long.
POLL_MAX_SECONDS: Final = 4.0
#: Seconds between two looks at the runner lock (:meth:`arena.server.runlock.RunnerLock.lost`):
#: a runner whose lock went stops within about this long, before a second
#: runner started meanwhile has played much beside it.
LOCK_CHECK_SECONDS: Final = 5.0
#: The runner's own state file in ``runner/``: the last run id.
STATE_FILE: Final = "runner.json"

PR_SET_PDEATHSIG: Final = 1


def _log_line(out: TextIO, event: str, fields: dict[str, Any]) -> None:
    entry = {"t": round(time.time(), 3), "event": event, **fields}
    out.write(json.dumps(entry, sort_keys=False) + "\n")
    out.flush()


@dataclass
class RunnerConfig:
    """How a runner runs (none of it changes which tables are chosen).

    Attributes:
        slots: tables played at once (``--cores``; the ladder's lag, not this,
            decides what each table is chosen from).
        sandbox: seal bots: ``True`` (required; the server refuses to start
            where bots cannot be sealed) or ``None`` (where possible: tests on
            machines without bubblewrap).
        ladder_tables: stop choosing ladder tables at this number (tests and
            benchmarks), ``None`` for a server that runs on.
        exit_when_idle: return once nothing is queued, checked, validated or
            playing and no ladder table is left to choose.
        check_python: the interpreter of the check process.
        log: where the JSON log lines go.
        cores: core tokens for bots (0: none).
        live: the bounded queue (``multiprocessing`` ``Queue(QUEUE_SIZE)``,
            :mod:`arena.game.feed`) the web process reads the public states
            of the tables in play from, or ``None``.
        executor: where tables are played: ``"local"`` (in this loop) or
            ``"dask"`` (:mod:`arena.server.dask_tables`).
        scheduler: with ``"dask"``, the organiser's scheduler
            (``tls://HOST:PORT``), or ``None`` for a local cluster.
        workers: a local cluster's worker processes (``None``: one per core).
        dask_task: the function each Dask table task runs (``None``: the
            real one, :func:`arena.server.dask_tables.play_table_task`; tests
            give a wrapper that kills or tampers).
        slots_from_cluster: with ``"dask"``, ``slots`` follows the cluster's
            capacity (the admitted workers' ``table`` resources, read at the
            start and as workers join or leave) instead of a fixed number.
    """

    slots: int = 1
    sandbox: bool | None = True
    ladder_tables: int | None = None
    exit_when_idle: bool = False
    check_python: str = field(default_factory=lambda: sys.executable)
    log: TextIO = field(default_factory=lambda: sys.stderr)
    cores: int = 0
    live: Any = None
    executor: str = "local"
    scheduler: str | None = None
    workers: int | None = None
    dask_task: Any = None
    slots_from_cluster: bool = False


@dataclass(frozen=True)
class _Look:
    """What a scheduler round reads first (:meth:`Runner._look`)."""

    retired: list[str]
    actions: list[actions.ActionRow]
    refolds: bool
    closed: bool


@dataclass(frozen=True)
class _Finished:
    """A table's end, for the writer."""

    table_id: int
    records: list[GameRecordJSON]
    void_reason: str | None
    #: The table's ``attempt`` this play was (a result of another is a late
    #: duplicate: dropped).
    attempt: int = 0
    #: Where it was played (a Dask worker's address), ``None`` here.
    worker: str | None = None
    #: The re-check's refusal that flags ``worker``, or ``None``.
    flag: str | None = None
    #: Send each game's end state to the live view once stored (a table
    #: played elsewhere, whose games sent no state card by card).
    show: bool = False


class Runner:
    """The competition's runner on an opened folder with its checked key."""

    def __init__(self, comp: Competition, key: MasterKey, config: RunnerConfig) -> None:
        self.comp = comp
        self.key = key
        self.config = config
        self.settings: CompetitionSettings = comp.settings
        self.database = comp.database
        self.deal_locks = DealLocks()
        self.cgroup_run = os.urandom(8).hex()
        self.run_id = os.urandom(8).hex()
        gate_ = CoreGate(config.cores)
        self.options = LaunchOptions(
            limits=self.settings.limits.limits(),
            sandbox=config.sandbox,
            tmp_mb=self.settings.limits.tmp_mb,
            run_id=self.run_id,
            cgroup_run=self.cgroup_run,
            cores=config.cores,
            gate=gate_,
        )
        self.launcher = Launcher(self.options)
        self._launcher_lock = trio.Lock()
        self._wake = trio.Event()
        #: The scheduler's next sleep when nothing wakes it (seconds).
        self._poll = POLL_SECONDS
        self._playing: set[int] = set()  # table ids in flight
        self._send, self._receive = trio.open_memory_channel[_Finished](64)
        self.tournament = TournamentSettings(
            key=key,
            target_score=self.settings.game.target_score,
            hands=self.settings.game.hands,
            referee=self.settings.referee(),
        )
        self.validation_tournament = TournamentSettings(
            key=key, target_score=None, hands=1, referee=self.settings.referee()
        )
        self._watchdog: Any = None
        #: The held runner lock (:func:`start_runner` sets it), watched while running.
        self.lock: RunnerLock | None = None
        self._lock_lost: str | None = None
        self.live = LiveFeed(config.live) if config.live is not None else None
        #: Where tables are played (:mod:`arena.server.tables`); a Dask
        #: player replaces it in :func:`start_runner` (made outside the loop).
        self.tables: tables.TablePlayer = tables.InProcessTables(
            self.launcher, self._launcher_lock, self.deal_locks, self.live
        )

    # -- the log ----------------------------------------------------------------

    def log(self, event: str, **fields: Any) -> None:
        """One JSON line: ``{"t", "event", ...fields}`` (strings cleaned)."""
        clean = {k: clean_text(v, 300) if isinstance(v, str) else v for k, v in fields.items()}
        _log_line(self.config.log, event, clean)

    # -- start and clean-up -----------------------------------------------------

    def recover(self) -> dict[str, int]:
        """Remove what a killed runner on this folder left and put its
        unfinished tables back to be played again. Returns counts
        (``killed``, ``folders``, ``tables``)."""
        state_dir = self.comp.paths.runner
        killed = 0
        if not cgroups.recorded_arena_alive(state_dir):
            killed += cgroups.remove_recorded(state_dir)
        folders = 0
        try:
            old = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        old_run = old.get("run_id") if isinstance(old, dict) else None
        if isinstance(old_run, str) and old_run.isalnum():
            killed += kill_all(env=f"{RUN_VARIABLE}={old_run}")
            folders += remove_tmpdirs_of_run(old_run)
        folders += seal.remove_package_copies_of_dead_arenas()
        tables = self.database.run_write(self._reset_unfinished)
        return {"killed": killed, "folders": folders, "tables": tables}

    @staticmethod
    def _reset_unfinished(conn: Connection) -> int:
        now = time.time()
        rows = conn.execute(select(db.tables.c.id).where(db.tables.c.status == "playing")).all()
        for (tid,) in rows:
            store.set_table_status(conn, int(tid), "chosen", now)
        # A check interrupted by the stop runs again (its place is its id).
        conn.execute(
            update(db.submissions).where(db.submissions.c.status == "check").values(status="queued")
        )
        return len(rows)

    def _record_state(self) -> None:
        state_dir = self.comp.paths.runner
        tmp = state_dir / f"{STATE_FILE}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            json.dump({"run_id": self.run_id, "cgroup_run": self.cgroup_run, "pid": os.getpid()}, f)
        os.replace(tmp, state_dir / STATE_FILE)
        groups = self.options.run_groups
        if groups is not None:
            cgroups.record_run(state_dir, groups.dirs())
            with contextlib.suppress(OSError):
                self._watchdog = cgroups.start_watchdog(groups.dirs())

    def _end_bots(self) -> None:
        groups = self.options.run_groups
        if groups is not None:
            cgroups.remove_run_dirs(groups.dirs())
            with contextlib.suppress(OSError):
                (self.comp.paths.runner / cgroups.RECORD_FILE).unlink()
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait()
        kill_all(env=f"{RUN_VARIABLE}={self.run_id}")
        remove_tmpdirs_of_run(self.run_id)

    def weaker(self) -> list[str]:
        """What is weaker than the production mode (root) on this start, one
        sentence each (the start-up line's ``weaker``; README, "Running
        untrusted bots", and docs/competition-server.md say the same); empty
        as root with control groups."""
        out = []
        if os.geteuid() != 0:
            out += [
                "not root: every bot runs as the server's own user, not a uid of its own, so "
                "the process limit is not applied and a bot's strays are found only by a "
                "token in their environment",
                "not root: the web process runs as the same user as the runner and could "
                "read the key file (--user is not used)",
            ]
        if self.options.run_groups is None:
            out.append(
                "no control groups: a bot's memory and processes are bounded per process "
                "only, and it cannot be frozen or killed as a whole"
            )
        return out

    def check_sealing(self) -> None:
        """Resolve the seal now.

        Raises:
            FolderError: bots cannot be sealed here and the seal is required.
        """
        try:
            self.launcher.check([])
        except IsolationError as exc:
            raise FolderError(f"the server cannot start: {exc}") from None

    # -- the program ------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled (or idle, with ``exit_when_idle``).

        Raises:
            RunnerLockLost: the runner lock went while it ran (the tables in
                flight are stopped, as on Ctrl-C; the next start replays them).
        """
        counts = await trio.to_thread.run_sync(self.recover)
        self.log(
            "start",
            sealed=self.launcher.sealed,
            executor=self.tables.kind,
            slots=self.config.slots,
            uid=os.geteuid(),
            weaker=self.weaker(),
            **counts,
        )
        self._record_state()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer)
                nursery.start_soon(self._gate)
                nursery.start_soon(self.tables.watch, self._worker_report)
                if self.live is not None and self.tables.kind != "in-process":
                    # Remote tables' end states (in process each table's
                    # tournament runner flushes the feed).
                    nursery.start_soon(self.live.run)
                if self.lock is not None:
                    nursery.start_soon(self._watch_lock, self.lock, nursery.cancel_scope)
                await self._schedule(nursery)
                nursery.cancel_scope.cancel()
            if self._lock_lost is not None:
                raise RunnerLockLost(
                    f"{self._lock_lost}: the runner stopped, so that it never plays beside "
                    "a second runner (start it again)"
                )
        finally:
            with trio.CancelScope(shield=True):
                await self.tables.aclose()
            self.launcher.close()
            self._end_bots()
            self.log("stop")

    async def _watch_lock(self, lock: RunnerLock, scope: trio.CancelScope) -> None:
        """Look at ``lock`` every :data:`LOCK_CHECK_SECONDS`; once it went,
        log ``runner_lock_lost`` and stop the runner (``scope``)."""
        while True:
            await trio.sleep(LOCK_CHECK_SECONDS)
            reason = await trio.to_thread.run_sync(lock.lost)
            if reason is not None:
                self._lock_lost = reason
                self.log("runner_lock_lost", reason=reason)
                scope.cancel()
                return

    def _poke(self) -> None:
        self._wake.set()

    async def _sleep(self, changed: bool) -> None:
        """The scheduler's wait between two rounds: until :meth:`_poke` or
        :attr:`_poll` seconds. ``changed``: the round found another's change
        (it applied an action or released a copy): the sleep starts again
        from :data:`POLL_SECONDS`; a sleep that ends unwoken doubles the
        next, up to :data:`POLL_MAX_SECONDS`; one woken leaves it."""
        if changed:
            self._poll = POLL_SECONDS
        with trio.move_on_after(self._poll) as scope:
            await self._wake.wait()
        self._wake = trio.Event()
        if scope.cancelled_caught:
            self._poll = min(2 * self._poll, POLL_MAX_SECONDS)

    # -- the gate: checks -------------------------------------------------------

    async def _gate(self) -> None:
        """Check queued submissions one at a time, oldest first; with none
        queued, look again after a sleep that doubles from :data:`POLL_SECONDS`
        to :data:`POLL_MAX_SECONDS` (a submission is checked within about
        that long of its upload)."""
        wait = POLL_SECONDS
        while True:
            queued = await self.database.read_async(store.submissions_in, "queued")
            if not queued:
                await trio.sleep(wait)
                wait = min(2 * wait, POLL_MAX_SECONDS)
                continue
            wait = POLL_SECONDS
            await self._check(queued[0])
            self._poke()

    async def _check(self, sub: store.SubmissionRow) -> None:
        folder_ = submission_dir(self.comp.paths, sub.sha256)
        seat = tables.SeatSource(sub.label, None, sub.kind, sub.sha256, folder_)
        try:
            entrant_text = gate.submission_entrant(sub.label, sub.kind, folder_)
        except FolderError as exc:
            entrant_text = ""
            result = gate.StepResult(False, str(exc))
        for run in range(gate.STEP_RUNS):
            await self.database.write_async(store.start_step, sub.id, "check", time.time())
            self.log("check", submission=sub.id, run=run + 1)
            if not entrant_text:
                break
            # Where ranked tables run: a Dask worker, or this process.
            budget = self.settings.gate.check_seconds or math.inf
            remote = await self.tables.check(seat, self.settings, budget)
            if remote is not None:
                code, output = remote.code, remote.output
                self.log("check_worker", submission=sub.id, worker=remote.worker)
            else:
                argv = gate.check_argv(entrant_text, self.settings, self.config.check_python)
                code, output = await self._run_check(argv)
            result = gate.judge_check(code, output)
            if not result.server_fault:
                break
            self.log("check_server_fault", submission=sub.id, reason=result.reason)
        if result.server_fault:
            result = gate.StepResult(
                False,
                f"the server could not check it twice ({result.reason}); submit it again",
                True,
                result.output,
            )
        await self.database.write_async(
            store.record_step,
            sub.id,
            "check",
            result.passed,
            time.time(),
            result.reason,
            result.output,
        )
        self.log("checked", submission=sub.id, passed=result.passed, reason=result.reason)

    async def _run_check(self, argv: list[str]) -> tuple[int | None, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("HEARTS_ARENA_TOKEN",)}
        budget = self.settings.gate.check_seconds or math.inf
        out = bytearray()
        with trio.move_on_after(budget) as scope:
            proc = await trio.lowlevel.open_process(
                argv,
                stdin=None,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
            )
            try:
                assert proc.stdout is not None
                async with proc.stdout:
                    while chunk := await proc.stdout.receive_some(65536):
                        if len(out) < 4 * gate.OUTPUT_CAP:
                            out += chunk
                code = await proc.wait()
            finally:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    with trio.CancelScope(shield=True), trio.move_on_after(10):
                        await proc.wait()
                    if proc.returncode is None:
                        proc.kill()
                        with trio.CancelScope(shield=True):
                            await proc.wait()
        text = out.decode("utf-8", errors="replace")
        return (None if scope.cancelled_caught else code), text

    # -- the scheduler -----------------------------------------------------------

    async def _schedule(self, nursery: trio.Nursery) -> None:
        while True:
            # One read transaction for what the round looks at first (the
            # held copies no longer playing, the pending actions, the close),
            # not one each.
            held = [n for n in self.launcher.copies() if store.submission_of(n) is not None]
            look = await self.database.read_async(self._look, held)
            released = await self._release_retired(look.retired)
            applied = await actions.apply_found(
                self.database, look.actions, look.refolds, self._fold, self._playing, self.log
            )
            started = await self._start_tables(nursery, look.closed)
            # Once idle, one more look: what the idle check read may be newer
            # than what the choosers read (the writer stored a table's end in
            # between, and that end can open the final or the gauntlet).
            if (
                not started
                and self.config.exit_when_idle
                and await self._idle()
                and not await self._start_tables(nursery)
            ):
                return
            await self._sleep(bool(released or applied))

    # -- letting go of retired submissions ---------------------------------------

    @staticmethod
    def _retired(conn: Connection, held: Sequence[str]) -> list[str]:
        """Of the submission labels ``held`` (the launcher's copies), those that
        no longer play: the submission is neither waiting for its validation
        nor ranked with an active participant (superseded, failed, retired
        after its faults or with its revoked participant, or its participant
        suspended), and no chosen or playing table seats it (a table chosen
        with it plays as chosen)."""
        seated = store.seated_in_play(conn)
        ids = [store.submission_of(n) for n in held if n not in seated]
        # One query for every held submission (this runs at each scheduler
        # round: one query per submission cost most of the runner's own CPU,
        # benchmarks/server_load.py).
        rows = conn.execute(_HELD_STATES, {"ids": [i for i in ids if i is not None]}).all()
        states = {int(r[0]): (r[1], r[2]) for r in rows}
        out = []
        for name in held:
            sid = store.submission_of(name)
            if sid is None or name in seated:
                continue
            sub_status, participant_status = states.get(sid, (None, None))
            if sub_status == "validation":
                continue
            if sub_status == "ranked" and participant_status == "active":
                continue
            out.append(name)
        return out

    def _look(self, conn: Connection, held: Sequence[str]) -> _Look:
        """The scheduler round's first read: of the submission labels
        ``held`` (the launcher's copies), those that no longer play
        (:meth:`_retired`), the pending actions and whether a refold waits
        (:func:`arena.server.actions.look`), and whether the competition is
        closed."""
        found, waiting = actions.look(conn)
        return _Look(
            retired=self._retired(conn, held) if held else [],
            actions=found,
            refolds=waiting,
            closed=export.closed_at(conn) is not None,
        )

    async def _release_retired(self, names: Sequence[str]) -> int:
        """Give back the launcher's copy of each submission of ``names``,
        which no longer play (:meth:`_retired`, in the round's :meth:`_look`;
        :meth:`arena.sandbox.launcher.Launcher.release`): the scheduler's first
        step, so a copy goes before the next table is chosen. A submission
        that plays again (a suspended participant made active) gets a fresh
        copy from the check before its next table. Logs ``released`` with the
        submission and what the launcher did; returns the copies released."""
        if not names:
            return 0
        async with self._launcher_lock:
            for name in names:
                how = await trio.to_thread.run_sync(self.launcher.release, name)
                self.log("released", submission=store.submission_of(name), copy=how)
        return len(names)

    async def _idle(self) -> bool:
        if self._playing:
            return False
        if await self.database.read_async(export.closed_at) is not None:
            return True  # closed: no table will be chosen again

        def busy(conn: Connection) -> bool:
            for status in ("queued", "check", "validation"):
                if store.submissions_in(conn, status):
                    return True
            return bool(store.tables_in(conn, "ladder", ["chosen", "playing"]))

        if await self.database.read_async(busy):
            return False
        limit = self.config.ladder_tables
        if limit is None:
            return False
        field = await self.database.read_async(self._field)
        nxt = await self.database.read_async(store.next_number, "ladder")
        closed = deadline.ladder_closed(self.settings, time.time())  # issue 30
        return nxt >= limit or field is None or closed

    async def _start_tables(self, nursery: trio.Nursery, closed: bool | None = None) -> int:
        """Fill the free slots (:meth:`_next_table`), then the classes'
        tables (:func:`arena.server.classes.start_tables`) unless the
        competition is closed (``closed``: as the round's read found it,
        ``None`` to read it when no slot was free). Returns the tables started."""
        started = 0
        # One write transaction for each free slot (none while every slot is
        # taken: nothing could start; the final's start below does not depend
        # on it): a validation or ladder table chosen but not playing (a
        # restart's, a replay) first, then a new validation table, then a new
        # ladder table (:meth:`_next_table`). (A read of each and a write
        # for each chooser, most of them empty, were a large part of the
        # runner's own CPU per round, benchmarks/server_load.py.)
        while len(self._playing) < self.config.slots:
            t, closed = await self.database.write_async(
                self._next_table, frozenset(self._playing), time.time()
            )
            if t is None:
                break
            self._launch(nursery, t)
            started += 1
        if closed is None:
            closed = await self.database.read_async(export.closed_at) is not None
        if closed:
            return started  # closed (serve --close): no new table of any numbering
        started += await classes.start_tables(self, nursery)  # final, gauntlet, challenges
        return started

    def _next_table(
        self, conn: Connection, playing: frozenset[int], now: float
    ) -> tuple[store.TableRow | None, bool | None]:
        """``(table, closed)``: the next validation or ladder table to play,
        in this order: one chosen and not in ``playing`` (validation first;
        ``closed`` then ``None``, not read), then, unless the competition is
        closed (``serve --close``: no new table of any numbering; ``closed``
        says), a new validation table (:meth:`_choose_validation`), then a
        new ladder table (:meth:`_choose_ladder`); ``None`` for none."""
        for numbering in ("validation", "ladder"):
            for row in store.tables_in(conn, numbering, ["chosen"]):
                if row.id not in playing:
                    return row, None
        if export.closed_at(conn) is not None:
            return None, True
        return self._choose_validation(conn, now) or self._choose_ladder(conn, now), False

    def _choose_validation(self, conn: Connection, now: float) -> store.TableRow | None:
        waiting = store.submissions_in(conn, "validation")
        live = {t.submission_id for t in store.tables_in(conn, "validation", ["chosen", "playing"])}
        for sub in waiting:
            if sub.id in live:
                continue
            number = store.next_number(conn, "validation")
            seating = ladder.validation_seating(sub.label, self.settings.house_labels)
            store.start_step(conn, sub.id, "validation", now)
            return store.add_table(
                conn,
                "validation",
                number,
                f"V{sub.id}",
                seating,
                seating,
                now,
                submission_id=sub.id,
            )
        return None

    def _field(self, conn: Connection) -> list[str] | None:
        # The ranked submissions of active participants, by id, in one query
        # (asked at every scheduler round with a free slot).
        rows = conn.execute(_FIELD).all()
        if not rows:
            return None
        labels = [store.entrant_label(int(r[0])) for r in rows]
        return ladder.field_of(labels, self.settings.house_labels)

    def _choose_ladder(self, conn: Connection, now: float) -> store.TableRow | None:
        if deadline.ladder_closed(self.settings, now):
            return None  # after the deadline: no new ladder table (chosen ones play)
        t = store.next_number(conn, "ladder")
        if self.config.ladder_tables is not None and t >= self.config.ladder_tables:
            return None
        lag = self.settings.ladder.lag
        through = store.rated_through(conn)
        if not ladder.can_choose(t, lag, through):
            return None  # the prefix it is chosen from is not folded yet: wait
        field = self._field(conn)
        if field is None:
            return None
        fp = ladder.fold_point(t, lag)
        fold = store.fold_at(conn, fp)
        if fold is None:
            return None
        sids = {name: sid for name in field if (sid := store.submission_of(name)) is not None}
        # Two statements for the whole field, not two per submission.
        firsts = store.set_joined_tables(conn, list(sids.values()), t)
        joined: dict[str, int] = {name: firsts[sid] for name, sid in sids.items()}
        # Only the tables the chooser looks at (reading every table made each
        # choice grow with the ladder): from fp, and for the focus rule from
        # the first table a submission not yet settled joined at (a settled
        # one's tables are never counted), in three columns.
        first = min(
            (j for n, j in joined.items() if fold.get(n, PRIOR).games < GAMES_TO_SETTLE),
            default=t,
        )
        past = [ladder.PastTable(*r) for r in store.past_ladder_tables(conn, min(first, fp))]
        recent = [p for p in past if p.number >= fp]
        chosen = ladder.choose_ladder_table(t, self.key, lag, field, fold, recent, joined, past)
        return store.add_table(
            conn,
            "ladder",
            t,
            f"L{t}",
            chosen.seating,
            chosen.field,
            now,
            fold_through=chosen.fold_through,
            focus=chosen.focus,
        )

    # -- playing a table ---------------------------------------------------------

    def _budget(self, table: store.TableRow) -> float:
        """The table's time budget in seconds (``math.inf``: none): the gate's
        ``validation_seconds`` or the ladder's ``table_seconds``."""
        if table.numbering == "validation":
            seconds = self.settings.gate.validation_seconds
        else:
            seconds = self.settings.ladder.table_seconds
        return seconds or math.inf

    def _launch(self, nursery: trio.Nursery, table: store.TableRow) -> None:
        self._playing.add(table.id)
        nursery.start_soon(self._play_table, table)

    async def _play_table(self, table: store.TableRow) -> None:
        """Play one table through :attr:`tables` (in process or on Dask), each
        record re-checked (:mod:`arena.server.recheck`) before it goes to the
        writer; its end (done or void) to the writer once."""
        records: list[GameRecordJSON] = []
        void: str | None = None
        worker: str | None = None
        flag: str | None = None
        attempt = table.attempt
        try:
            if table.attempt >= MAX_TABLE_ATTEMPTS:
                void = f"the server stopped it {table.attempt} times"
                return
            seats, unknown = await self.database.write_async(self._start_play, table, time.time())
            attempt += 1
            self.log(
                "table", numbering=table.numbering, number=table.number, seating=list(table.seating)
            )
            try:
                if unknown is not None:
                    raise unknown
                prepared = await self.tables.prepare(seats)
            except FolderError as exc:
                void = f"a sandbox could not start: {exc}"
                return
            except tables.TableVoid as exc:
                void = str(exc)
                return
            settings = (
                self.validation_tournament if table.numbering == "validation" else self.tournament
            )
            specs = tables.table_specs(self.key, self.settings, table)
            refused: list[str] = []

            def on_record(record: GameRecordJSON) -> None:
                problem = recheck.check_record(record, specs, settings.referee.max_tiebreak_hands)
                if problem is not None:
                    refused.append(problem)
                    return
                if refused:
                    return
                records.append(record)  # stored with the table's end (the writer)

            budget = self._budget(table)
            for run in range(gate.STEP_RUNS):
                records.clear()
                try:
                    with trio.move_on_after(budget) as scope:
                        worker = await self.tables.play(table, prepared, specs, settings, on_record)
                except tables.TableVoid as exc:
                    void = str(exc)
                    return
                except Exception as exc:  # the server's failure, never the bots'
                    void = f"the server could not play it: {type(exc).__name__}: {exc}"
                    return
                if refused:
                    records.clear()
                    void = f"its record was refused by the server's re-check: {refused[0]}"
                    flag = refused[0]
                    self.log(
                        "worker_flagged",
                        worker=worker or "this process",
                        numbering=table.numbering,
                        number=table.number,
                        reason=flag,
                    )
                    return
                if not scope.cancelled_caught:
                    break
                records.clear()
                stopped = f"past its time budget of {budget:g} s"
                self.log(
                    "table_stopped",
                    numbering=table.numbering,
                    number=table.number,
                    run=run + 1,
                    reason=stopped,
                )
                if table.numbering == "validation":
                    # Played again once as a new validation table (the gate's rule).
                    void = f"the server stopped it: {stopped}"
                    return
                if run + 1 == gate.STEP_RUNS:
                    void = f"the server stopped it twice: {stopped}"
                    return
                # Once more, from scratch under the same deal (its games deleted).
                now = time.time()
                await self.database.write_async(store.set_table_status, table.id, "chosen", now)
                await self.database.write_async(store.set_table_status, table.id, "playing", now)
                attempt += 1
            if len(records) != ladder.ROTATIONS:
                void = f"the server played {len(records)} of its 4 games"
        finally:
            with trio.CancelScope(shield=True):
                if void is not None or len(records) == ladder.ROTATIONS:
                    # A remote table's games reach the live view when they are
                    # stored (in process they were sent card by card); gauntlet
                    # and challenge tables never (classes.PRIVATE).
                    show = self.tables.kind != "in-process" and (
                        table.numbering not in classes.PRIVATE
                    )
                    await self._send.send(
                        _Finished(table.id, records, void, attempt, worker, flag, show)
                    )
                else:
                    self._playing.discard(table.id)

    def _start_play(
        self, conn: Connection, table: store.TableRow, now: float
    ) -> tuple[list[tables.SeatSource], FolderError | None]:
        """In one write transaction: ``table`` is ``playing`` (one more
        attempt), and its seats' programs (:func:`arena.server.tables.table_seats`),
        or the :class:`FolderError` that found a seat unknown (returned, not
        raised: the attempt is kept, and the table is void)."""
        store.set_table_status(conn, table.id, "playing", now)
        try:
            return tables.table_seats(conn, self.comp.paths, self.settings, table), None
        except FolderError as exc:
            return [], exc

    async def _worker_report(
        self, address: str, name: str, status: str, reason: str | None
    ) -> None:
        """A worker admitted or refused at its join, or flagged by the
        re-check: logged (``worker``) and stored for ``serve --list``."""
        self.log("worker", address=address, name=name, status=status, reason=reason or "")
        await self.database.write_async(
            workers.record_worker, address, name, status, reason, time.time()
        )

    # -- the writer ----------------------------------------------------------------

    async def _writer(self) -> None:
        async for done in self._receive:
            events = await self.database.write_async(self._finish_table, done, time.time())
            if done.flag is not None and done.worker is not None:
                await self._worker_report(done.worker, "", "flagged", done.flag)
                await self.tables.flag(done.worker, done.flag)
            for event, fields in events:
                self.log(event, **fields)
            duplicate = any(event == "duplicate" for event, _ in events)
            if done.show and done.void_reason is None and self.live is not None and not duplicate:
                for record in done.records:
                    self.live.finished(record)
            self._playing.discard(done.table_id)
            self._poke()

    def _finish_table(
        self, conn: Connection, done: _Finished, now: float
    ) -> list[tuple[str, dict[str, Any]]]:
        events: list[tuple[str, dict[str, Any]]] = []
        table = store.table_by_id(conn, done.table_id)
        assert table is not None
        if table.status in ("done", "void") or table.attempt != done.attempt:
            # Accepted once per table: a late duplicate is dropped.
            return [("duplicate", {"numbering": table.numbering, "number": table.number})]
        # The table's games, all at once (none of a play the re-check refused).
        store.replace_games(conn, table.id, done.records)
        if table.numbering in classes.NUMBERINGS:
            events = classes.finish_table(conn, self.settings, table, done, now)
            downloads.keep_table_key(conn, table.id, self.key)  # (only a done table's)
            return events
        if table.numbering == "validation":
            events += self._finish_validation(conn, table, done, now)
        elif done.void_reason is not None:
            store.set_table_status(conn, table.id, "void", now, done.void_reason)
            events.append(("void", {"number": table.number, "reason": done.void_reason}))
        else:
            house = set(self.settings.house_labels)
            fault = next(
                (
                    f"house bot {rec['seats'][s]} faulted"
                    for rec in done.records
                    for s in sorted(ladder.faulted_seats(rec) | {f["seat"] for f in rec["faults"]})
                    if rec["seats"][s] in house
                ),
                None,
            )
            if fault is not None:
                store.set_table_status(conn, table.id, "void", now, fault)
                events.append(("void", {"number": table.number, "reason": fault}))
            else:
                store.set_table_status(conn, table.id, "done", now)
                events.append(("done", {"number": table.number}))
                events += self._charge(conn, done.records)
        downloads.keep_table_key(conn, table.id, self.key)  # a done table's deals open to its seats
        events += self._fold(conn, {table.id: done.records})
        return events

    def _finish_validation(
        self, conn: Connection, table: store.TableRow, done: _Finished, now: float
    ) -> list[tuple[str, dict[str, Any]]]:
        assert table.submission_id is not None
        sid = table.submission_id
        label = store.entrant_label(sid)
        if done.void_reason is not None:
            result = gate.StepResult(False, done.void_reason, True)
        else:
            result = gate.judge_validation(done.records, label)
        if result.server_fault:
            store.set_table_status(conn, table.id, "void", now, result.reason)
            sub = store.submission(conn, sid)
            assert sub is not None
            if sub.attempts < gate.STEP_RUNS:  # played again once, as a new table
                return [("void", {"validation": table.number, "reason": result.reason})]
            store.record_step(
                conn,
                sid,
                "validation",
                False,
                now,
                f"the server could not validate it twice ({result.reason}); submit it again",
            )
            return [("validated", {"submission": sid, "passed": False, "reason": result.reason})]
        store.set_table_status(conn, table.id, "done", now)
        store.record_step(conn, sid, "validation", result.passed, now, result.reason)
        return [
            ("validated", {"submission": sid, "passed": result.passed, "reason": result.reason})
        ]

    def _charge(
        self, conn: Connection, records: Sequence[GameRecordJSON]
    ) -> list[tuple[str, dict[str, Any]]]:
        events: list[tuple[str, dict[str, Any]]] = []
        seated = {n for rec in records for n in rec["seats"] if store.submission_of(n) is not None}
        # The seated submissions in one query, not one each.
        subs = store.submissions_by_id(conn, [store.submission_of(n) or 0 for n in seated])
        for name in sorted(seated):
            sid = store.submission_of(name)
            assert sid is not None
            sub = subs.get(sid)
            if sub is None:
                continue
            runs = ladder.fault_runs({name: sub.faults_in_row}, records)[name]
            store.add_ranked_games(conn, sid, sum(1 for r in records if name in r["seats"]), runs)
            budget = self.settings.ladder.fault_budget
            if runs >= budget and sub.status == "ranked":
                reason = f"crashed or struck out in {runs} games in a row: left ranked play"
                store.retire_submission(conn, sid, reason)
                events.append(("retired", {"submission": sid, "reason": reason}))
        return events

    def _fold(
        self, conn: Connection, known: Mapping[int, Sequence[GameRecordJSON]] | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """Fold the ladder tables ended since the last fold, in table order.
        ``known``: the records of tables just ended (table id -> records),
        used instead of reading them back."""
        through = store.rated_through(conn)
        ids, numbers, statuses = store.ladder_statuses(conn)
        if numbers != list(range(len(numbers))):
            raise RuntimeError("the ladder's table numbers have a gap")
        reach = ladder.fold_reach(statuses, through)
        if reach == through:
            return []
        fold = store.fold_at(conn, through)
        assert fold is not None
        for t in range(through, reach):
            if statuses[t] == "done":
                mine = (known or {}).get(ids[t])
                records: list[Any] = (
                    sorted(mine, key=lambda r: int(r["rotation"]))
                    if mine is not None and len(mine) == ladder.ROTATIONS
                    else store.table_records(conn, ids[t])
                )
                fold = ladder.fold_tables(fold, [records])
            store.store_fold(conn, t + 1, fold)
        return [("rated", {"through": reach})]


#: The ranked submissions of active participants, by id (built once: asked
#: at every scheduler round with a free slot).
_FIELD: Final = (
    select(db.submissions.c.id)
    .join(db.participants, db.participants.c.id == db.submissions.c.participant_id)
    .where(db.submissions.c.status == "ranked", db.participants.c.status == "active")
    .order_by(db.submissions.c.id)
)


#: The held submissions' states and their participants' (each scheduler round).
_HELD_STATES: Final = (
    select(db.submissions.c.id, db.submissions.c.status, db.participants.c.status)
    .join(db.participants, db.participants.c.id == db.submissions.c.participant_id)
    .where(db.submissions.c.id.in_(bindparam("ids", expanding=True)))
)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    # The check process gets SIGTERM (handled as Ctrl-C: its bots are
    # stopped) when the runner dies, even by SIGKILL.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_runner(root: Path, config: RunnerConfig, password_file: Path | None = None) -> Runner:
    """Open the folder (``password_file``: the PostgreSQL database's, instead
    of the recorded one), take the runner lock (:mod:`arena.server.runlock`:
    one runner per competition), check the key against the stored SHA-256
    and the seal.

    Raises:
        FolderError: one line: not a competition folder, another runner
            running it, another key, no seal.
    """
    comp = open_folder(root, password_file)
    try:
        lock = hold_runner_lock(comp)
        key = check_key(comp.paths, comp.database)
        runner = Runner(comp, key, config)
        runner.lock = lock
        runner.check_sealing()
    except BaseException:
        comp.close()
        raise
    if config.executor == "dask":
        try:
            runner.tables = _dask_tables(runner, config)
        except BaseException:
            comp.close()
            raise
    return runner


def _dask_tables(runner: Runner, config: RunnerConfig) -> tables.TablePlayer:
    """The Dask player (started here, outside the loop).

    Raises:
        FolderError: Dask is not installed or cannot start (one line).
    """
    from arena.tournament.work import ExecutorUnavailable, dask_available

    if not dask_available():
        raise FolderError(
            "--executor dask needs Dask distributed: pip install 'hearts-arena[dask]'"
        )
    from arena.server.dask_tables import DaskTables

    security = workers.runner_security(runner.comp.paths) if config.scheduler is not None else None
    try:
        return DaskTables.start(
            runner.options,
            config.scheduler,
            security,
            config.workers,
            config.dask_task,
            log=runner.log,
            on_capacity=_set_slots(config) if config.slots_from_cluster else None,
        )
    except ExecutorUnavailable as exc:
        raise FolderError(str(exc)) from None


def _set_slots(config: RunnerConfig) -> Callable[[int], None]:
    """The Dask player's hook that sets ``config.slots`` to the cluster's capacity."""

    def set_slots(tables: int) -> None:
        config.slots = max(1, tables)

    return set_slots


def serve_forever(
    root: Path,
    listen: str,
    user: str | None,
    cores: int | None,
    password_file: Path | None = None,
    hosting: Any = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> int:
    """``hearts-arena serve DIR``: run the runner (and the web process) until
    stopped; returns the exit code. ``hosting``: the web process's TLS,
    proxy and public name (:class:`arena.server.webproc.Hosting`);
    ``executor``/``scheduler``: where tables are played (:class:`RunnerConfig`).

    Raises:
        FolderError: the server cannot start (one line).
    """
    if os.geteuid() == 0 and user is None:
        raise FolderError("run as root, serve needs --user: the web process's unprivileged user")
    slots = max(1, (cores if cores is not None else max(1, (os.cpu_count() or 2) - 1)))
    import multiprocessing

    live = multiprocessing.get_context("spawn").Queue(QUEUE_SIZE)
    from_cluster = False
    if executor == "dask" and cores is None:
        # Tables on the cluster: as many at once as a local cluster has
        # workers (one per core); on the organiser's, as its admitted
        # workers declare (their ``table`` resources, followed as they join).
        slots = max(1, os.cpu_count() or 1)
        from_cluster = scheduler is not None
    config = RunnerConfig(
        slots=slots,
        cores=slots,
        live=live,
        executor=executor,
        scheduler=scheduler,
        slots_from_cluster=from_cluster,
    )
    runner = start_runner(root, config, password_file)
    # The web process (arena/server/webproc.py, the web helper's) is spawned
    # here: spawn_web(runner.comp.paths, listen, user) once it exists.
    import importlib

    try:
        webproc: Any = importlib.import_module("arena.server.webproc")
    except ImportError:
        webproc = None
    web = (
        webproc.spawn_web(
            runner.comp.paths,
            listen,
            user,
            live=live,
            hosting=hosting,
            database=runner.database.location,
        )
        if webproc is not None
        else None
    )
    try:
        trio.run(runner.run)
    except KeyboardInterrupt:
        pass
    finally:
        if web is not None:
            with contextlib.suppress(Exception):
                web.terminate()
        runner.comp.close()
    return 0
