"""NumPy is loaded with one OpenBLAS/OpenMP thread unless the user chose
otherwise (:mod:`arena.results.numeric`). Each case is a fresh interpreter:
the variables are read when OpenBLAS loads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arena.results.numeric import THREAD_VARIABLES

_PROBE = (
    "import os, re; import arena.results.numeric; "
    "threads = re.search(r'Threads:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
    "print(threads, *(os.environ[v] for v in arena.results.numeric.THREAD_VARIABLES))"
)


def _probe(**given: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES} | given
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_numpy_starts_no_thread_of_its_own_when_nothing_is_set() -> None:
    # One thread in the process: NumPy's BLAS started none beside the main one.
    assert _probe() == ["1", "1", "1", "1"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_a_users_own_setting_wins() -> None:
    threads, openblas, omp, mkl = _probe(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="3")
    assert (openblas, omp, mkl) == ("2", "3", "1")
    # OpenBLAS started the threads it was told to (or fewer, on a one-core machine).
    assert 1 <= int(threads) <= 3
