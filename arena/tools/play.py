"""``hearts-arena play``: one game in the terminal, trick by trick.

Four bots play while the game is printed (seats not given are taken by
sample bots) (every hand dealt, the passes, each
trick, the points); with ``--human`` three bots play and you hold the fourth
seat, choosing cards at a prompt that shows the trick so far, your hand and
the cards you may play (R5-R9), and asks again after a bad answer. Only what
your seat may see is shown then. The game is played by the real referee, so
the bots see exactly what they would see in a tournament.

Input at the prompt: cards as in the protocol (``QS``, ``TD``) in any case,
``10`` for ``T``; for a pass three cards separated by spaces or commas;
``?`` repeats the position; ``quit`` (or end of input) stops the game.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import IO, Any

import trio

from arena.core.cards import SUITS
from arena.core.keys import MasterKey
from arena.game.referee import GameSpec, Referee, RefereeSettings, SeatSetup
from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant, EntrantError, parse_entrants, sample_entrants
from arena.seats.process import start_bot
from arena.seats.seat import Reply, Request, Seat
from arena.seats.stand_ins import InProcessSeat, Message, SeatProxy

HUMAN = "you"
#: The game id the bots are given: the same for every game, so that nothing a
#: bot is given names the seed its deals come from.
GAME_ID = "play"


class Quit(Exception):
    """The player asked to stop (``quit`` or end of input)."""


class PlayError(ValueError):
    """Bots that cannot fill the table (one line for the user)."""


def show_cards(cards: Sequence[str]) -> str:
    """Cards grouped by suit: ``"5C 8C | 3D | - | 2H AH"`` (``-`` for a void)."""
    groups = [" ".join(c for c in cards if c[1] == s) or "-" for s in SUITS]
    return " | ".join(groups)


def parse_cards(text: str) -> list[str]:
    """Card names typed by a person: any case, ``10`` for ``T``, separated by
    spaces or commas. Unknown words are returned as typed (upper case)."""
    out = []
    for word in re.split(r"[\s,]+", text.strip()):
        if not word:
            continue
        word = word.upper().replace("10", "T")
        out.append(word)
    return out


class Narrator:
    """Prints the game as the referee sends its messages.

    Args:
        names: the players by seat.
        human: the human's seat (only its view is shown), or ``None``
            (everything is shown: every hand and every pass).
        out: where to print.
        delay: seconds to pause after each trick.
    """

    def __init__(
        self, names: Sequence[str], human: int | None, out: IO[str], delay: float = 0.0
    ) -> None:
        self.names = list(names)
        self.human = human
        self.out = out
        self.delay = delay
        self.pause_due = False

    def who(self, seat: int) -> str:
        """``"seat 2 (low)"``."""
        return f"seat {seat} ({self.names[seat]})"

    def say(self, text: str = "") -> None:
        """Print a line now."""
        print(text, file=self.out, flush=True)

    def message(self, seat: int, msg: Message) -> None:
        """React to message ``msg`` sent to ``seat``."""
        kind = msg.get("type")
        everything = self.human is None
        mine = seat == self.human or (everything and seat == 0)
        if kind == "game_start" and mine:
            players = ", ".join(f"{s}: {n}" for s, n in enumerate(self.names))
            length = (
                f"{msg['hands']} hand{'s' if msg['hands'] != 1 else ''}"
                if msg["hands"]
                else f"to {msg['target_score']} points"
            )
            self.say(f"game {msg['game_id']}, {length}; players {players}")
        elif kind == "deal" and (seat == self.human or everything):
            if seat == (self.human if self.human is not None else 0):
                direction = msg["pass_direction"]
                scores = " ".join(map(str, msg["scores"]))
                self.say()
                self.say(f"== hand {msg['hand_number']}: pass {direction}; totals {scores}")
            label = "your hand" if seat == self.human else self.who(seat)
            self.say(f"  {label}: {show_cards(msg['hand'])}")
        elif kind == "passed" and (seat == self.human or everything):
            label = "you receive" if seat == self.human else f"{self.who(seat)} receives"
            self.say(f"  {label} {' '.join(msg['received'])} from {self.who(msg['from'])}")
        elif kind == "trick" and mine:
            cards = "  ".join(f"{p['seat']}:{p['card']}" for p in msg["cards"])
            pts = msg["points"]
            self.say(
                f"trick {msg['trick_number']:>2}: {cards}  -> {self.who(msg['winner'])}"
                + (f" takes {pts} point{'s' if pts != 1 else ''}" if pts else "")
            )
            self.pause_due = self.delay > 0
        elif kind == "hand_end" and mine:
            moon = f"; {self.who(msg['moon'])} shot the moon!" if msg["moon"] is not None else ""
            self.say(
                f"hand {msg['hand_number']} points: {' '.join(map(str, msg['points']))}{moon}; "
                f"totals: {' '.join(map(str, msg['scores']))}"
            )
        elif kind == "game_end" and mine:
            winners = [self.who(s) for s, r in enumerate(msg["ranks"]) if r == 1]
            self.say()
            self.say(
                f"game over: totals {' '.join(map(str, msg['scores']))}; "
                f"ranks {' '.join(map(str, msg['ranks']))}; won by {', '.join(winners)}"
            )
        elif kind == "forfeit" and mine:
            self.say(f"  ({self.who(seat)}: {msg['reason']}: {msg['detail']})")

    async def pause(self) -> None:
        """Wait ``delay`` seconds if a trick was just shown."""
        if self.pause_due:
            self.pause_due = False
            await trio.sleep(self.delay)


class WatchedSeat(SeatProxy):
    """A proxy that shows a seat's messages to the :class:`Narrator`; all
    else is the wrapped seat's (a bot process)."""

    def __init__(self, inner: Seat, seat: int, narrator: Narrator) -> None:
        super().__init__(inner)
        self._seat = seat
        self._narrator = narrator

    def notify(self, message: Message, data: bytes | None = None) -> None:
        """Show, then forward."""
        self._narrator.message(self._seat, message)
        self.inner.notify(message, data)

    async def request(self, request: Request) -> Reply:
        """Pause after a trick if asked, then forward."""
        await self._narrator.pause()
        return await self.inner.request(request)


