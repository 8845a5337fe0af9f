"""A tournament's ``run.json`` (its settings, entrants and game count), read
and written whole.

``run`` writes it before the first game; ``report``, ``verify``, ``replay``,
``watch``, ``cleanup`` and ``run --resume`` read it back with
:func:`read_run` (typed, :class:`arena.tournament.settings.RunFile`).
Every write goes through :func:`write_whole`, so a
full disk leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arena.core.keys import MasterKey
from arena.tournament.settings import NotARunFileError, RunFile, SettingsError


class RunFileError(ValueError):
    """A ``run.json`` that cannot be read or is not a tournament's (one line,
    naming the file)."""


def write_whole(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (no temporary file left on failure).

    Raises:
        OSError: it could not be written (a full disk).
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_run(path: Path, key: MasterKey | None = None) -> RunFile:
    """A tournament's ``run.json``, typed (:class:`arena.tournament.settings.RunFile`;
    ``key``: the run's key when known, else the recorded seed's, if any).

    Raises:
        RunFileError: the file cannot be read or is not a run file.
    """
    try:
        return RunFile.read(path, key)
    except NotARunFileError:
        raise RunFileError(
            f"{path} is not a tournament's run file (settings, seed, entrants or "
            "games_total missing or of the wrong type)"
        ) from None
    except SettingsError as exc:
        raise RunFileError(str(exc)) from None


def load_run_file(path: Path) -> dict[str, Any]:
    """A tournament's ``run.json`` as JSON, once :func:`read_run` has read it
    (for a caller that shows or copies the record as it is).

    Raises:
        RunFileError: see :func:`read_run`.
    """
    read_run(path)
    info: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return info


def write_run_file(path: Path, run: RunFile) -> None:
    """Write ``run`` as ``run.json`` (indented JSON), whole or not at all.

    Raises:
        OSError: it could not be written (a full disk).
    """
    write_whole(path, json.dumps(run.to_json(), indent=2) + "\n")


def set_games_total(path: Path, total: int) -> None:
    """Store a finished ladder's scheduled games as ``games_total`` in the
    ``run.json`` at ``path`` (announced as the budget before the first
    game), so ``hearts-arena report`` gives the same ``results.json``.

    Raises:
        OSError: the file could not be read or written.
        RunFileError: it is not a run file.
    """
    info = json.loads(path.read_text(encoding="utf-8"))
    read_run(path)  # a run file, checked
    info["games_total"] = total
    write_whole(path, json.dumps(info, indent=2) + "\n")
