"""The channels of issue 22, sealed: a sender and a receiver
(tests/bots/leak.py, scored by benchmarks/seal_channels.py) try to pass the
sender's dealt hand through dnotify, the pseudo-terminal count, each
machine-wide counter file, and the ones that held before (files, an abstract
socket, locks, inotify), over 12 hands; the receiver also tries pid 1
(bubblewrap's init), and reports its environment and mount table. Sealed,
no channel gives the receiver a single card in any hand (the sender sends
every card of its hand each hand: an open channel shows at the first), so
no hand is exact and the share of the sender's cards the receiver places
right is within the 99% interval of a guess. (How much crosses unsealed,
and over many hands: benchmarks/seal_channels.py.)

Also here: the start-up probe starts what bots get (issue 24 item 14), the
runtimes of the readable list start and play sealed (Python, node, a JVM, a
C program), and what a sealed bot reads in /proc, /dev and its environment."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, bot_path, load_outputs, needs_seal, run_arena

from arena.sandbox import seal

_SPEC = importlib.util.spec_from_file_location(
    "seal_channels", ROOT / "benchmarks" / "seal_channels.py"
)
assert _SPEC is not None and _SPEC.loader is not None
channels = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(channels)

#: Every channel the attacker tries (tests/bots/leak.py).
CHANNELS = [
    "dnotify", "inotify", "tmp-file", "abstract-socket", "lock-library", "pty", "meminfo",
    "vmstat", "loadavg", "sysinfo", "file-nr", "inode-nr", "dentry-state", "stat", "uptime",
]  # fmt: skip


@pytest.fixture(scope="module")
def sealed_leak() -> tuple[dict[str, dict[str, Any]], dict[str, Any], str]:
    from conftest import SEAL_PROBLEM

    if SEAL_PROBLEM is not None:
        pytest.skip(f"bots cannot be sealed here: {SEAL_PROBLEM}")
    # One table, 4 games of 3 hands (a game per seat rotation): 12 hands. Each
    # hand the sender sends its 13 cards through every channel, so an open
    # channel gives cards in the first hand; the statistics over many hands
    # are the benchmark's (64 hands took 30 s more here).
    return channels.run(["--sandbox"], hands_per_game=3, rounds=1, seed=5)  # type: ignore[no-any-return]


#: The sealed run takes 10 s to a minute, as busy as the machine is (its
#: bots wait for core tokens other arenas share).
LONG = pytest.mark.timeout(600)


@needs_seal
@LONG
@pytest.mark.parametrize("channel", CHANNELS)
def test_a_sealed_channel_carries_no_hand(
    channel: str, sealed_leak: tuple[dict[str, dict[str, Any]], dict[str, Any], str]
) -> None:
    scores, _, _ = sealed_leak
    found = scores[channel]
    # The receiver's report of a game's last hand can miss its record (written
    # as the game ends): the other two hands of each game are always there.
    assert found["hands"] >= 8
    assert found["given"] == 0, found  # not one card crossed, in any hand
    assert found["exact"] == 0
    low, high = channels.chance_interval(found["hands"])
    assert low <= found["right"] <= high, found


@needs_seal
@LONG
def test_sealed_the_receiver_cannot_reach_pid_1(
    sealed_leak: tuple[dict[str, dict[str, Any]], dict[str, Any], str],
) -> None:
    """bubblewrap's init (pid 1 of the sandbox, the bot's own user): no
    ptrace, no process_vm_readv, and its /proc folder is hidden."""
    _, info, _ = sealed_leak
    assert info["ptrace-pid1"] is None
    assert info["vm-readv-pid1"] is None
    assert info["environ-pid1"] is None


@needs_seal
@LONG
def test_sealed_no_run_id_and_no_arena_folder_in_environment_or_mount_table(
    sealed_leak: tuple[dict[str, dict[str, Any]], dict[str, Any], str],
) -> None:
    import arena

    _, info, run_id = sealed_leak
    env = info["env"]
    assert "HEARTS_ARENA_RUN" not in env
    assert env["PATH"] == seal.BOT_PATH
    assert env["PYTHONPATH"] == str(seal.KIT_DIR)
    assert info["cwd"] == str(seal.ENTRANT_DIR)
    seen = json.dumps(info)
    assert run_id not in seen
    package = str(Path(arena.__file__).resolve().parent.parent)
    for private in (package, sys.prefix):
        assert private not in seen, private
    assert str(seal.ENTRANT_DIR) in info["mounts"]
    assert str(seal.KIT_DIR / "arena") in info["mounts"]


def test_the_bot_path_names_sandbox_ro_bin_folders_first(tmp_path: Path) -> None:
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    got = seal.bot_path_variable([tmp_path / "jdk", tmp_path / "lib"])
    assert got == f"{tmp_path / 'jdk' / 'bin'}:/usr/local/bin:/usr/bin:/bin"


def test_the_readable_list_holds_the_runtimes_and_not_all_of_usr() -> None:
    paths = {str(p) for p in seal.readable_paths()}
    assert "/usr" not in paths and "/usr/lib" not in paths and "/usr/bin" not in paths
    assert f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}" in paths
    libc = [p for p in paths if Path(p).name == "libc.so.6"]
    assert libc, "the C library"
    assert any(Path(p).name.startswith("libstdc++.so.6") for p in paths)
    assert any(Path(p).name.startswith("ld-linux") for p in paths)
    if shutil.which("java"):
        assert "/usr/lib/jvm" in paths
    for path in seal.readable_paths():
        assert not any(str(path).startswith(str(other) + "/") for other in seal.readable_paths())


@needs_seal
def test_a_probe_whose_filter_cannot_load_plays_unsealed_with_one_line(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bubblewrap that cannot load the filter (as under qemu-user: the probe
    ran without the filter, and every bot then crashed in a run that exited
    0): one line, bots unsealed, no fault; with --sandbox, exit 4."""
    real = seal.bwrap_path()
    assert real is not None
    tmp_path = open_tmp  # the probe runs bubblewrap as a bot user
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    (stand_in / "bwrap").write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --seccomp "*)\n'
        '  echo "bwrap: prctl(PR_SET_SECCOMP): Invalid argument" >&2; exit 1;;\n'
        "esac\n"
        f'exec {real} "$@"\n'
    )
    (stand_in / "bwrap").chmod(0o755)
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in}:{os.environ['PATH']}")
    assert seal.bwrap_path() == str(stand_in / "bwrap")
    bots = ["sample:low", "sample:duck", "sample:random", "sample:heuristic"]
    out = tmp_path / "out"
    code = run_arena(["run", *bots, "--hands", "1", "--rounds", "1", "--out", str(out), "--quiet"])
    assert code == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "NOT sealed" in x]
    assert lines == [
        "hearts-arena: bubblewrap cannot load the seal's seccomp filter here "
        f"(bwrap: prctl(PR_SET_SECCOMP): Invalid argument): {seal.NOT_ISOLATED}"
    ]
    results, _ = load_outputs(out)
    assert results["settings"]["isolation"]["sandbox"] is False
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    code = run_arena(["run", *bots, "--hands", "1", "--rounds", "1", "--sandbox", "--out", str(tmp_path / "o2")])  # fmt: skip
    assert code == 4
    assert "cannot load the seal's seccomp filter" in capsys.readouterr().err


