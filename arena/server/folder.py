"""The competition folder of ``hearts-arena serve DIR``: its settings, key,
database and modes.

Layout (``--init`` makes it; modes as issue 27 gives them)::

    DIR/                  0711, the runner's (root in production)
      competition.toml    0644: the game settings, limits, house bots, ladder lag
      key                 0600, the runner's: 64 hex digits, never in the database
      db/                 0700, the web process's user: competition.sqlite3 (WAL
                          needs to write its -wal and -shm files beside it)
      uploads/            0700, the web process's user: submissions by SHA-256
      runner/             0700, the runner's: bot copies, control-group records
      database.toml       0644, on PostgreSQL only (``--init --database URL``):
                          the database's URL (never a password) and the
                          password file's path; db/ is not made then

The key's SHA-256 (:meth:`arena.core.keys.MasterKey.commitment`) is stored
in the database at init (``meta.key_sha256``) and printed; the runner
refuses to start with a key whose SHA-256 differs (:func:`check_key`).

Errors are :class:`FolderError`, one line each.
"""

from __future__ import annotations

import math
import os
import pwd
import secrets
import stat
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

from sqlalchemy.exc import SQLAlchemyError

from arena.core.keys import BadKeyError, MasterKey
from arena.game.referee import RefereeSettings
from arena.protocol.codec import clean_text
from arena.sandbox.entrants import SAMPLE_BOTS
from arena.sandbox.isolation import Limits
from arena.server import db, store
from arena.server.classrules import DeadlineError, ThresholdError, parse_deadline, parse_threshold
from arena.server.migrate import MigrationResult, current_revision, migrate
from arena.server.sessions import MIB, SiteSettings, display_name_from

SETTINGS_NAME: Final = "competition.toml"
KEY_NAME: Final = "key"
DB_DIR: Final = "db"
UPLOADS_DIR: Final = "uploads"
RUNNER_DIR: Final = "runner"
#: The record of a PostgreSQL database (``--init --database URL``).
DATABASE_RECORD: Final = "database.toml"
#: Fewest house bots: a validation table seats three, each at most once.
MIN_HOUSE_BOTS: Final = 3
DEFAULT_HOUSE_BOTS: Final = ("sample:low", "sample:random", "sample:heuristic")
#: Bytes of a participant's token (256 bits), before URL-safe base64.
TOKEN_BYTES: Final = 32

_REFEREE: Final = RefereeSettings()
_LIMITS: Final = Limits()


class FolderError(Exception):
    """A competition folder that cannot be made, opened or trusted (one line)."""


@dataclass(frozen=True)
class GameSettings:
    """How each game is played (the settings of ``hearts-arena run``): seconds
    per decision and for the handshake, timeouts in a row before a strike-out,
    and the length: ``hands`` per game or a ``target_score``, exactly one."""

    time_limit: float = _REFEREE.time_limit
    startup_time: float = _REFEREE.startup_time
    strikes: int = _REFEREE.strikes
    target_score: int | None = 100
    hands: int | None = None


@dataclass(frozen=True)
class LimitSettings:
    """Each bot process's limits (``run``'s ``--memory-limit``, ``--cpu-limit``,
    ``--max-processes``, ``--max-open-files``, ``--stderr-limit``, ``--tmp-size``):
    MiB, seconds, counts, KiB, MiB."""

    memory_mb: int = _LIMITS.memory_mb
    cpu_seconds: int = _LIMITS.cpu_seconds
    processes: int = _LIMITS.processes
    open_files: int = _LIMITS.open_files
    file_size_mb: int = _LIMITS.file_size_mb
    stderr_kib: int = _LIMITS.stderr_kib
    tmp_mb: int = 64

    def limits(self) -> Limits:
        """As the launcher's :class:`~arena.sandbox.isolation.Limits`."""
        return Limits(
            memory_mb=self.memory_mb,
            cpu_seconds=self.cpu_seconds,
            processes=self.processes,
            open_files=self.open_files,
            file_size_mb=self.file_size_mb,
            stderr_kib=self.stderr_kib,
        )


