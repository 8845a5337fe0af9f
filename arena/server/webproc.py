"""The web process of ``hearts-arena serve``: the API and the pages
(:mod:`arena.server.web`) in a process of their own, started as the live
view's server is (:class:`arena.live.server.LiveServer`: a ``spawn``ed
interpreter, ``nice`` 10 so the games come first).

:func:`spawn_web` binds the listening socket in the calling process (the
runner: as root a port below 1024 can be bound only there) and hands it to
the child, which serves it as ``fd://N``. The child:

1. asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``
   through ctypes), and exits at once if the parent is already gone: killed
   even with SIGKILL, the runner leaves no web process holding its port;
2. started as root, drops to ``user`` (its groups, gid and uid: real,
   effective and saved) before it opens the database or reads a request;
   a spawned interpreter inherits no memory of the runner and no descriptor
   but the socket and its pipe, so it holds no key (what it reads from the
   installation, libraries and templates, is loaded before the drop);
3. lowers its priority (``nice`` 10) once it has loaded all that and
   reached the database (not before: at nice 10 beside busy processes the
   start's imports took over a minute);
4. serves until its parent stops it (:meth:`WebProcess.close`): over TLS
   when :class:`Hosting` names a certificate (its context made before the
   drop, so the key file may stay root's), with Hypercorn's read and
   keep-alive timeouts and, for ``--public-name``, its ``server_names``.

:meth:`Hosting.check` refuses an address other than loopback without TLS or
a proxy (issue 28).

Call it before the runner moves itself into the referees' CPU group
(:func:`arena.sandbox.cgroups.prioritize_self`): the child starts in the group
its parent is in then, outside the referees'.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pwd
import signal
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from arena.live.server import Address, LiveError, parse_address
from arena.server.db import DatabaseLocation
from arena.server.folder import CompetitionPaths, CompetitionSettings, FolderError
from arena.server.sessions import SiteSettings
from arena.server.uploads import UploadLimits
from arena.server.web import KEEP_ALIVE_TIMEOUT, READ_TIMEOUT
from arena.server.webstore import RateLimit

#: Where the web process listens by default.
DEFAULT_LISTEN: Final = "127.0.0.1:8000"
#: ``prctl`` option: the signal a process gets when its parent dies.
PR_SET_PDEATHSIG: Final = 1
#: Seconds :meth:`WebProcess.start` waits for the child to serve (importing the
#: web framework can take many seconds on a loaded machine).
START_TIMEOUT: Final = 60.0
#: Seconds a stopped web process gives Hypercorn to close its connections
#: (it ends as soon as Hypercorn's ``serve`` returns; at most this long).
SHUTDOWN_GRACE: Final = 2.0


class WebProcessError(RuntimeError):
    """The web process could not start; the message is one line."""


@dataclass(frozen=True)
class Hosting:
    """How the site faces the network (``serve``'s ``--certfile``,
    ``--keyfile``, ``--behind-proxy``, ``--public-name``).

    Attributes:
        certfile, keyfile: PEM files: Hypercorn serves TLS (both or neither).
        behind_proxy: the reverse proxy's address, whose ``X-Forwarded-*``
            headers alone are trusted (it terminates TLS).
        public_name: the host name the site answers to (Hypercorn's
            ``server_names``: a request naming another host is refused).
        read_timeout: seconds Hypercorn waits for each read of a request.
        keep_alive_timeout: seconds an idle connection stays open, and at
            most the time a request's head may take to arrive.
    """

    certfile: Path | None = None
    keyfile: Path | None = None
    behind_proxy: str | None = None
    public_name: str | None = None
    read_timeout: float = READ_TIMEOUT
    keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT

    @property
    def tls(self) -> bool:
        """Whether Hypercorn serves TLS."""
        return self.certfile is not None

    @property
    def secure(self) -> bool:
        """Whether browsers reach the site over TLS (here or at the proxy)."""
        return self.tls or self.behind_proxy is not None

    def check(self, host: str) -> None:
        """Refuse what cannot be served safely on ``host``.

        Raises:
            WebProcessError: one of the two TLS files without the other, a
                file missing, a proxy that is not an IP address, or an
                address other than loopback without TLS or a proxy.
        """
        if (self.certfile is None) != (self.keyfile is None):
            raise WebProcessError("--certfile and --keyfile go together")
        for given in (self.certfile, self.keyfile):
            if given is not None and not given.is_file():
                raise WebProcessError(f"TLS file {given}: no such file")
        if self.tls and self.behind_proxy is not None:
            raise WebProcessError("give TLS files or --behind-proxy, not both")
        if self.behind_proxy is not None:
            import ipaddress

            try:
                ipaddress.ip_address(self.behind_proxy)
            except ValueError:
                raise WebProcessError(
                    f"--behind-proxy {self.behind_proxy}: give the proxy's IP address"
                ) from None
        if not Address(host, 0).loopback and not self.secure:
            raise WebProcessError(
                f"refusing to serve on {host} without TLS: give --certfile and --keyfile, "
                "or --behind-proxy ADDRESS (or listen on 127.0.0.1)"
            )

    def public_url(self, host: str, port: int) -> str:
        """The site's address as people reach it: ``https://NAME`` behind a
        proxy with a public name, else this server's scheme, host and port."""
        if self.public_name and self.behind_proxy is not None:
            return f"https://{self.public_name}"
        scheme = "https" if self.tls else "http"
        name = self.public_name or (f"[{host}]" if ":" in host else host)
        default = 443 if self.tls else 80
        return f"{scheme}://{name}" + ("" if port == default else f":{port}")


