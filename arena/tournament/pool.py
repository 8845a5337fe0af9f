"""Games in worker processes, for ``--jobs`` on a machine with several cores.

The referee is a Trio program: one thread, so one core. With ``--jobs N`` on
``C`` cores the local executor starts ``min(N, C)`` worker processes, each
running its share of the games with Trio (``ceil(N / workers)`` chains at
once), pulling chains from one queue as it frees a slot. Each finished game's
record goes back to the coordinator at once, which journals it: a chain's
first game is not held back until the chain ends.

The coordinator's side is async (:meth:`ProcessPool.play` is awaited in its
Trio loop): it reads the workers' results in a thread (:func:`trio.to_thread.run_sync`,
never blocking the loop) and hands each record to its sink in the loop's
thread. Several calls of :meth:`ProcessPool.play` may be in flight at once
(they share the workers and the custody of deals); each has a stop flag the
workers watch (:data:`PLAYS` of them, shared): a cancelled call raises its
flag, the workers stop that call's chains (their bots closed) and skip its
queued ones, and the call returns once every chain it sent is accounted for,
its finished games recorded.

Results do not depend on the number of workers: every game carries its own
seeds, and the coordinator applies ratings in schedule order. Workers get the
settings without the master key (each game carries its derived table key and
bot seeds) and share :class:`SharedDealLocks`, the custody of deals across
all of them: no process that has seen a deal is alive while another holds
its cards, and the forgets of the page cache between an entrant's games of
one deal are counted once for the machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import multiprocessing
import os
import queue
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from arena.protocol import records
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.tournament.runner import (
    DIRTY_STRIPES,
    Games,
    TournamentRunner,
    TournamentSettings,
    deal_stripe,
    iter_chains,
)

RecordSink = records.RecordSink
_PR_SET_PDEATHSIG = 1


#: Locks shared by the workers; deal keys are spread over them by a hash.
DEAL_LOCK_STRIPES: int = 64
#: Chains queued or in play per worker slot (the rest of a schedule waits, unmade).
CHAINS_AHEAD: int = 2
#: Seconds between two tries of a taken deal lock.
DEAL_LOCK_POLL: float = 0.005
#: Seconds the workers are given to close their bots after SIGTERM (or a
#: cancelled call to stop its chains) before they are killed.
STOP_WAIT: float = 10.0
#: Calls of :meth:`ProcessPool.play` in flight at once (their stop flags are
#: made before the workers start); more wait for one to end.
PLAYS: Final = 64
#: Seconds a worker's chain waits between two looks at its call's stop flag.
STOP_POLL: Final = 0.05
#: Seconds the coordinator's reading thread waits for a result before it
#: lets another reader in and checks that the workers are alive.
READ_WAIT: Final = 0.25
#: Results taken by one read (the rest wait for the next).
READ_BATCH: Final = 256


class SharedDealLocks:
    """Custody of deals (:class:`arena.tournament.runner.DealLockSet`) across
    worker processes.

    Deal keys are hashed (SHA-256) onto :data:`DEAL_LOCK_STRIPES`
    ``multiprocessing`` locks made before the workers start; two keys on one
    lock only wait for each other, never play together (a chain holding one
    and asking for the other gives up its processes first). Beside each lock,
    a count of the chains waiting for it; the releases and forget counts
    live in shared integers (:meth:`make`). A taken lock is polled from Trio
    (never a blocking call, so cancellation stays prompt).

    Args:
        state: what :meth:`make` returned, passed to each worker.
    """

    def __init__(self, state: dict[str, Any]) -> None:
        self.locks = list(state["locks"])
        self._waiting = state["waiting"]
        self._released = state["released"]
        self._started = state["started"]
        self._finished = state["finished"]
        self._forgetting = state["forgetting"]

    @staticmethod
    def make(ctx: Any) -> dict[str, Any]:
        """The shared objects (from a ``multiprocessing`` context ``ctx``),
        made before the workers start."""
        return {
            "locks": [ctx.Lock() for _ in range(DEAL_LOCK_STRIPES)],
            "waiting": ctx.Array("i", DEAL_LOCK_STRIPES),
            "released": ctx.Array("q", [-1] * DIRTY_STRIPES),
            "started": ctx.Value("q", 0),
            "finished": ctx.Value("q", 0),
            "forgetting": ctx.Lock(),
        }

    def _stripe(self, deal_key: str) -> int:
        return deal_stripe(deal_key, len(self.locks))

    def try_take(self, deal_key: str) -> bool:
        """See :meth:`arena.tournament.runner.DealLockSet.try_take`."""
        return bool(self.locks[self._stripe(deal_key)].acquire(False))

    async def take(self, deal_key: str) -> None:
        """See :meth:`arena.tournament.runner.DealLockSet.take`."""
        stripe = self._stripe(deal_key)
        lock = self.locks[stripe]
        with self._waiting.get_lock():
            self._waiting[stripe] += 1
        try:
            # A lock of another process cannot wake a Trio task: poll it.
            while not lock.acquire(False):  # noqa: ASYNC110
                await trio.sleep(DEAL_LOCK_POLL)
        finally:
            with self._waiting.get_lock():
                self._waiting[stripe] -= 1

    def release(self, deal_key: str) -> None:
        """See :meth:`arena.tournament.runner.DealLockSet.release`."""
        stripe = deal_stripe(deal_key, DIRTY_STRIPES)
        with self._released.get_lock():
            self._released[stripe] = max(self._released[stripe], self._started.value)
        self.locks[self._stripe(deal_key)].release()

    def wanted(self, deal_key: str) -> bool:
        """See :meth:`arena.tournament.runner.DealLockSet.wanted`."""
        return bool(self._waiting[self._stripe(deal_key)] > 0)

    def released_at(self, deal_key: str) -> int:
        """See :meth:`arena.tournament.runner.DealLockSet.released_at`."""
        return int(self._released[deal_stripe(deal_key, DIRTY_STRIPES)])

    def finished(self) -> int:
        """See :meth:`arena.tournament.runner.DealLockSet.finished`."""
        return int(self._finished.value)

    async def forget_after(self, mark: int, forget: Callable[[], object]) -> None:
        """See :meth:`arena.tournament.runner.DealLockSet.forget_after`."""
        while not self._forgetting.acquire(False):  # noqa: ASYNC110
            await trio.sleep(DEAL_LOCK_POLL)
        try:
            if self._finished.value > mark:
                return
            with self._started.get_lock():
                self._started.value += 1
                number = self._started.value
            with trio.CancelScope(shield=True):  # the count must match what was done
                await trio.to_thread.run_sync(forget)
            self._finished.value = number
        finally:
            self._forgetting.release()


def worker_count(jobs: int, cores: int | None = None) -> int:
    """Worker processes for ``jobs`` games at once: one per core, at most ``jobs``."""
    return max(1, min(jobs, cores if cores is not None else (os.cpu_count() or 1)))


class WorkerError(RuntimeError):
    """A worker process failed (a bug in the arena, not a bot's fault)."""


#: The signals a terminal sends to the arena's whole process group, which a
#: worker leaves to the coordinator.
_GROUP_SIGNALS: Final = frozenset({signal.SIGINT, signal.SIGHUP})


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this worker if the coordinator (pid
    ``parent``) dies; its bots' control groups are then removed by
    ``--resume`` or ``hearts-arena cleanup``. A coordinator that died before
    the request was made is caught by checking the parent afterwards: the
    worker then exits at once."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _worker(
    entrants: list[Entrant],
    settings: TournamentSettings,
    options: LaunchOptions,
    tasks: Any,
    results: Any,
    slots: int,
    deal_locks: dict[str, Any],
    stops: Any,
    live: Any,
    parent: int,
) -> None:
    """A worker process: ``slots`` chains at once, taken from ``tasks`` as
    ``(call, number, chain)``; each record goes to ``results`` as
    ``("record", call, record)``, each chain's end as ``("chain", call,
    number)`` (after its records; also for a chain skipped or stopped because
    ``stops[call]`` is set). SIGTERM stops every chain (their bots closed)."""
    _die_with_parent(parent)
    from arena.game.feed import LiveFeed

    feed = None
    if live is not None:
        live.cancel_join_thread()  # a view that went away never holds up this worker's exit
        feed = LiveFeed(live)
    # Ctrl-C (and a terminal's SIGHUP, sent to its whole process group) reaches
    # the coordinator, which stops the calls' chains (or workers, with SIGTERM).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _GROUP_SIGNALS)  # blocked from birth (_start)
    runner = TournamentRunner(
        entrants,
        settings,
        Launcher(options),
        lambda r: results.put(("record", -1, r)),
        SharedDealLocks(deal_locks),
        feed,
    )
    stopped = False

    def send(call: int, record: records.GameRecordJSON) -> None:
        results.put(("record", call, record))

    async def watch_stop(call: int, scope: trio.CancelScope) -> None:
        # A shared flag cannot wake a Trio task: poll it.
        while not stops[call]:  # noqa: ASYNC110
            await trio.sleep(STOP_POLL)
        scope.cancel()  # the chain closes its bots on the way out

    async def slot() -> None:
        limiter = trio.CapacityLimiter(1)
        while True:
            task = await trio.to_thread.run_sync(tasks.get, abandon_on_cancel=True)
            if task is None:
                return
            call, number, chain = task
            if not stops[call]:
                with trio.CancelScope() as scope:
                    async with trio.open_nursery() as watch:
                        watch.start_soon(watch_stop, call, scope)
                        await runner.run_chain(chain, limiter, functools.partial(send, call))
                        watch.cancel_scope.cancel()
            results.put(("chain", call, number))

    async def watch_term(scope: trio.CancelScope) -> None:
        nonlocal stopped
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                stopped = True
                scope.cancel()  # the chains close their bots on the way out
                return

    async def main() -> None:
        async with trio.open_nursery() as outer:
            outer.start_soon(watch_term, outer.cancel_scope)
            if feed is not None:
                outer.start_soon(feed.run)
            async with trio.open_nursery() as nursery:
                for _ in range(slots):
                    nursery.start_soon(slot)
            outer.cancel_scope.cancel()

    try:
        trio.run(main)
    except BaseException as exc:  # a bug: report it to the coordinator
        # The whole traceback (sub-exceptions of Trio's groups included), capped.
        text = "".join(traceback.format_exception(exc))
        results.put(("error", -1, text[-4000:]))
        raise
    results.put(("interrupted" if stopped else "done", -1, os.getpid()))


