"""The referee's settings (:class:`RefereeSettings`: time limits, strikes,
pace, transcripts) and their defaults.

A module of its own, importing only the rules' constants, so that the
command line can show these defaults in ``--help`` without loading the
referee and Trio (:mod:`arena.game.referee` names them too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from arena.core.rules import MAX_TIEBREAK_HANDS

#: Consecutive timeouts after which a seat is played by the default moves for
#: the rest of the game (0 turns strikes off).
DEFAULT_STRIKES: Final = 3
#: A decision's wall-clock cap in multiples of its time limit, for a bot kept
#: from its core by other load (:attr:`RefereeSettings.wall_cap`).
DEFAULT_WALL_CAP: Final = 2.0
#: Under a pace, a decision's wall-clock cap ends this many seconds before
#: its tick, so that even a timeout is delivered on the first tick (a request
#: may be sent up to :data:`arena.seats.wire.SEND_SLACK` after its tick).
PACE_MARGIN: Final = 0.05


@dataclass(frozen=True, slots=True)
class RefereeSettings:
    """Per-tournament settings of the referee. Times are in seconds.

    Attributes:
        time_limit: time per decision (``pass`` and ``play``), default 1.0 s.
        startup_time: time for the ``hello`` handshake, default 10 s.
        strikes: consecutive timeouts before a seat is struck out (0: never).
        grace: seconds a process gets after ``bye`` (and after SIGTERM).
        max_tiebreak_hands: cap on tie-break hands (R13).
        transcripts: keep each seat's message transcript in the record
            (``games.jsonl`` field ``transcripts``, see :class:`GameRecord`).
        transcript_cap: most transcript entries kept per seat and game: the
            first ``transcript_cap`` are kept and one ``{"t", "truncated": n}``
            entry says how many were dropped. A hand is about 44 entries
            (about 23 KB of JSON per seat), so the default 1000 keeps a game
            of 22 hands, more than a game to 100 usually lasts.
        pace: seconds (0: off, the default). Each decision's result (the
            card, the trick, the next request to every seat; after the pass,
            the passed cards) is delivered no earlier than ``pace`` after the
            referee asked for it, on the ticks ``asked + k * pace``; a
            request waiting for a core is sent (its bot thawed) on a tick
            too. So the gaps a bot sees between its reply and its next
            request do not depend on how long the others took, unless one
            took longer than the pace (``--pace``; docs/security.md,
            "Timing").
        wall_cap: with CPU accounting, ``time_limit`` is counted in the bot's
            CPU time while it is runnable: a bot the machine's other load kept
            from its core gets the CPU time it is owed, up to ``wall_cap``
            times ``time_limit`` of wall time (default
            :data:`DEFAULT_WALL_CAP`; 1: plain wall time). Never less than
            ``time_limit`` of wall time (:func:`arena.seats.wire.cpu_deadline`).
    """

    time_limit: float = 1.0
    startup_time: float = 10.0
    strikes: int = DEFAULT_STRIKES
    grace: float = 0.5
    max_tiebreak_hands: int = MAX_TIEBREAK_HANDS
    transcripts: bool = False
    transcript_cap: int = 1000
    pace: float = 0.0
    wall_cap: float = DEFAULT_WALL_CAP

    def decision_wall_cap(self) -> float | None:
        """Seconds of wall time a decision may take at most while its bot
        has CPU time of ``time_limit`` left (the ``wall_cap`` factor times
        ``time_limit``; under a pace at most the pace less
        :data:`PACE_MARGIN`, never below ``time_limit``); ``None`` when the
        factor is 1 or less (plain wall-clock limits)."""
        if self.wall_cap <= 1:
            return None
        cap = self.time_limit * self.wall_cap
        if self.pace > 0:
            cap = min(cap, self.pace - PACE_MARGIN)
        return cap if cap > self.time_limit else None
