"""The competition server (``hearts-arena serve``, issue 27): a runner that
holds the key, gates submissions (check, validation) and plays a rolling,
deterministic ladder, and a web process that serves the API and the pages.

Its modules: :mod:`~arena.server.db` (the tables, the SQLite engine),
:mod:`~arena.server.migrate` (Alembic, run at start), :mod:`~arena.server.store`
(the queries both processes use), :mod:`~arena.server.folder` (the
competition folder: settings, key, modes), :mod:`~arena.server.gate` and
:mod:`~arena.server.ladder` (pure choices), :mod:`~arena.server.runner` (the
Trio program that plays tables). Its libraries (SQLAlchemy, Alembic) are the
``[server]`` extra, imported only by ``serve`` and ``submit``.
"""
