"""Large competitions on the command line: the ladder (``--format ladder``
with ``--games``, ``--sigma-target``, ``--ladder-batch``) and the executor
(``--executor``, ``--scheduler``); the flags themselves are declared in
:mod:`arena.cli.options`. :mod:`arena.cli.commands` calls
:func:`check_competition_args` and :func:`dry_run_ladder`; the run itself
plays the ladder and opens the executor (:class:`arena.run.run.Run`).
Exit codes are those of :mod:`arena.cli.errors`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_USAGE, CliError
from arena.cli.options import arg
from arena.run.host import Entrant
from arena.tournament.ladder import GAMES_PER_TABLE, describe_plan
from arena.tournament.runner import TournamentSettings
from arena.tournament.work import dask_available


def check_competition_args(args: argparse.Namespace) -> None:
    """Check the combination of ladder and executor flags.

    Raises:
        CliError: exit 2: a ladder without ``--games``, a ladder flag
            without ``--format ladder``, ``--scheduler`` without
            ``--executor dask``, ``--seating full`` with a ladder; exit 4:
            ``--executor dask`` without Dask installed.
    """
    ladder = arg(args, "format", "round-robin") == "ladder"
    if ladder and arg(args, "games", None) is None:
        raise CliError("--format ladder needs --games G (the most games to play)", EXIT_USAGE)
    if ladder and args.games < GAMES_PER_TABLE:
        raise CliError(
            f"--games {args.games}: a ladder needs at least 4 games (one table: a deal "
            "in its 4 seat rotations)",
            EXIT_USAGE,
        )
    if not ladder:
        for flag in ("games", "sigma_target", "ladder_batch"):
            if arg(args, flag, None) is not None:
                raise CliError(f"--{flag.replace('_', '-')} is for --format ladder", EXIT_USAGE)
    if ladder and arg(args, "seating", "rotations") != "rotations":
        raise CliError("--format ladder plays the 4 seat rotations; --seating full is not for it")
    if arg(args, "scheduler", None) is not None and arg(args, "executor", "") != "dask":
        raise CliError("--scheduler is for --executor dask", EXIT_USAGE)
    if arg(args, "executor", "local") == "dask" and not dask_available():
        raise CliError(
            "--executor dask needs Dask distributed: pip install 'hearts-arena[dask]'",
            EXIT_ENVIRONMENT,
        )


def dry_run_ladder(entrants: Sequence[Entrant], settings: TournamentSettings) -> None:
    """Print what a ladder will play at most (``--dry-run``)."""
    for line in describe_plan(len(entrants), settings):
        print(line)
