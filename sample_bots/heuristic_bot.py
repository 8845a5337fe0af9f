#!/usr/bin/env python3
"""heuristic_bot: a rule-of-thumb Hearts player with no memory.

Every ``play`` request carries the whole visible state of the hand, so this
bot recomputes everything it needs from that one message and keeps nothing
between requests:
  ``tricks`` + ``trick``  which cards are gone, which are still out, and
                          which seats have shown a void in a suit;
  ``hand_points``         who has taken points (moon watch);
  ``passed``              where the queen is, if we passed her.
(``received`` needs no handling: those cards are simply in ``hand`` now.)

Strategy in short (each rule is explained where it is coded):
  pass    get rid of the ace and king of spades unless enough low spades
          guard them, of the queen when short of spades, of high hearts,
          and of short club/diamond suits (a void lets us discard later);
          never the two of clubs or low spades.
  lead    the card least likely to win the trick: low cards in suits where
          other players still hold higher ones; low spades to smoke out the
          queen when we hold none of Q/K/A of spades; no spades at all when
          we hold the queen with few guards.
  follow  duck: the highest card that still loses to the winning card.
          The queen goes under a played king or ace. A trick that is ours
          anyway (we play last, or every card we hold beats it) is taken
          with our highest card, so that card cannot win a costlier trick
          later; but if points are already on it, or the queen may still
          fall on it, we play our lowest and hope to be overtaken.
  discard the queen first, then the ace/king of spades while the queen is
          out, then high hearts, then our highest card.
  moon    if one other seat has taken every point so far (and enough of
          them to be a threat), take a cheap heart trick from it, and stop
          feeding it hearts.

Only the Python standard library is used. See random_bot.py for the
protocol basics; the decision code is plain functions of the request, so a
test can call ``choose_play(msg)`` directly.
"""

from __future__ import annotations

import json
import sys

NAME = "heuristic"
RANKS = "23456789TJQKA"  # a card is rank + suit, e.g. "TD" is the ten of diamonds
SUITS = "CDSH"  # the referee's sort order of suits
DECK = [r + s for s in SUITS for r in RANKS]
QUEEN = "QS"

# Tuning knobs (measured with tests/sample_bot_harness.py).
SPADE_GUARDS = 3  # low spades (2..J) needed to keep Q/K/A of spades safely
MOON_ALERT = 4  # points one other seat must hold, alone, before we defend
MOON_TRICK_SHARE = 0.6  # ... having won at least this share of the tricks so far
HEART_DUMP = 3  # rank bonus of a heart when choosing a discard


def rank(card: str) -> int:
    """0 for a two ... 12 for an ace."""
    return RANKS.index(card[0])


def suit(card: str) -> str:
    return card[1]


def points(card: str) -> int:
    """Penalty points of one card: 13 for the queen of spades, 1 for a heart."""
    if card == QUEEN:
        return 13
    return 1 if suit(card) == "H" else 0


def highest(cards: list[str]) -> str:
    return max(cards, key=rank)


def lowest(cards: list[str]) -> str:
    return min(cards, key=rank)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def choose_pass(msg: dict) -> list[str]:
    """Give each card a 'get rid of it' score and pass the three highest."""
    hand = msg["hand"]
    count = {s: sum(1 for c in hand if suit(c) == s) for s in SUITS}
    low_spades = sum(1 for c in hand if suit(c) == "S" and rank(c) < rank(QUEEN))
    guarded = low_spades >= SPADE_GUARDS

    def score(card: str) -> int:
        r, s = rank(card), suit(card)
        if card == "2C":
            return -100  # leading trick 1 with it is free: keep it
        if card in ("QS", "KS", "AS"):
            # Q/K/A of spades are the cards that end up taking the queen.
            # Hidden behind enough small spades they can be kept (and the
            # queen can be thrown under someone else's king or ace).
            return -10 if guarded else 100 + r
        if s == "S":
            return -50  # small spades guard the big ones
        if s == "H":
            return 3 * r  # AH 36 ... 2H 0: high hearts collect hearts
        # Clubs and diamonds: high cards are a burden, and a suit of one or
        # two cards is worth emptying: void in it, we can discard on it.
        bonus = 20 if count[s] <= 2 else (6 if count[s] == 3 else 0)
        return 2 * r + bonus

    return sorted(hand, key=score, reverse=True)[:3]


# ---------------------------------------------------------------------------
# Reading the table
# ---------------------------------------------------------------------------


