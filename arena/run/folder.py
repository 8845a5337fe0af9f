"""A run's output folder: its lock (:func:`out_lock`, :func:`folder_not_in_use`),
its key file (:func:`read_key_file`, :func:`write_key_file`,
:func:`check_key_file_private`), and the record store kept in it
(:class:`FolderStore`: ``games.jsonl``, ``run.json``, ``results.json``).

:class:`RecordStore` is what a :class:`arena.run.Run` needs of a store; a
server may keep its records elsewhere (a database) behind the same three
methods.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Protocol

from arena.core.keys import BadKeyError, MasterKey
from arena.protocol.records import GameRecordJSON
from arena.report.outputs import GAMES_FILE, INDEX_FILE, RESULTS_FILE, RUN_FILE
from arena.report.runfile import RunFileError, read_run, set_games_total, write_run_file
from arena.run.errors import RunError
from arena.tournament.runner import FORMAT_VERSION, Journal, read_journal
from arena.tournament.settings import RunFile

#: The master key of a run, in its output folder (owner-only, as the folder).
KEY_FILE: Final = "tournament.key"
#: The output folder's lock (owner-only).
LOCK_FILE: Final = ".hearts-arena.lock"


def read_key_file(path: Path) -> MasterKey:
    """A master key from a file of 64 hexadecimal digits (``--key-file``,
    or a run's ``tournament.key``).

    Raises:
        RunError: (usage) the file cannot be read or holds no key.
    """
    try:
        text = path.read_text(encoding="ascii", errors="strict")[:1000]
        return MasterKey.from_hex(text)
    except (OSError, UnicodeDecodeError, BadKeyError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RunError(f"key file {path}: {reason}", "usage") from None


def check_key_file_private(path: Path) -> None:
    """Refuse a key file that users other than its owner may read (issue 11).

    An unsealed bot (``--no-sandbox``) reads the file's name on the arena's
    command line (``/proc/PID/cmdline`` is readable by every uid) and, if it
    may, the key in it, and with it every deal of the tournament.

    Raises:
        RunError: (usage) the file's group or others may read it. A file
            that cannot be examined is left to :func:`read_key_file` to report.
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise RunError(
            f"key file {path} can be read by other users ({stat.filemode(mode)}), so bots "
            f"could read it: make it owner-only (chmod 600 {path})",
            "usage",
        )


def write_key_file(out: Path, key: MasterKey) -> None:
    """Keep the key for a resume in ``out/tournament.key``, readable by its owner only.

    Raises:
        OSError: it cannot be written.
    """
    path = out / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(key.hex() + "\n")


def stored_key(out: Path, run: RunFile) -> MasterKey:
    """The key of the run recorded in ``out``: its public seed's, else its key file's.

    Raises:
        RunError: (output) the key file is missing; (usage) it holds no key.
    """
    seed = run.settings.tournament.seed
    if seed is not None:
        return MasterKey.from_seed(seed)
    path = out / KEY_FILE
    if not path.exists():
        raise RunError(
            f"--resume: the key of the run in {out} is missing ({KEY_FILE}); "
            "give it with --key-file",
            "output",
        )
    return read_key_file(path)


def read_run_file(path: Path) -> RunFile:
    """A tournament's ``run.json``, typed (see :func:`arena.report.runfile.read_run`).

    Raises:
        RunError: (output) it cannot be read or is not a run file.
    """
    try:
        return read_run(path)
    except RunFileError as exc:
        raise RunError(str(exc), "output") from None


@contextlib.contextmanager
def out_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output folder (created owner-only if
    needed) for the run, so that a second run on the same folder, even one
    replacing it, is refused instead of destroying this one's games.

    Raises:
        RunError: (output) another run holds the folder, or it cannot be used.
    """
    try:
        if out.exists() and not out.is_dir():
            raise RunError(f"--out {out} is a file, not a folder", "output")
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Owner-only: the key, run.json and the journal are no bot's business.
        os.chmod(out, 0o700)
    except OSError as exc:
        raise RunError(
            f"cannot create the output folder {out}: {exc.strerror or exc}", "output"
        ) from None
    try:
        # Owner-only: a bot running as another uid cannot open it to take the lock.
        fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)
    except OSError as exc:
        raise RunError(
            f"cannot use the output folder {out}: {exc.strerror or exc}", "output"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(
                f"another hearts-arena run is writing to {out}; wait for it or use another --out",
                "output",
            ) from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_not_in_use(folder: Path) -> Iterator[None]:
    """For a reader that rewrites a folder (``report``, ``audit``): hold the
    lock of a tournament folder (see :func:`out_lock`) if it has one, so that
    a run writing it now makes the reader refuse. The folder is not created
    and needs no write access for the lock.

    Raises:
        RunError: (output) a run is writing to ``folder``.
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
            raise RunError(
                f"a hearts-arena run is writing to {folder}; rebuild its report when the "
                "run has finished (the run writes it itself at the end)",
                "output",
            ) from None
        yield
    finally:
        os.close(fd)


class RecordStore(Protocol):
    """Where a run keeps its finished games' records, in completion order.

    :meth:`append` keeps a record for good (on disk, in a database) before it
    returns; :meth:`records` gives every record kept, those of an earlier run
    being resumed first; :meth:`close` ends the store, mending what an
    interruption between two appends may have left.
    """

    def append(self, record: GameRecordJSON) -> None:
        """Keep ``record``.

        Raises:
            OSError: it could not be kept (a full disk): the run stops.
        """
        ...

    def records(self) -> list[GameRecordJSON]:
        """Every record kept (a copy of the list)."""
        ...

    def close(self) -> None:
        """End the store."""
        ...


def holds_tournament(out: Path) -> bool:
    """Whether ``out`` holds a tournament's files."""
    return any((out / f).exists() for f in (GAMES_FILE, RESULTS_FILE, RUN_FILE))


def _difference(key: str, old: Any, new: Any) -> str:
    """``rounds: recorded 2, given 3`` (values cut to 60 characters; the
    entrants by name)."""
    if key == "entrants":
        old = [e.get("name") for e in old or [] if isinstance(e, dict)]
        new = [e.get("name") for e in new or [] if isinstance(e, dict)]
        if old == new:
            return "entrants: same names, other commands or folders"
    return f"{key}: recorded {json.dumps(old)[:60]}, given {json.dumps(new)[:60]}"


class FolderStore:
    """A run's records in its output folder: ``games.jsonl`` (the journal,
    a line per game, synced as each game ends), ``run.json`` (the settings,
    written before the first game) and the outputs written at the end
    (``results.json``, the HTML: :func:`arena.report.outputs.write_outputs`).

    Open it with :meth:`open` (which also takes the folder's lock for as long
    as the store is open); :meth:`close` closes the journal and releases the lock.
    """

    def __init__(self, out: Path, run: RunFile, records: list[GameRecordJSON]) -> None:
        self.out = out
        self.run = run
        self._records = records
        self._stack = contextlib.ExitStack()
        self._journal: Journal | None = None
        self._failed = False

    @classmethod
    def open(cls, out: Path, run: RunFile, *, resume: bool, overwrite: bool) -> FolderStore:
        """Take ``out`` for ``run``: lock it, then either read the records of
        the run it holds (``resume``: ``run``'s settings must be those
        recorded, but for ``jobs``) or start it afresh (writing ``run.json``;
        a folder holding another tournament is refused unless ``overwrite``).

        Raises:
            RunError: (output) the folder is in use, cannot be written, holds
                another tournament, no tournament to resume, one with other
                settings or of an older format.
        """
        stack = contextlib.ExitStack()
        stack.enter_context(out_lock(out))
        try:
            try:
                records = cls._prepare(out, run, resume=resume, overwrite=overwrite)
            except OSError as exc:
                raise RunError(
                    f"cannot use the output folder {out}: {exc.strerror or exc}", "output"
                ) from None
            store = cls(out, run, records)
            try:
                store._journal = Journal(out / GAMES_FILE)
            except OSError as exc:
                raise store.output_error(exc) from None
        except BaseException:
            stack.close()
            raise
        store._stack = stack
        return store

    @staticmethod
    def _prepare(out: Path, run: RunFile, *, resume: bool, overwrite: bool) -> list[GameRecordJSON]:
        if resume:
            run_path = out / RUN_FILE
            if not run_path.exists():
                raise RunError(
                    f"--resume: {out} holds no tournament to resume ({RUN_FILE} is missing)",
                    "output",
                )
            old = read_run_file(run_path)
            if old.format_version != FORMAT_VERSION:
                raise RunError(
                    f"--resume: {out} was written by an older hearts-arena (format "
                    f"{old.format_version}, this one writes {FORMAT_VERSION}); "
                    "start it again with --overwrite",
                    "output",
                )
            diff = old.settings.differences(run.settings)
            if diff:
                was, now = old.settings.to_json(), run.settings.to_json()
                shown = [_difference(k, was.get(k), now.get(k)) for k in diff]
                raise RunError(
                    f"--resume: settings differ from the run in {out}: {'; '.join(shown)} "
                    "(give only --out and --resume to continue it as recorded)",
                    "output",
                )
            try:
                return read_journal(out / GAMES_FILE, run.settings.names)
            except (OSError, ValueError) as exc:
                raise RunError(f"--resume: {exc}", "output") from None
        if holds_tournament(out):
            if not overwrite:
                raise RunError(
                    f"{out} already holds a tournament; "
                    "use --overwrite to replace it or --resume to continue it",
                    "output",
                )
            for name in (GAMES_FILE, RESULTS_FILE, RUN_FILE, INDEX_FILE):
                (out / name).unlink(missing_ok=True)
        write_run_file(out / RUN_FILE, run)
        return []

    def append(self, record: GameRecordJSON) -> None:
        """Journal ``record`` (a whole line or nothing); the copy kept for
        the report drops its transcripts (the report never reads them).
        After a failed write, records are kept in memory only (the games
        still ending are played again by a resume).

        Raises:
            OSError: the line could not be written.
        """
        # In memory first: an interruption between the two steps is mended by close().
        self._records.append(record)
        if self._failed or self._journal is None:
            return
        try:
            self._journal.append(record)
        except OSError:
            self._failed = True
            raise
        record.pop("transcripts", None)

    def records(self) -> list[GameRecordJSON]:
        """Every record kept, those of the run resumed first."""
        return list(self._records)

    def set_games_total(self, total: int) -> None:
        """Record a finished ladder's scheduled games in ``run.json``.

        Raises:
            OSError: it could not be written.
        """
        set_games_total(self.out / RUN_FILE, total)

    def write_key(self, key: MasterKey) -> None:
        """Keep ``key`` in the folder's key file (for a resume).

        Raises:
            RunError: (output) it cannot be written.
        """
        try:
            write_key_file(self.out, key)
        except OSError as exc:
            raise RunError(
                f"cannot write to the output folder {self.out}: {exc.strerror or exc}", "output"
            ) from None

    def output_error(self, exc: OSError) -> RunError:
        """The one-line error (output) for a folder that cannot be written."""
        return output_error(self.out, exc)

    def close(self) -> None:
        """Close the journal (mending a line an interruption cut; after a
        failed write, as it is) and release the folder's lock.

        Raises:
            OSError: the journal could not be mended.
        """
        try:
            if self._journal is not None:
                journal, self._journal = self._journal, None
                journal.close(() if self._failed else self._records)
        finally:
            self._stack.close()


def resume_command(out: Path) -> str:
    """The command line that continues the run in ``out``, quoted for a shell."""
    import shlex

    return f"hearts-arena run --resume --out {shlex.quote(str(out))}"


def output_error(out: Path, exc: OSError) -> RunError:
    """The one-line error (output) for an output folder that cannot be written."""
    kept = len(read_journal(out / GAMES_FILE, checked=False)) if (out / GAMES_FILE).exists() else 0
    return RunError(
        f"cannot write to the output folder {out}: {exc.strerror or exc}; {kept} games are "
        f"kept in {GAMES_FILE}: make room, then continue with: {resume_command(out)}",
        "output",
    )
