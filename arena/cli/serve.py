"""``hearts-arena serve DIR``: a competition server (issue 27; README,
"Running a competition server").

``--init`` makes the competition folder, ``--add``/``--revoke``/``--suspend``/``--list``
manage its participants; without them the server starts (its runner, which
spawns the web process). The server's libraries (the ``[server]`` extra:
SQLAlchemy, Alembic) are imported only when this command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USAGE, CliError
from arena.cli.options import Number

#: ``serve --cores``: tables at once, each a core token (``run --cores``'
#: bound; at least one, since the ladder needs a slot).
SERVE_CORES_TYPE = Number(1, 1024, why="one token file per core")


def add_serve_command(sub: Any) -> None:
    """Add ``serve`` to the subcommands."""
    serve = sub.add_parser(
        "serve", allow_abbrev=False, help="run a competition server on a competition folder"
    )
    serve.add_argument("folder", type=Path, metavar="DIR", help="the competition folder")
    admin = serve.add_mutually_exclusive_group()
    admin.add_argument(
        "--init", action="store_true", help="make DIR: settings, key, database (then stop)"
    )
    admin.add_argument("--add", metavar="NAME", help="add a participant and print its token once")
    admin.add_argument("--revoke", metavar="NAME", help="revoke a participant: tokens, submissions")
    admin.add_argument(
        "--suspend", metavar="NAME", help="suspend a participant: no new submissions"
    )
    admin.add_argument(
        "--list", action="store_true", help="list participants and void tables with their reasons"
    )
    admin.add_argument(
        "--worker-cert",
        nargs=2,
        metavar=("NAME", "OUT"),
        help="write OUT/NAME.pem and OUT/NAME.key for one Dask worker (or the scheduler), "
        "signed by the competition's own authority, and OUT/ca.pem (then stop)",
    )
    serve.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where tables are played: in the runner (local, the default) or on Dask",
    )
    serve.add_argument(
        "--scheduler",
        metavar="tls://HOST:PORT",
        help="--executor dask: the organiser's Dask scheduler (default: a local cluster, "
        "one worker process per core)",
    )
    serve.add_argument(
        "--settings",
        type=Path,
        metavar="FILE",
        help="--init: the competition's settings (TOML: [game], [limits], [ladder], [gate])",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        metavar="F",
        help="--add: write the token to the new owner-only file F instead of printing it",
    )
    serve.add_argument(
        "--user",
        metavar="USER",
        help="the web process's unprivileged user (required as root; --init: owns db/, uploads/)",
    )
    serve.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="127.0.0.1:8000",
        help="where the web process listens (default 127.0.0.1:8000)",
    )
    serve.add_argument(
        "--cores",
        type=SERVE_CORES_TYPE,
        metavar="N",
        default=None,
        help="cores for bots (default: all but one, kept for the runner and the web process)",
    )


def serve_command(args: argparse.Namespace) -> int:
    """Run ``serve`` (parsed arguments -> exit code)."""
    try:
        from arena.server import folder
    except ImportError as exc:  # the [server] extra is missing
        raise CliError(
            f"serve needs the server's libraries ({exc.name}): pip install 'hearts-arena[server]'",
            EXIT_ENVIRONMENT,
        ) from None
    if args.settings is not None and not args.init:
        raise CliError("--settings goes with --init")
    if args.token_file is not None and args.add is None:
        raise CliError("--token-file goes with --add")
    if args.scheduler is not None and args.executor != "dask":
        raise CliError("--scheduler goes with --executor dask")
    if args.scheduler is not None and not str(args.scheduler).startswith("tls://"):
        raise CliError("--scheduler: the address must be tls://HOST:PORT (workers need TLS)")
    try:
        if args.init:
            settings = (
                folder.CompetitionSettings.read(args.settings)
                if args.settings is not None
                else None
            )
            made = folder.init_folder(args.folder, settings, args.user)
            print(f"competition folder {made.paths.root} made")
            for line in folder.describe_settings(made.settings):
                print(f"  {line}")
            print(f"key SHA-256: {made.key_sha256}")
            return EXIT_OK
        comp = folder.open_folder(args.folder)
        try:
            if args.add is not None:
                _, token = folder.add_participant(comp, args.add)
                if args.token_file is not None:
                    folder.write_token_file(args.token_file, token)
                    print(f"participant {args.add} added; token written to {args.token_file}")
                else:
                    print(f"participant {args.add} added; token (shown once):")
                    print(token)
                return EXIT_OK
            if args.revoke is not None:
                folder.set_status(comp, args.revoke, "revoked")
                print(f"participant {args.revoke} revoked: tokens revoked, submissions retired")
                return EXIT_OK
            if args.suspend is not None:
                folder.set_status(comp, args.suspend, "suspended")
                print(f"participant {args.suspend} suspended: no new submissions")
                return EXIT_OK
            if args.list:
                for line in folder.listing(comp):
                    print(line)
                from arena.server.workers import worker_lines

                with comp.database.read() as conn:  # issue 29: refused and flagged workers
                    for line in worker_lines(conn):
                        print(line)
                return EXIT_OK
            if args.worker_cert is not None:
                from arena.server.workers import issue_certificate

                name, out = args.worker_cert
                issued = issue_certificate(comp.paths, name, Path(out))
                print(f"certificate {issued.cert} and key {issued.key} for {name}")
                print(f"the competition's authority: {issued.ca}")
                return EXIT_OK
        finally:
            comp.close()
        from arena.server.runner import serve_forever

        return serve_forever(
            args.folder,
            listen=args.listen,
            user=args.user,
            cores=args.cores,
            executor=args.executor,
            scheduler=args.scheduler,
        )
    except folder.FolderError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    finally:
        sys.stdout.flush()
