"""A control group per bot, frozen off move, clocks that start with a core,
and clean-up that a bot cannot dodge (issue 13). Mechanisms, not timings."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
from conftest import BOTS, ROOT, alive, bot, load_outputs, processes_matching, run_arena

from arena.game.referee import handshake
from arena.protocol.faults import Fault
from arena.sandbox import cgroups
from arena.sandbox.cores import CoreGate
from arena.sandbox.entrants import parse_entrants
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.sandbox.spawn import LaunchSpec
from arena.seats.process import BotProcess
from arena.seats.seat import Request

PLAN = cgroups.probe()
needs_groups = pytest.mark.skipif(not PLAN.usable, reason="no writable control groups here")
needs_freezer = pytest.mark.skipif(not PLAN.freeze, reason="no cgroup freezer here")
needs_memory = pytest.mark.skipif(not PLAN.memory, reason="no memory control group here")


_LAUNCHERS: list[Launcher] = []  # kept alive: a launcher removes its folder copies when collected


def spec_for(file: str, *args: str, **options: object) -> LaunchSpec:
    """A launch spec for a test bot, from a checked launcher (kept alive)."""
    launch = Launcher(LaunchOptions(**options))  # type: ignore[arg-type]
    bot_entrant = entrant(file, *args)
    launch.check([bot_entrant])
    _LAUNCHERS.append(launch)
    return launch.spec(bot_entrant)


def entrant(file: str, *args: str):  # type: ignore[no-untyped-def]
    text = f"{file}={BOTS / (file + '.py')}" + "".join(f" {a}" for a in args)
    return parse_entrants([text])[0]


def wait_until(predicate, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll until ``predicate()`` holds. No wall-clock bound of its own (a busy machine
    may take long): a condition that never comes is the test's timeout, whose stack
    dump shows ``what`` in this frame."""
    while not predicate():
        time.sleep(0.01)


def test_plan_parses_mountinfo_and_own_groups() -> None:
    mountinfo = (
        "30 25 0:26 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw\n"
        "31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "32 25 0:28 /ctr /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
        "33 25 0:29 / /proc rw - proc proc rw\n"
    )
    mounts = cgroups._mounts(mountinfo)
    assert [(m.version, sorted(m.controllers), str(m.point)) for m in mounts] == [
        (2, [], "/sys/fs/cgroup/unified"),
        (1, ["memory"], "/sys/fs/cgroup/memory"),
        (1, ["pids"], "/sys/fs/cgroup/pids"),
    ]
    own = cgroups._own_groups("4:memory:/a/b\n8:pids:/ctr/x\n0::/u\n")
    assert own == {"memory": "/a/b", "pids": "/ctr/x", "unified": "/u"}
    assert cgroups._group_dir(mounts[2], own["pids"]) == Path("/sys/fs/cgroup/pids/x")
    assert cgroups._group_dir(mounts[1], own["memory"]) == Path("/sys/fs/cgroup/memory/a/b")


def test_describe_names_sources_and_what_is_not_enforced() -> None:
    plan = cgroups.Plan(bases={"unified": Path("/x")}, freeze="unified", kill="unified")
    line = plan.describe(256, 64)
    assert "freezing (cgroup2 cgroup.freeze)" in line
    assert "memory 256 MiB per process (RLIMIT_AS)" in line
    assert "not enforced here: memory per bot" in line
    assert "processes per bot" in line.split("not enforced here:")[1]
    assert "CPU time per bot" in line.split("not enforced here:")[1]
    full = cgroups.Plan(
        bases={"unified": Path("/x")}, freeze="unified", kill="unified", cpu="unified",
        memory="unified", pids="unified", share="unified", cpuset="unified",
    ).describe(256, 64)  # fmt: skip
    assert "not enforced here: nothing" in full
    assert "one core per bot, first on move (cgroup2 cpu.max)" in full
    assert "pinned to its core (cgroup2 cpuset.cpus)" in full


def test_core_tokens_are_shared_by_processes_and_given_back_when_one_dies(
    tmp_path: Path,
) -> None:
    gate = CoreGate(2, token_dir=tmp_path)
    # Another process (another worker, or another arena) holds token 0 ...
    code = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
    )
    trio.run(lambda: _first_token(gate))  # makes the lock files
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "0")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"

        async def main() -> None:
            assert await gate.acquire() == 1  # ... so this process gets token 1
            with trio.move_on_after(0.3) as waited:
                await gate.acquire()  # and no third one while both are held
            assert waited.cancelled_caught and gate.held == 1
            holder.kill()  # the kernel gives a dead process's token back
            with trio.fail_after(30):
                assert await gate.acquire() == 0
            assert gate.held == 2
            gate.release(0)
            gate.release(1)

        trio.run(main)
    finally:
        holder.kill()
        holder.wait()


