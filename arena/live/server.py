"""The live page and its server: Starlette on Hypercorn's Trio worker.

Two roles. A *viewer* (the default page, for a room or a projector) gets
finished games, standings and the paced view: revealed games played back
card by card (every part but ``tables``); the *organiser* (the address with
the organiser's token, printed by ``run --live``) gets the tables in play as
well, whose cards are deals later rotations still play. Every route but
``/static/...`` and ``/favicon.ico`` needs ``?token=...`` when the server
has a viewer token; the organiser's token is accepted wherever the viewer's
is; a wrong or missing token is a 403.

* ``/``: the page (``static/live.html``); its script renders every text with
  ``textContent``, never as HTML.
* ``/events``: server-sent events ``role`` (first, ``{"organiser": bool}``),
  ``info``, ``standings``, ``replays``, ``finished`` and, for the organiser,
  ``tables`` (JSON, see :mod:`arena.live.hub`), each sent when it changes,
  at most every :data:`PUSH_INTERVAL` seconds per stream (less often with
  more than :data:`STREAMS_AT_FULL_RATE` streams open);
  a comment every 15 seconds keeps the connection open; ``end`` when the run
  is over (the stream then closes).
* ``/api/game/{index}``: the dealt hands of a finished game whose deal is
  revealed (:meth:`arena.live.hub.Hub.game_hands`), else 404.
* ``/api/replay/{index}``: the same game card by card, as the report's
  replay player reads it (:meth:`arena.live.hub.Hub.game_replay`), else 404.
* ``/api/finished?before=INDEX``: an older page of finished games
  (:meth:`arena.live.hub.Hub.finished`).
* ``/static/live.js``, ``/static/live.css``, ``/static/replay.js`` (the
  report's replay player, which the paced view drives): the page's assets.

Every response carries a ``Content-Security-Policy`` of ``default-src
'self'``: the page can make no request that leaves its origin.

:func:`serve` runs the server in this process until cancelled;
:class:`LiveServer` runs it in a process of its own for ``run --live``, fed
by a bounded queue of table states (:mod:`arena.game.feed`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import multiprocessing
import os
import queue as queue_module
import secrets
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

import trio

from arena.core.resources import templates_dir
from arena.live.hub import PARTS, VIEWER_PARTS, Hub
from arena.protocol.records import GameRecordJSON
from arena.report.files import SCRIPT_FILE

#: Seconds the server waits, once the run ends, for its last records.
RECORDS_WAIT: Final = 30.0
#: Seconds between two looks at the queue and the journal, and between two pushes.
TICK: Final = 0.25
#: Seconds between two writes to one event stream, at least: what changed
#: meanwhile goes in one write (the tables move twice a second on the page;
#: each decision's clock counts down in the page itself).
PUSH_INTERVAL: Final = 0.5
#: Event streams served at :data:`PUSH_INTERVAL`; with more, every stream's
#: interval grows in proportion (100 viewers: one write a second each), so
#: the writes of all viewers together stay at about 100 a second and the
#: server never takes much of the CPU the games need.
STREAMS_AT_FULL_RATE: Final = 50
#: Seconds between two keep-alive comments on an idle event stream.
KEEPALIVE: Final = 15.0
#: Seconds the run waits for the server process to listen (importing the web
#: framework can take many seconds on a loaded machine).
START_TIMEOUT: Final = 60.0

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class LiveError(ValueError):
    """A ``--live`` option that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class Address:
    """Where the page is served: ``host``, ``port`` (0: any free port) and
    whether ``host`` is a loopback address."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach ``host``."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_address(text: str) -> Address:
    """``[HOST:]PORT`` (an IPv6 host in brackets: ``[::1]:8000``); the host
    defaults to 127.0.0.1.

    Raises:
        LiveError: no port, or a port outside 0..65535.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise LiveError(f"--live {text!r}: give [HOST:]PORT, e.g. 8000 or 0.0.0.0:8000") from None
    if not 0 <= port <= 65535:
        raise LiveError(f"--live {text!r}: a port is 0..65535")
    return Address(host, port)


def needs_token(address: Address, bots_sealed: bool) -> bool:
    """Whether the viewer's page must ask for the access token: always on a
    host other than loopback; on loopback too while bots run without the
    sandbox, since they could then connect to the port (``run --live``).
    The organiser's address always has a token of its own."""
    return not address.loopback or not bots_sealed


