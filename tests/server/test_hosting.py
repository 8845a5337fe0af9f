"""How the competition server faces the network (issue 28): a slow client
dropped by a real Hypercorn on loopback, TLS with a throw-away certificate
in the web process, the public name, and serve's refusal to listen beyond
loopback without TLS or a proxy."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from server_templates import migrated_sqlite

from arena.cli.main import main
from arena.server import db, sessions
from arena.server.web import HSTS, WebConfig, hypercorn_config, make_app
from arena.server.webproc import Hosting, WebProcessError, WebSettings, spawn_web

ROOT = os.geteuid() == 0
USER = "nobody"


@pytest.fixture
def folder() -> Iterator[Path]:
    """The database and uploads folders of a competition (the web user's as
    root), outside pytest's root-only temporary folder."""
    top = Path(tempfile.mkdtemp(prefix="hearts-arena-hosting-"))
    top.chmod(0o711)
    (top / "db").mkdir(mode=0o700)
    (top / "uploads").mkdir(mode=0o700)
    path = top / "db" / db.DATABASE_NAME
    migrated_sqlite(path)  # set_wal and migrate, from a template (server_templates)
    database = db.Database(path)
    database.close()
    if ROOT:
        import pwd

        entry = pwd.getpwnam(USER)
        for p in [top / "db", top / "uploads", *(top / "db").iterdir()]:
            os.chown(p, entry.pw_uid, entry.pw_gid)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def throwaway_certificate(where: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1 and its key (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = where / "cert.pem", where / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    keyfile.chmod(0o600)  # root's: read by the web process before it drops to USER
    return certfile, keyfile


def test_a_slow_client_is_dropped_after_the_timeouts(folder: Path) -> None:
    """A real Hypercorn on 127.0.0.1 with the web process's configuration
    (timeouts of 2 s): a request head sent a byte a second is cut off before
    it is complete (the idle timer runs until the head is in); a head whose
    body never comes is cut off by the read timeout; a prompt request is
    answered. No wall-time assertion: what is asserted is how much of the
    head got through and that the server closed the connection."""
    database = db.Database(folder / "db" / db.DATABASE_NAME)
    app = make_app(WebConfig(database, folder / "uploads", pages="public"))  # read anonymously
    head = b"GET /api/standings HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"y" * 20 + b"\r\n\r\n"

    async def main() -> tuple[int, bytes, bytes, bytes]:
        config = hypercorn_config("127.0.0.1:0", read_timeout=2, keep_alive_timeout=2)
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(partial(_serve_app, app, config))
            port = int(binds[0].rsplit(":", 1)[1])
            # prompt: answered
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"GET /api/standings HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = await _read_some(stream)
            await stream.aclose()
            # a byte a second: dropped before the head is complete
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            sent = 0
            with trio.fail_after(60):
                try:
                    for byte in head:
                        await stream.send_all(bytes([byte]))
                        sent += 1
                        with trio.move_on_after(1):
                            if await stream.receive_some(1024) == b"":
                                break
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            slow_end = b"" if sent < len(head) else b"complete"
            await stream.aclose()
            # the head at once, then a promised body that never comes: the read timeout
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(
                b"POST /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\nOrigin: http://127.0.0.1\r\n\r\n"
            )
            with trio.fail_after(60):
                stalled = await _read_all(stream)
            await stream.aclose()
            nursery.cancel_scope.cancel()
        return sent, answer, slow_end, stalled

    try:
        sent, answer, slow_end, stalled = trio.run(main)
    finally:
        database.close()
    assert answer.startswith(b"HTTP/1.1 200")
    assert 1 <= sent < len(head) and slow_end == b""  # cut off mid-head
    assert not stalled.startswith(b"HTTP/1.1 2")  # no request was served from a missing body


async def _serve_app(app: Any, config: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    from hypercorn.trio import serve

    await serve(app, config, task_status=task_status)


async def _read_some(stream: trio.SocketStream) -> bytes:
    with trio.fail_after(30):
        return bytes(await stream.receive_some(65536))


async def _read_all(stream: trio.SocketStream) -> bytes:
    data = b""
    try:
        while chunk := await stream.receive_some(65536):
            data += chunk
    except trio.BrokenResourceError:
        pass
    return data


def test_tls_as_the_web_process_serves_it_with_hsts_and_the_public_name(
    folder: Path, tmp_path: Path
) -> None:
    """The web process's own serving (its application, TLS context and
    Hypercorn configuration; in a thread here, not a spawned process, to keep
    the test fast): TLS from --certfile/--keyfile, HSTS on every response, a
    __Host- Secure cookie at sign-in, and with --public-name a request naming
    another host refused."""
    import multiprocessing
    import threading

    from arena.server.webproc import _prepare, _serve, _tls_context, listen_socket

    certfile, keyfile = throwaway_certificate(tmp_path)
    database = db.Database(folder / "db" / db.DATABASE_NAME)
    secret = database.run_write(sessions.organiser_link, 1e12)  # expires far in the future
    database.close()
    hosting = Hosting(certfile=certfile, keyfile=keyfile, public_name="localhost")
    settings = WebSettings(
        folder / "db" / db.DATABASE_NAME,
        folder / "uploads",
        port=0,
        user=USER if ROOT else None,
        hosting=hosting,
        pages="public",  # read anonymously here (docs/server-web.md, who sees what)
    )
    hosting.check(settings.host)
    sock = listen_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app, web_database = _prepare(settings)
    tls = _tls_context(hosting)
    said: list[tuple[str, Any]] = []
    ready = threading.Event()

    class Pipe:
        def send(self, message: tuple[str, Any]) -> None:
            said.append(message)
            ready.set()

    stop, stopper = multiprocessing.Pipe(duplex=False)  # as WebProcess stops it
    thread = threading.Thread(
        target=_serve, args=(app, web_database, sock, Pipe(), stop, None, hosting, tls)
    )
    thread.start()
    try:
        assert ready.wait(60) and said[0][0] == "ready"
        trust = ssl.create_default_context(cafile=str(certfile))
        with httpx.Client(verify=trust, base_url=f"https://localhost:{port}") as client:
            r = client.get("/api/standings")
            assert r.status_code == 200 and r.json()["rows"] == []
            assert r.headers["strict-transport-security"] == HSTS
            r = client.post(f"/signin/{secret}", headers={"Origin": f"https://localhost:{port}"})
            assert r.status_code == 303
            cookie = r.headers["set-cookie"]
            assert cookie.startswith("__Host-arena_session=") and "Secure" in cookie
        # another host name: Hypercorn refuses it (server_names)
        with httpx.Client(verify=False) as client:
            r = client.get(f"https://127.0.0.1:{port}/api/standings")
            assert r.status_code in (400, 404, 421) and "rows" not in r.text
        # plain HTTP on the TLS port gets no page
        with httpx.Client() as client, pytest.raises(httpx.HTTPError):
            client.get(f"http://localhost:{port}/api/standings")
    finally:
        stopper.send_bytes(b"stop")
        thread.join(30)
        stop.close()
        stopper.close()
        with contextlib.suppress(OSError):  # Hypercorn closed it
            sock.close()
    assert not thread.is_alive()


def test_serve_refuses_a_non_loopback_address_without_tls_or_a_proxy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 and one line, before anything starts; TLS files or a proxy
    lift the refusal (then the folder's absence is what stops it)."""
    missing = tmp_path / "no-such-folder"
    for listen in ("0.0.0.0:8000", "192.0.2.7:8000", "[::]:8000"):
        assert main(["serve", str(missing), "--listen", listen]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "without TLS" in err[0], err
    assert (
        main(["serve", str(missing), "--listen", "0.0.0.0:8000", "--behind-proxy", "127.0.0.1"])
        == 2
    )
    assert "is not a competition folder" in capsys.readouterr().err
    certfile, keyfile = throwaway_certificate(tmp_path)
    words = ["--listen", "0.0.0.0:8000", "--certfile", str(certfile), "--keyfile", str(keyfile)]
    assert main(["serve", str(missing), *words]) == 2
    assert "is not a competition folder" in capsys.readouterr().err
    # the checks themselves
    with pytest.raises(WebProcessError, match="go together"):
        Hosting(certfile=certfile).check("127.0.0.1")
    with pytest.raises(WebProcessError, match="proxy's IP address"):
        Hosting(behind_proxy="proxy.example").check("0.0.0.0")
    with pytest.raises(WebProcessError, match="without TLS"):
        spawn_web(WebSettings(tmp_path / "x.sqlite3", tmp_path, host="0.0.0.0", port=0, user=USER))
    Hosting().check("127.0.0.1")
    Hosting().check("::1")


def test_organiser_link_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--init prints a one-time organiser link, --organiser-link a new one;
    each signs the organiser in once (the application's own exchange)."""
    root = tmp_path / "srv"
    user = ["--user", USER] if ROOT else []
    assert main(["serve", str(root), "--init", *user]) == 0
    first = capsys.readouterr().out.strip().splitlines()[-1]
    assert first.startswith("http://127.0.0.1:8000/signin/")
    assert (
        main(
            [
                "serve",
                str(root),
                "--organiser-link",
                "--public-name",
                "arena.example",
                "--behind-proxy",
                "127.0.0.1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "expires after 24 hours" in out
    second = out.strip().splitlines()[-1]
    assert second.startswith("https://arena.example/signin/")
    database = db.Database(root / "db" / db.DATABASE_NAME)
    try:
        for link in (first, second):
            secret = link.rsplit("/", 1)[1]
            made = database.run_write(sessions.exchange_link, secret, 1.0)
            assert made.viewer.organiser
            with pytest.raises(sessions.SignInError, match="used already"):
                database.run_write(sessions.exchange_link, secret, 2.0)
    finally:
        database.close()


def test_the_docs_tls_and_proxy_commands_parse_as_written() -> None:
    """docs/server-web.md, "TLS or a proxy": both commands are serve's own."""
    import shlex

    from arena.cli.main import build_parser

    text = (Path(__file__).parents[2] / "docs" / "server-web.md").read_text()
    block = text.split("## TLS or a proxy\n")[1].split("```sh\n")[1].split("```")[0]
    commands = [shlex.split(c) for c in block.replace("\\\n", " ").splitlines() if c.strip()]
    assert len(commands) == 2
    tls, proxy = (build_parser().parse_args(c[2:]) for c in commands)  # after "sudo hearts-arena"
    assert (tls.certfile, tls.keyfile) == (
        Path("/etc/ssl/arena/fullchain.pem"),
        Path("/etc/ssl/arena/privkey.pem"),
    )
    assert tls.listen == "0.0.0.0:443" and tls.public_name == "arena.example.org"
    assert proxy.behind_proxy == "127.0.0.1" and proxy.listen == "127.0.0.1:8000"
    Hosting(behind_proxy=proxy.behind_proxy).check("0.0.0.0")  # a proxy lifts the refusal