def test_a_dropped_core_gate_closes_its_lock_files_and_gives_back_its_token(
    tmp_path: Path,
) -> None:
    """A gate per run or per Dask table: each one dropped closes its two
    descriptors (they were kept open, so a long-lived process ran out), and
    a token it still held is free again."""
    import gc

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    gc.collect()  # earlier tests' dropped objects closed first
    before = open_fds()
    for _ in range(5):
        gate = CoreGate(2, token_dir=tmp_path)
        assert trio.run(gate.acquire) == 0  # held, never released
        del gate
        gc.collect()
    assert open_fds() <= before  # ten more without the finalizer
    other = CoreGate(2, token_dir=tmp_path)
    assert trio.run(other.acquire) == 0  # the dropped gates' token 0 is free


async def _first_token(gate: CoreGate) -> None:
    gate.release(await gate.acquire())


def test_a_token_given_back_goes_to_a_waiter_of_this_process_without_waiting_for_its_poll(
    tmp_path: Path,
) -> None:
    """The clock never moves here (a mock clock): a waiter that could only
    poll would still be asleep; the release itself must wake it."""
    from trio.testing import MockClock, wait_all_tasks_blocked

    gate = CoreGate(1, token_dir=tmp_path)
    got: list[int] = []

    async def main() -> None:
        held = await gate.acquire()
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                got.append(await gate.acquire())

            nursery.start_soon(wait)
            await wait_all_tasks_blocked()
            assert got == [] and gate.held == 1  # asleep until its next poll
            gate.release(held)
            await wait_all_tasks_blocked()
            assert got == [held] and gate.held == 1
        gate.release(got[0])

    trio.run(main, clock=MockClock())
    # Given back outside any Trio run (nobody to wake): no error, and free again.
    token = trio.run(gate.acquire)
    gate.release(token)
    assert trio.run(gate.acquire) == token


@needs_groups
@pytest.mark.skipif(not (PLAN.share and PLAN.freeze), reason="no cpu controller or freezer")
def test_a_group_writes_its_weight_only_on_change_and_closes_its_files_when_removed() -> None:
    group = cgroups.RunGroups(PLAN, "test" + os.urandom(4).hex()).create()
    v2 = PLAN.share == cgroups.UNIFIED
    weight_file = group.dirs[PLAN.share] / ("cpu.weight" if v2 else "cpu.shares")
    on, off = (t["v2" if v2 else "v1"] for t in (cgroups.WEIGHT_ON_MOVE, cgroups.WEIGHT_OFF_MOVE))
    try:
        assert cgroups._read(weight_file).strip() == on  # set up on move
        group.set_priority(False)
        assert cgroups._read(weight_file).strip() == off
        # Written behind its back: the group writes only what changes from what it wrote last.
        cgroups._write(weight_file, on)
        group.set_priority(False)
        assert cgroups._read(weight_file).strip() == on
        group.set_priority(True)
        group.set_priority(False)
        assert cgroups._read(weight_file).strip() == off
        freeze_file = group._freeze_file
        assert freeze_file is not None
        for _ in range(3):  # the same open files, written again and again
            group.freeze()
            assert group.frozen and cgroups._read(freeze_file.path).strip() in ("1", "FROZEN")
            group.thaw()
            assert not group.frozen and cgroups._read(freeze_file.path).strip() in ("0", "THAWED")
        if PLAN.cpu:
            assert isinstance(group.cpu_ns(), int)
        if PLAN.cpuset:
            from arena.sandbox.cores import machine_cpus

            group.pin(machine_cpus()[0])
            assert cgroups._read(group.dirs[PLAN.cpuset] / "cpuset.cpus").strip() == str(
                machine_cpus()[0]
            )
        kept = group._kept_files()
        assert [f.fd >= 0 for f in kept] == [True] * len(kept)
    finally:
        group.kill()
        group.remove()
    assert not any(d.exists() for d in group.dirs.values())
    assert [f.fd for f in group._kept_files()] == [-1] * len(group._kept_files())
    # A group that is gone: nothing raises, nothing is measured.
    group.freeze()
    group.thaw()
    group.set_priority(True)
    assert group.cpu_ns() is None and not group.frozen


def test_remove_run_dirs_ignores_paths_that_are_not_ours(tmp_path: Path) -> None:
    victim = tmp_path / "hearts-arena" / "abc"
    victim.mkdir(parents=True)
    assert cgroups.remove_run_dirs([victim, "/", "/sys/fs/cgroup", "../../etc"]) == 0
    assert victim.is_dir()  # not on a cgroup mount: left alone


