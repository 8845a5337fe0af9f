"""One game of four seats (north, east, south, west) for the in-memory referee
tests: its deal, bot seeds and table key drawn from a test's own key."""

from __future__ import annotations

from arena.core.keys import MasterKey
from arena.game.referee import GameSpec


def one_game(key: MasterKey, name: str, hands: int = 1) -> GameSpec:
    """Game ``<name>-1`` of deal ``<name>:1``, ``hands`` hands (no target score)."""
    game_id, deal_key = f"{name}-1", f"{name}:1"
    return GameSpec(
        game_index=0,
        game_id=game_id,
        round=1,
        table=0,
        rotation=0,
        seats=("north", "east", "south", "west"),
        deal_key=deal_key,
        bot_seeds=key.bot_seeds(game_id),
        target_score=None,
        hands=hands,
        table_key=key.table_key(deal_key),
    )
