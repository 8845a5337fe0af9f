"""From parsed arguments to the settings objects the layers below take, and
their errors to exit codes: the tournament's settings, how bots are launched
(a checked :class:`~arena.sandbox.launcher.Launcher`), one bot from the
command line, a tournament's ``run.json``.

Used by :mod:`arena.cli.commands` (``run``, ``report``, ``cleanup``),
:mod:`arena.cli.tools` (``check``, ``replay``, ``play``) and
:mod:`arena.cli.live` (``watch``); imports no other module of the command
line but its errors and options.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_OUTPUT, EXIT_USAGE, CliError
from arena.cli.options import field_default
from arena.core.keys import MasterKey
from arena.game.referee import RefereeSettings
from arena.report.runfile import RunFileError, load_run_file
from arena.sandbox import budget, cgroups
from arena.sandbox.entrants import Entrant, EntrantError, parse_entrant
from arena.sandbox.isolation import IsolationError, Limits
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.tournament.runner import TournamentSettings


def game_length(target_score: int | None, hands: int | None) -> tuple[int | None, int | None]:
    """``(target_score, hands)`` of a game from ``--target-score`` and
    ``--hands`` (at most one given): exactly ``hands`` hands when given, else
    to ``target_score``, by default :class:`TournamentSettings`' (100, R13)."""
    if hands is not None:
        return None, hands
    if target_score is None:
        target_score = field_default(TournamentSettings, "target_score")
    return target_score, None


def tournament_settings(args: argparse.Namespace, key: MasterKey) -> TournamentSettings:
    """The tournament's settings from the flags of ``run`` and its master key."""
    target, hands = game_length(args.target_score, args.hands)
    if args.drop_kernel_caches and os.geteuid() != 0:
        raise CliError("--drop-kernel-caches needs the arena to run as root", EXIT_ENVIRONMENT)
    return TournamentSettings(
        seed=key.seed,
        key=key,
        rounds=args.rounds,
        target_score=target,
        hands=hands,
        jobs=args.jobs,
        fresh_processes=args.fresh_processes,
        drop_kernel_caches=args.drop_kernel_caches,
        seating=args.seating,
        format=args.format,
        candidate=args.candidate,
        disqualify_after=args.disqualify_after,
        **_ladder_settings(args),
        referee=RefereeSettings(
            time_limit=args.time_limit,
            startup_time=args.startup_time,
            strikes=args.strikes,
            transcripts=args.transcripts,
            transcript_cap=args.transcript_cap,
            pace=args.pace,
            wall_cap=args.wall_cap,
        ),
    )


def _ladder_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ladder fields of :class:`TournamentSettings` from the flags."""
    if args.format != "ladder":
        return {}
    batch = args.ladder_batch
    return {
        "games": args.games,
        "sigma_target": args.sigma_target,
        "ladder_batch": batch
        if batch is not None
        else field_default(TournamentSettings, "ladder_batch"),
    }


def fit_memory_limit(args: argparse.Namespace, jobs: int, *, say: bool = True) -> None:
    """Set ``args.memory_limit`` (``None``: not given) to the bound per bot
    for ``jobs`` games at once (:func:`arena.sandbox.budget.fit_memory`; a
    resume keeps its recorded bound), and keep its one line, if any, and
    :func:`arena.sandbox.budget.tmp_note`'s, for :func:`say_memory_notes`
    (called here unless ``say`` is false: ``run`` says them with the bounds,
    once its output folder is taken, so an error before stays one line).
    Done once per command (later calls do nothing)."""
    if getattr(args, "memory_fitted", False):
        return
    args.memory_fitted = True
    if args.memory_limit is None and getattr(args, "resume", False):
        args.memory_limit = _recorded_memory_limit(args.out / "run.json")
    fit = budget.fit_memory(jobs, args.memory_limit, budget.machine_memory_mb())
    args.memory_limit = fit.memory_mb
    notes = [fit.note]
    if getattr(args, "sandbox", None) is not False:  # --tmp-size binds sealed bots
        notes.append(budget.tmp_note(args.tmp_size, fit.memory_mb))
    args.memory_notes = [n for n in notes if n is not None]
    if say:
        say_memory_notes(args)


def say_memory_notes(args: argparse.Namespace) -> None:
    """Print on stderr, once, the lines :func:`fit_memory_limit` kept."""
    for note in getattr(args, "memory_notes", []):
        print(note, file=sys.stderr)
    args.memory_notes = []


def _recorded_memory_limit(path: Path) -> int | None:
    """The bound per bot a run being resumed recorded (fitted when it
    started: a resume keeps it, whatever its ``--jobs``), or ``None``."""
    try:
        value = load_run_file(path)["settings"]["isolation"]["limits"]["memory_mb"]
    except (RunFileError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None


def launch_options(args: argparse.Namespace, run_id: str | None) -> LaunchOptions:
    """How bots are launched, from the isolation flags (``run_id``: the run's
    recorded id when resuming, else a new one is drawn). The memory bound is
    fitted first if it was not (:func:`fit_memory_limit`; a tool plays one
    game at a time)."""
    fit_memory_limit(args, getattr(args, "jobs", 1))
    limits = Limits(
        memory_mb=args.memory_limit,
        cpu_seconds=args.cpu_limit,
        processes=args.max_processes,
        open_files=args.max_open_files,
        stderr_kib=args.stderr_limit,
    )
    options = LaunchOptions(
        limits=limits,
        sandbox=args.sandbox,
        sandbox_ro=tuple(path.resolve() for path in args.sandbox_ro),
        tmp_mb=args.tmp_size,
        separate_users=False if args.same_user else None,
        cores=args.cores,
        ponder=args.ponder,
    )
    return dataclasses.replace(options, run_id=run_id) if run_id else options


def check_launcher(launcher: Launcher, entrants: list[Entrant]) -> None:
    """Check that ``launcher`` can start ``entrants`` here (see
    :meth:`Launcher.check`), then put the referee first on the CPU.

    Raises:
        CliError: exit 2 if an entrant's program or folder is unusable, 4 if
            the sandbox or separate users are unavailable.
    """
    try:
        launcher.check(entrants)
    except IsolationError as exc:
        code = EXIT_USAGE if str(exc).startswith("entrant ") else EXIT_ENVIRONMENT
        raise CliError(str(exc), code) from None
    # The referee keeps the clocks: first on the CPU, like the bot on move.
    cgroups.prioritize_self(cgroups.probe())


def checked_launcher(args: argparse.Namespace, entrants: Sequence[Entrant]) -> Launcher:
    """A checked :class:`~arena.sandbox.launcher.Launcher` from the isolation
    flags, for a tool (``check``, ``replay``, ``play``); the caller closes it.

    Raises:
        CliError: see :func:`check_launcher`.
    """
    launcher = Launcher(launch_options(args, None))
    try:
        check_launcher(launcher, list(entrants))
    except BaseException:
        launcher.close()
        raise
    return launcher


def parse_bot(text: str) -> Entrant:
    """One entrant from the command line.

    Raises:
        CliError: exit 2, a bad one.
    """
    try:
        return parse_entrant(text)
    except EntrantError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def read_run_file(path: Path) -> dict[str, Any]:
    """A tournament's ``run.json`` (see :func:`arena.report.runfile.load_run_file`).

    Raises:
        CliError: exit 3, the file cannot be read or is not a run file.
    """
    try:
        return load_run_file(path)
    except RunFileError as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
