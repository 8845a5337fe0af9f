"""What the ``run``, ``report``, ``verify``, ``audit`` and ``cleanup`` commands do, once
the arguments are parsed: ``run`` as named steps (:func:`_run_command`), its
output folder (lock, key file, ``--resume``), and the errors of each as exit
codes (:mod:`arena.cli.errors`)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import itertools
import json
import os
import shlex
import stat
import sys
from collections.abc import Iterator, Sequence, Sized
from pathlib import Path
from typing import Any, Final

from arena.cli import competition
from arena.cli.config import given_on_command_line
from arena.cli.errors import (
    EXIT_ENVIRONMENT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    CliError,
)
from arena.cli.live import check_live_args, open_live
from arena.cli.options import Number, option_for
from arena.cli.settings import (
    check_launcher,
    fit_memory_limit,
    launch_options,
    read_run_file,
    say_memory_notes,
    tournament_settings,
)
from arena.cli.tools import conclude_run, prepare_run, run_verdict
from arena.core.keys import BadKeyError, MasterKey
from arena.protocol.records import FaultJSON, GameRecordJSON
from arena.report.outputs import GAMES_FILE, INDEX_FILE, RESULTS_FILE, RUN_FILE, write_outputs
from arena.report.runfile import write_run_file
from arena.report.verdict import ConditionError, parse_condition
from arena.seats import cgroups, seal
from arena.seats.entrants import (
    Entrant,
    EntrantError,
    describe,
    entrant_from_record,
    parse_entrants,
    remove_tmpdirs_of_run,
    sample_entrants,
)
from arena.seats.isolation import kill_all
from arena.seats.launcher import RUN_VARIABLE, Launcher, LaunchOptions
from arena.tournament.runner import (
    FORMAT_VERSION,
    MAX_SCHEDULED_GAMES,
    Games,
    Journal,
    ScheduleStream,
    TournamentSettings,
    iter_tables,
    read_journal,
    scheduled_games,
    settings_differences,
    settings_record,
)

#: Rough figures for ``--dry-run``'s estimate, measured with the sample bots
#: (see the README): hands in a game to 100, and seconds per decision and per
#: process start when bots answer at once.
HANDS_PER_GAME_TO_100 = 11.0
SECONDS_PER_FAST_DECISION = 0.0004
SECONDS_PER_PROCESS_START = 0.05


def _entrants(args: argparse.Namespace) -> list[Entrant]:
    """The run's entrants: the bots named on the command line, else those of
    ``--config`` or of the ``run.json`` being resumed (already typed), else
    the sample bots."""
    typed: list[Entrant] | None = getattr(args, "entrants", None)
    try:
        if args.bots:
            entrants = parse_entrants(args.bots)
        elif typed:
            entrants = typed  # --config's ``dir`` already applied
        else:
            entrants = sample_entrants()
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
    ``DIR/run.json`` (the key itself comes from ``DIR``'s key file, or
    ``--key-file``, as for any resume), and, when neither ``--fail-if`` nor
    ``--junit`` is given, the run's recorded ones. Settings that are given and differ
    from the record are refused later, by :func:`_prepare_out` (exit 3),
    naming both values.

    Raises:
        CliError: exit 3: ``run.json`` cannot be read or records an entrant
            without a usable command.
    """
    if not args.resume or args.bots or getattr(args, "config", None) is not None:
        return
    path = args.out / RUN_FILE
    if not path.exists():
        return  # refused with its own message by _prepare_out
    info = read_run_file(path)
    recorded: dict[str, Any] = info["settings"]
    given = given_on_command_line(argv)
    exclusive = {"hands", "target_score"}
    if "key_file" in given:
        given.add("seed")  # the key given replaces the recorded seed (checked against the record)
    for key, dest in _RECORDED_FLAGS.items():
        if key not in recorded or dest in given or (dest in exclusive and exclusive & given):
            continue
        setattr(args, dest, _in_bounds(dest, recorded[key], path))
    isolation = recorded.get("isolation")
    if isinstance(isolation, dict):
        limits = isolation.get("limits") or {}
        for key, dest in _RECORDED_LIMITS.items():
            if key in limits and dest not in given:
                setattr(args, dest, _in_bounds(dest, limits[key], path))
        if "sandbox" in isolation and "sandbox" not in given:
            args.sandbox = bool(isolation["sandbox"])  # recorded resolved: sealed or not
        if isinstance(isolation.get("tmp_mb"), int) and "tmp_size" not in given:
            args.tmp_size = _in_bounds("tmp_size", isolation["tmp_mb"], path)
        if isinstance(isolation.get("sandbox_ro"), list) and "sandbox_ro" not in given:
            args.sandbox_ro = [Path(str(p)) for p in isolation["sandbox_ro"]]
        if "separate_users" in isolation and "same_user" not in given:
            args.same_user = os.geteuid() == 0 and not isolation["separate_users"]
    if not given & {"fail_if", "junit"}:
        _restore_verdict_options(args, info.get("verdict"), path)
    try:
        args.entrants = [entrant_from_record(e) for e in recorded["entrants"]]
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


