"""The command line's exit codes and its one-line error (a leaf: imports nothing of the arena).

Exit codes (also in the README):

* 0: done.
* 1: an unexpected error inside the arena (a bug: please report it).
* 2: usage: a bad flag or value, a missing or unusable bot, fewer than four
  entrants, duplicate names.
* 3: the output folder: it already holds a tournament (use ``--overwrite``
  or ``--resume``), or ``--resume`` found different settings.
* 4: the environment: a requested facility is not available here.
* 5: a verdict failed: a ``check`` failed, a ``run --fail-if`` condition
  held, or ``replay`` found the bot answering otherwise than recorded.
* 130: interrupted (Ctrl-C, SIGTERM or SIGHUP); finished games are kept and partial
  standings written.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_OUTPUT = 3
EXIT_ENVIRONMENT = 4
EXIT_FAILED = 5
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A one-line error for the user, with its exit code (one of the ``EXIT_`` codes)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code
