"""Checks of what the live view sends, against the run's game records (issue 17).

Used by ``test_live_browser.py`` on a real run's event stream and by
``test_live.py`` on made-up leaks (so that the checks are known to fail).
"""

from __future__ import annotations

import re
from typing import Any

CARD = re.compile(r"^(10|[2-9TJQKA])[SHDC]$")


def cards_in(value: Any, path: str = "") -> list[str]:
    """Paths of every card-like string in ``value``."""
    if isinstance(value, str):
        return [path] if CARD.match(value) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in cards_in(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in cards_in(v, f"{path}/{i}")]
    return []


def check_tables(messages: list[tuple[float, str, Any]], records: list[dict[str, Any]]) -> int:
    """Every card of every table state is one already played to its trick,
    at its seat, in its order (from the game record), and no other part of
    the stream holds a card; returns the cards checked.

    Raises:
        AssertionError: a card where none may be.
    """
    by_id = {r["game_id"]: r for r in records}
    checked = 0
    for _, event, data in messages:
        if event != "tables":
            assert cards_in(data) == [], (event, cards_in(data))
            continue
        for t in data["tables"]:
            paths = cards_in(t)
            assert all(re.fullmatch(r"/trick/\d/1", p) for p in paths), paths
            if not t["trick"]:
                continue
            rec = by_id[t["game_id"]]
            hand = rec["hands"][t["hand"] - 1]
            done = sum(t["tricks"])
            number = done - 1 if t["trick_winner"] is not None else done
            trick = hand["tricks"][number]
            expected = [[(trick["leader"] + i) % 4, c] for i, c in enumerate(trick["cards"])]
            assert t["trick"] == expected[: len(t["trick"])], (t, trick)
            checked += len(t["trick"])
    return checked


def check_hands(
    answers: list[tuple[float, int, int]], records: list[dict[str, Any]], seatings: int = 4
) -> int:
    """Each ``(time, game_index, status)`` answer of ``/api/game``: a game's
    hands were given (200) only after every game of its deal had ended (its
    ``started_at + duration_s``); returns how many were given.

    Raises:
        AssertionError: hands given while a game of their deal was still to end.
    """
    by_index = {r["game_index"]: r for r in records}
    ends = {r["game_id"]: r["started_at"] + r["duration_s"] for r in records}
    deal_games: dict[str, list[str]] = {}
    for r in records:
        deal_games.setdefault(r["deal_key"], []).append(r["game_id"])
    given = 0
    for when, index, status in answers:
        if status != 200:
            assert status == 404
            continue
        games = deal_games[by_index[index]["deal_key"]]
        assert len(games) == seatings
        assert all(ends[g] <= when for g in games), (index, when)
        given += 1
    return given
