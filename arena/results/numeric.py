"""NumPy for the arena's statistics, loaded with its BLAS and OpenMP thread
pools limited to one thread: the one place the arena imports NumPy (every
module of the package that uses it, or SciPy, imports it from here first:
``from arena.results.numeric import np``).

Why: the arena's NumPy work is small vectors (a bootstrap of 2000 replicates
over a few hundred deals, a t quantile, an audit's per-entrant counts), where
more threads gain nothing, while OpenBLAS starts one thread per core when it
loads and those threads spin: on a two-core machine ``import numpy``
cost 173 ms of CPU per process with them and 79 ms with one
(``OPENBLAS_NUM_THREADS=1``). The test suite and a competition server start
many arena processes (pool and Dask workers inherit the setting).

A user's own setting of ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS`` wins (:meth:`os.environ.setdefault`); a NumPy loaded
before this module keeps the threads it started with. Bots never see these
variables: each is started with an environment of its own
(:mod:`arena.sandbox.launcher`).
"""

import os

#: The thread-pool variables of the BLAS and OpenMP libraries NumPy may load, and their value.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _name in THREAD_VARIABLES:
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the variables: OpenBLAS reads them when it loads)

__all__ = ["THREAD_VARIABLES", "np"]
