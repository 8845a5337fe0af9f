"""Hooks that hold the suite to its own rules, imported by tests/conftest.py (and
by tests/test_suite_hooks.py's inner sessions, which check them).

- An ERROR log record during a test fails it (python-chess's rule), unless the test
  is marked ``@pytest.mark.allow_error_logs``.
- A test stopped by its timeout (pytest-timeout's SIGALRM, ``timeout_method =
  "signal"``) ends its xdist worker once its failure is reported and its fixtures
  torn down: the worker exits before its next test starts, and xdist starts a new
  worker for the rest (that next test, never started, is reported "rerun" and
  runs there). Whatever the stopped test left (Trio's run state, a thread stuck
  in a wait, a half-closed bot) dies with its process. Without xdist (``-n 0``)
  there is no worker to end: Trio's run state is cleared instead.

Why not pytest-timeout's "thread" method (``os._exit`` in the test): the test is
then not reported, and xdist 3.8's loadfile scheduler hands the killed test to
the next worker again (it was never completed), which times out too, until the
restarts run out and the session hangs. Here the test is reported and completed
first, so nothing runs twice.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import logging
import os
import sys
from collections.abc import Generator
from typing import Any

import pytest
import trio
from trio._core import _run


class _ErrorRecords(logging.Handler):
    """Collects the log records at ERROR and above emitted while a test runs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not _dask_close_race(record):
            self.records.append(record)


def _dask_close_race(record: logging.LogRecord) -> bool:
    """Dask's nanny closing while its worker process exits: its
    ``_on_worker_exit`` awaits the close of its connection pool, which the
    nanny's own close cancels, and Dask's ``log_errors`` logs that
    ``CancelledError`` at ERROR (distributed 2026.8; seen once in CI in
    tests/server/test_server_dask.py, after the test's tables had ended).
    A shutdown race of Dask's, not a defect of the arena's: only that
    record is let through; any other ERROR of the nanny still fails a test."""
    error = record.exc_info[1] if record.exc_info else None
    return record.name == "distributed.nanny" and isinstance(error, asyncio.CancelledError)


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


#: The user property a worker's report carries when its test timed out: the
#: worker ends before its next test (see :func:`pytest_handlecrashitem`).
ENDS_WORKER = "ends_worker_after_timeout"
#: Exit status of a worker ended after a timeout (any nonzero status is a crash to xdist).
ENDED_STATUS = 3

_timed_out: list[str] = []  # in a worker: the test that timed out, once one has
_ended_workers: set[str] = set()  # in the controller: workers that announced their end


def _is_timeout(call: pytest.CallInfo[None]) -> bool:
    """Whether ``call`` was stopped by pytest-timeout's SIGALRM (it raises
    ``pytest.fail("Timeout (>N s) from pytest-timeout.")``)."""
    exc = call.excinfo
    return (
        exc is not None
        and exc.errisinstance(pytest.fail.Exception)
        and str(exc.value).startswith("Timeout (>")
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """In an xdist worker, a test (its setup, call or teardown) stopped by its
    timeout marks its report: the worker ends before its next test."""
    report = yield
    if _is_timeout(call) and hasattr(item.config, "workerinput"):
        if not _timed_out:
            _timed_out.append(item.nodeid)
        report.user_properties.append((ENDS_WORKER, True))
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The worker's next test after a timeout: tear down what fixtures are
    left (session and module ones), run the exit handlers, and end the process
    (xdist replaces it; this test, never started, runs in the new worker)."""
    if not _timed_out:
        return
    try:
        item.session._setupstate.teardown_exact(None)
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.write(
            f"\nending this worker: {_timed_out[0]} timed out; {item.nodeid} and the "
            "tests after it run in a new worker\n"
        )
        sys.stderr.flush()
        os._exit(ENDED_STATUS)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the controller: note the workers whose test timed out (they end)."""
    node: Any = getattr(report, "node", None)
    if node is not None and (ENDS_WORKER, True) in report.user_properties:
        _ended_workers.add(node.gateway.id)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: object) -> None:
    """In the controller, when a worker ended after a timeout: the test xdist
    names as crashed never started (the timed-out one was reported and
    completed before), and xdist's scheduler already gave it back to run in
    the new worker: reported "rerun", not failed."""
    node: Any = getattr(report, "node", None)
    if node is not None and node.gateway.id in _ended_workers:
        report.outcome = "rerun"  # type: ignore[assignment]
        report.longrepr = (
            f"not started: worker {node.gateway.id} ended after a timeout; runs in a new worker"
        )
