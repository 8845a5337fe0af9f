"""Games in worker processes, for ``--jobs`` on a machine with several cores.

The referee is a Trio program: one thread, so one core. With ``--jobs N`` on
``C`` cores the local executor starts ``min(N, C)`` worker processes, each
running its share of the games with Trio (``ceil(N / workers)`` chains at
once), pulling chains from one queue as it frees a slot. Each finished game's
record goes back to the coordinator at once, which journals it: a chain's
first game is not held back until the chain ends.

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
import math
import multiprocessing
import os
import queue
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

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
#: Seconds the workers are given to close their bots after SIGTERM before
#: they are killed.
STOP_WAIT: float = 10.0


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
    live: Any,
    parent: int,
) -> None:
    _die_with_parent(parent)
    from arena.game.feed import LiveFeed

    feed = None
    if live is not None:
        live.cancel_join_thread()  # a view that went away never holds up this worker's exit
        feed = LiveFeed(live)
    # Ctrl-C (and a terminal's SIGHUP, sent to its whole process group) reaches
    # the coordinator, which stops workers with SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    runner = TournamentRunner(
        entrants,
        settings,
        Launcher(options),
        lambda r: results.put(("record", r)),
        SharedDealLocks(deal_locks),
        feed,
    )
    stopped = False

    async def slot() -> None:
        limiter = trio.CapacityLimiter(1)
        while True:
            chain = await trio.to_thread.run_sync(tasks.get, abandon_on_cancel=True)
            if chain is None:
                return
            await runner.run_chain(chain, limiter)

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
        results.put(("error", text[-4000:]))
        raise
    results.put(("interrupted" if stopped else "done", os.getpid()))


class ProcessPool:
    """Worker processes that play chains of games; see the module docstring.

    The workers start with the first :meth:`play` and serve every later call
    (a ladder plays batch after batch) until :meth:`close`.

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

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._tasks = ctx.Queue()
        self._results = ctx.Queue()
        # Kept referenced: a spawned worker opens them by name after start().
        self._locks = locks = SharedDealLocks.make(ctx)
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
                    self.live,
                    os.getpid(),
                ),
                daemon=True,
            )
            proc.start()
            self._procs.append(proc)

    def play(self, games: Games, on_record: RecordSink) -> None:
        """Play ``games`` in the workers, calling ``on_record`` in this thread
        for each finished game. Returns when every game is recorded.

        Chains go to the workers' queue as they are needed: at most
        :data:`CHAINS_AHEAD` times the slots are queued or in play at once, so
        a :class:`arena.tournament.runner.ScheduleStream` is never held whole.

        Raises:
            KeyboardInterrupt: Ctrl-C; the workers are stopped (their bots
                closed, the games they finish meanwhile recorded) first.
            WorkerError: a worker failed.
        """
        if not games:
            return
        if not self._procs:
            self._start()
        chains: Iterator[list[Any]] = iter_chains(games)
        ahead = CHAINS_AHEAD * self.workers * self.slots
        # game_index -> chain number, and games left per chain, for chains sent.
        chain_of: dict[int, int] = {}
        left: dict[int, int] = {}
        sent = 0

        def send_more() -> None:
            nonlocal sent
            while len(left) < ahead:
                chain = next(chains, None)
                if chain is None:
                    return
                for g in chain:
                    chain_of[g.game_index] = sent
                left[sent] = len(chain)
                self._tasks.put(chain)
                sent += 1

        remaining = len(games)
        try:
            send_more()
            while remaining:
                try:
                    kind, payload = self._results.get(timeout=1.0)
                except queue.Empty:
                    dead = [p for p in self._procs if not p.is_alive()]
                    if dead:
                        raise WorkerError(
                            f"a worker process died (exit code {dead[0].exitcode})"
                        ) from None
                    continue
                if kind == "record":
                    on_record(payload)
                    remaining -= 1
                    number = chain_of.pop(int(payload["game_index"]), None)
                    if number is not None:
                        left[number] -= 1
                        if not left[number]:
                            del left[number]
                            send_more()
                elif kind == "interrupted":  # a worker was stopped from outside
                    raise KeyboardInterrupt
                else:
                    raise WorkerError(f"a worker process failed: {payload}")
        except BaseException:
            self._stop(on_record)
            raise

    def close(self) -> None:
        """Let the workers finish and exit."""
        if not self._procs:
            return
        for _ in range(self.workers * self.slots):
            self._tasks.put(None)
        for proc in self._procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._procs = []

    def _drain(self, on_record: RecordSink, timeout: float) -> None:
        """Hand every record waiting in the results queue to ``on_record``
        (waiting up to ``timeout`` seconds for the first)."""
        with contextlib.suppress(queue.Empty, OSError, ValueError, EOFError):
            kind, payload = (
                self._results.get(timeout=timeout) if timeout else self._results.get_nowait()
            )
            while True:
                if kind == "record":
                    on_record(payload)
                kind, payload = self._results.get_nowait()

    def _stop(self, on_record: RecordSink) -> None:
        """Stop the workers with SIGTERM (they close their bots), keep the
        games they finish meanwhile, and make sure they are gone."""
        for proc in self._procs:
            if proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        # The results are read while the workers stop, not after: a worker's
        # last records wait in its queue's pipe (a record is larger than a
        # pipe's buffer), and a process does not exit before its queue is
        # flushed, so joining first would wait for nothing until the deadline.
        deadline = time.monotonic() + STOP_WAIT
        while any(p.is_alive() for p in self._procs) and time.monotonic() < deadline:
            self._drain(on_record, timeout=0.05)
        self._drain(on_record, timeout=0.0)
        for proc in self._procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._procs = []