class Table:
    """Everything the bot works out from one ``play`` request."""

    def __init__(self, msg: dict) -> None:
        self.me: int = msg["seat"]
        self.hand: list[str] = list(msg["hand"])
        self.legal: list[str] = list(msg["legal"])
        self.trick_number: int = msg.get("trick_number", 1)
        # The current trick as (seat, card) pairs, leader first.
        self.trick = [(p["seat"], p["card"]) for p in msg.get("trick", [])]
        self.hand_points: list[int] = list(msg.get("hand_points") or [0, 0, 0, 0])

        # Cards already played, and suits each seat has shown it is out of
        # (a seat that did not follow the led suit holds none of it).
        self.played: set[str] = set()
        self.void: dict[int, set[str]] = {s: set() for s in range(4)}
        self.tricks: list[dict] = list(msg.get("tricks", []))
        for done in self.tricks:
            self._see([(p["seat"], p["card"]) for p in done["cards"]])
        self._see(self.trick)
        # Cards somebody else still holds (we cannot tell who, except for the
        # ones we passed: see queen_with).
        self.unseen = [c for c in DECK if c not in self.played and c not in self.hand]

        self.led = suit(self.trick[0][1]) if self.trick else None
        # Who is winning the trick so far, with which card.
        self.win_seat, self.win_card = -1, ""
        if self.trick:
            self.win_seat, self.win_card = max(
                (p for p in self.trick if suit(p[1]) == self.led), key=lambda p: rank(p[1])
            )
        self.trick_points = sum(points(c) for _, c in self.trick)
        # Seats still to play to this trick after us.
        self.after_me = [(self.me + i) % 4 for i in range(1, 4 - len(self.trick))]

        # The queen of spades: played, ours, or out there (and if we passed
        # her, we know exactly who has her).
        self.queen_out = QUEEN in self.unseen
        passed = msg.get("passed") or {}
        self.queen_with = (
            passed.get("to") if self.queen_out and QUEEN in passed.get("cards", []) else None
        )
        self.moon_seat = self._moon_threat()

    def _see(self, cards: list[tuple[int, str]]) -> None:
        if not cards:
            return
        led = suit(cards[0][1])
        for seat, card in cards:
            self.played.add(card)
            if suit(card) != led:
                self.void[seat].add(led)

    def _moon_threat(self) -> int | None:
        """The other seat that has taken every point so far, if that looks like a moon."""
        takers = [s for s in range(4) if self.hand_points[s] > 0]
        if len(takers) != 1 or takers[0] == self.me:
            return None
        seat = takers[0]
        if self.hand_points[seat] < MOON_ALERT:
            return None
        # A shooter wins most tricks; a victim of a dumped queen usually does not.
        won = sum(1 for done in self.tricks if done["winner"] == seat)
        if won < MOON_TRICK_SHARE * len(self.tricks):
            return None
        # A moon needs every heart: if some heart is still to be played, it is on.
        if not any(suit(c) == "H" for c in self.unseen + self.hand):
            return None
        return seat

    def out_in_suit(self, s: str) -> list[str]:
        return [c for c in self.unseen if suit(c) == s]


# ---------------------------------------------------------------------------
# Choosing a card
# ---------------------------------------------------------------------------


def choose_play(msg: dict) -> str:
    legal = msg["legal"]
    if len(legal) == 1:
        return legal[0]
    table = Table(msg)
    if not table.trick:
        return choose_lead(table)
    if suit(legal[0]) == table.led:  # when we can follow, legal is that suit only (R6)
        return choose_follow(table)
    return choose_discard(table)


def lead_risk(t: Table, card: str) -> float:
    """How bad leading ``card`` looks: about the chance that it wins the trick."""
    s, r = suit(card), rank(card)
    out = t.out_in_suit(s)
    higher = [c for c in out if rank(c) > r]
    if not higher:
        # Nobody can beat it: we take the trick, and anyone void throws points.
        return 100.0 + r
    risk = 10.0 * (len(out) - len(higher)) / len(out)  # share of cards that can duck under it
    if s == "S":
        spades = [c for c in t.hand if suit(c) == "S"]
        if QUEEN in t.hand:
            if card == QUEEN:
                risk += 50  # leading her hands her to whoever must win
            elif len(spades) - 1 < SPADE_GUARDS:
                risk += 30  # every spade round strips a guard off the queen
        elif t.queen_out:
            if r > rank(QUEEN):
                risk += 50  # an ace or king led into the queen: never
            elif not any(c in spades for c in ("KS", "AS")):
                risk -= 10  # smoke out the queen: her holder may have to play her
    # A player already out of this suit can throw points on the trick.
    if any(s in t.void[seat] for seat in t.after_me):
        risk += 3
    return risk


def choose_lead(t: Table) -> str:
    legal = t.legal
    hearts = [c for c in legal if suit(c) == "H"]
    if t.moon_seat is not None and hearts:
        top = highest(hearts)
        if all(rank(c) < rank(top) for c in t.out_in_suit("H")):
            return top  # a heart trick we surely win: the moon is off
    # One candidate per suit, its lowest card; lead the least risky. Among
    # equally safe leads prefer a short suit: emptying it lets us discard
    # when it is led again.
    candidates = [
        lowest([c for c in legal if suit(c) == s])
        for s in SUITS
        if any(suit(c) == s for c in legal)
    ]

    def badness(card: str) -> tuple[float, int]:
        length = sum(1 for c in t.hand if suit(c) == suit(card))
        return (lead_risk(t, card) + 2 * length, rank(card))

    return min(candidates, key=badness)


