"""The steps a run's host takes on this machine around a :class:`arena.run.run.Run`,
each called explicitly by the command line (or a server's runner), never by
the run itself: check the launcher, put the referee first on the CPU, fit
``jobs`` and the memory bound to the machine, record the bots' control groups
and watch them, and end what a killed or interrupted run left (control
groups, processes carrying its id, temporary folders, package copies).

Also the names of the seat layer a host needs to build a run (entrants,
bot folders, limits, launch options), re-exported so that the command line
imports neither :mod:`arena.seats` nor :mod:`arena.sandbox`. The one
module of :mod:`arena.run` that touches the confinement code (cgroups,
isolation, descriptors, budget, seal).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.run.errors import ErrorKind, RunError
from arena.sandbox import budget, cgroups, seal
from arena.sandbox.botfolder import BOT_TOML, BotFolderError, load_bot_folder
from arena.sandbox.entrants import (
    SAMPLE_BOTS,
    Entrant,
    EntrantError,
    check_unique,
    command_entrant,
    describe,
    entrant_from_record,
    parse_entrant,
    parse_entrants,
    path_entrant,
    remove_tmpdirs_of_run,
    sample_entrant,
    sample_entrants,
    with_folders,
)
from arena.sandbox.isolation import IsolationError, Limits, kill_all
from arena.sandbox.launcher import RUN_VARIABLE, Launcher, LaunchOptions
from arena.tournament.settings import TournamentSettings


def check_launcher(launcher: Launcher, entrants: list[Entrant]) -> None:
    """Check that ``launcher`` can start ``entrants`` here (see :meth:`Launcher.check`).

    Raises:
        RunError: (usage) an entrant's program or folder is unusable;
            (environment) the sandbox or separate users are unavailable.
    """
    try:
        launcher.check(entrants)
    except IsolationError as exc:
        kind: ErrorKind = "usage" if str(exc).startswith("entrant ") else "environment"
        raise RunError(str(exc), kind) from None


def prioritize_referee() -> None:
    """Put this process (the referee, which keeps the clocks) first on the
    CPU, like the bot on move (:func:`arena.sandbox.cgroups.prioritize_self`)."""
    cgroups.prioritize_self(cgroups.probe())


def leave_referees() -> None:
    """Move this process back to the group it was in before
    :func:`prioritize_referee` (:func:`arena.sandbox.cgroups.leave_referees`)."""
    cgroups.leave_referees()


def fit_jobs(
    settings: TournamentSettings, chains: int | None
) -> tuple[TournamentSettings, str | None]:
    """Fit ``settings.jobs`` to the open-files limit (see :mod:`arena.sandbox.descriptors`):
    the soft limit is raised as far as the games that can run at once need
    (at most ``chains``, the schedule's chains of games, when known); when
    the hard limit is too low, fewer games run at once. Returns the settings
    with the ``jobs`` that fit and the line that says so, or ``None``.

    Raises:
        RunError: (environment) not even one game fits.
    """
    from arena.sandbox.descriptors import DescriptorLimitError
    from arena.sandbox.descriptors import fit_jobs as fit

    at_once = settings.jobs if chains is None else max(1, min(settings.jobs, chains))
    try:
        found = fit(at_once)
    except DescriptorLimitError as exc:
        raise RunError(str(exc), "environment") from None
    if found.note is None:
        return settings, None
    return dataclasses.replace(settings, jobs=found.jobs), found.note


@dataclass(frozen=True)
class MemoryFit:
    """The bound per bot for the games at once, and the lines that say why.

    Attributes:
        memory_mb: the bound per bot, MiB, or ``None`` (none).
        notes: lines to say (a lowered bound; a ``/tmp`` larger than it).
    """

    memory_mb: int | None
    notes: tuple[str, ...]


def fit_memory(jobs: int, memory_mb: int | None, tmp_mb: int, *, sealed: bool | None) -> MemoryFit:
    """The bound per bot for ``jobs`` games of four bots at once on this
    machine (:func:`arena.sandbox.budget.fit_memory`; ``memory_mb`` the one
    asked for, ``None``: the default), with :func:`arena.sandbox.budget.tmp_note`'s
    line unless the bots are known unsealed (``sealed`` false)."""
    fit = budget.fit_memory(jobs, memory_mb, budget.machine_memory_mb())
    notes = [fit.note]
    if sealed is not False:  # --tmp-size binds sealed bots
        notes.append(budget.tmp_note(tmp_mb, fit.memory_mb))
    return MemoryFit(fit.memory_mb, tuple(n for n in notes if n is not None))


def remove_groups_left(out: Path) -> int:
    """Kill and remove the control groups a run on ``out`` recorded, if the
    arena that recorded them is gone (killed); how many processes were killed."""
    if not out.is_dir() or cgroups.recorded_arena_alive(out):
        return 0
    return cgroups.remove_recorded(out)


@dataclass
class Guard:
    """The run's control groups, recorded in its output folder, and the
    watchdog process that removes them if the arena dies.

    Attributes:
        out: the output folder.
        run_groups: the run's groups, or ``None`` (none here).
        watchdog: the watchdog process, or ``None``.
        warning: why there is no watchdog, or ``None``.
    """

    out: Path
    run_groups: cgroups.RunGroups | None
    watchdog: Any = None
    warning: str | None = None


def guard_groups(out: Path, launch: LaunchOptions) -> Guard:
    """Record the run's control groups in ``out`` and start their watchdog.

    Raises:
        RunError: (output) the record cannot be written.
    """
    run_groups = launch.run_groups
    guard = Guard(out, run_groups)
    if run_groups is None:
        return guard
    try:
        cgroups.record_run(out, run_groups.dirs())
    except OSError as exc:
        raise RunError(
            f"cannot write to the output folder {out}: {exc.strerror or exc}", "output"
        ) from None
    try:
        guard.watchdog = cgroups.start_watchdog(run_groups.dirs())
    except OSError as exc:
        guard.warning = f"warning: no watchdog for the bots' groups: {exc}"
    return guard


def end_bots(guard: Guard, run_id: str) -> int:
    """End the bots and folders a killed or interrupted worker process left
    on this machine: the run's control groups (and their record), their
    watchdog, every process carrying the run's id, its temporary folders.
    Returns the processes killed."""
    left = 0
    if guard.run_groups is not None:
        left += cgroups.remove_run_dirs(guard.run_groups.dirs())
        with contextlib.suppress(OSError):
            (guard.out / cgroups.RECORD_FILE).unlink()
    if guard.watchdog is not None:  # the groups are gone: nothing left to watch
        guard.watchdog.kill()
        guard.watchdog.wait()
    left += kill_all(env=f"{RUN_VARIABLE}={run_id}")
    remove_tmpdirs_of_run(run_id)
    return left


def end_run_left(run_id: str) -> int:
    """Kill the processes of the interrupted run ``run_id`` and remove its
    temporary folders (a resume does so before its first game); how many
    processes were killed."""
    left = kill_all(env=f"{RUN_VARIABLE}={run_id}")
    remove_tmpdirs_of_run(run_id)
    return left


def groups_record_exists(out: Path) -> bool:
    """Whether ``out`` holds a record of a run's control groups."""
    return (out / cgroups.RECORD_FILE).exists()


def run_alive(out: Path) -> bool:
    """Whether the arena that recorded ``out``'s control groups still runs."""
    return cgroups.recorded_arena_alive(out)


def remove_package_copies() -> int:
    """Remove the copies of the package for bots of every arena that is gone
    (:func:`arena.sandbox.seal.remove_package_copies_of_dead_arenas`); how many."""
    return seal.remove_package_copies_of_dead_arenas()


__all__ = [
    "BOT_TOML",
    "SAMPLE_BOTS",
    "BotFolderError",
    "Entrant",
    "EntrantError",
    "Guard",
    "LaunchOptions",
    "Launcher",
    "Limits",
    "MemoryFit",
    "check_launcher",
    "check_unique",
    "command_entrant",
    "describe",
    "end_bots",
    "end_run_left",
    "entrant_from_record",
    "fit_jobs",
    "fit_memory",
    "groups_record_exists",
    "guard_groups",
    "leave_referees",
    "load_bot_folder",
    "parse_entrant",
    "parse_entrants",
    "path_entrant",
    "prioritize_referee",
    "remove_groups_left",
    "remove_package_copies",
    "run_alive",
    "sample_entrant",
    "sample_entrants",
    "with_folders",
]
