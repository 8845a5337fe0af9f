"""The ``hearts-arena`` command line: parsing, settings and exit codes.

Owns: exit codes and the one-line error (``errors``, a leaf), every option
of ``run`` declared once in one table, with the defaults read from the
settings classes that own them (``options``), parsed arguments turned into
settings objects and a checked launcher (``settings``), the parser and
``main`` (``main``, imported by nothing), what ``run``/``report``/``verify``/
``cleanup`` do once parsed (``commands``), the tools' commands and the CI
verdict of ``run`` (``tools``), large competitions (``competition``),
``--config`` TOML files (``config``) and the live view (``live``).
Within the package: ``main`` imports the commands' modules; they import
``settings``, ``options`` and ``errors``; nothing imports ``main``.
May import: every other layer; nothing imports it.
"""
