"""The competition server's own CPU per game beside `hearts-arena run`'s, on SQLite and PostgreSQL.

Issue 29's load figure: 50 submissions of the sample bots and 1,000 one-hand
games on a two-core machine. Each measurement runs in a process of its own,
so its CPU is its own (``getrusage``):

* **run**: ``hearts-arena run`` (the CLI's ``main``) with the 50 bot files,
  ``--format ladder --games G --hands 1 --jobs 1``: the arena's CPU (its
  referees and bookkeeping), its spawn server's (``arena.sandbox.spawnserver``,
  a process of its own that forks every bot) and the bots' (the spawn
  server's children, read from its ``/proc`` entry before it ends, with any
  child of the arena's own). Their sum is the games' CPU, the figure the
  overhead is set against.
* **server, SQLite / PostgreSQL**: a competition folder (``hands = 1``) with
  50 participants, each submission a sample bot's file already past its
  check and validation (the gate is measured by the check's own benchmarks),
  and a runner (``--cores 1``: one table at a time, as ``serve`` keeps one of
  two cores for itself and the web process) choosing and playing G/4 ladder
  tables, with the web process spawned as ``serve`` does (the live queue of
  table states) and one client asking ``/api/standings`` every second (the
  pages public, so that each request is answered with the standings). The
  runner's CPU is split with a Trio instrument and two wrappers: the task
  steps of the table tasks (``_play_table`` and everything under it:
  referees, seats) with the jobs they hand to threads (``trio.to_thread``: a
  bot's uid lease, its copy, its page-cache eviction, its group's removal;
  the spawner thread's hand-offs) are the tables'; the spawn server's CPU
  (the forks) is printed on a line of its own with the bots', and counted
  with them in the games' CPU of the server's own run; the steps of every other task
  (the scheduler, the gate, the writers, the lock's watch) with their
  threads' jobs (the database calls) are the runner's own, printed by call;
  what is neither (Trio's own loop, the instrument itself, the live feed's
  queue thread) is counted only in the upper bound. The server's overhead is
  the runner's own plus the web process, per game; on PostgreSQL the
  database server's backends (the runner's and the web process's sessions)
  are shown beside. The overhead is printed against the games' CPU under
  ``run`` (the goal's figure) and against the games' CPU in the server's
  own run (its tables, spawn server and bots). The other figure printed sets
  the server's two processes against ``run``'s arena process (which also
  writes its report, and neither re-checks records nor sends a live feed).

Goal (issue 29): the overhead at most 5% of the games' CPU.

    python benchmarks/server_load.py                  # 1,000 games, both databases
    python benchmarks/server_load.py --games 200 --backends sqlite

Sealed bots (bubblewrap) as ``serve`` requires, where they can be; the same
for ``run``. Not run in CI. On a machine shared with other work the figures
move: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ("low_bot.py", "random_bot.py", "heuristic_bot.py", "duck_bot.py")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int, *, reaped: bool = False) -> float:
    """CPU seconds (user + system) of a live process, from ``/proc``; with
    ``reaped``, those of the children it has waited for instead."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    first = 13 if reaped else 11
    return (int(fields[first]) + int(fields[first + 1])) / CLK_TCK


def spawn_server_cpu() -> tuple[float, float]:
    """The CPU seconds of this process's spawn server (``arena.sandbox.spawnserver``,
    which forks every bot: its own, then its reaped children's, the bots'),
    ``(0, 0)`` if none started. Read while it still runs: it is this
    process's child, and its children's CPU reaches this process's
    ``RUSAGE_CHILDREN`` only once it is waited for (at the arena's exit)."""
    from arena.sandbox import spawn

    server = spawn._server
    if server is None or server.gone is not None:
        return 0.0, 0.0
    with contextlib.suppress(OSError):
        return proc_cpu(server.pid), proc_cpu(server.pid, reaped=True)
    return 0.0, 0.0


