"""The tools for bot authors and CI on the command line: the ``check``,
``replay`` and ``play`` commands (their parsers, and the wrappers that turn
the tools' results and errors into output and exit codes: the tools in
:mod:`arena.tools` return results and raise their own errors), and the CI
verdict of ``run`` (``--format gauntlet``, ``--candidate``, ``--fail-if``,
``--junit``, declared in :mod:`arena.cli.options`). :mod:`arena.cli.main`
adds the commands to its parser and dispatches to :data:`TOOL_COMMANDS`;
exit codes are those of :mod:`arena.cli.errors`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from arena.cli.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    CliError,
)
from arena.cli.options import (
    HANDS,
    HANDS_TYPE,
    ISOLATION_OPTIONS,
    JUNIT,
    SEED,
    STARTUP_TIME,
    STRIKES,
    TARGET_SCORE,
    TIME_LIMIT,
    add_options,
    arg,
    delay,
    positive_int,
)
from arena.cli.settings import checked_launcher, game_length, parse_bot
from arena.game.settings import RefereeSettings
from arena.protocol.records import GameRecordJSON
from arena.report.verdict import ConditionError, Verdict, check_names

#: The referee's defaults, shown in the tools' help.
_REFEREE: Final = RefereeSettings()


def _timing_options(parser: argparse.ArgumentParser, *, recorded: bool = False) -> None:
    """``--time-limit`` and ``--startup-time`` of a tool; with ``recorded``
    their defaults are the recorded tournament's (``None`` here)."""
    TIME_LIMIT.add_to(
        parser,
        default=None if recorded else TIME_LIMIT.default,
        help="seconds per decision (default: "
        + (
            f"the tournament's, else {_REFEREE.time_limit:g})"
            if recorded
            else f"{_REFEREE.time_limit:g})"
        ),
    )
    STARTUP_TIME.add_to(
        parser,
        default=None if recorded else STARTUP_TIME.default,
        help="seconds for the handshake (default: "
        + (
            f"the tournament's, else {_REFEREE.startup_time:g})"
            if recorded
            else f"{_REFEREE.startup_time:g})"
        ),
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
    _timing_options(check)
    STRIKES.add_to(
        check,
        help="consecutive timeouts before the bot is struck out of a game "
        f"(default {_REFEREE.strikes})",
    )
    JUNIT.add_to(check, help="write JUnit XML, one case per check")
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
    add_options(check, ISOLATION_OPTIONS)

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
    replay.add_argument("--hand", type=HANDS_TYPE, default=None, help="the hand (default 1)")
    where = replay.add_mutually_exclusive_group()
    where.add_argument("--trick", type=positive_int, default=None, help="the trick 1..13")
    where.add_argument(
        "--pass", dest="pass_", action="store_true", help="the pass of the hand, not a play"
    )
    _timing_options(replay, recorded=True)
    replay.add_argument(
        "--verbose", "-v", action="store_true", help="print every message sent and answer received"
    )
    add_options(replay, ISOLATION_OPTIONS)

    audit = sub.add_parser(
        "audit",
        allow_abbrev=False,
        help="look for clairvoyance, memory of deals and collusion in a finished run's play",
        description="Audit a finished tournament whose key is revealed (docs/fair-play.md): "
        "per entrant, how often it played the move that only the whole deal shows, whether "
        "it does better on deals it has met before, and whether a pair does better together. "
        "Writes audit.json into DIR and adds a Fair play section to its report. Exit 0 if "
        "no entrant is flagged, 5 if one is, 3 if DIR cannot be audited.",
    )
    audit.add_argument("folder", type=Path, metavar="DIR")
    audit.add_argument("--json", action="store_true", help="print the figures as JSON")
    audit.add_argument(
        "--alpha",
        type=_probability,
        default=0.01,
        help="false-positive rate over the whole field, Holm-corrected over every entrant "
        "and signal tested (default 0.01)",
    )
    audit.add_argument(
        "--decisions",
        type=positive_int,
        default=2000,
        metavar="N",
        help="play decisions judged per entrant: all up to N, else N drawn from the key "
        "(default 2000)",
    )
    audit.add_argument(
        "--budget",
        type=positive_int,
        default=10000,
        metavar="N",
        help="simulated card plays per search (default 10000)",
    )
    audit.add_argument(
        "--jobs",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="worker processes (default: the number of cores); the output does not depend on it",
    )
    audit.add_argument("--no-write", action="store_true", help="do not write audit.json into DIR")

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
    TARGET_SCORE.add_to(length, help=f"play to this total (default {game_length(None, None)[0]})")
    HANDS.add_to(length, help="play this many hands")
    SEED.add_to(play, help="seed of the deals (default: drawn)")
    play.add_argument(
        "--delay",
        type=delay,
        default=0.0,
        help="seconds to pause after each trick (default 0)",
    )
    _timing_options(play)
    add_options(play, ISOLATION_OPTIONS)


def _check_progress(result: Any) -> None:
    """One line on stderr as each check ends (a check run takes 40 s and more),
    flushed so that a CI log shows it at once; the report follows on stdout. On
    a terminal the line is a status line, each one written over the last and
    cleared before the report (:func:`_end_check_progress`), so no check is
    shown twice."""
    if result.skipped:
        return
    mark = "PASS" if result.passed else "FAIL"
    line = f"check: {mark}  {result.name}"
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K" + line)
        sys.stderr.flush()
    else:
        print(line, file=sys.stderr, flush=True)


def _end_check_progress() -> None:
    """Clear the status line of :func:`_check_progress` on a terminal."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


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
    launcher = checked_launcher(args, [entrant])
    settings = CheckSettings(
        time_limit=args.time_limit, startup_time=args.startup_time, strikes=args.strikes
    )
    try:
        report = run_checks(entrant, scenarios, settings, launcher, args.only, _check_progress)
    except ScenarioError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    finally:
        _end_check_progress()
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
    """``hearts-arena replay``: see :mod:`arena.tools.replay`. Exit 0 if the
    bot does as recorded (the same move, or the same fault:
    :attr:`~arena.tools.replay.ReplayResult.same`), 5 if not (a fixed bot that
    no longer faults exits 5 too, and says so), 2 on a bad reference, seat,
    decision or bot."""
    import json

    import trio

    from arena.tools.replay import (
        ReplayError,
        choose_decision,
        format_result,
        load_game,
        recorded_entrant,
        recorded_settings,
        replay_decision,
        seat_of,
    )

    try:
        record, run_info, _path = load_game(args.game)
        seat = seat_of(record, args.seat)
        decision = choose_decision(record, seat, args.hand, args.trick, args.pass_)
    except ReplayError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    name = record["seats"][seat]
    if args.bot is not None:
        entrant = parse_bot(args.bot)
    else:
        try:
            found = recorded_entrant(run_info, name)
        except ReplayError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        if found is None:
            raise CliError(
                f"give --bot: no run.json beside the games file names {name!r}'s command"
            )
        entrant = found
    settings = recorded_settings(run_info, args.time_limit, args.startup_time)
    launcher = checked_launcher(args, [entrant])
    try:
        result = trio.run(replay_decision, record, seat, decision, entrant, launcher, settings)
    except* ReplayError as group:
        raise CliError(str(group.exceptions[0]), EXIT_USAGE) from None
    finally:
        launcher.close()  # the entrant's copy of its folder
    if args.verbose:
        for entry in result.transcript:
            if "sent" in entry:
                print("> " + json.dumps(entry["sent"], separators=(", ", ": ")))
            elif "received" in entry:
                print("< " + json.dumps(entry["received"], separators=(", ", ": ")))
            elif "fault" in entry:
                print(f"! {entry['fault']}: {entry.get('detail', '')}")
        print()
    print(format_result(record, seat, decision, entrant, result))
    return EXIT_OK if result.same else EXIT_FAILED


def draw_seed() -> int:
    """A fresh seed for a game without ``--seed``, below 2^63: too many for a
    bot to search from the ``seed`` it is given (issue 11; below 2^31 a bot
    found it in minutes and knew every hand)."""
    return secrets.randbelow(2**63)


def play_command(args: argparse.Namespace) -> int:
    """``hearts-arena play``: see :mod:`arena.tools.play`. Exit 0 after the
    game, 130 if the human quit, 2 on bad bots."""
    import trio

    from arena.tools.play import PlayError, Quit, play_game, seat_entrants

    human = args.seat if args.human else None
    try:
        entrants = seat_entrants(args.bots, 3 if args.human else 4)
    except PlayError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    launcher = checked_launcher(args, entrants)
    seed = args.seed if args.seed is not None else draw_seed()
    target, hands = game_length(args.target_score, args.hands)
    settings = RefereeSettings(time_limit=args.time_limit, startup_time=args.startup_time)
    quit_ = False
    record: GameRecordJSON | None = None
    try:
        record = trio.run(
            lambda: play_game(
                entrants,
                launcher,
                settings,
                seed=seed,
                hands=hands,
                target_score=target,
                human=human,
                out=sys.stdout,
                delay=max(0.0, args.delay),
            )
        )
    except* Quit:
        quit_ = True
    finally:
        launcher.close()  # the entrants' copies of their folders
    if quit_ or record is None:
        print("\nstopped", flush=True)
        return EXIT_INTERRUPTED
    for f in record["faults"]:
        print(f"fault: seat {f['seat']} ({f['entrant']}): {f['reason']}: {f['detail']}")
    print(f"seed {seed} (give --seed {seed} to deal this game again)")
    return EXIT_OK


# -- run: gauntlet, --fail-if, --junit ------------------------------------------


def prepare_run(args: argparse.Namespace, names: Sequence[str]) -> None:
    """Check the CI flags of ``run`` against the entrants, before anything runs.

    Raises:
        CliError: exit 2: a gauntlet without a candidate, a candidate that
            is not an entrant or outside a gauntlet, a ``--fail-if`` that
            names no entrant.
    """
    fmt = arg(args, "format", "round-robin")
    candidate = arg(args, "candidate")
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
        check_names(arg(args, "fail_if") or [], names)
    except ConditionError as exc:
        raise CliError(str(exc)) from None


def conclude_run(verdict: Verdict) -> int:
    """Print the verdict's ``fail-if`` lines on stderr; return
    :data:`EXIT_FAILED` if a JUnit case of the verdict failed, else
    :data:`EXIT_OK`."""
    for line in verdict.lines():
        print(line, file=sys.stderr)
    return EXIT_OK if verdict.passed else EXIT_FAILED


def _probability(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


TOOL_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": check_command,
    "replay": replay_command,
    "play": play_command,
}
