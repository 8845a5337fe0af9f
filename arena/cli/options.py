"""Every option of ``run``, declared once, in one table (:data:`RUN_OPTIONS`).

The table is read twice: by the argument parser (:func:`add_run_options`)
and by the ``--config`` TOML reader (:mod:`arena.cli.config`, through
:func:`option_for`, :meth:`Option.convert` and :func:`exclusive_partners`), so
a flag and its file key share one name, one type, one check and one default.
The tools (``check``, ``replay``, ``play``) and ``watch`` take some of the
same options from this table (:meth:`Option.add_to`, with their own help or
default where their meaning differs).

Defaults have one home each: the settings class that owns them
(:class:`~arena.game.settings.RefereeSettings` for the time limits, strikes
and transcript cap; :class:`~arena.tournament.settings.TournamentSettings` for
rounds, seating, length and format; :class:`~arena.run.options.Limits`
and :class:`~arena.run.options.LaunchOptions` for the bots' bounds), read
here with :func:`field_default`. Those modules load no Trio, NumPy or
launcher, so building the parser (``--help``, ``--version``) stays cheap
(``tests/cli/test_lazy_imports.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

from arena.cli.errors import EXIT_USAGE, CliError
from arena.core.rules import MAX_TIEBREAK_HANDS
from arena.game.settings import RefereeSettings
from arena.report.verdict import Condition, ConditionError, parse_condition
from arena.run.options import LaunchOptions, Limits
from arena.tournament.settings import EXECUTORS, FORMATS, MAX_SCHEDULED_GAMES, TournamentSettings


def arg(args: argparse.Namespace, dest: str, default: Any = None) -> Any:
    """The value of flag ``dest`` in ``args``, or ``default`` when the
    command has no such flag (the tools share code with ``run`` but not all
    its flags). The one place the command line reads a flag that may be absent."""
    return getattr(args, dest, default)


def field_default(cls: type, name: str) -> Any:
    """The default of field ``name`` of dataclass ``cls`` (its ``default``,
    or what its ``default_factory`` makes), without making an instance.

    Raises:
        KeyError: ``cls`` has no such field, or it has no default.
    """
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            break
    raise KeyError(f"{cls.__name__}.{name} has no default")


# -- argparse types: each turns the flag's text into its value, or says why not ---------


#: The largest value of a 32-bit signed integer: what bots in most languages
#: read a JSON integer into (``time_ms``, scores, counts).
INT32_MAX: Final = 2**31 - 1
#: The largest value of a 64-bit signed integer (``--seed``; the kernel's
#: limits: a control group's byte counts, ``setrlimit``).
INT64_MAX: Final = 2**63 - 1
#: Seconds a time option may give: ``time_ms`` (its milliseconds, sent to the
#: bot) is 1 to 2**31 - 1.
MIN_SECONDS: Final = 0.001
MAX_SECONDS: Final = INT32_MAX / 1000


#: Points of a hand at most (R11): totals must fit ``INT32_MAX`` (R13's tie-break hands too).
@dataclass(frozen=True)
class Number:
    """An argparse type (and ``--config`` check): a number from ``low`` to
    ``high``, both included, with its unit for the error. Every numeric
    option has one, so a value the arena accepts is one the protocol
    (32-bit integers for bots in other languages) and the machine (the
    kernel's limits, Trio's clock) can carry; anything else is a usage
    error of one line (exit 2).

    Attributes:
        low, high: the bounds, included.
        integer: an integer (``int``) rather than a finite ``float``.
        unit: the unit named in the error ("seconds", "MiB"), or "".
        why: why ``high`` is the most, said in the error ("time_ms is a
            32-bit integer"), or "".
    """

    low: float
    high: float
    integer: bool = True
    unit: str = ""
    why: str = ""

    @property
    def __name__(self) -> str:  # argparse names the type in some messages
        return "integer" if self.integer else "number"

    def __call__(self, text: str) -> Any:
        """``text`` as a number within the bounds.

        Raises:
            argparse.ArgumentTypeError: not a number, or out of bounds (one line).
        """
        try:
            value: float = int(text) if self.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not {'an integer' if self.integer else 'a number'}: {text[:40]!r}"
            ) from None
        if self.integer and self.low <= value <= self.high:
            return value
        if not self.integer and math.isfinite(value) and self.low <= value <= self.high:
            return value
        if math.isfinite(value) and value > self.high:
            why = f" ({self.why})" if self.why else ""
            raise argparse.ArgumentTypeError(
                f"must be at most {self._show(self.high)}, got {text[:40]}{why}"
            )
        raise argparse.ArgumentTypeError(self._below(text, value))

    def _show(self, value: float) -> str:
        shown = f"{value:d}" if self.integer else f"{value:.3f}".rstrip("0").rstrip(".")
        return f"{shown} {self.unit}" if self.unit else shown

    def _below(self, text: str, value: float) -> str:
        # The wording of the types these replace (kept: messages are matched).
        if not self.integer and 0 < value < self.low:
            return f"must be at least {self._show(self.low)}, got {text[:40]}"
        if self.integer and self.low in (0, 1):
            return f"must be {'0 or more' if self.low == 0 else 'at least 1'}, got {text[:40]}"
        if not self.integer and self.unit == "seconds" and self.low > 0:
            return f"must be a positive number of seconds, got {text[:40]!r}"
        if not self.integer and self.low > 0:
            return f"must be a positive number, got {text[:40]!r}"
        return f"must be {self.describe()}, got {text[:40]}"

    def describe(self) -> str:
        """The range in words: ``1 to 2147483647``, ``0.001 to 2147483.647 seconds``."""
        low = self._show(self.low).removesuffix(f" {self.unit}")
        return f"{low} to {self._show(self.high)}"


def seconds(*, low: float = MIN_SECONDS, high: float = MAX_SECONDS, why: str = "") -> Number:
    """A number of seconds; by default one whose milliseconds fit ``time_ms``."""
    why = why or "its milliseconds, time_ms, are a 32-bit integer"
    return Number(low, high, integer=False, unit="seconds", why=why)


def count(low: int = 1, high: int = INT32_MAX, unit: str = "", why: str = "") -> Number:
    """An integer from ``low`` to ``high`` (default: one a 32-bit integer holds)."""
    why = why or ("" if high != INT32_MAX else "a 32-bit integer")
    return Number(low, high, unit=unit, why=why)


#: The argparse types of the most common kinds (kept by name for callers).
positive_float: Final = seconds()
positive_int: Final = count(1)
nonnegative_int: Final = count(0)


_TOTAL_WHY: Final = "scores are 32-bit integers"
#: ``--hands``: 26 points a hand (R11) at most, totals within ``INT32_MAX``.
HANDS_TYPE: Final = Number(1, INT32_MAX // 26, why=_TOTAL_WHY)
#: ``--target-score``: a total may pass it by a hand and R13's tie-break hands.
TARGET_TYPE: Final = Number(1, INT32_MAX - 26 * (1 + MAX_TIEBREAK_HANDS), why=_TOTAL_WHY)
#: ``--games``: a run has at most this many games (a record's ``game_index``).
GAMES_TYPE: Final = Number(1, MAX_SCHEDULED_GAMES, why="a run has at most 10^9 games")
#: ``--rounds``: a round has at least one table of four games.
ROUNDS_TYPE: Final = Number(1, MAX_SCHEDULED_GAMES // 4, why="a run has at most 10^9 games")
#: ``--jobs``: games in flight at once (each holds four bot processes).
JOBS_TYPE: Final = Number(1, 1024, why="each game in flight holds four bot processes")
#: ``--cores``: core tokens (each is a file every bot start may open).
CORES_TYPE: Final = Number(0, 1024, why="one token file per core")
#: ``--tmp-size``: MiB of a tmpfs (1 TiB at most).
TMP_TYPE: Final = Number(1, 2**20, unit="MiB", why="1 TiB")
#: ``--memory-limit``: MiB whose bytes fit the kernel's 64-bit limits.
MEMORY_TYPE: Final = Number(0, INT64_MAX >> 20, unit="MiB", why="its bytes must fit 64 bits")
#: ``--cpu-limit``: CPU seconds (RLIMIT_CPU).
CPU_TYPE: Final = Number(0, INT32_MAX, unit="seconds", why="a 32-bit integer")
#: ``--max-processes``: the kernel's most process ids (``pid_max`` at most 2**22).
PROCESSES_TYPE: Final = Number(1, 2**22, why="the kernel's most process ids")
#: ``--max-open-files``: the kernel's default most open files (``fs.nr_open``).
OPEN_FILES_TYPE: Final = Number(1, 2**20, why="the kernel's default fs.nr_open")
#: ``--seed``: a 64-bit signed integer (what JSON readers of run.json hold).
SEED_TYPE: Final = Number(-(2**63), INT64_MAX, why="a 64-bit integer")
#: ``--ladder-batch``: tables per snapshot (a run has at most 10^9 / 4 tables).
BATCH_TYPE: Final = Number(1, MAX_SCHEDULED_GAMES // 4, why="a run has at most 10^9 games")


def output_file(text: str) -> Path:
    """A file the arena will write (``--junit``): refused at once when it is
    empty, an existing folder, or under a file."""
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
    """``--out``: any path but an empty one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a folder name")
    return Path(text)


#: ``--sigma-target``: a TrueSkill sigma (they start at 8.33; a larger target stops at once).
sigma: Final = Number(0.001, 1000.0, integer=False)
#: ``--live-delay``: 0 to an hour.
delay: Final = Number(0, 3600, integer=False, unit="seconds")


def pace(text: str) -> float:
    """0 to 3600 seconds (``--pace``; 0: off)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"a pace is 0..3600 seconds, got {text!r}")
    return value


def wall_cap(text: str) -> float:
    """1 to 100, a multiple of the time limit (``--wall-cap``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(
            f"a wall-clock cap is 1..100 times the time limit, got {text!r}"
        )
    return value


def condition(text: str) -> Condition:
    """A ``--fail-if`` condition (:func:`arena.report.verdict.parse_condition`)."""
    try:
        return parse_condition(text)
    except ConditionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--fail-if {text!r}: ")) from None


# -- the table -------------------------------------------------------------------


class _Keep:
    """The marker of :meth:`Option.add_to`'s "as declared"."""


KEEP: Final = _Keep()


@dataclass(frozen=True)
class Option:
    """One command-line option (or positional argument) and its file key.

    Attributes:
        flags: the option strings (``("--time-limit",)``); empty for a positional.
        dest: the attribute of the parsed arguments, and the ``--config`` key
            (with ``_`` or ``-``).
        help: the ``--help`` text.
        type: turns the flag's text into its value (an argparse type).
        default: the value when not given (a callable is called when the
            parser is built: ``--jobs``' default is the machine's cores).
        action: ``None`` (a value), ``"store_true"``, ``"store_false"`` or
            ``"append"`` (repeatable).
        choices: the values allowed, or ``None``.
        metavar: the value's name in ``--help``.
        nargs: for a positional, ``"*"`` or ``"?"``.
        group: the ``--help`` section, or ``None`` for the command's own list.
        exclusive: options sharing this name are mutually exclusive.
        in_file: whether a ``--config`` file may set it.
        only_format: the ``--format`` the option belongs to, or ``None`` (a
            command line naming another format drops it from a ``--config``
            file: :data:`arena.cli.config.FORMAT_OPTIONS`).
    """

    flags: tuple[str, ...]
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    action: str | None = None
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    nargs: str | None = None
    group: str | None = None
    exclusive: str | None = None
    in_file: bool = True
    only_format: str | None = None

    def arguments(self, *, default: Any = KEEP, help: str | None = None) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` (``default`` and
        ``help`` replaced when given)."""
        value = self.default if default is KEEP else default
        if callable(value) and default is KEEP:
            value = value()
        kwargs: dict[str, Any] = {"help": self.help if help is None else help}
        if self.flags or value is not None:  # a positional without one stays as argparse makes it
            kwargs["default"] = value
        if self.flags and self.dest != self.flags[0].lstrip("-").replace("-", "_"):
            kwargs["dest"] = self.dest
        if self.action is not None:
            kwargs["action"] = self.action
        for name in ("type", "choices", "metavar", "nargs"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        return kwargs

    def add_to(
        self, parser: Any, *, default: Any = KEEP, help: str | None = None, **extra: Any
    ) -> None:
        """Declare the option on ``parser`` (a parser, an argument group or a
        mutually exclusive group); ``extra`` goes to ``add_argument`` as it is."""
        kwargs = self.arguments(default=default, help=help) | extra
        if self.flags:
            parser.add_argument(*self.flags, **kwargs)
        else:
            parser.add_argument(self.dest, **kwargs)

    @property
    def is_switch(self) -> bool:
        """Whether the option takes no value (``true`` or ``false`` in a file)."""
        return self.action in ("store_true", "store_false")

    def convert(self, value: Any, where: str, base: Path) -> Any:
        """Check and convert one ``--config`` value as the parser would the
        flag's text; a relative path is taken from ``base`` (the file's folder).

        Raises:
            CliError: exit 2, ``where: problem`` (a wrong TOML type, a value
                the flag's type refuses, a value not among its choices).
        """
        if self.is_switch:
            if not isinstance(value, bool):
                raise CliError(f"{where}: must be true or false, got {value!r}")
            return value
        if self.action == "append":
            items = value if isinstance(value, list) else [value]
            return [self._one(v, f"{where}[{i}]", base) for i, v in enumerate(items)]
        return self._one(value, where, base)

    def _one(self, value: Any, where: str, base: Path) -> Any:
        if isinstance(value, bool | list | dict):
            raise CliError(f"{where}: must be a number or text, got {value!r}")
        try:
            result = self.type(str(value)) if self.type is not None else str(value)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise CliError(f"{where}: {exc}") from None
        if self.choices is not None and result not in self.choices:
            choices = ", ".join(map(str, self.choices))
            raise CliError(f"{where}: must be one of {choices}, got {value!r}")
        if isinstance(result, Path) and not result.is_absolute():  # relative to the file
            result = Path(os.path.normpath(base / result))
        return result


_REFEREE: Final = RefereeSettings()
_TOURNAMENT: Final = TournamentSettings()
_LIMITS: Final = Limits()

ISOLATION: Final = "running untrusted bots"
CI: Final = "formats and CI verdicts"
BIG: Final = "large competitions (--format ladder, --executor dask)"
LIVE: Final = "the live view"

TIME_LIMIT: Final = Option(
    ("--time-limit",), "time_limit", f"seconds per decision (default {_REFEREE.time_limit})",
    type=positive_float, default=_REFEREE.time_limit,
)  # fmt: skip
STARTUP_TIME: Final = Option(
    ("--startup-time",), "startup_time",
    f"seconds for the handshake (default {_REFEREE.startup_time:g})",
    type=positive_float, default=_REFEREE.startup_time,
)  # fmt: skip
STRIKES: Final = Option(
    ("--strikes",), "strikes",
    f"consecutive timeouts before a seat is struck out (default {_REFEREE.strikes}; 0: never)",
    type=nonnegative_int, default=_REFEREE.strikes,
)  # fmt: skip
PACE: Final = Option(
    ("--pace",), "pace",
    "deliver each decision's result (the card, the next request to every seat) no "
    "earlier than this many seconds after it was asked, so that how long a bot took "
    "cannot be timed by the others (a timing channel between colluding bots; "
    "docs/security.md); above --time-limit x --wall-cap it closes the channel "
    "(default 0: off)",
    type=pace, default=_REFEREE.pace, metavar="SECONDS",
)  # fmt: skip
WALL_CAP: Final = Option(
    ("--wall-cap",), "wall_cap",
    "with CPU accounting, --time-limit is counted in the bot's CPU time while it is "
    "runnable, so a bot the machine's other load kept from its core gets its time, "
    f"up to this many times --time-limit of wall time (default {_REFEREE.wall_cap:g}; "
    "1: wall time only)",
    type=wall_cap, default=_REFEREE.wall_cap, metavar="FACTOR",
)  # fmt: skip
TARGET_SCORE: Final = Option(
    ("--target-score",), "target_score",
    f"play games to this total (default {_TOURNAMENT.target_score}, R13)",
    type=TARGET_TYPE, exclusive="length",
)  # fmt: skip
HANDS: Final = Option(
    ("--hands",), "hands", "play exactly this many hands per game",
    type=HANDS_TYPE, exclusive="length",
)  # fmt: skip
SEED: Final = Option(
    ("--seed",), "seed",
    "a public seed every random choice derives from, for reproducible runs: anyone "
    "who knows it can compute every deal (default: a secret 256-bit key is drawn)",
    type=SEED_TYPE,
)  # fmt: skip
JUNIT: Final = Option(
    ("--junit",), "junit",
    "write JUnit XML: one test case per entrant judged (a gauntlet's candidate, "
    "else each), failed iff a --fail-if holds for it (none given: faults>0)",
    type=output_file, metavar="FILE", group=CI,
)  # fmt: skip
LIVE_ADDRESS: Final = Option(
    ("--live",), "live",
    "serve a spectator's page of the tournament on this port (host 127.0.0.1 "
    "unless given; 0: any free port); its address is printed, with an access token "
    "when the host is not loopback or bots run without --sandbox",
    metavar="[HOST:]PORT", group=LIVE,
)  # fmt: skip
LIVE_DELAY: Final = Option(
    ("--live-delay",), "live_delay", "hold the live view back by S seconds (default 0)",
    type=delay, default=0.0, metavar="S", group=LIVE,
)  # fmt: skip

#: How bots are run (user, sandbox, limits): ``run``, ``check``, ``replay`` and ``play``.
ISOLATION_OPTIONS: Final = (
    Option(
        ("--no-sandbox",), "sandbox",
        "do not seal bots (by default each bot runs sealed in bubblewrap where it can: "
        "no network, no other process or bot's files, private /tmp)",
        action="store_false", group=ISOLATION,
    ),
    Option(
        ("--sandbox",), "sandbox",
        "require the seal: refuse to start (exit 4) where bots cannot be sealed",
        action="store_true", default=False, group=ISOLATION,
    ),
    Option(
        ("--sandbox-ro",), "sandbox_ro",
        "bind PATH read-only into every sealed bot (a runtime outside /usr); repeatable",
        action="append", type=Path, default=lambda: [], metavar="PATH", group=ISOLATION,
    ),
    Option(
        ("--tmp-size",), "tmp_size",
        "size of a sealed bot's private /tmp and of its /dev/shm, each "
        f"(default {field_default(LaunchOptions, 'tmp_mb')})",
        type=TMP_TYPE, default=field_default(LaunchOptions, "tmp_mb"), metavar="MIB",
        group=ISOLATION,
    ),
    Option(
        ("--same-user",), "same_user",
        "when the arena runs as root, run bots as root too (not one unprivileged uid each)",
        action="store_true", default=False, group=ISOLATION,
    ),
    Option(
        ("--memory-limit",), "memory_limit",
        "memory per bot in MiB: for the bot as a whole where a memory control group "
        f"binds, else address space per process (default {_LIMITS.memory_mb}, lowered to "
        "fit --jobs x 4 bots in the machine's memory; 0: none)",
        type=MEMORY_TYPE, default=None, metavar="MIB", group=ISOLATION,
    ),
    Option(
        ("--stderr-limit",), "stderr_limit",
        "KiB of a bot's stderr read per game; past it the rest of the game's stderr is "
        f"discarded unread and counted in the record (default {_LIMITS.stderr_kib}; 0: none)",
        type=nonnegative_int, default=_LIMITS.stderr_kib, metavar="KIB", group=ISOLATION,
    ),
    Option(
        ("--cpu-limit",), "cpu_limit",
        f"CPU seconds per bot process and game (default {_LIMITS.cpu_seconds}; 0: none)",
        type=CPU_TYPE, default=_LIMITS.cpu_seconds, metavar="SECONDS", group=ISOLATION,
    ),
    Option(
        ("--max-processes",), "max_processes",
        f"processes and threads per bot (default {_LIMITS.processes}; a pids control group, "
        "else binds only unprivileged bot users)",
        type=PROCESSES_TYPE, default=_LIMITS.processes, metavar="N", group=ISOLATION,
    ),
    Option(
        ("--cores",), "cores",
        "bots thinking at once across all games; a decision's clock starts when its bot "
        "gets a core (default 0: the machine's cores)",
        type=CORES_TYPE, default=field_default(LaunchOptions, "cores"), metavar="N",
        group=ISOLATION,
    ),
    Option(
        ("--ponder",), "ponder",
        "let bots think on others' time (by default a bot not on move is frozen)",
        action="store_true", default=False, group=ISOLATION,
    ),
    Option(
        ("--max-open-files",), "max_open_files",
        f"open files per bot process (default {_LIMITS.open_files})",
        type=OPEN_FILES_TYPE, default=_LIMITS.open_files, metavar="N", group=ISOLATION,
    ),
)  # fmt: skip

#: Every option of ``run``, in ``--help`` order.
RUN_OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        (), "bots", "a program file, a .py file, or NAME=COMMAND; none: the four sample bots",
        nargs="*", metavar="BOT", in_file=False,
    ),
    Option(
        ("--rounds",), "rounds", f"rounds (default {_TOURNAMENT.rounds})",
        type=ROUNDS_TYPE, default=_TOURNAMENT.rounds,
    ),
    Option(
        ("--seating",), "seating",
        "seatings of each table per round: the 4 rotations (default) or all 24 "
        "seat permutations, so each entrant meets every order of neighbours",
        choices=("rotations", "full"), default=_TOURNAMENT.seating,
    ),
    SEED,
    Option(
        ("--key-file",), "key_file",
        "the tournament's master key (64 hexadecimal digits, as results.json reveals "
        "it), to play a tournament again exactly",
        type=Path, metavar="FILE",
    ),
    TARGET_SCORE,
    HANDS,
    TIME_LIMIT,
    STARTUP_TIME,
    STRIKES,
    PACE,
    WALL_CAP,
    Option(
        ("--disqualify-after",), "disqualify_after",
        "rank an entrant with N or more faults in the tournament after every other "
        "(marked in the report, standings.csv and results.json; its games still count "
        "for the others); default: off",
        type=positive_int, metavar="N",
    ),
    Option(
        ("--jobs",), "jobs", "games in flight at once (default: the number of cores)",
        type=JOBS_TYPE, default=lambda: os.cpu_count() or 1,
    ),
    Option(
        ("--fresh-processes",), "fresh_processes", "start new bot processes for every game",
        action="store_true", default=False,
    ),
    Option(
        ("--drop-kernel-caches",), "drop_kernel_caches",
        "as root, also drop the machine's dentry and inode caches each time the page "
        "cache is made to forget between an entrant's games of one deal (closes the "
        "store a bot can leave in names it looked up; see docs/competitions.md)",
        action="store_true", default=False,
    ),
    Option(
        ("--transcripts",), "transcripts",
        "record every message sent and received per seat", action="store_true", default=False,
    ),
    Option(
        ("--out",), "out", "output folder (default reports/)",
        type=output_folder, default=Path("reports"),
    ),
    Option(
        ("--overwrite",), "overwrite", "replace a tournament already in --out",
        action="store_true", default=False,
    ),
    Option(
        ("--resume",), "resume", "continue the tournament in --out from its games.jsonl",
        action="store_true", default=False,
    ),
    Option(
        ("--dry-run",), "dry_run",
        "print the tables, game count and a time estimate; play nothing",
        action="store_true", default=False,
    ),
    Option(("--quiet",), "quiet", "no progress display", action="store_true", default=False),
    *ISOLATION_OPTIONS,
    Option(
        ("--format",), "format",
        "round-robin: every table of four (default); gauntlet: only the tables "
        "that include --candidate"
        + ("; ladder: tables chosen from the ratings (--games)" if "ladder" in FORMATS else ""),
        choices=FORMATS, default=_TOURNAMENT.format, group=CI,
    ),
    Option(
        ("--candidate",), "candidate",
        "the entrant a gauntlet is about (every table includes it; --fail-if judges it)",
        metavar="NAME", group=CI, only_format="gauntlet",
    ),
    Option(
        ("--fail-if",), "fail_if",
        "exit with code 5 if METRIC OP VALUE holds for the candidate (gauntlet) or "
        "any entrant, e.g. 'faults>0', 'points_per_hand>low' (another entrant's value), "
        "'mean_rank>2.5'; repeatable (see the README, 'Testing your bot in CI')",
        action="append", type=condition, metavar="CONDITION", group=CI,
    ),
    JUNIT,
    Option(
        ("--config",), "config",
        "read entrants and settings from a TOML file (flags given override it; "
        "see examples/tournament.toml)",
        type=Path, metavar="FILE", group=CI, in_file=False,
    ),
    Option(
        ("--transcript-cap",), "transcript_cap",
        f"with --transcripts: most messages kept per seat and game (default "
        f"{_REFEREE.transcript_cap}, about 22 hands; a hand is about 44 messages)",
        type=positive_int, default=_REFEREE.transcript_cap, metavar="N", group=CI,
    ),
    Option(
        ("--games",), "games",
        "--format ladder: play at most G games (whole tables of 4 games: one deal "
        "in its 4 seat rotations)",
        type=GAMES_TYPE, metavar="G", group=BIG, only_format="ladder",
    ),
    Option(
        ("--sigma-target",), "sigma_target",
        "--format ladder: stop early once every entrant's TrueSkill sigma is below "
        "SIGMA (checked between batches; the start is 8.33)",
        type=sigma, metavar="SIGMA", group=BIG, only_format="ladder",
    ),
    Option(
        ("--ladder-batch",), "ladder_batch",
        f"--format ladder: tables chosen at a time from one snapshot of the ratings "
        f"(default {_TOURNAMENT.ladder_batch}; part of the tournament, so independent "
        "of --jobs)",
        type=BATCH_TYPE, metavar="TABLES", group=BIG, only_format="ladder",
    ),
    Option(
        ("--executor",), "executor",
        "where games are played: local (default) or dask (a Dask distributed "
        "cluster; needs pip install 'hearts-arena[dask]')",
        choices=EXECUTORS, default="local", group=BIG,
    ),
    Option(
        ("--scheduler",), "scheduler",
        "--executor dask: the scheduler's address, e.g. tcp://10.0.0.5:8786 "
        "(default: start a local cluster of --jobs workers)",
        metavar="ADDRESS", group=BIG,
    ),
    LIVE_ADDRESS,
    LIVE_DELAY,
)  # fmt: skip


def add_options(
    parser: argparse.ArgumentParser, options: Sequence[Option], *, suppress: bool = False
) -> None:
    """Declare ``options`` on ``parser``, each in its ``--help`` section
    (made once, in the order first met) and its mutually exclusive group.
    With ``suppress`` no option has a default, so the parsed arguments hold
    only what was given (see :func:`given_in`)."""
    groups: dict[str | None, Any] = {None: parser}
    exclusive: dict[str, Any] = {}
    for option in options:
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        target = groups[option.group]
        if option.exclusive is not None:
            if option.exclusive not in exclusive:
                exclusive[option.exclusive] = target.add_mutually_exclusive_group()
            target = exclusive[option.exclusive]
        option.add_to(target, default=argparse.SUPPRESS if suppress else KEEP)


def add_run_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """Declare every option of ``run`` (:data:`RUN_OPTIONS`) on ``parser``."""
    add_options(parser, RUN_OPTIONS, suppress=suppress)


def option_for(dest: str) -> Option | None:
    """The ``run`` option a ``--config`` file may set under ``dest``, or
    ``None`` (an unknown key, or one a file cannot set). Of two options of
    one ``dest`` (``--sandbox``, ``--no-sandbox``) the last is given."""
    found = None
    for option in RUN_OPTIONS:
        if option.dest == dest and option.in_file:
            found = option
    return found


def file_keys() -> list[str]:
    """The ``dest`` of every ``run`` option a ``--config`` file may set."""
    return list(dict.fromkeys(o.dest for o in RUN_OPTIONS if o.in_file))


def exclusive_partners() -> dict[str, set[str]]:
    """For each ``run`` option of a mutually exclusive group, the ``dest`` of
    the others (``{"hands": {"target_score"}, ...}``)."""
    members: dict[str, set[str]] = {}
    for option in RUN_OPTIONS:
        if option.exclusive is not None:
            members.setdefault(option.exclusive, set()).add(option.dest)
    return {d: dests - {d} for dests in members.values() for d in dests}


class UsageParser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`CliError` (exit 2,
    ``PROG: MESSAGE``) instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise the usage error.

        Raises:
            CliError: always, exit 2.
        """
        raise CliError(f"{self.prog}: {message}", EXIT_USAGE)
