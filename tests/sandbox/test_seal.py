"""Sealed bots (the default): two colluding entrants try to exchange a hand over
every channel (tests/bots/collude.py) and gain nothing; the same attack with
--no-sandbox as root shows which channels only the seal closes (README,
"Running a competition", the threat table). Also: a sealed game longer than
15 s has no faults, sealed and unsealed standings are equal for one seed, and
nothing a bot's uid left survives its release."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import secrets
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    SEAL_PROBLEM,
    bot,
    bot_path,
    load_outputs,
    needs_seal,
    run_arena,
    run_processes,
)

from arena.sandbox import seal
from arena.sandbox.isolation import WORLD_WRITABLE, lease_uid, purge_uid, python_for, sysv_objects

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")

CHANNELS = [
    "tmp", "shm", "vartmp", "abstract", "unix-path", "tcp", "udp", "tcp-service", "tcp-out",
    "udp-out", "lock-program", "lock-library", "sysv-ipc", "mqueue", "proc", "code", "uid-note",
    "machine-file", "write-folder", "keyring", "inotify", "sysv-msg",
]  # fmt: skip
#: Channels still open with --no-sandbox as root (bots as separate uids, entrant
#: folders copied for a group each): the README's threat table says the same.
OPEN_WITHOUT_SEAL_AS_ROOT = {
    "tmp", "shm", "vartmp", "abstract", "unix-path", "tcp", "udp", "tcp-service", "tcp-out",
    "udp-out", "lock-library", "sysv-ipc", "sysv-msg", "proc", "machine-file", "inotify",
}  # fmt: skip


def sysv_key(tag: str) -> int:
    """The System V IPC key the colluders of run ``tag`` use (tests/bots/collude.py)."""
    return int(tag, 16) % 0x7FFF_FFFF + 1


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def outside_ip() -> str:
    """An address of this machine other than loopback (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            pytest.skip("this machine has no address other than loopback")
        return str(s.getsockname()[0])


def patterns(tag: str) -> tuple[str, str]:
    """Names of the files the colluders of run ``tag`` write (tests/bots/collude.py)."""
    return (f"hearts-collude-{tag}*", f"hearts-uid-note-{tag}-*")


def leftovers(tag: str) -> list[str]:
    """Files the colluders of run ``tag`` wrote in world-writable folders, and
    their IPC objects (another run's, with its own tag, are not counted)."""
    found = [
        str(p)
        for folder in WORLD_WRITABLE
        for pattern in patterns(tag)
        for p in folder.glob(pattern)
    ]
    for kind in ("shm", "msg"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found += [f"{kind} key {x.split()[0]}" for x in lines if int(x.split()[0]) == sysv_key(tag)]
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    mq = libc.mq_open(f"/hearts-collude-{tag}".encode(), os.O_RDONLY | os.O_NONBLOCK)
    if mq >= 0:
        libc.mq_close(mq)
        found.append(f"POSIX message queue /hearts-collude-{tag}")
    return found


def clean_leftovers(tag: str) -> None:
    for folder in WORLD_WRITABLE:
        for pattern in patterns(tag):
            for p in folder.glob(pattern):
                with contextlib.suppress(OSError):
                    p.unlink()
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mq_unlink(f"/hearts-collude-{tag}".encode())
    shm = libc.shmget(sysv_key(tag), 0, 0)
    if shm >= 0:
        libc.shmctl(shm, 0, None)
    queue = libc.msgget(sysv_key(tag), 0)
    if queue >= 0:
        libc.msgctl(queue, 0, None)


def collude(out: Path, *mode: str) -> tuple[dict[str, Any], list[str]]:
    """Run colA (sender) and colB (receiver), the same program, at one table
    with two well-behaved bots; B's findings merged over the games, and what
    was left on the machine afterwards. The colluders' names are unique to
    this call (a tag), so that two test runs at once on one machine do not
    see or remove each other's."""
    tag = secrets.token_hex(4)
    ip = outside_ip()
    secret = Path(tempfile.mkdtemp(prefix="arena-test-", dir="/var/tmp"))
    secret.chmod(0o755)
    (secret / "notes.txt").write_text("a file any user of the machine may read")
    (secret / "notes.txt").chmod(0o644)
    with (
        socket.socket() as service,
        socket.socket() as out_tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out_udp,
    ):
        # Nothing accepts: a connection the kernel completes is the channel
        # (B's "reached"). Room for every one of the run's (about 60 each):
        # once a backlog is full, each connect waits out B's 0.2 s timeout,
        # twice a request, 5 s a game.
        service.bind(("127.0.0.1", 0))
        service.listen(1024)
        out_tcp.bind((ip, 0))
        out_tcp.listen(1024)
        out_udp.bind((ip, 0))
        out_udp.setblocking(False)
        ports = [
            free_port(),
            free_port(socket.SOCK_DGRAM),
            ip,
            out_tcp.getsockname()[1],
            out_udp.getsockname()[1],
            service.getsockname()[1],
            secret / "notes.txt",
            tag,
        ]
        args = " ".join(map(str, ports))
        program = bot_path("collude")
        entrants = [f"colA={program} A {args}", f"colB={program} B {args}", bot("first_legal", "x")]
        entrants.append(bot("first_legal", "y"))
        code = run_arena(
            [
                "run",
                *entrants,
                "--hands",
                "1",
                "--rounds",
                "1",
                "--seed",
                "5",
                "--jobs",
                "1",
                "--out",
                str(out),
                "--quiet",
                *mode,
            ]
        )
        assert code == 0
        with contextlib.suppress(OSError):
            if out_udp.recv(100):
                pass  # reached; B's own report says the same
    shutil.rmtree(secret)
    results, records = load_outputs(out)
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    merged: dict[str, Any] = {}
    for rec in records:
        seat = rec["seats"].index("colB")
        lines = [x for x in rec["stderr"][seat].splitlines() if x.startswith("COLLUDE ")]
        assert lines, rec["stderr"][seat][-2000:]
        for key, value in json.loads(lines[-1].removeprefix("COLLUDE ")).items():
            merged[key] = merged.get(key) or value
    assert run_processes(out) == []
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    from arena.sandbox.entrants import copies_tag

    for name in (run_id, copies_tag(run_id)):  # bots' folders, and the entrants' copies
        assert list(Path(tempfile.gettempdir()).glob(f"hearts-bot-{name}-*")) == []
    left = leftovers(tag)
    clean_leftovers(tag)
    return merged, left


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[str]]:
    if SEAL_PROBLEM is not None:
        pytest.skip(f"bots cannot be sealed here: {SEAL_PROBLEM}")
    return collude(tmp_path_factory.mktemp("sealed") / "out")


@pytest.fixture(scope="module")
def unsealed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], list[str]]:
    if os.geteuid() != 0:
        pytest.skip("separate bot users need root")
    # --ponder: bots off move are not frozen, so a channel does not depend on
    # the two colluders being on move at once (only in the pass).
    return collude(tmp_path_factory.mktemp("unsealed") / "out", "--no-sandbox", "--ponder")