@needs_seal
def test_node_a_jvm_and_a_c_program_play_sealed_with_no_fault(open_tmp: Path) -> None:
    """The runtimes of the readable list: the sample js_bot.js on node, a
    small Java bot (tests/bots/java, compiled with javac here) and a C bot
    (tests/bots/c, compiled with cc), with a Python sample bot."""
    needed = [tool for tool in ("node", "javac", "java", "cc") if shutil.which(tool) is None]
    if needed:
        pytest.skip(f"not installed: {', '.join(needed)}")
    java = open_tmp / "java"
    shutil.copytree(ROOT / "tests" / "bots" / "java", java)
    subprocess.run(["javac", "FirstLegal.java"], cwd=java, check=True)
    c = open_tmp / "c"
    shutil.copytree(ROOT / "tests" / "bots" / "c", c)
    subprocess.run(["cc", "-O2", "-o", "first_legal", "first_legal.c"], cwd=c, check=True)
    for folder in (java, c):
        for path in (folder, *folder.iterdir()):
            path.chmod(0o755)
    js = ROOT / "arena" / "sample_bots" / "js_bot.js"
    if not js.exists():
        js = ROOT / "sample_bots" / "js_bot.js"
    out = open_tmp / "out"
    entrants = [f"js=node {js}", f"j={java / 'run.sh'}", f"c={c / 'first_legal'}", "sample:low"]
    args = ["run", *entrants, "--hands", "2", "--rounds", "1", "--seed", "3", "--sandbox"]
    code = run_arena([*args, "--out", str(out), "--quiet"])
    assert code == 0
    results, records = load_outputs(out)
    assert results["settings"]["isolation"]["sandbox"] is True
    assert {row["name"] for row in results["standings"]} == {"js", "j", "c", "low"}
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"]), [
        rec["stderr"] for rec in records
    ]
    assert len(records) == 4


#: Files at the top of ``/proc`` that only root may open (mode 0400).
_ROOT_ONLY = frozenset(
    {"kmsg", "slabinfo", "timer_list", "vmallocinfo", "pagetypeinfo", "kpageflags"}
    | {"kpagecgroup", "kpagecount", "program_cpu"}
)
#: Machine-wide counters a sealed bot reads as empty files.
_EMPTY = frozenset({"zoneinfo", "buddyinfo", "interrupts", "softirqs", "diskstats", "locks"})


