"""The pure core: cards, the rules of Hearts, the tournament key and the
files shipped with the package.

Owns: card masks (``cards``), the rules engine (``rules``: deals, passes,
tricks, scoring, the whole game; R1-R14 of protocol/RULES.md), the master key and every value
derived from it (``keys``), and where package data lives (``resources``).
May import: the standard library only. No I/O beyond reading package data,
no Trio, no processes: so it can be tested and reused alone.
"""
