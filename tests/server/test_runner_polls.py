"""How often the runner polls its database when nothing happens (issue 29's
load goal: the server's own CPU proportional to what changes, not to wall
time), and that a new submission is still checked within the documented
delay (:data:`arena.server.runner.POLL_MAX_SECONDS`).

Trio's MockClock (autojump) stands for the wall clock; the database calls are
made in the Trio thread (not a worker thread) and counted, so the clock moves
only from one sleep's end to the next and the counts are exact. SQLite only:
the subject is the scheduler's timing, not the storage."""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from arena.server import actions, folder, runner, store
from arena.server.runner import POLL_MAX_SECONDS, POLL_SECONDS, RunnerConfig, start_runner

#: Mock seconds the runner is left idle.
IDLE = 600.0


def _empty_competition(root: Path) -> None:
    settings = folder.CompetitionSettings.from_mapping({"game": {"hands": 1}}, "t")
    folder.init_folder(root, settings)


Call = tuple[float, Any, tuple[Any, ...]]


class Counted:
    """``r``'s database calls made synchronous (in the Trio thread), each
    recorded in :attr:`calls`: ``(mock time, fn, args)``."""

    def __init__(self, r: runner.Runner) -> None:
        self.r = r
        self.calls: list[Call] = []
        self._first: trio.Event | None = None
        database = r.database

        async def read_async(fn: Callable[..., Any], *args: Any) -> Any:
            self._called(fn, args)
            return database.run_read(fn, *args)

        async def write_async(fn: Callable[..., Any], *args: Any) -> Any:
            self._called(fn, args)
            return database.run_write(fn, *args)

        database.read_async = read_async  # type: ignore[method-assign]
        database.write_async = write_async  # type: ignore[method-assign]

    def _called(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.calls.append((trio.current_time(), fn, args))
        if self._first is not None:
            self._first.set()

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the runner and wait for its loop's first call (its start-up's
        recovery runs in a worker thread, during which the clock jumps); the
        calls so far are forgotten."""
        self._first = trio.Event()
        nursery.start_soon(self.r.run)
        await self._first.wait()
        self.calls.clear()


def _gate_reads(calls: list[Call]) -> list[float]:
    """The mock times of the gate's looks at the queue."""
    return [t for t, fn, args in calls if fn is store.submissions_in and args == ("queued",)]


def _rounds(calls: list[Call]) -> list[float]:
    """The mock times of the scheduler's rounds (each begins with one read:
    the held copies no longer playing, the pending actions, the close)."""
    return [t for t, fn, _ in calls if getattr(fn, "__qualname__", "") == "Runner._look"]


def test_an_idle_runner_reads_its_database_a_few_times_in_ten_minutes(tmp_path: Path) -> None:
    """Nothing queued, nothing to play, no action: each round that found
    nothing doubles the scheduler's sleep and the gate's, from 1 s up to
    POLL_MAX_SECONDS (4 s), so 600 idle mock seconds make about 150 rounds of
    each, not 600 (every second, before: about 6,600 transactions), each
    round of 4 transactions."""
    root = tmp_path / "c"
    _empty_competition(root)
    r = start_runner(root, RunnerConfig(sandbox=False, log=io.StringIO()))
    counted = Counted(r)
    calls = counted.calls

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await counted.start(nursery)
            await trio.sleep(IDLE)
            nursery.cancel_scope.cancel()

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        r.comp.close()
    rounds = IDLE / POLL_MAX_SECONDS  # at the longest sleep
    gate = len(_gate_reads(calls))
    scheduler = _rounds(calls)
    assert rounds <= gate <= rounds + 3  # 1, 2, then 4 s apart
    assert rounds <= len(scheduler) <= rounds + 3
    # 4 transactions a round beside the gate's look: the round's read (the
    # copies, the actions, the close), the validation and ladder chooser's
    # write, the final's look, the classes' chooser's write (13 a round
    # before issue 29's load fixes; 13 a second before that: 7,800).
    assert len(calls) - gate <= 4 * (rounds + 3)


