"""Bot folders: a folder holding a ``bot.toml`` that says how its bot starts.

A ``bot.toml`` (its format: ``protocol/BOT_TOML.md``, its schema:
``protocol/bot_toml.schema.json``) has ``command`` (required), and optionally
``name`` and ``build``::

    name = "go-kit"
    build = "go build -o bot ."
    command = "./bot"

Both commands are split as a POSIX shell splits words (``shlex.split``),
never run through a shell, and run in the folder. :func:`load_bot_folder`
reads and checks the file; :mod:`arena.sandbox.entrants` turns it into an
entrant that runs in the folder (sealed, it sees that folder only), and
``hearts-arena build DIR`` runs ``build``. ``run`` and ``check`` never build:
a build runs the author's code unsealed, with the rights of whoever starts
it, so it is an explicit step of the author's (or of an organiser's own
build sandbox), never a side effect of entering a folder.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from arena.core.resources import protocol_dir

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

#: The file that makes a folder a bot folder.
BOT_TOML: Final = "bot.toml"
#: Largest ``bot.toml`` read, in bytes.
MAX_BOT_TOML_BYTES: Final = 64 * 1024


#: The keys of a ``bot.toml`` (those of its schema).
_KNOWN_KEYS: Final = ("build", "command", "name")


class BotFolderError(ValueError):
    """A bot folder whose ``bot.toml`` cannot be used; the message is one
    line naming the file and the key."""


@dataclass(frozen=True, slots=True)
class BotFolder:
    """A checked ``bot.toml``.

    Attributes:
        folder: the bot folder (absolute).
        command: the words of ``command``.
        name: ``name``, or ``None`` when not given.
        build: the words of ``build``, or ``None`` when not given.
    """

    folder: Path
    command: tuple[str, ...]
    name: str | None
    build: tuple[str, ...] | None

    def missing_files(self) -> list[str]:
        """The words of ``command`` naming a file of the folder that is not
        there (a path with ``/``, or a name with a suffix such as
        ``bot.jar``, not an option), when the folder has a ``build``: what
        a build makes. Empty when nothing is missing or there is no build."""
        if self.build is None:
            return []
        missing = []
        for i, word in enumerate(self.command):
            if word.startswith("-") or Path(word).is_absolute():
                continue
            looks_like_file = "/" in word or (i > 0 and Path(word).suffix != "")
            if looks_like_file and not (self.folder / word).exists():
                missing.append(word)
        return missing


@cache
def _validator() -> Draft202012Validator:
    # jsonschema is loaded with the first bot.toml read, not with the module.
    from jsonschema import Draft202012Validator

    schema = json.loads((protocol_dir() / "bot_toml.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def preload() -> None:
    """Load now what reading a ``bot.toml`` loads on first use (jsonschema,
    the schema file): a process that drops its privileges before its first
    read (the server's web process) could no longer import or read them from
    an installation its new user cannot enter."""
    import jsonschema.exceptions  # noqa: F401

    _validator()


def _words(value: str, where: str) -> tuple[str, ...]:
    try:
        words = tuple(shlex.split(value))
    except ValueError as exc:
        raise BotFolderError(f"{where}: cannot split it into words: {exc}") from None
    if not words:
        raise BotFolderError(f"{where}: holds no command")
    return words


def is_bot_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding a ``bot.toml``."""
    try:
        return path.is_dir() and (path / BOT_TOML).is_file()
    except OSError:
        return False


def load_bot_folder(folder: Path) -> BotFolder:
    """Read and check ``folder/bot.toml`` (tomllib, then the JSON Schema
    ``protocol/bot_toml.schema.json``).

    Raises:
        BotFolderError: no ``bot.toml``, larger than 64 KiB, not UTF-8 TOML,
            an unknown or missing key, a value of the wrong type or empty, a
            command that cannot be split; one line naming the file and key.
    """
    folder = folder.resolve()
    path = folder / BOT_TOML
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BOT_TOML_BYTES + 1)
    except OSError as exc:
        raise BotFolderError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BOT_TOML_BYTES:
        raise BotFolderError(f"{path}: larger than {MAX_BOT_TOML_BYTES // 1024} KiB")
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BotFolderError(f"{path}: not TOML: {exc}") from None
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise BotFolderError(f"{path}: {_describe(error, data)}")
    return BotFolder(
        folder=folder,
        command=_words(data["command"], f"{path}: key 'command'"),
        name=data.get("name"),
        build=_words(data["build"], f"{path}: key 'build'") if "build" in data else None,
    )


def _describe(error: Any, data: dict[str, Any]) -> str:
    """One line for a schema error: the key and what is wrong with it."""
    keys = set(_KNOWN_KEYS)
    known = ", ".join(sorted(keys))
    if error.validator == "additionalProperties":
        unknown = sorted(set(data) - keys)
        return f"unknown key '{unknown[0]}' (known: {known})"
    if error.validator == "required":
        return "key 'command' is missing: the command that starts the bot"
    key = str(error.path[0]) if error.path else "?"
    if error.validator == "type":
        return f"key '{key}': must be text, got {type(error.instance).__name__}"
    if error.validator == "minLength":
        return f"key '{key}': must not be empty"
    if error.validator == "maxLength":
        return f"key '{key}': longer than {error.validator_value} characters"
    return f"key '{key}': {error.message[:200]}"
