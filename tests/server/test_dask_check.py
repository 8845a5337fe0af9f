"""Issue 29: with ``--executor dask`` a submission's check runs where ranked
tables run, as a Dask task on a worker (arena.server.dask_tables.check_task:
its archive sent as a table's is), its output and verdict returned to the
runner, which records them as in process.

Without a cluster: the runner with a player whose ``check`` is scripted (no
subprocess here), and ``check_task`` called with a stand-in for the Dask
worker (the real ``python -m arena check`` run, stopped at its budget, or
passing under the seal)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import types
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import needs_seal

pytest.importorskip("distributed")

from arena.core.resources import sample_bots_dir
from arena.sandbox.launcher import LaunchOptions
from arena.server import dask_tables, folder, gate, runner, store, workers
from arena.server import tables as server_tables
from arena.server.runner import RunnerConfig, start_runner
from arena.server.tables import CheckRun, SeatSource

BOT = (sample_bots_dir() / "low_bot.py").read_bytes()


class RemoteChecks(server_tables.InProcessTables):
    """A player elsewhere whose checks answer from a script."""

    kind = "dask"

    def __init__(self, r: runner.Runner, answers: list[CheckRun]) -> None:
        super().__init__(r.launcher, r._launcher_lock, r.deal_locks)
        self.answers = answers
        self.asked: list[tuple[SeatSource, float]] = []

    async def check(
        self, seat: SeatSource, settings: folder.CompetitionSettings, budget: float
    ) -> CheckRun | None:
        self.asked.append((seat, budget))
        return self.answers.pop(0)


def _competition(root: Path, check_seconds: float = 30.0) -> str:
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "gate": {"check_seconds": check_seconds}}, "t"
    )
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    sha = hashlib.sha256(BOT).hexdigest()
    try:
        d = folder.submission_dir(comp.paths, sha)
        d.mkdir()
        (d / "bot.py").write_bytes(BOT)
        with comp.database.write() as conn:
            p = store.add_participant(conn, "ann", 0.0)
            store.add_submission(conn, p.id, sha, "py", len(BOT), 1.0)
    finally:
        comp.close()
    return sha


def _gate_once(root: Path, answers: list[CheckRun]) -> tuple[RemoteChecks, Any, list[Any]]:
    """Run the runner's check of the one queued submission on the scripted player."""
    log = io.StringIO()
    r = start_runner(root, RunnerConfig(sandbox=None, ladder_tables=0, log=log))
    player = RemoteChecks(r, answers)
    r.tables = player

    async def no_subprocess(argv: list[str]) -> tuple[int | None, str]:
        raise AssertionError("the check ran on the server")

    r._run_check = no_subprocess  # type: ignore[method-assign]
    try:
        with r.comp.database.read() as conn:
            sub = store.submissions_in(conn, "queued")[0]
        trio.run(r._check, sub)
        with r.comp.database.read() as conn:
            row = store.submission(conn, sub.id)
    finally:
        r.comp.close()
    return player, row, [json.loads(x) for x in log.getvalue().splitlines()]


def test_the_check_runs_on_a_worker_and_its_verdict_is_recorded(tmp_path: Path) -> None:
    root = tmp_path / "c"
    sha = _competition(root)
    output = "ok hello\nFAIL illegal played 2H on the first trick\n"
    player, row, log = _gate_once(root, [CheckRun(gate.CHECK_FAILED, output, "tls://w1:1")])
    [(seat, budget)] = player.asked
    assert (seat.name, seat.kind, seat.sha256, seat.house, budget) == ("s1", "py", sha, None, 30.0)
    assert seat.folder is not None and (seat.folder / "bot.py").read_bytes() == BOT
    assert (row.status, row.failed_step) == ("failed", "check")
    assert row.reason == "check illegal: played 2H on the first trick"
    assert row.check_output == output
    assert [e["worker"] for e in log if e["event"] == "check_worker"] == ["tls://w1:1"]


def test_a_check_lost_on_the_cluster_twice_is_the_servers_not_the_submissions(
    tmp_path: Path,
) -> None:
    root = tmp_path / "c"
    _competition(root, check_seconds=0)
    lost = CheckRun(-1, "the cluster could not run the check: lost with a Dask worker 4 times", "")
    player, row, log = _gate_once(root, [lost, lost])
    assert [b for _, b in player.asked] == [math.inf, math.inf]  # check_seconds 0: no budget
    assert (row.status, row.failed_step) == ("failed", "check")
    assert row.reason.startswith("the server could not check it twice")
    assert "lost with a Dask worker 4 times" in row.reason
    assert len([e for e in log if e["event"] == "check_server_fault"]) == 2  # one a run