def test_a_new_submission_is_checked_within_the_longest_poll(tmp_path: Path) -> None:
    """A submission queued after the runner has idled long enough to sleep its
    longest is checked within POLL_MAX_SECONDS of its upload; once its check
    ends, the gate looks again after POLL_SECONDS."""
    root = tmp_path / "c"
    _empty_competition(root)
    r = start_runner(root, RunnerConfig(sandbox=False, log=io.StringIO()))
    counted = Counted(r)
    calls = counted.calls
    checked: list[tuple[float, int]] = []

    async def check(sub: store.SubmissionRow) -> None:  # the gate's step, recorded
        checked.append((trio.current_time(), sub.id))
        r.database.run_write(store.record_step, sub.id, "check", False, 0.0, "not this test's")

    r._check = check  # type: ignore[method-assign]
    uploads: list[tuple[float, int]] = []

    def upload(name: str) -> None:
        with r.database.write() as conn:
            p = store.add_participant(conn, name, 0.0)
            s, _ = store.add_submission(conn, p.id, name[-1] * 64, "py", 1, 1.0)
        uploads.append((trio.current_time(), s.id))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await counted.start(nursery)
            await trio.sleep(100.3)  # long enough for the longest sleep
            upload("p1")
            await trio.sleep(0.4 * POLL_SECONDS)
            upload("p2")  # while the gate is back at its first sleep: soon
            await trio.sleep(30.0)
            nursery.cancel_scope.cancel()

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        r.comp.close()
    assert [sid for _, sid in checked] == [sid for _, sid in uploads]
    (up1, _), (up2, _) = uploads
    (at1, _), (at2, _) = checked
    assert up1 < at1 <= up1 + POLL_MAX_SECONDS
    # The gate's sleep was at its longest before the first upload ...
    before = [t for t in _gate_reads(calls) if t < up1]
    gaps = [b - a for a, b in itertools.pairwise(before)]
    assert gaps == sorted(gaps) and set(gaps) <= {POLL_SECONDS, 2 * POLL_SECONDS, 4 * POLL_SECONDS}
    assert gaps[-20:] == [POLL_MAX_SECONDS] * 20
    # ... and after the first check it is back at POLL_SECONDS.
    assert up2 < at2 <= at1 + POLL_SECONDS + 1e-9


def test_an_organisers_action_is_applied_within_the_longest_poll(tmp_path: Path) -> None:
    """An action recorded (by the web process) while the runner sleeps its
    longest is applied within POLL_MAX_SECONDS; the scheduler's next look
    comes POLL_SECONDS after that round (a change found starts the back-off
    again), then 2, then 4 s apart."""
    root = tmp_path / "c"
    _empty_competition(root)
    r = start_runner(root, RunnerConfig(sandbox=False, log=io.StringIO()))
    counted = Counted(r)
    with r.database.write() as conn:
        p = store.add_participant(conn, "ann", 0.0)
    recorded: list[float] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await counted.start(nursery)
            await trio.sleep(100.3)
            with r.database.write() as conn:
                actions.request_action(conn, "suspend", 0.0, participant_id=p.id)
            recorded.append(trio.current_time())
            await trio.sleep(30.0)
            nursery.cancel_scope.cancel()

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        r.comp.close()
    with r.database.read() as conn:
        assert store.participant_by_id(conn, p.id).status == "suspended"  # type: ignore[union-attr]
        (row,) = actions.all_actions(conn)
    assert row.status == "applied"
    looks = _rounds(counted.calls)
    at = min(t for t in looks if t > recorded[0])
    assert at <= recorded[0] + POLL_MAX_SECONDS
    after = [t - at for t in looks if t >= at][:4]
    assert after == [0.0, POLL_SECONDS, 3 * POLL_SECONDS, 7 * POLL_SECONDS]
