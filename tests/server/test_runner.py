"""The server's runner (arena/server/runner.py) with a real SQLite file in a
temporary folder and real sealed sample bots (one hand a game): the gate,
ranked tables with house bots, determinism across slots, a restart after
SIGKILL."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import BOTS, needs_seal

from arena.core.resources import sample_bots_dir
from arena.sandbox import cgroups
from arena.sandbox.isolation import find_processes
from arena.sandbox.launcher import RUN_VARIABLE
from arena.server import folder, store
from arena.server.runner import STATE_FILE, RunnerConfig, start_runner

pytestmark = [needs_seal, pytest.mark.timeout(600)]


def _competition(root: Path, lag: int = 16) -> None:
    settings = folder.CompetitionSettings.from_mapping(
        {"game": {"hands": 1}, "ladder": {"lag": lag}}, "test"
    )
    folder.init_folder(root, settings)


def _submit(root: Path, participant: str, source: Path) -> int:
    comp = folder.open_folder(root)
    try:
        data = source.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        d = folder.submission_dir(comp.paths, sha)
        d.mkdir(exist_ok=True)
        (d / "bot.py").write_bytes(data)
        with comp.database.write() as conn:
            p = store.participant_by_name(conn, participant)
            if p is None:
                p = store.add_participant(conn, participant, time.time())
            sub, _ = store.add_submission(conn, p.id, sha, "py", len(data), time.time())
        return sub.id
    finally:
        comp.close()


def _run(root: Path, **config: Any) -> list[dict[str, Any]]:
    log = io.StringIO()
    runner = start_runner(root, RunnerConfig(exit_when_idle=True, log=log, **config))
    try:
        trio.run(runner.run)
    finally:
        runner.comp.close()
    return [json.loads(line) for line in log.getvalue().splitlines()]


def _state(root: Path) -> dict[str, Any]:
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            tables = {
                n: [
                    (t.number, t.status, t.seating, t.deal_key, t.void_reason)
                    for t in store.tables_in(conn, n)
                ]
                for n in ("validation", "ladder")
            }
            records = {
                t.number: store.table_records(conn, t.id) for t in store.tables_in(conn, "ladder")
            }
            through, rows = store.standings_rows(conn)
            subs = {
                s.id: s
                for p in store.list_participants(conn)
                for s in store.submissions_of(conn, p.id)
            }
            fold = store.fold_at(conn, through)
    finally:
        comp.close()
    return {
        "tables": tables,
        "records": records,
        "through": through,
        "rows": rows,
        "subs": subs,
        "fold": fold,
    }


SAMPLES = sample_bots_dir()


def test_a_submission_is_checked_validated_and_plays_ranked_tables_with_house_bots(
    tmp_path: Path,
) -> None:
    root = tmp_path / "c"
    _competition(root)
    good = _submit(root, "ann", SAMPLES / "heuristic_bot.py")
    crasher = tmp_path / "crasher.py"  # first_legal.py, crashing at its fifth play request
    crasher.write_text(
        (BOTS / "first_legal.py")
        .read_text()
        .replace(
            '    elif kind == "play":\n',
            '    elif kind == "play" and msg["trick_number"] == 5:\n'
            '        print("crasher: giving up", file=sys.stderr, flush=True)\n'
            "        sys.exit(3)\n"
            '    elif kind == "play":\n',
        )
    )
    bad = _submit(root, "bob", crasher)
    log = _run(root, slots=1, ladder_tables=2)
    s = _state(root)
    ann, bob = s["subs"][good], s["subs"][bad]
    assert (ann.status, ann.ranked_games, ann.joined_table) == ("ranked", 8, 0), (
        ann.failed_step,
        ann.reason,
    )
    assert "14 of 14 checks passed" in (ann.check_output or "")
    assert (bob.status, bob.failed_step) == ("failed", "check")
    assert bob.reason.startswith(
        "check pass-right: not reached: the bot crashed in game 1 hand 1 trick 5"
    )  # type: ignore[union-attr]
    assert "crasher: giving up" in (bob.check_output or "")  # its stderr: for its owner only
    assert s["tables"]["validation"] == [
        (0, "done", ("s1", "house:low", "house:random", "house:heuristic"), "V1", None)
    ]
    ladder = s["tables"]["ladder"]
    assert [(n, st, deal) for n, st, _, deal, _ in ladder] == [(0, "done", "L0"), (1, "done", "L1")]
    for _, _, seating, _, _ in ladder:  # one submission: three house bots fill the table
        assert sorted(seating) == ["house:heuristic", "house:low", "house:random", "s1"]
    for number, recs in s["records"].items():
        assert [r["rotation"] for r in recs] == [0, 1, 2, 3]
        assert {r["deal_key"] for r in recs} == {f"L{number}"}
        assert {len(r["hands"]) for r in recs} == {1}
        assert all(r["faults"] == [] for r in recs)
    assert s["through"] == 2
    assert sorted((r.participant, r.games, r.house) for r in s["rows"]) == [
        ("ann", 8, False),
        ("house:heuristic", 8, True),
        ("house:low", 8, True),
        ("house:random", 8, True),
    ]
    events = [e["event"] for e in log]
    assert events[0] == "start" and events[-1] == "stop"
    assert events.count("checked") == 2 and events.count("done") == 2
    assert all(set(e) >= {"t", "event"} for e in log)


def _four(root: Path) -> None:
    """Four submissions of the quickest bots (a bot's start is most of a
    one-hand game's time): three sample bots and tests/bots/first_legal.py."""
    for name, file in [
        ("ann", BOTS / "first_legal.py"),
        ("bob", SAMPLES / "low_bot.py"),
        ("cy", SAMPLES / "random_bot.py"),
        ("di", SAMPLES / "duck_bot.py"),
    ]:
        _submit(root, name, file)


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A competition of four sample-bot submissions, all validated before
    ladder table 0 (lag 1, the smallest at which two tables play at once;
    one hand a game)."""
    root = tmp_path_factory.mktemp("validated") / "c"
    _competition(root, lag=1)
    _four(root)
    # The gate is the first test's; here the four pass it directly.
    comp = folder.open_folder(root)
    with comp.database.write() as conn:
        for sid in range(1, 5):
            store.record_step(conn, sid, "check", True, 1.0)
            store.record_step(conn, sid, "validation", True, 2.0)
    comp.close()
    s = _state(root)
    assert [x.status for x in s["subs"].values()] == ["ranked"] * 4
    return root


#: Ladder tables of the determinism and restart tests (4 sealed one-hand
#: games each): with lag 1, tables 0 and 1 can play at once and table 2 is
#: chosen from table 0's fold.
TABLES = 3


def _fold_through(root: Path, number: int) -> int | None:
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            t = store.table_by_number(conn, "ladder", number)
            return t.fold_through if t is not None else None
    finally:
        comp.close()


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="module")
def calm(validated: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The state after three ladder tables played with one slot, never stopped."""
    one = _copy(validated, tmp_path_factory.mktemp("calm") / "c")
    _run(one, slots=1, cores=1, ladder_tables=TABLES)
    return _state(one)


def test_the_same_submissions_give_the_same_tables_with_one_or_two_slots(
    validated: Path, calm: dict[str, Any], tmp_path: Path
) -> None:
    two = _copy(validated, tmp_path / "two")
    log = _run(two, slots=2, cores=2, ladder_tables=TABLES)
    a, b = calm, _state(two)
    assert a["tables"]["ladder"] == b["tables"]["ladder"]
    assert len(a["tables"]["ladder"]) == TABLES
    assert {t[1] for t in a["tables"]["ladder"]} == {"done"}
    # No house bot in a field of four submissions.
    assert all(not any(n.startswith("house:") for n in t[2]) for t in a["tables"]["ladder"])
    assert a["fold"] == b["fold"] and a["through"] == TABLES
    # Table 2 was chosen from a fold of table 0 (lag 1): not the empty one.
    assert _fold_through(two, 2) == 1
    assert [(r.participant, r.mu, r.sigma, r.games) for r in a["rows"]] == [
        (r.participant, r.mu, r.sigma, r.games) for r in b["rows"]
    ]
    assert sum(r.games for r in a["rows"]) == TABLES * 16
    for t in range(TABLES):
        assert [r["scores"] for r in a["records"][t]] == [r["scores"] for r in b["records"][t]]
    # Two tables did play at once with two slots (the lag of 1 allows it).
    events = [e["event"] for e in log]
    assert events.count("table") == TABLES
    assert [i for i, e in enumerate(events) if e == "table"][1] < events.index("done")


#: The runner killed mid-table, in a process of its own. Like the in-process
#: runs (tests/conftest.py, _page_cache_kept) it skips the forget of the page
#: cache between a deal's games (a drop of the whole machine's clean cache,
#: at each of its games); the runner still decides when to forget.
RUNNER_SCRIPT = """
import sys, trio
from pathlib import Path
import arena.tournament.runner
arena.tournament.runner.forget_pages = lambda roots: None
from arena.server.runner import RunnerConfig, start_runner
r = start_runner(Path(sys.argv[1]), RunnerConfig(slots=1, ladder_tables=int(sys.argv[2]), exit_when_idle=True))
trio.run(r.run)
"""


def _bot_children(pid: int) -> list[int]:
    """The child processes of ``pid`` other than its control groups'
    watchdog (``python -I -S -c``): its bots (bubblewrap, or their interpreter)."""
    out = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in children.read_text().split():
                with contextlib.suppress(OSError):
                    argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
                    if argv[1:4] != [b"-I", b"-S", b"-c"]:
                        out.append(int(child))
    return out


def test_a_runner_killed_mid_table_leaves_nothing_and_ends_as_one_never_killed(
    validated: Path, calm: dict[str, Any], tmp_path: Path
) -> None:
    killed = _copy(validated, tmp_path / "killed")
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER_SCRIPT, str(killed), str(TABLES)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    comp = folder.open_folder(killed)  # opened once: each read sees the runner's commits
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # wait for table 1 to be playing its bots
            with comp.database.read() as conn:
                t1 = store.table_by_number(conn, "ladder", 1)
            if t1 is not None and t1.status == "playing" and _bot_children(proc.pid):
                break
            assert proc.poll() is None, "the runner ended before it was killed"
            time.sleep(0.05)
        else:
            pytest.fail("table 1 never got to mid-table")
        old_run = json.loads((killed / "runner" / STATE_FILE).read_text())["run_id"]
        record = killed / "runner" / cgroups.RECORD_FILE
        old_groups = json.loads(record.read_text())["dirs"] if record.exists() else []
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # A table's games are stored at its end, all at once: none of table 1's.
        with comp.database.read() as conn:
            t1 = store.table_by_number(conn, "ladder", 1)
            assert t1 is not None and t1.status == "playing"
            assert store.table_records(conn, t1.id) == []
    finally:
        comp.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = _run(killed, slots=1, ladder_tables=TABLES)
    start = log[0]
    assert start["event"] == "start" and start["tables"] == 1  # table 1 put back and replayed
    assert find_processes(env=f"{RUN_VARIABLE}={old_run}") == []
    a, b = calm, _state(killed)
    assert b["tables"]["ladder"] == a["tables"]["ladder"]
    assert all(t[1] == "done" and t[4] is None for t in b["tables"]["ladder"])
    assert b["fold"] == a["fold"]
    for t in range(TABLES):
        assert [r["scores"] for r in b["records"][t]] == [r["scores"] for r in a["records"][t]]
        assert all(r["faults"] == [] for r in b["records"][t])  # no fault charged
    comp = folder.open_folder(killed)
    with comp.database.read() as conn:
        assert store.table_by_number(conn, "ladder", 1).attempt == 2  # type: ignore[union-attr]
    comp.close()
    assert [d for d in old_groups if Path(d).exists()] == []
    if cgroups.probe().usable:
        assert old_groups  # the killed runner had recorded its groups
