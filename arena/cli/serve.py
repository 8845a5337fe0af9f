"""``hearts-arena serve DIR``: a competition server (issue 27; README,
"Running a competition server").

``--init`` makes the competition folder, ``--add``/``--revoke``/``--suspend``/``--list``
manage its participants, ``--close`` ends it (no new tables, the key
revealed); without them the server starts (its runner, which spawns the web
process). The server's libraries (the ``[server]`` extra:
SQLAlchemy, Alembic) are imported only when this command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
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
        "--organiser-link",
        action="store_true",
        help="print a new one-time organiser sign-in link (expires after 24 hours)",
    )
    admin.add_argument(
        "--close",
        action="store_true",
        help="close the competition: no new tables; the key revealed on the home page and in "
        "the API (then hearts-arena export)",
    )
    serve.add_argument(
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
        help="--init: the competition's settings "
        "(TOML: [game], [limits], [ladder], [gate], [web], [class])",
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
        "--certfile", type=Path, metavar="FILE", help="serve TLS with this PEM certificate chain"
    )
    serve.add_argument("--keyfile", type=Path, metavar="FILE", help="the certificate's PEM key")
    serve.add_argument(
        "--behind-proxy",
        metavar="ADDRESS",
        help="a TLS reverse proxy at this IP address: its X-Forwarded-* headers alone are trusted",
    )
    serve.add_argument(
        "--public-name",
        metavar="HOST",
        help="the host name the site answers to (a request for another is refused)",
    )
    serve.add_argument(
        "--database",
        metavar="URL",
        help="--init: keep the competition in this PostgreSQL database "
        "(postgresql://USER@HOST/NAME, no password in it; recorded in DIR/database.toml; "
        "needs the [server-postgres] extra) instead of DIR/db's SQLite file",
    )
    serve.add_argument(
        "--database-password-file",
        type=Path,
        metavar="F",
        help="the PostgreSQL password, the first line of the owner-only file F "
        "(recorded with --init; default: PGPASSWORD or ~/.pgpass)",
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
        from arena.server.webproc import WebProcessError
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
    if args.database is not None and not args.init:
        raise CliError(
            "--database goes with --init: the folder records its database "
            "(DIR/database.toml) and every later serve uses it"
        )
    if args.database is not None and importlib.util.find_spec("psycopg") is None:
        raise CliError(
            "--database postgresql://... needs the PostgreSQL driver: "
            "pip install 'hearts-arena[server-postgres]'",
            EXIT_ENVIRONMENT,
        )
    from arena.live.server import LiveError, parse_address
    from arena.server.webproc import Hosting, WebProcessError

    hosting = Hosting(
        certfile=args.certfile,
        keyfile=args.keyfile,
        behind_proxy=args.behind_proxy,
        public_name=args.public_name,
    )
    try:
        address = parse_address(args.listen)
        admin = (args.init, args.add, args.revoke, args.suspend, args.list, args.organiser_link)
        if not any(x for x in admin if x):
            hosting.check(address.host)  # a non-loopback address needs TLS or a proxy
    except (LiveError, WebProcessError) as exc:
        raise CliError(str(exc).replace("--live", "--listen"), EXIT_USAGE) from None
    site_url = hosting.public_url(address.host, address.port)
    try:
        if args.init:
            settings = (
                folder.CompetitionSettings.read(args.settings)
                if args.settings is not None
                else None
            )
            made = folder.init_folder(
                args.folder,
                settings,
                args.user,
                database_url=args.database,
                password_file=args.database_password_file,
            )
            print(f"competition folder {made.paths.root} made")
            if args.database is not None:
                print(f"  database: {made.paths.database_record} records it")
            for line in folder.describe_settings(made.settings):
                print(f"  {line}")
            print(f"key SHA-256: {made.key_sha256}")
            comp = folder.open_folder(args.folder, args.database_password_file)
            try:
                _print_organiser_link(comp, site_url)
            finally:
                comp.close()
            return EXIT_OK
        comp = folder.open_folder(args.folder, args.database_password_file)
        try:
            if args.add is not None:
                if args.token_file is not None:
                    folder.add_participant_to_file(comp, args.add, args.token_file)
                    print(f"participant {args.add} added; token written to {args.token_file}")
                else:
                    _, token = folder.add_participant(comp, args.add)
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
            if args.organiser_link:
                _print_organiser_link(comp, site_url)
                return EXIT_OK
            if args.close:
                from arena.server.export import close_competition

                key, newly = close_competition(comp)
                print(
                    "competition closed: no new tables (those in play finish); the key is "
                    "revealed on the home page and in /api/standings"
                    if newly
                    else "the competition was closed already; its key:"
                )
                print(f"key: {key}")
                return EXIT_OK
        finally:
            comp.close()
        from arena.server.runner import serve_forever

        return serve_forever(
            args.folder,
            listen=args.listen,
            user=args.user,
            cores=args.cores,
            hosting=hosting,
            password_file=args.database_password_file,
            executor=args.executor,
            scheduler=args.scheduler,
        )
    except folder.FolderError as exc:
        from arena.server.runlock import RunnerLockLost

        # A lock that went while the runner ran: the environment's fault, not a usage error.
        code = EXIT_ENVIRONMENT if isinstance(exc, RunnerLockLost) else EXIT_USAGE
        raise CliError(str(exc), code) from None
    except WebProcessError as exc:  # the web process could not start: one line
        raise CliError(str(exc), EXIT_ENVIRONMENT) from None
    finally:
        sys.stdout.flush()


def _print_organiser_link(comp: Any, site_url: str) -> None:
    """Make a one-time organiser link and print it (shell access to the
    server is the organiser's proof); only its SHA-256 is stored."""
    import time

    from arena.server import sessions

    with comp.database.write() as conn:
        secret = sessions.organiser_link(conn, time.time())
    print("organiser sign-in link (one use, expires after 24 hours; shown once):")
    print(f"{site_url}/signin/{secret}")
