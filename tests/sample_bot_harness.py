"""In-process duplicate harness for the sample bots (sample_bots/*_bot.py).

It plays hands with the rules engine (:mod:`arena.core.rules`) and calls each
bot's ``choose_pass`` / ``choose_play`` directly with the message dicts the
referee would send over the pipe (a ``play`` request is ``Hand.view(seat)``
plus ``type``, ``id``, ``game_id``, ``scores`` and ``time_ms``). No
processes, no JSON, so thousands of hands take seconds, which is what
tuning a bot needs.

Only ``game_start`` is delivered of the notifications (through the bot's
``handle``, which re-seeds the random bot); the sample bots need no other,
since every ``play`` request carries the whole view of the hand.

Duplicate deals: every deal is played four times, the field rotated one
seat each time, so each entry plays each seat's cards once and the luck of
the deal cancels out. Each deal is one independent hand (hand numbers cycle
1, 2, 3, 4, so pass directions cycle left, right, across, hold); scores
before a hand are all 0.

Figures are points per hand (after the moon rule, R12), averaged per bot
name; the 95% interval is mean +- 1.96 standard errors over deals (the
four rotations of one deal are averaged first, since they are not
independent).

Usage (from the repository root)::

    python tests/sample_bot_harness.py heuristic random random random --deals 1000
    python tests/sample_bot_harness.py random low duck heuristic --deals 1000 --jobs 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from arena.core.cards import mask_of_names, names_of, parse_card
from arena.core.rules import Hand, PassDirection, deal_hands, pass_target

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_bots"
TIME_MS = 1000


class BotPipe:
    """A bot as a subprocess, spoken to one JSON line at a time (for tests)."""

    def __init__(self, argv: Sequence[str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, msg: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((msg if isinstance(msg, str) else json.dumps(msg)) + "\n")
        self.proc.stdin.flush()

    def ask(self, msg: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        """Send a request; the reply must be one JSON object line, prompted by nothing else."""
        self.send(msg)
        assert self.sel.select(timeout), f"no reply to {msg['type']} within {timeout} s"
        assert self.proc.stdout is not None
        reply = json.loads(self.proc.stdout.readline())
        assert isinstance(reply, dict)
        return reply

    def finish(self, timeout: float = 10.0) -> tuple[int, str, str]:
        """Wait for the exit: (exit code, the rest of stdout, stderr)."""
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def close(self) -> tuple[int, str, str]:
        """Say ``bye`` and wait for the exit."""
        self.send({"type": "bye"})
        return self.finish()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class BotError(AssertionError):
    """A bot answered with something the referee would call a fault."""


class FrozenClock:
    """A stand-in for a bot's ``time`` module whose clock never moves: a search
    bot's time cap (a share of ``time_ms``) never stops it, so its answers depend
    on its seed and budget alone, however busy the machine is."""

    @staticmethod
    def perf_counter() -> float:
        return 0.0

    @staticmethod
    def monotonic() -> float:
        return 0.0


def load_bot(name: str, instance: str = "", untimed: bool = False) -> ModuleType:
    """Import ``sample_bots/<name>_bot.py`` as a fresh module.

    Each call makes a separate module object, so two seats played by the
    random bot have separate generators, as two processes would. With
    ``untimed`` the module's clock is a :class:`FrozenClock` (no time cap).
    """
    path = SAMPLE_DIR / f"{name}_bot.py"
    spec = importlib.util.spec_from_file_location(f"_sample_{name}_bot_{instance}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if untimed and hasattr(module, "time"):
        module.time = FrozenClock  # type: ignore[attr-defined]
    return module


def _notify(bot: ModuleType, msg: dict) -> None:
    """Deliver a notification through the bot's own ``handle`` (as its main loop would)."""
    handle = getattr(bot, "handle", None)
    if handle is not None:
        handle(msg)


def play_hand(
    bots: Sequence[ModuleType], seed_text: str, hand_number: int, game_seed: int = 0
) -> tuple[list[int], int | None]:
    """Play one hand; ``bots[s]`` plays seat ``s``. Returns ``(points, moon_seat)``.

    Raises :class:`BotError` if a bot passes or plays something illegal.
    """
    hand = Hand.new(hand_number, deal_hands(seed_text))
    game_id = f"harness-{seed_text}"
    for seat, bot in enumerate(bots):
        _notify(
            bot,
            {
                "type": "game_start",
                "game_id": game_id,
                "seat": seat,
                "players": [getattr(b, "NAME", "?") for b in bots],
                "target_score": None,
                "hands": 1,
                "seed": game_seed * 4 + seat,
            },
        )
    next_id = 1
    if hand.direction is not PassDirection.HOLD:
        passes = []
        for seat, bot in enumerate(bots):
            held = hand.hands[seat]
            msg = {
                "type": "pass",
                "id": next_id,
                "hand_number": hand_number,
                "direction": hand.direction.value,
                "to": pass_target(seat, hand.direction),
                "hand": names_of(held),
                "time_ms": TIME_MS,
            }
            next_id += 1
            cards = bot.choose_pass(msg)
            if not (isinstance(cards, list) and len(cards) == 3 and len(set(cards)) == 3):
                raise BotError(f"seat {seat} ({bot.NAME}) passed {cards!r}")
            try:
                mask = mask_of_names(cards)
            except ValueError as exc:
                raise BotError(f"seat {seat} ({bot.NAME}) passed {cards!r}") from exc
            if mask & ~held:
                raise BotError(f"seat {seat} ({bot.NAME}) passed cards it does not hold: {cards}")
            passes.append(mask)
        hand.apply_passes(passes)
    while not hand.is_over():
        seat = hand.turn
        msg = hand.view(seat)
        msg.update(type="play", id=next_id, game_id=game_id, scores=[0, 0, 0, 0], time_ms=TIME_MS)
        next_id += 1
        card = bots[seat].choose_play(msg)
        if card not in msg["legal"]:
            raise BotError(f"seat {seat} ({bots[seat].NAME}) played {card!r}, legal {msg['legal']}")
        hand.play(parse_card(card))
    return hand.points()