@needs_seal
@pytest.mark.parametrize("channel", CHANNELS)
def test_sealed_colluders_exchange_nothing(
    channel: str, sealed: tuple[dict[str, Any], list[str]]
) -> None:
    found, _ = sealed
    assert channel in found
    assert found[channel] is None


@needs_seal
def test_sealed_bots_leave_nothing_on_the_machine(
    sealed: tuple[dict[str, Any], list[str]],
) -> None:
    assert sealed[1] == []


@needs_root
@pytest.mark.parametrize("channel", CHANNELS)
def test_without_the_seal_as_root_the_open_channels(
    channel: str, unsealed: tuple[dict[str, Any], list[str]]
) -> None:
    """What --no-sandbox leaves open (and so what the seal closes)."""
    found, _ = unsealed
    if channel not in OPEN_WITHOUT_SEAL_AS_ROOT:
        assert found[channel] is None
    elif channel in ("tcp-service", "tcp-out", "udp-out"):
        assert found[channel] == "reached"
    elif channel == "machine-file":
        assert found[channel] == "a file any user of the machine may read"
    elif channel == "inotify":
        assert "bytes of events on" in found[channel]
    else:
        assert len(found[channel].split()) == 13, found[channel]  # the sender's hand


@needs_root
def test_without_the_seal_a_released_uid_leaves_nothing(
    unsealed: tuple[dict[str, Any], list[str]],
) -> None:
    """Files in /tmp, /var/tmp, /dev/shm, System V shared memory and POSIX
    message queues of the sender's uid were removed when it was released."""
    assert unsealed[1] == []


