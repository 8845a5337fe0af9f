"""What a bot can and cannot do, with and without --sandbox, and the checks
made before a tournament starts."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BOTS, bot, bot_path, load_outputs, needs_seal, run_arena, run_processes

from arena.cli.main import EXIT_ENVIRONMENT


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


def probe_reports(out: Path) -> list[dict]:
    _, records = load_outputs(out)
    reports = []
    for rec in records:
        seat = rec["seats"].index("probe")
        line = next(x for x in rec["stderr"][seat].splitlines() if x.startswith("PROBE "))
        reports.append(json.loads(line.removeprefix("PROBE ")))
    return reports


def run_probe(out: Path, port: int, *extra: str) -> int:
    entrants = [f"probe={bot_path('probe')} {port}", *(bot("first_legal", n) for n in "abc")]
    return run_arena(
        [
            "run",
            *entrants,
            "--hands",
            "1",
            "--rounds",
            "1",
            "--seed",
            "1",
            "--out",
            str(out),
            "--quiet",
            *extra,
        ]
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")
def test_without_sandbox_bots_run_as_their_own_unprivileged_user(
    tmp_path: Path, listener: int
) -> None:
    assert run_probe(tmp_path / "out", listener, "--no-sandbox") == 0
    reports = probe_reports(tmp_path / "out")
    assert len(reports) == 4
    for r in reports:
        assert r["uid"] != 0
        assert r["home_private"] and r["home_owned"] and r["write_home"]
        assert r["write_cwd"] is False  # the bot folder belongs to root
        assert r["connect"] is True  # no network isolation with --no-sandbox
        assert r["processes_visible"] > 3
        assert "HEARTS_ARENA_RUN" in r["env"]
        assert not {"PYTEST_CURRENT_TEST", "VIRTUAL_ENV"} & set(r["env"])
    assert len({r["uid"] for r in reports}) >= 1


@needs_seal
def test_sandbox_has_no_network_no_other_processes_and_read_only_files(
    tmp_path: Path, listener: int
) -> None:
    assert run_probe(tmp_path / "out", listener) == 0  # sealed by default
    reports = probe_reports(tmp_path / "out")
    assert len(reports) == 4
    for r in reports:
        assert r["uid"] != 0 or os.geteuid() != 0
        assert r["home_private"] and r["home_owned"]
        assert r["connect"] is False
        assert r["write_cwd"] is False
        assert r["write_home"] is True
        assert r["processes_visible"] <= 3  # its own pid namespace
    results, _ = load_outputs(tmp_path / "out")
    assert results["settings"]["isolation"]["sandbox"] is True
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    assert run_processes(tmp_path / "out") == []


@needs_seal
def test_setsid_grandchild_dies_with_the_sandbox(tmp_path: Path) -> None:
    entrants = [
        f"g={BOTS / 'hostile_grandchild.py'} setsid",
        *(bot("first_legal", n) for n in "abc"),
    ]
    code = run_arena(
        [
            "run",
            *entrants,
            "--hands",
            "1",
            "--rounds",
            "1",
            "--seed",
            "1",
            "--sandbox",
            "--same-user",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ]
    )
    assert code == 0
    assert run_processes(tmp_path / "out") == []


@needs_seal
def test_sandbox_keeps_bots_that_live_under_tmp(open_tmp: Path) -> None:
    """The sandbox hides /tmp, except what the bot needs from it (read-only)."""
    shutil.copy(BOTS / "first_legal.py", open_tmp / "mine.py")
    (open_tmp / "mine.py").chmod(0o644)
    out = open_tmp / "out"
    code = run_arena(
        [
            "run",
            str(open_tmp / "mine.py"),
            "sample:low",
            "sample:duck",
            "sample:random",
            "--hands",
            "1",
            "--rounds",
            "1",
            "--seed",
            "3",
            "--sandbox",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    results, _ = load_outputs(out)
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    assert {row["name"] for row in results["standings"]} == {"mine", "low", "duck", "random"}


def test_sandbox_unavailable_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    code = run_arena(
        ["run", *(bot("first_legal", n) for n in "abcd"), "--sandbox", "--out", str(tmp_path / "o")]
    )
    assert code == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert "--sandbox needs bubblewrap" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")
@pytest.mark.parametrize("mode", [pytest.param([], marks=needs_seal), ["--no-sandbox"]])
def test_bot_in_a_folder_private_to_root_plays(tmp_path: Path, mode: list[str]) -> None:
    """Each entrant's folder is copied for its own group: no chmod needed."""
    private = tmp_path / "private"  # pytest's tmp_path is private to root
    private.mkdir(mode=0o700)
    shutil.copy(BOTS / "first_legal.py", private / "mine.py")
    shutil.copy(BOTS / "botlib.py", private / "botlib.py")
    (private / "mine.py").chmod(0o600)
    out = tmp_path / "o"
    args = ["run", str(private / "mine.py"), *(bot("first_legal", n) for n in "abc")]
    code = run_arena(
        [*args, "--hands", "1", "--rounds", "1", "--seed", "2", "--out", str(out), *mode]
    )
    assert code == 0
    results, _ = load_outputs(out)
    assert results["settings"]["isolation"]["sandbox"] is (mode == [])
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    assert {row["name"] for row in results["standings"]} == {"mine", "a", "b", "c"}


@pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")
def test_a_uid_with_unreaped_processes_is_not_leased(tmp_path: Path) -> None:
    """A fork bomb's killed children can linger as zombies, still counted
    against their uid's process limit: the next bot must get another uid."""
    from arena.sandbox.isolation import IsolationError, lease_uid

    base = 3_900_000  # away from the pool the other tests use
    pid = os.fork()
    if pid == 0:  # the child becomes a zombie of that uid
        os.setuid(base)
        os._exit(0)
    try:
        for _ in range(200):  # until the child has exited (not reaped: a zombie)
            if "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]:
                break
            os.sched_yield()
        other = lease_uid(base=base + 1, size=1)  # the pool's other uid is taken
        try:
            with pytest.raises(IsolationError, match="in use"):
                lease_uid(base=base, size=2)
        finally:
            other.release()
        lease = lease_uid(base=base, size=2)
        assert lease.uid == base + 1
        lease.release()
    finally:
        os.waitpid(pid, 0)
    lease = lease_uid(base=base, size=1)  # reaped: the uid is free again
    assert lease.uid == base
    lease.release()


def test_stale_entrant_copies_are_removed_even_while_other_folders_vanish(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A killed arena's copies readable by a gid are removed when the gid is
    leased again; a folder another arena removes during the search is
    skipped, never an error (it stopped a Dask worker in CI)."""
    import tempfile

    from arena.sandbox import isolation

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    gid = os.getgid() if os.getuid() != 0 else 3_499_999
    stale = tmp_path / "hearts-bot-aa-entrants-x1" / "0"
    stale.mkdir(parents=True)
    kept = tmp_path / "hearts-bot-aa-entrants-x1" / "1"
    kept.mkdir()
    if os.getuid() == 0:
        os.chown(stale, -1, gid)
    else:
        os.chown(kept, -1, next(g for g in os.getgroups() if g != gid))
    vanishing = tmp_path / "hearts-bot-bb-entrants-x2"
    vanishing.mkdir()
    real_scandir = os.scandir

    def scandir_after_removal(path: object):  # type: ignore[no-untyped-def]
        if isinstance(path, str | os.PathLike) and Path(path) == vanishing:
            vanishing.rmdir()
        return real_scandir(path)

    monkeypatch.setattr(isolation.os, "scandir", scandir_after_removal)
    assert isolation.remove_entrant_copies_of_gid(gid) == 1
    assert not stale.exists() and kept.exists() and not vanishing.exists()


def _owned_tree(top: Path, a: int, b: int, c: int) -> None:
    """Files of uids ``a``, ``b`` and ``c`` (and root's) under ``top``, as bots
    sharing /tmp would leave them."""
    top.mkdir(mode=0o777)
    top.chmod(0o1777)
    for name, uid in (("a.txt", a), ("c.txt", c), ("root.txt", 0)):
        (top / name).write_text(name)
        os.chown(top / name, uid, uid)
    a_dir = top / "a-dir"
    a_dir.mkdir()
    (a_dir / "inside").write_text("x")
    os.chown(a_dir / "inside", a, a)
    os.chown(a_dir, a, a)
    shared = top / "shared"  # root's, open to all: b hid a file in it
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "b.sock").write_text("b")
    os.chown(shared / "b.sock", b, b)
    private = top / "private"  # root's, closed to bots: nothing of theirs can be in it
    private.mkdir(mode=0o700)
    (private / "a-looking").write_text("root's")
    os.chown(private / "a-looking", a, a)


def _left(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*")}


def _count_walks(monkeypatch: pytest.MonkeyPatch, top: Path) -> list[Path]:
    """Record each listing of ``top`` itself (one per walk of it)."""
    from arena.sandbox import isolation

    walks: list[Path] = []
    real_scandir = os.scandir

    def counting(path: object):  # type: ignore[no-untyped-def]
        if isinstance(path, str | os.PathLike) and Path(path) == top:
            walks.append(top)
        return real_scandir(path)

    monkeypatch.setattr(isolation.os, "scandir", counting)
    return walks


@pytest.mark.skipif(os.geteuid() != 0, reason="files of other uids need root")
def test_uids_purged_together_in_one_walk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two uids' files (at the top, in their own folder, in a shared folder)
    go in one walk of the folder; a third uid's and root's stay, and a folder
    no bot could enter is not searched."""
    from arena.sandbox.isolation import purge_uids

    a, b, c = 3_910_001, 3_910_002, 3_910_003  # away from the pools
    top = tmp_path / "world"
    _owned_tree(top, a, b, c)
    walks = _count_walks(monkeypatch, top)
    assert purge_uids({a, b}, [top], message_queues=False) == 3  # a.txt, a-dir, shared/b.sock
    assert len(walks) == 1
    assert _left(top) == {"c.txt", "root.txt", "shared", "private", "private/a-looking"}


@pytest.mark.skipif(os.geteuid() != 0, reason="files of other uids need root")
def test_purge_lists_only_what_a_bot_could_have_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In a folder of root's that no bot may write in, only the subfolders
    are looked at: a bot's file in an open folder below it and a bot's
    folder in it go; a closed folder without subfolders is not listed at all
    (on ext4 and tmpfs, whose link counts count subfolders); a file root
    chowned into a closed folder is root's doing and stays (issue 26)."""
    from arena.sandbox import isolation

    a = 3_910_011  # away from the pools
    top = tmp_path / "world"
    top.mkdir(mode=0o777)
    top.chmod(0o1777)
    root = top / "checkout"  # root's, 0755: a clone or a virtual environment
    (root / "leaf").mkdir(parents=True, mode=0o755)
    (root / "leaf" / "file").write_text("x")
    os.chown(root / "leaf" / "file", a, a)  # only root could have put it there
    (root / "placed").write_text("x")
    os.chown(root / "placed", a, a)
    (root / "open").mkdir(mode=0o777)
    (root / "open").chmod(0o777)
    (root / "open" / "bot.txt").write_text("x")
    os.chown(root / "open" / "bot.txt", a, a)
    (root / "bots-dir").mkdir()
    os.chown(root / "bots-dir", a, a)
    listed: list[str] = []
    real_scandir = os.scandir

    def counting(path: object):  # type: ignore[no-untyped-def]
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(isolation.os, "scandir", counting)
    assert isolation.purge_uids({a}, [top], message_queues=False) == 2  # open/bot.txt, bots-dir
    monkeypatch.undo()
    left = _left(top)
    assert "checkout/open/bot.txt" not in left and "checkout/bots-dir" not in left
    assert {"checkout/placed", "checkout/leaf/file"} <= left
    counted = isolation._file_system_of(top) in isolation.LINK_COUNTING
    assert (str(root / "leaf") in listed) is not counted
    assert str(root / "open") in listed


def _lock_state(uid: int, state: bytes) -> None:
    from arena.sandbox import isolation

    isolation.LOCK_DIR.mkdir(mode=0o755, exist_ok=True)
    (isolation.LOCK_DIR / str(uid)).write_bytes(state)


def _zombie_of(uid: int) -> int:
    """A child process that exits as ``uid`` and is not reaped: a zombie that
    keeps ``uid`` busy until the caller's ``waitpid``."""
    pid = os.fork()
    if pid == 0:
        os.setuid(uid)
        os._exit(0)
    for _ in range(10_000):  # until the child has exited (not reaped: a zombie)
        if "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]:
            break
        os.sched_yield()
    return pid


def _count_readings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The readings of /proc (its listings) made from now on."""
    from arena.sandbox import isolation

    readings: list[str] = []
    real_listdir = os.listdir

    def counting(path: object = ".") -> list[str]:
        if str(path) == "/proc":
            readings.append("/proc")
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(isolation.os, "listdir", counting)
    return readings


@pytest.mark.skipif(os.geteuid() != 0, reason="uid leases need root")
def test_a_busy_first_clean_uid_costs_no_second_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where orphans are reaped late, each sealed bot's bubblewrap leaves a
    zombie of its uid a while, and the next lease's first clean uid is
    busy: two clean uids are locked before one reading, which passes the
    first over and leases the second (issue 26: it took two readings)."""
    from arena.sandbox import isolation

    base, size = 3_940_000, 2
    first = base + os.getpid() % size  # where this process's search starts
    second = base + (os.getpid() + 1) % size
    _lock_state(first, b"clean")
    _lock_state(second, b"clean")
    zombie = _zombie_of(first)
    try:
        readings = _count_readings(monkeypatch)
        lease = isolation.lease_uid(base=base, size=size)
        assert lease.uid == second
        assert len(readings) == 1
        lease.release()
        assert (isolation.LOCK_DIR / str(first)).read_bytes() == b"clean"  # untouched
    finally:
        os.waitpid(zombie, 0)


@pytest.mark.skipif(os.geteuid() != 0, reason="uid leases need root")
def test_a_clean_uid_is_leased_before_one_that_needs_a_purge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A uid whose last holder was killed ("in use") needs a walk of every
    world-writable folder before it is leased; a clean one a little further
    on is taken instead, with one reading of /proc (issue 26). When no uid
    is clean, the first free one is purged and leased, as before."""
    from arena.sandbox import isolation

    base, size = 3_930_000, 3
    first = base + os.getpid() % size  # where this process's search starts
    second = base + (os.getpid() + 1) % size
    third = base + (os.getpid() + 2) % size
    _lock_state(first, b"in use")
    _lock_state(second, b"clean")
    _lock_state(third, b"in use")
    purged: list[int] = []
    monkeypatch.setattr(isolation, "purge_uid", purged.append)
    readings = _count_readings(monkeypatch)
    lease = isolation.lease_uid(base=base, size=size)
    try:
        assert lease.uid == second
        assert purged == []
        assert len(readings) == 1
        other = isolation.lease_uid(base=base, size=size)  # no clean uid is free now
        assert other.uid == first
        assert purged == [first]
        other.release()
    finally:
        lease.release()


@pytest.mark.skipif(os.geteuid() != 0, reason="uid leases need root")
def test_leases_released_together_are_clean_only_after_one_purge(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A game's bots' uids are released in one walk and marked clean after
    it; a lease not released keeps its files; a failed purge leaves the uids
    "in use" (the next holder purges them before use)."""
    from arena.sandbox import isolation

    base = 3_920_000  # away from the pool the other tests use
    leases = [isolation.lease_uid(base=base, size=3) for _ in range(3)]
    first, second, third = leases
    try:
        for lease in leases:
            lease.purge = True
        top = tmp_path / "world"
        _owned_tree(top, first.uid, second.uid, third.uid)
        walks = _count_walks(monkeypatch, top)
        assert isolation.release_leases([first, second], [top]) == 3
        assert len(walks) == 1
        assert _left(top) == {"c.txt", "root.txt", "shared", "private", "private/a-looking"}
        for lease in (first, second):
            assert (isolation.LOCK_DIR / str(lease.uid)).read_bytes() == b"clean"
        walks.clear()
        assert isolation.release_leases([first, second], [top]) == 0  # already released
        assert walks == []

        def failing(*args: object, **kwargs: object) -> int:
            raise OSError("search failed")

        monkeypatch.setattr(isolation, "purge_uids", failing)
        with pytest.raises(OSError, match="search failed"):
            isolation.release_leases([third], [top])
        assert (isolation.LOCK_DIR / str(third.uid)).read_bytes() == b"in use"
        assert (top / "c.txt").exists()
    finally:
        for lease in leases:
            lease.purge = False
            lease.release()


@pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")
def test_a_games_unsealed_bots_are_purged_in_one_walk(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Unsealed, a bot's uid is purged when it closes; a game's four bots are
    closed together, their four uids purged in one walk (not four)."""
    from arena.sandbox import isolation

    walks: list[frozenset[int]] = []
    real = isolation.purge_uids

    def recording(uids, folders=None, *, message_queues=True):  # type: ignore[no-untyped-def]
        if not message_queues:  # released (a lease taken dirty is purged with them)
            walks.append(frozenset(uids))
        return real(uids, folders, message_queues=message_queues)

    monkeypatch.setattr(isolation, "purge_uids", recording)
    entrants = [bot("first_legal", n) for n in "abcd"]
    args = ["run", *entrants, "--hands", "1", "--rounds", "1", "--seed", "3", "--no-sandbox"]
    assert run_arena([*args, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    _, records = load_outputs(tmp_path / "out")
    assert len(records) == 4  # one table, four rotations: new processes for each game
    assert [len(uids) for uids in walks] == [4, 4, 4, 4]
    assert all(uid >= isolation.DEFAULT_UID_BASE for uids in walks for uid in uids)
