"""The ``hearts-arena`` command line: parsing, settings and exit codes.

Owns: the parser and ``main`` (``main``), what ``run``/``report``/``verify``/
``cleanup`` do once parsed (``commands``), the tools' and large
competitions' flags (``tools``, ``competition``), ``--config`` TOML files
(``config``) and the live view's options (``live``).
May import: every other layer; nothing imports it.
"""