def reachable_host(host: str) -> str:
    """A host a remote viewer can open for a server bound to ``host``: for
    ``0.0.0.0`` or ``::`` (every address), this machine's address on the
    network its default route leads to (a UDP socket's source address: no
    packet is sent), else its host name; other hosts as they are."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    import socket

    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    probe = "2001:db8::1" if family == socket.AF_INET6 else "192.0.2.1"  # documentation nets
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((probe, 9))
            found = str(sock.getsockname()[0])
        if not ipaddress.ip_address(found).is_unspecified:
            return found
    except OSError:
        pass
    return socket.gethostname()


def _static(name: str) -> bytes:
    return resources.files("arena.live").joinpath("static", name).read_bytes()


class Pusher:
    """Wakes every event stream at once when a part of the hub changed, at
    most every :meth:`interval` seconds: each stream writes once per wake-up,
    so the server wakes once per push for all its viewers together."""

    def __init__(self) -> None:
        self._event = trio.Event()
        self.streams = 0  # event streams open now
        self.pending = False  # a change not pushed yet
        self.last = -1e9  # trio.current_time() of the last push

    def interval(self) -> float:
        """Seconds between two pushes: :data:`PUSH_INTERVAL`, longer in
        proportion with more than :data:`STREAMS_AT_FULL_RATE` streams."""
        return PUSH_INTERVAL * max(1.0, self.streams / STREAMS_AT_FULL_RATE)

    def changed_now(self) -> None:
        """Note a change; push it now if the last push is old enough, else
        with a later :meth:`tick`."""
        self.pending = True
        self.tick()

    def tick(self) -> None:
        """Push a pending change once the interval has passed."""
        now = trio.current_time()
        if self.pending and now - self.last >= self.interval():
            self.pending = False
            self.last = now
            self.notify()

    async def changed(self) -> None:
        """Wait for the next :meth:`notify`."""
        await self._event.wait()

    def notify(self) -> None:
        """Wake every waiting stream."""
        self._event.set()
        self._event = trio.Event()


#: Host names a page served on loopback answers to, beside every loopback
#: address (a request naming another host is refused: DNS rebinding by a web
#: page the organiser has open).
LOOPBACK_NAMES: Final = frozenset({"localhost"})


def loopback_name(name: str) -> bool:
    """Whether ``name`` (a ``Host`` header's host) names this machine's
    loopback: ``localhost`` or a loopback address (127.0.0.0/8, ``::1``)."""
    if name.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port or IPv6 brackets."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if ":" in header else header


def make_app(
    hub: Hub,
    token: str | None,
    pusher: Pusher,
    loopback: bool = False,
    organiser: str | None = None,
) -> Any:
    """The Starlette application of ``hub``; its event streams wait on
    ``pusher``. ``token`` is the viewers' (``None``: the viewer's page is
    open), ``organiser`` the organiser's (``None``: nobody gets the tables
    in play). With ``loopback`` a request whose ``Host`` is not a loopback
    name is refused (403) as well."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    page = _static("live.html")
    assets = {
        "live.js": (_static("live.js"), "text/javascript; charset=utf-8"),
        "live.css": (_static("live.css"), "text/css; charset=utf-8"),
        "replay.js": (
            (templates_dir() / SCRIPT_FILE).read_bytes(),
            "text/javascript; charset=utf-8",
        ),
    }

    def is_organiser(request: Request) -> bool:
        given = request.query_params.get("token", "")
        return organiser is not None and secrets.compare_digest(given.encode(), organiser.encode())

    def allowed(request: Request) -> bool:
        if loopback and not loopback_name(host_name(request.headers.get("host", ""))):
            return False
        if token is None or is_organiser(request):
            return True
        given = request.query_params.get("token", "")
        return secrets.compare_digest(given.encode(), token.encode())

    def forbidden() -> Response:
        return Response(
            "403: this page needs its access token (?token=..., printed by the arena)\n",
            status_code=403,
            media_type="text/plain",
            headers=SECURITY_HEADERS,
        )

    async def index(request: Request) -> Response:
        if not allowed(request):
            return forbidden()
        return Response(page, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def static(request: Request) -> Response:
        found = assets.get(request.path_params["name"])
        if found is None:
            return Response("not found\n", 404, headers=SECURITY_HEADERS, media_type="text/plain")
        return Response(found[0], media_type=found[1], headers=SECURITY_HEADERS)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204, headers=SECURITY_HEADERS)

    def of_revealed_game(request: Request, read: Callable[[int], Any]) -> Response:
        """``read(index)`` of the game named in the path, or 404 while the game
        is unfinished or its deal is still to be played at another game."""
        if not allowed(request):
            return forbidden()
        try:
            index = int(request.path_params["index"])
        except ValueError:
            index = -1
        data = read(index)
        if data is None:
            return JSONResponse(
                {"error": "not finished, or its deal is still to be played at another game"},
                404,
                headers=SECURITY_HEADERS,
            )
        return JSONResponse(data, headers=SECURITY_HEADERS)

    async def game(request: Request) -> Response:
        return of_revealed_game(request, hub.game_hands)

    async def replay(request: Request) -> Response:
        return of_revealed_game(request, hub.game_replay)

    async def finished(request: Request) -> Response:
        if not allowed(request):
            return forbidden()
        try:
            before: int | None = int(request.query_params["before"])
        except (KeyError, ValueError):
            before = None
        return JSONResponse(hub.finished(before), headers=SECURITY_HEADERS)

    async def events(request: Request) -> Response:
        if not allowed(request):
            return forbidden()
        role = is_organiser(request)
        parts = PARTS if role else VIEWER_PARTS

        async def stream() -> AsyncIterator[bytes]:
            sent: dict[str, int] = {}
            pusher.streams += 1
            try:
                yield f"event: role\ndata: {dumps({'organiser': role})}\n\n".encode()
                while True:
                    # One write per wake-up, however many parts changed; the
                    # bytes are encoded once and shared by the streams.
                    message = hub.message(sent, parts)
                    if message:
                        yield message
                    if sent.get("end"):  # written (not only published, maybe from a thread)
                        return
                    with trio.move_on_after(KEEPALIVE) as scope:
                        await pusher.changed()
                    if scope.cancelled_caught:
                        yield b": keep-alive\n\n"
            finally:
                pusher.streams -= 1

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={**SECURITY_HEADERS, "X-Accel-Buffering": "no"},
        )

    return Starlette(
        routes=[
            Route("/", index),
            Route("/events", events),
            Route("/api/game/{index}", game),
            Route("/api/replay/{index}", replay),
            Route("/api/finished", finished),
            Route("/static/{name}", static),
            Route("/favicon.ico", favicon),
        ]
    )


