"""The server's tables on Dask (issue 29; arena/server/dask_tables.py): a
local cluster of worker processes on loopback with TLS, real sealed bots
(four one-hand submissions, all validated before ladder table 0, lag 1):
the same tables and standings as in process; a worker killed with SIGKILL in
mid-table (played again, nothing charged, one record a game); killed four
times (void, listed with its submissions); a tampered record (refused, the
table void, its worker flagged); a worker of another arena version refused
at its join, on the organiser's scheduler with the competition's certificates."""

from __future__ import annotations

import functools
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import BOTS, needs_seal

pytest.importorskip("distributed")

import cloudpickle
import dask_tasks

from arena.core.resources import sample_bots_dir
from arena.server import folder, store, workers
from arena.server.runner import RunnerConfig, start_runner

pytestmark = [needs_seal, pytest.mark.timeout(900)]

cloudpickle.register_pickle_by_value(dask_tasks)

SAMPLES = sample_bots_dir()
#: Ladder tables of each run: with lag 1, table 2 is chosen from table 0's fold.
TABLES = 3


def _submit(root: Path, participant: str, source: Path) -> None:
    import hashlib

    comp = folder.open_folder(root)
    try:
        data = source.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        d = folder.submission_dir(comp.paths, sha)
        d.mkdir(exist_ok=True)
        (d / "bot.py").write_bytes(data)
        with comp.database.write() as conn:
            p = store.add_participant(conn, participant, time.time())
            sub, _ = store.add_submission(conn, p.id, sha, "py", len(data), time.time())
            store.record_step(conn, sub.id, "check", True, 1.0)
            store.record_step(conn, sub.id, "validation", True, 2.0)
    finally:
        comp.close()


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four submissions of the quickest bots, ranked before ladder table 0."""
    root = tmp_path_factory.mktemp("dask") / "c"
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": 1}}, "test"
    )
    folder.init_folder(root, settings)
    for name, file in [
        ("ann", BOTS / "first_legal.py"),
        ("bob", SAMPLES / "low_bot.py"),
        ("cy", SAMPLES / "random_bot.py"),
        ("di", SAMPLES / "duck_bot.py"),
    ]:
        _submit(root, name, file)
    return root


def _copy(validated: Path, tmp_path: Path) -> Path:
    root = tmp_path / "c"
    shutil.copytree(validated, root)
    return root


def _run(root: Path, before: Any = None, **config: Any) -> list[dict[str, Any]]:
    """Run the runner until idle (``before(runner)`` first); its log."""
    log = io.StringIO()
    config.setdefault("slots", 2)
    config.setdefault("ladder_tables", TABLES)
    r = start_runner(root, RunnerConfig(exit_when_idle=True, log=log, **config))
    try:
        if before is not None:
            before(r)
        trio.run(r.run)
    finally:
        r.comp.close()
    return [json.loads(line) for line in log.getvalue().splitlines()]


def _state(root: Path) -> dict[str, Any]:
    """The ladder's tables (number, status, seating, reason), each table's
    records without their timings, and the standings' rows."""
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            tables = [
                (t.number, t.status, t.seating, t.void_reason)
                for t in store.tables_in(conn, "ladder")
            ]
            games = {
                t.number: [
                    (r["rotation"], r["seats"], r["bot_seeds"], r["scores"], r["ranks"], r["hands"])
                    for r in store.table_records(conn, t.id)
                ]
                for t in store.tables_in(conn, "ladder")
            }
            through, rows = store.standings_rows(conn)
            events = workers.worker_events(conn)
    finally:
        comp.close()
    return {
        "tables": tables,
        "games": games,
        "through": through,
        "rows": sorted((r.participant, r.games, r.mu, r.sigma) for r in rows),
        "workers": events,
    }


