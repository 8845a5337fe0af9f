"""Seats and the processes behind them.

Owns: one running bot program behind a request/reply interface
(``process``), seats that are not processes (``stand_ins``), turning an
entrant into a started process (``entrants``, ``launcher``), and everything
that keeps a bot in its place: unprivileged users and limits
(``isolation``), the bubblewrap sandbox (``seal``), control groups
(``cgroups``), the core token (``cores``), descriptor budgets
(``descriptors``) and capped buffers (``capped``).
May import: :mod:`arena.core`, :mod:`arena.protocol`.
"""
