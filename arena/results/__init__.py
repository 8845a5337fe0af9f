"""What finished games add up to: ratings, standings, statistics.

Owns: TrueSkill ratings (``rating``: mu, sigma, conservative rating
mu - 3 sigma), per-entrant standings (``standings``, typed rows
``TableRow``/``StandingsRow``), statistics over game records (``stats``) and
their analysis once for the report and the live view, with the typed content
of ``results.json`` and its reader (``analysis``).
May import: :mod:`arena.core`, :mod:`arena.protocol`, :mod:`arena.game`.
"""
