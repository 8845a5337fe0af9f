"""The suite's own rules (tests/suite_hooks.py), checked in inner pytest sessions:
a test that logs an ERROR fails; a test stopped by its timeout inside trio.run
leaves the next test able to run Trio: run by itself (``-n 0``) its process
clears Trio's run state, under xdist (``-n 2 --dist loadfile``) its worker ends
and the rest of its file runs in a new one, each test once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: An inner session loads only the plugins the suite's rules work with (xdist,
#: pytest-timeout), not every plugin installed (benchmark, hypothesis, anyio...):
#: each of its processes starts a third faster, and a plugin of the machine's
#: (pytest-randomly, say) cannot change what the inner session does.
PLUGINS = ["-p", "xdist.plugin", "-p", "xdist.looponfail", "-p", "pytest_timeout"]
ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from suite_hooks import (  # noqa: F401
    pytest_handlecrashitem,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_runtest_teardown,
)
"""

INNER_TESTS = """
import asyncio
import logging

import pytest
import trio


def test_a_trio_run_stopped_by_its_timeout():
    trio.run(trio.sleep, 60)


def test_the_next_trio_run_starts():
    async def one():
        return 1

    assert trio.run(one) == 1


def test_an_error_log_fails():
    logging.getLogger("inner").error("swallowed")


@pytest.mark.allow_error_logs
def test_an_error_log_allowed():
    logging.getLogger("inner").error("on purpose")


def test_a_warning_is_no_failure():
    logging.getLogger("inner").warning("only a warning")


def test_dasks_nanny_cancelled_as_it_closes_is_no_failure():
    try:
        raise asyncio.CancelledError()
    except asyncio.CancelledError as exc:
        logging.getLogger("distributed.nanny").exception(exc)


def test_another_error_of_dasks_nanny_fails():
    logging.getLogger("distributed.nanny").error("Failed to restart worker")
"""


def test_inner_session_follows_the_suite_rules(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    allow_error_logs: on purpose\n")
    args = [*PLUGINS, "-p", "no:cacheprovider", "-n", "0", "-rA", "--timeout", "3"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--timeout-method", "signal", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=600,
    )
    outcome: dict[str, set[str]] = {"PASSED": set(), "FAILED": set()}
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in outcome and "::" in rest:
            outcome[word].add(rest.split("::", 1)[1].split(" ", 1)[0])
    assert outcome["FAILED"] == {
        "test_a_trio_run_stopped_by_its_timeout",
        "test_an_error_log_fails",
        "test_another_error_of_dasks_nanny_fails",
    }, proc.stdout + proc.stderr
    assert outcome["PASSED"] == {
        "test_the_next_trio_run_starts",
        "test_an_error_log_allowed",
        "test_a_warning_is_no_failure",
        "test_dasks_nanny_cancelled_as_it_closes_is_no_failure",
    }, proc.stdout
    assert "ERROR logged during the test:\ninner: swallowed" in proc.stdout


INNER_OTHER_FILE = """
import os


def test_another_file(tmp_path):
    (tmp_path / "pid").write_text(str(os.getpid()))
"""


def test_under_xdist_a_timed_out_test_ends_its_worker(tmp_path: Path) -> None:
    """``-n 2 --dist loadfile`` as the suite runs: the timed-out test fails,
    its worker ends before the next test (which is reported "rerun" once and
    then passes in a new worker), every other test runs once, and the session
    ends."""
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    (tmp_path / "test_other.py").write_text(INNER_OTHER_FILE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    allow_error_logs: on purpose\n")
    args = [*PLUGINS, "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile"]
    args += ["-rA", "-v", "--timeout", "3", "--timeout-method", "signal"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert all(n in summary for n in ("3 failed", "5 passed", "1 rerun")), out
    assert proc.returncode == 1, out
    assert "RERUN test_inner.py::test_the_next_trio_run_starts" in proc.stdout, out
    assert "replacing crashed worker" in out
    assert (
        "ending this worker: test_inner.py::test_a_trio_run_stopped_by_its_timeout timed out" in out
    )
    assert "PASSED test_inner.py::test_the_next_trio_run_starts" in proc.stdout
