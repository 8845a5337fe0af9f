"""A private PostgreSQL server for the tests (tests/server/conftest.py) and
benchmarks/server_load.py: Debian's ``postgresql`` (issue 29).

``initdb`` refuses root, so ``initdb`` and ``pg_ctl`` run as the
``postgres`` user through ``runuser``, in a fresh folder of the temporary
folder (``TMPDIR``: in the suite, a folder of ``/dev/shm``, tests/conftest.py;
the ``postgres`` user must pass through every folder above it). The
server listens on no TCP address (``listen_addresses=''``), only on a Unix
socket in a private folder of mode 0700, and trusts that socket alone
(``pg_hba.conf``: one ``local`` line). Fsync is off (nothing here need
survive a crash of the machine). It starts in about two seconds on a quiet
machine.

A watcher process (:data:`_WATCHER`) stops the server and removes its folder
when the process that started it dies without doing so itself (a test worker
killed by SIGKILL, a benchmark stopped with ``kill -9``): no server is left
running.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Seconds ``initdb`` and ``pg_ctl`` may take (a loaded machine is slow).
START_SECONDS = 120

#: The watcher: waits (on a pidfd, no polling) for the process that started
#: the server to exit, then stops the server and removes its folder. Killed
#: by that process when it stops the server itself. Its arguments: the
#: starter's pid, the data folder, the base folder, ``pg_ctl``.
_WATCHER = """
import os, select, shutil, subprocess, sys
parent, data, base, pg_ctl = sys.argv[1:5]
try:
    fd = os.pidfd_open(int(parent))
except ProcessLookupError:
    fd = None  # gone already
print("watching", flush=True)
if fd is not None:
    select.select([fd], [], [])
subprocess.run(["runuser", "-u", "postgres", "--", pg_ctl, "-D", data, "-m", "immediate",
                "-s", "stop"], capture_output=True, timeout=60, check=False)
shutil.rmtree(base, ignore_errors=True)
"""


class PostgresUnavailable(Exception):
    """The private server cannot start here (the message says why)."""


@dataclass(frozen=True)
class PostgresServer:
    """A running private PostgreSQL server: its folder, socket folder and binaries."""

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

    def postmaster_pid(self) -> int:
        """The server's process id (its ``postmaster.pid``'s first line)."""
        return int((self.base / "data" / "postmaster.pid").read_text().split()[0])


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries, or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def why_no_postgres() -> str | None:
    """Why a private PostgreSQL server cannot start here, or ``None``."""
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install 'hearts-arena[server-postgres]')"
    if bin_dir() is None:
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


@contextmanager
def private_postgres() -> Iterator[PostgresServer]:
    """Start a private server, yield it, stop it (immediately) and remove its folder.

    Raises:
        PostgresUnavailable: it cannot start here (why).
    """
    reason = why_no_postgres()
    if reason is not None:
        raise PostgresUnavailable(reason)
    binaries = bin_dir()
    assert binaries is not None
    pg = pwd.getpwnam("postgres")
    base = Path(tempfile.mkdtemp(prefix="hearts-pg-"))
    socket_dir = base / "socket"
    data = base / "data"
    os.chown(base, pg.pw_uid, pg.pw_gid)
    socket_dir.mkdir(mode=0o700)
    os.chmod(socket_dir, 0o700)
    os.chown(socket_dir, pg.pw_uid, pg.pw_gid)
    started = False
    watcher: subprocess.Popen[str] | None = None
    try:
        made = _as_postgres(
            [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"],
            START_SECONDS,
        )  # fmt: skip
        if made.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {made.stderr.strip()[-300:]}")
        # Trust on the private socket only: no host line, no TCP listener.
        (data / "pg_hba.conf").write_text("local all all trust\n", encoding="ascii")
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{socket_dir}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        run = _as_postgres(
            [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"),
             "-w", "-t", str(START_SECONDS), "-s", "-o", options, "start"],
            START_SECONDS + 30,
        )  # fmt: skip
        if run.returncode != 0:
            log = (base / "server.log").read_text(errors="replace")[-300:]
            raise PostgresUnavailable(f"pg_ctl could not start it: {run.stderr.strip()} {log}")
        started = True
        watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHER, str(os.getpid()), str(data), str(base),
             str(binaries / "pg_ctl")],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True,
        )  # fmt: skip
        assert watcher.stdout is not None
        watcher.stdout.readline()  # its pidfd is open: from here on a death is seen
        yield PostgresServer(base, socket_dir, binaries)
    finally:
        if watcher is not None:
            watcher.kill()
            watcher.wait()
        if started:
            _as_postgres([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate",
                          "-s", "stop"], 60)  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)
