"""A tiny protocol loop shared by the test bots (the bots' folder is their working directory).

``serve(...)`` answers hello, pass and play with overridable hooks, so each
misbehaving bot in this folder is a few lines that change one thing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]


def reply(msg: Message, **fields: Any) -> None:
    """Write the answer to request ``msg``."""
    sys.stdout.write(json.dumps({"type": msg["type"], "id": msg["id"], **fields}) + "\n")
    sys.stdout.flush()


def default_answer(msg: Message, name: str) -> dict[str, Any]:
    """A well-behaved answer: first legal card, first three cards of the hand."""
    kind = msg["type"]
    if kind == "hello":
        return {"name": name}
    if kind == "pass":
        return {"cards": msg["hand"][:3]}
    return {"card": msg["legal"][0]}


def serve(
    name: str = "test-bot",
    on_request: Callable[[Message, dict[str, int]], bool] | None = None,
    on_message: Callable[[Message], None] | None = None,
) -> None:
    """Run the protocol loop.

    ``on_request(msg, counts)`` is called before each request is answered,
    with per-game counts of requests by type (``counts["play"]`` is 1 on the
    first play request of a game); if it returns True the default answer is
    not sent (the hook answered, or chose not to).
    """
    counts: dict[str, int] = {}
    for line in sys.stdin:
        msg = json.loads(line)
        if on_message is not None:
            on_message(msg)
        kind = msg["type"]
        if kind == "game_start":
            counts = {}
        if kind == "bye":
            return
        if "id" not in msg:
            continue
        counts[kind] = counts.get(kind, 0) + 1
        if on_request is not None and on_request(msg, counts):
            continue
        reply(msg, **default_answer(msg, name))
