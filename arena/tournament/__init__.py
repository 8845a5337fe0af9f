"""Tournaments: schedules, formats, the runner and where games are played.

Owns: the schedule and the runner with its journal (``runner``), the ladder
format (``ladder``), what an executor is (``work``), executors
(``executors``: in process, a pool of worker processes in ``pool``, and the
factory; a Dask cluster in ``dask_executor``) and synthetic
tournaments played by the rules engine alone (``synthetic``); the settings
of a tournament and of ``run.json`` (``settings``: no Trio, so the command
line reads its defaults there cheaply).
May import: every layer below it (core, protocol, seats, game, results).
"""
