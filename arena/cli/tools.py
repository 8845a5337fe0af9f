"""The command line of the tools for bot authors and CI: ``check``, ``replay``
and ``play``, and the CI flags of ``run`` (``--format gauntlet``,
``--candidate``, ``--fail-if``, ``--junit``, ``--config``,
``--transcript-cap``). :mod:`arena.cli.main` adds them to its parser and
dispatches to :data:`TOOL_COMMANDS`; exit codes are those of :mod:`arena.cli.main`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.cli.main import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    CliError,
    _nonnegative_int,
    _positive_float,
    _positive_int,
    add_isolation_flags,
    output_file,
)
from arena.protocol.records import GameRecordJSON

if TYPE_CHECKING:
    from arena.report.verdict import Verdict

#: Default cap of transcript entries per seat and game (see ``--transcript-cap``).
DEFAULT_TRANSCRIPT_CAP = 1000


def _condition(text: str) -> Any:
    from arena.report.verdict import ConditionError, parse_condition

    try:
        return parse_condition(text)
    except ConditionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--fail-if {text!r}: ")) from None


def add_run_flags(run: argparse.ArgumentParser) -> None:
    """The CI flags of ``run``."""
    ci = run.add_argument_group("formats and CI verdicts")
    from arena.tournament.runner import FORMATS

    ci.add_argument(
        "--format",
        choices=FORMATS,
        default="round-robin",
        help="round-robin: every table of four (default); gauntlet: only the tables "
        "that include --candidate"
        + ("; ladder: tables chosen from the ratings (--games)" if "ladder" in FORMATS else ""),
    )
    ci.add_argument(
        "--candidate",
        metavar="NAME",
        default=None,
        help="the entrant a gauntlet is about (every table includes it; --fail-if judges it)",
    )
    ci.add_argument(
        "--fail-if",
        metavar="CONDITION",
        action="append",
        type=_condition,
        default=None,
        help="exit with code 5 if METRIC OP VALUE holds for the candidate (gauntlet) or "
        "any entrant, e.g. 'faults>0', 'points_per_hand>low' (another entrant's value), "
        "'mean_rank>2.5'; repeatable (see the README, 'Testing your bot in CI')",
    )
    ci.add_argument(
        "--junit",
        metavar="FILE",
        type=output_file,
        default=None,
        help="write JUnit XML: one test case per entrant judged (a gauntlet's candidate, "
        "else each), failed iff a --fail-if holds for it (none given: faults>0)",
    )
    ci.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        default=None,
        help="read entrants and settings from a TOML file (flags given override it; "
        "see examples/tournament.toml)",
    )
    ci.add_argument(
        "--transcript-cap",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_TRANSCRIPT_CAP,
        help=f"with --transcripts: most messages kept per seat and game (default "
        f"{DEFAULT_TRANSCRIPT_CAP}, about 22 hands; a hand is about 44 messages)",
    )


def _timing_flags(parser: argparse.ArgumentParser, *, recorded: bool = False) -> None:
    """``--time-limit`` and ``--startup-time``; with ``recorded`` their
    defaults are the recorded tournament's (``None`` here)."""
    parser.add_argument(
        "--time-limit",
        type=_positive_float,
        default=None if recorded else 1.0,
        help="seconds per decision (default: "
        + ("the tournament's, else 1)" if recorded else "1)"),
    )
    parser.add_argument(
        "--startup-time",
        type=_positive_float,
        default=None if recorded else 10.0,
        help="seconds for the handshake (default: "
        + ("the tournament's, else 10)" if recorded else "10)"),
    )


