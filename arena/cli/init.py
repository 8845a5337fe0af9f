"""The arena as PID 1 (a container's entrypoint): a small init that reaps orphans.

The kernel re-parents every orphaned process of a pid namespace to its PID
1, and only PID 1 can reap them. An arena started as PID 1 (``docker run
IMAGE hearts-arena run ...`` with no init) would otherwise leave each
orphan of a bot (a child whose parent exited, unsealed: sealed bots have a
pid namespace of their own) as a zombie, holding its bot uid out of the
pool for the rest of the run.

:func:`run_as_init` forks once, as tini does: the child goes on as the
arena (its own processes stay its children, and it waits for them itself:
no exit of theirs is taken from it), and PID 1 stays behind as a small
init that

* reaps every process re-parented to it (``waitpid(-1)``),
* passes on the signals sent to it (``docker stop``'s SIGTERM, ``kill``)
  to the arena, but not those the kernel sends a terminal's whole process
  group (Ctrl-C's SIGINT, a hang-up's SIGHUP): the arena, in that group,
  gets them itself,
* and exits with the arena's exit code (128 + N when a signal N ended it).
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Final, NoReturn

#: Signals PID 1 passes on to the arena.
FORWARDED: Final = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
#: ``si_code`` of a signal the kernel sent (a terminal's Ctrl-C or hang-up
#: goes to its whole foreground process group, the arena included).
SI_KERNEL: Final = 0x80


def is_init() -> bool:
    """Whether this process is PID 1 of its pid namespace."""
    return os.getpid() == 1


def run_as_init() -> None:
    """Fork: return in the child (the arena goes on), and never return in
    PID 1, which reaps orphans and passes signals on until the arena exits,
    then exits with its code (see the module docstring)."""
    watched = {signal.SIGCHLD, *FORWARDED}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return
    _init_loop(child, watched)


def _init_loop(child: int, watched: set[signal.Signals]) -> NoReturn:
    code: int | None = None
    while True:
        info = signal.sigwaitinfo(watched)
        if info.si_signo != signal.SIGCHLD:
            if info.si_code != SI_KERNEL:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, info.si_signo)
            continue
        code = _reap(child, code)
        if code is not None:
            _reap(child, code)  # the last orphans, then go
            os._exit(code)


def _reap(child: int, code: int | None) -> int | None:
    """Reap every exited process; returns the arena's exit code once it has
    exited (``code`` until then)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == child:
            exit_code = os.waitstatus_to_exitcode(status)
            code = exit_code if exit_code >= 0 else 128 - exit_code


__all__ = ["FORWARDED", "is_init", "run_as_init"]
