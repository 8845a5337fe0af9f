"""``hearts-arena new LANGUAGE DIR`` and ``hearts-arena build DIR``: start a
bot from a starter kit, and build a bot folder.

The kits (``kits/<language>/``, shipped inside the package) each hold the
protocol loop done once, typed views of the messages, a sample strategy in
``choose_pass``/``choose_play`` and a ``bot.toml`` (:mod:`arena.run.host`).
``new`` copies one into a fresh folder; ``build`` runs the folder's ``build``
command there, unsealed, as the user who runs it (it is the author's own
code: ``run`` and ``check`` never build, see ``protocol/BOT_TOML.md``).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_OK, EXIT_OUTPUT, CliError
from arena.core.resources import botkit_file, kits_dir

#: The kits: language -> (folder in ``kits/``, the tools its build and run
#: need, and the Debian packages that give them).
KITS: Final = {
    "python": ("python", (), ""),
    "javascript": ("javascript", ("node",), "nodejs"),
    "java": ("java", ("javac", "jar", "java"), "default-jdk-headless libgoogle-gson-java"),
    "cpp": ("cpp", ("make", "g++"), "g++ make nlohmann-json3-dev"),
    "go": ("go", ("go",), "golang-go"),
    "rust": ("rust", ("cargo",), "cargo librust-serde-json-dev"),
}
#: Build products and caches never copied out of a kit (a kit built in place).
_IGNORED: Final = ("target", "build", "bot", "bot.jar", "Cargo.lock", "__pycache__")


def add_kit_commands(sub: Any) -> None:
    """Add ``new`` and ``build`` to the subcommands."""
    new = sub.add_parser(
        "new",
        allow_abbrev=False,
        help="start a bot from a starter kit: copy it into a fresh folder",
        description="Copy the starter kit of LANGUAGE (protocol loop, typed views, a sample "
        "strategy and a bot.toml) into DIR, which must not exist or be empty. Then "
        "`hearts-arena build DIR` (compiled languages) and `hearts-arena check DIR`.",
    )
    new.add_argument("language", metavar="LANGUAGE", choices=sorted(KITS), help=", ".join(KITS))
    new.add_argument("folder", metavar="DIR", type=Path)
    build = sub.add_parser(
        "build",
        allow_abbrev=False,
        help="build a bot folder: run its bot.toml's build command in it",
        description="Run the `build` command of DIR/bot.toml in DIR, unsealed, as you: it "
        "is the bot's own code (only build folders you trust). run and check never build.",
    )
    build.add_argument("folder", metavar="DIR", type=Path)


def new_command(args: argparse.Namespace) -> int:
    """``hearts-arena new LANGUAGE DIR``: copy the kit; print the next steps.

    Raises:
        CliError: exit 3: ``DIR`` exists and is not an empty folder, or
            cannot be written.
    """
    folder: Path = args.folder
    kit, tools, packages = KITS[args.language]
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise CliError(
            f"{folder} already exists and is not an empty folder; give a new folder", EXIT_OUTPUT
        )
    try:
        shutil.copytree(
            kits_dir() / kit,
            folder,
            ignore=shutil.ignore_patterns(*_IGNORED),
            dirs_exist_ok=True,
        )
        if args.language == "python":
            shutil.copyfile(botkit_file(), folder / "botkit.py")
    except OSError as exc:
        raise CliError(f"cannot write {folder}: {exc.strerror or exc}", EXIT_OUTPUT) from None
    from arena.run.host import load_bot_folder

    spec = load_bot_folder(folder)
    shown = shlex.quote(str(folder))
    print(f"a {args.language} bot in {folder} (its strategy: see {folder / 'README.md'})")
    if spec.build is not None:
        print(f"  build it:  hearts-arena build {shown}")
    print(f"  check it:  hearts-arena check {shown}")
    print(f"  play it:   hearts-arena run {shown} sample:heuristic sample:duck sample:low")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        print(
            f"note: {', '.join(missing)} not found on PATH (Debian: apt-get install {packages})",
            file=sys.stderr,
        )
    return EXIT_OK


def build_command(args: argparse.Namespace) -> int:
    """``hearts-arena build DIR``: run the folder's ``build`` in it.

    Raises:
        CliError: exit 2: no usable ``bot.toml``; exit 4: the build's program
            is not found; exit 5: the build failed (its exit code is named).
    """
    from arena.run.host import BOT_TOML, BotFolderError, load_bot_folder

    folder: Path = args.folder
    try:
        spec = load_bot_folder(folder)
    except BotFolderError as exc:
        raise CliError(str(exc)) from None
    if spec.build is None:
        print(f"{folder / BOT_TOML} has no build: nothing to build")
        return EXIT_OK
    print(f"building {folder}: {shlex.join(spec.build)}", file=sys.stderr)
    try:
        done = subprocess.run(spec.build, cwd=spec.folder, check=False)
    except FileNotFoundError:
        raise CliError(
            f"build of {folder}: {spec.build[0]!r} not found on PATH", EXIT_ENVIRONMENT
        ) from None
    except OSError as exc:
        raise CliError(f"build of {folder}: {exc.strerror or exc}", EXIT_ENVIRONMENT) from None
    if done.returncode != 0:
        raise CliError(f"build of {folder} failed (exit {done.returncode})", EXIT_FAILED)
    print(f"built {folder}", file=sys.stderr)
    return EXIT_OK


KIT_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "new": new_command,
    "build": build_command,
}