@dataclass
class _Call:
    """One call of :meth:`ProcessPool.play` in flight: its sink, the chains
    it sent that no worker has reported done, and whether more are to send."""

    on_record: RecordSink
    outstanding: set[int] = field(default_factory=set)
    more: bool = True


class ProcessPool:
    """Worker processes that play chains of games; see the module docstring.

    The workers start with the first :meth:`play` and serve every later call
    (a ladder plays batch after batch; a server's tables play at once) until
    :meth:`aclose`.

    Args:
        entrants, settings, options: as for :class:`TournamentRunner` and
            :class:`Launcher` (they are sent to each worker).
        workers: number of worker processes.
        live: the bounded queue of the live view (``--live``): each worker
            sends its tables' public states there (:class:`arena.game.feed.LiveFeed`),
            or ``None``.
    """

    def __init__(
        self,
        entrants: Sequence[Entrant],
        settings: TournamentSettings,
        options: LaunchOptions,
        workers: int,
        live: Any = None,
    ) -> None:
        self.live = live
        self.entrants = list(entrants)
        self.settings = settings.without_key()
        self.options = options
        self.workers = workers
        self.slots = math.ceil(settings.jobs / workers)
        self._procs: list[Any] = []
        self._tasks: Any = None
        self._results: Any = None
        self._locks: dict[str, Any] = {}
        self._stops: Any = None
        self._calls: dict[int, _Call] = {}
        self._free = list(range(PLAYS))
        self._call_room = trio.Semaphore(PLAYS)
        self._starting = trio.Lock()
        self._reading = trio.Lock()
        self._broken: str | None = None

    def _start(self) -> None:
        # Ctrl-C and a terminal's SIGHUP reach the whole process group. A
        # worker ignores both (the coordinator stops it), but only from the
        # start of _worker: one still importing died of a SIGHUP, and the
        # pool took that for a stop from outside (the run then ended with a
        # bare "interrupted", no resume line). A signal mask is inherited
        # across exec, so the workers (and the resource tracker, started
        # here at the first queue) are born with both blocked; _worker
        # unblocks them once it ignores them. The tracker's start unblocks
        # SIGINT (and SIGTERM) in this thread again: it is started first,
        # then both are blocked again for the workers.
        from multiprocessing import resource_tracker

        held = signal.pthread_sigmask(signal.SIG_BLOCK, _GROUP_SIGNALS)
        try:
            resource_tracker.ensure_running()
            signal.pthread_sigmask(signal.SIG_BLOCK, _GROUP_SIGNALS)
            self._start_workers()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def _start_workers(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._tasks = ctx.Queue()
        self._results = ctx.Queue()
        # Kept referenced: a spawned worker opens them by name after start().
        self._locks = locks = SharedDealLocks.make(ctx)
        self._stops = ctx.Array("b", PLAYS, lock=False)
        for _ in range(self.workers):
            proc = ctx.Process(
                target=_worker,
                args=(
                    self.entrants,
                    self.settings,
                    self.options,
                    self._tasks,
                    self._results,
                    self.slots,
                    locks,
                    self._stops,
                    self.live,
                    os.getpid(),
                ),
                daemon=True,
            )
            proc.start()
            self._procs.append(proc)

    async def play(self, games: Games, on_record: RecordSink) -> None:
        """Play ``games`` in the workers, calling ``on_record`` in the loop's
        thread for each finished game. Returns when every game is recorded.

        Chains go to the workers' queue as they are needed: at most
        :data:`CHAINS_AHEAD` times the slots are queued or in play at once
        for a call, so a :class:`arena.tournament.runner.ScheduleStream` is
        never held whole.

        Cancellation (the caller's scope, Ctrl-C): the call's stop flag is
        raised, its chains in play stop (their bots closed) and its queued
        ones are skipped; the records of games finished meanwhile are handed
        over; then the cancellation propagates. Workers that do not answer
        within :data:`STOP_WAIT` seconds are stopped with SIGTERM, then killed.

        Raises:
            KeyboardInterrupt: a worker was stopped from outside (SIGTERM).
            WorkerError: a worker failed, or died.
        """
        if not games:
            return
        async with self._starting:
            if self._broken is not None:
                raise WorkerError(self._broken)
            if not self._procs:
                await trio.to_thread.run_sync(self._start)
        async with self._call_room:
            number = self._free.pop()
            self._stops[number] = 0
            call = self._calls[number] = _Call(on_record)
            try:
                await self._play(number, call, iter_chains(games))
            except BaseException:
                with trio.CancelScope(shield=True):
                    await self._stop_call(number, call)
                raise
            finally:
                del self._calls[number]
                self._free.append(number)

    async def _play(self, number: int, call: _Call, chains: Iterator[list[Any]]) -> None:
        ahead = CHAINS_AHEAD * self.workers * self.slots
        sent = 0

        def send_more() -> None:
            nonlocal sent
            while call.more and len(call.outstanding) < ahead:
                chain = next(chains, None)
                if chain is None:
                    call.more = False
                    return
                call.outstanding.add(sent)
                self._tasks.put((number, sent, chain))
                sent += 1

        send_more()
        while call.outstanding:
            await self._read(call)
            send_more()

    async def _read(self, call: _Call, wait: float = READ_WAIT) -> None:
        """Take the results waiting (up to ``wait`` seconds for the first, in a
        thread) and hand each to its call, unless ``call`` has nothing left
        to wait for; one reader at a time."""
        async with self._reading:
            if self._broken is not None:
                raise WorkerError(self._broken)
            if not call.outstanding:
                return
            found = await trio.to_thread.run_sync(self._take, wait)
            if not found:
                dead = [p for p in self._procs if not p.is_alive()]
                if dead:
                    self._broken = f"a worker process died (exit code {dead[0].exitcode})"
                    raise WorkerError(self._broken)
            for kind, number, payload in found:
                self._dispatch(kind, number, payload)

    def _take(self, wait: float) -> list[tuple[str, int, Any]]:
        """Up to :data:`READ_BATCH` results: the first within ``wait`` seconds
        (blocking: run in a thread), the rest already there."""
        found: list[tuple[str, int, Any]] = []
        with contextlib.suppress(queue.Empty, OSError, ValueError, EOFError):
            found.append(self._results.get(timeout=wait) if wait else self._results.get_nowait())
            while len(found) < READ_BATCH:
                found.append(self._results.get_nowait())
        return found

    def _dispatch(self, kind: str, number: int, payload: Any) -> None:
        call = self._calls.get(number)
        if kind == "record":
            if call is not None:
                call.on_record(payload)
        elif kind == "chain":
            if call is not None:
                call.outstanding.discard(payload)
        elif kind == "interrupted":  # a worker was stopped from outside
            self._broken = "a worker process was stopped from outside (SIGTERM)"
            raise KeyboardInterrupt
        elif kind == "error":
            self._broken = f"a worker process failed: {payload}"
            raise WorkerError(self._broken)

    async def _stop_call(self, number: int, call: _Call) -> None:
        """Raise call ``number``'s stop flag and hand over its records until
        every chain it sent is reported (at most :data:`STOP_WAIT` seconds;
        then the workers are stopped)."""
        call.more = False
        if self._stops is None or not self._procs:
            return
        self._stops[number] = 1
        with trio.move_on_after(STOP_WAIT) as waited:
            try:
                while call.outstanding and self._broken is None:
                    await self._read(call, wait=STOP_POLL)
            except (WorkerError, KeyboardInterrupt):
                pass
        if waited.cancelled_caught or self._broken is not None:
            await self._terminate()

    async def aclose(self) -> None:
        """Let the workers finish and exit (joined in a thread; killed after
        30 seconds)."""
        if not self._procs:
            return
        if self._broken is not None:
            with trio.CancelScope(shield=True):
                await self._terminate()
            return
        for _ in range(self.workers * self.slots):
            self._tasks.put(None)
        procs, self._procs = self._procs, []

        def join() -> None:
            for proc in procs:
                proc.join(30)
                if proc.is_alive():
                    proc.kill()
                    proc.join()

        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(join)

    async def _terminate(self) -> None:
        """Stop the workers with SIGTERM (they close their bots), hand the
        games they finish meanwhile to their calls, and make sure they are
        gone; the pool serves no more calls."""
        if self._broken is None:
            self._broken = "the worker processes were stopped"
        for proc in self._procs:
            if proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        # The results are read while the workers stop, not after: a worker's
        # last records wait in its queue's pipe (a record is larger than a
        # pipe's buffer), and a process does not exit before its queue is
        # flushed, so joining first would wait for nothing until the deadline.
        with trio.move_on_after(STOP_WAIT):
            while any(p.is_alive() for p in self._procs):
                self._hand_over(await trio.to_thread.run_sync(self._take, STOP_POLL))
        self._hand_over(self._take(0.0))
        procs, self._procs = self._procs, []

        def kill() -> None:
            for proc in procs:
                if proc.is_alive():
                    proc.kill()
                proc.join()

        await trio.to_thread.run_sync(kill)

    def _hand_over(self, found: list[tuple[str, int, Any]]) -> None:
        """Records to their calls while the workers stop (nothing else counts now)."""
        for kind, number, payload in found:
            if kind == "record":
                call = self._calls.get(number)
                if call is not None:
                    call.on_record(payload)