@needs_root
@pytest.mark.parametrize("killed", [False, True])
def test_the_next_holder_of_a_uid_finds_nothing(killed: bool) -> None:
    """What a uid left in /tmp, /var/tmp, /dev/shm and /run/lock (where it is
    world-writable) and its System V IPC are removed when the uid is
    released; if its arena was killed instead, all that and its POSIX message
    queues are removed when it is leased again."""
    import subprocess

    lease = lease_uid(base=3_900_200, size=1)
    uid = lease.uid
    folders = [str(f) for f in WORLD_WRITABLE if f.stat().st_mode & stat.S_IWOTH]
    lock = Path("/run/lock")
    if lock.is_dir() and not lock.is_symlink() and lock.stat().st_mode & stat.S_IWOTH:
        assert str(lock) in folders  # a place an unsealed bot may write is searched
    script = f"""
import ctypes, ctypes.util, os
libc = ctypes.CDLL(ctypes.util.find_library("c"))
for folder in {folders!r}:
    os.makedirs(f"{{folder}}/hearts-purge-test-{uid}/deep", exist_ok=True)
    open(f"{{folder}}/hearts-purge-note-{uid}", "w").write("for the next holder")
assert libc.shmget(0x4845_5254, 64, 0o1000 | 0o600) >= 0
assert libc.mq_open(b"/hearts-purge-{uid}", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0
"""
    python = python_for(uid)[0]  # the arena's own may be in a private folder
    subprocess.run(
        [python, "-c", script], user=uid, group=uid, extra_groups=[], check=True, cwd="/"
    )
    assert any(kind == "shm" for kind, _ in sysv_objects(uid))
    assert Path(f"/tmp/hearts-purge-note-{uid}").exists()
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    queue = f"/hearts-purge-{uid}".encode()
    if killed:
        os.close(lease._fd)  # as the death of its arena would: the uid is not marked clean
        lease._fd = None
        lease = lease_uid(base=3_900_200, size=1)
        assert libc.mq_open(queue, os.O_RDONLY) == -1
    else:
        lease.purge = True
        lease.release()
        libc.mq_unlink(queue)  # a bot cannot make one (RLIMIT_MSGQUEUE 0); this script could
    for folder in WORLD_WRITABLE:
        assert not Path(f"{folder}/hearts-purge-note-{uid}").exists()
        assert not Path(f"{folder}/hearts-purge-test-{uid}").exists()
    assert sysv_objects(uid) == []
    assert purge_uid(uid) == 0  # nothing left to remove
    lease.release()


@needs_seal
def test_a_sealed_game_outliving_trios_idle_worker_threads_has_no_faults(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One game of 1 hand, 0.08 s a card (over 4 s): bots live through it.
    bubblewrap's --die-with-parent fired when Trio retired its idle spawning
    thread (``IDLE_TIMEOUT`` after the last start: 10 s, here 1 s, so that a
    game of 4 s outlives it as one of 15 s outlived 10 s) and killed every
    sealed bot (arena/sandbox/spawn.py forks them from a thread of its own)."""
    from trio._core import _thread_cache

    monkeypatch.setattr(_thread_cache, "IDLE_TIMEOUT", 1)
    slow = [f"s{i}={bot_path('slow_legal')} 0.08" for i in range(4)]
    code = run_arena(["play", *slow, "--hands", "1", "--seed", "8", "--sandbox"])
    out = capsys.readouterr().out
    assert code == 0
    assert "seed 8" in out
    assert "fault:" not in out


@needs_seal
def test_sealed_and_unsealed_standings_are_equal(tmp_path: Path) -> None:
    bots = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
    standings = []
    for mode in (["--sandbox"], ["--no-sandbox"]):
        out = tmp_path / mode[0]
        code = run_arena(
            [
                "run",
                *bots,
                "--hands",
                "1",
                "--rounds",
                "1",
                "--seed",
                "11",
                "--out",
                str(out),
                "--quiet",
                *mode,
            ]
        )
        assert code == 0
        results, _ = load_outputs(out)
        assert results["settings"]["isolation"]["sandbox"] is (mode == ["--sandbox"])
        standings.append(results["standings"])
    assert standings[0] == standings[1]
    assert all(sum(row["faults"].values()) == 0 for row in standings[0])


@needs_seal
def test_two_entrants_sharing_a_folder_are_refused_when_sealed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    for name in ("one", "two"):
        shutil.copy(bot_path("first_legal"), folder / f"{name}.py")
    shutil.copy(bot_path("first_legal").parent / "botlib.py", folder / "botlib.py")
    args = ["run", str(folder / "one.py"), str(folder / "two.py"), "sample:low", "sample:duck"]
    code = run_arena([*args, "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "entrant 'two' has its program in the folder of entrant 'one'" in err
    assert "put each program in a folder of its own" in err
    assert not (tmp_path / "o").exists()
    # --no-sandbox plays them.
    code = run_arena([*args, "--hands", "1", "--rounds", "1", "--no-sandbox", "--quiet", "--out", str(tmp_path / "o2")])  # fmt: skip
    assert code == 0


def _write_bot(program: Path, before_serving: str) -> None:
    """A test bot at ``program`` (beside a copy of ``botlib.py``) that runs
    ``before_serving`` (with ``sys`` imported), then plays as ``first_legal``
    does under the name of its file."""
    program.write_text(
        f"import sys\nfrom botlib import serve\n{before_serving}serve({program.stem!r})\n"
    )
    shutil.copy(bot_path("first_legal").parent / "botlib.py", program.parent / "botlib.py")


#: The entrants of :func:`shared_run`: each shows one thing a sealed bot's root
#: holds or bounds (one run of four games for the three tests below).
SHARED = ("r", "u", "fill", "low")


@pytest.fixture(scope="module")
def shared_run() -> Iterator[tuple[dict[str, Any], list[dict[str, Any]], list[Path]]]:
    """One sealed run of four games whose bots each show one thing: ``r``
    reads a file next to itself; ``u`` reads a file in a folder named with
    ``--sandbox-ro`` and one in a folder not named (both under /var/tmp,
    readable by everyone); ``fill`` tries to write 48 MiB into /tmp and into
    /dev/shm under ``--tmp-size 4``; ``low`` is a sample bot. Yields the
    results, the records and the two runtime folders (named, not named)."""
    if SEAL_PROBLEM is not None:
        pytest.skip(f"bots cannot be sealed here: {SEAL_PROBLEM}")
    top = Path(tempfile.mkdtemp(prefix="arena-test-"))
    top.chmod(0o777)  # bot users enter it (pytest's own temporary folders are root's)
    runtimes = [Path(tempfile.mkdtemp(prefix="arena-test-runtime-", dir="/var/tmp")) for _ in "ab"]
    try:
        for n, runtime in enumerate(runtimes):
            runtime.chmod(0o755)
            (runtime / "lib.txt").write_text(f"runtime {7 + n}\n")
            (runtime / "lib.txt").chmod(0o644)
        reader = top / "reader"
        reader.mkdir()
        (reader / "model.txt").write_text("weights 42\n")
        _write_bot(
            reader / "reader.py",
            "print('MODEL', open('model.txt').read().strip(), file=sys.stderr, flush=True)\n",
        )
        user = top / "user"
        user.mkdir()
        _write_bot(
            user / "user.py",
            "for path in sys.argv[1:]:\n"
            "    try:\n"
            "        seen = open(path).read().strip()\n"
            "    except OSError as exc:\n"
            "        seen = type(exc).__name__\n"
            "    print('RUNTIME', path, seen, file=sys.stderr, flush=True)\n",
        )
        out = top / "out"
        files = " ".join(str(r / "lib.txt") for r in runtimes)
        code = run_arena(
            [
                "run",
                # A NAME=COMMAND entrant runs in its program's folder.
                f"r=python3 {reader / 'reader.py'}",
                f"u={user / 'user.py'} {files}",
                f"fill={bot_path('hostile_fills_tmp')} 48",
                "low=sample:low",
                "--sandbox-ro",
                str(runtimes[0]),
                "--tmp-size",
                "4",
                "--hands",
                "1",
                "--rounds",
                "1",
                "--seed",
                "4",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        assert code == 0
        results, records = load_outputs(out)
        assert results["settings"]["isolation"]["sandbox"] is True
        assert sorted(r["name"] for r in results["standings"]) == sorted(SHARED)
        assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
        assert len(records) == 4
        yield results, records, runtimes
    finally:
        for runtime in runtimes:
            shutil.rmtree(runtime, ignore_errors=True)
        shutil.rmtree(top, ignore_errors=True)


def _stderr_of(records: list[dict[str, Any]], name: str) -> list[str]:
    """The stderr of entrant ``name`` in each game, as lines."""
    return [rec["stderr"][rec["seats"].index(name)].splitlines() for rec in records]


@needs_seal
def test_a_sealed_bot_reads_a_file_next_to_itself(shared_run: Any) -> None:
    """The entrant folder is bound read-only (a copy); a NAME=COMMAND entrant
    runs in its program's folder, so a relative path works."""
    _, records, _ = shared_run
    for lines in _stderr_of(records, "r"):
        assert "MODEL weights 42" in lines


@needs_seal
def test_a_sealed_bots_tmp_and_shm_stop_at_the_tmp_size(shared_run: Any) -> None:
    """A bot trying to write 48 MiB into /tmp and into /dev/shm stops at
    --tmp-size (4 MiB each): both are private tmpfs mounts of that size (they
    had no bound: the machine's shared memory grew by what a bot wrote)."""
    results, records, _ = shared_run
    assert results["settings"]["isolation"]["tmp_mb"] == 4
    for lines in _stderr_of(records, "fill"):
        line = next(x for x in lines if x.startswith("FILLED "))
        filled = json.loads(line.removeprefix("FILLED "))
        # A tmpfs of 4 MiB holds 4 MiB of data (a 1 MiB write that does
        # not fit is refused or cut short).
        assert 3 * 1024 * 1024 <= filled["/tmp"] <= 4 * 1024 * 1024, filled
        assert 3 * 1024 * 1024 <= filled["/dev/shm"] <= 4 * 1024 * 1024, filled


@needs_seal
@pytest.mark.parametrize("given", [False, True])
def test_sandbox_ro_shows_a_path_outside_the_allowlist(shared_run: Any, given: bool) -> None:
    """A folder outside the allowlist (here under /var/tmp, readable by
    everyone) is not in a sealed bot's root unless the organiser names it
    with --sandbox-ro (a runtime in /opt, say): of the two folders bot ``u``
    reads, the named one only."""
    results, records, runtimes = shared_run
    runtime = runtimes[0] if given else runtimes[1]
    assert (str(runtime) in results["settings"]["isolation"]["sandbox_ro"]) is given
    assert results["settings"]["isolation"]["sandbox_ro"] == [str(runtimes[0])]
    want = "runtime 7" if given else "FileNotFoundError"
    for lines in _stderr_of(records, "u"):
        assert f"RUNTIME {runtime / 'lib.txt'} {want}" in lines


@needs_seal
def test_without_libseccomp_bots_are_sealed_without_the_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A machine without libseccomp: one line says what stays open; the rest holds."""
    import sys

    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import fails, as without the library
    out = tmp_path / "out"
    bots = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
    code = run_arena(["run", *bots, "--hands", "1", "--rounds", "1", "--out", str(out), "--quiet"])
    assert code == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "libseccomp" in line]
    assert len(err) == 1
    assert "sealed bots can still signal each other through file locks" in err[0]
    results, _ = load_outputs(out)
    assert results["settings"]["isolation"]["sandbox"] is True
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])


@needs_root
def test_a_killed_arenas_entrant_copy_is_removed_before_its_group_is_leased_again() -> None:
    """An arena killed with SIGKILL leaves its entrants' copies; the next
    holder of such a group must not read them."""
    from arena.sandbox.isolation import LOCK_DIR, lease_gid

    gid = 3_590_000
    lease = lease_gid(base=gid, size=1)
    root = Path(tempfile.mkdtemp(prefix="hearts-bot-0killed0-entrants-"))
    copy = root / "0"
    copy.mkdir()
    (copy / "secret_bot.py").write_text("print('mine')\n")
    os.chown(copy, 0, gid)
    os.close(lease._fd)  # killed: the group is not marked clean
    lease._fd = None
    assert (LOCK_DIR / f"g{gid}").read_bytes() == b"in use"
    again = lease_gid(base=gid, size=1)
    try:
        assert not copy.exists()
    finally:
        again.release()
        shutil.rmtree(root, ignore_errors=True)
    assert (LOCK_DIR / f"g{gid}").read_bytes() == b"clean"


def test_a_package_in_a_private_folder_is_given_to_bots_as_a_readable_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An arena installed under a folder bot users cannot enter (a virtual
    environment under /root, CI's private temporary folder): kit bots could
    not import ``arena`` and bubblewrap could not bind it (bots ran unsealed).
    They get a copy every user may read instead."""
    import stat

    monkeypatch.setattr(seal, "_BOT_PACKAGE_PARENT", [])
    monkeypatch.setattr(seal, "_readable_by_everyone", lambda folder: False)
    # A copy left by an arena killed with SIGKILL (its pid gone) is removed;
    # a running arena's copy is kept.
    dead_pid = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    left = Path(tempfile.gettempdir()) / f"hearts-arena-package-{dead_pid}-x"
    running = Path(tempfile.gettempdir()) / f"hearts-arena-package-{os.getppid()}-x"
    left.mkdir()
    running.mkdir(exist_ok=True)
    parent = seal.bot_package_parent()
    assert not left.exists() and running.exists()
    running.rmdir()
    assert parent.name.startswith(f"hearts-arena-package-{os.getpid()}-")
    assert (parent / "arena" / "botkit.py").read_bytes() == Path(seal.__file__).resolve().parents[
        1
    ].joinpath("botkit.py").read_bytes()
    assert stat.S_IMODE(parent.stat().st_mode) == 0o755
    assert stat.S_IMODE((parent / "arena" / "core" / "rules.py").stat().st_mode) == 0o644
    assert not list(parent.rglob("__pycache__"))
    assert seal.bot_package_parent() == parent  # made once per process
    assert seal.runtime_paths(arena_python=False) == []  # the kit is bound apart
    shutil.rmtree(parent)


def test_the_runtime_paths_hold_no_folder_inside_another() -> None:
    # Each is a mount in every sealed start; one inside another (a pyenv's
    # bin inside its prefix) is seen through the outer one's.
    paths = seal.runtime_paths()
    interpreter = Path(os.path.realpath(sys.executable))
    if interpreter.parts[1] != "usr":  # bound by the root view otherwise
        assert any(interpreter.is_relative_to(p) for p in paths)
    assert not [(a, b) for a in paths for b in paths if a != b and a.is_relative_to(b)]


def test_cleanup_removes_only_the_package_copies_of_arenas_that_are_gone(tmp_path: Path) -> None:
    dead_pid = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    left = tmp_path / f"hearts-arena-package-{dead_pid}-ab12"
    running = tmp_path / f"hearts-arena-package-{os.getpid()}-cd34"
    other = tmp_path / "hearts-arena-package-notapid"
    for folder in (left, running, other):
        (folder / "arena").mkdir(parents=True)
    assert seal.remove_package_copies_of_dead_arenas(tmp_path) == 1
    assert not left.exists() and running.exists() and other.exists()
    assert seal.remove_package_copies_of_dead_arenas(tmp_path) == 0


@needs_root
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("sealed", marks=needs_seal),
        "--no-sandbox",
        "--no-sandbox, no control groups",
    ],
)
def test_a_bot_finds_nothing_a_previous_holder_of_its_uid_left(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four copies of tests/bots/uid_leftovers.py, a process a game: from the
    second game on, each bot runs as a uid a copy ran as before, and finds
    neither its note in /tmp, /var/tmp, /dev/shm nor its key in the uid's user
    and user-session keyrings (these outlive the uid's processes: they are
    emptied in the child before exec). Without control groups the uid is
    dropped by Popen rather than by the arena's child setup."""
    from arena.sandbox import cgroups

    if mode.endswith("no control groups"):
        monkeypatch.setattr(cgroups, "_PLAN", cgroups.Plan(notes=("test",)))
    tag = secrets.token_hex(4)
    program = bot_path("uid_leftovers")
    out = tmp_path / "out"
    entrants = [f"u{i}={program} {tag}" for i in range(4)]
    extra = [] if mode == "sealed" else ["--no-sandbox"]
    args = ["run", *entrants, "--hands", "1", "--rounds", "1", "--fresh-processes", "--jobs", "1"]
    try:
        code = run_arena([*args, "--seed", "6", "--out", str(out), "--quiet", *extra])
    finally:
        for folder in WORLD_WRITABLE:
            for p in folder.glob(f"hearts-uid-leftover-{tag}-*"):
                p.unlink()
    assert code == 0
    results, records = load_outputs(out)
    assert len(records) == 4
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    reports = []
    for rec in records:
        for text in rec["stderr"]:
            line = next(x for x in text.splitlines() if x.startswith("LEFTOVER "))
            reports.append(json.loads(line.removeprefix("LEFTOVER ")))
    assert len(reports) == 16
    if mode != "sealed":  # the pool gave uids again: the test can fail
        assert len({r["uid"] for r in reports}) < 16
    assert [(r["notes"], r["keys"]) for r in reports] == [([], [])] * 16


@needs_seal
def test_where_bots_cannot_be_sealed_one_line_says_what_is_not_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default (no --sandbox, no --no-sandbox) without bubblewrap: the
    tournament plays unsealed, and one line on stderr says why and what is
    not isolated (--sandbox makes it an error: test_isolation.py)."""
    from arena.sandbox import seal

    monkeypatch.setattr(seal, "bwrap_path", lambda: None)
    out = tmp_path / "out"
    bots = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
    code = run_arena(["run", *bots, "--hands", "1", "--rounds", "1", "--out", str(out), "--quiet"])
    assert code == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "NOT sealed" in x]
    assert lines == [
        "hearts-arena: bubblewrap (the 'bwrap' command, Debian package 'bubblewrap') is not "
        f"installed: {seal.NOT_ISOLATED}"
    ]
    assert "network" in lines[0] and "file locks" in lines[0]
    results, _ = load_outputs(out)
    assert results["settings"]["isolation"]["sandbox"] is False


@needs_seal
def test_a_probe_that_worked_is_not_run_again_until_its_key_changes(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe that worked is remembered for the process (issue 26: every
    run played in one process probed bubblewrap again); another bubblewrap
    file (a stand-in, then the stand-in edited), another memory bound or
    another filter probes again; a probe that failed is never remembered."""
    import subprocess

    real = seal.bwrap_path()
    assert real is not None
    program, _ = seal.seccomp_program()
    started: list[str] = []
    real_run = subprocess.run

    def counting(argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(argv[0])
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(seal.subprocess, "run", counting)
    monkeypatch.setattr(seal, "_PROBED", set())

    def probe(memory_mb: int = 300, seccomp: bytes | None = program) -> str | None:
        return seal.probe(user=None, group=None, seccomp=seccomp, memory_mb=memory_mb)

    assert probe() is None and probe() is None
    assert len(started) == 1
    assert probe(memory_mb=301) is None and probe(seccomp=None) is None
    assert len(started) == 3
    stand_in = open_tmp / "bin"
    stand_in.mkdir(mode=0o755)
    fake = stand_in / "bwrap"
    fake.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in}:{os.environ['PATH']}")
    assert probe() is None and probe() is None
    assert started[3:] == [str(fake)]
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    for _ in range(2):  # edited (a new change time): probed again, and the failure is not kept
        assert probe() == (
            "bubblewrap cannot create its namespaces here "
            "(bwrap: No permissions to create new namespace)"
        )
    assert started[4:] == [str(fake), str(fake)]


@needs_root
def test_python_for_asks_once_per_process_until_an_interpreter_or_folder_changes(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter a bot user can run is found once per process (issue
    26: each run started one or more interpreters to ask); a new candidate
    on PATH, or a change to a folder on a candidate's path, asks again."""
    import subprocess

    from arena.sandbox import isolation

    started: list[str] = []
    real_run = subprocess.run

    def counting(argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(argv[0])
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    monkeypatch.setattr(isolation, "_PYTHONS", {})
    lease = lease_uid()
    try:
        first = python_for(lease.uid)
        asked = len(started)
        assert asked >= 1
        assert python_for(lease.uid) == first
        assert len(started) == asked
        stand_in = open_tmp / "bin"
        stand_in.mkdir(mode=0o755)
        (stand_in / "python3").symlink_to(first[0])
        monkeypatch.setenv("PATH", f"{stand_in}:{os.environ['PATH']}")
        assert python_for(lease.uid) == first
        assert len(started) > asked
        asked = len(started)
        (open_tmp / "other").write_text("")  # a name made in a folder on the path: no change
        assert python_for(lease.uid) == first
        assert len(started) == asked
        # A hard link made to an interpreter (each arena's root view makes and
        # removes some, moving its change time): no change either.
        with contextlib.suppress(OSError):
            os.link(os.path.realpath(first[0]), open_tmp / "linked")
        assert python_for(lease.uid) == first
        assert len(started) == asked
        stand_in.chmod(0o711)  # a folder on a candidate's path changed
        assert python_for(lease.uid) == first
        assert len(started) > asked
    finally:
        lease.release()
