"""Cheating players for the audit's tests and benchmark (never shipped in the package).

A budget of 0 plays the heuristic sample bot's card where the player knows
no more than its view (a cheap honest baseline); with the deal known the
search is one world per candidate whatever the budget.

Each is a *policy* (``start``, ``pass_``, ``play``, ``trick``, ``hand_end``
called with protocol messages) used two ways: in-process by the fixture
builder ``tests/audit_runs.py`` (the rules engine deals and referees), and as a
real bot by ``cheat_bot.py`` (the protocol loop). All play the sample search
bot's search (``sample_bots/search_bot.py``, ``search_play``) with a fixed
budget and no clock; what differs is what they know:

* :class:`HonestSearch`: the seat's own view (the sample search bot, without
  its time cap), the honest baseline of the same strength;
* :class:`Clairvoyant`: every hand, re-derived from the tournament's public
  ``--seed`` as protocol/DEALS.md says (the other seats' passes guessed as the
  heuristic's; a guess the play contradicts is corrected by dealing the rest);
* :class:`Memory`: every hand of a deal it has met before, from a file it
  appends each hand's cards to (a world-writable folder: a channel opened on
  purpose, usable only with ``--no-sandbox``);
* :class:`Partner`: its partner's hand (two entrants of a list of allies),
  through files in such a folder, and it plays for the pair's points.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
from pathlib import Path
from types import ModuleType
from typing import Any

from arena.core.cards import CARD_NAMES, mask_of_names, names_of, parse_card
from arena.core.keys import MasterKey
from arena.core.rules import pass_direction, pass_source, pass_target, table_deal

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


search = _load("_cheat_search_bot", ROOT / "sample_bots" / "search_bot.py")

Message = dict[str, Any]


def played_by(view: Message) -> list[int]:
    """Per seat, the mask of the cards it has played this hand."""
    out = [0, 0, 0, 0]
    for t in [*view["tricks"], {"cards": view["trick"]}]:
        for p in t["cards"]:
            out[p["seat"]] |= 1 << parse_card(p["card"])
    return out


def complete_world(view: Message, guess: list[int | None], rng: random.Random) -> list[int]:
    """The four hands now: ours, then each other seat's guessed cards still
    unseen (``guess[s]`` a mask of cards it held after the pass, or None), up
    to the cards it holds; the cards left are dealt at random, respecting the
    voids shown where they can."""
    k = search.Knowledge(view)
    me = k.me
    hands = [0, 0, 0, 0]
    hands[me] = k.hand
    room = list(k.count)
    room[me] = 0
    pool = k.unseen
    for o in range(4):
        if o == me:
            continue
        want = (k.known[o] | (guess[o] or 0)) & pool
        for c in search._cards(want)[: room[o]]:
            hands[o] |= 1 << c
            pool &= ~(1 << c)
            room[o] -= 1
    rest = search._cards(pool)
    rng.shuffle(rest)
    for c in rest:
        fits = [o for o in range(4) if room[o] and not k.void[o] >> c & 1]
        fits = fits or [o for o in range(4) if room[o]]
        o = fits[0]
        hands[o] |= 1 << c
        room[o] -= 1
    return hands


class HonestSearch:
    """The sample search bot's play from the seat's own view (no time cap)."""

    def __init__(self, budget: int = 2000) -> None:
        self.budget = budget
        self.seed: object = 0
        self.game_id = ""
        self.seat = 0
        self.players: list[str] = []

    def start(self, msg: Message) -> None:
        self.seed = msg.get("seed", 0)
        self.game_id = str(msg.get("game_id", ""))
        self.seat = int(msg.get("seat", 0))
        self.players = list(msg.get("players", []))

    def pass_(self, msg: Message) -> list[str]:
        return names_of(search.heuristic_pass(mask_of_names(msg["hand"])))

    def world(self, msg: Message) -> list[int] | None:
        """The four hands now if this player knows them, else None."""
        return None

    def play(self, msg: Message) -> str:
        world = self.world(msg)
        if world is None and self.budget == 0:  # budget 0: the heuristic bot's card
            return str(search.HEURISTIC.choose_play(msg))
        card, _ = search.search_play(msg, self.budget, seed=self.seed, hands=world)
        return CARD_NAMES[card]

    def trick(self, msg: Message) -> None:
        pass

    def hand_end(self, msg: Message) -> None:
        pass


class Clairvoyant(HonestSearch):
    """Knows every hand: the deals re-derived from the public ``--seed``."""

    def __init__(self, public_seed: str, budget: int = 2000) -> None:
        super().__init__(budget)
        self.key = MasterKey.from_seed(public_seed)

    def world(self, msg: Message) -> list[int] | None:
        deal_key = self.game_id.rsplit("-", 1)[0]
        number = int(msg["hand_number"])
        dealt = table_deal(self.key.table_key(deal_key), number)
        me = int(msg["seat"])
        if (
            mask_of_names(msg["hand"])
            & ~dealt[me]
            & ~mask_of_names((msg.get("received") or {}).get("cards", []))
        ):
            return None  # not the deals of this seed: play honestly
        direction = pass_direction(number)
        after = list(dealt)
        if pass_target(me, direction) is not None:
            passes = [search.heuristic_pass(dealt[s]) for s in range(4)]
            passes[me] = mask_of_names(msg["passed"]["cards"])
            source = pass_source(me, direction)
            assert source is not None
            passes[source] = mask_of_names(msg["received"]["cards"])
            after = [dealt[s] & ~passes[s] for s in range(4)]
            for s in range(4):
                target = pass_target(s, direction)
                assert target is not None
                after[target] |= passes[s]
        rng = random.Random(f"{self.seed}:{number}:{msg['trick_number']}")
        guess: list[int | None] = list(after)
        played = played_by(msg)
        return complete_world(
            msg, [g | played[s] if g is not None else None for s, g in enumerate(guess)], rng
        )


class _MemoryFile:
    """How much of a memory file has been read (bytes) and its hands."""

    def __init__(self) -> None:
        self.offset = 0
        self.remembered: list[tuple[str, list[int]]] = []


_MEMORY_FILES: dict[str, _MemoryFile] = {}


class Memory(HonestSearch):
    """Remembers every hand of every deal it has played, in ``folder/memory.jsonl``:
    in a later game of a deal it knows all the cards (up to the other entrants'
    different passes)."""

    def __init__(self, folder: str, budget: int = 2000) -> None:
        super().__init__(budget)
        self.path = Path(folder) / "memory.jsonl"
        self.cards: list[int] = [0, 0, 0, 0]
        # The file's lines parsed so far, shared by the policies of one file
        # (the fixture builder makes one per game): each line is parsed once.
        self._read = _MEMORY_FILES.setdefault(str(self.path), _MemoryFile())
        self._scan_key: tuple[str, int, int] | None = None
        self._scanned = 0
        self._match: list[int] | None = None

    def start(self, msg: Message) -> None:
        super().start(msg)
        self.cards = [0, 0, 0, 0]

    def trick(self, msg: Message) -> None:
        for p in msg["cards"]:
            self.cards[p["seat"]] |= 1 << parse_card(p["card"])

    def hand_end(self, msg: Message) -> None:
        if all(c.bit_count() == 13 for c in self.cards):
            line = json.dumps({"game_id": self.game_id, "hands": [names_of(c) for c in self.cards]})
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        self.cards = [0, 0, 0, 0]

    def _memories(self) -> list[tuple[str, list[int]]]:
        """Every hand remembered, ``(game_id, four masks)``: the lines added to
        the file since the last call are read and kept."""
        read = self._read
        try:
            with open(self.path, encoding="utf-8") as f:
                f.seek(read.offset)
                text = f.read()
        except OSError:
            return read.remembered
        end = text.rfind("\n") + 1
        read.offset += len(text[:end].encode())
        for line in text[:end].splitlines():
            try:
                m = json.loads(line)
                read.remembered.append((m["game_id"], [mask_of_names(h) for h in m["hands"]]))
            except (ValueError, KeyError, TypeError):
                continue
        return read.remembered

    def world(self, msg: Message) -> list[int] | None:
        """The first remembered hand of another game whose seat ``me`` held 10
        or more of our cards, completed to the hands now; else None. The
        memories already scanned for this game, seat and cards are not scanned
        again (they are only ever appended to, so the first match stays first)."""
        me = int(msg["seat"])
        played = played_by(msg)
        mine = mask_of_names(msg["hand"]) | played[me]
        memories = self._memories()
        key = (self.game_id, me, mine)
        if key != self._scan_key:
            self._scan_key, self._scanned, self._match = key, 0, None
        while self._match is None and self._scanned < len(memories):
            game_id, hands = memories[self._scanned]
            self._scanned += 1
            if game_id != self.game_id and (hands[me] & mine).bit_count() >= 10:
                self._match = hands
        if self._match is None:
            return None
        rng = random.Random(f"{self.seed}:{msg['hand_number']}:{msg['trick_number']}")
        return complete_world(msg, self._match, rng)  # type: ignore[arg-type]


class Partner(HonestSearch):
    """One of ``allies`` (entrant names): writes its hand after the pass to
    ``folder``, reads its partner's, and plays for the pair's points."""

    def __init__(self, folder: str, allies: list[str], budget: int = 2000) -> None:
        super().__init__(budget)
        self.folder = Path(folder)
        self.allies = allies

    def _file(self, seat: int, number: int) -> Path:
        return self.folder / f"{self.game_id}-{number}-{seat}.json"

    def _publish(self, hand: list[str], number: int) -> None:
        path = self._file(self.seat, number)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(hand), encoding="utf-8")
        os.replace(tmp, path)

    def partner(self) -> int | None:
        me = self.players[self.seat] if self.players else None
        for s, name in enumerate(self.players):
            if s != self.seat and name in self.allies and name != me:
                return s
        return None

    def play(self, msg: Message) -> str:
        number = int(msg["hand_number"])
        if msg["trick_number"] == 1 and not any(p["seat"] == self.seat for p in msg["trick"]):
            start = mask_of_names(msg["hand"])
            self._publish(names_of(start), number)
        partner = self.partner()
        if partner is None:
            return super().play(msg)
        try:
            theirs = mask_of_names(json.loads(self._file(partner, number).read_text()))
        except (OSError, ValueError):
            return super().play(msg)
        return CARD_NAMES[self._team_search(msg, partner, theirs)]

    def _team_search(self, msg: Message, partner: int, theirs: int) -> int:
        """The card with the fewest points for the pair over worlds where the
        partner's cards are known."""
        legal = mask_of_names(msg["legal"])
        k = search.Knowledge(msg)
        groups = search.candidate_groups(k, legal)
        reps = [(g & -g).bit_length() - 1 for g in groups]
        if len(reps) == 1:
            return reps[0]
        rng = random.Random(
            f"{self.seed}:{msg['hand_number']}:{msg['trick_number']}:{len(msg['trick'])}"
        )
        remaining = 52 - k.played.bit_count()
        worlds = max(8, min(100, self.budget // (remaining * len(reps))))
        totals = [0] * len(reps)
        played = played_by(msg)
        trick = [parse_card(p["card"]) for p in msg["trick"]]
        for _ in range(worlds):
            guess: list[int | None] = [None, None, None, None]
            guess[partner] = theirs | played[partner]
            hands = complete_world(msg, guess, rng)
            for i, card in enumerate(reps):
                pts = list(k.pts)
                search.playout(
                    hands.copy(),
                    pts,
                    list(k.wins),
                    k.shown_voids,
                    k.broken,
                    k.trick_no,
                    k.leader,
                    trick,
                    card,
                    k.me,
                )
                totals[i] += pts[k.me] + pts[partner]
        return reps[min(range(len(reps)), key=totals.__getitem__)]


def make(kind: str, args: list[str], budget: int) -> HonestSearch:
    """A policy by name: ``honest``, ``clairvoyant SEED``, ``memory FOLDER``,
    ``partner FOLDER ALLY,ALLY``."""
    if kind == "honest":
        return HonestSearch(budget)
    if kind == "clairvoyant":
        return Clairvoyant(args[0], budget)
    if kind == "memory":
        return Memory(args[0], budget)
    if kind == "partner":
        return Partner(args[0], args[1].split(","), budget)
    raise ValueError(f"unknown policy {kind!r}")
