"""``hearts-arena export DIR OUT``: a competition server's run folder
(:mod:`arena.server.export`; docs/checking-results.md), for anyone to check
with ``hearts-arena verify OUT`` once the competition is closed (``serve DIR
--close``) and to replay games from with ``hearts-arena replay``.

Before the close the folder is written without the key (``results.json``'s
``key`` is ``null``; ``verify`` refuses it) and the command says so. No
seat's stderr or transcript is written unless ``--with-logs`` (the
organiser's own copy: never publish it). The server's libraries (the
``[server]`` extra) are imported only when this command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE, CliError


def add_export_command(sub: Any) -> None:
    """Add ``export`` to the subcommands."""
    export = sub.add_parser(
        "export",
        allow_abbrev=False,
        help="write a competition server's games, tables and standings as a run folder",
        description="Write the competition in DIR (hearts-arena serve) to the new folder OUT: "
        "run.json, results.json (the key once the competition is closed), games.jsonl and "
        "tables.jsonl, for hearts-arena verify OUT and hearts-arena replay OUT#GAME.",
    )
    export.add_argument("folder", type=Path, metavar="DIR", help="the competition folder")
    export.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder")
    export.add_argument(
        "--with-logs",
        action="store_true",
        help="keep every seat's stderr and transcript (the organiser's own copy: not to publish)",
    )


def export_command(args: argparse.Namespace) -> int:
    """Run ``export`` (parsed arguments -> exit code: 0 written, 2 not a
    competition folder, 3 OUT cannot be written)."""
    try:
        from arena.server import folder
        from arena.server.export import ExportError, export_folder
    except ImportError as exc:  # the [server] extra is missing
        raise CliError(
            f"export needs the server's libraries ({exc.name}): pip install 'hearts-arena[server]'",
            EXIT_ENVIRONMENT,
        ) from None
    try:
        comp = folder.open_folder(args.folder)
    except folder.FolderError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    try:
        counts = export_folder(comp, args.out, with_logs=args.with_logs)
    except ExportError as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
    finally:
        comp.close()
    logs = " with every seat's stderr and transcript (do not publish)" if args.with_logs else ""
    print(f"exported {counts['tables']} tables and {counts['games']} games to {args.out}{logs}")
    if counts["closed"]:
        print(f"results.json reveals the key: check it all with hearts-arena verify {args.out}")
    else:
        print(
            "the competition is not closed: results.json holds no key, and verify needs it "
            f"(hearts-arena serve {args.folder} --close, then export again)"
        )
    sys.stdout.flush()
    return EXIT_OK
