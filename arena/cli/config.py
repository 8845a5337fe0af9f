"""``hearts-arena run --config FILE``: entrants and settings from a TOML file.

The file's top-level keys are the flags of ``run`` with ``_`` or ``-``
(``time_limit = 0.5``, ``fail-if = ["faults>0"]``, ``format = "gauntlet"``,
``dry_run = true``); values have the TOML type that fits (numbers, text,
booleans, a list for a repeatable flag) and are checked as the flag's value
would be. Entrants are an array of tables::

    [[entrants]]
    name = "mine"                  # optional with path or sample
    command = "python3 my_bot.py"  # NAME=COMMAND (needs name)
    # or: path = "bots/my_bot.py"  # a program or .py file
    # or: sample = "low"           # a sample bot shipped with the arena
    dir = "bots/mine"              # optional: the entrant's folder (default: its program's)

Relative paths (entrant files and commands, ``out``, ``junit``) are taken
from the file's folder. Flags given on the command line override the file;
bots given on the command line replace its entrants. A ``path`` entrant
runs in the folder of its program, a ``command`` one in that of its first
word naming a file (else the file's folder), or in its ``dir``;
a path is used whole, whatever characters it holds. Every error names the
file, the key and the problem (exit code 2). See ``examples/tournament.toml``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tomllib
from pathlib import Path
from typing import Any, Final

from arena.cli.errors import EXIT_USAGE, CliError
from arena.cli.options import (
    RUN_OPTIONS,
    UsageParser,
    add_run_options,
    exclusive_partners,
    file_keys,
    option_for,
)
from arena.sandbox.entrants import Entrant, EntrantError, check_unique, with_folders

_ENTRANT_KEYS: Final = frozenset({"name", "command", "path", "sample", "dir"})


def given_on_command_line(argv: list[str]) -> set[str]:
    """The ``run`` flags (by ``dest``) that ``argv`` (``["run", ...]``, as
    given to ``hearts-arena``) gives explicitly, whatever their spelling
    (``--time-limit=2``, ``--time-limit 2``): ``argv`` parsed again by the
    options of ``run`` without their defaults.

    Raises:
        CliError: exit 2, ``argv`` is not a valid ``run`` command line.
    """
    words = argv[1:] if argv[:1] == ["run"] else argv
    parser = UsageParser(prog="hearts-arena run", allow_abbrev=False, add_help=False)
    add_run_options(parser, suppress=True)
    return set(vars(parser.parse_args(words)))


def _entrant(entry: Any, where: str, base: Path) -> Entrant:
    """One ``[[entrants]]`` table as an :class:`Entrant`, built from its typed
    fields (a ``path`` is one path whatever characters it holds, and runs in
    its program's folder, a ``command`` in that of the first word naming a
    file, else the file's folder; ``dir`` names another folder holding the
    program)."""
    if not isinstance(entry, dict):
        raise CliError(f"{where}: must be a table with command, path or sample")
    unknown = set(entry) - _ENTRANT_KEYS
    if unknown:
        raise CliError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    kinds = [k for k in ("command", "path", "sample") if k in entry]
    if len(kinds) != 1:
        raise CliError(f"{where}: give exactly one of command, path and sample")
    for key, value in entry.items():
        if not isinstance(value, str) or not value:
            raise CliError(f"{where}.{key}: must be non-empty text")
    if "dir" in entry and "sample" in entry:
        raise CliError(f"{where}.dir: a sample bot has its own folder")
    entrant = _entrant_of_kind(entry, where, base)
    folder = _entrant_dir(entry, where, base)
    if folder is None:
        return entrant
    try:
        return with_folders([entrant], [folder])[0]
    except EntrantError as exc:
        raise CliError(f"{where}.dir: {exc}") from None


def _entrant_dir(entry: dict[str, Any], where: str, base: Path) -> Path | None:
    """An entrant's ``dir``, relative to the file's folder; ``None`` if not given.

    Raises:
        CliError: the folder does not exist.
    """
    text = entry.get("dir")
    if text is None:
        return None
    folder = Path(os.path.normpath(base / text))
    if not folder.is_dir():
        raise CliError(f"{where}.dir: no such folder: {folder}")
    return folder.resolve()


def _entrant_of_kind(entry: dict[str, Any], where: str, base: Path) -> Entrant:
    """The entrant of a checked ``[[entrants]]`` table, from its ``command``,
    ``path`` or ``sample``."""
    from arena.sandbox.entrants import (
        SAMPLE_BOTS,
        command_entrant,
        path_entrant,
        sample_entrant,
    )

    name: str | None = entry.get("name")
    kind = next(k for k in ("command", "path", "sample") if k in entry)
    try:
        if kind == "command":
            if name is None:
                raise CliError(f"{where}: an entrant given by command needs a name")
            try:
                argv = shlex.split(entry["command"])
            except ValueError as exc:
                raise EntrantError(f"cannot split the command: {exc}") from None
            return command_entrant(name, argv, base=base, given=f"{name}={entry['command']}")
        if kind == "sample":
            sample = entry["sample"]
            if sample not in SAMPLE_BOTS:
                raise CliError(f"{where}.sample: one of {', '.join(SAMPLE_BOTS)}, got {sample!r}")
            return sample_entrant(sample, name)
        path = Path(entry["path"])
        path = path if path.is_absolute() else Path(os.path.normpath(base / path))
        return path_entrant(path, name=name, given=str(path))
    except EntrantError as exc:
        raise CliError(f"{where}.{kind}: {exc}") from None


def load_config(path: Path) -> tuple[dict[str, Any], list[Entrant]]:
    """Read a config file: ``(values by flag dest, entrants)``.

    Raises:
        CliError: exit 2: the file cannot be read or is not TOML, an unknown
            key, a bad value, two keys of one exclusive pair (``hands``
            and ``target_score``), an unusable entrant (a missing file, a
            command not on ``PATH``, two entrants of one name); the message
            names the file and the key.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"--config {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: not TOML: {exc}", EXIT_USAGE) from None
    base = path.resolve().parent
    values: dict[str, Any] = {}
    entrants: list[Entrant] = []
    for key, value in data.items():
        where = f"{path}: key '{key}'"
        if key in ("entrants", "entrant"):
            if not isinstance(value, list):
                raise CliError(f"{where}: must be an array of tables ([[entrants]])")
            entrants = [_entrant(e, f"{path}: key '{key}[{i}]'", base) for i, e in enumerate(value)]
            try:
                check_unique(entrants)
            except EntrantError as exc:
                raise CliError(f"{path}: key '{key}': {exc}") from None
            continue
        dest = key.replace("-", "_")
        option = option_for(dest)
        if option is None:
            known = ", ".join(sorted(["entrants", *file_keys()]))
            raise CliError(f"{where}: unknown key (known: {known})")
        values[dest] = option.convert(value, where, base)
    for dest, others in sorted(exclusive_partners().items()):
        clash = others & set(values)
        if dest in values and clash:
            raise CliError(f"{path}: keys '{dest}' and '{sorted(clash)[0]}' cannot both be given")
    return values, entrants