async def _drain(channel: Any, hub: Hub) -> None:
    """Move every table state waiting in the queue into the hub."""
    while True:
        try:
            state = channel.get_nowait()
        except queue_module.Empty:
            return
        except (OSError, ValueError, EOFError):
            return
        if isinstance(state, dict) and "game_id" in state:
            hub.add_table(state)


def _take_records(records: Any, wait: float) -> list[Any]:
    """The records waiting in the queue (the first within ``wait`` seconds);
    ``[None]`` once it is closed. Blocking: run in a thread."""
    found: list[Any] = []
    try:
        found.append(records.get(timeout=wait))
        while found[-1] is not None:
            found.append(records.get_nowait())
    except queue_module.Empty:
        pass
    except (OSError, ValueError, EOFError):
        found.append(None)
    return found


async def _pump_records(records: Any, send: trio.MemorySendChannel[Any]) -> None:
    """Move the run's records from the ``multiprocessing`` queue into the
    hub's subscription, until ``None`` (the run is over)."""
    async with send:
        while True:
            for record in await trio.to_thread.run_sync(_take_records, records, TICK):
                if record is not None and not isinstance(record, dict):
                    continue
                send.send_nowait(record)
                if record is None:
                    return


async def _keep_up(hub: Hub, pusher: Pusher, channel: Any | None) -> None:
    """Every :data:`TICK`: take new table states and journal lines, apply
    what waited out the delay, recompute the standings when due (in a
    thread, on every finished game), and wake the streams."""
    while True:
        if channel is not None:
            await _drain(channel, hub)
        await trio.to_thread.run_sync(hub.read_journal)
        changed = hub.tick()
        if hub.standings_due():
            # Shielded: take_finished clears the standings' dirty flag, so
            # games taken and then dropped by a cancellation (the run ended
            # while the journal was read) would never be rated, and
            # Hub.finish would publish the standings of an earlier prefix.
            with trio.CancelScope(shield=True):
                records = hub.take_finished()
                part = await trio.to_thread.run_sync(hub.standings_part, records)
                hub.publish_standings(part)
            changed = True
        if changed:
            pusher.changed_now()
        else:
            pusher.tick()
        await trio.sleep(TICK)


