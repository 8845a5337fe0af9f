"""Table tasks for tests/server/test_server_dask.py: wrappers around
arena.server.dask_tables.play_table_task that run on the Dask workers
(pickled by value, so the workers need not import this module) and kill
their worker, or tamper with a record, at a chosen table; with ``cache``,
each worker process keeps its archives in a cache of its own under that
folder (named by its address: a worker started again starts empty), so
what each worker fetched from the scheduler can be counted."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from distributed import get_worker

from arena.server import dask_tables
from arena.server.dask_tables import ArchivesMissing, TableOutcome, TableTask, play_table_task


def _own_cache(cache: str | None) -> None:
    """Point this worker process's archive cache at ``cache/<its address>``."""
    if cache is None:
        return
    name = get_worker().address.replace("/", "_").replace(":", "_")
    folder = Path(cache) / name
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    dask_tables.worker_cache = lambda: folder  # type: ignore[assignment]


def own_cache(task: TableTask, *, cache: str) -> TableOutcome | ArchivesMissing:
    """Play the table with this worker's own archive cache."""
    _own_cache(cache)
    return play_table_task(task)


def _count(counter: Path) -> int:
    """One more start of the table, counted in a file; returns the count."""
    fd = os.open(counter, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
    return counter.stat().st_size


def kill_worker(
    task: TableTask, *, deal: str, counter: str, kills: int, cache: str | None = None
) -> TableOutcome | ArchivesMissing:
    """Play the table; at table ``deal``'s first ``kills`` starts, SIGKILL this
    worker process once its second game has finished (in mid-table)."""
    _own_cache(cache)
    if task.specs[0].deal_key != deal or _count(Path(counter)) > kills:
        return play_table_task(task)

    def on_game(record: Any) -> None:
        if int(record["rotation"]) == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    return play_table_task(task, on_game=on_game)


def tamper(task: TableTask, *, deal: str, how: str) -> TableOutcome | ArchivesMissing:
    """Play the table; at table ``deal``, alter rotation 2's record: ``"cards"``
    swaps a card of seat 0's dealt hand with one of seat 1's (hand 1),
    ``"seed"`` adds one to seat 3's bot seed."""
    outcome = play_table_task(task)
    if not isinstance(outcome, TableOutcome) or task.specs[0].deal_key != deal:
        return outcome
    record: Any = next(r for r in outcome.records if r["rotation"] == 2)
    if how == "cards":
        dealt = record["hands"][0]["dealt"]
        dealt[0][0], dealt[1][0] = dealt[1][0], dealt[0][0]
    else:
        record["bot_seeds"][3] += 1
    return outcome


def note_end(task: TableTask, *, out: str) -> TableOutcome | ArchivesMissing:
    """Play the table; when the task returns, append a line to ``out``: the
    table's deal and how many of its games were played."""
    outcome = play_table_task(task)
    played = len(outcome.records) if isinstance(outcome, TableOutcome) else -1
    with open(out, "a") as f:
        f.write(f"{task.specs[0].deal_key} {played}\n")
    return outcome
