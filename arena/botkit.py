"""A kit for writing a Hearts bot in Python: the protocol loop is done for you.

Write two functions and hand them to :func:`run`::

    from arena import botkit as bot

    def choose_pass(view: bot.PassView) -> list[str]:
        return bot.highest(view.hand, 3)          # the three highest cards

    def choose_play(view: bot.PlayView) -> str:
        return bot.lowest(view.legal)             # the lowest legal card

    bot.run(choose_pass=choose_pass, choose_play=choose_play, name="my-bot")

or subclass :class:`Bot` to keep state between messages (its ``on_*`` hooks
see every notification). :func:`run` reads the referee's messages from
standard input, answers the ``hello``, ``pass`` and ``play`` requests with
your choices and exits on ``bye`` or end of input (``protocol/README.md``
describes the messages; ``protocol/FIRST_BOT.md`` is a first-bot guide).

The views are typed, frozen dataclasses built from the request messages;
cards stay the protocol's two-character strings (``"QS"``, ``"TD"``), and the
helpers below sort, group and compare them. Only the standard library is
used, so a bot written with the kit runs wherever the arena runs it.

Safety net: if ``choose_pass``/``choose_play`` raises, or returns something
the rules do not allow (a card not in ``legal``, a pass that is not three
distinct cards of the hand), the kit logs the problem on standard error and
sends the referee's default move instead, so the bot never forfeits a move
or crashes. Pass ``fallback=False`` to :func:`run` to send your answer as it
is (and let exceptions end the bot): that is what ``hearts-arena check``
should see while you debug.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final, overload

__all__ = [
    "QUEEN_OF_SPADES",
    "RANKS",
    "SUITS",
    "TWO_OF_CLUBS",
    "Bot",
    "GameInfo",
    "PassView",
    "PlayView",
    "Played",
    "Trick",
    "by_suit",
    "default_pass",
    "highest",
    "is_heart",
    "lowest",
    "points",
    "rank",
    "run",
    "sort_cards",
    "suit",
    "trick_winner",
]

#: Ranks from low to high (``T`` is the ten).
RANKS: Final = "23456789TJQKA"
#: Suits in the protocol's sort order: clubs, diamonds, spades, hearts.
SUITS: Final = "CDSH"
QUEEN_OF_SPADES: Final = "QS"
TWO_OF_CLUBS: Final = "2C"


# -- cards ----------------------------------------------------------------------


def rank(card: str) -> int:
    """0 for a two ... 12 for an ace. Raises ``ValueError`` on a bad card."""
    return RANKS.index(card[0])


def suit(card: str) -> str:
    """The suit letter: ``"C"``, ``"D"``, ``"S"`` or ``"H"``."""
    return card[1]


def is_heart(card: str) -> bool:
    """True for a heart."""
    return card[1] == "H"


def points(card: str) -> int:
    """Penalty points of a card (R11): 1 per heart, 13 for the queen of spades."""
    return 13 if card == QUEEN_OF_SPADES else (1 if card[1] == "H" else 0)


def sort_cards(cards: Iterable[str]) -> list[str]:
    """Cards in the protocol's order: by suit (C, D, S, H), then rank."""
    return sorted(cards, key=lambda c: (SUITS.index(c[1]), RANKS.index(c[0])))


def by_suit(cards: Iterable[str]) -> dict[str, list[str]]:
    """The cards grouped by suit, each group low to high; every suit is a key."""
    out: dict[str, list[str]] = {s: [] for s in SUITS}
    for c in sort_cards(cards):
        out[c[1]].append(c)
    return out


@overload
def highest(cards: Iterable[str]) -> str: ...
@overload
def highest(cards: Iterable[str], n: int) -> list[str]: ...
def highest(cards: Iterable[str], n: int | None = None) -> str | list[str]:
    """The highest card by rank (``n=None``), or a list of the ``n`` highest.
    Equal ranks: hearts, then spades, diamonds, clubs first (as the referee's
    default pass). Raises ``ValueError`` when there are too few cards."""
    ordered = sorted(cards, key=lambda c: (RANKS.index(c[0]), SUITS.index(c[1])), reverse=True)
    if n is None:
        if not ordered:
            raise ValueError("no cards")
        return ordered[0]
    if len(ordered) < n:
        raise ValueError(f"{n} cards asked, {len(ordered)} given")
    return ordered[:n]