def verdict_record(args: argparse.Namespace) -> dict[str, Any]:
    """``run.json``'s ``verdict``: the run's ``--fail-if`` conditions (as given)
    and its ``--junit`` file (an absolute path, or ``None``), so that ``run
    --resume --out DIR`` alone judges the run as its first command would
    have. Not a setting: a resume may judge by other conditions."""
    junit: Path | None = getattr(args, "junit", None)
    return {
        "fail_if": [c.text for c in getattr(args, "fail_if", None) or []],
        "junit": str(junit.absolute()) if junit is not None else None,
    }


def _restore_verdict_options(args: argparse.Namespace, recorded: Any, path: Path) -> None:
    """Set ``--fail-if`` and ``--junit`` from ``run.json``'s ``verdict`` (see
    :func:`verdict_record`; absent in older files: nothing is set).

    Raises:
        CliError: exit 3: a recorded condition cannot be parsed.
    """
    if not isinstance(recorded, dict):
        return
    texts = recorded.get("fail_if")
    if isinstance(texts, list) and texts:
        try:
            args.fail_if = [parse_condition(str(t)) for t in texts]
        except ConditionError as exc:
            raise CliError(f"--resume: {path}: {exc}", EXIT_OUTPUT) from None
    junit = recorded.get("junit")
    if isinstance(junit, str) and junit:
        args.junit = Path(junit)


def _fit_jobs(
    args: argparse.Namespace, settings: TournamentSettings, chains: int | None
) -> TournamentSettings:
    """Fit ``--jobs`` to the open-files limit (see :mod:`arena.seats.descriptors`):
    the soft limit is raised as far as the games that can run at once need
    (at most ``chains``, the schedule's chains of games, when known), and
    when the hard limit is too low, fewer games run at once, said in one
    line on stderr. Games played here only (not with ``--executor dask``).
    Returns the settings with the ``jobs`` that fit.

    Raises:
        CliError: exit 4: not even one game fits.
    """
    if getattr(args, "executor", "local") != "local":
        return settings
    from arena.seats.descriptors import DescriptorLimitError, fit_jobs

    at_once = settings.jobs if chains is None else max(1, min(settings.jobs, chains))
    try:
        fit = fit_jobs(at_once)
    except DescriptorLimitError as exc:
        raise CliError(str(exc), EXIT_ENVIRONMENT) from None
    if fit.note is None:
        return settings
    print(fit.note, file=sys.stderr)
    return dataclasses.replace(settings, jobs=fit.jobs)


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


def _holds_tournament(out: Path) -> bool:
    return any((out / f).exists() for f in (GAMES_FILE, RESULTS_FILE, RUN_FILE))


def _prepare_out(args: argparse.Namespace, run_info: dict[str, Any]) -> list[GameRecordJSON]:
    """Check and prepare the output folder; return the records to resume from."""
    try:
        return _prepare_out_folder(args, run_info)
    except OSError as exc:
        raise CliError(
            f"cannot use the output folder {args.out}: {exc.strerror or exc}", EXIT_OUTPUT
        ) from None


