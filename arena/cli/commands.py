"""What ``run`` does once its arguments are parsed: walk the flags into
typed settings (:func:`_plan`), hand them to :mod:`arena.run` (the plan, the
output folder as a record store, the games, the outputs and the verdict),
take the host's steps in between (umask, CPU priority, the bots' control
groups, clean-up: :mod:`arena.run.host`), print, and turn the errors into
exit codes (:mod:`arena.cli.errors`). ``--resume`` reads the run's
``run.json`` back as typed settings (:func:`apply_resume`). The commands
that read a finished folder are :mod:`arena.cli.folders`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterator, Sequence, Sized
from pathlib import Path
from typing import Any, Final

import trio

from arena.cli import competition
from arena.cli.config import given_on_command_line
from arena.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE, CliError
from arena.cli.folders import (
    audit_command,
    cleanup_command,
    print_standings,
    report_command,
    verify_command,
)
from arena.cli.live import check_live_args, open_live
from arena.cli.options import Number, arg, option_for
from arena.cli.settings import (
    check_launcher,
    fit_memory_limit,
    launch_options,
    say_memory_notes,
    tournament_settings,
)
from arena.cli.tools import conclude_run, prepare_run
from arena.core.keys import MasterKey
from arena.protocol.records import FaultJSON, GameRecordJSON
from arena.report.outputs import RUN_FILE
from arena.report.verdict import ConditionError, parse_condition
from arena.run import host
from arena.run.folder import (
    FolderStore,
    check_key_file_private,
    read_key_file,
    read_run_file,
    resume_command,
    stored_key,
)
from arena.run.host import Entrant, EntrantError, Launcher, LaunchOptions
from arena.run.run import Plan, Run, plan
from arena.tournament.runner import TournamentSettings, iter_tables
from arena.tournament.settings import LaunchSettings, RunFile, VerdictSettings

__all__ = [
    "apply_resume",
    "audit_command",
    "cleanup_command",
    "estimate",
    "report_command",
    "run_command",
    "verify_command",
]


def _entrants(args: argparse.Namespace) -> list[Entrant]:
    """The run's entrants: the bots named on the command line, else those of
    ``--config`` or of the ``run.json`` being resumed (already typed), else
    the sample bots."""
    typed: list[Entrant] | None = arg(args, "entrants")
    try:
        if args.bots:
            entrants = host.parse_entrants(args.bots)
        elif typed:
            entrants = typed  # --config's ``dir`` already applied
        else:
            entrants = host.sample_entrants()
    except EntrantError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if len(entrants) < 4:
        raise CliError(
            f"a tournament needs at least four entrants, got {len(entrants)} "
            "(one program may be entered twice as NAME=COMMAND)",
            EXIT_USAGE,
        )
    return entrants


#: ``run.json`` settings -> the ``run`` flag (``dest``) that sets each.
_RECORDED_FLAGS: Final = {
    "seed": "seed",
    "format": "format",
    "candidate": "candidate",
    "rounds": "rounds",
    "seating": "seating",
    "target_score": "target_score",
    "hands": "hands",
    "time_limit": "time_limit",
    "startup_time": "startup_time",
    "strikes": "strikes",
    "transcripts": "transcripts",
    "transcript_cap": "transcript_cap",
    "pace": "pace",
    "wall_cap": "wall_cap",
    "jobs": "jobs",
    "fresh_processes": "fresh_processes",
    "drop_kernel_caches": "drop_kernel_caches",
    "disqualify_after": "disqualify_after",
    "games": "games",
    "sigma_target": "sigma_target",
    "ladder_batch": "ladder_batch",
}
_RECORDED_LIMITS: Final = {
    "memory_mb": "memory_limit",
    "cpu_seconds": "cpu_limit",
    "processes": "max_processes",
    "open_files": "max_open_files",
    "stderr_kib": "stderr_limit",
}


def apply_resume(args: argparse.Namespace, argv: list[str]) -> None:
    """``run --resume --out DIR`` with no bots and no ``--config``: take the
    entrants and every setting not given on the command line (``argv``) from
    ``DIR/run.json`` (read typed: :class:`arena.tournament.settings.RunFile`;
    the key itself comes from ``DIR``'s key file, or ``--key-file``, as for
    any resume), and, when neither ``--fail-if`` nor ``--junit`` is given,
    the run's recorded ones. Settings that are given and differ from the
    record are refused later, by the store (exit 3), naming both values.

    Raises:
        CliError: exit 3: ``run.json`` cannot be read or records an entrant
            without a usable command.
    """
    if not args.resume or args.bots or arg(args, "config") is not None:
        return
    path = args.out / RUN_FILE
    if not path.exists():
        return  # refused with its own message by the store
    run = read_run_file(path)
    recorded = run.settings.to_json()
    given = given_on_command_line(argv)
    exclusive = {"hands", "target_score"}
    if "key_file" in given:
        given.add("seed")  # the key given replaces the recorded seed (checked against the record)
    for key, dest in _RECORDED_FLAGS.items():
        if key not in recorded or dest in given or (dest in exclusive and exclusive & given):
            continue
        setattr(args, dest, _in_bounds(dest, recorded[key], path))
    launch = run.settings.launch
    if launch is not None:
        for key, dest in _RECORDED_LIMITS.items():
            value = getattr(launch, key)
            if value is not None and dest not in given:
                setattr(args, dest, _in_bounds(dest, value, path))
        if launch.sandbox is not None and "sandbox" not in given:
            args.sandbox = launch.sandbox  # recorded resolved: sealed or not
        if launch.tmp_mb is not None and "tmp_size" not in given:
            args.tmp_size = _in_bounds("tmp_size", launch.tmp_mb, path)
        if launch.sandbox_ro and "sandbox_ro" not in given:
            args.sandbox_ro = [Path(p) for p in launch.sandbox_ro]
        if launch.separate_users is not None and "same_user" not in given:
            args.same_user = os.geteuid() == 0 and not launch.separate_users
    if not given & {"fail_if", "junit"} and run.verdict is not None:
        _restore_verdict_options(args, run.verdict, path)
    try:
        args.entrants = [host.entrant_from_record(e) for e in run.settings.entrants]
    except EntrantError as exc:
        raise CliError(f"--resume: {path}: {exc}", EXIT_OUTPUT) from None


def _in_bounds(dest: str, value: Any, path: Path) -> Any:
    """A recorded setting, checked as its option checks a value given (a
    record made before the options were bounded may hold one the arena can no
    longer carry).

    Raises:
        CliError: exit 2, one line naming the file, the setting and the bounds.
    """
    option = option_for(dest)
    if value is None or option is None or not isinstance(option.type, Number):
        return value
    try:
        return option.type(str(value))
    except argparse.ArgumentTypeError as exc:
        raise CliError(f"--resume: {path}: {dest}: {exc}", EXIT_USAGE) from None


def verdict_settings(args: argparse.Namespace) -> VerdictSettings:
    """``run.json``'s ``verdict``: the run's ``--fail-if`` conditions (as given)
    and its ``--junit`` file (an absolute path, or ``None``), so that ``run
    --resume --out DIR`` alone judges the run as its first command would
    have. Not a setting: a resume may judge by other conditions."""
    junit: Path | None = arg(args, "junit")
    return VerdictSettings(
        tuple(c.text for c in arg(args, "fail_if") or []),
        str(junit.absolute()) if junit is not None else None,
    )


def _restore_verdict_options(
    args: argparse.Namespace, recorded: VerdictSettings, path: Path
) -> None:
    """Set ``--fail-if`` and ``--junit`` from ``run.json``'s ``verdict``.

    Raises:
        CliError: exit 3: a recorded condition cannot be parsed.
    """
    if recorded.fail_if:
        try:
            args.fail_if = [parse_condition(t) for t in recorded.fail_if]
        except ConditionError as exc:
            raise CliError(f"--resume: {path}: {exc}", EXIT_OUTPUT) from None
    if recorded.junit:
        args.junit = Path(recorded.junit)


#: Rough figures for ``--dry-run``'s estimate, measured with the sample bots
#: (see the README): hands in a game to 100, and seconds per decision and per
#: process start when bots answer at once.
HANDS_PER_GAME_TO_100 = 11.0
SECONDS_PER_FAST_DECISION = 0.0004
SECONDS_PER_PROCESS_START = 0.05


def estimate(games: Sized, settings: TournamentSettings) -> dict[str, float]:
    """A rough time estimate of a schedule (a list or a
    :class:`arena.tournament.runner.ScheduleStream`: only its length is read), in
    seconds: ``typical`` (bots answering at once) and ``worst`` (every
    decision using its whole time); under a pace (``--pace``) every
    decision takes at least the pace."""
    if settings.hands is not None:
        hands = float(settings.hands)
    else:
        assert settings.target_score is not None
        hands = max(1.0, HANDS_PER_GAME_TO_100 * settings.target_score / 100)
    decisions_per_game = hands * 52 + hands * 0.75 * 4
    starts = len(games) * 4 / (1 if settings.fresh_processes else settings.rounds)
    jobs = settings.jobs
    # Passes run at once: a pass hand waits one time limit, not four.
    waits_per_game = hands * 52 + hands * 0.75
    pace = settings.referee.pace
    fast = max(SECONDS_PER_FAST_DECISION, pace * waits_per_game / decisions_per_game)
    typical = (len(games) * decisions_per_game * fast + starts * SECONDS_PER_PROCESS_START) / jobs
    per_wait = max(settings.referee.time_limit, pace)
    worst = len(games) * waits_per_game * per_wait / jobs
    return {"games": len(games), "hands_per_game": hands, "typical": typical, "worst": worst}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _dry_run(entrants: Sequence[Entrant], settings: TournamentSettings, games: Sized) -> int:
    """Print the plan of a round-robin or gauntlet. Counts are computed and at
    most 50 tables are made, so a schedule of millions prints at once."""
    names = [e.name for e in entrants]
    # Tables keep their round-robin number, as in the game ids (r1-t3-k0).
    tables: Iterator[tuple[int, tuple[str, str, str, str]]] = enumerate(iter_tables(names))
    if settings.candidate is not None:  # a gauntlet: only the candidate's tables
        candidate = settings.candidate
        tables = ((t, table) for t, table in tables if candidate in table)
    count = len(games) // (settings.rounds * (24 if settings.seating == "full" else 4))
    seatings = "24 seatings" if settings.seating == "full" else "4 rotations"
    print(f"{len(entrants)} entrants, {count} tables, {settings.rounds} rounds x {seatings}")
    for t, table in itertools.islice(tables, 50):
        print(f"  table {t}: {', '.join(table)}")
    if count > 50:
        print(f"  ... and {count - 50} more tables")
    est = estimate(games, settings)
    length = (
        f"{settings.hands} hands"
        if settings.hands
        else f"to {settings.target_score} (about {est['hands_per_game']:.0f} hands)"
    )
    print(f"{len(games)} games, each {length}, {settings.jobs} at a time")
    print(
        f"estimated time: about {_duration(est['typical'])} if bots answer at once; "
        f"at most {_duration(est['worst'])} if every decision takes "
        f"the full {settings.referee.time_limit:g} s"
    )
    return EXIT_OK


def _stored_run(args: argparse.Namespace) -> RunFile | None:
    """The ``run.json`` of the run being resumed, or ``None``."""
    path = args.out / RUN_FILE
    return read_run_file(path) if args.resume and path.exists() else None


def _master_key(args: argparse.Namespace) -> MasterKey:
    """The run's master key: from ``--key-file``, from ``--seed`` (public), from
    the output folder on ``--resume``, or drawn fresh (:mod:`arena.core.keys`)."""
    key_file: Path | None = arg(args, "key_file")
    if key_file is not None and args.seed is not None:
        raise CliError("give --seed or --key-file, not both")
    if key_file is not None:
        check_key_file_private(key_file)
        return read_key_file(key_file)
    if args.seed is not None:
        return MasterKey.from_seed(args.seed)
    stored = _stored_run(args)
    if stored is not None:
        return stored_key(args.out, stored)
    return MasterKey.generate()


class _Progress:
    """Progress on the terminal (tqdm), silent when stderr is not a terminal."""

    def __init__(self, total: int, initial: int, quiet: bool) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, initial=initial, unit="game", desc="games", dynamic_ncols=True
            )

    def update(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_command(args: argparse.Namespace) -> int:
    """``hearts-arena run``: see ``hearts-arena run --help``; returns the exit code.

    Files and folders the run creates are owner-only (umask 077 meanwhile)."""
    old_umask = os.umask(0o077)
    try:
        with contextlib.ExitStack() as stack:  # the launcher, the output folder's lock
            return _run_command(args, stack)
    finally:
        os.umask(old_umask)


def _run_command(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    """The steps of ``run``: plan the games; start the launcher; take the
    output folder; say what the run is; play; write the outputs and judge."""
    the_plan = _plan(args)
    if args.dry_run:
        say_memory_notes(args)
        return _dry_run_plan(the_plan)
    stored = _stored_run(args)
    old_run_id = stored.run_id if stored is not None else None  # resuming: the interrupted run's
    launcher = _start_launcher(args, the_plan, stack, old_run_id)
    options = launcher.options
    run_file = the_plan.run_file(
        LaunchSettings.from_json(options.describe()), options.run_id, verdict_settings(args)
    )
    out: Path = args.out
    # A killed arena's bots may hold the folder's lock: end them first.
    left_in_groups = host.remove_groups_left(out)
    store = FolderStore.open(out, run_file, resume=args.resume, overwrite=args.overwrite)
    stack.callback(store.close)
    left_in_groups += host.remove_groups_left(out)
    guard = host.guard_groups(out, options)
    if guard.warning:
        print(guard.warning, file=sys.stderr)
    store.write_key(the_plan.key)
    _announce(args, the_plan.key, launcher, left_in_groups, old_run_id)
    run = Run(
        the_plan,
        launcher,
        executor=arg(args, "executor", "local"),
        scheduler=arg(args, "scheduler"),
        fail_if=arg(args, "fail_if") or [],
        junit=arg(args, "junit"),
    )
    run.take(store)
    if args.resume and run.all_played:
        print(f"--resume: all {len(the_plan.games)} games were already played", file=sys.stderr)
    _play(args, run, run_file, guard)
    return _finish(run, out)


def _plan(args: argparse.Namespace) -> Plan:
    """Check the flags together, walk them into typed settings and plan the
    run (:func:`arena.run.run.plan`); ``jobs`` and the memory bound are
    fitted to this machine (:func:`arena.run.host.fit_jobs`, the line saying
    so printed here).

    Raises:
        CliError: exit 2: flags that do not go together, unusable entrants, a
            schedule too large; exit 3: the key of a resumed run; exit 4:
            the open-files limit, :func:`arena.cli.competition.check_competition_args`.
    """
    if args.resume and args.overwrite:
        raise CliError("--resume and --overwrite cannot be used together")
    entrants = _entrants(args)
    prepare_run(args, [e.name for e in entrants])
    competition.check_competition_args(args)  # --format ladder, --executor dask
    check_live_args(args)
    key = _master_key(args)
    the_plan = plan(entrants, tournament_settings(args, key), arg(args, "fail_if") or [])
    if arg(args, "executor", "local") == "local":  # games played here only
        settings, note = host.fit_jobs(the_plan.settings, the_plan.chains)
        if note is not None:
            print(note, file=sys.stderr)
        the_plan.settings = settings
    fit_memory_limit(args, the_plan.settings.jobs, say=False)  # --jobs x 4 bots against the machine
    return the_plan


def _dry_run_plan(the_plan: Plan) -> int:
    """``--dry-run``: print the plan (a ladder's budget, or the tables, game
    count and time estimate); exit 0."""
    if the_plan.ladder:
        competition.dry_run_ladder(the_plan.entrants, the_plan.settings)
        return EXIT_OK
    return _dry_run(the_plan.entrants, the_plan.settings, the_plan.games)


def _start_launcher(
    args: argparse.Namespace, the_plan: Plan, stack: contextlib.ExitStack, old_run_id: str | None
) -> Launcher:
    """The run's checked launcher (closed by ``stack``), with the run id
    ``old_run_id`` (the interrupted run's, when resuming), else a new one.

    Raises:
        CliError: see :func:`arena.cli.settings.check_launcher`.
    """
    launcher = Launcher(launch_options(args, old_run_id))
    stack.callback(launcher.close)  # the entrants' copies of their folders
    check_launcher(launcher, the_plan.entrants)
    return launcher


def _announce(
    args: argparse.Namespace,
    key: MasterKey,
    launcher: Launcher,
    left_in_groups: int,
    old_run_id: str | None,
) -> None:
    """Say on stderr how bots are bounded, the key's commitment, and the
    leftovers of an earlier run killed; kill those of the interrupted run
    ``old_run_id`` (when resuming) and remove its temporary folders."""
    say_memory_notes(args)  # a lowered --memory-limit, even with --quiet
    if not args.quiet:
        print(launcher.options.describe_bounds(), file=sys.stderr)
    _announce_key(key, launcher.options)  # resolved: sealed or not
    if left_in_groups:
        print(f"killed {left_in_groups} bot processes left by an earlier run", file=sys.stderr)
    if old_run_id:
        left = host.end_run_left(old_run_id)
        if left:
            print(f"killed {left} bot processes left by the interrupted run", file=sys.stderr)


def _play(args: argparse.Namespace, run: Run, run_file: RunFile, guard: host.Guard) -> None:
    """Play the games not yet played (``--live`` page served meanwhile, a
    progress bar on a terminal); then end every bot and folder the run made,
    whatever happened. Ctrl-C stops the games (the run is then interrupted).

    Raises:
        CliError: exit 4 or 3, see :meth:`arena.run.run.Run.play`.
    """
    progress = _Progress(run.total, run.already, args.quiet)
    recorded = run.store.records() if run.store is not None else []
    live = open_live(args, run_file.settings.to_json(), run.total, recorded, run.launcher.sealed)
    run.live = live.channel if live is not None else None
    on_record = live.add_record if live is not None else None
    try:
        trio.run(run.play, on_record, lambda done, total: progress.update())
    except* KeyboardInterrupt:  # Ctrl-C, possibly inside Trio's exception groups
        run.interrupted = True
    finally:
        progress.close()
        if live is not None:
            live.close()  # after the delay, so the page ends on the last game
        left = host.end_bots(guard, run.launcher.options.run_id)
        if left:
            print(f"killed {left} bot processes left by worker processes", file=sys.stderr)


def _finish(run: Run, out: Path) -> int:
    """Write the outputs and judge the run (:meth:`arena.run.run.Run.finish`),
    then print the standings; returns the exit code (0, 5 if a verdict
    failed, 130 if interrupted).

    Raises:
        CliError: exit 3: the output folder could not be written.
    """
    # Every file is written before anything is printed: a closed pipe on
    # stdout or stderr can then neither lose a file nor change the verdict.
    outcome = run.finish()
    print_standings(outcome.results, out)
    if outcome.verdict is None:
        print(
            f"interrupted: {outcome.results['games_played']} of {outcome.total} games kept; "
            f"continue with: {resume_command(out)}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    _warn_faults(outcome.records)
    return conclude_run(outcome.verdict)


def _announce_key(key: MasterKey, launch: LaunchOptions) -> None:
    """Print the key's commitment (stderr), and say so when bots could read the
    output folder (they run as the arena's own user, unsealed)."""
    if key.seed is None:  # a public seed's deals are no secret (README)
        print(
            f"key commitment: SHA-256 {key.commitment()} "
            "(the key is revealed in results.json once every game is played)",
            file=sys.stderr,
        )
    if not launch.uses_separate_users and not launch.sandbox:
        print(
            "note: bots run as this arena's own user without the sandbox: they can read "
            "the output folder, its key and the journal",
            file=sys.stderr,
        )


def _warn_faults(records: list[GameRecordJSON]) -> None:
    """One line on stderr per entrant that faulted: how often, and the first
    detail (a bot that never started still gets default moves, and can rank
    well; this line makes sure nobody misses it)."""
    faults: dict[str, list[FaultJSON]] = {}
    for rec in sorted(records, key=lambda r: r["game_index"]):
        for f in rec["faults"]:
            faults.setdefault(f["entrant"], []).append(f)
    for name in sorted(faults):
        found = faults[name]
        kinds: dict[str, int] = {}
        for f in found:
            kinds[f["reason"]] = kinds.get(f["reason"], 0) + 1
        counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        first = found[0]["detail"]
        print(f"warning: {name}: {counts} (first: {first[:160]})", file=sys.stderr)
