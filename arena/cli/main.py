"""The ``hearts-arena`` command line.

Exit codes (also in the README):

* 0: done.
* 1: an unexpected error inside the arena (a bug: please report it).
* 2: usage: a bad flag or value, a missing or unusable bot, fewer than four
  entrants, duplicate names.
* 3: the output folder: it already holds a tournament (use ``--overwrite``
  or ``--resume``), or ``--resume`` found different settings.
* 4: the environment: a requested facility is not available here.
* 5: a verdict failed: a ``check`` failed, a ``run --fail-if`` condition
  held, or ``replay`` found the bot answering otherwise than recorded.
* 130: interrupted (Ctrl-C or SIGTERM); finished games are kept and partial standings written.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_OUTPUT = 3
EXIT_ENVIRONMENT = 4
EXIT_FAILED = 5
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


def output_file(text: str) -> Path:
    """An argparse type for a file the arena will write (``--junit``):
    refused at once when it is empty, an existing folder, or under a file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a file name")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise argparse.ArgumentTypeError(f"{parent} is a file, not a folder")
    return path


def output_folder(text: str) -> Path:
    """An argparse type for ``--out``: any path but an empty one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a folder name")
    return Path(text)


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


def add_isolation_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of how bots are run (user, sandbox, limits), shared by the
    commands that start bots (``run``, ``check``, ``replay``, ``play``)."""
    iso = parser.add_argument_group("running untrusted bots")
    iso.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        default=None,
        help="do not seal bots (by default each bot runs sealed in bubblewrap where it can: "
        "no network, no other process or bot's files, private /tmp)",
    )
    iso.add_argument(
        "--sandbox",
        dest="sandbox",
        action="store_true",
        help="require the seal: refuse to start (exit 4) where bots cannot be sealed",
    )
    iso.add_argument(
        "--sandbox-ro", action="append", type=Path, default=[], metavar="PATH",
        help="bind PATH read-only into every sealed bot (a runtime outside /usr); repeatable",
    )  # fmt: skip
    iso.add_argument(
        "--tmp-size", type=_positive_int, default=64, metavar="MIB",
        help="size of a sealed bot's private /tmp and of its /dev/shm, each (default 64)",
    )  # fmt: skip
    iso.add_argument(
        "--same-user",
        action="store_true",
        help="when the arena runs as root, run bots as root too (not one unprivileged uid each)",
    )
    iso.add_argument(
        "--memory-limit", type=_nonnegative_int, default=4096, metavar="MIB",
        help="memory per bot in MiB: for the bot as a whole where a memory control group "
        "binds, else address space per process (default 4096; 0: none)",
    )  # fmt: skip
    iso.add_argument(
        "--cpu-limit", type=_nonnegative_int, default=300, metavar="SECONDS",
        help="CPU seconds per bot process and game (default 300; 0: none)",
    )  # fmt: skip
    iso.add_argument(
        "--max-processes", type=_positive_int, default=256, metavar="N",
        help="processes and threads per bot (default 256; a pids control group, else "
        "binds only unprivileged bot users)",
    )  # fmt: skip
    iso.add_argument(
        "--cores", type=_nonnegative_int, default=0, metavar="N",
        help="bots thinking at once across all games; a decision's clock starts when its bot "
        "gets a core (default 0: the machine's cores)",
    )  # fmt: skip
    iso.add_argument(
        "--ponder",
        action="store_true",
        help="let bots think on others' time (by default a bot not on move is frozen)",
    )
    iso.add_argument(
        "--max-open-files", type=_positive_int, default=256, metavar="N",
        help="open files per bot process (default 256)",
    )  # fmt: skip