def _prepare_out_folder(args: argparse.Namespace, run_info: dict[str, Any]) -> list[GameRecordJSON]:
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is a file, not a folder", EXIT_OUTPUT)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(
            f"cannot create the output folder {out}: {exc.strerror}", EXIT_OUTPUT
        ) from None
    if args.resume:
        run_path = out / RUN_FILE
        if not run_path.exists():
            raise CliError(
                f"--resume: {out} holds no tournament to resume ({RUN_FILE} is missing)",
                EXIT_OUTPUT,
            )
        old = read_run_file(run_path)
        if old.get("format_version") != FORMAT_VERSION:
            raise CliError(
                f"--resume: {out} was written by an older hearts-arena (format "
                f"{old.get('format_version', 1)}, this one writes {FORMAT_VERSION}); "
                "start it again with --overwrite",
                EXIT_OUTPUT,
            )
        diff = settings_differences(old["settings"], run_info["settings"])
        if diff:
            shown = [
                _difference(k, old["settings"].get(k), run_info["settings"].get(k)) for k in diff
            ]
            raise CliError(
                f"--resume: settings differ from the run in {out}: {'; '.join(shown)} "
                "(give only --out and --resume to continue it as recorded)",
                EXIT_OUTPUT,
            )
        names = [e["name"] for e in run_info["settings"]["entrants"]]
        try:
            return read_journal(out / GAMES_FILE, names)
        except (OSError, ValueError) as exc:
            raise CliError(f"--resume: {exc}", EXIT_OUTPUT) from None
    if _holds_tournament(out):
        if not args.overwrite:
            raise CliError(
                f"{out} already holds a tournament; "
                "use --overwrite to replace it or --resume to continue it",
                EXIT_OUTPUT,
            )
        for name in (GAMES_FILE, RESULTS_FILE, RUN_FILE, INDEX_FILE):
            (out / name).unlink(missing_ok=True)
    write_run_file(out / RUN_FILE, run_info)
    return []


def _difference(key: str, old: Any, new: Any) -> str:
    """``rounds: recorded 2, given 3`` (values cut to 60 characters; the
    entrants by name)."""
    if key == "entrants":
        old = [e.get("name") for e in old or [] if isinstance(e, dict)]
        new = [e.get("name") for e in new or [] if isinstance(e, dict)]
        if old == new:
            return "entrants: same names, other commands or folders"
    return f"{key}: recorded {json.dumps(old)[:60]}, given {json.dumps(new)[:60]}"


def _stored_run_info(args: argparse.Namespace) -> dict[str, Any] | None:
    path = args.out / RUN_FILE
    return read_run_file(path) if args.resume and path.exists() else None


def _stored_run_id(args: argparse.Namespace) -> str | None:
    info = _stored_run_info(args)
    value = info.get("run_id") if info else None
    return value if isinstance(value, str) else None


#: The master key of a run, in its output folder (owner-only, as the folder).
KEY_FILE: Final = "tournament.key"


def read_key_file(path: Path) -> MasterKey:
    """A master key from a file of 64 hexadecimal digits (``--key-file``,
    or a run's ``tournament.key``).

    Raises:
        CliError: (exit code 2) the file cannot be read or holds no key.
    """
    try:
        text = path.read_text(encoding="ascii", errors="strict")[:1000]
        return MasterKey.from_hex(text)
    except (OSError, UnicodeDecodeError, BadKeyError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"key file {path}: {reason}", EXIT_USAGE) from None


