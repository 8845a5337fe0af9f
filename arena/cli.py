"""The ``hearts-arena`` command line.

Exit codes (also in the README):

* 0: done.
* 1: an unexpected error inside the arena (a bug: please report it).
* 2: usage: a bad flag or value, a missing or unusable bot, fewer than four
  entrants, duplicate names.
* 3: the output folder: it already holds a tournament (use ``--overwrite``
  or ``--resume``), or ``--resume`` found different settings.
* 4: the environment: a requested facility is not available here.
* 130: interrupted (Ctrl-C); finished games are kept and partial standings written.
"""

from __future__ import annotations

import argparse
import math
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_OUTPUT = 3
EXIT_ENVIRONMENT = 4
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A one-line error for the user, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(f"{self.prog}: {message}", EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and tests)."""
    import os

    parser = _Parser(prog="hearts-arena", description="A tournament arena for Hearts bots.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run a tournament and write standings")
    run.add_argument(
        "bots",
        nargs="*",
        metavar="BOT",
        help="a program file, a .py file, or NAME=COMMAND; none: the four sample bots",
    )
    run.add_argument("--rounds", type=_positive_int, default=2, help="rounds (default 2)")
    run.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of every random choice (default: drawn and printed)",
    )
    length = run.add_mutually_exclusive_group()
    length.add_argument(
        "--target-score",
        type=_positive_int,
        default=None,
        help="play games to this total (default 100, R13)",
    )
    length.add_argument(
        "--hands", type=_positive_int, default=None, help="play exactly this many hands per game"
    )
    run.add_argument(
        "--time-limit", type=_positive_float, default=1.0, help="seconds per decision (default 1.0)"
    )
    run.add_argument(
        "--startup-time",
        type=_positive_float,
        default=10.0,
        help="seconds for the handshake (default 10)",
    )
    run.add_argument(
        "--strikes",
        type=_nonnegative_int,
        default=3,
        help="consecutive timeouts before a seat is struck out (default 3; 0: never)",
    )
    run.add_argument(
        "--jobs",
        type=_positive_int,
        default=os.cpu_count() or 1,
        help="games in flight at once (default: the number of cores)",
    )
    run.add_argument(
        "--fresh-processes", action="store_true", help="start new bot processes for every game"
    )
    run.add_argument(
        "--transcripts", action="store_true", help="record every message sent and received per seat"
    )
    run.add_argument(
        "--out", type=Path, default=Path("reports"), help="output folder (default reports/)"
    )
    run.add_argument(
        "--overwrite", action="store_true", help="replace a tournament already in --out"
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the tournament in --out from its games.jsonl",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the tables, game count and a time estimate; play nothing",
    )
    run.add_argument("--quiet", action="store_true", help="no progress display")

    rep = sub.add_parser("report", help="rebuild the HTML report of a tournament folder")
    rep.add_argument("folder", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hearts-arena`` console script; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            from arena.commands import run_command

            return run_command(args)
        if args.command == "report":
            from arena.commands import report_command

            return report_command(args)
        raise CliError(f"unknown command {args.command!r}")
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def draw_seed() -> int:
    """A fresh seed for a run without ``--seed``."""
    return secrets.randbelow(2**31)
