"""One tournament run as a library, for the command line and a server alike.

* :mod:`arena.run.run`: :func:`~arena.run.run.plan` the games, then a
  :class:`~arena.run.run.Run` takes a record store, ``await run.play(...)``
  (cancellable, with a record hook and a progress hook) and
  :meth:`~arena.run.run.Run.finish` (outputs, verdict) returns an
  :class:`~arena.run.run.Outcome`.
* :mod:`arena.run.folder`: the record store interface
  (:class:`~arena.run.folder.RecordStore`) and the output folder as one
  (:class:`~arena.run.folder.FolderStore`: journal, ``games.jsonl``,
  ``run.json``, ``results.json``); the folder's lock and key file.
* :mod:`arena.run.host`: the host's explicit steps on this machine (launcher
  checks, CPU priority, fitting jobs and memory, control groups, clean-up of
  what a killed run left) and the seat layer's names a host needs.
* :mod:`arena.run.options`: the bots' bounds and launch options
  (:class:`~arena.run.options.Limits`, :class:`~arena.run.options.LaunchOptions`),
  named without loading the launcher (for the defaults of ``--help``).
* :mod:`arena.run.errors`: :class:`RunError`, one line with its kind.

Nothing in this package prints, parses arguments, sets the umask or moves a
process between control groups unasked. The submodules are imported on
demand (this one imports only the errors), so a command that needs no run
loads none of it.
"""

from arena.run.errors import ErrorKind, RunError

__all__ = ["ErrorKind", "RunError"]
