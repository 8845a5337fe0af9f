"""The spawn server (arena/sandbox/spawnserver.py): bots started through it
run, and the exit status it reports is the one recorded; a set-up failure
is still SETUP_FAILED with its reason on stderr; an arena killed with SIGKILL
leaves neither the server nor a sealed bot; a server killed mid-tournament
leaves the tournament to finish from the arena's own spawner thread, the
faults of the bots killed with it recorded with the reason."""

from __future__ import annotations

import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from conftest import (
    alive,
    bot,
    load_outputs,
    needs_seal,
    processes_matching,
    run_arena,
    run_processes,
)

from arena.sandbox import spawn
from arena.sandbox.childsetup import SETUP_FAILED, Rlimits
from arena.sandbox.isolation import Limits
from arena.sandbox.spawn import ConfinedProcess, LaunchSpec


@pytest.fixture
def own_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A spawn server of the test's own (this process's, if any, is put back
    after): a test that kills it leaves the next tests theirs."""
    monkeypatch.delenv(spawn.SPAWN_SERVER_VARIABLE, raising=False)
    monkeypatch.setattr(spawn, "_server", None)
    monkeypatch.setattr(spawn, "_server_failed", None)
    monkeypatch.setattr(spawn, "_server_pid", os.getpid())
    yield
    server = spawn._server
    if server is not None:
        server.kill()
        server._reader.join(60)  # its last log line within the test's


def _spec(tmp_path: Path, script: str, **kw: object) -> LaunchSpec:
    return LaunchSpec(
        argv=("/bin/sh", "-c", script),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        label="probe",
        limits=Limits(memory_mb=0, cpu_seconds=0),
        **kw,  # type: ignore[arg-type]
    )


async def _run(spec: LaunchSpec) -> tuple[ConfinedProcess, str, str]:
    """Start ``spec``, wait for its exit; (process, exit status, stderr)."""
    proc = await ConfinedProcess.start(spec)
    err = b""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(proc.watch_exit)
            while chunk := await proc.child.stderr.receive_some(65536):
                err += chunk
            await proc.exited.wait()
        return proc, proc.exit_status(), err.decode()
    finally:
        await proc.kill_tree()
        await proc.finish()


@pytest.mark.parametrize(
    ("script", "status"),
    [
        ("echo out; exit 3", "exit code 3"),
        ("kill -TERM $$", "killed by SIGTERM"),
        ("kill -KILL $$", "killed by SIGKILL"),
    ],
)
def test_a_bot_started_by_the_server_reports_its_exit(
    own_server: None, tmp_path: Path, script: str, status: str
) -> None:
    proc, text, _ = trio.run(_run, _spec(tmp_path, script))
    assert proc.child.server is not None and proc.child.popen is None  # through the server
    assert proc.child.server.pid == spawn._server.pid  # type: ignore[union-attr]
    assert text == status
    assert proc.child.returncode is not None


def test_a_start_error_is_the_callers_oserror(own_server: None, tmp_path: Path) -> None:
    spec = LaunchSpec(argv=(str(tmp_path / "missing"),), cwd=tmp_path, env={}, label="none")
    with pytest.raises(FileNotFoundError):
        trio.run(ConfinedProcess.start, spec)
    assert spawn._server is not None and spawn._server.gone is None  # and it serves on
    proc, text, _ = trio.run(_run, _spec(tmp_path, "exit 0"))
    assert proc.child.server is spawn._server and text == "exit code 0"


def test_a_failed_set_up_exits_setup_failed_with_its_reason(
    own_server: None, tmp_path: Path
) -> None:
    # A resource the kernel does not know: setrlimit raises in the child.
    spec = _spec(tmp_path, "echo ran", preexec=Rlimits(((4242, 1, 1),)))
    proc, text, err = trio.run(_run, spec)
    assert proc.child.server is not None
    assert text == f"exit code {SETUP_FAILED}"
    assert "arena: cannot set up the bot's process: ValueError(" in err


def test_a_killed_server_leaves_its_bots_status_unknown_and_bots_start_without_it(
    own_server: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> tuple[str, str, bool]:
        proc = await ConfinedProcess.start(_spec(tmp_path, "exec sleep 4242.5"))
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(proc.watch_exit)
                server = proc.child.server
                assert server is not None
                server.kill()
                for _ in range(6000):  # the reader thread sees it end
                    if server.gone is not None:
                        break
                    await trio.sleep(0.01)
                # Unsealed, the bot outlives the server (as it would the arena's thread).
                running = proc.exit_status()
                proc.signal_group(signal.SIGKILL)
                await proc.exited.wait()
            gone = proc.exit_status()
        finally:
            await proc.kill_tree()
            await proc.finish()
        after, text, _ = await _run(_spec(tmp_path, "exit 5"))
        assert text == "exit code 5"
        return running, gone, after.child.popen is not None

    with caplog.at_level(logging.WARNING, logger="arena.sandbox.spawn"):
        running, gone, fell_back = trio.run(main)
    assert running == "running"
    assert gone.startswith("exit status unknown: the arena's spawn server that started it is gone")
    assert fell_back  # from the arena's own spawner thread
    assert "the spawn server" in caplog.text and "is gone" in caplog.text


SLEEPER = """\
import sys, time
sys.stdout.write("up\\n")
sys.stdout.flush()
time.sleep(4242)
"""

ARENA = """\
import sys
import trio
from arena.sandbox import spawn
from arena.sandbox.entrants import parse_entrant
from arena.sandbox.launcher import LaunchOptions, Launcher
from arena.sandbox.spawn import ConfinedProcess


