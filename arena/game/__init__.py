"""One game: the referee and the public view of its events.

Owns: the referee that plays one game between four seats (``referee``) and
the spectator's projection of its events, from nobody's seat (``feed``).
May import: :mod:`arena.core`, :mod:`arena.protocol`, :mod:`arena.seats`.
"""
