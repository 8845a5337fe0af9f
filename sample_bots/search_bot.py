#!/usr/bin/env python3
"""search_bot: determinized Monte Carlo search with heuristic rollouts.

Unlike the other sample bots this one is not standard-library only: it
imports the arena's card masks (``arena.core.cards``, installed with the arena;
from a source checkout it finds the package two folders up) and the
heuristic bot beside it (``heuristic_bot.py``, loaded by path). It keeps no
memory between requests: every ``play`` request carries the whole visible
hand, and each decision is a function of that request and the ``seed`` of
``game_start``.

How a card is chosen (``choose_play``):

1. The heuristic bot's card is the default. If every legal card is
   interchangeable, or no points are left to take, it is played at once.
2. Read the request: the cards played, how many cards each seat holds, the
   suits each seat has shown it is out of (it did not follow the led suit,
   or it led a heart before hearts were broken, R9), and the three cards we
   passed (the receiver still holds those not yet played). Discards hint
   more: most players, the heuristic included, throw the queen of spades the
   first time they cannot follow, so a seat that threw another card likely
   has no queen (and, while she is out, no ace or king of spades).
3. Group the legal cards that are interchangeable (same suit, no card still
   out or on the table ranks between them; never the queen): one card per
   group is searched.
4. Sample a *world*: deal the unseen cards to the other seats at random,
   consistent with the above (hand sizes, voids, passed cards; the discard
   hints while they can be met).
5. In that world play each candidate card, then finish the hand with the
   heuristic bot's rules for all four seats (``playout``: the same choices
   as ``heuristic_bot.choose_play``, on card masks, about 3 microseconds per
   card), and note our points after the moon rule (R12): 0 for a moon we
   shoot, 26 for someone else's.
6. Repeat 4-5. All candidates see the same worlds, so their differences are
   measured sharply; every 4 worlds a candidate clearly worse than the best
   (by 0.25 points plus 2 standard errors) is dropped. The search stops when
   one candidate is left, or its budget of simulated card plays is spent
   (``BUDGET``, ``--budget``; at least 8 and at most 200 worlds), or half of
   the request's ``time_ms`` has passed (so it never times out).
7. Play the candidate with the fewest points on average, unless the
   default is within 0.25 points of it.

The random generator of each decision is seeded from the game's ``seed``,
the hand and the trick position: the same request in the same game gets the
same answer (``hearts-arena replay`` reproduces it) unless the time cap
stopped the search. At the default budget a decision takes about 25 ms of
CPU on average (up to about 120 ms early in a hand).

The pass (``choose_pass``) is searched the same way: the candidates are
every three of the six cards the heuristic bot most wants to pass (unguarded
high spades, high hearts, short minor suits); each sampled world deals the
other seats random hands, which pass as the heuristic would, and each
candidate is played out from trick 1. The heuristic's own pass is kept unless
another is better by 0.25 points. About 130 ms of CPU per pass.

Options (for ``NAME=COMMAND`` entrants, e.g.
``"deep=python sample_bots/search_bot.py --budget 80000"``): ``--budget N``
simulated card plays per play decision (default 30000; more is stronger and
slower), ``--pass-budget N`` for the pass (default 40000; 0 passes as the
heuristic bot does).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

try:
    import arena.core.cards  # noqa: F401
except ImportError:  # a source checkout: the package is two folders up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.core.cards import CARD_NAMES, QS_BIT, SUIT_MASKS, mask_of_names, names_of, parse_card

NAME = "search"

#: Simulated card plays per decision (the search's fixed size, see ``choose_play``).
BUDGET = 30000
#: Simulated card plays for the pass (0: the heuristic bot's pass), and how many of
#: the cards the heuristic most wants to pass are combined into candidates.
PASS_BUDGET = 40000
PASS_CANDIDATES = 6
#: Fewest and most sampled worlds per decision.
MIN_WORLDS = 8
MAX_WORLDS = 200
#: Candidates are compared every CHECK_EVERY worlds; one whose mean is worse than
#: the best's by more than PRUNE_MIN points plus PRUNE_Z standard errors is dropped.
CHECK_EVERY = 4
PRUNE_Z = 2.0
PRUNE_MIN = 0.25
#: The heuristic bot's card is kept unless another is better by more than this
#: many points per hand on average.
PRIOR_MARGIN = 0.25
#: Share of ``time_ms`` after which the search stops and answers.
TIME_SHARE = 0.5

QS = 36  # the queen of spades: suit 2 * 13 + rank 10
HIGH_SPADES = (1 << 37) | (1 << 38)  # king and ace of spades
HEART_MASK = SUIT_MASKS[3]
NON_HEARTS = ((1 << 52) - 1) & ~HEART_MASK
TRICK1_SAFE = NON_HEARTS & ~QS_BIT
POINTS = tuple(13 if c == QS else (1 if c >= 39 else 0) for c in range(52))
POINT_CARDS = HEART_MASK | QS_BIT


# ---------------------------------------------------------------------------
# The game seed (the only state kept between requests)
# ---------------------------------------------------------------------------

GAME_SEED: object = 0


def new_game(seed: object) -> None:
    global GAME_SEED
    GAME_SEED = seed if isinstance(seed, (int, str)) else 0


# ---------------------------------------------------------------------------
# The heuristic bot, and the pass
# ---------------------------------------------------------------------------


def _load_heuristic() -> ModuleType | None:
    """``heuristic_bot.py`` from this folder as a module, or None if it is missing."""
    path = Path(__file__).resolve().with_name("heuristic_bot.py")
    try:
        spec = importlib.util.spec_from_file_location("_search_bot_heuristic", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    except Exception:  # not shipped beside us: the search goes on without a default card
        return None


HEURISTIC = _load_heuristic()


def choose_pass(msg: dict, budget: int | None = None) -> list[str]:
    """The heuristic bot's pass, or a better one found by ``search_pass``."""
    budget = PASS_BUDGET if budget is None else budget
    if budget > 0 and msg.get("direction") in ("left", "right", "across"):
        return search_pass(msg, budget)
    return names_of(heuristic_pass(mask_of_names(msg["hand"])))