@needs_groups
def test_a_bots_processes_are_in_its_group_and_nothing_is_left_after_close() -> None:
    spec = spec_for("hostile_grandchild", "setsid")
    group = spec.cgroup
    assert group is not None
    for d in group.dirs.values():
        assert d.stat().st_mode & 0o777 == 0o700
        assert d.parent.parent.name == cgroups.BASE_NAME

    async def main() -> tuple[int, list[int]]:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            assert await handshake(bot, 0, 20.0) is None
            members = group.pids()
            await bot.close(0.2)
            return bot.pid, members

    pid, members = trio.run(main)
    # The bot and the grandchild that left its session, both in the group.
    assert pid in members
    others = [p for p in members if p != pid]
    assert others, members
    assert all(not alive(p) for p in members)
    assert group.pids() == []
    assert not any(d.exists() for d in group.dirs.values())


@needs_freezer
def test_a_bot_off_move_is_frozen_and_its_cpu_does_not_advance(tmp_path: Path) -> None:
    gate = CoreGate(1, token_dir=tmp_path / "cores")
    spec = spec_for("spinner", gate=gate)
    group = spec.cgroup
    assert group is not None

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                assert await handshake(bot, 0, 20.0) is None
                assert gate.held == 0  # the token went back with the answer
                await trio.to_thread.run_sync(
                    wait_until, lambda: group.freezer_state() == "frozen", "frozen"
                )
                assert bot.freezer_state() == "frozen"
                before = group.cpu_ns()
                await trio.sleep(0.3)  # a spinning child would burn 0.3 s of CPU
                if PLAN.cpu:
                    assert before is not None and group.cpu_ns() == before
                # On move again: thawed, and its CPU advances.
                reply = await bot.request(Request("pass", {"hand": ["2C", "3C", "4C"]}, 5.0))
                assert reply.message is not None
                if PLAN.cpu:
                    assert reply.cpu is not None and reply.cpu >= 0
                    assert group.cpu_ns() > before  # type: ignore[operator]
            finally:
                await bot.close(0.2)

    trio.run(main)


@pytest.mark.skipif(not (PLAN.share and PLAN.cpuset), reason="no cpu or cpuset controller")
def test_a_bot_on_move_has_one_core_of_its_own_at_the_highest_weight(tmp_path: Path) -> None:
    from arena.sandbox.cores import machine_cpus

    gate = CoreGate(1, token_dir=tmp_path / "cores")
    spec = spec_for("first_legal", gate=gate)
    group = spec.cgroup
    assert group is not None
    share, cpuset = group.dirs[PLAN.share], group.dirs[PLAN.cpuset]
    v2 = PLAN.share == cgroups.UNIFIED

    def weight() -> str:
        return cgroups._read(share / ("cpu.weight" if v2 else "cpu.shares")).strip()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                assert await handshake(bot, 0, 20.0) is None
                # Pinned to the CPU of the only token, a quota of one core.
                assert cgroups._read(cpuset / "cpuset.cpus").strip() == str(machine_cpus()[0])
                if v2:
                    assert cgroups._read(share / "cpu.max").split() == ["100000", "100000"]
                else:
                    assert cgroups._read(share / "cpu.cfs_quota_us").strip() == "100000"
                    assert cgroups._read(share / "cpu.cfs_period_us").strip() == "100000"
                assert weight() == cgroups.WEIGHT_ON_MOVE["v2" if v2 else "v1"]
                # A pondering bot off move (and a bot being closed): idle CPU only.
                group.set_priority(False)
                assert weight() == cgroups.WEIGHT_OFF_MOVE["v2" if v2 else "v1"]
            finally:
                await bot.close(0.2)

    trio.run(main)


@needs_freezer
def test_the_clock_starts_when_the_bot_gets_a_core(tmp_path: Path) -> None:
    gate = CoreGate(1, token_dir=tmp_path / "cores")
    spec = spec_for("first_legal", gate=gate)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                assert await handshake(bot, 0, 20.0) is None
                bot.stats.transcript = []
                token = await gate.acquire()  # another bot is thinking on the only core
                replies = []
                answered = trio.Event()

                async def ask() -> None:
                    replies.append(
                        await bot.request(Request("pass", {"hand": ["2C", "3C", "4C"]}, 0.05))
                    )
                    answered.set()

                nursery.start_soon(ask)
                await trio.sleep(0.3)  # six times the bot's time limit
                assert replies == []  # not timed out: its clock has not started
                assert bot.stats.transcript == []  # the request was not even sent
                assert bot.freezer_state() == "frozen"
                released = trio.current_time()
                gate.release(token)
                with trio.fail_after(30):
                    await answered.wait()
                reply = replies[0]
                assert reply.fault is None and reply.message == {
                    "type": "pass", "id": reply.request_id, "cards": ["2C", "3C", "4C"]
                }  # fmt: skip
                sent = bot.stats.transcript[0]
                assert sent["sent"]["type"] == "pass"
                assert sent["t"] >= released  # charged from the thaw, not from the ask
            finally:
                await bot.close(0.2)

    trio.run(main)


