"""arena.botkit: notifications the kit cannot read do not stop a bot (a referee
of another version may omit a field); requests still get their answers."""

from __future__ import annotations

import io
import json

import pytest

from arena import botkit


class Hooked(botkit.Bot):
    def __init__(self) -> None:
        super().__init__()
        self.tricks: list[int] = []

    def on_trick(self, hand_number: int, trick_number: int, trick: botkit.Trick) -> None:
        if trick_number == 2:
            raise RuntimeError("the bot's own hook failed")
        self.tricks.append(trick_number)


def _run(bot: botkit.Bot, messages: list[dict[str, object]]) -> tuple[list[dict[str, object]], str]:
    stdin = io.StringIO("".join(json.dumps(m) + "\n" for m in messages))
    stdout = io.StringIO()
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        botkit.run(bot, stdin=stdin, stdout=stdout)
    return [json.loads(line) for line in stdout.getvalue().splitlines()], err.getvalue()


TRICK = {"type": "trick", "hand_number": 1, "leader": 0, "cards": [], "winner": 0, "points": 0}


def test_missing_field_and_raising_hook_are_logged_and_the_bot_answers() -> None:
    bot = Hooked()
    replies, err = _run(
        bot,
        [
            {"type": "deal", "hand_number": 1},  # no hand, scores, pass_direction
            {**TRICK, "trick_number": 1},
            {**TRICK, "trick_number": 2},  # the hook raises
            {**TRICK, "trick_number": 3},
            {"type": "hello", "id": 7},
        ],
    )
    assert replies == [{"type": "hello", "id": 7, "name": "kit-bot"}]
    assert bot.tricks == [1, 3]
    assert "'deal' notification not handled" in err and "KeyError" in err
    assert "the bot's own hook failed" in err


def test_without_fallback_the_error_propagates() -> None:
    with pytest.raises(KeyError):
        Hooked().handle({"type": "deal", "hand_number": 1}, fallback=False)
