"""Outputs of a tournament: files, HTML, charts, the terminal table, CI verdicts.

Owns: ``results.json``, ``standings.csv`` and the HTML report
(``outputs``, templates in ``templates/``), chart geometry (``charts``),
JUnit XML (``junit``), the terminal's standings table (``terminal``),
``--fail-if``/``--junit`` verdicts (``verdict``) and the tournament's
``run.json``, read and written whole (``runfile``).
May import: every layer below it (core .. tournament).
"""