def test_a_check_passing_on_a_worker_moves_the_submission_to_validation(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _competition(root)
    _, row, _ = _gate_once(root, [CheckRun(gate.CHECK_PASSED, "ok hello\n", "tls://w2:1")])
    assert (row.status, row.check_output) == ("validation", "ok hello\n")


# -- check_task on a worker (a stand-in for the Dask worker) ---------------------------


#: The stand-in scheduler's archives by SHA-256, and each fetch from it.
SCHEDULER: dict[str, bytes] = {}
FETCHES: list[str] = []


class _Worker:
    """A stand-in for the Dask worker running the task ``"k"`` (``TASK.state``)."""

    def __init__(self, expected: workers.Expected) -> None:
        self.address = "tls://127.0.0.1:1"
        plugin = dask_tables.AdmissionPlugin(expected)
        plugin.checked = True
        self.plugins = {dask_tables.PLUGIN_NAME: plugin}
        self.state = types.SimpleNamespace(tasks={"k": TASK})

    def get_current_task(self) -> str:
        return "k"


#: The worker's state of the task a test runs.
TASK = types.SimpleNamespace(state="executing")


def _task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: float, own_cache: bool = False
) -> tuple[dask_tables.CheckTask, bytes]:
    """A check task for ``BOT``; the scheduler's metadata is a stand-in that
    answers its archive's bytes (tests may change ``SCHEDULER``) and counts
    the fetches in ``FETCHES``; ``own_cache``: the worker's cache is a fresh
    folder under ``tmp_path``."""
    folder_ = tmp_path / "sub"
    folder_.mkdir()
    (folder_ / "bot.py").write_bytes(BOT)
    sha = hashlib.sha256(BOT).hexdigest()
    seat = SeatSource("s1", None, "py", sha, folder_)
    data = dask_tables.seat_archive(seat)
    expected = workers.Expected("v", "d", LaunchOptions())
    monkeypatch.setattr(dask_tables, "get_worker", lambda: _Worker(expected))
    TASK.state = "executing"
    SCHEDULER.clear()
    SCHEDULER[hashlib.sha256(data).hexdigest()] = data
    FETCHES.clear()

    def from_scheduler(sha: str) -> bytes | None:
        FETCHES.append(sha)
        return SCHEDULER.get(sha)

    monkeypatch.setattr(dask_tables, "_scheduler_archive", from_scheduler)
    if own_cache:
        cache = tmp_path / "cache"
        cache.mkdir(mode=0o700)
        monkeypatch.setattr(dask_tables, "worker_cache", lambda: cache)
    settings = folder.CompetitionSettings.from_mapping({"game": {"hands": 1}}, "t")
    task = dask_tables.CheckTask(seat, hashlib.sha256(data).hexdigest(), settings, budget, expected)
    return task, data


def test_check_task_refuses_an_archive_with_other_bytes_as_the_servers_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, data = _task(tmp_path, monkeypatch, 30.0, own_cache=True)
    SCHEDULER[task.archive] = data + b"#"
    got = dask_tables.check_task(task)
    assert isinstance(got, CheckRun)
    assert (got.code, got.worker) == (-1, "tls://127.0.0.1:1")
    assert "arrived with other bytes" in got.output
    assert gate.judge_check(got.code, got.output).server_fault
    assert not any((tmp_path / "cache").iterdir())  # nothing kept of it


def test_check_task_fetches_its_archive_once_then_finds_it_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = _task(tmp_path, monkeypatch, 0.05, own_cache=True)
    for _ in range(3):
        got = dask_tables.check_task(task)
        assert isinstance(got, CheckRun) and got.code is None  # stopped at its budget
    assert len(FETCHES) == 1  # the bytes came once
    assert FETCHES[0] == task.archive
    assert (tmp_path / "cache" / task.archive / "bot.py").read_bytes() == BOT
    assert dask_tables.fetch_archive(task.archive) == (tmp_path / "cache" / task.archive, False)


def test_check_task_stops_the_check_once_the_scheduler_releases_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = _task(tmp_path, monkeypatch, math.inf)
    TASK.state = "cancelled"  # the runner cancelled its future (its stop)
    got = dask_tables.check_task(task)
    assert isinstance(got, CheckRun) and got.code is None  # stopped, no budget to run past


def test_check_task_says_which_archive_the_scheduler_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = _task(tmp_path, monkeypatch, 30.0, own_cache=True)
    SCHEDULER.clear()  # a scheduler started again: its metadata is gone
    got = dask_tables.check_task(task)
    assert got == dask_tables.ArchivesMissing((task.archive,))


def test_check_task_stops_the_check_at_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = _task(tmp_path, monkeypatch, 0.05)
    got = dask_tables.check_task(task)
    assert (
        isinstance(got, CheckRun) and got.code is None
    )  # stopped: the runner's "ran past its time budget"
    result = gate.judge_check(got.code, got.output)
    assert (result.passed, result.server_fault) == (False, True)
    # Unpacked once into the worker's cache, under its archive's SHA-256.
    assert (dask_tables.worker_cache() / task.archive / "bot.py").read_bytes() == BOT


