"""The command line of large competitions: the ladder's flags (``--format
ladder`` with ``--games``, ``--sigma-target``, ``--ladder-batch``) and the
executor's (``--executor``, ``--scheduler``). :mod:`arena.cli.main` adds them to
``run``; :mod:`arena.cli.commands` calls :func:`check_competition_args`,
:func:`open_executor` and :func:`play_run`. Exit codes are those of
:mod:`arena.cli.main`.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence, Sized
from pathlib import Path
from typing import Any

from arena.cli.main import EXIT_ENVIRONMENT, EXIT_USAGE, CliError, _positive_int
from arena.protocol.records import GameRecordJSON
from arena.seats.entrants import Entrant
from arena.seats.launcher import Launcher
from arena.tournament.executors import (
    EXECUTORS,
    Executor,
    ExecutorUnavailable,
    RecordSink,
    dask_available,
    make_executor,
)
from arena.tournament.ladder import (
    DEFAULT_BATCH_TABLES,
    GAMES_PER_TABLE,
    describe_plan,
    ladder_budget,
    play_ladder,
)
from arena.tournament.runner import Games, TournamentSettings


def _sigma(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def add_competition_flags(run: argparse.ArgumentParser) -> None:
    """The ladder and executor flags of ``run``."""
    big = run.add_argument_group("large competitions (--format ladder, --executor dask)")
    big.add_argument(
        "--games",
        type=_positive_int,
        default=None,
        metavar="G",
        help="--format ladder: play at most G games (whole tables of 4 games: one deal "
        "in its 4 seat rotations)",
    )
    big.add_argument(
        "--sigma-target",
        type=_sigma,
        default=None,
        metavar="SIGMA",
        help="--format ladder: stop early once every entrant's TrueSkill sigma is below "
        "SIGMA (checked between batches; the start is 8.33)",
    )
    big.add_argument(
        "--ladder-batch",
        type=_positive_int,
        default=None,
        metavar="TABLES",
        help=f"--format ladder: tables chosen at a time from one snapshot of the ratings "
        f"(default {DEFAULT_BATCH_TABLES}; part of the tournament, so independent of --jobs)",
    )
    big.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where games are played: local (default) or dask (a Dask distributed "
        "cluster; needs pip install 'hearts-arena[dask]')",
    )
    big.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="--executor dask: the scheduler's address, e.g. tcp://10.0.0.5:8786 "
        "(default: start a local cluster of --jobs workers)",
    )


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


def ladder_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ladder fields of :class:`TournamentSettings` from the flags."""
    if getattr(args, "format", "round-robin") != "ladder":
        return {}
    batch = getattr(args, "ladder_batch", None)
    return {
        "games": args.games,
        "sigma_target": getattr(args, "sigma_target", None),
        "ladder_batch": batch if batch is not None else DEFAULT_BATCH_TABLES,
    }


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
            from arena.cli.main import EXIT_OUTPUT

            raise CliError(f"--resume: {exc}", EXIT_OUTPUT) from None
        raise


def record_games_total(out: Path, run_file: str, total: int) -> None:
    """Store a finished ladder's scheduled games as ``games_total`` in
    ``run.json`` (announced as the budget before the first game), so
    ``hearts-arena report`` gives the same ``results.json``."""
    path = out / run_file
    info = json.loads(path.read_text(encoding="utf-8"))
    info["games_total"] = total
    from arena.cli.commands import _write_whole  # whole or not at all (a full disk)

    _write_whole(path, json.dumps(info, indent=2) + "\n")