def _pass_scores(hand: int) -> list[tuple[int, int]]:
    """The heuristic bot's pass scores as ``(-score, card)``, best to pass first."""
    counts = [(hand & SUIT_MASKS[s]).bit_count() for s in range(4)]
    guarded = (hand & SUIT_MASKS[2] & ((1 << QS) - 1)).bit_count() >= 3  # low spades
    out = []
    for c in _cards(hand):
        s, r = divmod(c, 13)
        if c == 0:
            score = -100  # the two of clubs
        elif c in (36, 37, 38):
            score = -10 if guarded else 100 + r
        elif s == 2:
            score = -50
        elif s == 3:
            score = 3 * r
        else:
            n = counts[s]
            score = 2 * r + (20 if n <= 2 else (6 if n == 3 else 0))
        out.append((-score, c))
    out.sort()
    return out


def heuristic_pass(hand: int) -> int:
    """The heuristic bot's pass (``heuristic_bot.choose_pass``) on masks."""
    ranked = _pass_scores(hand)
    return (1 << ranked[0][1]) | (1 << ranked[1][1]) | (1 << ranked[2][1])


# ---------------------------------------------------------------------------
# The rollout: finish a hand with a rule-of-thumb policy for every seat
# ---------------------------------------------------------------------------


def playout(
    hands: list[int],
    pts: list[int],
    wins: list[int],
    voids: int,
    broken: bool,
    trick_no: int,
    leader: int,
    trick: list[int],
    first: int,
    me: int,
    SUITS=SUIT_MASKS,
    POINTS=POINTS,
    QS_BIT=QS_BIT,
    QS=QS,
    HEARTS=HEART_MASK,
    NON_HEARTS=NON_HEARTS,
    SAFE1=TRICK1_SAFE,
    AS_BIT=1 << 38,
    KS_BIT=1 << 37,
    POINT_CARDS=HEART_MASK | QS_BIT,
) -> int:
    """Play ``first`` for the seat to move, then finish the hand; ``me``'s points after R12.

    Every later card is chosen by the rules of ``heuristic_bot.py`` (the same
    choices, on card masks; only its use of where our passed queen went is
    left out), for every seat: each seat sees only its own hand, the cards
    still out, the voids shown, the points taken and the tricks won.

    Args:
        hands: the four hands (changed in place: pass a copy).
        pts: points taken so far this hand by seat (changed in place: the raw
            points at the end).
        wins: tricks won so far this hand by seat (changed in place).
        voids: bit ``s`` set if some seat has shown a void in suit ``s``.
        broken: hearts broken (R8).
        trick_no, leader, trick: the current trick: its number, leader and
            cards so far (``trick`` is not changed).
        first: the card the seat to move plays now.
        me: the seat whose points are returned.
    """
    n = len(trick)
    seat = (leader + n) & 3
    led = win = winseat = -1
    tp = 0
    qs_in_trick = False
    if n:
        led = trick[0] // 13
        smask = SUITS[led]
        for i in range(n):
            c = trick[i]
            tp += POINTS[c]
            if c == QS:
                qs_in_trick = True
            if (1 << c) & smask and c > win:
                win = c
                winseat = (leader + i) & 3
    unplayed = hands[0] | hands[1] | hands[2] | hands[3]
    # The seat that alone has taken points and most tricks so far (moon watch).
    sole = _sole_taker(pts)
    threat = sole if sole >= 0 and wins[sole] * 5 >= 3 * (trick_no - 1) else -1
    card = first
    while True:
        h = hands[seat]
        if card < 0:
            moon = threat if threat != seat and unplayed & HEARTS else -1
            if n == 0:
                # -- lead ------------------------------------------------------
                if trick_no == 1:
                    card = 0
                else:
                    legal = h if broken else (h & NON_HEARTS or h)
                    others = unplayed & ~h
                    card = -1
                    if moon >= 0 and legal & HEARTS:
                        top = legal.bit_length() - 1  # our highest heart
                        if not others >> top:
                            card = top  # a heart trick we surely win: the moon is off
                    if card < 0:
                        best = 1e9
                        best_r = 99
                        for s in (0, 1, 2, 3):
                            m = legal & SUITS[s]
                            if not m:
                                continue
                            low = (m & -m).bit_length() - 1
                            r = low - 13 * s
                            out = others & SUITS[s]
                            if not out >> low:
                                risk = 100.0 + r
                            else:
                                risk = 10.0 * (out & ((1 << low) - 1)).bit_count() / out.bit_count()
                                if s == 2:
                                    if h & QS_BIT:
                                        if low == QS:
                                            risk += 50
                                        elif (h & SUITS[2]).bit_count() - 1 < 3:
                                            risk += 30
                                    elif others & QS_BIT:
                                        if low > QS:
                                            risk += 50
                                        elif not h & (AS_BIT | KS_BIT):
                                            risk -= 10
                                if voids >> s & 1:
                                    risk += 3
                            score = risk + 2 * (h & SUITS[s]).bit_count()
                            if score < best or (score == best and r < best_r):
                                best = score
                                best_r = r
                                card = low
            else:
                fol = h & SUITS[led]
                if fol:
                    # -- follow suit -------------------------------------------
                    if not fol & (fol - 1):
                        card = fol.bit_length() - 1
                    else:
                        below = fol & ((1 << win) - 1)
                        if (
                            moon >= 0
                            and winseat == moon
                            and fol >> win
                            and (tp or led == 3)
                            and not qs_in_trick
                        ):
                            card = fol.bit_length() - 1  # take it from the shooter
                        elif win > QS and fol & QS_BIT:
                            card = QS  # under the king or ace of spades
                        elif trick_no == 1 or (n == 3 and not tp):
                            card = (fol & ~QS_BIT or fol).bit_length() - 1
                        elif below:
                            card = below.bit_length() - 1  # duck as high as possible
                        elif n == 3:
                            card = (fol & ~QS_BIT or fol).bit_length() - 1
                        elif tp or (led == 2 and unplayed & ~h & QS_BIT):
                            card = (fol & -fol).bit_length() - 1
                        else:
                            card = (fol & ~QS_BIT or fol).bit_length() - 1
                else:
                    # -- discard -----------------------------------------------
                    legal = (h & SAFE1 or h & HEARTS or h) if trick_no == 1 else h
                    card = -1
                    if not legal & (legal - 1):
                        card = legal.bit_length() - 1
                    elif moon >= 0:
                        if winseat == moon:
                            clean = legal & ~HEARTS & ~QS_BIT
                            if clean:
                                card = _most_dangerous(clean, h, unplayed & ~h)
                            elif legal & HEARTS:
                                hs = legal & HEARTS
                                card = (hs & -hs).bit_length() - 1
                        elif (moon - seat) & 3 >= 4 - n:  # the shooter has played already
                            if legal & QS_BIT:
                                card = QS
                            elif legal & HEARTS:
                                card = legal.bit_length() - 1
                    if card < 0:
                        if legal & QS_BIT:
                            card = QS
                        elif legal & AS_BIT and unplayed & ~h & QS_BIT:
                            card = 38
                        elif legal & KS_BIT and unplayed & ~h & QS_BIT:
                            card = 37
                        else:
                            # _most_dangerous, inlined
                            best = -1 << 20
                            others = unplayed & ~h
                            for s in (0, 1, 2, 3):
                                m = legal & SUITS[s]
                                if m:
                                    top = m.bit_length() - 1
                                    o = others & SUITS[s]
                                    score = (
                                        (
                                            (
                                                o.bit_count()
                                                - 2 * (o >> top).bit_count()
                                                + (3 if s == 3 else 0)
                                            )
                                            << 8
                                        )
                                        - ((h & SUITS[s]).bit_count() << 4)
                                        + top % 13
                                    )
                                    if score > best:
                                        best = score
                                        card = top
        # -- play the card -------------------------------------------------------
        bit = 1 << card
        hands[seat] = h ^ bit
        unplayed ^= bit
        if n == 0:
            led = card // 13
            win = card
            winseat = seat
            tp = POINTS[card]
            qs_in_trick = card == QS
            n = 1
            seat = (seat + 1) & 3
        else:
            tp += POINTS[card]
            if card // 13 == led:
                if card > win:
                    win = card
                    winseat = seat
                if card == QS:
                    qs_in_trick = True
            else:
                voids |= 1 << led
                if card >= 39:
                    broken = True
                elif card == QS:
                    qs_in_trick = True
            if n == 3:
                pts[winseat] += tp
                wins[winseat] += 1
                if trick_no == 13 or not unplayed & POINT_CARDS:
                    break  # the last trick, or no points left to take
                trick_no += 1
                seat = winseat
                n = 0
                if tp:
                    sole = _sole_taker(pts)
                threat = sole if sole >= 0 and wins[sole] * 5 >= 3 * (trick_no - 1) else -1
            else:
                n += 1
                seat = (seat + 1) & 3
        card = -1
    mine = pts[me]
    if mine == 26:
        return 0
    for p in pts:
        if p == 26:
            return 26
    return mine