def check_key_file_private(path: Path) -> None:
    """Refuse a ``--key-file`` that users other than its owner may read (issue 11).

    An unsealed bot (``--no-sandbox``) reads the file's name on the arena's
    command line (``/proc/PID/cmdline`` is readable by every uid) and, if it
    may, the key in it, and with it every deal of the tournament.

    Raises:
        CliError: (exit code 2) the file's group or others may read it. A file
            that cannot be examined is left to :func:`read_key_file` to report.
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise CliError(
            f"key file {path} can be read by other users ({stat.filemode(mode)}), so bots "
            f"could read it: make it owner-only (chmod 600 {path})",
            EXIT_USAGE,
        )


def _master_key(args: argparse.Namespace) -> MasterKey:
    """The run's master key: from ``--key-file``, from ``--seed`` (public), from
    the output folder on ``--resume``, or drawn fresh (:mod:`arena.core.keys`)."""
    if getattr(args, "key_file", None) is not None and args.seed is not None:
        raise CliError("give --seed or --key-file, not both")
    if getattr(args, "key_file", None) is not None:
        check_key_file_private(args.key_file)
        return read_key_file(args.key_file)
    if args.seed is not None:
        return MasterKey.from_seed(args.seed)
    info = _stored_run_info(args)
    if info is not None:
        stored_seed = info["settings"].get("seed")
        if stored_seed is not None:
            return MasterKey.from_seed(stored_seed)
        path = args.out / KEY_FILE
        if not path.exists():
            raise CliError(
                f"--resume: the key of the run in {args.out} is missing ({KEY_FILE}); "
                "give it with --key-file",
                EXIT_OUTPUT,
            )
        return read_key_file(path)
    return MasterKey.generate()


def _write_key_file(out: Path, key: MasterKey) -> None:
    """Keep the key for ``--resume`` in the output folder, readable by its owner only."""
    path = out / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(key.hex() + "\n")


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


LOCK_FILE: Final = ".hearts-arena.lock"


@contextlib.contextmanager
def out_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output folder (created if needed) for
    the run, so that a second run on the same ``--out``, even with
    ``--overwrite``, is refused instead of destroying this one's games.

    Raises:
        CliError: (exit code 3) another run holds the folder, or it cannot be used.
    """
    try:
        if out.exists() and not out.is_dir():
            raise CliError(f"--out {out} is a file, not a folder", EXIT_OUTPUT)
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Owner-only: the key, run.json and the journal are no bot's business.
        os.chmod(out, 0o700)
    except OSError as exc:
        raise CliError(
            f"cannot create the output folder {out}: {exc.strerror or exc}", EXIT_OUTPUT
        ) from None
    try:
        # Owner-only: a bot running as another uid cannot open it to take the lock.
        fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)
    except OSError as exc:
        raise CliError(
            f"cannot use the output folder {out}: {exc.strerror or exc}", EXIT_OUTPUT
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CliError(
                f"another hearts-arena run is writing to {out}; wait for it or use another --out",
                EXIT_OUTPUT,
            ) from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_not_in_use(folder: Path) -> Iterator[None]:
    """For ``report``: hold the lock of a tournament folder (see
    :func:`out_lock`) if it has one, so that a run writing it now makes the
    report refuse and a run started meanwhile waits for nothing it could break.
    The folder is not created and needs no write access for the lock.

    Raises:
        CliError: (exit code 3) a run is writing to ``folder``.
    """
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no lock file: no run has ever held this folder
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CliError(
                f"a hearts-arena run is writing to {folder}; rebuild its report when the "
                "run has finished (the run writes it itself at the end)",
                EXIT_OUTPUT,
            ) from None
        yield
    finally:
        os.close(fd)


def run_command(args: argparse.Namespace) -> int:
    """``hearts-arena run``: see ``hearts-arena run --help``; returns the exit code.

    Files and folders the run creates are owner-only (umask 077 meanwhile)."""
    old_umask = os.umask(0o077)
    try:
        with contextlib.ExitStack() as stack:  # holds the output folder's lock
            return _run_command(args, stack)
    finally:
        os.umask(old_umask)


def _run_command(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    """The steps of ``run``: plan the games; start the launcher; take the
    output folder; say what the run is; play; write the outputs and judge."""
    plan = _plan(args)
    if args.dry_run:
        say_memory_notes(args)
        return _dry_run_plan(plan)
    old_run_id = _stored_run_id(args)  # resuming: the interrupted run's
    launcher = _start_launcher(args, plan, stack, old_run_id)
    settings_json = settings_record(
        plan.settings, describe(plan.entrants), {"isolation": launcher.options.describe()}
    )
    run_info = {
        "format_version": FORMAT_VERSION,
        "settings": settings_json,
        "games_total": plan.total,
        "run_id": launcher.options.run_id,
        "verdict": verdict_record(args),
    }
    folder = _take_out_folder(args, stack, run_info, launcher.options, plan.key)
    _announce(args, plan.key, launcher, folder.left_in_groups, old_run_id)
    played = _play(args, plan, launcher, settings_json, folder)
    return _finish(args, plan, settings_json, played)


@dataclasses.dataclass
class _Plan:
    """What a run plays, decided before any bot starts.

    Attributes:
        entrants: the run's entrants.
        key: its master key.
        settings: its settings (``jobs`` fitted to the open-files limit).
        games: the schedule, walked lazily (empty for a ladder, which
            chooses its games as it goes).
        total: the games announced: the schedule's, or a ladder's budget.
    """

    entrants: list[Entrant]
    key: MasterKey
    settings: TournamentSettings
    games: Sized
    total: int

    @property
    def names(self) -> list[str]:
        """The entrants' names."""
        return [e.name for e in self.entrants]

    @property
    def ladder(self) -> bool:
        """Whether the run is a ladder (``--format ladder``)."""
        return self.settings.format == "ladder"


def _plan(args: argparse.Namespace) -> _Plan:
    """Check the flags together and plan the run.

    Raises:
        CliError: exit 2: flags that do not go together, unusable entrants, a
            schedule too large; exit 3: see :func:`_master_key`; exit 4: see
            :func:`_fit_jobs` and :func:`arena.cli.competition.check_competition_args`.
    """
    if args.resume and args.overwrite:
        raise CliError("--resume and --overwrite cannot be used together")
    entrants = _entrants(args)
    names = [e.name for e in entrants]
    prepare_run(args, names)
    competition.check_competition_args(args)  # --format ladder, --executor dask
    check_live_args(args)
    key = _master_key(args)
    settings = tournament_settings(args, key)
    ladder = settings.format == "ladder"
    if not ladder and (n := scheduled_games(len(names), settings)) > MAX_SCHEDULED_GAMES:
        raise CliError(
            f"{n:,} games: more than {MAX_SCHEDULED_GAMES:,} in one tournament; "
            "use fewer --rounds, or --format ladder --games G for a large field",
            EXIT_USAGE,
        )
    # Walked lazily, never built whole; a ladder chooses its games as it goes.
    games: Sized = [] if ladder else ScheduleStream(names, settings)
    # Chains of games (a table's seating across the rounds) run at once at most.
    chains = None if ladder else max(1, len(games) // settings.rounds)
    settings = _fit_jobs(args, settings, chains)
    fit_memory_limit(args, settings.jobs, say=False)  # --jobs x 4 bots against the machine
    total = competition.games_total(settings, games)
    return _Plan(entrants, key, settings, games, total)


def _dry_run_plan(plan: _Plan) -> int:
    """``--dry-run``: print the plan (a ladder's budget, or the tables, game
    count and time estimate); exit 0."""
    if plan.ladder:
        competition.dry_run_ladder(plan.entrants, plan.settings)
        return EXIT_OK
    return _dry_run(plan.entrants, plan.settings, plan.games)


def _start_launcher(
    args: argparse.Namespace, plan: _Plan, stack: contextlib.ExitStack, old_run_id: str | None
) -> Launcher:
    """The run's checked launcher (closed by ``stack``), with the run id
    ``old_run_id`` (the interrupted run's, when resuming), else a new one.

    Raises:
        CliError: see :func:`arena.cli.settings.check_launcher`.
    """
    launcher = Launcher(launch_options(args, old_run_id))
    stack.callback(launcher.close)  # the entrants' copies of their folders
    check_launcher(launcher, plan.entrants)
    return launcher


@dataclasses.dataclass
class _Folder:
    """The output folder once taken (locked, prepared, the key written).

    Attributes:
        records: the games already played (``--resume``), else empty.
        left_in_groups: bot processes an earlier killed run left, killed.
        run_groups: the run's control groups, or ``None``.
        watchdog: the process that removes them if the arena dies, or ``None``.
    """

    records: list[GameRecordJSON]
    left_in_groups: int
    run_groups: cgroups.RunGroups | None
    watchdog: Any


def _take_out_folder(
    args: argparse.Namespace,
    stack: contextlib.ExitStack,
    run_info: dict[str, Any],
    launch: LaunchOptions,
    key: MasterKey,
) -> _Folder:
    """Lock the output folder for the run (held by ``stack``), prepare it
    (:func:`_prepare_out`), record the run's control groups and start their
    watchdog, and keep the key in it.

    Raises:
        CliError: exit 3: the folder is in use, cannot be written, or holds
            another tournament (see :func:`_prepare_out`).
    """
    # A killed arena's bots may hold the folder's lock: end them first.
    left_in_groups = _remove_groups_left(args.out)
    stack.enter_context(out_lock(args.out))
    records = _prepare_out(args, run_info)
    left_in_groups += _remove_groups_left(args.out)
    run_groups = launch.run_groups
    watchdog = None
    if run_groups is not None:
        _record_groups(args.out, run_groups.dirs())
        try:
            watchdog = cgroups.start_watchdog(run_groups.dirs())
        except OSError as exc:
            print(f"warning: no watchdog for the bots' groups: {exc}", file=sys.stderr)
    _write_key_file(args.out, key)
    return _Folder(records, left_in_groups, run_groups, watchdog)


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
        left = kill_all(env=f"{RUN_VARIABLE}={old_run_id}")
        if left:
            print(f"killed {left} bot processes left by the interrupted run", file=sys.stderr)
        remove_tmpdirs_of_run(old_run_id)


@dataclasses.dataclass
class _Played:
    """What the games left: every record kept, the games announced (a
    ladder's scheduled games once known), whether Ctrl-C stopped them, and
    the output folder's write errors."""

    records: list[GameRecordJSON]
    total: int
    interrupted: bool
    disk_errors: list[OSError]


def _play(
    args: argparse.Namespace,
    plan: _Plan,
    launcher: Launcher,
    settings_json: dict[str, Any],
    folder: _Folder,
) -> _Played:
    """Play the games not yet played, each journaled as it ends (``--live``
    page served meanwhile); then end every bot and folder the run made,
    whatever happened. Ctrl-C and a full disk stop the games and are
    reported in the result.

    Raises:
        CliError: exit 4 or 3, see :func:`arena.cli.competition.play_run`;
            exit 3: the journal cannot be opened.
    """
    out: Path = args.out
    settings, records, total = plan.settings, folder.records, plan.total
    done = {r["game_index"] for r in records}
    todo: Games = [] if plan.ladder else ScheduleStream(plan.names, settings, skip=done)
    if args.resume and not plan.ladder and not todo:
        print(f"--resume: all {len(plan.games)} games were already played", file=sys.stderr)
    already = len(records) if plan.ladder else len(plan.games) - len(todo)
    progress = _Progress(total, already, args.quiet)
    try:
        journal = Journal(out / GAMES_FILE)
    except OSError as exc:
        raise _output_error(out, exc) from None
    disk_errors: list[OSError] = []  # the output folder could not take a line

    def on_record(record: GameRecordJSON) -> None:
        # In memory first: a Ctrl-C between the two steps is mended by close().
        records.append(record)
        if disk_errors:  # stopping: the games still ending are played again by --resume
            return
        try:
            journal.append(record)  # whole line or nothing
        except OSError as exc:
            disk_errors.append(exc)
            raise _OutputFailed from None
        if live is not None:
            live.add_record(record)
        # On disk now; the report never reads transcripts (the largest part
        # of a record with --transcripts): the copy kept for it goes without.
        record.pop("transcripts", None)
        progress.update()

    interrupted = False
    live = open_live(args, settings_json, total, records, launcher.sealed)
    try:
        channel = live.channel if live is not None else None
        executor = competition.open_executor(args, plan.entrants, settings, launcher, channel)
        try:
            scheduled = competition.play_run(
                executor, plan.names, settings, todo, records, on_record
            )
        finally:
            competition.close_executor(executor)
        if scheduled is not None:  # a ladder: the games it chose
            total = scheduled
            try:
                competition.record_games_total(out, RUN_FILE, total)
            except OSError as exc:
                disk_errors.append(exc)
    except* KeyboardInterrupt:  # Ctrl-C, possibly inside Trio's exception groups
        interrupted = True
    except* _OutputFailed:  # a full disk: the bots are closed, the error said below
        pass
    finally:
        progress.close()
        try:
            journal.close(() if disk_errors else records)
        except OSError as exc:
            disk_errors.append(exc)
        if live is not None:
            live.close()  # after the delay, so the page ends on the last game
        _end_bots(out, launcher.options, folder)
    return _Played(records, total, interrupted, disk_errors)


def _end_bots(out: Path, launch: LaunchOptions, folder: _Folder) -> None:
    """End the bots and folders a killed or interrupted worker process left
    on this machine: the run's control groups (and their record in ``out``),
    their watchdog, every process carrying the run's id, its temporary folders."""
    left = 0
    if folder.run_groups is not None:
        left += cgroups.remove_run_dirs(folder.run_groups.dirs())
        with contextlib.suppress(OSError):
            (out / cgroups.RECORD_FILE).unlink()
    if folder.watchdog is not None:  # the groups are gone: nothing left to watch
        folder.watchdog.kill()
        folder.watchdog.wait()
    left += kill_all(env=f"{RUN_VARIABLE}={launch.run_id}")
    if left:
        print(f"killed {left} bot processes left by worker processes", file=sys.stderr)
    remove_tmpdirs_of_run(launch.run_id)


def _finish(
    args: argparse.Namespace, plan: _Plan, settings_json: dict[str, Any], played: _Played
) -> int:
    """Write the outputs (the key revealed unless interrupted), judge the run
    (``--fail-if``, ``--junit``), then print the standings; returns the exit
    code (0, 5 if a verdict failed, 130 if interrupted).

    Raises:
        CliError: exit 3: the output folder could not be written.
    """
    out: Path = args.out
    if played.disk_errors:
        raise _output_error(out, played.disk_errors[0])
    # Every file is written before anything is printed: a closed pipe on
    # stdout or stderr can then neither lose a file nor change the verdict.
    key = None if played.interrupted else plan.key.hex()
    try:
        results = write_outputs(out, settings_json, plan.names, played.records, played.total, key)
    except OSError as exc:
        raise _output_error(out, exc) from None
    verdict = None if played.interrupted else run_verdict(args, results, played.records)
    _print_standings(results, out)
    if verdict is None:
        print(
            f"interrupted: {results['games_played']} of {played.total} games kept; "
            f"continue with: {resume_command(out)}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    _warn_faults(played.records)
    return conclude_run(verdict)


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


class _OutputFailed(Exception):
    """A game's line could not be written to ``games.jsonl``: stop the run."""


def resume_command(out: Path) -> str:
    """The command line that continues the run in ``out`` (settings, entrants
    and verdict are read back from its ``run.json``), quoted for a shell."""
    return f"hearts-arena run --resume --out {shlex.quote(str(out))}"


def _output_error(out: Path, exc: OSError) -> CliError:
    """The one-line error (exit code 3) for an output folder that cannot be written."""
    kept = len(read_journal(out / GAMES_FILE, checked=False)) if (out / GAMES_FILE).exists() else 0
    return CliError(
        f"cannot write to the output folder {out}: {exc.strerror or exc}; {kept} games are "
        f"kept in {GAMES_FILE}: make room, then continue with: {resume_command(out)}",
        EXIT_OUTPUT,
    )


def _remove_groups_left(out: Path) -> int:
    """Kill and remove the control groups a run on ``out`` recorded, if the
    arena that recorded them is gone (killed); how many processes were killed."""
    if not out.is_dir() or cgroups.recorded_arena_alive(out):
        return 0
    return cgroups.remove_recorded(out)


def _record_groups(out: Path, dirs: list[Path]) -> None:
    try:
        cgroups.record_run(out, dirs)
    except OSError as exc:
        raise CliError(
            f"cannot write to the output folder {out}: {exc.strerror or exc}", EXIT_OUTPUT
        ) from None


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


def _print_standings(results: dict[str, Any], out: Path) -> None:
    from arena.report.terminal import standings_table

    print("\n".join(standings_table(results["standings"])))
    verdict = (results.get("confidence") or {}).get("verdict") or {}
    if verdict.get("text"):  # the report's sentence: is the top settled?
        print(verdict["text"])
    print(
        f"{results['games_played']} of {results['games_total']} games; report: {out / INDEX_FILE}"
    )


def report_command(args: argparse.Namespace) -> int:
    """``hearts-arena report DIR``: rebuild ``results.json`` and the HTML from
    ``run.json`` and ``games.jsonl`` without replaying a game."""
    folder: Path = args.folder
    run_path = folder / RUN_FILE
    if not run_path.exists():
        raise CliError(f"{folder} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    with folder_not_in_use(folder):
        return _report(folder, run_path)


def _report(folder: Path, run_path: Path) -> int:
    results = rebuild_report(folder, run_path)
    _print_standings(results, folder)
    return EXIT_OK


def rebuild_report(folder: Path, run_path: Path) -> dict[str, Any]:
    """Rewrite ``results.json``, ``standings.csv`` and the HTML of ``folder``
    from its ``run.json`` and ``games.jsonl`` (and ``audit.json`` where the
    audit wrote one); returns the results.

    Raises:
        CliError: (exit code 3) the journal cannot be read or shown.
    """
    run_info = read_run_file(run_path)
    names = [e["name"] for e in run_info["settings"]["entrants"]]
    try:
        records = read_journal(folder / GAMES_FILE, names)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
    key_path = folder / KEY_FILE
    key = read_key_file(key_path).hex() if key_path.exists() else None
    try:
        results = write_outputs(
            folder, run_info["settings"], names, records, run_info["games_total"], key
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CliError(
            f"{folder / GAMES_FILE} holds a game this version cannot show "
            f"({type(exc).__name__}: {str(exc)[:200]})",
            EXIT_OUTPUT,
        ) from None
    return results


def verify_command(args: argparse.Namespace) -> int:
    """``hearts-arena verify DIR``: check a finished tournament's deals, seeds
    and hands against its revealed key (:mod:`arena.tools.verify`). Exit 0 if all
    holds, 5 with one line per problem if not, 3 if the folder cannot be verified."""
    from arena.tools.verify import MAX_PROBLEMS, VerifyError, verify_folder

    folder: Path = args.folder
    if not (folder / RUN_FILE).exists():
        raise CliError(f"{folder} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    try:
        games, problems = verify_folder(folder)
    except VerifyError as exc:
        raise CliError(f"verify: {exc}", EXIT_OUTPUT) from None
    if problems:
        for line in problems[:MAX_PROBLEMS]:
            print(f"FAIL {line}")
        if len(problems) > MAX_PROBLEMS:
            print(f"... and {len(problems) - MAX_PROBLEMS} more")
        noun = "problem" if len(problems) == 1 else "problems"
        print(f"verify: {len(problems)} {noun} in {games} games of {folder}")
        return EXIT_FAILED
    print(
        f"verified: {games} games of {folder}: the key matches its commitment, and every "
        "deal, bot seed and hand is the one the key and the rules give"
    )
    return EXIT_OK


def audit_command(args: argparse.Namespace) -> int:
    """``hearts-arena audit DIR``: the audit of :mod:`arena.tools.audit`; exit 0
    when no entrant is flagged, 5 when one is, 3 when DIR cannot be audited."""
    from arena.tools.audit import AuditError, audit, load_run, table_text, write_audit

    try:
        run = load_run(args.folder)
    except AuditError as exc:
        raise CliError(f"audit: {exc}", EXIT_OUTPUT) from None
    bar: Any = None

    def total(n: int) -> None:
        nonlocal bar
        if sys.stderr.isatty() and not args.json:
            from tqdm import tqdm

            bar = tqdm(total=n, unit="decision", desc="audit", dynamic_ncols=True)

    def progress(n: int) -> None:
        if bar is not None:
            bar.update(n)

    try:
        result = audit(
            run,
            alpha=args.alpha,
            decisions=args.decisions,
            budget=args.budget,
            jobs=args.jobs,
            progress=progress,
            on_total=total,
        )
    except (AuditError, ValueError) as exc:
        raise CliError(f"audit: {exc}", EXIT_OUTPUT) from None
    finally:
        if bar is not None:
            bar.close()
    if not args.no_write:
        try:
            write_audit(args.folder, result)
        except OSError as exc:
            raise CliError(f"audit: cannot write into {args.folder}: {exc}", EXIT_OUTPUT) from None
        # The report's Fair play section (the key file keeps results.json's key).
        if (args.folder / "index.html").exists() and (args.folder / "tournament.key").exists():
            with folder_not_in_use(args.folder):
                rebuild_report(args.folder, args.folder / "run.json")
    if args.json:
        print(json.dumps(result.to_json(), indent=1, sort_keys=True))
    else:
        print(table_text(result))
    return EXIT_FAILED if result.flagged else EXIT_OK


def cleanup_command(args: argparse.Namespace) -> int:
    """``hearts-arena cleanup DIR``: end everything a killed run on ``DIR`` left
    on this machine: its bots' control groups (thawed, then killed, then
    removed), any bot process still carrying the run's id in its environment,
    and the bots' temporary folders; also the copies of the package for bots
    (:func:`arena.seats.seal.bot_package_parent`) of any arena that is gone.
    Refuses while the run is still going.

    Raises:
        CliError: (exit code 3) ``DIR`` holds no tournament, or its run is
            still going.
    """
    out: Path = args.folder
    if not (out / RUN_FILE).exists() and not (out / cgroups.RECORD_FILE).exists():
        raise CliError(f"{out} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    if cgroups.recorded_arena_alive(out):
        raise CliError(f"the run writing to {out} is still going; stop it first", EXIT_OUTPUT)
    killed = _remove_groups_left(out)
    with out_lock(out):  # refused if a run (without a record) still holds it
        killed += _remove_groups_left(out)
        run_id = None
        if (out / RUN_FILE).exists():
            value = read_run_file(out / RUN_FILE).get("run_id")
            run_id = value if isinstance(value, str) and value.isalnum() else None
        if run_id:
            killed += kill_all(env=f"{RUN_VARIABLE}={run_id}")
            remove_tmpdirs_of_run(run_id)
    copies = seal.remove_package_copies_of_dead_arenas()
    print(f"cleanup: killed {killed} bot processes left by the run in {out}")
    if copies:
        print(f"cleanup: removed {copies} package copies left by arenas that are gone")
    return EXIT_OK
