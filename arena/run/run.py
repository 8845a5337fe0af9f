"""One tournament run as a library: :func:`plan` the games, then a
:class:`Run` takes a record store (:class:`arena.run.folder.RecordStore`),
plays what is not yet recorded (``await run.play(...)``, inside the
caller's Trio loop, cancellable by the caller's cancel scope), and
:meth:`Run.finish` writes the outputs and judges the verdict, returning an
:class:`Outcome`.

Nothing here prints, parses arguments, sets the umask or moves processes
between control groups: the host (the command line, a server's runner)
takes those steps itself (:mod:`arena.run.host`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from arena.core.keys import MasterKey
from arena.protocol.records import GameRecordJSON
from arena.report.outputs import write_outputs
from arena.report.verdict import Condition, ConditionError, Verdict, check_names, judge
from arena.run.errors import RunError
from arena.run.folder import FolderStore, RecordStore
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.tournament.executors import Executor, ExecutorUnavailable, make_executor
from arena.tournament.ladder import ladder_budget, play_ladder_async
from arena.tournament.runner import (
    MAX_SCHEDULED_GAMES,
    Games,
    ScheduleStream,
    TournamentSettings,
    scheduled_games,
)
from arena.tournament.settings import LaunchSettings, RunFile, RunSettings, VerdictSettings

#: Called with each finished game's record, once the store has kept it.
RecordHook = Callable[[GameRecordJSON], None]
#: Called after each record with ``(games recorded, games announced)``.
ProgressHook = Callable[[int, int], None]


@dataclass
class Plan:
    """What a run plays, decided before any bot starts.

    Attributes:
        entrants: the run's entrants.
        settings: its settings (with its key).
        games: the schedule, walked lazily (empty for a ladder, which
            chooses its games as it goes).
        total: the games announced: the schedule's, or a ladder's budget.
    """

    entrants: list[Entrant]
    settings: TournamentSettings
    games: Sized
    total: int

    @property
    def key(self) -> MasterKey:
        """The run's master key."""
        return self.settings.master_key

    @property
    def names(self) -> list[str]:
        """The entrants' names."""
        return [e.name for e in self.entrants]

    @property
    def ladder(self) -> bool:
        """Whether the run is a ladder."""
        return self.settings.format == "ladder"

    @property
    def chains(self) -> int | None:
        """Chains of games (a table's seating across the rounds) that can run
        at once at most; ``None`` for a ladder."""
        return None if self.ladder else max(1, len(self.games) // self.settings.rounds)

    def run_file(
        self, launch: LaunchSettings | None, run_id: str | None, verdict: VerdictSettings | None
    ) -> RunFile:
        """The ``run.json`` of this plan."""
        return RunFile(
            RunSettings.of(self.settings, self.entrants, launch),
            self.total,
            run_id=run_id,
            verdict=verdict,
        )


def plan(
    entrants: Sequence[Entrant],
    settings: TournamentSettings,
    fail_if: Sequence[Condition] = (),
) -> Plan:
    """Check the entrants against the settings and plan the run.

    Raises:
        RunError: (usage) fewer than four entrants, a gauntlet's candidate
            that is not an entrant, a naming no entrant, a schedule over
            :data:`MAX_SCHEDULED_GAMES` games.
    """
    entrants = list(entrants)
    names = [e.name for e in entrants]
    if len(entrants) < 4:
        raise RunError(
            f"a tournament needs at least four entrants, got {len(entrants)} "
            "(one program may be entered twice as NAME=COMMAND)",
            "usage",
        )
    if settings.candidate is not None and settings.candidate not in names:
        raise RunError(
            f"--candidate {settings.candidate!r} is not an entrant (entrants: {', '.join(names)})"
        )
    try:
        check_names(list(fail_if), names)
    except ConditionError as exc:
        raise RunError(str(exc)) from None
    ladder = settings.format == "ladder"
    if not ladder and (n := scheduled_games(len(names), settings)) > MAX_SCHEDULED_GAMES:
        raise RunError(
            f"{n:,} games: more than {MAX_SCHEDULED_GAMES:,} in one tournament; "
            "use fewer --rounds, or --format ladder --games G for a large field",
            "usage",
        )
    # Walked lazily, never built whole; a ladder chooses its games as it goes.
    games: Sized = [] if ladder else ScheduleStream(names, settings)
    total = ladder_budget(settings) if ladder else len(games)
    return Plan(entrants, settings, games, total)


@dataclass
class Outcome:
    """What a finished (or interrupted) run left.

    Attributes:
        results: ``results.json``'s object.
        records: every record kept (the resumed run's first).
        total: the games announced (a ladder's scheduled games once known).
        interrupted: the games were stopped (cancelled) before the end; the
            key is then not revealed and there is no verdict.
        verdict: the run judged (``--fail-if``, JUnit cases), or ``None``
            when interrupted.
    """

    results: dict[str, Any]
    records: list[GameRecordJSON]
    total: int
    interrupted: bool
    verdict: Verdict | None


class _OutputFailed(Exception):
    """A game's record could not be kept: stop the run."""


@dataclass
class Run:
    """One tournament run: see the module docstring.

    Attributes:
        plan: what it plays.
        launcher: how its bots start (checked by the host; the run does not close it).
        executor: ``"local"`` or ``"dask"``.
        scheduler: a Dask scheduler's address, or ``None``.
        fail_if: the conditions it is judged by.
        junit: where to write the JUnit file of the verdict, or ``None``.
        live: the live view's bounded queue (local games), or ``None``.
    """

    plan: Plan
    launcher: Launcher
    executor: str = "local"
    scheduler: str | None = None
    fail_if: Sequence[Condition] = ()
    junit: Path | None = None
    live: Any = None
    store: RecordStore | None = field(default=None, init=False)
    interrupted: bool = field(default=False, init=False)
    disk_errors: list[OSError] = field(default_factory=list, init=False)
    total: int = field(default=0, init=False)
    _todo: Games = field(default_factory=list, init=False)

    def take(self, store: RecordStore) -> None:
        """Take ``store``: its records are the games already played (a resume)."""
        self.store = store
        self.total = self.plan.total
        done = {r["game_index"] for r in store.records()}
        if not self.plan.ladder:
            self._todo = ScheduleStream(self.plan.names, self.plan.settings, skip=done)

    @property
    def already(self) -> int:
        """Games recorded before this run's play (a resume)."""
        assert self.store is not None
        if self.plan.ladder:
            return len(self.store.records())
        return len(self.plan.games) - len(self._todo)

    @property
    def all_played(self) -> bool:
        """Whether the store already holds every scheduled game (not a ladder)."""
        return not self.plan.ladder and not self._todo

    async def play(
        self, on_record: RecordHook | None = None, on_progress: ProgressHook | None = None
    ) -> None:
        """Play the games not yet recorded, each kept by the store as it
        ends, then ``on_record`` called with it and ``on_progress`` with the
        counts. A cancellation (the caller's cancel scope, Ctrl-C) stops the
        games in flight, marks the run :attr:`interrupted` and propagates;
        a store that cannot keep a record stops the games (see :meth:`finish`).

        Raises:
            RunError: (environment) the executor is unavailable or failed;
                (output) a resumed ladder's records do not match its choices.
        """
        store = self.store
        if store is None:
            raise RuntimeError("Run.play before Run.take")
        done = len(store.records())

        def sink(record: GameRecordJSON) -> None:
            nonlocal done
            if self.disk_errors:  # stopping: the games still ending are played again
                return
            try:
                store.append(record)
            except OSError as exc:
                self.disk_errors.append(exc)
                raise _OutputFailed from None
            done += 1
            if on_record is not None:
                on_record(record)
            if on_progress is not None:
                on_progress(done, self.total)

        settings = self.plan.settings
        try:
            executor = make_executor(
                self.executor,
                self.plan.entrants,
                settings,
                self.launcher,
                self.scheduler,
                self.live,
            )
        except ExecutorUnavailable as exc:
            raise RunError(str(exc), "environment") from None
        try:
            try:
                if self.plan.ladder:
                    planner = await play_ladder_async(
                        self.plan.names, settings, executor.play, sink, store.records()
                    )
                    scheduled = planner.games_scheduled
                    self.total = scheduled
                    if isinstance(store, FolderStore):
                        try:
                            store.set_games_total(scheduled)
                        except OSError as exc:
                            self.disk_errors.append(exc)
                else:
                    await executor.play(self._todo, sink)
            finally:
                await _close(executor)
        except ExecutorUnavailable as exc:
            raise RunError(str(exc), "environment") from None
        except ValueError as exc:
            if self.plan.ladder and "ladder" in str(exc):
                raise RunError(f"--resume: {exc}", "output") from None
            raise
        except BaseException as exc:
            if _only(exc, _OutputFailed):  # a full disk: said by finish
                return
            self.interrupted = True
            raise

    def finish(self) -> Outcome:
        """Close the store, write the outputs (``results.json``, the report;
        the key revealed unless interrupted) and judge the run (writing the
        JUnit file). Every file is written before the host prints anything.

        Raises:
            RunError: (output) the store could not keep a record, or the
                outputs or the JUnit file could not be written.
        """
        store = self.store
        if store is None:
            raise RuntimeError("Run.finish before Run.take")
        try:
            store.close()
        except OSError as exc:
            self.disk_errors.append(exc)
        if not isinstance(store, FolderStore):
            raise RuntimeError("Run.finish writes the outputs of a FolderStore only")
        if self.disk_errors:
            raise store.output_error(self.disk_errors[0])
        records = store.records()
        key = None if self.interrupted else self.plan.key.hex()
        try:
            results = write_outputs(
                store.out,
                store.run.settings.to_json(),
                self.plan.names,
                records,
                self.total,
                key,
            )
        except OSError as exc:
            raise store.output_error(exc) from None
        verdict = None if self.interrupted else self._judge(results, records, store.out)
        return Outcome(results, records, self.total, self.interrupted, verdict)

    def _judge(
        self, results: dict[str, Any], records: Sequence[GameRecordJSON], out: Path
    ) -> Verdict:
        verdict = judge(
            list(self.fail_if),
            results["standings"],
            records,
            candidate=self.plan.settings.candidate,
            junit=self.junit is not None,
        )
        if self.junit is not None:
            from arena.report.junit import write_junit

            try:
                write_junit(self.junit, f"hearts-arena run {out}", verdict.cases)
            except OSError as exc:
                raise RunError(f"--junit {self.junit}: {exc.strerror or exc}", "output") from None
        return verdict


def _only(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is ``kind`` or a group of only such exceptions."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


async def _close(executor: Executor) -> None:
    """Release the executor, even in a cancelled scope."""
    with trio.CancelScope(shield=True):
        await executor.aclose()