def _sole_taker(pts: list[int]) -> int:
    """The one seat that has taken points, at least 4 of them, or -1.

    With at least 60% of the tricks won so far it is the heuristic bot's moon
    threat (to the other seats, while hearts are still out).
    """
    taker = -1
    for s in (0, 1, 2, 3):
        if pts[s]:
            if taker >= 0:
                return -1
            taker = s
    if taker < 0 or pts[taker] < 4:
        return -1
    return taker


def _most_dangerous(legal: int, hand: int, out: int) -> int:
    """The heuristic bot's discard: the card that beats the most of the cards of its
    suit still out, less those that beat it (hearts +3), then the shorter suit,
    then the higher rank; only the top card of each suit can be the answer."""
    best = -1 << 20
    card = -1
    for s in (0, 1, 2, 3):
        m = legal & SUIT_MASKS[s]
        if not m:
            continue
        top = m.bit_length() - 1
        o = out & SUIT_MASKS[s]  # beats - (len(out) - beats) = len(out) - 2 * higher
        key = (
            ((o.bit_count() - 2 * (o >> top).bit_count() + (3 if s == 3 else 0)) << 8)
            - ((hand & SUIT_MASKS[s]).bit_count() << 4)
            + top % 13
        )
        if key > best:
            best = key
            card = top
    return card