@needs_memory
def test_memory_of_a_bot_with_many_children_is_bound_by_one_limit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", bot("hostile_children_alloc", "hog"), *(bot("first_legal", n) for n in "abc")]
    args += ["--hands", "1", "--rounds", "1", "--seed", "5", "--memory-limit", "128"]
    args += ["--time-limit", "5", "--out", str(out), "--quiet", "--jobs", "1"]
    assert run_arena(args) == 0
    _, records = load_outputs(out)
    assert len(records) == 4
    for rec in records:
        seat = rec["seats"].index("hog")
        # 6 x 50 MiB cannot fit in 128 MiB for the bot: at least 3 children
        # were killed for memory (50 MiB each would fit a per-process bound).
        assert rec["timing"][seat]["oom_kills"] >= 3
        # A child killed for memory is recorded, and is no fault: the bot answers.
        assert [f for f in rec["faults"] if f["entrant"] == "hog"] == []


@needs_memory
@pytest.mark.parametrize("grouped", [True, False], ids=["memory group", "no groups"])
def test_where_the_memory_group_binds_the_address_space_is_not_limited(
    grouped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RLIMIT_AS is dropped where the group bounds the bot's memory (a JVM or a
    Go program reserves far more address space than it uses): a bot reserving
    1 GiB under a 128 MiB bound starts with the group and fails without it."""
    from arena.sandbox.isolation import Limits

    if not grouped:
        monkeypatch.setattr(cgroups, "_PLAN", cgroups.Plan(notes=("test",)))
    spec = spec_for("reserves_address_space", limits=Limits(memory_mb=128))
    assert (spec.cgroup is not None) is grouped

    async def main() -> tuple[Fault | None, str, str]:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                fault = await handshake(bot, 0, 20.0)
                limits = bound = ""
                if fault is None:
                    limits = cgroups._read(f"/proc/{bot.pid}/limits")
                    memory = spec.cgroup.dirs[PLAN.memory]  # type: ignore[union-attr]
                    name = (
                        "memory.max" if PLAN.memory == cgroups.UNIFIED else "memory.limit_in_bytes"
                    )
                    bound = cgroups._read(memory / name).strip()
                return fault, limits, bound
            finally:
                await bot.close(0.2)

    fault, limits, bound = trio.run(main)
    if grouped:
        assert fault is None
        assert bound == str(128 << 20)  # the bot as a whole is bound instead
        [line] = [x for x in limits.splitlines() if x.startswith("Max address space")]
        assert line.split()[3:5] == ["unlimited", "unlimited"]
    else:
        assert fault is not None and fault.reason == "crashed"
        assert "handshake" in fault.detail


@pytest.mark.skipif(not PLAN.pids, reason="no pids control group here")
def test_processes_of_a_bot_running_as_root_are_bound_by_its_group() -> None:
    """With --same-user nothing else bounds a root bot's processes
    (RLIMIT_NPROC binds no root process): the group's pids bound does."""
    from arena.sandbox.isolation import Limits

    spec = spec_for("hostile_fork_bomb", limits=Limits(processes=24), separate_users=False)
    assert spec.user is None and spec.cgroup is not None
    pids_dir = spec.cgroup.dirs[PLAN.pids]
    assert cgroups._read(pids_dir / "pids.max").strip() == "24"

    async def main() -> str:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                assert await handshake(bot, 0, 20.0) is None
                await trio.to_thread.run_sync(
                    wait_until, lambda: "fork failed after" in bot.stderr.text(), "reported"
                )
                return bot.stderr.text()
            finally:
                await bot.close(0.2)

    text = trio.run(main)
    made = int(text.split("fork failed after ")[1].split(":")[0])
    # The bot itself (and bubblewrap's two processes, when sealed) count too.
    assert 0 < made < 24
    assert spec.cgroup.pids() == []


@needs_groups
def test_a_bot_is_started_only_once_it_gets_a_core(tmp_path: Path) -> None:
    """The handshake follows the core rule: a new bot's process does not
    exist, and its hello is not sent, while every core token is held."""
    gate = CoreGate(1, token_dir=tmp_path / "cores")
    spec = spec_for("first_legal", gate=gate)
    group = spec.cgroup
    assert group is not None

    async def main() -> None:
        token = await gate.acquire()  # another bot is thinking on the only core
        started: list[BotProcess] = []
        done = trio.Event()
        async with trio.open_nursery() as nursery:

            async def start() -> None:
                started.append(await BotProcess.start(spec, nursery))
                done.set()

            nursery.start_soon(start)
            await trio.sleep(0.3)
            assert started == [] and group.pids() == []  # not even forked
            gate.release(token)
            with trio.fail_after(30):
                await done.wait()
            bot = started[0]
            try:
                assert group.pids() != []
                assert await handshake(bot, 0, 20.0) is None
                assert gate.held == 0  # given back with the hello's answer
            finally:
                await bot.close(0.2)

    trio.run(main)


