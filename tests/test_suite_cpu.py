"""tests/suite_cpu.py: a process's accounting group counts the CPU of a
grandchild it never reaps (as the spawn server's bots are), which
``RUSAGE_CHILDREN`` misses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import suite_cpu

#: A process that joins a group of its own, starts a grandchild that burns
#: 0.3 CPU-s and is reaped by init (its parent exits first), waits for the
#: grandchild's end through a pipe, then prints what the group and its own
#: RUSAGE_CHILDREN counted (seconds).
PROBE = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import suite_cpu
suite_cpu.start()
before = suite_cpu._usage_ns()
r, w = os.pipe()
child = os.fork()
if child == 0:
    if os.fork() == 0:
        os.close(r)
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
os.read(r, 1)  # end of file: the grandchild has exited
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"group_s": (suite_cpu._usage_ns() - before) / 1e9,
                  "children_s": children.ru_utime + children.ru_stime,
                  "group": str(suite_cpu._MINE)}))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not (suite_cpu._ROOT / "cpuacct.usage").is_file(),
    reason="needs root and the v1 cpuacct hierarchy",
)
def test_the_group_counts_a_grandchild_that_rusage_children_misses(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HEARTS_ARENA_TEST_CPU_GROUP"}
    env["HEARTS_ARENA_TEST_CPU_GROUP"] = str(
        suite_cpu._ROOT / f"arena-suite-cpu-test-{os.getpid()}"
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(Path(__file__).parent)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    top = Path(env["HEARTS_ARENA_TEST_CPU_GROUP"])
    try:
        assert done.returncode == 0, done.stderr
        counted = json.loads(done.stdout)
        assert counted["group_s"] >= 0.3
        assert counted["children_s"] < 0.1
        assert Path(counted["group"]).parent == top
    finally:
        for folder in [p for p in top.glob("*") if p.is_dir()]:
            folder.rmdir()
        top.rmdir()
