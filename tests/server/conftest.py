"""The competition server's database fixtures: a SQLite file, or a database
on a private PostgreSQL server (Debian's ``postgresql``, issue 29) started
once per test process.

The server: ``initdb`` and ``pg_ctl`` (``initdb`` refuses root, so both run
as the ``postgres`` user through ``runuser``), in a fresh folder under
``/tmp``; it listens on no TCP address (``listen_addresses=''``), only on a
Unix socket in a private folder of mode 0700, and trusts that socket alone
(``pg_hba.conf``: one ``local`` line). Fsync is off (a test's data need not
survive a crash of the machine). It starts in about two seconds on a quiet
machine; where it cannot start (no package, not root, no ``postgres`` user,
no psycopg) every test that needs it is skipped with the reason.

``each_database``: parametrises a test over SQLite and PostgreSQL; every
competition folder the test makes with :func:`arena.server.folder.init_folder`
keeps its database there (``database_url`` given unless the test gives one).
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Seconds ``pg_ctl`` waits for the server to accept connections.
START_SECONDS = 120


@dataclass(frozen=True)
class PostgresServer:
    """A running private PostgreSQL server: its socket folder and binaries."""

    base: Path
    socket_dir: Path
    bin_dir: Path

    def url(self, name: str) -> str:
        """The URL of database ``name`` as the ``postgres`` role on the socket."""
        return f"postgresql://postgres@/{name}?host={self.socket_dir}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run ``sql`` with ``psql`` on the socket; its output (raises on an error)."""
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-h", str(self.socket_dir), "-U", "postgres",
             "-d", database, "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql: {done.stderr.strip()}")
        return done.stdout


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def why_no_postgres() -> str | None:
    """Why a private PostgreSQL server cannot start here, or ``None``."""
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install 'hearts-arena[server-postgres]')"
    if _bin_dir() is None:
        return "Debian's postgresql is not installed (apt-get install postgresql)"
    if os.geteuid() != 0:
        return "initdb refuses root and runs as the postgres user through runuser: needs root"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user on this machine"
    if shutil.which("runuser") is None:
        return "no runuser"
    return None


def _as_postgres(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", "postgres", "--", *argv],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL server for this test process (skipped with the
    reason where it cannot start)."""
    reason = why_no_postgres()
    if reason is not None:
        pytest.skip(f"PostgreSQL: {reason}")
    bin_dir = _bin_dir()
    assert bin_dir is not None
    pg = pwd.getpwnam("postgres")
    base = Path(tempfile.mkdtemp(prefix="hearts-pg-"))
    socket_dir = base / "socket"
    data = base / "data"
    os.chown(base, pg.pw_uid, pg.pw_gid)
    socket_dir.mkdir(mode=0o700)
    os.chmod(socket_dir, 0o700)
    os.chown(socket_dir, pg.pw_uid, pg.pw_gid)
    server = PostgresServer(base, socket_dir, bin_dir)
    started = False
    try:
        made = _as_postgres(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"],
            START_SECONDS,
        )  # fmt: skip
        if made.returncode != 0:
            pytest.skip(f"PostgreSQL: initdb failed: {made.stderr.strip()[-300:]}")
        # Trust on the private socket only: no host line, no TCP listener.
        (data / "pg_hba.conf").write_text("local all all trust\n", encoding="ascii")
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{socket_dir}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        run = _as_postgres(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"),
             "-w", "-t", str(START_SECONDS), "-s", "-o", options, "start"],
            START_SECONDS + 30,
        )  # fmt: skip
        if run.returncode != 0:
            log = (base / "server.log").read_text(errors="replace")[-300:]
            pytest.skip(f"PostgreSQL: pg_ctl could not start it: {run.stderr.strip()} {log}")
        started = True
        yield server
    finally:
        if started:
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                          "-s", "stop"], 60)  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh empty database on the private server (dropped after the test);
    its URL, without a password (the socket is trusted)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name}")
    yield postgres_server.url(name)
    with contextlib.suppress(RuntimeError):
        postgres_server.psql(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """``None`` (SQLite) or the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def each_database(backend: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Run the test on SQLite, then on PostgreSQL: every folder it makes with
    ``init_folder`` keeps its database in the backend's."""
    if backend is None:
        return None
    from arena.server import folder

    real = folder.init_folder

    def init_folder(*args: Any, **kw: Any) -> Any:
        kw.setdefault("database_url", backend)
        return real(*args, **kw)

    monkeypatch.setattr(folder, "init_folder", init_folder)
    return backend
