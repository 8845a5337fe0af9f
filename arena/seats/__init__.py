"""Seats: what the referee talks to, one per player of a game.

Owns: what the referee needs of a seat and what a seat needs of the bytes
to its bot (``seat``: the ``Seat`` and ``Transport`` interfaces, and the
``Request`` passed whole through every seat and wrapper), the JSON-lines
protocol over any transport (``wire``), the ``hello`` handshake
(``handshake``), a bot process as a seat speaking the protocol over its pipes
(``process``: ``BotProcess``, ``start_bot``, ``close_all``), a bot in memory
for tests under a mock clock (``memory``), seats played in the arena's
process and proxies around a seat (``stand_ins``), and capped buffers
(``capped``).

What the referee records of a bot's process comes through the seat: the CPU
seconds of each request (``Reply.cpu``), the processes killed for its memory
bound (``Seat.take_oom_kills``), why it ended (a fault's detail). How the
process is confined, started, bounded, frozen and killed is
:mod:`arena.sandbox`'s (``arena.sandbox.spawn.ConfinedProcess``), below this
layer. May import: :mod:`arena.core`, :mod:`arena.protocol`, :mod:`arena.sandbox`.
"""
