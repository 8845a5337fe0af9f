"""The suite's own rules (tests/suite_hooks.py), checked in inner pytest sessions:
a test that logs an ERROR fails, and a test stopped by its timeout inside trio.run
leaves the next test of its process able to run Trio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from suite_hooks import pytest_runtest_call, pytest_runtest_teardown  # noqa: F401
"""

INNER_TESTS = """
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
"""


def test_inner_session_follows_the_suite_rules(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    allow_error_logs: on purpose\n")
    args = ["-p", "no:cacheprovider", "-n", "0", "-rA", "--timeout", "3"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--timeout-method", "signal", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
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
    }, proc.stdout + proc.stderr
    assert outcome["PASSED"] == {
        "test_the_next_trio_run_starts",
        "test_an_error_log_allowed",
        "test_a_warning_is_no_failure",
    }, proc.stdout
    assert "ERROR logged during the test:\ninner: swallowed" in proc.stdout
