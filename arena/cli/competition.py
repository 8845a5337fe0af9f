"""Large competitions on the command line: the ladder (``--format ladder``
with ``--games``, ``--sigma-target``, ``--ladder-batch``) and the executor
(``--executor``, ``--scheduler``); the flags themselves are declared in
:mod:`arena.cli.options`. :mod:`arena.cli.commands` calls
:func:`check_competition_args`, :func:`open_executor` and :func:`play_run`.
Exit codes are those of :mod:`arena.cli.errors`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence, Sized
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_OUTPUT, EXIT_USAGE, CliError
from arena.protocol.records import GameRecordJSON
from arena.report.runfile import set_games_total
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.tournament.executors import (
    Executor,
    ExecutorUnavailable,
    RecordSink,
    dask_available,
    make_executor,
)
from arena.tournament.ladder import (
    GAMES_PER_TABLE,
    describe_plan,
    ladder_budget,
    play_ladder,
)
from arena.tournament.runner import Games, TournamentSettings


def check_competition_args(args: argparse.Namespace) -> None:
    """Check the combination of ladder and executor flags.

    Raises:
        CliError: exit 2: a ladder without ``--games``, a ladder flag
            without ``--format ladder``, ``--scheduler`` without
            ``--executor dask``, ``--seating full`` with a ladder; exit 4:
            ``--executor dask`` without Dask installed.
    """
    ladder = getattr(args, "format", "round-robin") == "ladder"
    if ladder and getattr(args, "games", None) is None:
        raise CliError("--format ladder needs --games G (the most games to play)", EXIT_USAGE)
    if ladder and args.games < GAMES_PER_TABLE:
        raise CliError(
            f"--games {args.games}: a ladder needs at least 4 games (one table: a deal "
            "in its 4 seat rotations)",
            EXIT_USAGE,
        )
    if not ladder:
        for flag in ("games", "sigma_target", "ladder_batch"):
            if getattr(args, flag, None) is not None:
                raise CliError(f"--{flag.replace('_', '-')} is for --format ladder", EXIT_USAGE)
    if ladder and getattr(args, "seating", "rotations") != "rotations":
        raise CliError("--format ladder plays the 4 seat rotations; --seating full is not for it")
    if getattr(args, "scheduler", None) is not None and getattr(args, "executor", "") != "dask":
        raise CliError("--scheduler is for --executor dask", EXIT_USAGE)
    if getattr(args, "executor", "local") == "dask" and not dask_available():
        raise CliError(
            "--executor dask needs Dask distributed: pip install 'hearts-arena[dask]'",
            EXIT_ENVIRONMENT,
        )


def games_total(settings: TournamentSettings, games: Sized) -> int:
    """Games announced before the run: the schedule's, or a ladder's budget."""
    return ladder_budget(settings) if settings.format == "ladder" else len(games)


def dry_run_ladder(entrants: Sequence[Entrant], settings: TournamentSettings) -> None:
    """Print what a ladder will play at most (``--dry-run``)."""
    for line in describe_plan(len(entrants), settings):
        print(line)


def open_executor(
    args: argparse.Namespace,
    entrants: Sequence[Entrant],
    settings: TournamentSettings,
    launcher: Launcher,
    live: Any = None,
) -> Executor:
    """The executor of ``--executor``; ``live`` is the live view's bounded
    queue (``--live``, local games only), or ``None``.

    Raises:
        CliError: exit 4: Dask missing, the cluster unreachable or unfit.
    """
    try:
        return make_executor(
            getattr(args, "executor", "local"),
            entrants,
            settings,
            launcher,
            getattr(args, "scheduler", None),
            live,
        )
    except ExecutorUnavailable as exc:
        raise CliError(str(exc), EXIT_ENVIRONMENT) from None


def play_run(
    executor: Executor,
    names: Sequence[str],
    settings: TournamentSettings,
    todo: Games,
    records: Sequence[GameRecordJSON],
    on_record: RecordSink,
) -> int | None:
    """Play the run's games (``todo``; a ladder's are chosen as it goes,
    replaying ``records`` first when resuming). Returns the games a ladder
    scheduled, ``None`` for the other formats (their schedule is known).

    Raises:
        CliError: exit 4: the executor failed (a unit lost too often);
            exit 3: a resumed ladder's journal does not match its choices.
    """
    try:
        if settings.format == "ladder":
            planner = play_ladder(names, settings, executor.play, on_record, list(records))
            return planner.games_scheduled
        executor.play(todo, on_record)
        return None
    except ExecutorUnavailable as exc:
        raise CliError(str(exc), EXIT_ENVIRONMENT) from None
    except ValueError as exc:
        if settings.format == "ladder" and "ladder" in str(exc):
            raise CliError(f"--resume: {exc}", EXIT_OUTPUT) from None
        raise


def record_games_total(out: Path, run_file: str, total: int) -> None:
    """Store a finished ladder's scheduled games as ``games_total`` in
    ``run.json`` (announced as the budget before the first game), so
    ``hearts-arena report`` gives the same ``results.json``; whole or not at
    all (a full disk).

    Raises:
        OSError: the file could not be written.
    """
    set_games_total(out / run_file, total)
