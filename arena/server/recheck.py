"""Every game record re-checked on the server before it is stored (issue 29,
"Every result re-checked on the server"), wherever the table was played.

:func:`check_record` compares one record with the game the runner asked for
(its :class:`~arena.protocol.records.GameSpec`, derived from the key on the
server, which a worker never holds):

* its game id, seats, deal key, rotation and bot seeds are the spec's;
* every hand's dealt cards are the table key's deal (R2), every hand replays
  under the rules (passes R3, plays R4-R8, tricks R9-R10, points and the moon
  R10-R12) and the running scores add up
  (:func:`arena.tools.verify.check_hand`);
* the game ends where R13 says, with the totals' ranks
  (:func:`arena.tools.verify.check_game_end`), and its length is the spec's.

A refused record voids its table (never charged to a bot) and flags the
worker that played it. This catches a broken or mismatched worker, not a
lying one: a worker could still claim that a bot timed out and play the
default move for it, which replays under the rules. Workers must be the
organiser's own machines (docs/competition-server-dask.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.protocol.records import GameRecordJSON, GameSpec
from arena.tools.verify import check_game_play


def check_record(
    record: GameRecordJSON, specs: Sequence[GameSpec], max_tiebreak_hands: int
) -> str | None:
    """Re-check one game record of a table against the table's ``specs`` (its
    four games, from the server's key); ``max_tiebreak_hands``: the referee's
    tie-break cap (R13).

    Returns:
        The first problem (one line naming the game and, for a hand, its
        number), or ``None`` when the record is the game asked for and
        replays under the rules.
    """
    rec: Any = record
    try:
        rotation = int(rec["rotation"])
        game_id = rec["game_id"]
    except (KeyError, TypeError, ValueError):
        return "a record without a rotation or game id"
    spec = next((s for s in specs if s.rotation == rotation), None)
    if spec is None:
        return f"game {game_id!r}: rotation {rotation} is not one of the table's"
    name = spec.game_id
    try:
        if game_id != spec.game_id:
            return f"game {name}: the record's game id is {str(game_id)[:40]!r}"
        if list(rec["seats"]) != list(spec.seats):
            return f"game {name}: seats are not the table's"
        if rec["deal_key"] != spec.deal_key:
            return f"game {name}: deal key is not the table's"
        if list(rec.get("bot_seeds", [])) != list(spec.bot_seeds):
            return f"game {name}: bot seeds are not the key's"
        if rec.get("target_score") != spec.target_score or rec.get("hands_limit") != spec.hands:
            return f"game {name}: its length is not the table's"
        problem = check_game_play(record, spec.table_key, max_tiebreak_hands, name)
        if problem is not None:
            return problem
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return f"game {name}: a malformed record ({type(exc).__name__}: {str(exc)[:80]})"
    return None


def check_table(
    records: Sequence[GameRecordJSON], specs: Sequence[GameSpec], max_tiebreak_hands: int
) -> str | None:
    """:func:`check_record` for each of a table's records, and one record per
    game of the table; the first problem, or ``None``."""
    rotations = sorted(int(r.get("rotation", -1)) for r in records)
    if rotations != sorted(s.rotation for s in specs):
        return f"the table's records are rotations {rotations}, not one per game"
    for rec in records:
        problem = check_record(rec, specs, max_tiebreak_hands)
        if problem is not None:
            return problem
    return None
