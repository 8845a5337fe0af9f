"""The bounds of a run's bots and how they are launched, for a host that
needs their defaults without the launcher: :class:`Limits` (memory, CPU
time, processes, open files, stderr) and :class:`LaunchOptions` (seal,
users, core tokens), re-exported from the sandbox so that the command line
imports no :mod:`arena.sandbox` module itself (:mod:`arena.run.host` names
them too). Importing this module loads neither Trio nor the launcher, so
``hearts-arena run --help`` can show the defaults cheaply.
"""

from arena.sandbox.isolation import Limits
from arena.sandbox.options import LaunchOptions

__all__ = ["LaunchOptions", "Limits"]
