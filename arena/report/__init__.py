"""Outputs of a tournament: files, HTML, charts, the terminal table, CI verdicts.

Owns: writing ``results.json``, ``standings.csv`` and the HTML report
(``outputs``: the folder's file names and whole-file writes in ``files``,
HTML pieces and the Jinja2 environment in ``html``, what a game record
shows in ``replays``, each page's data in ``pages``, the CSV in
``standings_csv``; templates in ``templates/``), chart geometry (``charts``),
JUnit XML (``junit``), the terminal's standings table (``terminal``),
``--fail-if``/``--junit`` verdicts (``verdict``) and the tournament's
``run.json``, read and written whole (``runfile``).
May import: every layer below it (core .. tournament).
"""