class HumanSeat(InProcessSeat):
    """A person choosing moves at a prompt.

    Args:
        seat: the seat played.
        narrator: shows the notifications.
        ask: ``(prompt) -> line``, blocking (default :func:`input`); raises
            ``EOFError`` at end of input.
    """

    def __init__(
        self, seat: int, narrator: Narrator, ask: Callable[[str], str] | None = None
    ) -> None:
        super().__init__(HUMAN)
        self.seat = seat
        self.narrator = narrator
        self.ask = ask or input

    def on_message(self, message: Message) -> None:
        if "id" not in message:
            self.narrator.message(self.seat, message)

    async def _line(self, prompt: str) -> str:
        await self.narrator.pause()
        try:
            # Abandoned on cancel: Ctrl-C (Trio cancels every task) ends the
            # game at once; the blocked read is left to the exiting process.
            line = await trio.to_thread.run_sync(self.ask, prompt, abandon_on_cancel=True)
        except EOFError:
            raise Quit from None
        if line.strip().lower() in ("q", "quit", "exit"):
            raise Quit
        return line

    async def answer(self, request: Message) -> Message:
        kind = request["type"]
        if kind == "hello":
            return {"name": HUMAN}
        say = self.narrator.say
        hand: list[str] = request["hand"]
        if kind == "pass":
            target = self.narrator.who(request["to"])
            say(f"  pass three cards {request['direction']} to {target}")
            while True:
                cards = parse_cards(await self._line("your pass (three cards, e.g. QS AH KH): "))
                if cards == ["?"]:
                    say(f"  your hand: {show_cards(hand)}")
                    continue
                problem = _pass_problem(cards, hand)
                if problem is None:
                    return {"cards": cards}
                say(f"  {problem}; try again")
        legal: list[str] = request["legal"]
        self._show_position(request)
        while True:
            words = parse_cards(await self._line(f"your card [{' '.join(legal)}]: "))
            if words == ["?"]:
                self._show_position(request)
                continue
            if len(words) != 1:
                say("  type one card, such as " + legal[0])
                continue
            card = words[0]
            if card in legal:
                return {"card": card}
            if card in hand:
                say(f"  {card} is not allowed now (R5-R9); you may play: {' '.join(legal)}")
            elif len(card) == 2 and card[0] in "23456789TJQKA" and card[1] in SUITS:
                say(f"  you do not hold {card}; you may play: {' '.join(legal)}")
            else:
                say(f"  {card!r} is not a card (rank 2-9 T J Q K A, then suit C D S H)")

    def _show_position(self, request: Message) -> None:
        say = self.narrator.say
        trick = "  ".join(f"{p['seat']}:{p['card']}" for p in request["trick"])
        broken = "hearts broken" if request["hearts_broken"] else "hearts not broken"
        say(
            f"trick {request['trick_number']:>2}: {trick or '(you lead)'}   [{broken}; "
            f"your points this hand: {request['hand_points'][self.seat]}]"
        )
        say(f"  your hand: {show_cards(request['hand'])}")