@dataclass
class Stats:
    """Per bot name: one average per deal (over its seats in the 4 rotations)."""

    per_deal: list[float] = field(default_factory=list)
    moons: int = 0
    hands: int = 0

    @property
    def mean(self) -> float:
        return sum(self.per_deal) / len(self.per_deal)

    @property
    def half_width(self) -> float:
        """Half the 95% interval of the mean (normal approximation)."""
        n = len(self.per_deal)
        if n < 2:
            return float("nan")
        m = self.mean
        var = sum((x - m) ** 2 for x in self.per_deal) / (n - 1)
        return 1.96 * math.sqrt(var / n)


def _run_deals(
    field_names: tuple[str, ...], deal_ids: list[int], prefix: str, untimed: bool = False
) -> list[dict]:
    """Play the given deals (4 rotations each); one record per deal."""
    entries = [load_bot(name, str(i), untimed) for i, name in enumerate(field_names)]
    records = []
    for d in deal_ids:
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        moons: dict[str, int] = {}
        for rotation in range(4):
            # Seat s is played by entry (s + rotation) % 4.
            order = [(s + rotation) % 4 for s in range(4)]
            points, moon = play_hand(
                [entries[e] for e in order],
                f"{prefix}:{d}",
                hand_number=d % 4 + 1,
                game_seed=d * 4 + rotation,
            )
            for seat, e in enumerate(order):
                name = field_names[e]
                sums[name] = sums.get(name, 0) + points[seat]
                counts[name] = counts.get(name, 0) + 1
                if moon == seat:
                    moons[name] = moons.get(name, 0) + 1
        records.append({n: (sums[n] / counts[n], counts[n], moons.get(n, 0)) for n in sums})
    return records


def run_match(
    field_names: Sequence[str],
    deals: int,
    prefix: str = "sample-harness",
    jobs: int = 1,
    untimed: bool = False,
) -> dict[str, Stats]:
    """Play ``deals`` duplicate deals with the four named bots; stats per bot name
    (``untimed``: no bot's clock moves, see :class:`FrozenClock`)."""
    if len(field_names) != 4:
        raise ValueError("a field is four bot names")
    names = tuple(field_names)
    ids = list(range(deals))
    if jobs > 1:
        chunks = [ids[i::jobs] for i in range(jobs)]
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(
                pool.map(_run_deals, [names] * jobs, chunks, [prefix] * jobs, [untimed] * jobs)
            )
        records = [r for part in parts for r in part]
    else:
        records = _run_deals(names, ids, prefix, untimed)
    stats = {n: Stats() for n in dict.fromkeys(names)}
    for rec in records:
        for n, (avg, count, moons) in rec.items():
            stats[n].per_deal.append(avg)
            stats[n].hands += count
            stats[n].moons += moons
    return stats


def report(stats: dict[str, Stats]) -> str:
    lines = [f"{'bot':<12}{'hands':>7}{'pts/hand':>10}{'95% CI':>16}{'moons':>7}"]
    for name, s in sorted(stats.items(), key=lambda kv: kv[1].mean):
        lo, hi = s.mean - s.half_width, s.mean + s.half_width
        lines.append(f"{name:<12}{s.hands:>7}{s.mean:>10.3f}  [{lo:6.3f}, {hi:6.3f}]{s.moons:>7}")
    names = list(stats)
    if len(names) > 1:
        lines.append("paired differences (row - column, per deal, 95% CI):")
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                diff = Stats(
                    per_deal=[
                        x - y for x, y in zip(stats[a].per_deal, stats[b].per_deal, strict=True)
                    ]
                )
                lines.append(f"  {a} - {b}: {diff.mean:+.3f} +- {diff.half_width:.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bots", nargs=4, help="four bot names: random, low, duck, heuristic")
    parser.add_argument("--deals", type=int, default=250, help="deals (each played 4 times)")
    parser.add_argument("--prefix", default="sample-harness", help="seed prefix of the deals")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    stats = run_match(args.bots, args.deals, args.prefix, args.jobs)
    print(report(stats))
    print(f"{args.deals} deals x 4 rotations in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
