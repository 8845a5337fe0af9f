"""A tournament's ``run.json`` (its settings, entrants and game count), read
and written whole.

``run`` writes it before the first game; ``report``, ``verify``, ``replay``,
``watch``, ``cleanup`` and ``run --resume`` read it back with
:func:`load_run_file`. Every write goes through :func:`write_whole`, so a
full disk leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


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


def load_run_file(path: Path) -> dict[str, Any]:
    """A tournament's ``run.json``: an object with ``settings`` (an object
    with ``seed`` and ``entrants``, each entrant an object with a ``name``)
    and ``games_total`` (an int).

    Raises:
        RunFileError: the file cannot be read or is not such an object.
    """
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunFileError(f"{path} cannot be read as a run file: {exc}") from None
    settings = info.get("settings") if isinstance(info, dict) else None
    entrants = settings.get("entrants") if isinstance(settings, dict) else None
    if (
        not isinstance(info, dict)
        or not isinstance(settings, dict)
        or not isinstance(entrants, list)
        or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in entrants)
        or not isinstance(settings.get("seed"), int | str | None)
        or type(info.get("games_total")) is not int
    ):
        raise RunFileError(
            f"{path} is not a tournament's run file (settings, seed, entrants or "
            "games_total missing or of the wrong type)"
        )
    return info


def write_run_file(path: Path, info: dict[str, Any]) -> None:
    """Write ``info`` as ``run.json`` (indented JSON), whole or not at all.

    Raises:
        OSError: it could not be written (a full disk).
    """
    write_whole(path, json.dumps(info, indent=2) + "\n")


def set_games_total(path: Path, total: int) -> None:
    """Store a finished ladder's scheduled games as ``games_total`` in the
    ``run.json`` at ``path`` (announced as the budget before the first
    game), so ``hearts-arena report`` gives the same ``results.json``.

    Raises:
        OSError: the file could not be read or written.
        ValueError: it is not JSON.
    """
    info = json.loads(path.read_text(encoding="utf-8"))
    info["games_total"] = total
    write_run_file(path, info)
