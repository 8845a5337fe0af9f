"""Entrants: who plays, how their program is started, and in what environment.

An entrant is given on the command line as one of:

* a path to an executable file (its name is the file's stem, as given: a
  symbolic link is named after itself, and runs the file it points to);
* a path to a ``.py`` file, run with the same Python as the arena;
* ``NAME=COMMAND``: the command split as a POSIX shell would split it
  (``shlex.split``) but never run through a shell. If its first word names an
  existing ``.py`` file, that file is run with the arena's Python. A bare
  first word must be found on ``PATH``. When the whole ``COMMAND`` is an
  existing file, it is that file entered as ``NAME`` (not split);
* ``sample:NAME`` or ``NAME=sample:SAMPLE``: a sample bot shipped with the
  package (:data:`SAMPLE_BOTS`);
* a bot folder, ``DIR`` or ``NAME=DIR``: a folder holding a ``bot.toml``
  (:mod:`arena.sandbox.botfolder`), whose ``command`` runs in that folder.

Each form is parsed once into an :class:`Entrant` (``--config`` builds them
from TOML with :func:`path_entrant`, :func:`command_entrant` and
:func:`sample_entrant`; ``--resume`` from ``run.json`` with
:func:`entrant_from_record`); no entrant is ever turned back into text and
split again. A bot runs in the folder of its program file (for
``NAME=COMMAND``, the folder of the first word naming a file, such as
``bot.jar`` in ``java -jar bot.jar``; when no word names a file, the folder
the arena was started in, or the config file's), with a fresh private
temporary folder as ``HOME`` and ``TMPDIR`` and a small
explicit environment (:func:`bot_environment`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import sys
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from arena.core.resources import sample_bots_dir
from arena.sandbox.botfolder import BotFolderError, is_bot_folder, load_bot_folder

#: Longest entrant name, in characters.
MAX_NAME_CHARS: Final = 64
#: The sample bots shipped with the package: entrant name -> file in ``sample_bots/``.
SAMPLE_BOTS: Final = {
    "duck": "duck_bot.py",
    "heuristic": "heuristic_bot.py",
    "kit": "kit_bot.py",
    "low": "low_bot.py",
    "random": "random_bot.py",
    "search": "search_bot.py",
}
#: The sample bots of ``hearts-arena run`` without bots.
DEFAULT_SAMPLES: Final = ("duck", "heuristic", "low", "random")
#: The sample bots that import only the standard library: run with
#: ``python -S`` (no ``site``: no site-packages and none of their ``.pth``
#: files, which on some machines import modules at every interpreter start:
#: 3 ms less CPU a start where none does, 19 ms where one imports ``certifi``).
#: The kit and search samples import the arena package.
STANDARD_LIBRARY_SAMPLES: Final = frozenset(DEFAULT_SAMPLES)


class EntrantError(ValueError):
    """An entrant that cannot be used (missing file, bad or duplicate name)."""


@dataclass(frozen=True, slots=True)
class Entrant:
    """One player of a tournament.

    Attributes:
        name: unique name shown in the standings.
        argv: the command that starts its program.
        cwd: the folder it runs in.
        source: how the user gave it (for the settings record).
        program: the file its command runs (a script or an executable)
            when it was given by path; checked by the launcher before
            anything starts. ``None`` for a command found on ``PATH``.
    """

    name: str
    argv: tuple[str, ...]
    cwd: Path
    source: str
    program: Path | None = None


def check_name(name: str) -> str:
    """Return ``name`` if it is a usable entrant name.

    Raises:
        EntrantError: empty, longer than 64 characters, leading or trailing
            space, or holding a control, format (bidirectional override and
            the like) or unassigned character.
    """
    if not name:
        raise EntrantError("an entrant name is empty")
    if len(name) > MAX_NAME_CHARS:
        raise EntrantError(
            f"entrant name {name[:20]!r}... is longer than {MAX_NAME_CHARS} characters"
        )
    if name != name.strip():
        raise EntrantError(f"entrant name {name!r} starts or ends with a space")
    for ch in name:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            raise EntrantError(
                f"entrant name {name!r} holds a control or bidirectional character U+{ord(ch):04X}"
            )
    return name


def _python_file(path: Path) -> bool:
    return path.suffix == ".py" and _is_file(path)


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; a name too long for the file system does not."""
    try:
        return path.exists()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (or a link to one); a name too long
    for the file system is not."""
    try:
        return path.is_file()
    except OSError:
        return False


def path_entrant(path: Path, *, name: str | None = None, given: str | None = None) -> Entrant:
    """An entrant given as a program file (``.py`` files run with the arena's
    Python), named ``name`` (default: the stem of ``path`` as given: a
    symbolic link is named after itself, not after the file it points to). The
    program run is the file ``path`` resolves to, and it runs in (and,
    sealed, is given a copy of) that file's folder. ``path`` is used as one
    path, whatever characters it holds (spaces, quotes, ``=``, any script):
    it is never split.

    Raises:
        EntrantError: the file is missing, a folder or not executable, or the
            name is unusable.
    """
    shown = given if given is not None else str(path)
    if not _exists(path):
        raise EntrantError(f"bot file not found: {shown[:200]}")
    if is_bot_folder(path):
        return folder_entrant(path, name=name, given=shown)
    if path.is_dir():
        raise EntrantError(
            f"bot {shown[:200]} is a folder without a bot.toml; give the program file inside it "
            "or write a bot.toml (protocol/BOT_TOML.md)"
        )
    name = check_name(name if name is not None else path.stem)  # the name typed, links kept
    path = path.resolve()
    if path.suffix == ".py":
        return Entrant(name, (sys.executable, str(path)), path.parent, shown, path)
    if not os.access(path, os.X_OK):
        raise EntrantError(
            f"bot {shown[:200]} is not executable (chmod +x it, or give NAME=COMMAND)"
        )
    return Entrant(name, (str(path),), path.parent, shown, path)


def command_entrant(
    name: str, argv: Sequence[str], *, base: Path, given: str | None = None
) -> Entrant:
    """An entrant given as a command (already split into words: never run
    through a shell). Words naming existing files (relative to ``base``) are
    made absolute, and it runs in the folder of its program (see
    :func:`_absolute_files`; ``base`` when no word names a file; an
    interpreter given by its path, such as ``/usr/bin/python3 bot.py``,
    runs in ``bot.py``'s). A first word naming an existing ``.py`` file is
    run with the arena's Python.

    Raises:
        EntrantError: a bad name, an empty command, a program path that does
            not exist, or a bare command name that is not found on ``PATH``.
    """
    check_name(name)
    argv = list(argv)
    shown = given if given is not None else f"{name}={shlex.join(argv)}"
    if not argv or not argv[0]:
        raise EntrantError(f"entrant {name!r} has an empty command")
    first = Path(base, argv[0])
    words, folder = _absolute_files(argv, base)  # file words absolute: it runs in `folder`
    if _python_file(first):
        program = first.resolve()
        return Entrant(
            name, (sys.executable, str(program), *words[1:]), program.parent, shown, program
        )
    if "/" in argv[0]:
        if not _is_file(first):
            raise EntrantError(f"entrant {name!r}: bot file not found: {str(first)[:200]}")
        if _installed_program(first):  # /usr/bin/python3 bot.py: the bot's file is bot.py
            script = next((Path(w) for w in words[1:] if _is_own_file(w)), None)
            return Entrant(name, tuple(words), folder, shown, script)
        return Entrant(name, tuple(words), folder, shown, first.resolve())
    if shutil.which(argv[0]) is None:
        raise EntrantError(
            f"entrant {name!r}: command {argv[0][:100]!r} was not found on PATH "
            "(give a path such as ./prog for a program in this folder)"
        )
    # Not pinned to this machine's copy: a Dask worker finds it on its own PATH.
    return Entrant(name, tuple(words), folder, shown)


def folder_entrant(folder: Path, *, name: str | None = None, given: str | None = None) -> Entrant:
    """The entrant of a bot folder: its ``bot.toml``'s ``command`` (see
    :func:`command_entrant`), run in the folder, named ``name``, else the
    file's ``name``, else the folder's name as given.

    Raises:
        EntrantError: an unusable ``bot.toml`` (:func:`~arena.sandbox.botfolder.load_bot_folder`),
            a folder with a ``build`` whose command names files not built yet
            (``hearts-arena build DIR`` first), a program outside the folder,
            a bad name; one line.
    """
    shown = given if given is not None else str(folder)
    try:
        spec = load_bot_folder(folder)
    except BotFolderError as exc:
        raise EntrantError(str(exc)) from None
    missing = spec.missing_files()
    if missing:
        raise EntrantError(
            f"bot folder {shown[:200]} is not built ({missing[0][:100]} is missing): "
            f"run `hearts-arena build {shlex.quote(shown[:200])}` first"
        )
    default = folder.name if folder.name not in ("", ".", "..") else spec.folder.name
    entrant = command_entrant(
        name if name is not None else spec.name or default, spec.command, base=spec.folder
    )
    entrant = with_folders([entrant], [spec.folder])[0]
    return dataclasses.replace(entrant, source=shown)


#: The names of Python interpreters (a bot's own program named
#: ``python_bot`` is not one).
_PYTHON_NAME: Final = re.compile(r"(python|pypy)[0-9.]*\Z")


def _installed_program(path: Path) -> bool:
    """Whether ``path`` (a command's first word, given as a path) names an
    installed program rather than the bot's own: the arena's Python
    (``sys.executable``), a Python interpreter (named ``python``,
    ``python3``, ``python3.11``, ``pypy3`` and the like: :data:`_PYTHON_NAME`),
    or an executable file in one of ``PATH``'s folders (``/usr/bin/python3``,
    ``/usr/bin/java``)."""
    if not _is_file(path) or not os.access(path, os.X_OK):
        return False
    given = os.path.normpath(os.path.abspath(path))
    if given == os.path.normpath(os.path.abspath(sys.executable)) or _PYTHON_NAME.match(path.name):
        return True
    folder = os.path.dirname(given)
    on_path = {os.path.normpath(os.path.abspath(p)) for p in os.get_exec_path() if p}
    return folder in on_path or os.path.realpath(folder) in {os.path.realpath(p) for p in on_path}


def _absolute_files(argv: list[str], base: Path) -> tuple[list[str], Path]:
    """The command with its words that name existing files made absolute, and
    the entrant's folder: that of its program (the first word, when it is a
    path to a file of the bot's own, else the first word naming an existing
    file: an installed interpreter given by its path, see
    :func:`_installed_program`, is not the bot's), or ``base`` when no word
    names a file (a command found on ``PATH`` with no file argument)."""
    out = list(argv)
    folder: Path | None = None
    for i, word in enumerate(argv):
        if i == 0 and "/" not in word:
            continue  # a command looked up on PATH
        if i == 0 and _installed_program(Path(base, word)):
            # An interpreter given by its path (/usr/bin/python3 bot.py):
            # the bot's files are those of its first file argument, as for
            # ``python3 bot.py``. The word is made absolute, links kept (the
            # arena's Python stays recognisable as itself).
            out[0] = os.path.normpath(os.path.abspath(Path(base, word)))
            continue
        if word.startswith("-") or not _exists(Path(base, word)):
            continue
        path = Path(base, word).resolve()
        if not path.is_file():
            continue
        out[i] = str(path)
        if folder is None:
            folder = path.parent
    return out, folder or base.resolve()


def parse_entrant(text: str, *, base: Path | None = None) -> Entrant:
    """Parse one entrant given on the command line (see the module docstring).

    ``NAME=COMMAND`` whose whole ``COMMAND`` is an existing file is that file
    entered as ``NAME`` (it runs in its own folder, and its path is not split,
    so spaces and quotes need no quoting).

    Args:
        text: ``path``, ``path.py``, ``sample:NAME``, ``NAME=sample:SAMPLE``
            or ``NAME=COMMAND``.
        base: the folder relative paths are resolved in (default: the
            current folder).

    Raises:
        EntrantError: a missing or non-executable file, a folder, a bad name,
            an empty command or one not found on ``PATH``; the message is one line.
    """
    base = base or Path.cwd()
    if text.startswith("sample:") and not _exists(Path(base, text)):
        return sample_entrant(text.removeprefix("sample:"))
    name, sep, command = text.partition("=")
    if sep and name and "/" not in name and not _exists(Path(base, text)):
        check_name(name)
        if command.startswith("sample:"):
            return sample_entrant(command.removeprefix("sample:"), name)
        if command and (_is_file(Path(base, command)) or is_bot_folder(Path(base, command))):
            return path_entrant(Path(base, command), name=name, given=text)
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise EntrantError(f"entrant {name!r}: cannot split its command: {exc}") from None
        return command_entrant(name, argv, base=base, given=text)
    return path_entrant(Path(base, text), given=text)


def sample_entrant(sample: str, name: str | None = None) -> Entrant:
    """A sample bot shipped inside the package, entered as ``name`` (default:
    the sample's own name).

    Raises:
        EntrantError: no such sample bot.
    """
    if sample not in SAMPLE_BOTS:
        raise EntrantError(f"no sample bot {sample!r}; the samples are {', '.join(SAMPLE_BOTS)}")
    folder = sample_bots_dir()
    program = folder / SAMPLE_BOTS[sample]
    flags = ("-S",) if sample in STANDARD_LIBRARY_SAMPLES else ()
    return Entrant(
        check_name(name or sample),
        (sys.executable, *flags, str(program)),
        folder,
        f"sample:{sample}",
        program,
    )


def sample_entrants() -> list[Entrant]:
    """The four sample bots of a run without bots: duck, heuristic, low, random."""
    return [sample_entrant(name) for name in DEFAULT_SAMPLES]


def check_unique(entrants: Sequence[Entrant]) -> list[Entrant]:
    """Return ``entrants`` as a list if their names are unique.

    Raises:
        EntrantError: two entrants with one name.
    """
    seen: dict[str, str] = {}
    for e in entrants:
        if e.name in seen:
            raise EntrantError(
                f"two entrants are named {e.name!r} ({seen[e.name]} and {e.source}); "
                "name one with NAME=COMMAND"
            )
        seen[e.name] = e.source
    return list(entrants)


def parse_entrants(texts: Iterable[str], *, base: Path | None = None) -> list[Entrant]:
    """Parse several entrants and check that names are unique.

    Raises:
        EntrantError: see :func:`parse_entrant`, or two entrants with one name.
    """
    return check_unique([parse_entrant(t, base=base) for t in texts])


def entrant_from_record(record: Mapping[str, Any]) -> Entrant:
    """An entrant as :func:`describe` recorded it in ``run.json``: its
    ``argv`` list when recorded (older files: ``command`` split as a shell
    would), ``cwd``, ``name``, ``given`` and ``program``.

    Raises:
        EntrantError: the record lacks a usable name, command or folder.
    """
    try:
        name = check_name(str(record["name"]))
        argv = record.get("argv")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            argv = shlex.split(str(record["command"]))
        if not argv:
            raise ValueError("an empty command")
        program = record.get("program")
        return Entrant(
            name,
            tuple(argv),
            Path(str(record["cwd"])),
            str(record.get("given", "")),
            Path(program) if isinstance(program, str) else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EntrantError(f"a recorded entrant has no usable command and folder ({exc})") from None


def with_folders(entrants: list[Entrant], folders: Sequence[Path | None] | None) -> list[Entrant]:
    """The entrants with the folders given for them (a config file's ``dir``,
    aligned with ``entrants``; ``None`` keeps the program's folder). An
    entrant runs in its folder and, sealed, sees only it.

    Raises:
        EntrantError: a program file outside the folder given for it.
    """
    if not folders:
        return entrants
    out = []
    for entrant, folder in zip(entrants, folders, strict=True):
        if folder is not None:
            program = entrant.program or next(
                (Path(w) for w in entrant.argv if _is_own_file(w) and w != sys.executable), None
            )
            if program is not None and not program.resolve().is_relative_to(folder):
                raise EntrantError(
                    f"entrant {entrant.name!r}: its program {program} is not in its dir {folder}"
                )
            entrant = dataclasses.replace(entrant, cwd=folder)
        out.append(entrant)
    return out


def _is_own_file(word: str) -> bool:
    return os.path.isabs(word) and _exists(Path(word)) and Path(word).is_file()


def bot_environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a bot process: no variable of the arena's leaks in.

    ``PATH`` is the arena's (so ``java`` or ``node`` are found), ``HOME`` and
    ``TMPDIR`` the private temporary folder, a UTF-8 locale, unbuffered Python
    output and no bytecode files written into the bot's folder.
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "HEARTS_ARENA": "1",
    }
    if extra:
        env.update(extra)
    return env


TMPDIR_PREFIX: Final = "hearts-bot-"


def private_tmpdir(run_id: str = "") -> Path:
    """A fresh private temporary folder (mode 0700) for one bot process,
    named ``hearts-bot-RUNID-XXXXXXXX`` in the system's temporary folder so
    that :func:`remove_tmpdirs_of_run` can find it after a killed arena."""
    return Path(tempfile.mkdtemp(prefix=f"{TMPDIR_PREFIX}{run_id}-" if run_id else TMPDIR_PREFIX))


#: Folders of this process named like a run's leftovers but in use (the
#: entrants' copies of a resumed run, which has the killed run's id).
IN_USE: Final[set[Path]] = set()


def copies_tag(run_id: str) -> str:
    """The name the entrants' copies of run ``run_id`` go by
    (``hearts-bot-TAG-entrants-*``): a digest of the run id, so that the path
    a sealed bot's mount table shows does not carry the run id itself."""
    import hashlib

    return "c" + hashlib.sha256(run_id.encode()).hexdigest()[:15]


def remove_tmpdirs_of_run(run_id: str) -> int:
    """Remove the bots' temporary folders and the entrants' copies left by
    run ``run_id`` (an arena killed with SIGKILL cannot remove them itself),
    except those of :data:`IN_USE`; returns how many. A ``run_id`` other than
    letters and digits removes nothing."""
    if not run_id.isalnum() or not run_id.isascii():
        return 0
    removed = 0
    folder = Path(tempfile.gettempdir())
    for path in [
        *folder.glob(f"{TMPDIR_PREFIX}{run_id}-*"),
        *folder.glob(f"{TMPDIR_PREFIX}{copies_tag(run_id)}-*"),
    ]:
        if path in IN_USE:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def describe(entrants: Sequence[Entrant]) -> list[dict[str, Any]]:
    """Entrants as plain data for the settings record: ``name``, ``command``
    (the argv joined as a shell would quote it, for reading), ``argv`` (the
    exact words, what :func:`entrant_from_record` uses), ``cwd``, ``given``
    and ``program`` (the file run, when known)."""
    return [
        {
            "name": e.name,
            "command": shlex.join(e.argv),
            "argv": list(e.argv),
            "cwd": str(e.cwd),
            "given": e.source,
            **({"program": str(e.program)} if e.program is not None else {}),
        }
        for e in entrants
    ]
