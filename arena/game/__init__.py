"""One game: the referee and the public view of its events.

Owns: the referee that plays one game between four seats (``referee``: any
:class:`arena.seats.seat.Seat`, with a deal source and a stop hook for tools
that play constructed or recorded deals), its settings (``settings``: no
Trio, for the command line's defaults) and the spectator's projection of its
events, from nobody's seat (``feed``).
May import: :mod:`arena.core`, :mod:`arena.protocol`, :mod:`arena.seats`.
"""
