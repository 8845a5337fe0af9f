"""The wire protocol ``hearts-arena/1`` and what can go wrong on it.

Owns: framing, parsing and schema checks of the JSON lines (``codec``) and
the kinds of fault a bot can commit (``faults``).
May import: :mod:`arena.core`.
"""
