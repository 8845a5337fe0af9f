"""The ``hearts-arena`` command line: the parser and ``main``, which
dispatches each command to its module and turns its errors into exit codes
(:mod:`arena.cli.errors`, re-exported here; also in the README).

Nothing of the arena imports this module: it imports the others of
:mod:`arena.cli` (the options of ``run`` from :mod:`arena.cli.options`, the
commands from :mod:`arena.cli.commands`, :mod:`arena.cli.tools` and
:mod:`arena.cli.live`, ``--config`` from :mod:`arena.cli.config`); the
tournament commands' module only when one of them runs (its libraries take
a while to load).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from arena.cli.errors import (
    EXIT_ENVIRONMENT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    CliError,
)
from arena.cli.export import add_export_command, export_command
from arena.cli.init import is_init, run_as_init
from arena.cli.kits import KIT_COMMANDS, add_kit_commands
from arena.cli.live import add_watch_command, watch_command
from arena.cli.options import UsageParser, add_run_options
from arena.cli.serve import add_serve_command, serve_command
from arena.cli.submit import SUBMIT_COMMANDS, add_submit_commands
from arena.cli.tools import TOOL_COMMANDS, add_tool_commands
from arena.run.errors import RunError

__all__ = [
    "EXIT_ENVIRONMENT",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_USAGE",
    "CliError",
    "PipeSafe",
    "arena_version",
    "build_parser",
    "main",
]


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
    parser = UsageParser(
        prog="hearts-arena", description="A tournament arena for Hearts bots.", allow_abbrev=False
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"hearts-arena {arena_version()} (Python {sys.version.split()[0]})",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=UsageParser)

    run = sub.add_parser("run", allow_abbrev=False, help="run a tournament and write standings")
    add_run_options(run)  # every option of run, declared once (arena.cli.options)

    rep = sub.add_parser(
        "report", allow_abbrev=False, help="rebuild the HTML report of a tournament folder"
    )
    rep.add_argument(
        "folder", type=Path, metavar="DIR", help="a tournament folder (a run's --out, reports/)"
    )
    ver = sub.add_parser(
        "verify",
        allow_abbrev=False,
        help="check a finished tournament's deals and seeds against its revealed key",
    )
    ver.add_argument(
        "folder",
        type=Path,
        metavar="DIR",
        help="a finished tournament's folder (its --out), holding run.json and results.json",
    )
    ver.add_argument(
        "--key-file",
        type=Path,
        metavar="F",
        default=None,
        help="a competition server's key (64 hex digits, revealed at its close), to check "
        "a table downloaded before the close against it",
    )
    clean = sub.add_parser(
        "cleanup",
        allow_abbrev=False,
        help="kill and remove every bot process and control group a killed run on DIR left",
    )
    clean.add_argument(
        "folder", type=Path, metavar="DIR", help="the --out folder of the run that was killed"
    )
    add_tool_commands(sub)
    add_watch_command(sub)
    add_kit_commands(sub)
    add_serve_command(sub)
    add_export_command(sub)
    add_submit_commands(sub)
    return parser


class PipeSafe:
    """A text stream (``sys.stdout``, ``sys.stderr``) that goes quiet instead
    of raising when its reader has gone (``hearts-arena run ... | true``,
    ``| head``, or a terminal that hung up): the rest of the output is
    dropped, the command goes on and its exit code and files are those it
    would have had. The stream's file descriptor is pointed at ``/dev/null``
    so that the interpreter's last flush at exit cannot fail either (no
    "Exception ignored" message)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        """Write ``text``; returns its length even when dropped."""
        if not self.gone:
            try:
                return int(self._stream.write(text))
            except OSError as exc:
                self._lose_or_raise(exc)
        return len(text)

    def flush(self) -> None:
        """Flush, unless the reader has gone."""
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._lose_or_raise(exc)

    def _lose_or_raise(self, exc: OSError) -> None:
        # EPIPE: the reader of a pipe has gone; EIO: the terminal has hung up
        # (SIGHUP: closed window, dropped ssh session). Anything else is raised.
        if exc.errno not in (errno.EPIPE, errno.EIO):
            raise exc
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


