"""The text rules of a class's settings (issue 30), read by
:mod:`arena.server.folder` when it checks ``competition.toml`` and by the
modules that use them: the deadline (:func:`parse_deadline`) and the
gauntlet's pass thresholds (:func:`parse_threshold`). No other server module
is imported here (the folder imports it).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

_RULE: Final = re.compile(
    r"^\s*(?:duplicate score against (?P<bot>sample:[a-z_]+)|gauntlet score)"
    r"\s+at (?P<op>most|least)\s+(?P<value>[-+]?\d+(?:\.\d+)?)\s*$"
)


class DeadlineError(ValueError):
    """A deadline that is not ISO 8601 with an offset, or a pin refused (one line)."""


def parse_deadline(text: str) -> dt.datetime | None:
    """The deadline of ``text`` (ISO 8601 with a UTC offset, such as
    ``2026-12-15T17:00:00+01:00`` or ``...Z``), aware; ``None`` for ``""``.

    Raises:
        DeadlineError: not ISO 8601, or no offset (a time without one means
            a different moment on every machine).
    """
    if not text.strip():
        return None
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise DeadlineError(f"{text!r} is not an ISO 8601 date and time") from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise DeadlineError(f"{text!r} has no UTC offset (add +00:00, Z or the local offset)")
    return when


class ThresholdError(ValueError):
    """A threshold that cannot be read (one line)."""


@dataclass(frozen=True, slots=True)
class Threshold:
    """A pass rule: the duplicate score against ``bot`` (``None``: the
    gauntlet score) at ``most`` (``True``) or at least ``value``; ``text`` as written."""

    bot: str | None
    most: bool
    value: float
    text: str

    def holds(self, score: float) -> bool:
        """Whether ``score`` passes."""
        return score <= self.value if self.most else score >= self.value


def parse_threshold(text: str, bots: Sequence[str]) -> Threshold:
    """A threshold from its text (module docstring).

    Raises:
        ThresholdError: not of the forms given, or a bot not among ``bots``.
    """
    m = _RULE.match(text)
    if m is None:
        raise ThresholdError(
            f"{text!r}: write 'duplicate score against sample:NAME at most N' "
            "(or 'at least N'), or 'gauntlet score at most N'"
        )
    bot = m.group("bot")
    if bot is not None and bot not in bots:
        raise ThresholdError(f"{text!r}: {bot} is not a reference bot ({', '.join(bots)})")
    return Threshold(bot, m.group("op") == "most", float(m.group("value")), text)