def add_tool_commands(sub: Any) -> None:
    """Add ``check``, ``replay`` and ``play`` to the subcommands."""
    check = sub.add_parser(
        "check",
        allow_abbrev=False,
        help="check one bot against the protocol and the rules' awkward corners",
        description="Start the bot alone and drive it through scripted scenarios "
        "shipped with the package (more with --scenarios DIR). Exit 0 if every check passes, "
        "5 if one fails.",
    )
    check.add_argument(
        "bot",
        nargs="?",
        metavar="BOT",
        help="a program file, a .py file, or NAME=COMMAND (as for run)",
    )
    _timing_flags(check)
    check.add_argument(
        "--strikes",
        type=_nonnegative_int,
        default=3,
        help="consecutive timeouts before the bot is struck out of a game (default 3)",
    )
    check.add_argument(
        "--junit", metavar="FILE", type=output_file, help="write JUnit XML, one case per check"
    )
    check.add_argument(
        "--scenarios",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="also run the scenario files (*.toml) of this folder; repeatable",
    )
    check.add_argument(
        "--only",
        metavar="CHECK",
        action="append",
        default=None,
        help="run only this check (its scenario runs whole); repeatable",
    )
    check.add_argument("--list", action="store_true", help="list the checks and exit")
    check.add_argument("--verbose", "-v", action="store_true", help="details of passing checks too")
    add_isolation_flags(check)

    replay = sub.add_parser(
        "replay",
        allow_abbrev=False,
        help="feed a recorded game to a bot up to one decision and compare its answer",
        description="GAME is a games.jsonl file or a tournament folder, with #ID for the "
        "game: its game id (r1-t0-k2) or its index in the schedule (#12); a file of one "
        "game needs no #ID. Exit 0 if the bot answers as recorded, 5 if not.",
    )
    replay.add_argument("game", metavar="GAME", help="e.g. reports#r1-t0-k2, reports/games.jsonl#3")
    replay.add_argument(
        "--seat",
        required=True,
        metavar="SEAT",
        help="the seat (0..3) or the entrant's name whose decision to replay",
    )
    replay.add_argument(
        "--bot",
        metavar="BOT",
        default=None,
        help="the bot to ask (a file or NAME=COMMAND); default: the entrant's own command "
        "from the tournament's run.json",
    )
    replay.add_argument("--hand", type=_positive_int, default=None, help="the hand (default 1)")
    where = replay.add_mutually_exclusive_group()
    where.add_argument("--trick", type=_positive_int, default=None, help="the trick 1..13")
    where.add_argument(
        "--pass", dest="pass_", action="store_true", help="the pass of the hand, not a play"
    )
    _timing_flags(replay, recorded=True)
    replay.add_argument(
        "--verbose", "-v", action="store_true", help="print every message sent and answer received"
    )
    add_isolation_flags(replay)

    play = sub.add_parser(
        "play",
        allow_abbrev=False,
        help="play one game in the terminal, trick by trick (--human: you play a seat)",
    )
    play.add_argument(
        "bots",
        nargs="*",
        metavar="BOT",
        help="up to four bots, or three with --human; sample bots take the other seats",
    )
    play.add_argument("--human", action="store_true", help="you play one seat at a prompt")
    play.add_argument(
        "--seat", type=int, choices=range(4), default=3, help="your seat with --human (default 3)"
    )
    length = play.add_mutually_exclusive_group()
    length.add_argument(
        "--target-score", type=_positive_int, default=None, help="play to this total (default 100)"
    )
    length.add_argument("--hands", type=_positive_int, default=None, help="play this many hands")
    play.add_argument("--seed", type=int, default=None, help="seed of the deals (default: drawn)")
    play.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="seconds to pause after each trick (default 0)",
    )
    _timing_flags(play)
    add_isolation_flags(play)


def launcher_for(args: argparse.Namespace, entrants: Sequence[Any]) -> Any:
    """A checked :class:`~arena.seats.launcher.Launcher` from the isolation flags.

    Raises:
        CliError: exit 2 if a bot's files are unreachable by the bot user,
            4 if the sandbox or separate users are unavailable.
    """
    from arena.cli.commands import _check_launcher, _launch_options
    from arena.seats.launcher import Launcher

    launcher = Launcher(_launch_options(args, None))
    try:
        _check_launcher(launcher, list(entrants))
    except BaseException:
        launcher.close()
        raise
    return launcher