@needs_seal
@pytest.mark.timeout(600)
def test_check_task_runs_the_real_check_sealed_and_it_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = _task(tmp_path, monkeypatch, math.inf)
    got = dask_tables.check_task(task)
    assert isinstance(got, CheckRun)
    result = gate.judge_check(got.code, got.output)
    assert (got.code, result.passed) == (gate.CHECK_PASSED, True), got.output[-2000:]
    assert "PASS  bye-exit" in got.output
    assert str(dask_tables.worker_cache() / task.archive / "bot.py") in got.output


@needs_seal
@pytest.mark.timeout(900)
def test_on_a_local_cluster_the_check_runs_on_a_worker_then_validation(tmp_path: Path) -> None:
    """One worker process on loopback with TLS: the submission's check runs
    there (the log names the worker), passes, and its validation follows."""
    root = tmp_path / "c"
    _competition(root, check_seconds=300)
    log = io.StringIO()
    r = start_runner(
        root,
        RunnerConfig(
            ladder_tables=0, exit_when_idle=True, log=log, executor="dask", workers=1, slots=1
        ),
    )
    try:
        trio.run(r.run)
    finally:
        r.comp.close()
    events = [json.loads(x) for x in log.getvalue().splitlines()]
    [where] = [e["worker"] for e in events if e["event"] == "check_worker"]
    assert where.startswith("tls://127.0.0.1:")
    assert [e["passed"] for e in events if e["event"] == "checked"] == [True]
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            [sub] = store.submissions_in(conn, "ranked")
    finally:
        comp.close()
    assert sub.check_output is not None and "PASS  bye-exit" in sub.check_output


# -- the runner's side: archives put on the scheduler once ----------------------------


class _Future:
    def __init__(self, result: Any) -> None:
        self._result = result

    def add_done_callback(self, fn: Any) -> None:
        fn(self)

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self._result

    def cancel(self) -> None:
        pass


class _Client:
    """A stand-in for the Dask client: records what is put in the scheduler's
    metadata and answers each task from a script."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.metadata: list[tuple[list[str], bytes]] = []
        self.tasks: list[Any] = []

    def subscribe_topic(self, topic: str, handler: Any) -> None:
        pass

    def register_plugin(self, plugin: Any, name: str) -> None:
        pass

    def set_metadata(self, keys: list[str], value: bytes) -> None:
        self.metadata.append((keys, value))

    def scheduler_info(self) -> dict[str, Any]:
        info: dict[str, Any] = getattr(self, "info", {"workers": {}})
        return info

    def submit(self, fn: Any, task: Any, **kwargs: Any) -> _Future:
        self.tasks.append(task)
        return _Future(self.answers.pop(0))


def test_archives_are_put_on_the_scheduler_once_and_again_when_it_lost_them(
    tmp_path: Path,
) -> None:
    folder_ = tmp_path / "sub"
    folder_.mkdir()
    (folder_ / "bot.py").write_bytes(BOT)
    sha = hashlib.sha256(BOT).hexdigest()
    seat = SeatSource("s1", None, "py", sha, folder_)
    settings = folder.CompetitionSettings.from_mapping({"game": {"hands": 1}}, "t")
    passed = CheckRun(gate.CHECK_PASSED, "ok\n", "tls://w1:1")
    client = _Client([passed, dask_tables.ArchivesMissing((sha,)), passed])
    player = dask_tables.DaskTables(client, None, LaunchOptions())  # type: ignore[arg-type]
    assert trio.run(player.check, seat, settings, 30.0) == passed
    assert client.metadata == [([dask_tables.ARCHIVE_METADATA, sha], BOT)]
    # The second check sends no bytes; the scheduler lacks them (started
    # again): they are put back and the task sent once more.
    assert trio.run(player.check, seat, settings, 30.0) == passed
    assert client.metadata == [([dask_tables.ARCHIVE_METADATA, sha], BOT)] * 2
    assert len(client.tasks) == 3
    assert all(t.archive == sha and not hasattr(t, "data") for t in client.tasks)


def test_the_slots_follow_the_table_resources_of_the_clusters_workers() -> None:
    """--scheduler without --cores: as many tables at once as the workers
    declare (``table`` resources), a refused worker's (set to 0) and a
    retired one's left out."""
    info = {
        "workers": {
            "tls://a:1": {"resources": {"table": 8}},
            "tls://b:1": {"resources": {"table": 4.0, "gpu": 1}},
            "tls://c:1": {"resources": {"table": 0}},  # refused at its join
            "tls://d:1": {"resources": {}},
            "tls://e:1": {"resources": {"table": 2}},
        }
    }
    assert dask_tables.cluster_tables(info) == 14
    assert dask_tables.cluster_tables(info, {"tls://e:1"}) == 12
    client = _Client([])
    client.info = info  # type: ignore[attr-defined]
    got: list[int] = []
    player = dask_tables.DaskTables(client, None, LaunchOptions(), on_capacity=got.append)  # type: ignore[arg-type]
    player.follow_capacity()
    player._retired.add("tls://a:1")
    player.follow_capacity()
    assert got == [14, 6]
    config = runner.RunnerConfig(slots=64, slots_from_cluster=True)
    runner._set_slots(config)(0)
    assert config.slots == 1  # never none: a table waits for a worker
