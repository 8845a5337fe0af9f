"""Regenerate the generated parts of the documentation from the code.

``protocol/FIRST_BOT.md`` shows one full exchange of a hand, taken from the
transcript of a real game the arena plays with the sample bots (a fixed seed,
deterministic bots), so it cannot drift from what the referee sends::

    python -m arena.tools.docs           # rewrite the generated sections
    python -m arena.tools.docs --check   # exit 1 if a file is out of date

A generated section sits between ``<!-- BEGIN GENERATED NAME -->`` and
``<!-- END GENERATED NAME -->`` lines; the text around it is left alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import trio

from arena.core.keys import MasterKey
from arena.core.resources import protocol_dir
from arena.game.referee import GameSpec, RefereeSettings
from arena.protocol.records import GameRecordJSON
from arena.sandbox.entrants import Entrant, sample_entrants
from arena.sandbox.launcher import Launcher
from arena.tournament.runner import TournamentRunner, TournamentSettings

#: The seed of the example game.
EXAMPLE_SEED: Final = 2024
#: The sample bots at seats 0..3 of the example game (all deterministic).
EXAMPLE_SEATS: Final = ("low", "duck", "kit", "random")


def _entrants() -> list[Entrant]:
    samples = {e.name: e for e in sample_entrants()}
    folder = next(iter(samples.values())).cwd
    kit = Entrant("kit", (sys.executable, str(folder / "kit_bot.py")), folder, "sample:kit")
    samples["kit"] = kit
    return [samples[name] for name in EXAMPLE_SEATS]


def example_record() -> GameRecordJSON:
    """Play the example game (one hand, transcripts on) and return its record."""
    key = MasterKey.from_seed(EXAMPLE_SEED)
    spec = GameSpec(
        game_index=0,
        game_id="r1-t0-k0",
        round=1,
        table=0,
        rotation=0,
        seats=EXAMPLE_SEATS,
        deal_key="r1-t0",
        bot_seeds=key.bot_seeds("r1-t0-k0"),
        target_score=None,
        hands=1,
        table_key=key.table_key("r1-t0"),
    )
    settings = TournamentSettings(
        seed=EXAMPLE_SEED,
        rounds=1,
        target_score=None,
        hands=1,
        referee=RefereeSettings(transcripts=True),
    )
    records: list[GameRecordJSON] = []
    runner = TournamentRunner(_entrants(), settings, Launcher(), records.append)
    trio.run(runner.run, [spec])
    return records[0]


def example_exchange(record: GameRecordJSON | None = None, seat: int = 0) -> str:
    """The markdown of the example: seat ``seat``'s transcript of the game."""
    record = record or example_record()
    lines = []
    for entry in record["transcripts"][seat]:
        if "sent" in entry:
            lines.append("> " + json.dumps(entry["sent"], separators=(", ", ": ")))
        elif "received" in entry:
            lines.append("< " + json.dumps(entry["received"], separators=(", ", ": ")))
    name = record["seats"][seat]
    faults = [f for f in record["faults"] if f["seat"] == seat]
    intro = (
        f"Seat {seat} ({name}, `sample_bots/{name}_bot.py`) in a one-hand game against "
        f"{', '.join(record['seats'][1:])}, after the handshake. `>` is the referee "
        "writing to the bot, `<` the bot's answer; the transcript's times are left out. "
        f"The hand's points: {' '.join(map(str, record['hands'][0]['points']))}."
    )
    if faults:  # pragma: no cover - the sample bots do not fault
        intro += f" Faults: {faults}."
    return intro + "\n\n```\n" + "\n".join(lines) + "\n```"


#: Generated sections: file (relative to the protocol folder) -> name -> maker.
SECTIONS: Final[dict[str, dict[str, Callable[[], str]]]] = {
    "FIRST_BOT.md": {"example-exchange": example_exchange},
}


def render(text: str, name: str, body: str) -> str:
    """``text`` with the section ``name`` replaced by ``body``.

    Raises:
        ValueError: the section's markers are missing.
    """
    tag = re.escape(name)
    pattern = re.compile(
        rf"(<!-- BEGIN GENERATED {tag}[^>]*-->\n)(.*?)(<!-- END GENERATED {tag} -->)", re.DOTALL
    )
    if not pattern.search(text):
        raise ValueError(f"no generated section {name!r}")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text, count=1)


def regenerate(folder: Path | None = None) -> dict[Path, tuple[str, str]]:
    """Every file with generated sections: ``path -> (current text, new text)``."""
    folder = folder or protocol_dir()
    out = {}
    for file, sections in SECTIONS.items():
        path = folder / file
        old = path.read_text(encoding="utf-8")
        new = old
        for name, make in sections.items():
            new = render(new, name, make())
        out[path] = (old, new)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.tools.docs [--check]``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m arena.tools.docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, (old, new) in regenerate().items():
        if old == new:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path}")
    if args.check and stale:
        print(f"out of date: {', '.join(map(str, stale))} (run python -m arena.tools.docs)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
