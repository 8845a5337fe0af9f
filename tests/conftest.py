"""Shared helpers for the tests: bot entrant strings, running the CLI, finding stray processes."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# CPU seconds per test file (tests/suite_cpu.py), off by default: each pytest
# process joins an accounting group of its own before it imports the arena.
if os.environ.get("HEARTS_ARENA_TEST_CPU"):
    import suite_cpu

    suite_cpu.start()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        Path(os.environ["HEARTS_ARENA_TEST_CPU"]).write_text("")

# The suite's temporary files on a tmpfs (tests/suite_tmp.py): before the
# folders made at this file's import below.
from suite_tmp import temporary_files_on_a_tmpfs

from arena.cli.main import main

SUITE_TMP = temporary_files_on_a_tmpfs()

# pytest caches each test module's assertion-rewritten code in __pycache__, but
# not when PYTHONDONTWRITEBYTECODE is set (as in some CI images): each xdist
# worker then rewrote every test module at each collection, 13 CPU-seconds a
# worker on two busy cores (``python -m pytest --collect-only -n 0``: 14.0
# CPU-seconds without the cache, 6.0 with it). The test modules are imported
# after this file, so their rewritten code is cached; subprocesses keep the
# variable.
sys.dont_write_bytecode = False

# Hypothesis on a busy machine: no deadline per example and no "too slow" health
# check (data generation slowed by other load is no defect); each test's own
# @settings still sets its number of examples.
hypothesis_settings.register_profile(
    "arena", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("arena")

# Core tokens of their own per test process (HEARTS_ARENA_CORE_TOKENS, inherited
# by the arenas the tests start): a bot that sleeps or hangs in one test holds a
# token of its own process's arenas only, not one of the two every test's bots
# would queue for (arena/sandbox/cores.py). Set it beforehand to share a folder.
if not os.environ.get("HEARTS_ARENA_CORE_TOKENS"):
    _TOKENS = tempfile.mkdtemp(prefix="arena-test-cores-")
    os.environ["HEARTS_ARENA_CORE_TOKENS"] = _TOKENS
    atexit.register(shutil.rmtree, _TOKENS, True)

# The suite's own rules (tests/suite_hooks.py): an ERROR log record fails a test,
# a test stopped by its timeout ends its xdist worker (with -n 0: no Trio run
# state is left set for the next test).
from suite_hooks import (  # noqa: E402, F401
    pytest_handlecrashitem,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_runtest_teardown,
)


def pytest_configure(config: pytest.Config) -> None:
    """With ``HEARTS_ARENA_TEST_CPU`` set: the CPU recorder (tests/suite_cpu.py)."""
    if os.environ.get("HEARTS_ARENA_TEST_CPU"):
        import suite_cpu

        config.pluginmanager.register(
            suite_cpu.Recorder(Path(os.environ["HEARTS_ARENA_TEST_CPU"])), "suite_cpu"
        )


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one test process more than the cores. Most tests wait on
    bot processes (time limits, handshakes, kills) more than they compute, so a
    third process on two cores shortens the suite (measured: 267 to 272 s
    against 297 s with two)."""
    return (os.cpu_count() or 1) + 1