def lowest(cards: Iterable[str]) -> str:
    """The lowest card by rank; equal ranks: the first in protocol order
    (a club before a heart). Raises ``ValueError`` when there is none."""
    ordered = sort_cards(cards)
    if not ordered:
        raise ValueError("no cards")
    return min(ordered, key=rank)


def default_pass(hand: Sequence[str]) -> list[str]:
    """The referee's default pass: the three highest cards (see :func:`highest`)."""
    return highest(hand, 3)


# -- views ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Played:
    """A card on the table: who played it."""

    seat: int
    card: str


@dataclass(frozen=True, slots=True)
class Trick:
    """A finished trick: leader, the four cards in play order, winner, points."""

    leader: int
    cards: tuple[Played, ...]
    winner: int
    points: int


def trick_winner(played: Sequence[Played]) -> Played:
    """The card winning a (possibly unfinished) trick so far: the highest
    card of the led suit (R10). Raises ``ValueError`` on an empty trick."""
    if not played:
        raise ValueError("an empty trick has no winner")
    led = played[0].card[1]
    return max((p for p in played if p.card[1] == led), key=lambda p: rank(p.card))


@dataclass(frozen=True, slots=True)
class GameInfo:
    """The ``game_start`` notification: the game, your seat, the players by
    seat, how the game ends (``target_score`` or a fixed number of ``hands``)
    and ``seed`` for your own random choices."""

    game_id: str
    seat: int
    players: tuple[str, ...]
    target_score: int | None
    hands: int | None
    seed: int


@dataclass(frozen=True, slots=True)
class PassView:
    """A ``pass`` request: choose three cards of ``hand`` to give to seat ``to``.

    Attributes:
        game: the current game, or ``None`` if no ``game_start`` was seen.
        hand_number: 1-based.
        direction: ``"left"``, ``"right"`` or ``"across"`` (R3).
        to: the seat that receives them.
        hand: your 13 cards, sorted.
        scores: the four totals before this hand.
        time_ms: milliseconds you have to answer.
    """

    game: GameInfo | None
    hand_number: int
    direction: str
    to: int
    hand: tuple[str, ...]
    scores: tuple[int, ...]
    time_ms: int


@dataclass(frozen=True, slots=True)
class PlayView:
    """A ``play`` request: choose one card of ``legal``. Everything about the
    hand you may know is here (the request is self-contained).

    Attributes:
        game: the current game, or ``None`` if no ``game_start`` was seen.
        seat: your seat.
        hand_number, trick_number: 1-based (tricks 1..13).
        leader: the seat that led this trick.
        trick: the cards played to it so far (empty: you lead).
        tricks: this hand's finished tricks.
        hand: the cards you hold, sorted.
        legal: the cards you may play now (never empty), sorted.
        hearts_broken: a heart has been discarded on another suit (R8).
        passed: the three cards you passed, or ``None`` on a hold hand.
        passed_to / received_from: the seats of the pass, or ``None``.
        received: the three cards you received, or ``None``.
        hand_points: points each seat has taken so far this hand.
        scores: the four totals before this hand.
        time_ms: milliseconds you have to answer.
    """

    game: GameInfo | None
    seat: int
    hand_number: int
    trick_number: int
    leader: int
    trick: tuple[Played, ...]
    tricks: tuple[Trick, ...]
    hand: tuple[str, ...]
    legal: tuple[str, ...]
    hearts_broken: bool
    passed: tuple[str, ...] | None
    passed_to: int | None
    received: tuple[str, ...] | None
    received_from: int | None
    hand_points: tuple[int, ...]
    scores: tuple[int, ...]
    time_ms: int

    @property
    def leading(self) -> bool:
        """True when you lead this trick."""
        return not self.trick

    @property
    def led_suit(self) -> str | None:
        """The suit led in this trick, or ``None`` when you lead."""
        return self.trick[0].card[1] if self.trick else None

    @property
    def winning(self) -> Played | None:
        """The card winning this trick so far, or ``None`` when you lead."""
        return trick_winner(self.trick) if self.trick else None

    @property
    def last_to_play(self) -> bool:
        """True when three cards are already on the table."""
        return len(self.trick) == 3

    @property
    def points_on_table(self) -> int:
        """Penalty points of the cards played to this trick so far."""
        return sum(points(p.card) for p in self.trick)

    @property
    def played(self) -> tuple[str, ...]:
        """Every card played in this hand so far, finished tricks first."""
        return tuple(p.card for t in self.tricks for p in t.cards) + tuple(
            p.card for p in self.trick
        )


def _played(items: Iterable[dict[str, Any]]) -> tuple[Played, ...]:
    return tuple(Played(int(p["seat"]), str(p["card"])) for p in items)


