"""The competition server's database fixtures: a SQLite file, or a database
on a private PostgreSQL server (Debian's ``postgresql``, issue 29) started
once per test process. A test module that uses them names this plugin::

    pytest_plugins = ["db_fixtures"]

(Not a ``tests/server/conftest.py``: a second conftest module named
``conftest`` shadows ``tests/conftest.py`` for every ``from conftest import``
collected after it, in every folder.)

The server (tests/server/private_pg.py): ``initdb`` and ``pg_ctl`` (``initdb``
refuses root, so both run as the ``postgres`` user through ``runuser``), in a
fresh folder of the temporary folder (in the suite, its folder on a tmpfs,
tests/conftest.py: the ``postgres`` user passes through it, mode 1777); it
listens on no TCP address
(``listen_addresses=''``), only on a Unix socket in a private folder of mode
0700, and trusts that socket alone (``pg_hba.conf``: one ``local`` line). It
starts in about two seconds on a quiet machine; where it cannot start (no
package, not root, no ``postgres`` user, no psycopg) every test that needs
it is skipped with the reason.

``each_database``: parametrises a test over SQLite and PostgreSQL; every
competition folder the test makes with :func:`arena.server.folder.init_folder`
keeps its database there (``database_url`` given unless the test gives one).

Migrated templates (issue 26: the migrations took about half a second a
test): :func:`server_templates.migrated_sqlite` makes a database file by copying one that the
real :func:`arena.server.migrate.migrate` made once per test process (SQLite's
backup API; the copy is in WAL mode, at the head revision, empty), and
``migrated_folders`` makes :func:`~arena.server.folder.init_folder` do the
same for the fresh file it makes (a test that uses neither still migrates,
as ``tests/server/test_db.py``'s migration tests and ``test_folder.py`` do).
On PostgreSQL ``each_database`` hands ``init_folder`` a database made with
``CREATE DATABASE ... TEMPLATE`` from one migrated once per test process
(``init_folder`` then finds it at the head with no competition in it);
``postgres_url`` stays an empty database.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from private_pg import PostgresServer, PostgresUnavailable, private_postgres
from server_templates import copy_template, fresh_sqlite

#: The name of the migrated template database on the private PostgreSQL server.
PG_TEMPLATE = "t_migrated_template"


@pytest.fixture
def migrated_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    """``init_folder`` (and only it) fills its fresh SQLite file from the
    migrated template instead of running the migrations; the result is the
    one ``migrate`` gives for an empty database. ``open_folder`` still runs
    the real ``migrate`` (at the head: nothing to do)."""
    from arena.server import folder
    from arena.server.migrate import MigrationResult, head_revision

    real = folder.migrate

    def migrate(database: Any) -> Any:
        path = database.path
        if path is None or not fresh_sqlite(path):
            return real(database)
        database.writer.dispose()  # no pooled connection sees the file change
        database.reader.dispose()
        copy_template(path)
        return MigrationResult(None, head_revision(), None)

    monkeypatch.setattr(folder, "migrate", migrate)


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


@pytest.fixture(scope="session")
def postgres_template(postgres_server: PostgresServer) -> str:
    """The name of a database on the private server migrated to the head
    (once per test process), for ``CREATE DATABASE ... TEMPLATE``."""
    from arena.server import db
    from arena.server.migrate import migrate

    postgres_server.psql(f"CREATE DATABASE {PG_TEMPLATE}")
    database = db.Database(db.DatabaseLocation(url=postgres_server.url(PG_TEMPLATE)))
    try:
        migrate(database)
    finally:
        database.close()
    return PG_TEMPLATE


@pytest.fixture
def migrated_postgres_url(postgres_server: PostgresServer, postgres_template: str) -> Iterator[str]:
    """A fresh database at the head revision (a copy of the migrated template,
    dropped after the test); its URL."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name} TEMPLATE {postgres_template}")
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


@pytest.fixture(params=["sqlite", "postgresql"])
def each_database(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, migrated_folders: None
) -> str | None:
    """Run the test on SQLite, then on PostgreSQL: every folder it makes with
    ``init_folder`` keeps its database in the backend's (a migrated template's
    copy on either). Returns ``None`` (SQLite) or the PostgreSQL URL."""
    if request.param == "sqlite":
        return None
    backend: str = request.getfixturevalue("migrated_postgres_url")
    from arena.server import folder

    real = folder.init_folder

    def init_folder(*args: Any, **kw: Any) -> Any:
        kw.setdefault("database_url", backend)
        return real(*args, **kw)

    monkeypatch.setattr(folder, "init_folder", init_folder)
    return backend