#: The test files that take longest, longest first (seconds of test time in a
#: whole-suite run on the shared two-core machine, 2026-12-01: 99 ... 21).
#: Collection puts them first, and xdist keeps that order (``--no-loadscope-reorder``
#: in pyproject.toml): by default xdist hands out the files with the most tests
#: first, which puts most of these (few tests, long each) near the end, where a
#: worker that has one queued runs on alone. A file not named here keeps its
#: place after them.
LONG_FILES_FIRST = (
    "live/test_live_browser.py", "tournament/test_resume.py", "server/test_server_dask.py",
    "tournament/test_dask.py", "seats/test_hostile.py", "server/test_runner.py",
    "tools/test_check.py", "report/test_browser_replay.py", "sandbox/test_cgroups.py",
    "sandbox/test_seal.py", "cli/test_doc_commands.py", "tournament/test_executors.py",
    "tournament/test_secret_deals.py", "server/test_runner_logic.py", "cli/test_config.py",
    "kits/test_kits.py", "tournament/test_deal_carrier.py", "tools/test_audit.py",
    "report/test_browser.py", "cli/test_cli.py", "tools/test_replay.py",
    "report/test_ci_verdicts.py", "sandbox/test_seal_channels.py", "protocol/test_protocol.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long files of :data:`LONG_FILES_FIRST` first, in that order (a
    stable sort: within a file, and for the other files, collection order)."""
    rank = {f"tests/{name}": i for i, name in enumerate(LONG_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


TESTS = Path(__file__).resolve().parent
BOTS = TESTS / "bots"
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"


#: Each test bot copied into a folder of its own (with ``botlib.py``): sealed,
#: the arena refuses two entrants whose different programs share a folder.
_OWN_FOLDERS = Path(tempfile.mkdtemp(prefix="arena-test-bots-"))
_OWN_FOLDERS.chmod(0o755)
atexit.register(shutil.rmtree, _OWN_FOLDERS, True)


def bot_path(file: str) -> Path:
    """The test bot ``tests/bots/FILE.py`` in a folder of its own (beside a
    copy of ``botlib.py``, which most test bots import)."""
    folder = _OWN_FOLDERS / file
    if not folder.is_dir():
        folder.mkdir()
        shutil.copy(BOTS / "botlib.py", folder / "botlib.py")
        shutil.copy(BOTS / f"{file}.py", folder / f"{file}.py")
        folder.chmod(0o755)
    return folder / f"{file}.py"


def _seal_problem() -> str | None:
    """Why bots cannot be sealed here (bubblewrap missing, or no user
    namespaces for a bot user), or ``None``."""
    from arena.sandbox.seal import probe

    uid = 3_900_300 if os.geteuid() == 0 else None  # as a bot user would run it
    return probe(user=uid, group=uid)


SEAL_PROBLEM = _seal_problem()
#: Skips a test that needs sealed bots, saying why they cannot be sealed here.
needs_seal = pytest.mark.skipif(
    SEAL_PROBLEM is not None, reason=f"bots cannot be sealed here: {SEAL_PROBLEM}"
)


def bot(file: str, name: str | None = None) -> str:
    """Entrant text for a test bot of tests/bots in a folder of its own (``NAME=path.py``)."""
    return f"{name or file}={bot_path(file)}"


def run_arena(args: list[str]) -> int:
    """Run the CLI in this process; returns the exit code."""
    return main(args)


def load_outputs(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``results.json`` and the ``games.jsonl`` records of an output folder."""
    results = json.loads((out / "results.json").read_text())
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines() if line]
    return results, records


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that is not a zombie (one that has exited
    and not been reaped holds nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def processes_matching(marker: str) -> list[tuple[int, str]]:
    """Live processes (not zombies) whose command line contains ``marker``."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != b"Z":
            found.append((int(entry), cmd))
    return found


def run_processes(out: Path) -> list[int]:
    """Live processes started by the tournament in ``out`` (found by the run id
    every bot process and its children carry in their environment)."""
    from arena.sandbox.isolation import find_processes
    from arena.sandbox.launcher import RUN_VARIABLE

    run_id = json.loads((out / "run.json").read_text())["run_id"]
    return find_processes(env=f"{RUN_VARIABLE}={run_id}")


def bot_user_processes() -> list[int]:
    """Live processes running as a uid of the arena's bot-user pool."""
    from arena.sandbox.isolation import DEFAULT_UID_BASE, UID_POOL_SIZE

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if (
            DEFAULT_UID_BASE <= uid < DEFAULT_UID_BASE + UID_POOL_SIZE
            and fields["State"].split()[0] != "Z"
        ):
            found.append(int(entry))
    return found


def standings_by_name(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in results["standings"]}


@pytest.fixture(scope="session", autouse=True)
def _page_cache_kept() -> Iterator[Callable[..., object] | None]:
    """In-process runs keep the page cache: the runner's forget between an
    entrant's games of one deal (as root over the seal's binds: a drop of the
    whole machine's clean page cache, so every other test process reads its
    interpreter and libraries from disk again) is skipped, in the tests and
    in their module fixtures alike. The runner still decides when to forget
    and calls it; what a forget does to the cache is tested where it matters,
    in tests marked ``@pytest.mark.page_cache_forgets`` (see
    :func:`_page_cache_forgets`). Runs in a child process (``python -m arena``)
    forget as always. Yields the real forget."""
    import arena.tournament.runner as runner_module

    real = getattr(runner_module, "forget_pages", None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner_module, "forget_pages", lambda roots: None, raising=False)
        yield real


@pytest.fixture(autouse=True)
def _page_cache_forgets(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    _page_cache_kept: Callable[..., object] | None,
) -> None:
    """A test marked ``@pytest.mark.page_cache_forgets`` gets the real forget
    (tests/tournament/test_deal_carrier.py: the carrier gains nothing with
    it, and wins without it)."""
    if request.node.get_closest_marker("page_cache_forgets") is not None and _page_cache_kept:
        import arena.tournament.runner as runner_module

        monkeypatch.setattr(runner_module, "forget_pages", _page_cache_kept)


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder that the unprivileged bot users can enter and write
    (pytest's own ``tmp_path`` is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="arena-test-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
