"""Hooks that hold the suite to its own rules, imported by tests/conftest.py (and
by tests/test_suite_hooks.py's inner sessions, which check them).

- An ERROR log record during a test fails it (python-chess's rule), unless the test
  is marked ``@pytest.mark.allow_error_logs``.
- A test stopped inside ``trio.run`` (by pytest-timeout's SIGALRM) leaves no Trio
  run state behind for the next test of its process.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Generator

import pytest
import trio
from trio._core import _run


class _ErrorRecords(logging.Handler):
    """Collects the log records at ERROR and above emitted while a test runs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _clear_trio_run_state() -> bool:
    """Clear Trio's run state when a test left it set (True if it did).

    pytest-timeout's SIGALRM raises in whatever frame runs; raised while trio.run
    waits for I/O it leaves ``run()`` without closing its run, and every later
    ``trio.run`` in this process would refuse to start. A private attribute of
    Trio's, touched only here and only after such a test."""
    if not trio.lowlevel.in_trio_run():
        return False
    gc.collect()  # the abandoned run's generator, once closed, clears it itself
    if trio.lowlevel.in_trio_run():
        _run.GLOBAL_RUN_CONTEXT.__dict__.clear()
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    """After each test (its fixtures torn down): no Trio run left behind."""
    try:
        return (yield)
    finally:
        _clear_trio_run_state()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A test that passes while something logged an ERROR fails (python-chess's
    rule): an error swallowed into a log is a defect a test should see. A test
    that provokes one on purpose says so with ``@pytest.mark.allow_error_logs``."""
    handler = _ErrorRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        result = yield
    finally:
        root.removeHandler(handler)
    if handler.records and item.get_closest_marker("allow_error_logs") is None:
        lines = [f"{r.name}: {r.getMessage()}" for r in handler.records[:5]]
        pytest.fail("ERROR logged during the test:\n" + "\n".join(lines), pytrace=False)
    return result