@pytest.fixture(scope="module")
def in_process(validated: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference: the same competition played in the runner's loop."""
    root = _copy(validated, tmp_path_factory.mktemp("local"))
    log = _run(root)
    assert [e["executor"] for e in log if e["event"] == "start"] == ["in-process"]
    s = _state(root)
    assert [t[1] for t in s["tables"]] == ["done"] * TABLES
    assert s["through"] == TABLES
    return s


def _same_results(s: dict[str, Any], ref: dict[str, Any]) -> None:
    assert s["tables"] == ref["tables"]
    assert s["games"] == ref["games"]
    assert s["rows"] == ref["rows"]


def _dask_starts(log: list[dict[str, Any]]) -> None:
    assert [e["executor"] for e in log if e["event"] == "start"] == ["dask"]


def test_tables_on_two_dask_workers_give_the_in_process_standings(
    validated: Path, tmp_path: Path, in_process: dict[str, Any]
) -> None:
    """The same standings as in process. The local cluster listens on its TLS
    ports only. Tasks carry the archives' SHA-256s only: each of the two
    workers (a cache of its own here) fetches each of the four archives from
    the scheduler once, at its first table, and none at its next: 8 fetches
    for the 12 seats of three tables."""
    root = _copy(validated, tmp_path)
    cache = tmp_path / "caches"
    task = functools.partial(dask_tasks.own_cache, cache=str(cache))
    log = _run(
        root,
        before=lambda r: _listens_on_tls_only(r.tables.client),
        executor="dask",
        workers=2,
        dask_task=task,
    )
    _dask_starts(log)
    s = _state(root)
    _same_results(s, in_process)
    admitted = [e for e in log if e["event"] == "worker"]
    assert sorted(e["status"] for e in admitted) == ["admitted", "admitted"]
    assert {e[2] for e in s["workers"]} == {"admitted"}
    shas = _shas(root)
    assert len(shas) == 4
    played = [e for e in log if e["event"] == "table_worker"]
    assert sorted(e["number"] for e in played) == list(range(TABLES))
    fetched = _fetched_by_worker(log)
    assert len(fetched) == 2  # tables 0 and 1 at once, one on each worker
    for worker, got in fetched.items():
        assert sorted(got) == sorted(shas), worker  # each archive once
        assert _cache_of(cache, worker) == shas
    first: dict[str, int] = {}
    for e in played:
        first.setdefault(e["worker"], e["number"])
    for e in played:  # all four at a worker's first table, none after
        assert len(e["fetched"]) == (4 if first[e["worker"]] == e["number"] else 0)
    assert sum(len(g) for g in fetched.values()) == 8 < 4 * TABLES


def _listens_on_tls_only(client: Any) -> None:
    """No HTTP server of Dask's (the dashboard's, /health, /metrics, the
    scheduler's info pages) listens in a local cluster: an unsealed bot
    could reach loopback. What listens is the scheduler's, the nannies' and
    the workers' TLS ports."""
    import psutil

    info = client.scheduler_info()
    tls = {info["address"]}
    http = {info["services"]["dashboard"]}
    for address, w in info["workers"].items():
        tls.update({address, w["nanny"]})
        http.update(w["services"].values())
    me = psutil.Process()

    def listening(processes: list[Any]) -> set[int]:
        return {
            c.laddr.port
            for p in processes
            for c in p.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN
        }

    ports = {int(a.rsplit(":", 1)[1]) for a in tls}
    assert all(a.startswith("tls://127.0.0.1:") for a in tls)
    everything = listening([me, *me.children(recursive=True)])
    assert ports <= everything
    assert not http & everything, (http, everything)
    assert listening(me.children(recursive=True)) <= ports  # a worker: its TLS port only


def _shas(root: Path) -> set[str]:
    """The four submissions' SHA-256s (a ``.py``'s archive is its bytes)."""
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            return {s.sha256 for s in store.submissions_in(conn, "ranked")}
    finally:
        comp.close()


def _fetched_by_worker(log: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each worker's archive fetches from the scheduler, over the tables it
    reported (``table_worker``), in order."""
    out: dict[str, list[str]] = {}
    for e in log:
        if e["event"] == "table_worker":
            out.setdefault(e["worker"], []).extend(e["fetched"])
    return out


def _cache_of(cache: Path, worker: str) -> set[str]:
    return {p.name for p in (cache / worker.replace("/", "_").replace(":", "_")).iterdir()}


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 3])
def test_the_standings_do_not_depend_on_the_number_of_workers(
    validated: Path, tmp_path: Path, in_process: dict[str, Any], n: int
) -> None:
    root = _copy(validated, tmp_path)
    _dask_starts(_run(root, executor="dask", workers=n, slots=n))
    _same_results(_state(root), in_process)


# The kill is on purpose: Dask's scheduler may log "Couldn't gather keys" as an
# ERROR when the worker dies holding a finished table.
@pytest.mark.allow_error_logs
def test_a_worker_killed_in_mid_table_has_its_table_played_again_and_nothing_charged(
    validated: Path, tmp_path: Path, in_process: dict[str, Any]
) -> None:
    root = _copy(validated, tmp_path)
    counter = tmp_path / "kills"
    cache = tmp_path / "caches"
    task = functools.partial(
        dask_tasks.kill_worker, deal="L1", counter=str(counter), kills=1, cache=str(cache)
    )
    log = _run(root, executor="dask", workers=2, dask_task=task)
    assert counter.stat().st_size == 2  # killed once, played again once
    s = _state(root)
    _same_results(s, in_process)  # one record a game, no fault: nothing charged
    assert [len(g) for g in s["games"].values()] == [4] * TABLES
    assert all(r[0] is not None for g in s["games"].values() for r in g)
    assert not [e for e in log if e["event"] == "void"]
    # The rerun found the archives: the scheduler holds them, not the dead
    # worker; every worker that played a table fetched each archive once.
    shas = _shas(root)
    played = [e for e in log if e["event"] == "table_worker"]
    assert sorted(e["number"] for e in played) == list(range(TABLES))
    for worker, got in _fetched_by_worker(log).items():
        assert sorted(got) == sorted(shas), worker


@pytest.mark.slow  # a local cluster and worker restarts: over 60 s on a loaded two-core machine
@pytest.mark.allow_error_logs  # Dask's scheduler logs the table it gives up on as an ERROR
def test_a_table_whose_worker_is_killed_four_times_is_void_and_listed_with_its_submissions(
    validated: Path, tmp_path: Path
) -> None:
    root = _copy(validated, tmp_path)
    counter = tmp_path / "kills"
    task = functools.partial(dask_tasks.kill_worker, deal="L0", counter=str(counter), kills=4)
    log = _run(root, executor="dask", workers=2, dask_task=task)
    assert counter.stat().st_size == 4
    s = _state(root)
    number, status, seating, reason = s["tables"][0]
    assert (number, status) == (0, "void")
    assert reason.startswith("lost with a Dask worker 4 times (its submissions: ")
    assert all(name in reason for name in seating)
    assert [t[1] for t in s["tables"][1:]] == ["done", "done"]
    assert s["games"][0] == []  # nothing of it stored: never rated, never charged
    comp = folder.open_folder(root)
    try:
        listing = folder.listing(comp)
    finally:
        comp.close()
    assert any("ladder table 0 (L0): lost with a Dask worker 4 times" in x for x in listing)
    assert [e["number"] for e in log if e["event"] == "void"] == [0]
    for row in s["rows"]:  # three tables, one void: at most eight games each
        assert row[1] <= 8


def test_a_table_stopped_at_its_time_budget_stops_on_its_worker(tmp_path: Path) -> None:
    """A ladder table of four 50-hand games cannot end within its budget of
    3 s: the runner stops it, plays it again, stops it again (void). Each
    stopped task ends on its worker (its referee and bots closed) rather
    than playing its four games out: its line says fewer than 4 (and the
    second run, on the one worker, could start only once the first ended)."""
    root = tmp_path / "c"
    settings = folder.CompetitionSettings.from_mapping(
        {
            "game": {"hands": 50},
            "ladder": {"lag": 1, "table_seconds": 3},
        },
        "test",
    )
    folder.init_folder(root, settings)
    for name in ("ann", "bob", "cy", "di"):
        bot = tmp_path / f"{name}.py"
        bot.write_text((BOTS / "first_legal.py").read_text() + f"\n# {name}\n")
        _submit(root, name, bot)
    out = tmp_path / "ends"
    task = functools.partial(dask_tasks.note_end, out=str(out))
    log = _run(root, executor="dask", workers=1, slots=1, dask_task=task, ladder_tables=1)
    assert [e["run"] for e in log if e["event"] == "table_stopped"] == [1, 2]
    assert _state(root)["tables"][0][1:2] == ("void",)
    ends = out.read_text().split() if out.exists() else []
    assert ends[0::2] == ["L0", "L0"], ends  # both runs ended on their workers
    assert all(int(n) < 4 for n in ends[1::2])


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("cards", "game l0-k2 hand 1: dealt cards are not the key's deal (R2)"),
        pytest.param("seed", "game l0-k2: bot seeds are not the key's", marks=pytest.mark.slow),
    ],
)
def test_a_tampered_record_is_refused_its_table_void_and_its_worker_flagged(
    validated: Path, tmp_path: Path, how: str, problem: str
) -> None:
    root = _copy(validated, tmp_path)
    task = functools.partial(dask_tasks.tamper, deal="L0", how=how)
    # One table, so one worker: a second would only start and wait.
    log = _run(root, executor="dask", workers=1, slots=1, dask_task=task, ladder_tables=1)
    s = _state(root)
    assert s["tables"][0][:2] == (0, "void")
    assert s["tables"][0][3] == f"its record was refused by the server's re-check: {problem}"
    assert s["games"][0] == []  # the tampered table's records were never stored
    flagged = [e for e in s["workers"] if e[2] == "flagged"]
    assert [(e[0].startswith("tls://"), e[3]) for e in flagged] == [(True, problem)]
    assert [e["reason"] for e in log if e["event"] == "worker_flagged"] == [problem]
    assert all(row[1] == 0 for row in s["rows"])  # nothing rated


def _cluster_security(root: Path, out: Path) -> Any:
    """The organiser's scheduler and a worker with certificates from the
    competition's authority (serve --worker-cert)."""
    from distributed import Security

    comp = folder.open_folder(root)
    try:
        sched = workers.issue_certificate(comp.paths, "scheduler", out)
        work = workers.issue_certificate(comp.paths, "worker1", out)
    finally:
        comp.close()
    return Security(
        tls_ca_file=str(sched.ca),
        tls_scheduler_cert=str(sched.cert),
        tls_scheduler_key=str(sched.key),
        tls_worker_cert=str(work.cert),
        tls_worker_key=str(work.key),
        tls_client_cert=str(work.cert),
        tls_client_key=str(work.key),
        require_encryption=True,
    )


#: A ``dask worker`` whose arena reports another version.
OTHER_VERSION_WORKER = """
import sys
import arena.server.workers as w
w.arena_version = lambda: "0.0.0-other"
from distributed.cli.dask_worker import main
sys.argv = ["dask worker", *sys.argv[1:]]
main()
"""


@pytest.mark.slow  # a second worker of its own: over 60 s on a loaded two-core machine
def test_a_worker_of_another_arena_version_is_refused_when_it_joins(
    validated: Path, tmp_path: Path
) -> None:
    """On the organiser's scheduler (--scheduler tls://..., the runner's
    client with its own certificate): a worker joining after the server
    connected, whose arena is another version, is refused, retired and
    listed; the tables play on the other worker."""
    import logging

    from distributed import LocalCluster

    from arena.server.dask_tables import scheduler_config

    root = _copy(validated, tmp_path)
    out = tmp_path / "certs"
    out.mkdir()
    security = _cluster_security(root, out)
    import dask

    with dask.config.set(scheduler_config()):
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            security=security,
            resources={"table": 1},
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    bad = None
    try:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        log_out = io.StringIO()
        r = start_runner(
            root,
            RunnerConfig(
                slots=64,
                ladder_tables=1,
                exit_when_idle=True,
                log=log_out,
                executor="dask",
                scheduler=address,
                slots_from_cluster=True,
            ),
        )
        assert r.config.slots == 1  # its one worker's table=1, not a guess
        try:
            bad = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    OTHER_VERSION_WORKER,
                    address,
                    "--no-nanny",
                    "--nthreads",
                    "1",
                    "--resources",
                    "table=1",
                    "--no-dashboard",
                    "--name",
                    "other-version",
                    "--tls-ca-file",
                    str(out / "ca.pem"),
                    "--tls-cert",
                    str(out / "worker1.pem"),
                    "--tls-key",
                    str(out / "worker1.key"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            client: Any = r.tables.client  # type: ignore[attr-defined]
            client.wait_for_workers(2, timeout=120)  # it joins after the plugin was registered
            trio.run(r.run)
        finally:
            r.comp.close()
        assert r.config.slots == 1  # the refused worker's table resource not counted
        assert bad.wait(timeout=120) is not None  # retired: its process ended
        log = [json.loads(x) for x in log_out.getvalue().splitlines()]
        refused = [e for e in log if e["event"] == "worker" and e["status"] == "refused"]
        assert [(e["name"], e["reason"]) for e in refused] == [
            (
                "other-version",
                f"arena version 0.0.0-other, the server's is {workers.arena_version()}",
            )
        ]
        s = _state(root)
        assert s["tables"][0][1] == "done"
        comp = folder.open_folder(root)
        try:
            with comp.database.read() as conn:
                listing = workers.worker_lines(conn)
        finally:
            comp.close()
        assert listing[0] == "1 workers refused or flagged"
        assert listing[1].startswith("  refused other-version (tls://")
    finally:
        if bad is not None and bad.poll() is None:
            bad.kill()
            bad.wait()
        cluster.close()


def test_worker_cert_writes_a_certificate_signed_by_the_competitions_authority(
    validated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cryptography import x509

    from arena.cli.main import main

    root = _copy(validated, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["serve", str(root), "--worker-cert", "w1.example", str(out)]) == 0
    cert = x509.load_pem_x509_certificate((out / "w1.example.pem").read_bytes())
    ca = x509.load_pem_x509_certificate((out / "ca.pem").read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "CN=w1.example"
    assert (out / "w1.example.key").stat().st_mode & 0o777 == 0o600
    assert (root / "workers").stat().st_mode & 0o777 == 0o700
    assert (root / "workers" / "ca.key").stat().st_mode & 0o777 == 0o600
    # A second certificate of the same name is refused with one line.
    capsys.readouterr()
    assert main(["serve", str(root), "--worker-cert", "w1.example", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {out / 'w1.example.pem'} exists: remove it or write to another folder"]
    assert main(["serve", str(root), "--worker-cert", "../x", str(out)]) == 2
    assert "is not a host name or label" in capsys.readouterr().err
