"""The suite's temporary files on a tmpfs (tests/suite_tmp.py): a fresh
folder of /dev/shm that this session, its xdist workers and what they start
share, removed when the process that made it exits; ``HEARTS_ARENA_TEST_TMPFS=0``
turns it off."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import SUITE_TMP
from suite_tmp import SUITE_TMP_VARIABLE, TMPFS_VARIABLE, _file_system_type

TESTS = Path(__file__).resolve().parent

#: A process as the suite's controller: takes the tmpfs folder, then starts
#: one as an xdist worker is started (the environment inherited), and prints
#: both processes' temporary folders.
_CONTROLLER = f"""
import subprocess, sys, tempfile
sys.path.insert(0, {str(TESTS)!r})
from suite_tmp import temporary_files_on_a_tmpfs
made = temporary_files_on_a_tmpfs()
print(made, tempfile.gettempdir(), flush=True)
worker = "import sys, tempfile; sys.path.insert(0, {str(TESTS)!r}); " \\
    "from suite_tmp import temporary_files_on_a_tmpfs as t; print(t(), tempfile.gettempdir())"
subprocess.run([sys.executable, "-c", worker], check=True)
"""


def _controller(**env: str) -> list[list[str]]:
    skip = (SUITE_TMP_VARIABLE, TMPFS_VARIABLE, "TMPDIR")
    base = {k: v for k, v in os.environ.items() if k not in skip}
    done = subprocess.run(
        [sys.executable, "-c", _CONTROLLER],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=60,
        check=True,
    )
    return [line.split() for line in done.stdout.splitlines()]


def _on_a_tmpfs_here() -> None:
    if _file_system_type("/dev/shm") != "tmpfs" or _file_system_type("/tmp") == "tmpfs":
        pytest.skip("/dev/shm is no tmpfs here, or /tmp is one already (nothing to move)")


def test_this_session_keeps_its_temporary_files_on_the_tmpfs(tmp_path: Path) -> None:
    """This session's temporary folder, ``TMPDIR`` and ``tmp_path`` are in
    the suite's folder on the tmpfs, mode 1777 as /tmp's."""
    _on_a_tmpfs_here()
    if os.environ.get(TMPFS_VARIABLE) == "0":
        pytest.skip(f"{TMPFS_VARIABLE}=0: the suite's temporary files stay where they were")
    assert SUITE_TMP is not None
    assert tempfile.gettempdir() == SUITE_TMP == os.environ["TMPDIR"]
    assert tmp_path.is_relative_to(SUITE_TMP)
    assert _file_system_type(SUITE_TMP) == "tmpfs"
    assert os.stat(SUITE_TMP).st_mode & 0o7777 == 0o1777


def test_the_workers_share_the_controllers_folder_removed_at_its_exit() -> None:
    """A worker started by the controller takes the controller's folder (it
    makes none); the folder is gone once the controller exits. Turned off,
    the temporary folder stays /tmp."""
    _on_a_tmpfs_here()
    (made, controller_tmp), (worker_made, worker_tmp) = _controller()
    assert made.startswith("/dev/shm/arena-tests-")
    assert controller_tmp == made == worker_made == worker_tmp
    assert not os.path.exists(made)
    assert _controller(**{TMPFS_VARIABLE: "0"}) == [["None", "/tmp"], ["None", "/tmp"]]


def test_the_file_system_type_is_that_of_the_deepest_mount() -> None:
    assert _file_system_type("/proc/self") == "proc"
    assert _file_system_type("/") not in ("", "proc")