def choose_follow(t: Table) -> str:
    legal = t.legal
    win = rank(t.win_card)
    below = [c for c in legal if rank(c) < win]
    above = [c for c in legal if rank(c) > win]
    last = not t.after_me
    not_queen = [c for c in legal if c != QUEEN] or legal

    # Moon defence: the threatening seat is winning a trick with points (or
    # a heart trick): take it from them while it is cheap (no queen in it).
    if (
        t.moon_seat is not None
        and t.win_seat == t.moon_seat
        and above
        and (t.trick_points > 0 or t.led == "H")
        and QUEEN not in [c for _, c in t.trick]
    ):
        return highest(above)

    # The queen under a king or ace someone else played: 13 points gone.
    if QUEEN in legal and win > rank(QUEEN):
        return QUEEN

    # Trick 1 cannot carry points (R7): unload the highest club.
    if t.trick_number == 1:
        return highest(not_queen)

    # Playing last to a trick with no points: winning costs nothing now,
    # so throw our highest card (never the queen: she would be our 13 points).
    if last and t.trick_points == 0:
        return highest(not_queen)

    if below:
        return highest(below)  # duck as high as possible

    # Every card we hold beats the trick.
    if last:
        return highest(not_queen)
    if t.trick_points > 0:
        # Points are on the trick already: play low, so that a later player
        # may still have to overtake us.
        return lowest(legal)
    if t.led == "S" and t.queen_out and t.queen_with not in [s for s, _ in t.trick]:
        # The queen may still come down on us: win with the smallest spade,
        # so a later king or ace can overtake (and its owner gets her).
        return lowest(legal)
    return highest(not_queen)  # take it with the card most likely to win later tricks


def discard_danger(t: Table, card: str) -> tuple[int, int, int]:
    """Higher = better to throw away now.

    A card is dangerous when it would win tricks. What decides that is not
    its rank as such but where it stands among the cards of its suit still
    out: the ones it beats, less the ones that beat it. Once the ten to the
    ace of a suit are gone, its nine is as dangerous as an ace.
    Ties: the shorter suit first (towards a void), then the higher rank.
    """
    out = t.out_in_suit(suit(card))
    beats = sum(1 for c in out if rank(c) < rank(card))
    bonus = HEART_DUMP if suit(card) == "H" else 0
    shortness = -sum(1 for c in t.hand if suit(c) == suit(card))  # empty short suits first
    return (beats - (len(out) - beats) + bonus, shortness, rank(card))


def choose_discard(t: Table) -> str:
    legal = t.legal
    # Moon defence: while the threatening seat is winning this trick, do not
    # hand it hearts or the queen.
    if t.moon_seat is not None:
        if t.win_seat == t.moon_seat:
            # Keep hearts (our best one may win a heart trick later) and the queen.
            clean = [c for c in legal if points(c) == 0]
            if clean:
                return max(clean, key=lambda c: discard_danger(t, c))
            hearts = [c for c in legal if suit(c) == "H"]
            if hearts:
                return lowest(hearts)
        elif t.moon_seat not in t.after_me:
            # Somebody else takes this trick for sure: any point we give
            # them ends the moon.
            if QUEEN in legal:
                return QUEEN
            hearts = [c for c in legal if suit(c) == "H"]
            if hearts:
                return highest(hearts)
    if QUEEN in legal:
        return QUEEN
    if t.queen_out:
        for card in ("AS", "KS"):
            if card in legal:
                return card  # the cards that would catch the queen later
    return max(legal, key=lambda c: discard_danger(t, c))


# ---------------------------------------------------------------------------
# The protocol loop (as in every sample bot; random_bot also re-seeds on game_start)
# ---------------------------------------------------------------------------


def handle(msg: dict) -> dict | None:
    """React to one message from the referee; return the reply, or None."""
    kind = msg.get("type")
    if "id" not in msg:
        return None  # game_start, deal, passed, trick, ...: nothing to remember
    if kind == "hello":
        return {
            "type": "hello",
            "id": msg["id"],
            "name": NAME,
            "author": "hearts-arena samples",
            "version": "1",
        }
    if kind == "pass":
        try:
            cards = choose_pass(msg)
        except Exception as exc:  # never die on a surprise: fall back to a valid move
            print(f"{NAME}: choose_pass failed: {exc!r}", file=sys.stderr)
            cards = msg["hand"][:3]
        return {"type": "pass", "id": msg["id"], "cards": cards}
    if kind == "play":
        try:
            card = choose_play(msg)
        except Exception as exc:
            print(f"{NAME}: choose_play failed: {exc!r}", file=sys.stderr)
            card = msg["legal"][0]
        return {"type": "play", "id": msg["id"], "card": card}
    return None  # a request type we do not know: stay silent


def main() -> None:
    while True:
        line = sys.stdin.readline()
        if not line:
            break  # end of input: the referee has gone
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # not JSON: ignore it
        if not isinstance(msg, dict):
            continue
        if msg.get("type") == "bye":
            break
        try:
            reply = handle(msg)
        except Exception as exc:  # e.g. a request missing "hand": log it, keep running
            print(f"{NAME}: cannot handle {msg.get('type')!r}: {exc!r}", file=sys.stderr)
            continue
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()  # pipes are buffered: without this the referee waits in vain


if __name__ == "__main__":
    main()
