"""Table tasks for tests/server/test_server_dask.py: wrappers around
arena.server.dask_tables.play_table_task that run on the Dask workers
(pickled by value, so the workers need not import this module) and kill
their worker, or tamper with a record, at a chosen table."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from arena.server.dask_tables import TableOutcome, TableTask, play_table_task


def _count(counter: Path) -> int:
    """One more start of the table, counted in a file; returns the count."""
    fd = os.open(counter, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
    return counter.stat().st_size


def kill_worker(
    task: TableTask, archives: dict[str, bytes], *, deal: str, counter: str, kills: int
) -> TableOutcome:
    """Play the table; at table ``deal``'s first ``kills`` starts, SIGKILL this
    worker process once its second game has finished (in mid-table)."""
    if task.specs[0].deal_key != deal or _count(Path(counter)) > kills:
        return play_table_task(task, archives)

    def on_game(record: Any) -> None:
        if int(record["rotation"]) == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    return play_table_task(task, archives, on_game=on_game)


def tamper(task: TableTask, archives: dict[str, bytes], *, deal: str, how: str) -> TableOutcome:
    """Play the table; at table ``deal``, alter rotation 2's record: ``"cards"``
    swaps a card of seat 0's dealt hand with one of seat 1's (hand 1),
    ``"seed"`` adds one to seat 3's bot seed."""
    outcome = play_table_task(task, archives)
    if task.specs[0].deal_key != deal:
        return outcome
    record: Any = next(r for r in outcome.records if r["rotation"] == 2)
    if how == "cards":
        dealt = record["hands"][0]["dealt"]
        dealt[0][0], dealt[1][0] = dealt[1][0], dealt[0][0]
    else:
        record["bot_seeds"][3] += 1
    return outcome
