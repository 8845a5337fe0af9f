"""The tests' private PostgreSQL server (tests/server/private_pg.py) is not
left running when the process that started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import alive
from private_pg import why_no_postgres

TESTS_SERVER = Path(__file__).resolve().parent

_STARTER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from private_pg import private_postgres
with private_postgres() as server:
    print(server.base, server.postmaster_pid(), flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(why_no_postgres() is not None, reason=str(why_no_postgres()))
def test_a_server_whose_starter_is_killed_stops_and_its_folder_goes() -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER, str(TESTS_SERVER)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    try:
        assert starter.stdout is not None
        base_text, pid_text = starter.stdout.readline().split()
        base, postmaster = Path(base_text), int(pid_text)
        assert base.is_dir() and alive(postmaster)
        starter.send_signal(signal.SIGKILL)  # no finally of its own runs
        starter.wait()
        deadline = time.monotonic() + 60
        while (alive(postmaster) or base.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(postmaster), "the server outlived the process that started it"
        assert not base.exists()
    finally:
        starter.kill()
        starter.wait()
