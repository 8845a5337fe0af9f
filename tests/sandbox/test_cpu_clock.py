"""What the CPU-time clock (issue 22 item 8, ``--wall-cap``) reads of a real
bot group: whether any of its threads is runnable (state ``R``) when a
decision's wall time is up. The accounting itself is tested under the mock
clock (tests/game/test_pace.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from arena.sandbox import cgroups

PLAN = cgroups.probe()
needs_groups = pytest.mark.skipif(not PLAN.usable, reason="no writable control groups here")


def test_thread_states_are_read_from_proc() -> None:
    assert cgroups.thread_state(os.getpid()) == "R"  # this thread, reading its own state
    child = subprocess.Popen(["sleep", "30"])
    try:
        for _ in range(200):  # until it has started and gone to sleep
            if cgroups.thread_state(child.pid) == "S":
                break
            time.sleep(0.01)
        assert cgroups.thread_state(child.pid) == "S"
    finally:
        child.kill()
        child.wait()
    assert cgroups.thread_state(child.pid) is None  # gone


def _join(group: cgroups.BotGroup, argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, preexec_fn=group.join_self)


@needs_groups
def test_a_group_is_runnable_while_a_thread_spins_and_not_while_all_sleep() -> None:
    group = cgroups.RunGroups(PLAN, "test" + os.urandom(4).hex()).create()
    try:
        sleeper = _join(group, ["sleep", "30"])
        for _ in range(200):
            if cgroups.thread_state(sleeper.pid) == "S":
                break
            time.sleep(0.01)
        assert group.runnable() is False
        spinner = _join(group, [sys.executable, "-c", "while 1: pass"])
        for _ in range(200):  # started (python's own start-up reads files: D or R)
            if group.runnable():
                break
            time.sleep(0.01)
        assert group.runnable() is True
        spinner.kill()
        spinner.wait()
        assert group.runnable() is False
    finally:
        group.kill()
        group.remove()
    assert group.runnable() is None  # its threads can no longer be listed