def arena_version() -> str:
    """The installed package's version (``0.1.0``), or ``unknown`` when the
    arena runs from a source folder that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hearts-arena")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and tests)."""
    import os

    parser = _Parser(
        prog="hearts-arena", description="A tournament arena for Hearts bots.", allow_abbrev=False
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"hearts-arena {arena_version()} (Python {sys.version.split()[0]})",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", allow_abbrev=False, help="run a tournament and write standings")
    run.add_argument(
        "bots",
        nargs="*",
        metavar="BOT",
        help="a program file, a .py file, or NAME=COMMAND; none: the four sample bots",
    )
    run.add_argument("--rounds", type=_positive_int, default=2, help="rounds (default 2)")
    run.add_argument(
        "--seating",
        choices=("rotations", "full"),
        default="rotations",
        help="seatings of each table per round: the 4 rotations (default) or all 24 "
        "seat permutations, so each entrant meets every order of neighbours",
    )
    run.add_argument(
        "--seed",
        type=int,
        default=None,
        help="a public seed every random choice derives from, for reproducible runs: anyone "
        "who knows it can compute every deal (default: a secret 256-bit key is drawn)",
    )
    run.add_argument(
        "--key-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the tournament's master key (64 hexadecimal digits, as results.json reveals "
        "it), to play a tournament again exactly",
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
        "--disqualify-after",
        type=_positive_int,
        metavar="N",
        default=None,
        help="rank an entrant with N or more faults in the tournament after every other "
        "(marked in the report, standings.csv and results.json; its games still count "
        "for the others); default: off",
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
        "--out",
        type=output_folder,
        default=Path("reports"),
        help="output folder (default reports/)",
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
    add_isolation_flags(run)
    from arena.cli.tools import add_run_flags, add_tool_commands

    add_run_flags(run)
    from arena.cli.competition import add_competition_flags

    add_competition_flags(run)  # --games, --sigma-target, --ladder-batch, --executor, --scheduler
    from arena.cli.live import add_live_flags, add_watch_command

    add_live_flags(run)  # --live, --live-delay

    rep = sub.add_parser(
        "report", allow_abbrev=False, help="rebuild the HTML report of a tournament folder"
    )
    rep.add_argument("folder", type=Path)
    ver = sub.add_parser(
        "verify",
        allow_abbrev=False,
        help="check a finished tournament's deals and seeds against its revealed key",
    )
    ver.add_argument("folder", type=Path)
    clean = sub.add_parser(
        "cleanup",
        allow_abbrev=False,
        help="kill and remove every bot process and control group a killed run on DIR left",
    )
    clean.add_argument("folder", type=Path, metavar="DIR")
    add_tool_commands(sub)
    add_watch_command(sub)
    return parser


class PipeSafe:
    """A text stream (``sys.stdout``, ``sys.stderr``) that goes quiet instead
    of raising when its reader has gone (``hearts-arena run ... | true``,
    ``| head``): the rest of the output is dropped, the command goes on and
    its exit code and files are those it would have had. The stream's file
    descriptor is pointed at ``/dev/null`` so that the interpreter's last
    flush at exit cannot fail either (no "Exception ignored" message)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        """Write ``text``; returns its length even when dropped."""
        if not self.gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._lose()
        return len(text)

    def flush(self) -> None:
        """Flush, unless the reader has gone."""
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lose()

    def _lose(self) -> None:
        self.gone = True
        try:
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
        except (OSError, ValueError, AttributeError):
            return  # not a real file (a test's capture)
        os.dup2(devnull, fd)
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _sigterm_as_ctrl_c(signum: int, frame: object) -> None:
    signal.raise_signal(signal.SIGINT)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hearts-arena`` console script; returns the exit code.

    SIGTERM (``kill``, ``timeout``, a CI job cancelled, ``docker stop``) is
    handled as Ctrl-C: bots are stopped, finished games kept, exit code 130.
    Output to a closed pipe is dropped (:class:`PipeSafe`) and changes
    neither the exit code nor the files written.
    """
    stdout, stderr = sys.stdout, sys.stderr
    # None when the descriptor was closed at start (>&-): print() then prints nothing.
    safe_out = PipeSafe(stdout) if stdout is not None else None
    safe_err = PipeSafe(stderr) if stderr is not None else None
    sys.stdout, sys.stderr = safe_out, safe_err
    try:
        return _main_with_signals(argv)
    finally:
        for safe in (safe_out, safe_err):
            if safe is not None:
                safe.flush()
        sys.stdout, sys.stderr = stdout, stderr


def _main_with_signals(argv: Sequence[str] | None) -> int:
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_ctrl_c)
    # A background job of a script starts with SIGINT ignored; SIGTERM must still stop us.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(argv: Sequence[str] | None) -> int:
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help, --version: printed, then done
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        if args.command == "run":
            from arena.cli.commands import apply_resume, run_command
            from arena.cli.config import apply_config

            given = sys.argv[1:] if argv is None else list(argv)
            apply_config(args, given)
            apply_resume(args, given)
            return run_command(args)
        if args.command == "report":
            from arena.cli.commands import report_command

            return report_command(args)
        if args.command == "watch":
            from arena.cli.live import watch_command

            return watch_command(args)
        if args.command == "verify":
            from arena.cli.commands import verify_command

            return verify_command(args)
        if args.command == "cleanup":
            from arena.cli.commands import cleanup_command

            return cleanup_command(args)
        from arena.cli.tools import TOOL_COMMANDS

        if args.command in TOOL_COMMANDS:
            return TOOL_COMMANDS[args.command](args)
        raise CliError(f"unknown command {args.command!r}")
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:  # output piped into a program that stopped reading (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseExceptionGroup as group:  # from inside Trio's nurseries
        if group.subgroup(KeyboardInterrupt) is not None:
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        errors = group.subgroup(CliError)
        if errors is None:
            raise
        first = _first_leaf(errors)
        print(f"error: {first}", file=sys.stderr)
        return first.code


def _first_leaf(group: BaseExceptionGroup[CliError]) -> CliError:
    inner = group.exceptions[0]
    return _first_leaf(inner) if isinstance(inner, BaseExceptionGroup) else inner


def draw_seed() -> int:
    """A fresh seed for a run without ``--seed``."""
    return secrets.randbelow(2**31)