#: Options that only one format takes: a command line that names another
#: ``--format`` drops them from the file.
FORMAT_OPTIONS: Final = {o.dest: o.only_format for o in RUN_OPTIONS if o.only_format}


def apply_config(args: argparse.Namespace, argv: list[str]) -> None:
    """Fill ``args`` (parsed ``run`` flags) from ``args.config``, if given:
    a value from the file is used unless ``argv`` gives that flag (or one
    exclusive with it, or a ``--format`` the file's option does not belong
    to: see :data:`FORMAT_OPTIONS`); the file's entrants (resolved from the
    file's folder) are used unless ``argv`` names bots (resolved from the
    current folder, as any command-line path).

    Raises:
        CliError: see :func:`load_config`.
    """
    path: Path | None = getattr(args, "config", None)
    if path is None:
        return
    values, entrants = load_config(path)
    given = given_on_command_line(argv)
    partners = exclusive_partners()
    for dest, value in values.items():
        if dest in given or partners.get(dest, set()) & given:
            continue
        if dest in FORMAT_OPTIONS and "format" in given and args.format != FORMAT_OPTIONS[dest]:
            continue  # the file's option belongs to the format the command line replaced
        setattr(args, dest, value)
    if entrants and not args.bots:  # bots on the command line: from the current folder
        args.entrants = entrants  # typed already: never joined into text again