@dataclass(frozen=True)
class WebSettings:
    """What the web process serves (paths absolute).

    Attributes:
        database: the SQLite file, or where the database is (a PostgreSQL
            URL with its password, :class:`arena.server.db.DatabaseLocation`).
        uploads: the uploads folder.
        host: the address to listen on; ``port`` its port (0: any free one).
        user: the user to run as when started as root (``None``: stay as is;
            refused as root).
        limits: the upload caps; ``rate`` the submissions allowed.
        hosting: TLS, a proxy, the public name, Hypercorn's timeouts.
        site: the sign-in side's settings (``secure`` is set from ``hosting``).
        pages: who sees the pages (competition.toml's ``[web] pages``).
    """

    database: Path | DatabaseLocation
    uploads: Path
    host: str = "127.0.0.1"
    port: int = 8000
    user: str | None = None
    limits: UploadLimits = field(default_factory=UploadLimits)
    rate: RateLimit = field(default_factory=RateLimit)
    hosting: Hosting = field(default_factory=Hosting)
    site: SiteSettings = field(default_factory=SiteSettings)
    pages: str = "signed-in"


def die_with_parent(parent: int) -> None:
    """Ask for SIGKILL when the parent (pid ``parent``) dies; exit now if it
    already has (it died before the request was made)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def drop_to(user: str) -> tuple[int, int]:
    """Become ``user`` for good: no supplementary groups but its own, its gid
    and uid (real, effective, saved). Returns ``(uid, gid)``.

    Raises:
        WebProcessError: no such user, or the change did not take.
    """
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise WebProcessError(f"--user {user}: no such user") from None
    os.setgroups([entry.pw_gid])
    os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
    os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
    if os.getresuid() != (entry.pw_uid,) * 3 or os.getresgid() != (entry.pw_gid,) * 3:
        raise WebProcessError(f"--user {user}: could not drop to uid {entry.pw_uid}")
    return entry.pw_uid, entry.pw_gid


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening.

    Raises:
        WebProcessError: the address cannot be listened on.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise WebProcessError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _child(
    settings: WebSettings,
    sock: socket.socket,
    parent: int,
    ready: Any,
    stop: Any,
    live: Any = None,
) -> None:
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's; it stops us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        app, database = _prepare(settings)
        tls = _tls_context(settings.hosting)  # the key file read before the drop
        if os.geteuid() == 0 and settings.user is not None:
            drop_to(settings.user)
            die_with_parent(parent)  # a change of credentials clears the request (prctl(2))
        database.close()  # connections made from now on are the user's
        _reach(database)
        # The games come first once we serve; not before: at nice 10 beside busy
        # processes, the start's imports (about 1 CPU-s) took over a minute.
        with contextlib.suppress(OSError):
            os.nice(10)
        _serve(app, database, sock, ready, stop, live, settings.hosting, tls)
    except WebProcessError as exc:
        ready.send(("error", str(exc)))
    except BaseException as exc:
        with contextlib.suppress(OSError):
            ready.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


def _prepare(settings: WebSettings) -> tuple[Any, Any]:
    """The application and its database, with everything it reads from the
    installation loaded now: the libraries, templates, assets and the
    Environment page (the user it drops to may not read the installation,
    e.g. a Python under ``/root``). One read of the database loads the
    driver's modules; SQLite gives any WAL file it makes the database's owner."""
    import hypercorn.trio  # noqa: F401

    from arena.server import web
    from arena.server.db import Database
    from arena.server.environment import environment
    from arena.server.webstore import standings_json

    database = Database(settings.database)
    database.run_read(standings_json)
    config = web.WebConfig(
        database,
        settings.uploads,
        limits=settings.limits,
        rate=settings.rate,
        # Behind a proxy or with a public name, Host names the site, not loopback.
        loopback=Address(settings.host, settings.port).loopback
        and settings.hosting.behind_proxy is None
        and settings.hosting.public_name is None,
        site=replace(settings.site, secure=settings.hosting.secure),
        proxy=settings.hosting.behind_proxy,
        pages=settings.pages,
    )
    app = web.make_app(config)
    web.preload()
    environment()
    return app, database


def _tls_context(hosting: Hosting) -> Any:
    """Hypercorn's TLS context, made now (its key file may be readable only
    before the change of user); ``None`` without TLS."""
    if not hosting.tls:
        return None
    from arena.server.web import hypercorn_config

    config = hypercorn_config("127.0.0.1:0", certfile=hosting.certfile, keyfile=hosting.keyfile)
    try:
        return config.create_ssl_context()
    except (OSError, ValueError) as exc:
        raise WebProcessError(f"TLS files {hosting.certfile}, {hosting.keyfile}: {exc}") from None


def _server_names(name: str | None, port: int) -> tuple[str, ...]:
    """Hypercorn's ``server_names`` for ``--public-name NAME`` (it compares the
    whole ``Host`` header): ``NAME`` and ``NAME:PORT``; none without a name."""
    return (name, f"{name}:{port}") if name else ()


def _reach(database: Any) -> None:
    """Read the database once as the user the process now runs as (a
    PostgreSQL socket or password file the user cannot reach fails here, at
    start, not at the first request).

    Raises:
        WebProcessError: the database cannot be read (one line).
    """
    from sqlalchemy.exc import SQLAlchemyError

    try:
        database.run_read(lambda conn: conn.exec_driver_sql("SELECT 1").all())
    except SQLAlchemyError as exc:
        lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        raise WebProcessError(
            f"database {database.describe()}: {lines[0] if lines else type(exc).__name__}"
        ) from None


def _serve(
    app: Any,
    database: Any,
    sock: socket.socket,
    ready: Any,
    stop: Any,
    live: Any = None,
    hosting: Hosting | None = None,
    tls: Any = None,
) -> None:
    import trio
    from hypercorn.trio import serve

    from arena.server.web import hypercorn_config, receive_table_states

    hosting = hosting or Hosting()
    config = hypercorn_config(
        f"fd://{sock.fileno()}",
        read_timeout=hosting.read_timeout,
        keep_alive_timeout=hosting.keep_alive_timeout,
        certfile=hosting.certfile,
        keyfile=hosting.keyfile,
        server_names=_server_names(hosting.public_name, sock.getsockname()[1]),
    )
    if tls is not None:
        config.create_ssl_context = lambda: tls  # made before the change of user

    async def main() -> None:
        shutdown = trio.Event()
        served = trio.Event()

        async def serving(
            task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
        ) -> None:
            try:
                await serve(app, config, shutdown_trigger=shutdown.wait, task_status=task_status)
            finally:
                served.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(serving)
            if live is not None:  # the tables in play, from the runner's games
                nursery.start_soon(receive_table_states, app.feed, live)
            ready.send(("ready", os.getpid()))
            # The stop pipe is readable once the parent writes to it or its
            # end closes (the parent gone): no poll (a 0.1 s poll of a
            # multiprocessing Event was most of an idle web process's CPU).
            await trio.lowlevel.wait_readable(stop.fileno())
            shutdown.set()
            # Ends once Hypercorn has closed its connections and returned (a
            # fixed wait of SHUTDOWN_GRACE seconds before issue 26), or at most then.
            with trio.move_on_after(SHUTDOWN_GRACE):
                await served.wait()
            nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    finally:
        database.close()


class WebProcess:
    """The web process (:func:`spawn_web` starts it).

    Attributes:
        url: where it serves (``http://HOST:PORT``).
        pid: its process id, once started.
    """

    def __init__(self, settings: WebSettings, live: Any = None) -> None:
        if os.geteuid() == 0 and settings.user is None:
            raise WebProcessError("serve as root needs --user USER: the web process runs as USER")
        settings.hosting.check(settings.host)
        self.settings = settings
        self._sock = listen_socket(settings.host, settings.port)
        port = self._sock.getsockname()[1]
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        self.url = f"{'https' if settings.hosting.tls else 'http'}://{host}:{port}"
        self.pid = 0
        ctx = multiprocessing.get_context("spawn")
        # The stop pipe: the child waits for it to be readable (a message, or
        # the end of the file once this end is closed).
        stop, self._stop = ctx.Pipe(duplex=False)
        self._ready, child = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(
            target=_child,
            args=(settings, self._sock, os.getpid(), child, stop, live),
            daemon=True,
        )
        self._child_ends = (stop, child)

    def start(self) -> str:
        """Start it and wait until it serves; returns :attr:`url`.

        Raises:
            WebProcessError: it did not start (its one-line reason).
        """
        self._proc.start()
        self._sock.close()  # the child has its own copy
        for end in self._child_ends:  # and of these
            end.close()
        if not self._ready.poll(START_TIMEOUT):
            self.close()
            raise WebProcessError("the web process did not start")
        try:
            kind, value = self._ready.recv()
        except EOFError:
            kind, value = "error", f"its process ended (exit code {self._proc.exitcode})"
        if kind != "ready":
            self.close()
            raise WebProcessError(f"the web process cannot serve: {value}")
        self.pid = int(value)
        return self.url

    def alive(self) -> bool:
        """Whether the process runs."""
        return self._proc.is_alive()

    def terminate(self) -> None:
        """:meth:`close` (the name the runner calls)."""
        self.close()

    def close(self) -> None:
        """Stop it (gracefully, then killed after 10 seconds)."""
        with contextlib.suppress(OSError):
            self._stop.send_bytes(b"stop")
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        with contextlib.suppress(OSError):
            self._sock.close()


def spawn_web(
    settings: WebSettings | CompetitionPaths,
    listen: str | None = None,
    user: str | None = None,
    live: Any = None,
    hosting: Hosting | None = None,
    database: DatabaseLocation | None = None,
) -> WebProcess:
    """Start the web process; it serves when this returns. ``settings`` is a
    :class:`WebSettings`, or a competition folder's paths served on ``listen``
    (``[HOST:]PORT``, default ``127.0.0.1:8000``) as ``user`` (the runner's call).
    ``live``: the bounded queue the runner's games send their public table
    states on (:mod:`arena.game.feed`); the web process shows them live.
    ``hosting``: TLS, a proxy, the public name (with a folder's paths; the
    site's settings come from its ``competition.toml``, section ``[web]``).
    ``database``: where the competition's database is (the runner's
    :attr:`arena.server.db.Database.location`; default the folder's SQLite file).

    Raises:
        WebProcessError: as root without ``user``, an address that cannot be
            listened on, or a process that could not start (one line).
    """
    if isinstance(settings, CompetitionPaths):
        try:
            address = parse_address(listen or DEFAULT_LISTEN)
        except LiveError as exc:
            raise WebProcessError(str(exc).replace("--live", "--listen")) from None
        try:
            web_settings = CompetitionSettings.read(settings.settings).web
            site = web_settings.site()
        except FolderError as exc:
            raise WebProcessError(str(exc)) from None
        settings = WebSettings(
            database or settings.database,
            settings.uploads,
            address.host,
            address.port,
            user,
            hosting=hosting or Hosting(),
            site=site,
            pages=web_settings.pages,
        )
    web = WebProcess(settings, live)
    web.start()
    return web