def test_the_run_prints_one_line_saying_where_each_bound_comes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entrants = [bot("first_legal", n) for n in "abcd"]
    args = ["run", *entrants, "--hands", "1", "--rounds", "1", "--seed", "3", "--jobs", "1"]
    args += ["--memory-limit", "300", "--max-processes", "40", "--cores", "1"]
    assert run_arena([*args, "--out", str(tmp_path / "o")]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("bot groups: ")]
    assert lines == [LaunchOptions(cores=1).describe_bounds().replace("4096", "300").replace(
        "256 processes", "40 processes"
    )]  # fmt: skip
    [line] = lines
    assert "; not enforced here: " in line
    assert line.endswith("; 1 bots think at once (--cores), bots off move frozen")
    if PLAN.memory:
        assert "memory 300 MiB per bot (" in line
    else:
        assert "memory 300 MiB per process (RLIMIT_AS)" in line
    if PLAN.pids:
        assert "40 processes per bot (" in line
    pondering = LaunchOptions(cores=3, ponder=True).describe_bounds()
    assert pondering.endswith(
        "; 3 bots think at once (--cores), bots think on others' time (--ponder)"
    )


def test_a_process_in_the_referees_group_keeps_the_arenas_base() -> None:
    assert cgroups._outside_referees("/a/b/hearts-arena/referees") == "/a/b"
    assert cgroups._outside_referees("/hearts-arena/referees") == "/"
    assert cgroups._outside_referees("/a/b") == "/a/b"
    assert cgroups._outside_referees("/a/hearts-arena/referees/x") == "/a/hearts-arena/referees/x"


_REFEREE_CHILD = """
import json
from arena.sandbox import cgroups

def own():
    return open("/proc/self/cgroup").read()

first = cgroups.probe()
before = own()
moved = cgroups.prioritize_self(first)
during = own()
ref = first.bases[first.share] / cgroups.REFEREES
name = "cpu.weight" if (ref / "cpu.weight").exists() else "cpu.shares"
weights = {"referees_weight": (ref / name).read_text().strip(),
           "base_weight": (ref.parent / name).read_text().strip()}
cgroups._PLAN = None  # probed again, as a worker process of --jobs does
second = cgroups.probe()
back = cgroups.leave_referees()
print(json.dumps({
    "moved": moved, "back": back, "again": cgroups.leave_referees(),
    "before": before, "during": during, "after": own(),
    "first": {k: str(v) for k, v in first.bases.items()},
    "second": {k: str(v) for k, v in second.bases.items()},
    **weights,
}))
"""