def make_bots(folder: Path, count: int) -> list[Path]:
    """``count`` bot files, copies of the sample bots in turn, each one byte
    sequence of its own (a submission is stored by its SHA-256)."""
    folder.mkdir(parents=True, exist_ok=True)
    bots = []
    for i in range(count):
        source = ROOT / "sample_bots" / SAMPLES[i % len(SAMPLES)]
        (folder / f"b{i:02d}").mkdir(exist_ok=True)  # sealed, a bot sees its whole folder
        path = folder / f"b{i:02d}" / f"b{i:02d}_{source.stem}.py"
        path.write_text(source.read_text() + f"\n# submission {i}\n")
        bots.append(path)
    return bots


# -- the baseline: hearts-arena run --------------------------------------------------


def child_run(args: argparse.Namespace) -> None:
    from arena.cli.main import main

    bots = make_bots(Path(args.work) / "bots", args.submissions)
    argv = ["run", *map(str, bots), "--format", "ladder", "--games", str(args.games),
            "--hands", "1", "--jobs", "1", "--seed", "29", "--quiet",
            "--out", str(Path(args.work) / "out"), "--cores", "1"]  # fmt: skip
    argv.append("--sandbox" if args.sealed else "--no-sandbox")
    start = time.monotonic()
    code = main(argv)
    wall = time.monotonic() - start
    server, reaped = spawn_server_cpu()
    games = sum(1 for _ in (Path(args.work) / "out" / "games.jsonl").open())
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "code": code, "games": games, "wall": wall, "arena": me.ru_utime + me.ru_stime,
        "bots": kids.ru_utime + kids.ru_stime + reaped, "spawn": server,
    }))  # fmt: skip


# -- the server ------------------------------------------------------------------------


