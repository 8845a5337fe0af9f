"""``hearts-arena serve``: a competition server on one machine (issue 27).

Its web side: :mod:`arena.server.uploads` (checking and storing uploads),
:mod:`arena.server.web` (the HTTP API and the public pages) and
:mod:`arena.server.webproc` (the web process).
"""