@pytest.mark.skipif(not PLAN.share, reason="no cpu controller here")
def test_a_referee_leaves_its_group_and_its_workers_nest_no_bot_groups() -> None:
    """A referee moved to the referees' group (above other load, below a bot
    on move) goes back to its own group when the command ends: a test session that ran an arena
    in-process kept the weight that only bots on move share for all it ran
    next. A process probing from inside the referees' group (a worker process
    of --jobs) puts its bots' groups where its arena's record says, not in a
    ``referees/hearts-arena`` of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _REFEREE_CHILD], env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    seen = json.loads(done.stdout)
    assert seen["moved"] is True and seen["back"] is True and seen["again"] is False
    assert f"/{cgroups.BASE_NAME}/{cgroups.REFEREES}\n" in seen["during"]
    # Above other load (its base has a bot on move's weight), below a bot on move.
    version = "v2" if PLAN.share == cgroups.UNIFIED else "v1"
    assert seen["referees_weight"] == cgroups.WEIGHT_REFEREES[version]
    assert seen["base_weight"] == cgroups.WEIGHT_ON_MOVE[version]
    assert int(seen["referees_weight"]) * 16 == int(cgroups.WEIGHT_ON_MOVE[version])
    assert seen["before"] != seen["during"] and seen["after"] == seen["before"]
    assert seen["second"] == seen["first"]
    assert not any(f"/{cgroups.REFEREES}/" in d for d in seen["second"].values())


def test_the_cli_moves_the_referee_back_when_a_command_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(cgroups, "leave_referees", lambda: calls.append("left") or True)
    entrants = [bot("first_legal", n) for n in "abcd"]
    args = ["run", *entrants, "--hands", "1", "--rounds", "1", "--quiet"]
    assert run_arena([*args, "--out", str(tmp_path / "o")]) == 0
    assert calls == ["left"]
    assert run_arena(["run", "--rounds", "0"]) != 0  # a usage error: moved back all the same
    assert calls == ["left", "left"]


def _run_dirs(out: Path) -> list[Path]:
    data = json.loads((out / cgroups.RECORD_FILE).read_text())
    return [Path(d) for d in data["dirs"]]


@needs_groups
def test_nothing_of_a_bot_is_left_after_kill_9_and_resume(tmp_path: Path) -> None:
    marker = "4242.131"
    assert processes_matching(marker) == []
    entrants = [bot("hostile_clears_env", "env"), *(bot("stubborn", n) for n in "ab")]
    entrants.append(f"slow={BOTS / 'stubborn.py'} 0.01")
    # Unsealed: a sealed bot's processes die with its sandbox's pid namespace.
    # Two rounds (8 games): killed after 2 with the bot's child alive, 6 to resume.
    args = [*entrants, "--hands", "1", "--rounds", "2", "--seed", "7", "--jobs", "2", "--quiet"]
    args.append("--no-sandbox")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *args, "--out", str(out)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    journal = out / "games.jsonl"
    wait_until(lambda: journal.exists() and journal.read_text().count("\n") >= 2, "2 games")
    _kill_watchdog(proc.pid)
    # Killed while a game holds the bot (not between two games): its child is alive.
    _kill_while_alive(proc, marker)
    assert (out / cgroups.RECORD_FILE).stat().st_mode & 0o777 == 0o600
    dirs = _run_dirs(out)
    assert dirs and any(d.is_dir() for d in dirs)  # (a run folder goes when it empties)
    assert processes_matching(marker) != []  # outlived the arena, with no run id to find it by
    assert run_arena(["run", *args, "--out", str(out), "--resume"]) == 0
    results, records = load_outputs(out)
    assert results["complete"] is True and len(records) == 8
    assert processes_matching(marker) == []
    assert not any(d.exists() for d in dirs)
    assert not (out / cgroups.RECORD_FILE).exists()


@needs_groups
def test_cleanup_command_removes_what_a_killed_arena_left(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    marker = "4242.131"
    entrants = [bot("hostile_clears_env", "env"), *(bot("stubborn", n) for n in "abc")]
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *entrants, "--hands", "1", "--rounds", "3",
         "--seed", "7", "--jobs", "1", "--quiet", "--out", str(out), "--no-sandbox"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    journal = out / "games.jsonl"
    wait_until(lambda: journal.exists() and journal.read_text().count("\n") >= 1, "a game")
    _kill_watchdog(proc.pid)
    _kill_while_alive(proc, marker)
    dirs = _run_dirs(out)
    assert processes_matching(marker) != []
    assert run_arena(["cleanup", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("cleanup: killed ") and " 0 bot" not in said
    assert processes_matching(marker) == []
    assert not any(d.exists() for d in dirs)


def test_cleanup_refuses_a_folder_without_a_tournament(tmp_path: Path) -> None:
    assert run_arena(["cleanup", str(tmp_path)]) == 3


def test_a_worker_whose_parent_died_before_asking_to_die_with_it_exits() -> None:
    code = "from arena.tournament.pool import _die_with_parent; _die_with_parent(1); print('alive')"
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "alive" not in proc.stdout


@needs_groups
def test_workers_exit_when_the_arena_dies_and_the_watchdog_ends_their_bots(tmp_path: Path) -> None:
    marker = "4242.131"
    entrants = [bot("hostile_clears_env", "env"), *(bot("stubborn", n) for n in "abcd")]
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # 5 entrants, 5 tables x 4 rotations x 3 rounds: enough games for the worker pool at --jobs 2.
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "run", *entrants, "--hands", "1", "--rounds", "3",
         "--seed", "7", "--jobs", "2", "--quiet", "--out", str(out), "--no-sandbox"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    journal = out / "games.jsonl"
    wait_until(lambda: journal.exists() and journal.read_text().count("\n") >= 1, "a game")
    wait_until(lambda: processes_matching(marker) != [], "the bot's child started")
    workers = [p for p, cmd in processes_matching("multiprocessing") if _parent(p) == proc.pid]
    assert workers, "the games run in worker processes"
    dirs = _run_dirs(out)
    assert dirs and any(d.is_dir() for d in dirs)  # (a run folder goes when it empties)
    [watchdog] = [
        p for p, cmd in processes_matching("arena.sandbox.cgroups") if _parent(p) == proc.pid
    ]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not any(alive(p) for p in workers), "workers gone")
    # The run's watchdog ends the bots the workers left, and their groups.
    wait_until(lambda: processes_matching(marker) == [], "the bots' processes gone")
    wait_until(lambda: not any(d.exists() for d in dirs), "the groups gone")
    wait_until(lambda: not alive(watchdog), "the watchdog done")
    assert run_arena(["cleanup", str(out)]) == 0


def _kill_watchdog(arena: int) -> None:
    """Kill the run's watchdog, as a crash of the whole machine would: what
    the arena left must then be found by --resume or cleanup on their own."""
    [watchdog] = [
        p for p, cmd in processes_matching("arena.sandbox.cgroups") if _parent(p) == arena
    ]
    os.kill(watchdog, signal.SIGKILL)


def _kill_while_alive(proc: subprocess.Popen[bytes], marker: str) -> None:
    """SIGKILL the arena ``proc`` at a moment a process matching ``marker``
    is alive. The arena and its workers are stopped (SIGSTOP) before the
    marker is looked for, so a game cannot end (and kill the bot's child)
    between the look and the kill; a look that finds none lets them go on
    and waits again."""
    deadline = time.monotonic() + 120
    while True:
        frozen = [proc.pid, *(p for p in _all_pids() if _parent(p) == proc.pid)]
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        if processes_matching(marker):
            break
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert time.monotonic() < deadline, f"no process matching {marker} while the arena ran"
        assert proc.poll() is None, "the arena ended before the bot's child was seen"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Its workers die with it (PR_SET_PDEATHSIG); a stopped one gets SIGKILL too.


def _all_pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/freezer/cgroup.procs").exists(),
    reason="needs root and a v1 freezer hierarchy",
)
def test_reusing_a_uid_thaws_then_kills_what_a_killed_arena_left_frozen() -> None:
    from arena.sandbox.isolation import DEFAULT_UID_BASE, UID_POOL_SIZE, IsolationError, lease_uid

    base = Path("/sys/fs/cgroup/freezer") / cgroups.BASE_NAME
    base.mkdir(mode=0o700, exist_ok=True)
    plan = cgroups.Plan(bases={"freezer": base}, freeze="freezer")
    group = cgroups.RunGroups(plan, "test" + os.urandom(4).hex()).create()
    # A uid outside the arenas' pool: an arena another test runs meanwhile
    # may lease any uid of its pool (the pool's last was one: an arena whose
    # search started near it leased it, killing this test's sleeper first,
    # and a loaded run failed on the sleeper gone, 0 processes found).
    uid = 3_960_000
    assert not DEFAULT_UID_BASE <= uid < DEFAULT_UID_BASE + UID_POOL_SIZE

    def setup() -> None:
        group.join_self()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)

    # Left by a killed arena: an orphan (not this process's child to reap).
    subprocess.run(["sh", "-c", "sleep 4242.132 &"], preexec_fn=setup, check=True)
    try:
        wait_until(lambda: processes_matching("4242.132") != [], "the sleeper started")
        [(pid, _)] = processes_matching("4242.132")
        assert group.pids() == [pid]
        group.freeze()
        wait_until(lambda: group.freezer_state() == "frozen", "frozen")
        # Under the v1 freezer a frozen process keeps a SIGKILL pending: the uid
        # would stay busy for good unless its group is thawed first.
        with contextlib.suppress(IsolationError):  # its zombie, not yet reaped, may
            lease_uid(uid, 1).release()  # keep the uid busy a moment: not this test's point
        wait_until(lambda: processes_matching("4242.132") == [], "killed")
    finally:
        group.kill()
        group.remove()
        with contextlib.suppress(OSError):
            next(iter(group.dirs.values())).parent.rmdir()


@needs_groups
def test_bots_start_while_the_arena_holds_more_descriptors_than_a_bot_may(
    tmp_path: Path,
) -> None:
    """A bot's group is joined before its open-files limit is set: the arena's
    descriptors are still open in the child then, and with more of them than
    --max-open-files every bot used to fail to start (EMFILE in the set-up)."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(300)]
    try:
        out = tmp_path / "o"
        entrants = [bot("first_legal", n) for n in "abcd"]
        args = ["run", *entrants, "--hands", "1", "--rounds", "1", "--quiet"]
        assert run_arena([*args, "--max-open-files", "64", "--out", str(out)]) == 0
    finally:
        for fd in held:
            os.close(fd)
    results, records = load_outputs(out)
    assert [r["faults"] for r in records] == [[], [], [], []]
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])


