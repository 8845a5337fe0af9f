"""From parsed arguments to the settings objects the layers below take, and
their errors to exit codes: the tournament's settings, how bots are launched
(a checked :class:`~arena.run.host.Launcher`), one bot from the
command line, a tournament's ``run.json``.

Used by :mod:`arena.cli.commands` (``run``, ``report``, ``cleanup``),
:mod:`arena.cli.tools` (``check``, ``replay``, ``play``) and
:mod:`arena.cli.live` (``watch``); imports no other module of the command
line but its errors and options. The run's host (the launcher, Trio) and
its folder (the report's libraries) are imported by the functions that use
them, so the tools' parsers, which read :func:`game_length`, load neither.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_OUTPUT, EXIT_USAGE, CliError
from arena.cli.options import arg, field_default
from arena.core.keys import MasterKey
from arena.game.settings import RefereeSettings
from arena.run.errors import RunError
from arena.run.options import LaunchOptions, Limits
from arena.tournament.settings import RunFile, TournamentSettings

if TYPE_CHECKING:
    from arena.run.host import Entrant, Launcher


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
    for ``jobs`` games at once (:func:`arena.run.host.fit_memory`; a
    resume keeps its recorded bound), and keep its lines, if any, for
    :func:`say_memory_notes` (called here unless ``say`` is false: ``run``
    says them with the bounds, once its output folder is taken, so an error
    before stays one line). Done once per command (later calls do nothing)."""
    if arg(args, "memory_fitted", False):
        return
    args.memory_fitted = True
    if args.memory_limit is None and arg(args, "resume", False):
        args.memory_limit = _recorded_memory_limit(args.out / "run.json")
    from arena.run import host

    fit = host.fit_memory(jobs, args.memory_limit, args.tmp_size, sealed=arg(args, "sandbox"))
    args.memory_limit = fit.memory_mb
    args.memory_notes = list(fit.notes)
    if say:
        say_memory_notes(args)


def say_memory_notes(args: argparse.Namespace) -> None:
    """Print on stderr, once, the lines :func:`fit_memory_limit` kept."""
    for note in arg(args, "memory_notes", []):
        print(note, file=sys.stderr)
    args.memory_notes = []


def _recorded_memory_limit(path: Path) -> int | None:
    """The bound per bot a run being resumed recorded (fitted when it
    started: a resume keeps it, whatever its ``--jobs``), or ``None``."""
    from arena.run.folder import read_run_file as read_run

    try:
        launch = read_run(path).settings.launch
    except RunError:
        return None
    return launch.memory_mb if launch is not None else None


def launch_options(args: argparse.Namespace, run_id: str | None) -> LaunchOptions:
    """How bots are launched, from the isolation flags (``run_id``: the run's
    recorded id when resuming, else a new one is drawn). The memory bound is
    fitted first if it was not (:func:`fit_memory_limit`; a tool plays one
    game at a time)."""
    fit_memory_limit(args, arg(args, "jobs", 1))
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
    """Check that ``launcher`` can start ``entrants`` here
    (:func:`arena.run.host.check_launcher`), then put the referee first on
    the CPU (:func:`arena.run.host.prioritize_referee`).

    Raises:
        CliError: exit 2 if an entrant's program or folder is unusable, 4 if
            the sandbox or separate users are unavailable.
    """
    from arena.run import host

    try:
        host.check_launcher(launcher, entrants)
    except RunError as exc:
        code = EXIT_USAGE if exc.kind == "usage" else EXIT_ENVIRONMENT
        raise CliError(str(exc), code) from None
    # The referee keeps the clocks: first on the CPU, like the bot on move.
    host.prioritize_referee()


def checked_launcher(args: argparse.Namespace, entrants: Sequence[Entrant]) -> Launcher:
    """A checked :class:`~arena.run.host.Launcher` from the isolation
    flags, for a tool (``check``, ``replay``, ``play``); the caller closes it.

    Raises:
        CliError: see :func:`check_launcher`.
    """
    from arena.run.host import Launcher

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
    from arena.run.host import EntrantError, parse_entrant

    try:
        return parse_entrant(text)
    except EntrantError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def read_run_file(path: Path) -> RunFile:
    """A tournament's ``run.json``, typed (see :func:`arena.run.folder.read_run_file`).

    Raises:
        CliError: exit 3, the file cannot be read or is not a run file.
    """
    from arena.run.folder import read_run_file as read_run

    try:
        return read_run(path)
    except RunError as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