@needs_seal
def test_what_a_sealed_bot_reads_in_proc_and_dev(open_tmp: Path) -> None:
    """/proc/meminfo shows the bot's memory bound, /proc/stat one cpu line a
    CPU, the counters of /proc/sys are the bot's own, there is no /dev/ptmx
    and no /dev/pts, and /dev has the devices of seal.DEVICES."""
    folder = open_tmp / "viewer"
    folder.mkdir()
    shutil.copy(bot_path("first_legal").parent / "botlib.py", folder / "botlib.py")
    (folder / "viewer.py").write_text(
        "import json, os, sys\n"
        "from botlib import serve\n"
        "seen = {\n"
        "  'meminfo': open('/proc/meminfo').read().splitlines()[:3],\n"
        "  'cpus': [x.split()[0] for x in open('/proc/stat') if x.startswith('cpu')],\n"
        "  'pty': open('/proc/sys/kernel/pty/nr').read().strip(),\n"
        "  'file-nr': open('/proc/sys/fs/file-nr').read().split()[0],\n"
        "  'loadavg': open('/proc/loadavg').read().strip(),\n"
        "  'dev': sorted(os.listdir('/dev')),\n"
        "  'cpu_count': os.cpu_count(),\n"
        "  'somaxconn': os.path.exists('/proc/sys/net/core/somaxconn'),\n"
        "}\n"
        "def probe(name):\n"
        "  try:\n"
        "    fd = os.open('/proc/' + name, os.O_RDONLY | os.O_NONBLOCK)\n"
        "  except PermissionError:\n"
        "    return 'denied'\n"
        "  except OSError as e:\n"
        "    return type(e).__name__\n"
        "  try:\n"
        "    return len(os.read(fd, 64))\n"
        "  except OSError as e:\n"
        "    return type(e).__name__\n"
        "seen['opened'] = {n: probe(n) for n in NAMES}\n"
        "print('VIEW ' + json.dumps(seen), file=sys.stderr, flush=True)\n"
        "serve('viewer')\n".replace("NAMES", repr(sorted(_ROOT_ONLY | _EMPTY)))
    )
    out = open_tmp / "out"
    args = ["run", str(folder / "viewer.py"), "sample:low", "sample:duck", "sample:random"]
    args += ["--hands", "1", "--rounds", "1", "--memory-limit", "1500", "--sandbox"]
    assert run_arena([*args, "--out", str(out), "--quiet"]) == 0
    _, records = load_outputs(out)
    text = records[0]["stderr"][records[0]["seats"].index("viewer")]
    seen = json.loads(
        next(x for x in text.splitlines() if x.startswith("VIEW ")).removeprefix("VIEW ")
    )
    assert seen["meminfo"][0].split() == ["MemTotal:", str(1500 * 1024), "kB"]
    assert seen["meminfo"][2].split() == ["MemAvailable:", str(1500 * 1024), "kB"]
    cpus = len(os.sched_getaffinity(0))
    assert seen["cpus"] == ["cpu", *(f"cpu{i}" for i in range(cpus))]
    assert seen["cpu_count"] == cpus
    assert seen["pty"] == "0" and seen["file-nr"] == "0"
    assert seen["loadavg"] == "0.00 0.00 0.00 1/1 1"
    assert "ptmx" not in seen["dev"] and "pts" not in seen["dev"]
    assert set(seal.DEVICES) <= set(seen["dev"])
    assert seen["somaxconn"] is True
    # Files only root may open stay the kernel's (no mount over them) and a
    # sealed bot cannot open them; the machine's other counters read empty.
    here = {n for n in _ROOT_ONLY | _EMPTY if os.path.exists(f"/proc/{n}")}
    closed = {n for n in here if not os.stat(f"/proc/{n}").st_mode & 0o006}
    assert closed and here - closed
    assert {n for n in here if seen["opened"][n] == "denied"} == closed
    assert {n for n in here if seen["opened"][n] == 0} == here - closed


def test_only_a_root_bot_gets_the_files_only_root_may_open_covered() -> None:
    # A bot that is not root cannot open kmsg, slabinfo, kpageflags and the
    # like: no mount covers them (one mount fewer each, in every start). A
    # bot running as root (--same-user in a root arena) could: each is
    # covered by an empty file, as every other machine-wide file is.
    view = seal.proc_view(0)
    closed = seal._closed_to_bots()
    assert {"kmsg", "kpageflags"} <= closed and not closed & set(seal.PROC_AS_IS)
    as_root = seal.proc_binds(view, as_root=True)
    as_bot = seal.proc_binds(view, as_root=False)
    targets = {a for a in as_root if a.startswith("/proc/")}
    assert {f"/proc/{n}" for n in closed} <= targets
    assert targets - {a for a in as_bot if a.startswith("/proc/")} == {f"/proc/{n}" for n in closed}
    assert "/proc/meminfo" in as_bot and "/proc/zoneinfo" in as_bot


def test_a_bot_runs_as_root_only_with_uid_0_or_as_a_root_arena_itself() -> None:
    # The launcher and the probe decide the same way whether the files only
    # root may open need covering (seal.runs_as_root).
    assert seal.runs_as_root(0) is True
    assert seal.runs_as_root(3_900_300) is False
    assert seal.runs_as_root(None) is (os.geteuid() == 0)
