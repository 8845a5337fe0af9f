"""What finished games add up to: ratings, standings, statistics.

Owns: TrueSkill ratings (``rating``: mu, sigma, conservative rating
mu - 3 sigma), per-entrant standings (``standings``) and statistics over
game records (``stats``).
May import: :mod:`arena.core`, :mod:`arena.protocol`, :mod:`arena.game`.
"""