def parse_bot(text: str) -> Any:
    """One entrant from the command line (exit 2 on a bad one)."""
    from arena.seats.entrants import EntrantError, parse_entrant

    try:
        return parse_entrant(text)
    except EntrantError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def check_command(args: argparse.Namespace) -> int:
    """``hearts-arena check``: see :mod:`arena.tools.check`. Exit 0 if every check
    passed, 5 if one failed, 2 on a bad bot or scenario file, 4 when the
    requested isolation is unavailable."""
    from arena.tools.check import (
        CheckSettings,
        ScenarioError,
        format_report,
        list_checks,
        load_scenarios,
        run_checks,
    )

    try:
        scenarios = load_scenarios(args.scenarios)
    except ScenarioError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if args.list:
        print(list_checks(scenarios))
        return EXIT_OK
    if args.bot is None:
        raise CliError("check: give the bot to check (a file or NAME=COMMAND)")
    known = {c.name for s in scenarios for c in s.checks}
    for name in args.only or []:
        if name not in known:
            raise CliError(f"check: --only {name!r}: no such check (see --list)")
    entrant = parse_bot(args.bot)
    launcher = launcher_for(args, [entrant])
    settings = CheckSettings(
        time_limit=args.time_limit, startup_time=args.startup_time, strikes=args.strikes
    )
    try:
        report = run_checks(entrant, scenarios, settings, launcher, args.only)
    except ScenarioError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    finally:
        launcher.close()  # the entrant's copy of its folder
    print(format_report(report, verbose=args.verbose))
    if args.junit is not None:
        from arena.report.junit import Case, write_junit

        cases = [
            Case(
                name=r.name,
                classname=f"hearts-arena.tools.check.{r.scenario}",
                time=r.time,
                failure=None if r.passed else r.reason,
                details=r.details if not r.passed else r.reason,
                skipped=r.skipped,
            )
            for r in report.results
        ]
        try:
            write_junit(
                args.junit, f"hearts-arena check {entrant.name}", cases, time=report.duration
            )
        except OSError as exc:
            raise CliError(f"--junit {args.junit}: {exc.strerror or exc}", EXIT_OUTPUT) from None
    return EXIT_OK if report.passed else EXIT_FAILED


def replay_command(args: argparse.Namespace) -> int:
    """``hearts-arena replay``: see :mod:`arena.tools.replay`."""
    from arena.tools.replay import replay_command as run

    return run(args)


def play_command(args: argparse.Namespace) -> int:
    """``hearts-arena play``: see :mod:`arena.tools.play`."""
    from arena.tools.play import play_command as run

    return run(args)


# -- run: gauntlet, --fail-if, --junit ------------------------------------------


def prepare_run(args: argparse.Namespace, names: Sequence[str]) -> None:
    """Check the CI flags of ``run`` against the entrants, before anything runs.

    Raises:
        CliError: exit 2: a gauntlet without a candidate, a candidate that
            is not an entrant or outside a gauntlet, a ``--fail-if`` that
            names no entrant.
    """
    from arena.report.verdict import ConditionError, check_names

    fmt = getattr(args, "format", "round-robin")
    candidate = getattr(args, "candidate", None)
    if fmt == "gauntlet" and candidate is None:
        raise CliError("--format gauntlet needs --candidate NAME")
    if candidate is not None:
        if fmt != "gauntlet":
            raise CliError("--candidate is for --format gauntlet")
        if candidate not in names:
            raise CliError(
                f"--candidate {candidate!r} is not an entrant (entrants: {', '.join(names)})"
            )
    try:
        check_names(getattr(args, "fail_if", None) or [], names)
    except ConditionError as exc:
        raise CliError(str(exc)) from None


def run_verdict(
    args: argparse.Namespace,
    results: dict[str, Any],
    records: Sequence[GameRecordJSON],
) -> Verdict:
    """After a finished run: judge it (see :func:`arena.report.verdict.judge`) and
    write ``--junit``, before anything is printed (so that output to a closed
    pipe can neither lose the file nor change the verdict). Returns the
    :class:`~arena.report.verdict.Verdict`.

    Raises:
        CliError: exit 3: the JUnit file cannot be written.
    """
    from arena.report.verdict import judge

    junit = getattr(args, "junit", None)
    verdict = judge(
        getattr(args, "fail_if", None) or [],
        results["standings"],
        records,
        candidate=getattr(args, "candidate", None),
        junit=junit is not None,
    )
    if junit is not None:
        from arena.report.junit import write_junit

        try:
            write_junit(junit, f"hearts-arena run {args.out}", verdict.cases)
        except OSError as exc:
            raise CliError(f"--junit {junit}: {exc.strerror or exc}", EXIT_OUTPUT) from None
    return verdict


def conclude_run(verdict: Verdict) -> int:
    """Print the verdict's ``fail-if`` lines on stderr; return
    :data:`EXIT_FAILED` if a JUnit case of the verdict failed, else
    :data:`EXIT_OK`."""
    for line in verdict.lines():
        print(line, file=sys.stderr)
    return EXIT_OK if verdict.passed else EXIT_FAILED


TOOL_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": check_command,
    "replay": replay_command,
    "play": play_command,
}