@dataclass(frozen=True)
class LadderSettings:
    """The ladder's rules: ``lag`` (B: table t is chosen from the ratings
    folded over tables below t - B; never tied to cores), the ``house_bots``
    (sample bots, at least three), ``fault_budget`` (games in a row a
    submission may crash or be struck out in before it leaves ranked play),
    ``table_seconds`` (a ladder table's time budget in seconds, its four
    games together; past it the server stops the table and plays it again
    once, from scratch under the same deal; stopped twice, it is void;
    0: no budget)."""

    lag: int = 16
    house_bots: tuple[str, ...] = DEFAULT_HOUSE_BOTS
    fault_budget: int = 8
    table_seconds: float = 3600.0


@dataclass(frozen=True)
class GateSettings:
    """Time budgets of the gate's steps, in seconds (past one the step fails
    as the server's and runs once more)."""

    check_seconds: float = 600.0
    validation_seconds: float = 900.0


#: A round-robin final's most finalists: C(12, 4) = 495 tables a round.
MAX_ROUND_ROBIN: Final = 12
#: The kinds of final (``[class] final``).
FINAL_KINDS: Final = ("round-robin", "ladder", "none")


@dataclass(frozen=True)
class ClassSettings:
    """A class's end (issue 30; docs/running-a-class.md): the ``deadline``
    (ISO 8601 with an offset, ``""``: none), ``practice`` (after it, new
    submissions play ``practice_tables`` unranked tables each against the
    house bots), the ``final`` (``"round-robin"``: the top ``final_size``
    by conservative ladder rating, ``final_rounds`` rounds; ``"ladder"``:
    every eligible participant, ladder rules, ``final_tables`` tables at
    most; ``"none"``), the grading gauntlet (``gauntlet_deals`` deals K
    against ``reference_bots``, three sample bots; ``0``: none;
    ``thresholds``: pass rules such as ``"duplicate score against
    sample:low at most 0"``) and challenges (``challenges_per_day`` per
    participant in any 24 hours; 0: none)."""

    deadline: str = ""
    practice: bool = True
    practice_tables: int = 1
    final: str = "round-robin"
    final_size: int = 8
    final_rounds: int = 2
    final_tables: int = 40
    gauntlet_deals: int = 0
    reference_bots: tuple[str, ...] = DEFAULT_HOUSE_BOTS
    thresholds: tuple[str, ...] = ()
    challenges_per_day: int = 5


#: Who may see the pages (``[web] pages``; :mod:`arena.server.visibility`).
PAGES_SETTINGS: Final = ("signed-in", "public")


@dataclass(frozen=True)
class WebSection:
    """The web process's sign-in side (issue 28): ``quota_mib`` (a
    participant's stored submissions at most, MiB), ``sign_in_per_minute``
    (link exchanges and token sign-ins per client address), ``session_days``
    (a session's life) and ``invite_days`` (an invite's); and ``pages``, who
    may see the standings, the finished tables, their replays and the
    Environment page: ``"signed-in"`` (the default, for classes:
    participants and the organiser) or ``"public"`` (anyone; the API with a
    bearer token works under either: docs/server-web.md, "Who sees what")."""

    pages: str = "signed-in"
    quota_mib: int = 200
    sign_in_per_minute: int = 10
    session_days: float = 7.0
    invite_days: float = 7.0

    def site(self) -> SiteSettings:
        """As the web process's :class:`~arena.server.sessions.SiteSettings`."""
        return SiteSettings(
            sign_in_per_minute=self.sign_in_per_minute,
            session_seconds=self.session_days * 86400,
            invite_seconds=self.invite_days * 86400,
            quota_bytes=self.quota_mib * MIB,
        )


