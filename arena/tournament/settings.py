"""A tournament run's settings, typed, and the one reader and writer of
``run.json``: the tournament (:class:`TournamentSettings`, its formats,
seatings and executors),
how its bots were launched (:class:`LaunchSettings`, the record's
``isolation``), how it is judged (:class:`VerdictSettings`), its entrants,
and the file around them (:class:`RunFile`).

Every reader of a run's settings goes through :meth:`RunSettings.from_json`:
``run --resume``, ``verify``, ``report``, ``watch`` and the live view. A
field missing from the record (a file written before the field existed)
takes the default of its dataclass, so ``verify`` and a resume agree with
``run`` on, for example, ``rounds`` (2). The JSON shapes are those today's
``run.json`` files hold (``protocol``'s records are untouched): times in
seconds, memory in MiB, ``stderr_kib`` in KiB.

No Trio, no sandbox launcher: the command line reads the defaults here for
``--help`` without loading the runner (:mod:`arena.tournament.runner` names
:class:`TournamentSettings` and its constants too).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from arena.core.keys import MasterKey
from arena.game.settings import DEFAULT_WALL_CAP, RefereeSettings
from arena.protocol.records import FORMAT_VERSION
from arena.sandbox.entrants import Entrant, EntrantError, describe, entrant_from_record

#: Seatings of a table per round: ``"rotations"`` (4, the default) or ``"full"`` (24).
SEATINGS: Final = ("rotations", "full")

#: Tournament formats: every table (``"round-robin"``, the default) or only
#: the tables that include the candidate (``"gauntlet"``,
#: :func:`arena.tournament.runner.schedule_gauntlet`), or tables chosen from
#: the current ratings (``"ladder"``, :mod:`arena.tournament.ladder`).
FORMATS: Final = ("round-robin", "gauntlet", "ladder")


#: The most games a scheduled tournament may have: ``game_index`` is at most
#: 10^9 in a game record (:data:`arena.protocol.records.RECORD_SCHEMA`).
#: Schedules are walked lazily (:class:`arena.tournament.runner.ScheduleStream`),
#: so their size costs no memory; what bounds a run in practice is time
#: (``--dry-run`` prints the estimate) and the report, which holds every game
#: record at the end.
MAX_SCHEDULED_GAMES: Final = 10**9


@dataclass(frozen=True)
class TournamentSettings:
    """Settings of one tournament. Times are in seconds.

    Attributes:
        seed: a public seed (``--seed``) the master key is made from, or
            ``None`` when the key is secret (drawn, or from a key file).
        key: the tournament's master key (:mod:`arena.core.keys`); every random
            choice derives from it. Made from ``seed`` when not given.
            :meth:`without_key` drops it from what is sent to workers.
        rounds: rounds of the round-robin (each plays every table in four rotations).
        seating: ``"rotations"`` (4 seatings of a table per round) or
            ``"full"`` (all 24 seat permutations per round).
        target_score: play each game to this total (R13), or ``None``.
        hands: play exactly this many hands per game instead, or ``None``.
        jobs: games in flight at once.
        fresh_processes: start new bot processes for every game instead of
            reusing them along a chain.
        drop_kernel_caches: at each forget of the page cache (between an
            entrant's games of one deal), also drop the machine's dentry and
            inode caches (``/proc/sys/vm/drop_caches``, root only): closes the
            store of names looked up (``--drop-kernel-caches``).
        referee: the referee's settings (time limits, strikes, grace).
        format: ``"round-robin"`` or ``"gauntlet"`` (see :data:`FORMATS`).
        candidate: the entrant every table of a gauntlet includes, or ``None``.
        games: a ladder's game budget (``--games``; whole tables of four
            games are played, so at most ``4 * (games // 4)``), else ``None``.
        sigma_target: a ladder stops early once every entrant's TrueSkill
            ``sigma`` is below this, or ``None``.
        ladder_batch: tables a ladder chooses at a time from one snapshot of
            the ratings (a setting of the tournament, never of the machine).
        disqualify_after: rank an entrant with this many faults or more (of
            every kind, over the tournament) after every other entrant, or
            ``None`` (off). A standings rule only: its games are played and
            count for the others (:func:`arena.results.standings.disqualify`).
    """

    seed: int | str | None = None
    key: MasterKey | None = field(default=None, repr=False, compare=False)
    rounds: int = 2
    target_score: int | None = 100
    hands: int | None = None
    jobs: int = 1
    fresh_processes: bool = False
    drop_kernel_caches: bool = False
    seating: str = "rotations"
    referee: RefereeSettings = field(default_factory=RefereeSettings)
    format: str = "round-robin"
    candidate: str | None = None
    games: int | None = None
    sigma_target: float | None = None
    ladder_batch: int = 16
    disqualify_after: int | None = None

    def __post_init__(self) -> None:
        if self.key is None and self.seed is not None:
            object.__setattr__(self, "key", MasterKey.from_seed(self.seed))
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.jobs < 1:
            raise ValueError("jobs must be at least 1")
        if (self.target_score is None) == (self.hands is None):
            raise ValueError("give exactly one of target_score and hands")
        if self.seating not in SEATINGS:
            raise ValueError(f"seating must be one of {', '.join(SEATINGS)}, got {self.seating!r}")
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if (self.format == "gauntlet") != (self.candidate is not None):
            raise ValueError("a gauntlet, and only a gauntlet, has a candidate")
        if (self.format == "ladder") != (self.games is not None):
            raise ValueError("a ladder, and only a ladder, has a game budget (games)")
        if self.games is not None and self.games < 4:
            raise ValueError("a ladder needs a budget of at least 4 games (one table)")
        if self.ladder_batch < 1:
            raise ValueError("ladder_batch must be at least 1")

    @property
    def master_key(self) -> MasterKey:
        """The master key.

        Raises:
            RuntimeError: these settings carry no key (a worker's copy).
        """
        if self.key is None:
            raise RuntimeError("these tournament settings carry no key (a worker's copy)")
        return self.key

    def without_key(self) -> TournamentSettings:
        """A copy without the key or the seed it came from, for worker
        processes: they are given each game's derived values only."""
        return replace(self, seed=None, key=None)

    def to_json(self) -> dict[str, Any]:
        """The settings under their command-line flag names (times in seconds),
        with the key's commitment (never the key) and the bootstrap's seed."""
        ref = self.referee
        key = self.master_key
        out: dict[str, Any] = {
            "seed": self.seed,
            "key_commitment": key.commitment(),
            "bootstrap_seed": key.draw_seed("bootstrap", "intervals"),
            "format": self.format,
            "candidate": self.candidate,
            "rounds": self.rounds,
            "seating": self.seating,
            "target_score": self.target_score,
            "hands": self.hands,
            "time_limit": ref.time_limit,
            "startup_time": ref.startup_time,
            "strikes": ref.strikes,
            "grace": ref.grace,
            "max_tiebreak_hands": ref.max_tiebreak_hands,
            "transcripts": ref.transcripts,
            "jobs": self.jobs,
            "fresh_processes": self.fresh_processes,
        }
        if ref.transcripts:  # recorded only then, so older runs still resume
            out["transcript_cap"] = ref.transcript_cap
        if ref.pace > 0:  # likewise
            out["pace"] = ref.pace
        if ref.wall_cap != DEFAULT_WALL_CAP:  # likewise
            out["wall_cap"] = ref.wall_cap
        if self.drop_kernel_caches:  # likewise
            out["drop_kernel_caches"] = True
        if self.disqualify_after is not None:  # likewise
            out["disqualify_after"] = self.disqualify_after
        if self.format == "ladder":  # likewise
            out["games"] = self.games
            out["sigma_target"] = self.sigma_target
            out["ladder_batch"] = self.ladder_batch
        return out


#: Settings that may differ between a run and its resumption.
RESUMABLE_DIFFERENCES: Final = frozenset({"jobs"})

#: Executor names of ``--executor`` (:mod:`arena.tournament.executors`).
EXECUTORS: Final = ("local", "dask")


#: The fields of :class:`TournamentSettings` (and of its referee's) a
#: ``run.json`` records, by their record names.
_TOURNAMENT_FIELDS: Final = (
    "rounds",
    "target_score",
    "hands",
    "jobs",
    "fresh_processes",
    "drop_kernel_caches",
    "seating",
    "format",
    "candidate",
    "games",
    "sigma_target",
    "ladder_batch",
    "disqualify_after",
)
#: The bounds of ``isolation.limits``.
_LIMITS: Final = (
    "memory_mb",
    "cpu_seconds",
    "processes",
    "open_files",
    "file_size_mb",
    "stderr_kib",
)
_REFEREE_FIELDS: Final = tuple(f.name for f in dataclasses.fields(RefereeSettings))


class SettingsError(ValueError):
    """A ``run.json`` whose settings cannot be read (one line, naming the
    file when known and the setting)."""


class NotARunFileError(SettingsError):
    """Not a tournament's ``run.json`` at all: no settings object, no list
    of named entrants, a seed or ``games_total`` of the wrong type."""


def _default(cls: type[Any], name: str) -> Any:
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    raise KeyError(name)


def tournament_from_json(record: Mapping[str, Any], key: MasterKey | None) -> TournamentSettings:
    """The :class:`TournamentSettings` a ``run.json`` ``settings`` object
    records, with ``key`` (``None``: the key of the recorded seed, if any,
    else none: a reader that plays no game). Missing fields take the
    dataclass defaults (``rounds`` 2, ``target_score`` 100, ...); a record
    with ``hands`` plays that many hands, whatever its ``target_score``.

    Raises:
        SettingsError: a field of the wrong type or out of bounds.
    """
    values: dict[str, Any] = {
        name: record[name] for name in _TOURNAMENT_FIELDS if record.get(name) is not None
    }
    if values.get("hands") is not None:
        values["target_score"] = None
    elif "target_score" not in values:
        values["target_score"] = _default(TournamentSettings, "target_score")
    referee = {name: record[name] for name in _REFEREE_FIELDS if record.get(name) is not None}
    seed = record.get("seed")
    if not isinstance(seed, int | str | None) or isinstance(seed, bool):
        raise NotARunFileError(f"seed: not an integer, a text or null: {seed!r}")
    try:
        return TournamentSettings(
            seed=seed,
            key=key
            if key is not None
            else (MasterKey.from_seed(seed) if seed is not None else None),
            referee=RefereeSettings(**referee),
            **values,
        )
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"settings: {exc}") from None


@dataclass(frozen=True)
class LaunchSettings:
    """How a run's bots were launched, as ``run.json`` records it (its
    ``settings.isolation``; :meth:`arena.sandbox.launcher.LaunchOptions.describe`
    writes the same shape). ``None``: not recorded (an older file), or no bound.

    Attributes:
        memory_mb: memory per bot, MiB.
        cpu_seconds: CPU time per bot process, seconds.
        processes: processes per bot.
        open_files: open files per bot process.
        file_size_mb: largest file a bot may write, MiB.
        stderr_kib: stderr kept per bot, KiB.
        sandbox: whether bots were sealed (bubblewrap), resolved.
        sandbox_ro: extra folders sealed bots could read.
        tmp_mb: a sealed bot's ``/tmp``, MiB.
        separate_users: whether each bot ran as a uid of its own, resolved.
    """

    memory_mb: int | None = None
    cpu_seconds: int | None = None
    processes: int | None = None
    open_files: int | None = None
    file_size_mb: int | None = None
    stderr_kib: int | None = None
    sandbox: bool | None = None
    sandbox_ro: tuple[str, ...] = ()
    tmp_mb: int | None = None
    separate_users: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """``run.json``'s ``isolation`` object."""
        return {
            "limits": {name: getattr(self, name) for name in _LIMITS},
            "sandbox": self.sandbox,
            "sandbox_ro": list(self.sandbox_ro),
            "tmp_mb": self.tmp_mb,
            "separate_users": self.separate_users,
        }

    @classmethod
    def from_json(cls, record: Any) -> LaunchSettings:
        """From ``run.json``'s ``isolation`` object; fields that are missing
        or of the wrong type are ``None`` (not recorded)."""
        if not isinstance(record, Mapping):
            return cls()
        limits = record.get("limits")
        limits = limits if isinstance(limits, Mapping) else {}

        def number(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def flag(value: Any) -> bool | None:
            return value if isinstance(value, bool) else None

        ro = record.get("sandbox_ro")
        return cls(
            **{name: number(limits.get(name)) for name in _LIMITS},
            sandbox=flag(record.get("sandbox")),
            sandbox_ro=tuple(str(p) for p in ro) if isinstance(ro, list) else (),
            tmp_mb=number(record.get("tmp_mb")),
            separate_users=flag(record.get("separate_users")),
        )


@dataclass(frozen=True)
class VerdictSettings:
    """How a run is judged: its ``--fail-if`` conditions (their text) and its
    ``--junit`` file (an absolute path), ``run.json``'s ``verdict``. Not a
    setting of the tournament: a resume may judge by other conditions."""

    fail_if: tuple[str, ...] = ()
    junit: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``run.json``'s ``verdict`` object."""
        return {"fail_if": list(self.fail_if), "junit": self.junit}

    @classmethod
    def from_json(cls, record: Any) -> VerdictSettings:
        """From ``run.json``'s ``verdict`` (absent in older files: none)."""
        if not isinstance(record, Mapping):
            return cls()
        texts = record.get("fail_if")
        junit = record.get("junit")
        return cls(
            tuple(str(t) for t in texts) if isinstance(texts, list) else (),
            junit if isinstance(junit, str) and junit else None,
        )


@dataclass(frozen=True)
class RunSettings:
    """``run.json``'s (and ``results.json``'s) ``settings``: the tournament,
    its entrants (as :func:`arena.sandbox.entrants.describe` records them) and
    how their bots were launched.

    Attributes:
        tournament: the tournament's settings (its key, when known).
        entrants: the entrants' records (``name``, ``command``, ``argv``,
            ``cwd``, ``given``, ``program``).
        launch: how bots were launched, or ``None`` (not recorded).
        key_commitment: the SHA-256 of the key, hexadecimal (recorded, or the key's).
        bootstrap_seed: the seed of the standings' bootstrap.
        extra: fields of the record this version does not type, kept as read.
    """

    tournament: TournamentSettings
    entrants: tuple[Mapping[str, Any], ...]
    launch: LaunchSettings | None = None
    key_commitment: str | None = None
    bootstrap_seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        tournament: TournamentSettings,
        entrants: Sequence[Entrant],
        launch: LaunchSettings | None = None,
    ) -> RunSettings:
        """The settings of a new run (``tournament`` carries its key)."""
        key = tournament.master_key
        return cls(
            tournament,
            tuple(describe(entrants)),
            launch,
            key.commitment(),
            key.draw_seed("bootstrap", "intervals"),
        )

    @property
    def names(self) -> list[str]:
        """The entrants' names, in the recorded order."""
        return entrant_names({"entrants": list(self.entrants)})

    def entrant_list(self) -> list[Entrant]:
        """The recorded entrants, ready to launch.

        Raises:
            SettingsError: a record without a usable command or folder.
        """
        try:
            return [entrant_from_record(e) for e in self.entrants]
        except EntrantError as exc:
            raise SettingsError(str(exc)) from None

    def to_json(self) -> dict[str, Any]:
        """The ``settings`` object of ``run.json`` and ``results.json``: the
        tournament under its command-line flag names (see
        :meth:`TournamentSettings.to_json`; without a key, the recorded
        commitment and bootstrap seed), the entrants and ``isolation``."""
        t = self.tournament
        if t.key is not None:
            out = t.to_json()
        else:
            out = dataclasses.replace(t, key=MasterKey.from_seed(0)).to_json()
            out["key_commitment"] = self.key_commitment
            out["bootstrap_seed"] = self.bootstrap_seed
        out = {**self.extra, **out}
        out["entrants"] = [dict(e) for e in self.entrants]
        if self.launch is not None:
            out["isolation"] = self.launch.to_json()
        return out

    @classmethod
    def from_json(cls, record: Mapping[str, Any], key: MasterKey | None = None) -> RunSettings:
        """Read a ``settings`` object (see :func:`tournament_from_json` for
        ``key`` and the defaults).

        Raises:
            SettingsError: no list of named entrants, or a bad setting.
        """
        entrants = record.get("entrants")
        if not isinstance(entrants, list) or not all(
            isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in entrants
        ):
            raise NotARunFileError("settings: entrants missing or not a list of named entrants")
        known = {"seed", "key_commitment", "bootstrap_seed", "entrants", "isolation"}
        known |= set(_TOURNAMENT_FIELDS) | set(_REFEREE_FIELDS)
        commitment = record.get("key_commitment")
        bootstrap = record.get("bootstrap_seed")
        return cls(
            tournament_from_json(record, key),
            tuple(entrants),
            LaunchSettings.from_json(record["isolation"]) if "isolation" in record else None,
            commitment if isinstance(commitment, str) else None,
            bootstrap if isinstance(bootstrap, int) else None,
            {k: v for k, v in record.items() if k not in known},
        )

    def differences(self, other: RunSettings) -> list[str]:
        """Names of the recorded settings that differ between ``self`` and
        ``other``, ignoring those a resumed run may change (``jobs``)."""
        old, new = self.to_json(), other.to_json()
        keys = (set(old) | set(new)) - RESUMABLE_DIFFERENCES
        return sorted(k for k in keys if old.get(k) != new.get(k))


@dataclass(frozen=True)
class RunFile:
    """A tournament's ``run.json``: written before the first game, read back
    by every command that reads the run.

    Attributes:
        settings: the run's settings.
        games_total: the games announced (a ladder's, once finished, those it scheduled).
        format_version: the journal's format (``FORMAT_VERSION`` for a new run).
        run_id: the run's id (its bots' environment carries it), or ``None``.
        verdict: how the run is judged, or ``None`` (not recorded).
    """

    settings: RunSettings
    games_total: int
    format_version: int = FORMAT_VERSION
    run_id: str | None = None
    verdict: VerdictSettings | None = None

    def to_json(self) -> dict[str, Any]:
        """The file's object."""
        out: dict[str, Any] = {
            "format_version": self.format_version,
            "settings": self.settings.to_json(),
            "games_total": self.games_total,
            "run_id": self.run_id,
        }
        if self.verdict is not None:
            out["verdict"] = self.verdict.to_json()
        return out

    @classmethod
    def from_json(cls, info: Any, key: MasterKey | None = None) -> RunFile:
        """Read the file's object (``key``: see :func:`tournament_from_json`).
        A file without ``format_version`` is of format 1.

        Raises:
            SettingsError: not a run file, or a bad setting.
        """
        if not isinstance(info, Mapping) or not isinstance(info.get("settings"), Mapping):
            raise NotARunFileError("not a tournament's run file (no settings object)")
        total = info.get("games_total")
        if type(total) is not int:
            raise NotARunFileError(
                "not a tournament's run file (games_total missing or not an int)"
            )
        version = info.get("format_version", 1)
        run_id = info.get("run_id")
        return cls(
            RunSettings.from_json(info["settings"], key),
            total,
            version if isinstance(version, int) else 1,
            run_id if isinstance(run_id, str) else None,
            VerdictSettings.from_json(info["verdict"]) if "verdict" in info else None,
        )

    @classmethod
    def read(cls, path: Path, key: MasterKey | None = None) -> RunFile:
        """Read ``path``.

        Raises:
            SettingsError: it cannot be read or is not a run file (one line naming it).
        """
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"{path} cannot be read as a run file: {exc}") from None
        try:
            return cls.from_json(info, key)
        except NotARunFileError as exc:
            raise NotARunFileError(f"{path}: {exc}") from None
        except SettingsError as exc:
            raise SettingsError(f"{path}: {exc}") from None


def entrant_names(record: Mapping[str, Any]) -> list[str]:
    """The entrants' names of a ``settings`` object (``run.json``'s, or one a
    live view was given), in the recorded order.

    Raises:
        SettingsError: no list of named entrants.
    """
    entrants = record.get("entrants")
    if not isinstance(entrants, list) or not all(
        isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in entrants
    ):
        raise NotARunFileError("settings: entrants missing or not a list of named entrants")
    return [str(e["name"]) for e in entrants]