@pytest.mark.skipif(
    not (
        Path("/sys/fs/cgroup/cpuset/cpuset.cpus").exists()
        and os.access("/sys/fs/cgroup/cpuset", os.W_OK)
    ),
    reason="no writable v1 cpuset hierarchy here",
)
def test_a_bot_group_in_a_run_folder_not_filled_yet_gets_cpus() -> None:
    """Two worker processes share a run's folder: one may make it and not yet
    have filled its cpuset when the other makes a bot group inside it. The bot
    group then fills the folder first (an empty cpuset refuses every process:
    ENOSPC, which made a bot fail to start)."""
    import secrets

    run = Path("/sys/fs/cgroup/cpuset") / f"hearts-arena-test-{secrets.token_hex(4)}"
    run.mkdir()
    bot_dir = run / "bot"
    try:
        assert (run / "cpuset.cpus").read_text().strip() == ""  # as another worker left it
        bot_dir.mkdir()
        cgroups._init_cpuset(bot_dir)
        root = Path("/sys/fs/cgroup/cpuset")
        for name in ("cpuset.cpus", "cpuset.mems"):
            assert (run / name).read_text().strip() == (root / name).read_text().strip()
            assert (bot_dir / name).read_text().strip() == (root / name).read_text().strip()
    finally:
        for d in (bot_dir, run):
            with contextlib.suppress(OSError):
                d.rmdir()