@dataclass(frozen=True)
class CompetitionSettings:
    """Everything ``competition.toml`` holds (its sections: ``[game]``,
    ``[limits]``, ``[ladder]``, ``[gate]``, ``[web]``, ``[class]``)."""

    game: GameSettings = field(default_factory=GameSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    ladder: LadderSettings = field(default_factory=LadderSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    web: WebSection = field(default_factory=WebSection)
    klass: ClassSettings = field(default_factory=ClassSettings)

    def __post_init__(self) -> None:
        g = self.game
        if (g.hands is None) == (g.target_score is None):
            raise FolderError("[game]: give exactly one of hands and target_score")
        for name, value in (("hands", g.hands), ("target_score", g.target_score)):
            if value is not None and value < 1:
                raise FolderError(f"[game] {name} must be at least 1, got {value}")
        if not (g.time_limit > 0 and g.startup_time > 0):
            raise FolderError("[game] time_limit and startup_time must be above 0 seconds")
        if self.ladder.lag < 0:
            raise FolderError(f"[ladder] lag must be 0 or more, got {self.ladder.lag}")
        if self.ladder.fault_budget < 1:
            raise FolderError("[ladder] fault_budget must be at least 1")
        if not 0 <= self.ladder.table_seconds < math.inf:
            raise FolderError(
                f"[ladder] table_seconds must be 0 (none) or more, got {self.ladder.table_seconds}"
            )
        bots = self.ladder.house_bots
        if len(bots) < MIN_HOUSE_BOTS:
            raise FolderError(
                f"[ladder] house_bots: at least {MIN_HOUSE_BOTS} are needed (a validation "
                f"table seats three, each at most once), got {len(bots)}"
            )
        if len(set(bots)) != len(bots):
            raise FolderError("[ladder] house_bots: each house bot once")
        for bot in bots:
            if bot.removeprefix("sample:") not in SAMPLE_BOTS or not bot.startswith("sample:"):
                raise FolderError(
                    f"[ladder] house_bots: {bot!r} is not a sample bot "
                    f"(sample:{', sample:'.join(sorted(SAMPLE_BOTS))})"
                )
        if self.web.pages not in PAGES_SETTINGS:
            raise FolderError(
                f"[web] pages must be one of {', '.join(map(repr, PAGES_SETTINGS))}, "
                f"got {self.web.pages!r}"
            )
        for section in (self.limits, self.gate):
            for key, value in asdict(section).items():
                if value < 0:
                    raise FolderError(f"{key} must be 0 or more, got {value}")
        for key, value in asdict(self.web).items():
            if key != "pages" and not 0 < value < math.inf:
                raise FolderError(f"[web] {key} must be above 0, got {value}")
        _check_class(self.klass)

    @property
    def house_labels(self) -> tuple[str, ...]:
        """The house bots' entrant labels (``house:low``, ...), in order."""
        return tuple(store.house_label(b) for b in self.ladder.house_bots)

    def referee(self) -> RefereeSettings:
        """The referee's settings of every game: each seat's transcript kept
        in the record (its owner and the organiser read it beside the replay,
        :mod:`arena.server.pages`; capped by the referee's ``transcript_cap``)."""
        g = self.game
        return RefereeSettings(
            time_limit=g.time_limit,
            startup_time=g.startup_time,
            strikes=g.strikes,
            transcripts=True,
        )

    def to_toml(self) -> str:
        """The settings as ``competition.toml`` text (every key written)."""
        lines = ["# hearts-arena competition settings (README, 'Running a competition server')."]
        for name in ("game", "limits", "ladder", "gate", "web", "class"):
            lines.append(f"\n[{name}]")
            for key, value in asdict(getattr(self, _ATTRIBUTE.get(name, name))).items():
                if value is not None:
                    lines.append(f"{key} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> CompetitionSettings:
        """Settings from parsed TOML; missing keys take their defaults.

        Raises:
            FolderError: an unknown section or key, a value of the wrong type
                or out of range (naming ``where`` and the key).
        """
        kinds: dict[str, type[Any]] = {
            "game": GameSettings,
            "limits": LimitSettings,
            "ladder": LadderSettings,
            "gate": GateSettings,
            "web": WebSection,
            "class": ClassSettings,
        }
        parts: dict[str, Any] = {}
        for section, value in data.items():
            if section not in kinds:
                raise FolderError(f"{where}: unknown section [{section}] ({', '.join(kinds)})")
            if not isinstance(value, dict):
                raise FolderError(f"{where}: [{section}] is a table of settings")
            parts[_ATTRIBUTE.get(section, section)] = _section(
                kinds[section], value, f"{where} [{section}]"
            )
        game = parts.get("game")
        if game is not None and "hands" in data["game"] and "target_score" not in data["game"]:
            parts["game"] = GameSettings(**{**asdict(game), "target_score": None})
        return cls(**parts)

    @classmethod
    def read(cls, path: Path) -> CompetitionSettings:
        """Read a settings file.

        Raises:
            FolderError: unreadable, not TOML, or not valid settings.
        """
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise FolderError(f"settings {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise FolderError(f"settings {path}: not TOML: {exc}") from None
        return cls.from_mapping(data, str(path))


#: A TOML section's attribute of :class:`CompetitionSettings` (``class`` is a keyword).
_ATTRIBUTE: Final = {"class": "klass"}


def _check_class(c: ClassSettings) -> None:
    try:
        parse_deadline(c.deadline)
    except DeadlineError as exc:
        raise FolderError(f"[class] deadline: {exc}") from None
    if c.final not in FINAL_KINDS:
        raise FolderError(f"[class] final: one of {', '.join(FINAL_KINDS)}, got {c.final!r}")
    if c.final == "round-robin" and not 4 <= c.final_size <= MAX_ROUND_ROBIN:
        raise FolderError(
            f"[class] final_size: 4 to {MAX_ROUND_ROBIN} finalists "
            f"(C(12, 4) = 495 tables a round), got {c.final_size}"
        )
    for key in ("final_rounds", "final_tables", "practice_tables"):
        if getattr(c, key) < 1:
            raise FolderError(f"[class] {key} must be at least 1, got {getattr(c, key)}")
    for key in ("gauntlet_deals", "challenges_per_day"):
        if getattr(c, key) < 0:
            raise FolderError(f"[class] {key} must be 0 or more, got {getattr(c, key)}")
    bots = c.reference_bots
    if len(bots) != 3 or len(set(bots)) != 3:
        raise FolderError(f"[class] reference_bots: three different sample bots, got {list(bots)}")
    for bot in bots:
        if not bot.startswith("sample:") or bot.removeprefix("sample:") not in SAMPLE_BOTS:
            raise FolderError(
                f"[class] reference_bots: {bot!r} is not a sample bot "
                f"(sample:{', sample:'.join(sorted(SAMPLE_BOTS))})"
            )
    for rule in c.thresholds:
        try:
            parse_threshold(rule, bots)
        except ThresholdError as exc:
            raise FolderError(f"[class] thresholds: {exc}") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def _section(kind: type[Any], values: Mapping[str, Any], where: str) -> Any:
    defaults = kind()
    known = asdict(defaults)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise FolderError(f"{where}: unknown key {key!r} ({', '.join(known)})")
        default = known[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise FolderError(f"{where} {key}: true or false")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise FolderError(f"{where} {key}: a string")
        elif isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise FolderError(f"{where} {key}: a list of names")
            value = tuple(value)
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise FolderError(f"{where} {key}: a number of seconds")
            if not math.isfinite(value):
                raise FolderError(f"{where} {key}: a finite number")
            value = float(value)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise FolderError(f"{where} {key}: a whole number")
        out[key] = value
    return kind(**{**known, **out})


@dataclass(frozen=True)
class CompetitionPaths:
    """The paths of a competition folder."""

    root: Path

    @property
    def settings(self) -> Path:
        """``competition.toml``."""
        return self.root / SETTINGS_NAME

    @property
    def key(self) -> Path:
        """``key`` (owner-only)."""
        return self.root / KEY_NAME

    @property
    def db_dir(self) -> Path:
        """``db/``."""
        return self.root / DB_DIR

    @property
    def database(self) -> Path:
        """``db/competition.sqlite3``."""
        return self.root / DB_DIR / db.DATABASE_NAME

    @property
    def database_record(self) -> Path:
        """``database.toml``: the PostgreSQL database's URL, when there is one."""
        return self.root / DATABASE_RECORD

    @property
    def uploads(self) -> Path:
        """``uploads/``."""
        return self.root / UPLOADS_DIR

    @property
    def runner(self) -> Path:
        """``runner/``: the runner's own state (copies, control-group records)."""
        return self.root / RUNNER_DIR


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_folder` made: the paths and the key's SHA-256 (hex)."""

    paths: CompetitionPaths
    key_sha256: str
    settings: CompetitionSettings


def web_user_ids(user: str | None) -> tuple[int, int] | None:
    """``(uid, gid)`` of the web process's user ``user`` (a name or a number),
    or ``None`` for no user (the current one owns everything).

    Raises:
        FolderError: no such user.
    """
    if user is None:
        return None
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, ValueError):
        raise FolderError(f"no user {user!r} on this machine") from None
    return entry.pw_uid, entry.pw_gid


def _mkdir(path: Path, mode: int, owner: tuple[int, int] | None = None) -> None:
    path.mkdir(mode=mode)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, *owner)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def _record_text(url: str, password_file: Path | None) -> str:
    lines = [
        "# hearts-arena: the competition's PostgreSQL database (serve --init --database).",
        "# Never a password here: it is read from password_file, or PGPASSWORD / ~/.pgpass.",
        f"url = {_toml_value(url)}",
    ]
    if password_file is not None:
        lines.append(f"password_file = {_toml_value(str(Path(password_file).absolute()))}")
    return "\n".join(lines) + "\n"


def database_location(
    paths: CompetitionPaths, password_file: Path | None = None
) -> db.DatabaseLocation:
    """Where the competition's database is: the PostgreSQL database recorded
    in ``database.toml`` (its password from ``password_file`` if given, else
    from the recorded password file, else left to libpq), or the SQLite file
    ``db/competition.sqlite3``.

    Raises:
        FolderError: a record that is not TOML, names no URL or holds a
            password; a password file that cannot be read or that others may read.
    """
    record = paths.database_record
    if not record.exists():
        return db.DatabaseLocation(paths.database)
    try:
        data = tomllib.loads(record.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FolderError(f"database record {record}: {exc}") from None
    url = data.get("url")
    recorded = data.get("password_file")
    if not isinstance(url, str) or not (recorded is None or isinstance(recorded, str)):
        raise FolderError(f"database record {record}: url (and password_file) are strings")
    try:
        parsed = db.parse_postgres_url(url)
        chosen = password_file if password_file is not None else recorded
        password = None if chosen is None else db.read_password_file(Path(chosen))
    except db.DatabaseURLError as exc:
        raise FolderError(str(exc)) from None
    return db.DatabaseLocation(url=parsed.render_as_string(hide_password=False), password=password)


def _open_database(location: db.DatabaseLocation) -> db.Database:
    try:
        database = db.Database(location)
    except ImportError as exc:  # the [server-postgres] extra is missing
        raise FolderError(
            f"the competition's database is PostgreSQL ({location.describe()}): its driver "
            f"({exc.name}) is missing: pip install 'hearts-arena[server-postgres]'"
        ) from None
    if location.dialect == "postgresql":
        try:
            with database.read() as conn:
                conn.exec_driver_sql("SELECT 1")
        except SQLAlchemyError as exc:
            database.close()
            raise FolderError(_database_error(location, exc)) from None
    return database


def _database_error(location: db.DatabaseLocation, exc: Exception) -> str:
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"database {location.describe()}: {reason[0] if reason else type(exc).__name__}"


def init_folder(
    root: Path,
    settings: CompetitionSettings | None = None,
    web_user: str | None = None,
    now: float | None = None,
    database_url: str | None = None,
    password_file: Path | None = None,
) -> InitResult:
    """Make a competition folder at ``root`` (which must not exist, or be an
    empty folder): the settings, a fresh key, the database (WAL, migrated,
    the key's SHA-256 stored), the modes of the module docstring. As root
    give ``web_user``: the database and uploads folders become its.
    ``database_url``: a PostgreSQL database instead of the SQLite file
    (``postgresql://USER@HOST/NAME``, no password in it; the password from
    ``password_file`` or libpq's ``PGPASSWORD`` / ``~/.pgpass``), recorded in
    ``database.toml``; it must hold no competition yet.

    Raises:
        FolderError: ``root`` holds something, the user is unknown, a file
            could not be made, or the database URL is refused, cannot be
            reached or holds a competition already.
    """
    settings = settings or CompetitionSettings()
    owner = web_user_ids(web_user)
    paths = CompetitionPaths(Path(root))
    if paths.root.exists() and (not paths.root.is_dir() or any(paths.root.iterdir())):
        raise FolderError(f"{paths.root} exists and is not an empty folder")
    location = db.DatabaseLocation(paths.database)
    if password_file is not None and database_url is None:
        raise FolderError("a database password file goes with a PostgreSQL URL (--database)")
    if database_url is not None:
        try:
            url = db.parse_postgres_url(database_url)
            password = None if password_file is None else db.read_password_file(password_file)
        except db.DatabaseURLError as exc:
            raise FolderError(str(exc)) from None
        location = db.DatabaseLocation(
            url=url.render_as_string(hide_password=False), password=password
        )
        database = _open_database(location)
        try:
            if current_revision(database) is not None:
                with database.read() as conn:
                    held = store.get_meta(conn, "key_sha256")
                if held is not None:
                    raise FolderError(
                        f"the database {location.describe()} holds a competition already "
                        f"(key SHA-256 {held[:16]}...): give an empty database"
                    )
        finally:
            database.close()
    key = MasterKey.generate()
    try:
        if not paths.root.exists():
            paths.root.mkdir(mode=0o711, parents=False)
        os.chmod(paths.root, 0o711)
        paths.settings.write_text(settings.to_toml(), encoding="utf-8")
        os.chmod(paths.settings, 0o644)
        _write_private(paths.key, key.hex() + "\n")
        _mkdir(paths.runner, 0o700)
        _mkdir(paths.uploads, 0o700, owner)
        if location.url is not None:
            paths.database_record.write_text(
                _record_text(location.describe(), password_file), encoding="utf-8"
            )
            os.chmod(paths.database_record, 0o644)
        else:
            _mkdir(paths.db_dir, 0o700, owner)
            db.set_wal(paths.database)
        database = db.Database(location)
        try:
            migrate(database)
            stamp = time.time() if now is None else now
            with database.write() as conn:
                store.set_meta(conn, "key_sha256", key.commitment())
                store.set_meta(conn, "schema_version", db.SCHEMA_VERSION)
                store.set_meta(conn, "created_at", repr(stamp))
        except SQLAlchemyError as exc:
            raise FolderError(_database_error(location, exc)) from None
        finally:
            database.close()
        if location.path is not None:
            own_database_files(paths, owner)
    except OSError as exc:
        raise FolderError(
            f"cannot make the competition folder {paths.root}: {exc.strerror or exc}"
        ) from None
    return InitResult(paths, key.commitment(), settings)


def own_database_files(paths: CompetitionPaths, owner: tuple[int, int] | None) -> None:
    """Give the database and its WAL files to ``owner`` (the web process's
    user), owner-only, so both processes may write them."""
    for p in paths.db_dir.iterdir():
        if owner is not None:
            os.chown(p, *owner)
        os.chmod(p, 0o600)


def read_key(paths: CompetitionPaths) -> MasterKey:
    """The competition's key, from a file its owner alone may read.

    Raises:
        FolderError: missing, readable by others, or malformed.
    """
    try:
        mode = paths.key.stat().st_mode
        text = paths.key.read_text(encoding="ascii")[:1000]
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FolderError(f"key file {paths.key}: {reason}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise FolderError(
            f"key file {paths.key} can be read by other users ({stat.filemode(mode)}): "
            f"make it owner-only (chmod 600 {paths.key})"
        )
    try:
        return MasterKey.from_hex(text)
    except BadKeyError as exc:
        raise FolderError(f"key file {paths.key}: {exc}") from None


def check_key(paths: CompetitionPaths, database: db.Database) -> MasterKey:
    """The key, once its SHA-256 matches the one stored at init.

    Raises:
        FolderError: no key stored, or another key (one line naming both prefixes).
    """
    key = read_key(paths)
    with database.read() as conn:
        stored = store.get_meta(conn, "key_sha256")
    if stored is None:
        raise FolderError(
            f"the database in {paths.db_dir} holds no key SHA-256 (not made by --init)"
        )
    if stored != key.commitment():
        raise FolderError(
            f"key file {paths.key} is not this competition's: its SHA-256 is "
            f"{key.commitment()[:16]}..., the one stored at init {stored[:16]}..."
        )
    return key


@dataclass
class Competition:
    """An opened competition folder: its paths, settings and database."""

    paths: CompetitionPaths
    settings: CompetitionSettings
    database: db.Database
    migration: MigrationResult

    def close(self) -> None:
        """Close the database's connections."""
        self.database.close()


def open_folder(root: Path, password_file: Path | None = None) -> Competition:
    """Open a competition folder made by :func:`init_folder` and migrate its
    database (after a backup copy when a SQLite file is upgraded).
    ``password_file``: the PostgreSQL database's password, instead of the
    file recorded at init (:func:`database_location`).

    Raises:
        FolderError: not a competition folder, bad settings, or a database
            this arena cannot reach or read.
    """
    paths = CompetitionPaths(Path(root))
    postgres = paths.database_record.is_file()
    if not paths.settings.is_file() or not (postgres or paths.database.is_file()):
        raise FolderError(
            f"{paths.root} is not a competition folder (make one with "
            f"hearts-arena serve {paths.root} --init)"
        )
    settings = CompetitionSettings.read(paths.settings)
    database = _open_database(database_location(paths, password_file))
    try:
        result = migrate(database)
    except RuntimeError as exc:
        database.close()
        raise FolderError(str(exc)) from None
    except SQLAlchemyError as exc:
        database.close()
        raise FolderError(_database_error(database.location, exc)) from None
    return Competition(paths, settings, database, result)


def new_token() -> str:
    """A fresh participant token: 256 random bits, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def add_participant_to_file(
    comp: Competition, name: str, path: Path, now: float | None = None
) -> int:
    """Add a participant and write its token to the new owner-only file ``path``;
    the participant's id. The file is made first, so a file that exists (or
    cannot be made) refuses the add before any participant is stored; a
    refused add removes the file again.

    Raises:
        FolderError: the file exists or cannot be made, or a bad name or one taken.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise FolderError(f"token file {path} exists: give a new file") from None
    except OSError as exc:
        raise FolderError(f"token file {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            os.fchmod(f.fileno(), 0o600)
            participant_id, token = add_participant(comp, name, now)
            f.write(token + "\n")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return participant_id


def add_participant(comp: Competition, name: str, now: float | None = None) -> tuple[int, str]:
    """Add a participant with a fresh token; ``(participant id, token)``.
    Only the token's SHA-256 is stored.

    Raises:
        FolderError: a bad name or one taken.
    """
    from arena.sandbox.entrants import EntrantError, check_name

    try:
        check_name(name)
    except EntrantError as exc:
        raise FolderError(str(exc).replace("entrant name", "participant name")) from None
    token = new_token()
    stamp = time.time() if now is None else now
    try:
        with comp.database.write() as conn:
            p = store.add_participant(conn, name, stamp, display_name_from(name))
            store.add_token(conn, p.id, store.token_hash(token), stamp)
    except store.StoreError as exc:
        raise FolderError(str(exc)) from None
    return p.id, token


def set_status(comp: Competition, name: str, status: str, now: float | None = None) -> None:
    """Suspend or revoke a participant (:func:`arena.server.store.set_participant_status`).

    Raises:
        FolderError: no such participant.
    """
    try:
        with comp.database.write() as conn:
            store.set_participant_status(conn, name, status, time.time() if now is None else now)
    except store.StoreError as exc:
        raise FolderError(str(exc)) from None


def listing(comp: Competition) -> list[str]:
    """The lines of ``--list``: each participant (status, submissions, the
    latest's number and status), then every void table with its reason.
    Text that came from participants or bots passes :func:`clean_text`."""
    lines: list[str] = []
    with comp.database.read() as conn:
        people = store.list_participants(conn)
        subs = {p.id: store.submissions_of(conn, p.id) for p in people}
        voids = store.void_tables(conn)
        through = store.rated_through(conn)
    rated = (
        "no ladder table rated yet"
        if through == 0
        else f"rated through ladder table {through - 1} ({through} tables)"
    )
    lines.append(f"{len(people)} participants, {rated}")
    for p in people:
        mine = subs[p.id]
        latest = (
            f", latest #{mine[0].id} {mine[0].status}"
            + (
                f" ({mine[0].failed_step}: {clean_text(mine[0].reason or '', 120)})"
                if mine[0].status == "failed"
                else ""
            )
            if mine
            else ""
        )
        lines.append(f"  {clean_text(p.name)}  {p.status}, {len(mine)} submissions{latest}")
    lines.append(f"{len(voids)} void tables")
    for t in voids:
        lines.append(
            f"  {t.numbering} table {t.number} ({t.deal_key}): "
            f"{clean_text(t.void_reason or 'void', 200)}"
        )
        lines.append(f"    seats: {', '.join(clean_text(n, 40) for n in t.seating)}")
    return lines


def describe_settings(settings: CompetitionSettings) -> Sequence[str]:
    """Short lines describing the settings (printed by ``--init``)."""
    g = settings.game
    length = f"{g.hands} hands" if g.hands is not None else f"to {g.target_score} points"
    return [
        f"games: {length}, {g.time_limit:g} s a decision, struck out after {g.strikes} timeouts",
        f"ladder: lag {settings.ladder.lag} tables, house bots "
        f"{', '.join(settings.ladder.house_bots)}, fault budget {settings.ladder.fault_budget}",
    ]


def submission_dir(paths: CompetitionPaths, sha256: str) -> Path:
    """Where a submission's files are kept, by its SHA-256: ``uploads/<sha256>/``
    holding ``bot.py`` (a ``.py`` submission) or the unpacked zip (``bot.toml``
    at its root). The web process writes it; the runner only reads it."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise FolderError(f"not a SHA-256: {sha256[:70]!r}")
    return paths.uploads / sha256


@cache
def settings_of(uploads: Path) -> CompetitionSettings:
    """The settings of the competition whose uploads folder is ``uploads``
    (``DIR/uploads`` -> ``DIR/competition.toml``; the database may be
    PostgreSQL's, so not its file), the defaults when there is no such file.

    Raises:
        FolderError: the file is there but not valid settings.
    """
    path = Path(uploads).parent / SETTINGS_NAME
    return CompetitionSettings.read(path) if path.is_file() else CompetitionSettings()
