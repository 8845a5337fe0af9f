"""Seats and the processes behind them.

Owns: what the referee needs of a seat and what a seat needs of the bytes
to its bot (``seat``: the ``Seat`` and ``Transport`` interfaces), the
JSON-lines protocol over any transport (``wire``), one running bot program
over pipes (``process``), a bot in memory for tests under a mock clock
(``memory``), seats played in the arena's process (``stand_ins``), turning an
entrant into a started process (``entrants``, ``launcher``), and everything
that keeps a bot in its place: unprivileged users and limits
(``isolation``), the bubblewrap sandbox (``seal``), control groups
(``cgroups``), the core token (``cores``), descriptor budgets
(``descriptors``) and capped buffers (``capped``).
May import: :mod:`arena.core`, :mod:`arena.protocol`.
"""
