"""Alembic's environment: upgrade the connection :func:`arena.server.migrate.migrate`
hands over (``config.attributes["connection"]``), in batch mode, since
SQLite alters a table only by copying it."""

from __future__ import annotations

from alembic import context

from arena.server.db import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