def rollout_legal(hand: int, trick: list[int], trick_no: int, broken: bool) -> int:
    """The cards the rollout lets a seat play: R5-R9 on masks (for the tests)."""
    if not trick:
        if trick_no == 1:
            return 1 if hand & 1 else 0
        return hand if broken else (hand & NON_HEARTS or hand)
    fol = hand & SUIT_MASKS[trick[0] // 13]
    if fol:
        return fol
    if trick_no == 1:
        return hand & TRICK1_SAFE or hand & HEART_MASK or hand
    return hand


# ---------------------------------------------------------------------------
# What the seat knows, and sampled worlds consistent with it
# ---------------------------------------------------------------------------


class Knowledge:
    """The hidden-information facts of one ``play`` request."""

    def __init__(self, msg: dict) -> None:
        self.me = me = msg["seat"]
        self.hand = mask_of_names(msg["hand"])
        self.trick_no = msg["trick_number"]
        self.leader = msg["leader"]
        self.trick = [parse_card(p["card"]) for p in msg["trick"]]
        self.pts = list(msg.get("hand_points") or [0, 0, 0, 0])
        self.broken = bool(msg["hearts_broken"])
        played = 0
        count = [13, 13, 13, 13]
        void = [0, 0, 0, 0]  # per seat: mask of the suits it is out of
        broken = False
        shown = 0  # bit s: some seat did not follow suit s
        self.wins = [0, 0, 0, 0]
        for t in msg["tricks"]:
            self.wins[t["winner"]] += 1
        sequences = [t["cards"] for t in msg["tricks"]]
        sequences.append(msg["trick"])
        for cards in sequences:
            if not cards:
                continue
            led = parse_card(cards[0]["card"]) // 13
            if led == 3 and not broken:
                # A heart led before hearts were broken: that seat held only hearts (R9).
                void[cards[0]["seat"]] |= SUIT_MASKS[0] | SUIT_MASKS[1] | SUIT_MASKS[2]
            for p in cards:
                c = parse_card(p["card"])
                played |= 1 << c
                count[p["seat"]] -= 1
                if c // 13 != led:
                    void[p["seat"]] |= SUIT_MASKS[led]
                    shown |= 1 << led
                    if c >= 39:
                        broken = True
        self.played = played
        self.count = count
        self.void = void
        self.shown_voids = shown
        # The cards we passed are still with their receiver, unless played since.
        self.known = [0, 0, 0, 0]
        passed = msg.get("passed")
        if passed:
            self.known[passed["to"]] = mask_of_names(passed["cards"]) & ~played
        self.unseen = ((1 << 52) - 1) & ~played & ~self.hand
        self.others = [s for s in range(4) if s != me]
        known = self.known[0] | self.known[1] | self.known[2] | self.known[3]
        self.pool = self.unseen & ~known
        self.room = [count[s] - self.known[s].bit_count() for s in range(4)]
        self.room[me] = 0
        # Plans for dealing the pool: first with what the other seats' discards
        # suggest (see _discard_hints), then with the voids only.
        hints = _discard_hints(msg)
        self.plans = [self._plan([void[s] | hints[s] for s in range(4)]), self._plan(void)]

    def _plan(self, exclude: list[int]) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
        """The pool split into constrained groups (cards only some seats may hold,
        the most constrained first, with those seats) and free cards."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for c in _cards(self.pool):
            seats = tuple(o for o in self.others if not exclude[o] >> c & 1)
            groups.setdefault(seats, []).append(c)
        free = groups.pop(tuple(self.others), [])
        constrained = sorted(groups.items(), key=lambda kv: len(kv[0]))
        return [(list(seats), cards) for seats, cards in constrained], free

    def sample(self, rng: random.Random) -> list[int]:
        """Four hands: ours, and the unseen cards dealt consistently with the facts.

        Constrained cards go first, each to one of the seats that may hold it
        with a chance proportional to its free room; the free cards are
        shuffled and dealt into the room left. A plan that fails repeatedly
        is dropped for the next (the discard hints first, then the voids);
        if none works (not expected) the pool is dealt freely.
        """
        randrange = rng.randrange
        for constrained, free in self.plans:
            for _attempt in range(8):
                hands = self.known.copy()
                room = self.room.copy()
                ok = True
                for seats, cards in constrained:
                    for c in cards:
                        total = 0
                        for o in seats:
                            total += room[o]
                        if not total:
                            ok = False
                            break
                        r = randrange(total)
                        for o in seats:
                            r -= room[o]
                            if r < 0:
                                break
                        hands[o] |= 1 << c
                        room[o] -= 1
                    if not ok:
                        break
                if ok:
                    return self._deal_free(hands, room, free, rng)
        return self._deal_free(self.known.copy(), self.room.copy(), _cards(self.pool), rng)

    def _deal_free(
        self, hands: list[int], room: list[int], free: list[int], rng: random.Random
    ) -> list[int]:
        cards = free.copy()
        rng.shuffle(cards)
        i = 0
        for o in self.others:
            mask = 0
            for c in cards[i : i + room[o]]:
                mask |= 1 << c
            hands[o] |= mask
            i += room[o]
        hands[self.me] = self.hand
        return hands


def _discard_hints(msg: dict) -> list[int]:
    """Cards each seat probably does not hold, from its discards (per seat, a mask).

    Most players, the heuristic bot included, throw the queen of spades on the
    first trick they cannot follow after trick 1, and while she is out the ace
    and king of spades next. So a seat that discarded another card after trick
    1 likely holds no queen, and if the queen was still out, no ace or king of
    spades either. Not inferred while a moon is threatened (discards then
    follow other rules).
    """
    hints = [0, 0, 0, 0]
    played = 0
    pts = [0, 0, 0, 0]
    wins = [0, 0, 0, 0]
    sequences = [(t["cards"], t["winner"], t["points"]) for t in msg["tricks"]]
    sequences.append((msg["trick"], None, 0))
    for number, (cards, winner, points) in enumerate(sequences, start=1):
        # The heuristic bot's moon alert: one seat alone has points (4 or more)
        # and has won at least 60% of the tricks.
        sole = _sole_taker(pts)
        alert = sole if sole >= 0 and wins[sole] * 5 >= 3 * (number - 1) else -1
        led = cards[0]["card"][1] if cards else ""
        for p in cards:
            c = parse_card(p["card"])
            if (
                number > 1
                and p["card"][1] != led
                and c != QS
                and not played & QS_BIT
                and alert in (-1, p["seat"])
            ):
                hints[p["seat"]] |= QS_BIT
                if c not in (37, 38):
                    hints[p["seat"]] |= HIGH_SPADES
            played |= 1 << c
        if winner is not None:
            pts[winner] += points
            wins[winner] += 1
    return hints


def _cards(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


# ---------------------------------------------------------------------------
# Choosing a card
# ---------------------------------------------------------------------------


def candidate_groups(k: Knowledge, legal: int) -> list[int]:
    """Legal cards in groups of interchangeable ones, as masks in card order.

    Two cards of a suit are interchangeable when no card still out (or on the
    table) ranks between them; the queen of spades is never grouped.
    """
    live = k.unseen | sum(1 << c for c in k.trick)  # cards that still matter between ours
    groups: list[int] = []
    prev = -1
    m = legal
    while m:
        low = m & -m
        c = low.bit_length() - 1
        m ^= low
        if (
            prev >= 0
            and prev // 13 == c // 13
            and c != QS
            and prev != QS
            and not live & (((1 << c) - 1) & ~((1 << (prev + 1)) - 1))
        ):
            groups[-1] |= low  # same group as the previous card
        else:
            groups.append(low)
        prev = c
    return groups


def choose_play(msg: dict, budget: int | None = None) -> str:
    """The legal card with the fewest points for us on average over sampled worlds
    (:func:`search_play`, stopped at ``TIME_SHARE`` of the request's ``time_ms``)."""
    start = time.perf_counter()
    deadline = start + TIME_SHARE * msg.get("time_ms", 1000) / 1000
    return CARD_NAMES[search_play(msg, budget, deadline=deadline)[0]]


def search_play(
    msg: dict,
    budget: int | None = None,
    *,
    seed: object = None,
    hands: list[int] | None = None,
    deadline: float | None = None,
) -> tuple[int, int]:
    """The search of ``choose_play``, callable from outside (the arena's audit).

    Args:
        msg: a ``play`` request (the seat's view).
        budget: simulated card plays (default ``BUDGET``): the search's size,
            counted in cards, not time.
        seed: what the decision's random generator is seeded with beside the
            request's position (default: the game's ``seed``, as in a game).
        hands: the four seats' hands now (card masks, ``hands[seat]`` the
            request's own), to search the true deal instead of sampled worlds:
            the rollouts are deterministic, so one world is played.
        deadline: ``time.perf_counter()`` seconds after which the search stops;
            ``None``: never (the result depends on the request, seed and budget only).

    Returns:
        ``(card, group)``: the card chosen and the mask of the legal cards
        interchangeable with it (see ``candidate_groups``).
    """
    legal_names = msg["legal"]
    legal = mask_of_names(legal_names)
    if len(legal_names) == 1:
        return parse_card(legal_names[0]), legal
    # The heuristic bot's card: the default, kept unless the search finds better.
    default = (
        parse_card(HEURISTIC.choose_play(msg))
        if HEURISTIC is not None
        else parse_card(legal_names[0])
    )
    k = Knowledge(msg)
    groups = candidate_groups(k, legal)
    points_left = (k.unseen | k.hand) & POINT_CARDS or any(POINTS[c] for c in k.trick)
    if len(groups) == 1 or not points_left:
        # Nothing to choose, or no points left to take.
        return default, next(g for g in groups if g >> default & 1)
    # Search one card per group: the default's, else the lowest.
    reps = [default if g >> default & 1 else (g & -g).bit_length() - 1 for g in groups]
    prior = next(i for i, g in enumerate(groups) if g >> default & 1)
    remaining = 52 - k.played.bit_count()
    budget = BUDGET if budget is None else budget
    seed = GAME_SEED if seed is None else seed
    rng = random.Random(f"{seed}:{msg.get('hand_number')}:{k.trick_no}:{len(k.trick)}:{k.me}")
    pts, wins, voids, broken = k.pts, k.wins, k.shown_voids, k.broken
    trick_no, leader, trick, me = k.trick_no, k.leader, k.trick, k.me
    known = list(hands) if hands is not None else None

    def world(rng: random.Random) -> Callable[[int], int]:
        dealt = known if known is not None else k.sample(rng)
        return lambda i: playout(
            dealt.copy(),
            pts.copy(),
            wins.copy(),
            voids,
            broken,
            trick_no,
            leader,
            trick,
            reps[i],
            me,
        )

    best = best_candidate(
        len(reps),
        prior,
        world,
        rng,
        remaining,
        budget,
        float("inf") if deadline is None else deadline,
        max_worlds=1 if known is not None else MAX_WORLDS,
    )
    return reps[best], groups[best]


def best_candidate(
    n: int,
    prior: int,
    world: Callable[[random.Random], Callable[[int], int]],
    rng: random.Random,
    cost: int,
    budget: int,
    deadline: float,
    max_worlds: int = MAX_WORLDS,
) -> int:
    """The index of the best of ``n`` candidates, by total points over sampled worlds.

    ``world(rng)`` samples one world and gives a function playing candidate
    ``i`` out in it (returning our points). Every live candidate is played in
    every world (paired comparison); each costs ``cost`` simulated card plays.
    The search stops after ``max_worlds`` worlds, when ``budget`` card plays are
    spent (after at least MIN_WORLDS worlds), when ``time.perf_counter()``
    passes ``deadline`` (seconds), or when pruning leaves one candidate.
    The ``prior`` candidate is kept unless another is better by PRIOR_MARGIN
    points per world.
    """
    alive = list(range(n))
    scores: list[list[int]] = [[] for _ in range(n)]
    spent = worlds = 0
    while worlds < max_worlds and (spent < budget or worlds < MIN_WORLDS):
        play = world(rng)
        for i in alive:
            scores[i].append(play(i))
        spent += len(alive) * cost
        worlds += 1
        if time.perf_counter() > deadline:
            break
        if worlds >= MIN_WORLDS and worlds % CHECK_EVERY == 0:
            alive = prune(alive, scores, worlds)
            if len(alive) == 1:
                break
    totals = [sum(sc) for sc in scores]
    best = min(alive, key=totals.__getitem__)
    if prior in alive and totals[prior] - totals[best] <= PRIOR_MARGIN * len(scores[best]):
        best = prior
    return best


def prune(alive: list[int], scores: list[list[int]], worlds: int) -> list[int]:
    """Drop the candidates clearly worse than the best so far (paired over the same worlds)."""
    totals = {i: sum(scores[i]) for i in alive}
    best = min(alive, key=totals.__getitem__)
    sb = scores[best]
    keep = []
    for i in alive:
        if i == best:
            keep.append(i)
            continue
        si = scores[i]
        mean = (totals[i] - totals[best]) / worlds
        if mean <= PRUNE_MIN:
            keep.append(i)
            continue
        var = sum((si[j] - sb[j] - mean) ** 2 for j in range(worlds)) / (worlds - 1)
        if mean - PRUNE_Z * (var / worlds) ** 0.5 <= PRUNE_MIN:
            keep.append(i)
    return keep


def search_pass(msg: dict, budget: int) -> list[str]:
    """The pass with the fewest points for us on average over sampled deals.

    Candidates: every three of the six cards the heuristic most wants to pass.
    In each sampled world the other seats' hands are random and they pass as
    the heuristic bot would; each candidate is then played out from trick 1.
    The heuristic's own pass is kept unless another is better by PRIOR_MARGIN.
    """
    start = time.perf_counter()
    hand = mask_of_names(msg["hand"])
    me = 0  # only the seats' order matters: we play seat 0 of the simulations
    offset = {"left": 1, "right": 3, "across": 2}[msg["direction"]]
    top = [c for _, c in _pass_scores(hand)[:PASS_CANDIDATES]]
    cands = [(1 << a) | (1 << b) | (1 << c) for a, b, c in itertools.combinations(top, 3)]
    prior = cands.index(heuristic_pass(hand))
    rest = _cards(((1 << 52) - 1) & ~hand)
    others = [(me + i) % 4 for i in (1, 2, 3)]
    deadline = start + TIME_SHARE * msg.get("time_ms", 1000) / 1000
    rng = random.Random(f"{GAME_SEED}:pass:{msg.get('hand_number')}")

    def world(rng: random.Random) -> Callable[[int], int]:
        rng.shuffle(rest)
        dealt = [0, 0, 0, 0]
        dealt[me] = hand
        for i, o in enumerate(others):
            m = 0
            for c in rest[13 * i : 13 * i + 13]:
                m |= 1 << c
            dealt[o] = m
        passes = [heuristic_pass(dealt[s]) if s != me else 0 for s in range(4)]

        def play(i: int) -> int:
            passes[me] = cands[i]
            hands = [dealt[s] & ~passes[s] for s in range(4)]
            for s in range(4):
                hands[(s + offset) % 4] |= passes[s]
            leader = next(s for s in range(4) if hands[s] & 1)
            return playout(hands, [0, 0, 0, 0], [0, 0, 0, 0], 0, False, 1, leader, [], 0, me)

        return play

    best = best_candidate(len(cands), prior, world, rng, 52, budget, deadline)
    return names_of(cands[best])


# ---------------------------------------------------------------------------
# The protocol loop
# ---------------------------------------------------------------------------


def handle(msg: dict, budget: int | None = None, pass_budget: int | None = None) -> dict | None:
    """React to one message from the referee; return the reply, or None."""
    kind = msg.get("type")
    if kind == "game_start":
        new_game(msg.get("seed"))
        return None
    if "id" not in msg:
        return None
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
            cards = choose_pass(msg, pass_budget)
        except Exception as exc:  # never die on a surprise: fall back to a valid move
            print(f"{NAME}: choose_pass failed: {exc!r}", file=sys.stderr)
            cards = msg["hand"][:3]
        return {"type": "pass", "id": msg["id"], "cards": cards}
    if kind == "play":
        try:
            card = choose_play(msg, budget)
        except Exception as exc:
            print(f"{NAME}: choose_play failed: {exc!r}", file=sys.stderr)
            card = msg["legal"][0]
        return {"type": "play", "id": msg["id"], "card": card}
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="hearts-arena search bot (JSON lines on stdio)")
    parser.add_argument(
        "--budget",
        type=int,
        default=BUDGET,
        help=f"simulated card plays per decision (default {BUDGET})",
    )
    parser.add_argument(
        "--pass-budget",
        type=int,
        default=PASS_BUDGET,
        help=f"simulated card plays for the pass (default {PASS_BUDGET}; 0: the heuristic's pass)",
    )
    args = parser.parse_args(argv)
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("type") == "bye":
            break
        try:
            reply = handle(msg, args.budget, args.pass_budget)
        except Exception as exc:
            print(f"{NAME}: cannot handle {msg.get('type')!r}: {exc!r}", file=sys.stderr)
            continue
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