def _quiet_config(address: Address) -> Any:
    from hypercorn.config import Config

    config = Config()
    host = f"[{address.host}]" if ":" in address.host else address.host
    config.bind = [f"{host}:{address.port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    return config


def page_url(bind: str, token: str | None) -> str:
    """The page's address from Hypercorn's ``http://host:port`` bind (a
    bind on every address, ``0.0.0.0`` or ``[::]``, named by an address a
    remote viewer can open: :func:`reachable_host`)."""
    scheme, _, rest = bind.partition("://")
    host, _, port = rest.rpartition(":")
    bare = host.strip("[]")
    if bare in ("0.0.0.0", "::"):
        shown = reachable_host(bare)
        host = f"[{shown}]" if ":" in shown else shown
        bind = f"{scheme}://{host}:{port}"
    return f"{bind}/" + (f"?token={token}" if token else "")


async def serve(
    hub: Hub,
    address: Address,
    token: str | None,
    channel: Any | None = None,
    on_ready: Callable[[str], None] | None = None,
    stop: Callable[[], Awaitable[None]] | None = None,
    organiser: str | None = None,
    on_organiser: Callable[[str], None] | None = None,
    records: Any | None = None,
) -> None:
    """Serve the page of ``hub`` on ``address`` until cancelled or ``stop``
    returns; ``on_ready`` gets the viewer's URL (with the viewer's token)
    once listening, ``on_organiser`` the organiser's (with ``organiser``,
    its token), before it. ``records``: a ``multiprocessing`` queue of the
    run's finished games, ``None`` after the last (``run --live``): the hub
    subscribes to them (:meth:`Hub.subscribe`) instead of reading a journal.
    When ``stop`` returns (and the records have ended) the hub
    :meth:`~Hub.finish`es (the last standings are every game's), then the
    streams end.

    Raises:
        OSError: the address cannot be listened on.
    """
    from hypercorn.trio import serve as hypercorn_serve

    pusher = Pusher()
    app = make_app(hub, token, pusher, address.loopback, organiser)
    config = _quiet_config(address)
    async with trio.open_nursery() as nursery:
        keeping = trio.CancelScope()
        kept = trio.Event()

        async def keep_up() -> None:
            try:
                with keeping:
                    await _keep_up(hub, pusher, channel)
            finally:
                kept.set()

        nursery.start_soon(keep_up)
        subscribed = trio.Event()
        if records is not None:
            send, receive = trio.open_memory_channel[Any](math.inf)

            async def subscribe() -> None:
                try:
                    await hub.subscribe(receive)
                finally:
                    subscribed.set()

            nursery.start_soon(subscribe)
            nursery.start_soon(_pump_records, records, send)
        else:
            subscribed.set()
        shutdown = trio.Event()

        async def trigger() -> None:
            await shutdown.wait()

        served = trio.Event()

        async def run_server(task_status: Any) -> None:
            try:
                await hypercorn_serve(
                    app, config, shutdown_trigger=trigger, task_status=task_status
                )
            finally:
                served.set()

        binds = await nursery.start(run_server)
        if on_organiser is not None and organiser is not None:
            on_organiser(page_url(binds[0], organiser))
        if on_ready is not None:
            on_ready(page_url(binds[0], token))
        if stop is not None:
            await stop()
            with trio.move_on_after(RECORDS_WAIT):  # the run's last records
                await subscribed.wait()
            keeping.cancel()  # a journal read or a rating in a thread ends first
            await kept.wait()
            await trio.to_thread.run_sync(hub.finish)
            pusher.notify()
            await trio.sleep(2 * TICK)  # the streams send their last parts
            shutdown.set()
            with trio.move_on_after(2):  # Hypercorn's graceful shutdown
                await served.wait()
            nursery.cancel_scope.cancel()


# -- the server process of ``run --live`` ----------------------------------------


def _server_process(
    settings: dict[str, Any],
    games_total: int,
    earlier: list[GameRecordJSON],
    records: Any,
    mode: str,
    note: str,
    delay: float,
    address: Address,
    token: str | None,
    organiser: str | None,
    channel: Any,
    ready: Any,
    stop_flag: Any,
) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's; it stops us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # so is a closed terminal's SIGHUP
    hub = Hub(settings, games_total, None, mode, note, delay)
    for record in earlier:
        hub.add_record(record)
    hub.tick()  # the page opens on them

    async def stop() -> None:
        # A multiprocessing Event cannot wake a Trio task: poll it.
        while not stop_flag.is_set():  # noqa: ASYNC110
            await trio.sleep(0.1)
        # Let the last states wait out the delay, so the page ends on the end.
        with trio.move_on_after(delay + 2 * TICK):
            await trio.sleep_forever()

    urls: list[str] = []

    def ready_now(url: str) -> None:
        # The games come first: once it serves, the page takes the CPU they
        # leave (not before: at nice 10 beside busy processes, its start's
        # imports could take over a minute).
        with contextlib.suppress(OSError):
            os.nice(10)
        ready.send(("ready", url, urls[0] if urls else ""))

    try:
        trio.run(
            serve, hub, address, token, channel, ready_now, stop, organiser, urls.append, records
        )
    except OSError as exc:
        ready.send(("error", exc.strerror or str(exc)))
    except BaseException as exc:
        with contextlib.suppress(OSError):
            ready.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


class LiveServer:
    """The page of ``run --live``, in a process of its own.

    Table states come over :attr:`channel` (a bounded ``multiprocessing``
    queue given to the executor, :mod:`arena.game.feed`); finished games are
    handed over by the run (:meth:`add_record`, each as it is journaled;
    ``recorded``, those of an earlier part of a resumed run, at the start),
    to the hub's subscription (:meth:`arena.live.hub.Hub.subscribe`).
    :meth:`start` returns the viewer's URL (and sets
    :attr:`organiser_url`, the address with ``organiser``'s token that shows
    the tables in play, ``""`` without one); :meth:`close` lets the last
    states wait out the delay, then stops the process.

    Raises:
        LiveError: (from :meth:`start`) the port cannot be listened on.
    """

    def __init__(
        self,
        settings: dict[str, Any],
        games_total: int,
        recorded: Iterable[GameRecordJSON],
        address: Address,
        token: str | None,
        delay: float = 0.0,
        mode: str = "live",
        note: str = "",
        organiser: str | None = None,
    ) -> None:
        from arena.game.feed import QUEUE_SIZE

        self._ctx = multiprocessing.get_context("spawn")
        self.channel: Any = self._ctx.Queue(QUEUE_SIZE) if mode == "live" else None
        # Unbounded: a finished game is never dropped (table states may be).
        self.records: Any = self._ctx.Queue()
        self._ended = False
        # Those played before (--resume) go with the process, shown from the start.
        earlier = [{k: v for k, v in r.items() if k != "transcripts"} for r in recorded]
        self._stop = self._ctx.Event()
        self._ready, child = self._ctx.Pipe(duplex=False)
        self.delay = delay
        self.started_url = ""  # the viewer's URL once started
        self.organiser_url = ""  # the organiser's, with its token
        self._proc = self._ctx.Process(
            target=_server_process,
            args=(
                settings,
                games_total,
                earlier,
                self.records,
                mode,
                note,
                delay,
                address,
                token,
                organiser,
                self.channel,
                child,
                self._stop,
            ),
            daemon=True,
        )

    def start(self) -> str:
        """Start the server process; returns the page's URL (with its token)."""
        self._proc.start()
        if not self._ready.poll(START_TIMEOUT):
            self.close()
            raise LiveError("--live: the page's server did not start")
        try:
            kind, text, *more = self._ready.recv()
        except EOFError:  # the process died before it could say why
            kind, text, more = "error", f"its process ended (exit code {self._proc.exitcode})", []
        if kind != "ready":
            self.close()
            raise LiveError(f"--live: cannot serve the page: {text}")
        self.started_url = str(text)
        self.organiser_url = str(more[0]) if more else ""
        return self.started_url

    def add_record(self, record: GameRecordJSON) -> None:
        """Hand a finished game to the page (without its ``transcripts``,
        which the page never reads); never blocks."""
        if self._ended:
            return
        kept = {k: v for k, v in record.items() if k != "transcripts"}
        with contextlib.suppress(OSError, ValueError):
            self.records.put(kept)

    def close(self) -> None:
        """Stop the server (after the delay, so the page shows the end)."""
        if not self._ended:
            self._ended = True
            with contextlib.suppress(OSError, ValueError):
                self.records.put(None)  # the last record went before
        self._stop.set()
        # The delay, then the last rating of every game (about a millisecond a game).
        self._proc.join(self.delay + 30)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        if self.channel is not None:
            self.channel.cancel_join_thread()
            self.channel.close()
        self.records.cancel_join_thread()
        self.records.close()


def print_url(url: str, token: str | None, organiser_url: str = "") -> None:
    """Tell the user where the page is (stderr): the viewer's address, and
    the organiser's when there is one."""
    extra = " (it holds the access token: give it only to your viewers)" if token else ""
    print(f"live view: {url}{extra}", file=sys.stderr, flush=True)
    if organiser_url:
        print(
            f"live view, organiser's (tables in play card by card, deals later rotations "
            f"still play: keep it to yourself): {organiser_url}",
            file=sys.stderr,
            flush=True,
        )


def new_token() -> str:
    """A random access token (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def dumps(value: Any) -> str:
    """Compact JSON."""
    return json.dumps(value, separators=(",", ":"))