async def main():
    launcher = Launcher(LaunchOptions(sandbox=True))
    entrant = parse_entrant("sleeper=" + sys.argv[1])
    launcher.check([entrant])
    proc = await ConfinedProcess.start(launcher.spec(entrant))
    assert await proc.child.stdout.receive_some(10) == b"up\\n"
    print(spawn._server.pid, proc.pid, flush=True)
    await trio.sleep(4242)


trio.run(main)
"""


@needs_seal
def test_an_arena_killed_with_sigkill_leaves_neither_server_nor_bot(tmp_path: Path) -> None:
    folder = tmp_path / "sleeper"
    folder.mkdir()
    script = folder / "sleeper_4242.py"
    script.write_text(SLEEPER)
    env = dict(os.environ)
    env.pop(spawn.SPAWN_SERVER_VARIABLE, None)
    arena = subprocess.Popen(
        [sys.executable, "-c", ARENA, str(script)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert arena.stdout is not None
        server, bwrap = (int(word) for word in arena.stdout.readline().split())
        assert alive(server) and alive(bwrap)
        assert processes_matching(str(script))  # the bot itself, inside the sandbox
        arena.kill()
        arena.wait()
        for _ in range(6000):  # at most 60 s
            if not (alive(server) or alive(bwrap) or processes_matching(str(script))):
                break
            time.sleep(0.01)
        assert not alive(server)
        assert not alive(bwrap)
        assert processes_matching(str(script)) == []
    finally:
        arena.kill()
        arena.wait()


def test_a_server_killed_mid_tournament_leaves_the_tournament_to_finish(
    own_server: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server is killed while bots it started are playing: their
    faults say why, and the rest of the tournament starts its bots from the
    arena's own spawner thread."""
    killed = threading.Event()

    def killer() -> None:
        for _ in range(60_000):  # at most 10 min
            server = spawn._server
            if server is not None and len(server._statuses) >= 4:  # a table's bots playing
                server.kill()
                killed.set()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    out = tmp_path / "out"
    entrants = [bot("first_legal", f"p{i}") for i in range(4)]
    args = ["run", *entrants, "--hands", "2", "--rounds", "2", "--seed", "5", "--jobs", "1"]
    with caplog.at_level(logging.WARNING, logger="arena.sandbox.spawn"):
        code = run_arena([*args, "--out", str(out), "--quiet", "--fresh-processes"])
    thread.join()
    assert killed.is_set()
    assert code == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert len(records) == 8
    faults = [f for rec in records for f in rec["faults"]]
    assert faults  # the bots the server took with it
    assert all(f["reason"] == "crashed" for f in faults)
    assert all("spawn server" in f["detail"] for f in faults), faults
    # After it: games without a fault, their bots started by the arena.
    assert not records[-1]["faults"]
    assert "the spawn server" in caplog.text and "is gone" in caplog.text
    assert run_processes(out) == []


def test_the_servers_limits_are_the_arenas(own_server: None, tmp_path: Path) -> None:
    """The bot's resource limits come from the set-up (Rlimits), not from
    the server's own: a soft limit below the arena's holds in the bot."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    spec = _spec(
        tmp_path,
        'test "$(ulimit -n)" = 77',
        preexec=Rlimits(((resource.RLIMIT_NOFILE, 77, hard),)),
    )
    proc, text, _ = trio.run(_run, spec)
    assert proc.child.server is not None
    assert text == "exit code 0", soft


def test_a_forked_child_of_the_arena_starts_a_server_of_its_own(
    own_server: None, tmp_path: Path
) -> None:
    """A server belongs to one process: a forked child (a pool worker) does
    not send its starts to its parent's server, whose replies go to the
    parent's reader thread, but starts one of its own."""
    first, _, _ = trio.run(_run, _spec(tmp_path, "exit 0"))
    parent = spawn._server
    assert parent is not None and first.child.server is parent
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one bot start, its server's pid and the bot's exit
        code = 1
        try:
            proc, text, _ = trio.run(_run, _spec(tmp_path, "exit 7"))
            server = proc.child.server
            os.write(write, f"{server.pid if server else 0} {text}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        answer = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    server_pid, text = answer.split(" ", 1)
    assert int(server_pid) not in (0, parent.pid)
    assert text == "exit code 7"
    assert parent.gone is None  # the parent's is untouched
    for _ in range(6000):  # the child's dies with it (at most 60 s)
        if not alive(int(server_pid)):
            break
        time.sleep(0.01)
    assert not alive(int(server_pid))


def test_started_and_finished_bots_leave_no_descriptor_open(
    own_server: None, tmp_path: Path
) -> None:
    """Each start through the server hands the arena pipes and a pidfd:
    after ``finish`` none stays open (a leak reached descriptor numbers that
    ``select`` refused in a long test process)."""

    async def main() -> tuple[int, int]:
        await _run(_spec(tmp_path, "exit 0"))  # the server and its reader started
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            _, status, _ = await _run(_spec(tmp_path, "exit 0"))
            assert status == "exit code 0"
        return before, len(os.listdir("/proc/self/fd"))

    before, after = trio.run(main)
    assert after <= before


def test_readable_now_takes_descriptors_past_1024() -> None:
    """A pidfd numbered 1024 or more (an arena holding many descriptors) is
    polled, where ``select`` raised ValueError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 2048:
        pytest.skip(f"RLIMIT_NOFILE's hard limit is {hard}: no descriptor 2000 here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    proc = subprocess.Popen(["sleep", "60"])
    pidfd = os.pidfd_open(proc.pid)
    high = os.dup2(pidfd, 2000)
    try:
        assert spawn.readable_now(high) is False
        proc.kill()
        proc.wait()
        assert spawn.readable_now(high) is True
    finally:
        os.close(high)
        os.close(pidfd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
