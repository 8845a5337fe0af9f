"""Open file descriptors: how many a run needs, and fitting ``--jobs`` to the
system's limit (``ulimit -n``, ``RLIMIT_NOFILE``).

Each bot process holds, in the arena, the three ends of its standard pipes,
two process descriptors (Trio's and the arena's own ``pidfd``) and the lock
of its bot user; while it starts, also the child's three pipe ends and the
two of the ``exec`` error pipe. So a game, four bots, needs about
:data:`FDS_PER_GAME` descriptors and the arena itself :data:`FDS_BASE`.
Measured (5 entrants, one-hand games, 2 worker processes, peak descriptors
per worker from ``/proc/PID/fd``): unsealed (``--no-sandbox``), 296 with
``--jobs 20`` (10 games each) and 77 with ``--jobs 4`` (2 each), about 30 a
game and 15 for the process; sealed (the default), 104 and 71. The figures
here leave a third to spare over the worst.

:func:`fit_jobs` raises the soft limit towards the hard limit as far as
``--jobs`` needs, and when even the hard limit is too low, says how many
games fit at once instead of failing after a few games with "Too many open
files".
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Final

#: Descriptors one bot process may hold in the arena at its peak (while it starts).
FDS_PER_BOT: Final = 10
#: Descriptors one game in flight may hold: four bots.
FDS_PER_GAME: Final = 4 * FDS_PER_BOT
#: Descriptors of the arena itself: the interpreter, Trio, the journal, the
#: output folder's lock, worker queues, with room to spare.
FDS_BASE: Final = 64


class DescriptorLimitError(RuntimeError):
    """Not even one game fits in the open-files limit; the message is one line."""


@dataclass(frozen=True)
class JobsFit:
    """What :func:`fit_jobs` decided.

    Attributes:
        jobs: games to run at once (at most the ``--jobs`` asked for).
        limit: the soft open-files limit now in force.
        note: one line for the user when ``jobs`` was lowered, else ``None``.
    """

    jobs: int
    limit: int
    note: str | None = None


def needed(jobs: int) -> int:
    """Open descriptors ``jobs`` games at once need in one process."""
    return FDS_BASE + jobs * FDS_PER_GAME


def _finite(limit: int) -> int | None:
    return None if limit == resource.RLIM_INFINITY or limit < 0 else limit


def fit_jobs(jobs: int) -> JobsFit:
    """Make room for ``jobs`` games at once: raise this process's soft
    ``RLIMIT_NOFILE`` as far as they need, up to the hard limit (worker
    processes inherit it); if that is not enough, fewer games.

    Raises:
        DescriptorLimitError: the hard limit is too low for even one game.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = needed(jobs)
    soft_n, hard_n = _finite(soft), _finite(hard)
    if soft_n is not None and soft_n < want:
        target = want if hard_n is None else min(want, hard_n)
        if target > soft_n:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft_n = target
            except (ValueError, OSError):
                pass
    if soft_n is None or soft_n >= want:
        return JobsFit(jobs, soft_n if soft_n is not None else want)
    fits = (soft_n - FDS_BASE) // FDS_PER_GAME
    if fits < 1:
        raise DescriptorLimitError(
            f"the open-files limit ({soft_n}) is too low for even one game, which needs "
            f"about {needed(1)}; raise it (ulimit -n {needed(1)})"
        )
    note = (
        f"note: running {fits} games at once, not {jobs}: {jobs} games need about "
        f"{want} open files and this system allows {soft_n} (ulimit -n; "
        f"raise the hard limit to run more)"
    )
    return JobsFit(fits, soft_n, note)
