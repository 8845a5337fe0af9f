"""The wire protocol ``hearts-arena/1`` and what can go wrong on it.

Owns: framing, parsing and schema checks of the JSON lines (``codec``),
the kinds of fault a bot can commit (``faults``) and the game record, a
``games.jsonl`` line: its typed shape, builders and schema (``records``).
May import: :mod:`arena.core`.
"""