def child_server(args: argparse.Namespace) -> None:
    import multiprocessing
    import threading
    import urllib.request

    import trio

    from arena.game.feed import QUEUE_SIZE
    from arena.server import folder, store, webproc
    from arena.server.runner import RunnerConfig, start_runner

    work = Path(args.work)
    bots = make_bots(work / "bots", args.submissions)
    root = work / "comp"
    # Public pages: the viewer's requests are answered (with the default,
    # pages for the signed-in, each was refused with a 401 before the
    # standings were looked at).
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "web": {"pages": "public"}}, "bench"
    )
    web_user = "nobody" if os.geteuid() == 0 else None  # as serve: root needs --user
    os.chmod(work, 0o755)  # the web process's user reaches db/ and uploads/
    folder.init_folder(root, settings, web_user, database_url=args.database_url)
    comp = folder.open_folder(root)
    import hashlib

    with comp.database.write() as conn:
        for i, bot in enumerate(bots):
            data = bot.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            p = store.add_participant(conn, f"p{i:02d}", 0.0)
            s, _ = store.add_submission(conn, p.id, sha, "py", len(data), 1.0)
            d = folder.submission_dir(comp.paths, sha)
            d.mkdir()
            (d / "bot.py").write_bytes(data)
            store.record_step(conn, s.id, "check", True, 2.0)
            store.record_step(conn, s.id, "validation", True, 3.0)
    comp.close()

    live = multiprocessing.get_context("spawn").Queue(QUEUE_SIZE)
    tables = max(1, args.games // 4)
    runner = start_runner(
        root,
        RunnerConfig(
            slots=1, cores=1, ladder_tables=tables, exit_when_idle=True, live=live,
            sandbox=True if args.sealed else None, log=open(os.environ.get("SERVER_LOAD_LOG", os.devnull), "w"),  # noqa: SIM115
        ),
    )  # fmt: skip
    web = webproc.spawn_web(
        runner.comp.paths, "127.0.0.1:0", web_user, live=live, database=runner.database.location
    )
    stop = threading.Event()

    answered = [0, 0]  # requests of the viewer, answered with the standings

    def viewer() -> None:  # one client of the standings, every second
        while not stop.wait(1.0):
            answered[0] += 1
            with contextlib.suppress(OSError):
                body = urllib.request.urlopen(web.url + "/api/standings", timeout=10).read()
                answered[1] += b'"rows"' in body

    threading.Thread(target=viewer, daemon=True).start()

    class TableCpu(trio.abc.Instrument):
        """Thread CPU of the task steps of every task under a table task
        (``table``) and of every other task (``own``: the scheduler, the
        gate, the writers, the lock's watch)."""

        def __init__(self) -> None:
            self.table = 0.0
            self.own = 0.0
            self._start = 0.0
            self._known: dict[Any, bool] = {}

        def is_table(self, task: Any) -> bool:
            known = self._known.get(task)
            if known is None:
                known = "play_table" in task.name
                parent = task.parent_nursery.parent_task if task.parent_nursery else None
                if not known and parent is not None:
                    known = self.is_table(parent)
                self._known[task] = known
            return known

        def before_task_step(self, task: Any) -> None:
            self._start = time.thread_time()

        def after_task_step(self, task: Any) -> None:
            spent = time.thread_time() - self._start
            if self.is_table(task):
                self.table += spent
            else:
                self.own += spent

        def task_exited(self, task: Any) -> None:
            self._known.pop(task, None)

    instrument = TableCpu()
    # The CPU of work done in other threads, charged to the task that asked
    # for it: a worker thread's job (trio.to_thread: a bot's uid lease and
    # copy, its page-cache eviction, its group's removal; a database call) to
    # its caller's side, the spawner thread's forks (bots only) to the tables.
    threads = {"table": 0.0, "own": 0.0}
    own_jobs: dict[str, float] = {}  # the runner's own thread CPU by what was called
    threads_lock = threading.Lock()
    original_run_sync = trio.to_thread.run_sync

    async def run_sync(fn: Any, *args: Any, **kwargs: Any) -> Any:
        side = "table" if instrument.is_table(trio.lowlevel.current_task()) else "own"
        called = args[0] if getattr(fn, "__name__", "") in ("run_read", "run_write") else fn
        name = getattr(called, "__qualname__", repr(called))

        def timed(*a: Any) -> Any:
            start = time.thread_time()
            try:
                return fn(*a)
            finally:
                with threads_lock:
                    spent = time.thread_time() - start
                    threads[side] += spent
                    if side == "own":
                        own_jobs[name] = own_jobs.get(name, 0.0) + spent

        return await original_run_sync(timed, *args, **kwargs)

    trio.to_thread.run_sync = run_sync  # type: ignore[assignment]
    from arena.sandbox import spawn

    original_spawner = spawn._spawner_thread

    class TimedSpawner:
        def __init__(self, pool: Any) -> None:
            self.pool = pool

        def submit(self, fn: Any, *args: Any) -> Any:
            def timed() -> Any:
                start = time.thread_time()
                try:
                    return fn(*args)
                finally:
                    with threads_lock:
                        threads["table"] += time.thread_time() - start

            return self.pool.submit(timed)

    spawn._spawner_thread = lambda: TimedSpawner(original_spawner())  # type: ignore[assignment,return-value]
    # The server's re-check of each record (in the table's task, so counted
    # in the tables' CPU), measured apart: run has none.
    from arena.server import recheck

    original_check = recheck.check_record
    rechecked = [0.0]

    def check_record(*args: Any) -> Any:
        start = time.thread_time()
        try:
            return original_check(*args)
        finally:
            rechecked[0] += time.thread_time() - start

    recheck.check_record = check_record
    from sqlalchemy import event

    statements: dict[str, int] = {}

    def count(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        head = " ".join(statement.split()[:4])[:60]
        statements[head] = statements.get(head, 0) + 1

    for engine in (runner.database.writer, runner.database.reader):
        event.listen(engine, "before_cursor_execute", count)
    before = resource.getrusage(resource.RUSAGE_SELF)
    web_before = proc_cpu(web.pid)
    start = time.monotonic()
    trio.run(runner.run, instruments=[instrument])
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    web_cpu = proc_cpu(web.pid) - web_before
    server_cpu, reaped = spawn_server_cpu()
    backends = 0.0
    if runner.database.dialect == "postgresql":
        with runner.database.read() as conn:
            pids = [
                int(r[0])
                for r in conn.exec_driver_sql(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'hearts-arena'"
                )
            ]
        for pid in pids:
            with contextlib.suppress(OSError):
                backends += proc_cpu(pid)
    with runner.database.read() as conn:
        games = sum(len(store.table_records(conn, t.id)) for t in store.tables_in(conn, "ladder"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # before the web process is reaped
    stop.set()
    web.close()
    runner.comp.close()
    runner_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(json.dumps({
        "games": games, "wall": wall, "runner": runner_cpu, "tables": instrument.table,
        "table_threads": threads["table"], "own": instrument.own, "own_threads": threads["own"],
        "recheck": rechecked[0], "requests": answered,
        "web": web_cpu, "backends": backends, "bots": kids.ru_utime + kids.ru_stime + reaped,
        "spawn": server_cpu,
        "statements": sum(statements.values()),
        "top": sorted(statements.items(), key=lambda kv: -kv[1])[:6],
        "own_jobs": sorted(own_jobs.items(), key=lambda kv: -kv[1])[:6],
    }))  # fmt: skip


# -- the parent --------------------------------------------------------------------------


def measure(kind: str, args: argparse.Namespace, database_url: str | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="server-load-") as work:
        argv = [sys.executable, __file__, "--child", kind, "--work", work,
                "--games", str(args.games), "--submissions", str(args.submissions)]  # fmt: skip
        if not args.sealed:
            argv.append("--no-sandbox")
        if database_url is not None:
            argv += ["--database-url", database_url]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{kind} failed:\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000, help="one-hand games (default 1000)")
    parser.add_argument("--submissions", type=int, default=50, help="default 50")
    parser.add_argument(
        "--backends", default="sqlite,postgresql", help="sqlite, postgresql or both (default)"
    )
    parser.add_argument(
        "--postgres-url", help="an empty PostgreSQL database (default: a private server)"
    )
    parser.add_argument("--no-sandbox", dest="sealed", action="store_false", default=True)
    parser.add_argument("--sealed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=("run", "server"), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "run":
        return child_run(args)
    if args.child == "server":
        return child_server(args)
    if args.sealed and shutil.which("bwrap") is None:
        print("no bubblewrap: bots unsealed", file=sys.stderr)
        args.sealed = False

    print(f"{args.submissions} submissions of the sample bots, {args.games} one-hand games, "
          f"{os.cpu_count()} cores, bots {'sealed' if args.sealed else 'unsealed'}")  # fmt: skip
    base = measure("run", args)
    games_cpu = (base["arena"] + base["spawn"] + base["bots"]) / base["games"]
    print(f"run:    {base['games']} games in {base['wall']:.1f} s; CPU per game "
          f"{1000 * games_cpu:.1f} ms (arena {1000 * base['arena'] / base['games']:.1f}, "
          f"spawn server {1000 * base['spawn'] / base['games']:.1f}, "
          f"bots {1000 * base['bots'] / base['games']:.1f})")  # fmt: skip
    for backend in args.backends.split(","):
        url = None
        server_cm: Any = None
        if backend == "postgresql":
            url = args.postgres_url
            if url is None:
                sys.path.insert(0, str(ROOT / "tests" / "server"))
                from private_pg import PostgresUnavailable, private_postgres

                try:
                    server_cm = private_postgres()
                    pg = server_cm.__enter__()
                except PostgresUnavailable as exc:
                    print(f"postgresql: skipped ({exc})")
                    continue
                pg.psql("CREATE DATABASE server_load")
                # The web process runs as nobody (as serve as root): it must
                # reach the private server's socket for this run.
                for folder_ in (pg.base, pg.socket_dir):
                    os.chmod(folder_, 0o755)
                url = pg.url("server_load")
        try:
            r = measure("server", args, url)
        finally:
            if server_cm is not None:
                server_cm.__exit__(None, None, None)
        n = r["games"]
        tables_cpu = r["tables"] + r["table_threads"]
        own = r["own"] + r["own_threads"]
        rest = r["runner"] - tables_cpu - own
        overhead = (own + r["web"]) / n
        upper = (r["runner"] - tables_cpu + r["web"]) / n
        line = (
            f"server, {backend}: {n} games in {r['wall']:.1f} s; per game: tables "
            f"{1000 * tables_cpu / n:.1f} ms ({1000 * r['table_threads'] / n:.1f} of it in "
            f"threads), the runner's own {1000 * own / n:.2f} ms ({1000 * r['own_threads'] / n:.2f} "
            f"in threads), neither {1000 * rest / n:.2f} ms, web process {1000 * r['web'] / n:.2f} ms"
        )
        if backend == "postgresql":
            line += f", database server {1000 * r['backends'] / n:.2f} ms"
        print(line)
        own_games = (tables_cpu + r["spawn"] + r["bots"]) / n  # the games' CPU in this run
        print(f"  spawn server (the bots' forks, a process of its own) {1000 * r['spawn'] / n:.2f} "
              f"ms, bots {1000 * r['bots'] / n:.1f} ms: the games' CPU in this run "
              f"{1000 * own_games:.1f} ms a game (tables + spawn server + bots)")  # fmt: skip
        asked, got = r.get("requests", [0, 0])
        print(
            f"  the viewer's requests of /api/standings: {asked}, {got} answered with the standings"
        )
        print(f"  the runner's SQL statements: {r['statements'] / n:.0f} a game "
              f"({r['statements']} in {r['wall']:.0f} s); most: "
              + "; ".join(f"{k} x{v}" for k, v in r["top"][:3]))  # fmt: skip
        print("  the runner's own thread CPU, most: " + "; ".join(
            f"{k} {1000 * v / n:.2f} ms" for k, v in r["own_jobs"]))  # fmt: skip
        # The work of threads is charged to the task that asked for it; what
        # is neither a task's step nor a thread's job (Trio's own loop, the
        # instrument, the live feed's thread) is counted in the upper bound
        # only. The other figure: the server's processes against run's arena
        # (which also writes its report, and sends no live feed).
        whole = (r["runner"] + r["web"]) / n - base["arena"] / base["games"]
        print(f"  (runner + web process) - run's arena: {1000 * whole:.2f} ms a game = "
              f"{100 * whole / games_cpu:.1f}% of the games' CPU")  # fmt: skip
        print(f"  upper bound, with neither (Trio's loop, the instrument, the live feed's "
              f"thread): {1000 * upper:.2f} ms a game = {100 * upper / games_cpu:.1f}%")  # fmt: skip
        print(f"  overhead (the runner's own + web process) {1000 * overhead:.2f} ms a game = "
              f"{100 * overhead / games_cpu:.1f}% of the games' CPU under run (goal: at most 5%)"
              + (f"; {100 * (overhead + r['backends'] / n) / games_cpu:.1f}% with the "
                 "database server's" if backend == "postgresql" else ""))  # fmt: skip
        print(f"  the same overhead against the games' CPU in this run: "
              f"{100 * overhead / own_games:.1f}%"
              + (f" ({100 * (overhead + r['backends'] / n) / own_games:.1f}% with the "
                 "database server's)" if backend == "postgresql" else ""))  # fmt: skip
        recheck = r["recheck"] / n
        print(f"  the re-check of each record (counted in the tables): {1000 * recheck:.2f} ms a "
              f"game; with it the overhead is {100 * (overhead + recheck) / games_cpu:.1f}%")  # fmt: skip


if __name__ == "__main__":
    main()