def _pass_problem(cards: list[str], hand: list[str]) -> str | None:
    if len(cards) != 3:
        return f"a pass is three cards, you gave {len(cards)}"
    if len(set(cards)) != 3:
        return "a pass is three different cards"
    missing = [c for c in cards if c not in hand]
    if missing:
        return f"you do not hold {' '.join(missing)}"
    return None


def seat_entrants(bots: Sequence[str], needed: int) -> list[Entrant]:
    """The bots given (as on the command line: files or ``NAME=COMMAND``),
    then sample bots (by name, skipping names taken) up to ``needed``.

    Raises:
        PlayError: a bad bot, more than ``needed``, or a bot named as the human.
    """
    try:
        entrants = parse_entrants(bots)
    except EntrantError as exc:
        raise PlayError(str(exc)) from None
    if len(entrants) > needed:
        raise PlayError(f"play: give at most {needed} bots, got {len(entrants)}")
    taken = {e.name for e in entrants}
    for sample in sample_entrants():
        if len(entrants) == needed:
            break
        if sample.name not in taken:
            entrants.append(sample)
    if any(e.name == HUMAN for e in entrants):
        raise PlayError(f"play: {HUMAN!r} is the human's name; name the bot otherwise")
    return entrants


async def play_game(
    entrants: Sequence[Entrant],
    launcher: Any,
    settings: RefereeSettings,
    *,
    seed: int,
    hands: int | None,
    target_score: int | None,
    human: int | None,
    out: IO[str],
    delay: float = 0.0,
    ask: Callable[[str], str] | None = None,
) -> GameRecordJSON:
    """Play one game and return its record (``games.jsonl`` form).

    Args:
        entrants: the bots in seat order (the human's seat left out).
        human: the human's seat, or ``None`` for four bots.
        ask: the human's prompt function (default :func:`input`).

    Raises:
        Quit: the human quit (the bots are closed first).
    """
    names = [e.name for e in entrants]
    if human is not None:
        names.insert(human, HUMAN)
    narrator = Narrator(names, human, out, delay)
    key = MasterKey.from_seed(f"play:{seed}")
    spec = GameSpec(
        game_index=0,
        # Never the seed: a bot given it would compute every hand (issue 11).
        game_id=GAME_ID,
        round=1,
        table=0,
        rotation=0,
        seats=(names[0], names[1], names[2], names[3]),
        deal_key=f"play:{seed}",
        bot_seeds=key.bot_seeds(GAME_ID),
        target_score=target_score,
        hands=hands,
        table_key=key.table_key(f"play:{seed}"),
    )
    async with trio.open_nursery() as nursery:
        bots: list[Any] = []
        try:
            setups: list[SeatSetup] = []
            queue = list(entrants)
            for seat in range(4):
                if seat == human:
                    seat_obj = HumanSeat(seat, narrator, ask)
                    setups.append(SeatSetup(HUMAN, seat_obj))
                    continue
                entrant = queue.pop(0)
                bot, fault = await start_bot(
                    launcher.spec(entrant), seat, settings.startup_time, nursery
                )
                if bot is not None:
                    bots.append(bot)
                if fault is not None:
                    narrator.say(f"{narrator.who(seat)} could not start: {fault.detail}")
                    setups.append(SeatSetup(entrant.name, None, fault))
                    continue
                assert bot is not None  # no fault: started
                watched = WatchedSeat(bot, seat, narrator)
                setups.append(SeatSetup(entrant.name, watched))
            record = await Referee(spec, setups, settings).play()
        finally:
            with trio.CancelScope(shield=True):
                for bot in bots:
                    await bot.close(settings.grace)
            nursery.cancel_scope.cancel()
    return record.to_json()
