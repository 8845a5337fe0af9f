"""Games on a Dask cluster (``--executor dask``): the same standings as the
local executor, a killed worker costs only its games in flight, clear errors."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import pytest
from conftest import BOTS, bot, load_outputs, run_arena

distributed = pytest.importorskip("distributed")

STRIP = ("duration_s", "started_at", "timing")


def _games(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["game_index"]: {k: v for k, v in r.items() if k not in STRIP} for r in records}


LADDER = [bot("first_legal" if i % 2 else "random_legal", f"b{i}") for i in range(8)]
CASES = {
    # Three tables: two at once on the two workers, then one from the next snapshot.
    "ladder": [*LADDER, "--format", "ladder", "--games", "12", "--ladder-batch", "2"],
    "round-robin": [*LADDER[:4], "--rounds", "2"],
}


def _cluster(n_workers: int) -> distributed.LocalCluster:
    """A local cluster of ``n_workers`` single-threaded worker processes with
    ``table=1`` each, no dashboard, quiet logs and the arena's own local
    cluster's Dask settings (plain TCP: the arena's own cluster, with TLS, is
    :func:`test_local_cluster_talks_tls_and_workers_get_no_key`'s)."""
    from arena.tournament.dask_executor import LOCAL_CLUSTER_CONFIG

    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        return distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            resources={"table": 1},
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )


@pytest.fixture(scope="class")
def shared_cluster() -> Iterator[distributed.LocalCluster]:
    """A cluster of two worker processes for the tests of one class."""
    with _cluster(2) as cluster:
        yield cluster


class TestOnASharedCluster:
    """The tests that only need a working cluster share one of two worker
    processes (a class-scoped fixture: it stops after the class's last test,
    and pytest-randomly keeps a class's tests together); a test that kills a
    worker has a cluster of its own."""

    @pytest.mark.parametrize("case", sorted(CASES))
    def test_local_cluster_equals_local_executor(
        self, case: str, tmp_path: Path, shared_cluster: distributed.LocalCluster
    ) -> None:
        _equals_local_executor(case, tmp_path, shared_cluster.scheduler_address)


def _equals_local_executor(case: str, tmp_path: Path, scheduler: str) -> None:
    common = ["run", *CASES[case], "--hands", "1", "--seed", "8", "--jobs", "2", "--quiet"]
    local, on_dask = tmp_path / "local", tmp_path / "dask"
    assert run_arena([*common, "--out", str(local)]) == 0
    dask_args = ["--executor", "dask", "--scheduler", scheduler]
    assert run_arena([*common, *dask_args, "--out", str(on_dask)]) == 0
    (res_l, rec_l), (res_d, rec_d) = load_outputs(local), load_outputs(on_dask)
    assert res_d["standings"] == res_l["standings"]
    assert _games(rec_d) == _games(rec_l)
    assert len(rec_d) == len(_games(rec_d)) == res_d["games_total"]  # each game once


def _kill_a_busy_worker(
    scheduler: str, journal: Path, done: threading.Event, killed: list[int]
) -> None:
    """Once a first game is recorded, SIGKILL a worker process that holds a table."""
    with distributed.Client(scheduler) as client:
        while not done.is_set():
            if journal.exists() and journal.read_text().strip():
                busy = [w for w, keys in client.processing().items() if keys]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.02)


# A cluster of two worker processes, one killed and replaced: 118 s on the shared
# machine, past the suite's 120 s (stopped so once, 2026-12-01).
@pytest.mark.timeout(600)
# The kill is on purpose: Dask's scheduler may log "Couldn't gather keys" as an
# ERROR when the worker dies holding a finished table (seen in CI, 2026-12-01).
@pytest.mark.allow_error_logs
def test_killed_worker_still_records_every_game_once(tmp_path: Path) -> None:
    # Three tables at once on two workers: when the first table's records
    # arrive, the third has just started on that worker and the second is in
    # play on the other, so a worker holds a table for a table's time.
    games = 12
    slow = [f"s{i}={BOTS / 'slow_legal.py'} 0.004" for i in range(8)]
    out = tmp_path / "o"
    with _cluster(2) as cluster:
        done, killed = threading.Event(), []
        watcher = threading.Thread(
            target=_kill_a_busy_worker,
            args=(cluster.scheduler_address, out / "games.jsonl", done, killed),
        )
        watcher.start()
        try:
            code = run_arena(
                ["run", *slow, "--format", "ladder", "--games", str(games), "--ladder-batch", "3",
                 "--hands", "1", "--seed", "4", "--quiet", "--out", str(out),
                 "--executor", "dask", "--scheduler", cluster.scheduler_address]
            )  # fmt: skip
        finally:
            done.set()
            watcher.join()
    assert code == 0
    assert killed, "no worker was killed while holding a table"
    results, records = load_outputs(out)
    assert sorted(r["game_index"] for r in records) == list(range(games))  # each game once
    assert results["complete"] is True and results["games_played"] == games
    assert sum(row["games"] for row in results["standings"]) == 4 * games


def test_cluster_without_table_resource_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with distributed.LocalCluster(
        n_workers=1, processes=False, dashboard_address=None, silence_logs=logging.CRITICAL
    ) as cluster:
        code = run_arena(
            ["run", *LADDER[:4], "--hands", "1", "--rounds", "1", "--seed", "1", "--quiet", "--out", str(tmp_path / "o"),
             "--memory-limit", "256", "--executor", "dask", "--scheduler", cluster.scheduler_address]
        )  # fmt: skip
    assert code == 4
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert "--resources table=N" in err


def test_dask_missing_is_a_one_line_environment_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import arena.cli.competition

    monkeypatch.setattr(arena.cli.competition, "dask_available", lambda: False)
    out = tmp_path / "o"
    code = run_arena(["run", *LADDER[:4], "--hands", "1", "--out", str(out), "--executor", "dask"])
    assert code == 4
    err = capsys.readouterr().err.strip()
    assert err == "error: --executor dask needs Dask distributed: pip install 'hearts-arena[dask]'"
    assert not out.exists()


def test_dask_is_imported_only_when_asked_for(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from arena.cli.main import main; "
        f"rc = main(['run', {LADDER[0]!r}, {LADDER[1]!r}, {LADDER[2]!r}, {LADDER[3]!r}, "
        f"'--hands', '1', '--rounds', '1', '--quiet', '--out', {str(tmp_path / 'o')!r}]); "
        "print(rc, 'distributed' in sys.modules, 'dask' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-3:] == ["0", "False", "False"], done.stdout + done.stderr
    assert json.loads((tmp_path / "o" / "results.json").read_text())["complete"] is True


def test_local_cluster_talks_tls_and_workers_get_no_key() -> None:
    """Issue 11: the LocalCluster the arena starts listens on loopback, where
    unsealed bots could connect: it talks TLS; its tasks carry settings
    without the master key (each game brings its own table key and seeds)."""
    from arena.core.keys import MasterKey
    from arena.sandbox.entrants import parse_entrants
    from arena.sandbox.launcher import LaunchOptions
    from arena.tournament.dask_executor import DaskExecutor
    from arena.tournament.runner import TournamentSettings

    settings = TournamentSettings(key=MasterKey.generate(), hands=1, target_score=None, jobs=1)
    entrants = parse_entrants([bot("first_legal", n) for n in "abcd"])
    executor = DaskExecutor(entrants, settings, LaunchOptions())
    try:
        assert executor.client.scheduler.address.startswith("tls://")
        assert executor.job.settings.key is None and executor.job.settings.seed is None
        assert settings.master_key.hex() not in repr(executor.job)
    finally:
        executor.close()