def test_close_ends_a_bot_whose_io_tasks_were_cancelled() -> None:
    """A worker stopped with SIGTERM cancels its games' tasks, the bots' exit
    watches among them; ``close`` (shielded) must still see the bot exit.
    It waited for the cancelled watch for good: every Ctrl-C with ``--jobs 2``
    left the workers hanging until the coordinator killed them."""
    spec = spec_for("stubborn", "0")  # ignores SIGTERM and outlives its input

    async def main() -> tuple[int, str]:
        async with trio.open_nursery() as outer:
            with trio.CancelScope() as games:
                async with trio.open_nursery() as nursery:
                    bot = await BotProcess.start(spec, nursery)
                    assert await handshake(bot, 0, 20.0) is None
                    games.cancel()  # as SIGTERM does in a worker
            assert not bot.exited.is_set()
            with trio.move_on_after(30) as waited:
                await bot.close(0.1)
            outer.cancel_scope.cancel()
        assert not waited.cancelled_caught, "close waited for a cancelled exit watch"
        return bot.pid, bot.exit_status()

    pid, status = trio.run(main)
    assert not alive(pid)
    assert status != "running"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing to another user needs root")
def test_an_arena_of_a_normal_user_gets_core_tokens_after_root_made_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Core tokens are owner-only files: an arena run by a normal user on a
    machine where root's arena made /tmp/hearts-arena-cores could not open
    them, and every bot it started "crashed" with "Permission denied". A
    normal user's tokens are in a folder of its own."""
    import shutil

    from arena.sandbox.cores import TOKEN_DIR, TOKEN_DIR_VARIABLE

    monkeypatch.delenv(TOKEN_DIR_VARIABLE)  # the suite's own folder (tests/conftest.py)
    CoreGate(1)._files()  # root's tokens exist (as after any arena run by root)
    assert CoreGate(1).token_dir == TOKEN_DIR
    uid = 3_950_123
    mine = Path(f"/tmp/hearts-arena-cores-{uid}")
    shutil.rmtree(mine, ignore_errors=True)
    pid = os.fork()
    if pid == 0:  # the child: a normal user making a gate and taking a token
        code = 3
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            gate = CoreGate(1)
            code = 0 if gate.token_dir == mine and gate._try() == 0 else 1
        except PermissionError:
            code = 2
        finally:
            os._exit(code)
    try:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert mine.stat().st_uid == uid
        assert (mine.stat().st_mode & 0o777) == 0o700
    finally:
        shutil.rmtree(mine, ignore_errors=True)


def test_a_core_token_folder_another_user_made_is_refused_before_any_bot_starts(
    tmp_path: Path,
) -> None:
    """Another user who made the token folder first could hold every token
    (flock) and starve this user's arenas: such a folder is refused, up front,
    with one line naming it."""
    from arena.sandbox.isolation import IsolationError
    from arena.sandbox.launcher import Launcher, LaunchOptions

    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 3_950_124, 3_950_124)
    with pytest.raises(PermissionError, match="not an owner-only folder of this user"):
        CoreGate(1, token_dir=theirs).check()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PermissionError, match=r"uid 0, mode drwxrwxrwx"):
        CoreGate(1, token_dir=shared).check()
    mine = tmp_path / "mine"
    CoreGate(2, token_dir=mine).check()
    assert sorted(p.name for p in mine.iterdir()) == ["0", "1"]

    launcher = Launcher(LaunchOptions(gate=CoreGate(1, token_dir=theirs), sandbox=False))
    try:
        with pytest.raises(IsolationError, match=f"core token folder {theirs} is not"):
            launcher.check([])
    finally:
        launcher.close()


def test_the_core_token_folder_can_be_named_by_an_absolute_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """HEARTS_ARENA_CORE_TOKENS names the tokens' folder (the suite gives each
    test process its own); arenas that share it share the cores, as two gates
    in one process do; a relative path is refused."""
    from arena.sandbox.cores import TOKEN_DIR_VARIABLE, default_token_dir

    folder = tmp_path / "tokens"
    monkeypatch.setenv(TOKEN_DIR_VARIABLE, str(folder))
    assert default_token_dir() == folder
    first, second = CoreGate(1), CoreGate(1)
    assert first._try() == 0
    assert second._try() is None  # the one token is held through the same folder
    assert sorted(p.name for p in folder.iterdir()) == ["0"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.setenv(TOKEN_DIR_VARIABLE, "tokens")
    with pytest.raises(ValueError, match="absolute path"):
        default_token_dir()