def _play_view(msg: dict[str, Any], game: GameInfo | None) -> PlayView:
    passed = msg.get("passed")
    received = msg.get("received")
    return PlayView(
        game=game,
        seat=msg["seat"],
        hand_number=msg["hand_number"],
        trick_number=msg["trick_number"],
        leader=msg["leader"],
        trick=_played(msg["trick"]),
        tricks=tuple(
            Trick(t["leader"], _played(t["cards"]), t["winner"], t["points"]) for t in msg["tricks"]
        ),
        hand=tuple(msg["hand"]),
        legal=tuple(msg["legal"]),
        hearts_broken=bool(msg["hearts_broken"]),
        passed=tuple(passed["cards"]) if passed else None,
        passed_to=passed["to"] if passed else None,
        received=tuple(received["cards"]) if received else None,
        received_from=received["from"] if received else None,
        hand_points=tuple(msg["hand_points"]),
        scores=tuple(msg["scores"]),
        time_ms=msg["time_ms"],
    )


# -- the bot --------------------------------------------------------------------


class Bot:
    """Subclass and override :meth:`choose_pass` and :meth:`choose_play`
    (the defaults are the referee's default moves); the ``on_*`` hooks are
    called for the notifications and do nothing by default.

    Attributes:
        name, author, version: sent in the ``hello`` answer.
        game: the current :class:`GameInfo` (``None`` before ``game_start``).
    """

    name: str = "kit-bot"
    author: str | None = None
    version: str | None = None

    def __init__(self) -> None:
        self.game: GameInfo | None = None
        self._scores: tuple[int, ...] = (0, 0, 0, 0)

    def choose_pass(self, view: PassView) -> Sequence[str]:
        """Three distinct cards of ``view.hand`` to pass to ``view.to``."""
        return default_pass(view.hand)

    def choose_play(self, view: PlayView) -> str:
        """One card of ``view.legal``."""
        return view.legal[0]

    def on_game_start(self, game: GameInfo) -> None:
        """A new game begins (reset per-game state here)."""

    def on_deal(self, hand_number: int, hand: tuple[str, ...], direction: str) -> None:
        """Your 13 cards of a new hand, and where this hand's pass goes."""

    def on_passed(self, received: tuple[str, ...], from_seat: int) -> None:
        """The three cards passed to you, after all passes are final (R4)."""

    def on_trick(self, hand_number: int, trick_number: int, trick: Trick) -> None:
        """A trick was completed."""

    def on_hand_end(
        self, points: tuple[int, ...], scores: tuple[int, ...], moon: int | None
    ) -> None:
        """A hand ended: its points (after the moon rule) and the new totals."""

    def on_game_end(self, scores: tuple[int, ...], ranks: tuple[int, ...]) -> None:
        """The game ended: final totals and ranks (1 = winner)."""

    def on_forfeit(self, message: dict[str, Any]) -> None:
        """The referee played a default move for you (a timeout, a malformed or
        illegal answer); ``message`` is the ``forfeit`` notification."""

    # -- the loop's part ------------------------------------------------------

    def handle(self, msg: dict[str, Any], *, fallback: bool = True) -> dict[str, Any] | None:
        """React to one message from the referee; returns the answer to a
        request, ``None`` for a notification.

        With ``fallback`` (the default), a notification that cannot be read (a
        missing field) or whose hook raises is logged on stderr and ignored;
        without it the exception (``KeyError``, or the hook's) propagates."""
        kind = msg.get("type")
        if kind == "hello":
            reply: dict[str, Any] = {"name": self.name}
            if self.author:
                reply["author"] = self.author
            if self.version:
                reply["version"] = self.version
            return {"type": "hello", "id": msg["id"], **reply}
        if kind == "pass":
            return {"type": "pass", "id": msg["id"], "cards": self._pass(msg, fallback)}
        if kind == "play":
            return {"type": "play", "id": msg["id"], "card": self._play(msg, fallback)}
        if fallback:
            try:
                self._notification(msg)
            except Exception:
                # A notification lacking a field (a referee of another version),
                # or a hook of the bot's that raised: the bot plays on.
                _log(f"{kind!r} notification not handled, ignored:\n{traceback.format_exc()}")
        else:
            self._notification(msg)
        return None

    def _pass(self, msg: dict[str, Any], fallback: bool) -> list[str]:
        hand = list(msg["hand"])
        view = PassView(
            game=self.game,
            hand_number=msg["hand_number"],
            direction=msg["direction"],
            to=msg["to"],
            hand=tuple(hand),
            scores=self._scores,
            time_ms=msg["time_ms"],
        )
        if not fallback:
            return list(self.choose_pass(view))
        try:
            cards = list(self.choose_pass(view))
        except Exception:
            _log(f"choose_pass raised:\n{traceback.format_exc()}")
            return default_pass(hand)
        if len(cards) != 3 or len(set(cards)) != 3 or not set(cards) <= set(hand):
            _log(f"choose_pass returned {cards!r}: not three distinct cards of the hand")
            return default_pass(hand)
        return cards

    def _play(self, msg: dict[str, Any], fallback: bool) -> str:
        view = _play_view(msg, self.game)
        if not fallback:
            return self.choose_play(view)
        try:
            card = self.choose_play(view)
        except Exception:
            _log(f"choose_play raised:\n{traceback.format_exc()}")
            return view.legal[0]
        if card not in view.legal:
            _log(f"choose_play returned {card!r}, not legal (legal: {' '.join(view.legal)})")
            return view.legal[0]
        return card

    def _notification(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "game_start":
            self.game = GameInfo(
                msg["game_id"],
                msg["seat"],
                tuple(msg["players"]),
                msg.get("target_score"),
                msg.get("hands"),
                msg.get("seed", 0),
            )
            self._scores = (0, 0, 0, 0)
            self.on_game_start(self.game)
        elif kind == "deal":
            self._scores = tuple(msg["scores"])
            self.on_deal(msg["hand_number"], tuple(msg["hand"]), msg["pass_direction"])
        elif kind == "passed":
            self.on_passed(tuple(msg["received"]), msg["from"])
        elif kind == "trick":
            trick = Trick(msg["leader"], _played(msg["cards"]), msg["winner"], msg["points"])
            self.on_trick(msg["hand_number"], msg["trick_number"], trick)
        elif kind == "hand_end":
            self.on_hand_end(tuple(msg["points"]), tuple(msg["scores"]), msg.get("moon"))
        elif kind == "game_end":
            self.on_game_end(tuple(msg["scores"]), tuple(msg["ranks"]))
        elif kind == "forfeit":
            self.on_forfeit(msg)


@dataclass
class _FunctionBot(Bot):
    pass_fn: Callable[[PassView], Sequence[str]] | None = None
    play_fn: Callable[[PlayView], str] | None = None
    bot_name: str = "kit-bot"
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Bot.__init__(self)
        self.name = self.bot_name
        self.author = self.extra.get("author")
        self.version = self.extra.get("version")

    def choose_pass(self, view: PassView) -> Sequence[str]:
        return self.pass_fn(view) if self.pass_fn else default_pass(view.hand)

    def choose_play(self, view: PlayView) -> str:
        return self.play_fn(view) if self.play_fn else view.legal[0]


def _log(text: str) -> None:
    print(f"kit: {text}", file=sys.stderr, flush=True)


def run(
    bot: Bot | None = None,
    *,
    choose_pass: Callable[[PassView], Sequence[str]] | None = None,
    choose_play: Callable[[PlayView], str] | None = None,
    name: str = "kit-bot",
    author: str | None = None,
    version: str | None = None,
    fallback: bool = True,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> None:
    """Play: read messages, answer requests, return on ``bye`` or end of input.

    Args:
        bot: a :class:`Bot` (subclass) instance; or give the functions:
        choose_pass: ``(PassView) -> three cards``; default: the three highest.
        choose_play: ``(PlayView) -> card``; default: the first legal card.
        name, author, version: for the ``hello`` answer (with the functions).
        fallback: replace a failing or illegal choice by the default move
            (logged on stderr); ``False`` sends it as it is.
        stdin, stdout: the streams (default: the process's).

    Lines that are not JSON objects are logged on stderr and skipped.
    """
    if bot is None:
        extra = {k: v for k, v in (("author", author), ("version", version)) if v}
        bot = _FunctionBot(choose_pass, choose_play, name, extra)
    source = stdin or sys.stdin
    sink = stdout or sys.stdout
    while True:
        line = source.readline()
        if not line:
            return  # the referee is gone
        try:
            msg = json.loads(line)
        except ValueError:
            _log(f"not JSON, skipped: {line[:80]!r}")
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("type") == "bye":
            return
        reply = bot.handle(msg, fallback=fallback)
        if reply is not None:
            sink.write(json.dumps(reply) + "\n")
            sink.flush()  # a pipe is buffered: without this the referee waits in vain