#: Signals handled as Ctrl-C: SIGTERM (``kill``, ``timeout``, ``docker stop``)
#: and SIGHUP (the terminal closed, the ssh session dropped).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _sigterm_as_ctrl_c(signum: int, frame: object) -> None:
    signal.raise_signal(signal.SIGINT)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hearts-arena`` console script; returns the exit code.

    SIGTERM (``kill``, ``timeout``, a CI job cancelled, ``docker stop``) and
    SIGHUP (a closed terminal, a dropped ssh session) are handled as Ctrl-C:
    bots are stopped, finished games kept, exit code 130.
    Output to a closed pipe is dropped (:class:`PipeSafe`) and changes
    neither the exit code nor the files written. As PID 1 (a container's
    entrypoint) it forks first and PID 1 stays as a small init that reaps
    orphans (:mod:`arena.cli.init`).
    """
    if is_init() and threading.current_thread() is threading.main_thread():
        run_as_init()  # PID 1 (a container): fork; PID 1 stays to reap orphans
    stdout, stderr = sys.stdout, sys.stderr
    # None when the descriptor was closed at start (>&-): print() then prints nothing.
    safe_out = PipeSafe(stdout) if stdout is not None else None
    safe_err = PipeSafe(stderr) if stderr is not None else None
    sys.stdout, sys.stderr = safe_out, safe_err
    try:
        return _main_with_signals(argv)
    finally:
        # A referee's CPU weight is for the run only (main may run in-process: tests).
        # Only a command that loaded the run's host steps can have moved it.
        host = sys.modules.get("arena.run.host")
        if host is not None:
            host.leave_referees()
        for safe in (safe_out, safe_err):
            if safe is not None:
                safe.flush()
        sys.stdout, sys.stderr = stdout, stderr


def _main_with_signals(argv: Sequence[str] | None) -> int:
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    # SIGHUP (a closed terminal, a dropped ssh session) is a stop like SIGTERM.
    previous = {sig: signal.signal(sig, _sigterm_as_ctrl_c) for sig in STOP_SIGNALS}
    # A background job of a script starts with SIGINT ignored; SIGTERM must still stop us.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _main(argv)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _command(name: str) -> Any:
    """The function of command ``name`` (parsed arguments -> exit code), or
    ``None``. The tournament commands' module (with the report's libraries) is
    loaded only for them, so ``--version``, ``--help`` and the tools start
    quickly."""
    if name in ("run", "report", "verify", "audit", "cleanup"):
        from arena.cli import commands

        return getattr(commands, f"{name}_command")
    if name == "watch":
        return watch_command
    if name == "serve":
        return serve_command
    if name == "export":
        return export_command
    return TOOL_COMMANDS.get(name) or KIT_COMMANDS.get(name) or SUBMIT_COMMANDS.get(name)


def _main(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if not given:  # bare `hearts-arena`: the commands, on stderr, and a usage exit
        print(build_parser().format_help(), file=sys.stderr, end="")
        return EXIT_USAGE
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
        command = _command(args.command)
        if command is None:
            raise CliError(f"unknown command {args.command!r}")
        return int(command(args))
    except (CliError, RunError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return _code(exc)
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
        errors = group.subgroup((CliError, RunError))
        if errors is None:
            raise
        first = _first_leaf(errors)
        print(f"error: {first}", file=sys.stderr)
        return _code(first)


#: The exit code of each kind of :class:`arena.run.errors.RunError`.
_RUN_ERROR_CODES: Final = {
    "usage": EXIT_USAGE,
    "output": EXIT_OUTPUT,
    "environment": EXIT_ENVIRONMENT,
}


def _code(exc: CliError | RunError) -> int:
    return exc.code if isinstance(exc, CliError) else _RUN_ERROR_CODES[exc.kind]


def _first_leaf(group: BaseExceptionGroup[Any]) -> CliError | RunError:
    inner = group.exceptions[0]
    if isinstance(inner, BaseExceptionGroup):
        return _first_leaf(inner)
    assert isinstance(inner, CliError | RunError)
    return inner
