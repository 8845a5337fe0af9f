"""The bot authors' kit under its first name: ``from arena import bot`` keeps
working. New code imports :mod:`arena.botkit`."""

from arena.botkit import *  # noqa: F403
from arena.botkit import __all__  # noqa: F401
