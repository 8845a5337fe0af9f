"""The Alembic environment of the competition server's database (run by
:func:`arena.server.migrate.migrate`, never by the ``alembic`` command)."""
