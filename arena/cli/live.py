"""The live view on the command line: ``run --live`` and the ``watch`` command
(the ``--live`` and ``--live-delay`` options are declared in :mod:`arena.cli.options`).

* ``run ... --live [HOST:]PORT [--live-delay S]``: :func:`open_live` starts
  the page's server (:class:`arena.live.server.LiveServer`) before the first
  game and prints its addresses (the viewer's, and the organiser's with the
  tables in play); the run hands it each finished game as it is journaled
  (the page's hub subscribes to them) and closes it at the end.
* ``watch DIR --live [HOST:]PORT``: :func:`watch_command` serves the page of
  a finished run, or of a run in progress (finished games only), following
  its ``games.jsonl`` (and starting over when another run replaces it,
  ``run --overwrite``); it runs until Ctrl-C.

The access token (:func:`arena.live.server.needs_token`) is required on a
host other than loopback, and on loopback as well while bots run without the
sandbox (``--sandbox`` unshares their network, so they cannot reach it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE, CliError
from arena.cli.options import LIVE, LIVE_ADDRESS, LIVE_DELAY, arg
from arena.cli.settings import read_run_file
from arena.protocol.records import GameRecordJSON


def add_watch_command(sub: Any) -> None:
    """The ``watch`` subcommand."""
    watch = sub.add_parser(
        "watch",
        allow_abbrev=False,
        help="serve the live page of a tournament folder (finished games and standings)",
        description="Serve the live page of a finished run, or of a run in progress "
        "(finished games only: it follows games.jsonl as it grows). Stop it with Ctrl-C.",
    )
    watch.add_argument(
        "folder",
        type=Path,
        metavar="DIR",
        help="a tournament folder (a run's --out), finished or still being played",
    )
    group = watch.add_argument_group(LIVE)
    LIVE_ADDRESS.add_to(group, required=True)
    LIVE_DELAY.add_to(group)


def _address(text: str) -> Any:
    from arena.live.server import LiveError, parse_address

    try:
        return parse_address(text)
    except LiveError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def check_live_args(args: argparse.Namespace) -> None:
    """Refuse ``--live-delay`` without ``--live`` (exit 2)."""
    if arg(args, "live") is None and float(arg(args, "live_delay", 0.0)):
        raise CliError("--live-delay is for --live", EXIT_USAGE)


def open_live(
    args: argparse.Namespace,
    settings: dict[str, Any],
    games_total: int,
    recorded: Sequence[GameRecordJSON],
    sandboxed: bool,
) -> Any:
    """Start the page of ``run --live``; ``None`` without ``--live``.
    ``recorded``: the games already played (``--resume``); the run hands it
    each new one (:meth:`arena.live.server.LiveServer.add_record`).

    Returns:
        a started :class:`arena.live.server.LiveServer` (its ``channel``
        goes to the executor; ``None`` for Dask, whose games send no events).

    Raises:
        CliError: (exit 2) a bad address; (exit 3) the port cannot be used.
    """
    if arg(args, "live") is None:
        return None
    from arena.live.server import LiveError, LiveServer, needs_token, new_token, print_url

    address = _address(args.live)
    token = new_token() if needs_token(address, sandboxed) else None
    dask = arg(args, "executor", "local") == "dask"
    note = (
        "Games run on a Dask cluster: this page shows finished games and standings only."
        if dask
        else ""
    )
    server = LiveServer(
        settings,
        games_total,
        recorded,
        address,
        token,
        args.live_delay,
        mode="finished" if dask else "live",
        note=note,
        # The tables in play, card by card, only on the organiser's address.
        organiser=None if dask else new_token(),
    )
    try:
        url = server.start()
    except LiveError as exc:
        raise CliError(str(exc), EXIT_OUTPUT) from None
    print_url(url, token, server.organiser_url)
    return server


def watch_command(args: argparse.Namespace) -> int:
    """``hearts-arena watch DIR --live [HOST:]PORT``; returns the exit code
    (130 on Ctrl-C, SIGTERM or SIGHUP, the only ways it ends: the page's
    streams get their ``end`` event and the server shuts down, then
    "stopped").

    Raises:
        CliError: exit 3, the folder holds no run file or the address
            cannot be served.
    """
    import signal
    import threading

    import trio

    from arena.live.hub import Hub
    from arena.live.server import needs_token, new_token, print_url, serve
    from arena.report.outputs import GAMES_FILE, RUN_FILE

    folder: Path = args.folder
    if not (folder / RUN_FILE).exists():
        raise CliError(f"{folder} holds no tournament ({RUN_FILE} is missing)", EXIT_OUTPUT)
    info = read_run_file(folder / RUN_FILE)
    address = _address(args.live)
    # No bot of this command can reach the port, but another run's might: the
    # page shows only finished games and revealed deals, so loopback is open.
    token = new_token() if needs_token(address, True) else None

    def reload() -> tuple[dict[str, Any], int] | None:
        # Another run in the folder (run --overwrite): its run.json, once written.
        try:
            fresh = read_run_file(folder / RUN_FILE)
        except (CliError, OSError, ValueError):
            return None
        return fresh.settings.to_json(), fresh.games_total

    hub = Hub(
        info.settings.to_json(),
        info.games_total,
        folder / GAMES_FILE,
        "finished",
        "Watching a tournament folder: finished games, replays of finished deals "
        "and standings only (games in play are not shown).",
        args.live_delay,
        reload,
    )
    interrupted: list[int] = []

    async def until_ctrl_c() -> None:
        # Ctrl-C (and SIGTERM, SIGHUP: main raises SIGINT for them) taken as a
        # signal, not as a KeyboardInterrupt raised wherever the loop happens
        # to be: inside Hypercorn's tasks it was swallowed (its serve returns
        # quietly on one) or replaced by the error it left behind, and the
        # command hung or exited 1. A second Ctrl-C, once this receiver is
        # closed, interrupts the shutdown as before.
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async for signum in signals:
                interrupted.append(signum)
                return

    # Signals can be received only in the main thread (a test may call main
    # from another): there, Ctrl-C is the KeyboardInterrupt below.
    stop = until_ctrl_c if threading.current_thread() is threading.main_thread() else None
    try:
        trio.run(serve, hub, address, token, None, lambda url: print_url(url, token), stop)
    except OSError as exc:
        raise CliError(
            f"--live: cannot serve the page: {exc.strerror or exc}", EXIT_OUTPUT
        ) from None
    except KeyboardInterrupt:
        interrupted.append(signal.SIGINT)
    if interrupted:
        print("stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK
