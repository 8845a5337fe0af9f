"""The one-line errors of a tournament run (a leaf: imports nothing of the arena)."""

from __future__ import annotations

from typing import Literal

#: What a :class:`RunError` is about: the request (``"usage"``: a bad value,
#: unusable entrants), the output folder (``"output"``: in use, unwritable,
#: holding another tournament) or the machine (``"environment"``: a facility
#: missing here). The command line maps them to its exit codes 2, 3 and 4.
ErrorKind = Literal["usage", "output", "environment"]


class RunError(Exception):
    """A one-line error for the user, with its :data:`ErrorKind`."""

    def __init__(self, message: str, kind: ErrorKind = "usage") -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
