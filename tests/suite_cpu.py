"""CPU seconds per test file, the processes each test started included (off
by default; tests/conftest.py loads it when ``HEARTS_ARENA_TEST_CPU`` is set).

Why a control group: bots are forked and reaped by the arena's spawn server
and the kits' compilers by their build tools, so ``RUSAGE_CHILDREN`` of a
pytest worker misses most of what its tests cost. Each pytest process (the
xdist controller and every worker) moves itself, before it imports the
arena, into a v1 ``cpuacct`` group of its own,
``/sys/fs/cgroup/cpuacct/arena-suite-cpu-<controller pid>/<pid>``; whatever it
forks stays below it (the arena's own bot groups are made under the group of
the process that makes them), so the group's ``cpuacct.usage`` counts the
worker, the ``python -m arena`` children, the spawn servers, the sealed
bots, the compilers, the browsers, the PostgreSQL and Dask processes it
started. A test's CPU is the growth of its worker's counter from the start of
its setup to the end of its teardown.

Usage (as root, on a machine with the v1 ``cpuacct`` hierarchy mounted)::

    HEARTS_ARENA_TEST_CPU=/tmp/cpu.jsonl python -m pytest -q

prints the top 30 files by CPU seconds at the end and leaves one JSON line per
test in the file (``{"file", "test", "cpu_s", "wall_s"}``). The groups are
removed at the end (the controller moves back to the root group first; a
folder a process still holds 5 s after the last test is left).

Limits: a process a test leaves running (a daemon it did not stop) is
counted against the tests that run after it in the same worker; work done for a
test by a process that was not started below the worker (a machine-wide
daemon, the kernel's own threads writing back the page cache) is not counted;
the kits' builds are cached across runs (tests/kits), so the first test that
needs a kit pays its build (clear the cache to measure a fresh machine). The
counter is exact CPU time, so other sessions' load does not add to it, but it
makes the CPU's caches colder and so every figure some percent larger on a
busy machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

#: Set to a file path to record CPU seconds per test there and print the top files.
CPU_VARIABLE = "HEARTS_ARENA_TEST_CPU"
_ROOT = Path("/sys/fs/cgroup/cpuacct")
_TOP_VARIABLE = "HEARTS_ARENA_TEST_CPU_GROUP"
#: Files printed at the end.
TOP = 30


def _group() -> Path | None:
    """This process's own accounting group, made and joined on first call."""
    global _MINE
    if _MINE is not None:
        return _MINE
    top = os.environ.get(_TOP_VARIABLE)
    if top is None:
        top = str(_ROOT / f"arena-suite-cpu-{os.getpid()}")
        os.environ[_TOP_VARIABLE] = top
    mine = Path(top) / str(os.getpid())
    mine.mkdir(parents=True, exist_ok=True)
    (mine / "cgroup.procs").write_text(f"{os.getpid()}\n")
    _MINE = mine
    return mine


_MINE: Path | None = None


def _usage_ns() -> int:
    """CPU nanoseconds used so far by this process's group (all its processes)."""
    assert _MINE is not None
    return int((_MINE / "cpuacct.usage").read_text())


def start() -> None:
    """Join an accounting group of this process's own (raises ``OSError``
    where the v1 ``cpuacct`` hierarchy is not writable)."""
    _group()


class Recorder:
    """The pytest plugin: one JSON line per test, and the top files at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process_start = time.perf_counter()

    def _write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        before, wall = _usage_ns(), time.perf_counter()
        yield
        self._write(
            {
                "file": item.nodeid.partition("::")[0],
                "test": item.nodeid,
                "cpu_s": (_usage_ns() - before) / 1e9,
                "wall_s": time.perf_counter() - wall,
            }
        )

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if getattr(config, "workerinput", None) is not None:
            return
        by_file: dict[str, float] = defaultdict(float)
        wall: dict[str, float] = defaultdict(float)
        total = 0.0
        for line in self.path.read_text().splitlines():
            record = json.loads(line)
            by_file[record["file"]] += record["cpu_s"]
            wall[record["file"]] += record["wall_s"]
            total += record["cpu_s"]
        whole = int((Path(os.environ[_TOP_VARIABLE]) / "cpuacct.usage").read_text()) / 1e9
        write = terminalreporter.write_line
        write(f"CPU seconds per test file (top {TOP}), processes started by the tests included:")
        for name, cpu in sorted(by_file.items(), key=lambda kv: -kv[1])[:TOP]:
            write(f"{cpu:8.1f} CPU-s {wall[name]:7.1f} s  {name}")
        write(
            f"tests {total:.1f} CPU-s; every pytest process's group {whole:.1f} CPU-s "
            f"(start, collection and the end included); wall {time.perf_counter() - self.process_start:.1f} s"
        )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The controller removes the groups (those of workers that ended):
        it moves back to the root group, then removes the folders deepest
        first. A folder a process still holds is left."""
        if getattr(config, "workerinput", None) is not None:
            return
        (_ROOT / "cgroup.procs").write_text(f"{os.getpid()}\n")
        top = Path(os.environ[_TOP_VARIABLE])
        for _ in range(50):  # a run's watchdog may outlive its last test for a moment
            folders = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            for folder in [*folders, top]:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            if not top.exists():
                return
            time.sleep(0.1)
