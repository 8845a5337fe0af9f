"""The competition server's database fixtures: a SQLite file, or a database
on a private PostgreSQL server (Debian's ``postgresql``, issue 29) started
once per test process. A test module that uses them names this plugin::

    pytest_plugins = ["db_fixtures"]

(Not a ``tests/server/conftest.py``: a second conftest module named
``conftest`` shadows ``tests/conftest.py`` for every ``from conftest import``
collected after it, in every folder.)

The server (tests/server/private_pg.py): ``initdb`` and ``pg_ctl`` (``initdb``
refuses root, so both run as the ``postgres`` user through ``runuser``), in a
fresh folder under ``/tmp``; it listens on no TCP address
(``listen_addresses=''``), only on a Unix socket in a private folder of mode
0700, and trusts that socket alone (``pg_hba.conf``: one ``local`` line). It
starts in about two seconds on a quiet machine; where it cannot start (no
package, not root, no ``postgres`` user, no psycopg) every test that needs
it is skipped with the reason.

``each_database``: parametrises a test over SQLite and PostgreSQL; every
competition folder the test makes with :func:`arena.server.folder.init_folder`
keeps its database there (``database_url`` given unless the test gives one).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from private_pg import PostgresServer, PostgresUnavailable, private_postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL server for this test process (tests/server/private_pg.py;
    skipped with the reason where it cannot start)."""
    try:
        with private_postgres() as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL: {exc}")


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
