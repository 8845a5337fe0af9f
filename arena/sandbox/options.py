"""How bot processes are started: :class:`LaunchOptions` (limits, seal,
users, core tokens), which :class:`arena.sandbox.launcher.Launcher` applies.

A module of its own, without the launcher's Trio and process code, so that
the command line can show these defaults in ``--help`` cheaply
(:mod:`arena.sandbox.launcher` names the class too).
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.sandbox import cgroups, isolation
from arena.sandbox.isolation import Limits

if TYPE_CHECKING:
    from arena.sandbox.cores import CoreGate


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How bot processes are started (the same for every entrant of a tournament).

    Attributes:
        limits: resource limits of each process.
        sandbox: seal each process (:mod:`arena.sandbox.seal`): ``True`` required
            (refused where it cannot work), ``False`` never (``--no-sandbox``),
            ``None`` wherever it works (the default; :meth:`Launcher.check`
            resolves it to ``True`` or ``False``).
        sandbox_ro: more paths bound read-only into every sealed process
            (``--sandbox-ro``, such as a JVM outside ``/usr``).
        tmp_mb: size of a sealed process's private ``/tmp`` and of its
            ``/dev/shm``, in MiB each.
        separate_users: run each process as its own unprivileged uid; ``None``
            means "when the arena runs as root".
        uid_base: first uid of the pool for :attr:`separate_users`.
        run_id: names the tournament run in every bot's environment.
        cores: bots thinking at once, across the worker processes (0: the
            machine's cores; see :mod:`arena.sandbox.cores`).
        ponder: bots may think on others' time (not frozen off move).
        cgroup_run: opaque name of the run's control groups (:mod:`arena.sandbox.cgroups`).
        gate: the core token shared by the run's processes (made from
            ``cores`` and ``ponder`` when not given).
        arena_python: the interpreter the entrants' ``.py`` commands start
            with, as the process that parsed them spelled it (its
            ``sys.executable``, perhaps relative or with ``..``): decided
            once, where the options are made, so that a worker process,
            whose own ``sys.executable`` may be spelled otherwise, still
            knows these commands for the arena's (see
            :meth:`Launcher.is_arena_python`).
    """

    limits: Limits = field(default_factory=Limits)
    sandbox: bool | None = None
    sandbox_ro: tuple[Path, ...] = ()
    tmp_mb: int = 64
    separate_users: bool | None = None
    uid_base: int = isolation.DEFAULT_UID_BASE
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))
    cores: int = 0
    ponder: bool = False
    cgroup_run: str = field(default_factory=lambda: secrets.token_hex(8))
    gate: CoreGate | None = field(default=None, compare=False)
    arena_python: str = field(default_factory=lambda: sys.executable, compare=False)

    def __post_init__(self) -> None:
        if self.gate is None:
            from arena.sandbox.cores import CoreGate  # Trio's: only once options are made

            object.__setattr__(self, "gate", CoreGate(self.cores, self.ponder))

    @property
    def run_groups(self) -> cgroups.RunGroups | None:
        """The run's control groups, or ``None`` where this machine offers none."""
        plan = cgroups.probe()
        return cgroups.RunGroups(plan, self.cgroup_run) if plan.usable else None

    @property
    def uses_separate_users(self) -> bool:
        """Whether bots get their own uid (needs root)."""
        if self.separate_users is None:
            return os.geteuid() == 0
        return self.separate_users

    def describe(self) -> dict[str, Any]:
        """The options as plain data for the settings record."""
        return {
            "limits": self.limits.describe(),
            "sandbox": self.sandbox,
            "sandbox_ro": [str(p) for p in self.sandbox_ro],
            "tmp_mb": self.tmp_mb,
            "separate_users": self.uses_separate_users,
        }

    def describe_bounds(self) -> str:
        """One line: where each bound of a bot comes from here, and what is not enforced."""
        gate = self.gate
        assert gate is not None
        line = cgroups.probe().describe(self.limits.memory_mb, self.limits.processes)
        pondering = (
            "bots think on others' time (--ponder)" if gate.ponder else "bots off move frozen"
        )
        return f"{line}; {gate.cores} bots think at once (--cores), {pondering}"
