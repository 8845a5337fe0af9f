"""The golden run (tests/tournament/test_golden_run.py): the same ``--seed``
and entrants give the same ``games.jsonl`` and ``results.json`` as the arena
did before the package was re-laid out (issue 15).

``tests/golden/`` holds the two files written by the commit the layout work
started from (393ea18) for the run :func:`golden_args` describes: five
entrants whose moves do not depend on time (the heuristic and kit sample bots,
the search sample bot with fixed search budgets, and two faulting test bots,
``illegal`` (R3, R6) and ``garbage`` (malformed lines)), sealed as by default,
``--seed 15``, one round of two hands per game, two games at a time, and a
generous 30-second time limit, so no decision comes near it. The stored files
are the base's output whole, except that the folder holding the bots and the
interpreter that runs them (the arena's own, or a system Python where the bot
users cannot reach it) are written as ``<bots>`` and ``<python>`` (they differ
from machine to machine).

The comparison (:func:`differences`) ignores only the fields that record
times, by their place in the record:

* ``results.json``: ``generated_at`` (when the file was written);
* each ``games.jsonl`` record: ``started_at`` (seconds since the epoch),
  ``duration_s`` (seconds) and, in each seat's ``timing`` entry,
  ``mean_ms``, ``max_ms``, ``cpu_mean_ms``, ``cpu_max_ms`` (milliseconds) and
  the per-request lists ``wall_ms`` and ``cpu_ms`` (milliseconds). The other
  ``timing`` fields (``requests``, ``oom_kills``) are counts and are compared.

Every other field the base wrote must be present with an equal value (floats
such as ``mu`` and ``sigma`` exactly), and lists must have the same length. A
field the current code ADDS to an object (say a new field of a fault record)
is allowed: records may grow, never change or lose a field
(``/work/shared/PROTOCOL.md``: never rename or drop a field). Games are
compared by ``game_index`` (with two games at a time they may be written to
``games.jsonl`` in either order) and must be the same set of games. Changes
made on purpose since the base are listed, each with its reason, in
:data:`INTENDED_CHANGES` and applied to the base before the comparison.

To make the files again (only on purpose: they are the reference), run, with
the interpreter of an environment where the checkout ROOT is installed::

    python tests/golden_run.py ROOT tests/golden
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
#: The run: ``--seed``, one round of two hands, a time limit no bot comes near.
SEED = 15
#: Entrants: (name, folder of its own, files copied into it from the checkout,
#: command words after the program). ``search`` has fixed budgets, so its
#: answers depend on the game's seed only, not on time.
ENTRANTS: list[tuple[str, list[str], list[str]]] = [
    ("heuristic_bot", ["sample_bots/heuristic_bot.py"], []),
    (
        "search",
        ["sample_bots/search_bot.py", "sample_bots/heuristic_bot.py"],
        ["--budget", "400", "--pass-budget", "400"],
    ),
    ("kit_bot", ["sample_bots/kit_bot.py"], []),
    ("illegal", ["tests/bots/illegal.py", "tests/bots/botlib.py"], []),
    ("garbage", ["tests/bots/garbage.py", "tests/bots/botlib.py"], []),
]
#: Fields that record times, by place: a path of keys, ``*`` for any list item.
TIME_FIELDS_RESULTS: frozenset[tuple[str, ...]] = frozenset({("generated_at",)})
TIME_FIELDS_GAME: frozenset[tuple[str, ...]] = frozenset(
    {("started_at",), ("duration_s",)}
    | {
        ("timing", "*", key)
        for key in ("mean_ms", "max_ms", "cpu_mean_ms", "cpu_max_ms", "wall_ms", "cpu_ms")
    }
)


def prepare_bots(root: Path, dest: Path) -> list[str]:
    """Copy each entrant's files from the checkout ``root`` into a folder of its
    own under ``dest`` (sealed, a bot sees its whole folder) and return the
    entrant arguments, in order."""
    given = []
    for name, files, extra in ENTRANTS:
        folder = dest / name
        folder.mkdir(parents=True)
        for file in files:
            shutil.copy(root / file, folder / Path(file).name)
        folder.chmod(0o755)
        program = folder / Path(files[0]).name
        given.append(f"{name}={program}" + "".join(f" {word}" for word in extra))
    return given


def golden_args(entrants: list[str], out: Path) -> list[str]:
    """The ``run`` arguments of the golden run (sealed, the default mode)."""
    return [
        "run",
        "--quiet",
        "--seed",
        str(SEED),
        "--rounds",
        "1",
        "--hands",
        "2",
        "--jobs",
        "2",
        "--time-limit",
        "30",
        # The default memory bound is lowered to fit the machine (issue 22):
        # the golden run's, recorded in its settings, is the old default's.
        "--memory-limit",
        "4096",
        "--out",
        str(out),
        *entrants,
    ]


def run_golden(root: Path, work: Path) -> tuple[str, str]:
    """Play the golden run with this interpreter's arena and the bots of the
    checkout ``root``, in the folder ``work``; returns the text of
    ``games.jsonl`` and ``results.json`` with the bots' folder and the
    interpreter that ran them written as ``<bots>`` and ``<python>``.

    Raises:
        AssertionError: the run did not exit 0 (its output is in the message).
    """
    bots = work / "bots"
    out = work / "out"
    entrants = prepare_bots(root, bots)
    done = subprocess.run(
        [sys.executable, "-m", "arena", *golden_args(entrants, out)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    # Every entrant is a .py program, run by the interpreter the arena chose
    # for it: its own, or a system Python where bot users cannot reach its own.
    interpreters = {
        entrant["argv"][0]
        for entrant in json.loads((out / "results.json").read_text())["settings"]["entrants"]
    }
    assert all(Path(path).name.startswith("python") for path in interpreters), interpreters

    def placeholders(text: str) -> str:
        text = text.replace(str(bots), "<bots>")
        for path in sorted(interpreters, key=len, reverse=True):
            text = text.replace(json.dumps(path)[1:-1], "<python>")
        return text

    return (
        placeholders((out / "games.jsonl").read_text()),
        placeholders((out / "results.json").read_text()),
    )


def _is_time(path: tuple[str, ...], time_fields: frozenset[tuple[str, ...]]) -> bool:
    generic = tuple("*" if part.startswith("[") else part for part in path)
    return generic in time_fields


def differences(
    base: Any,
    new: Any,
    time_fields: frozenset[tuple[str, ...]],
    path: tuple[str, ...] = (),
) -> Iterator[str]:
    """Where ``new`` differs from ``base``, one line each (empty: no difference).

    Every key of a ``base`` object must be in ``new`` with an equal value,
    except the keys whose place (``path``, list items as ``[i]``) is in
    ``time_fields``; keys only ``new`` has are allowed. Lists must have the
    same length, item by item equal. Numbers compare exactly (``1 == 1.0``;
    ``True`` is not ``1``).
    """
    where = "/".join(path) or "(top)"
    if isinstance(base, dict):
        if not isinstance(new, dict):
            yield f"{where}: an object became {type(new).__name__}"
            return
        for key, value in base.items():
            if _is_time((*path, key), time_fields):
                continue
            if key not in new:
                yield f"{'/'.join((*path, key))}: missing"
            else:
                yield from differences(value, new[key], time_fields, (*path, key))
    elif isinstance(base, list):
        if not isinstance(new, list):
            yield f"{where}: a list became {type(new).__name__}"
        elif len(base) != len(new):
            yield f"{where}: {len(base)} items became {len(new)}"
        else:
            for i, (a, b) in enumerate(zip(base, new, strict=True)):
                yield from differences(a, b, time_fields, (*path, f"[{i}]"))
    elif type(base) is bool or type(new) is bool or base is None or new is None:
        if base is not new:
            yield f"{where}: {base!r} became {new!r}"
    elif base != new:
        yield f"{where}: {base!r} became {new!r}"


def games_by_index(text: str) -> dict[int, dict[str, Any]]:
    """The records of a ``games.jsonl`` text by ``game_index``."""
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    by_index = {record["game_index"]: record for record in records}
    assert len(by_index) == len(records), "two records share a game_index"
    return by_index


#: Changes made on purpose since the base, applied to the base's text before
#: the comparison (each with the reason): ``(pattern, replacement)`` on the
#: text of a field named ``field`` anywhere in the records. Any other change fails.
INTENDED_CHANGES: list[tuple[str, re.Pattern[str], str]] = [
    # Issue 15, item 4: a card not held is a card not dealt to the seat (R2),
    # not a failure to follow suit (R6).
    ("detail", re.compile(r"(does not hold \w\w) \(R6\)"), r"\1 (R2)"),
]


def with_intended_changes(value: Any, field: str = "") -> Any:
    """``value`` (a parsed record) with :data:`INTENDED_CHANGES` applied."""
    if isinstance(value, dict):
        return {key: with_intended_changes(item, key) for key, item in value.items()}
    if isinstance(value, list):
        return [with_intended_changes(item, field) for item in value]
    if isinstance(value, str):
        for name, pattern, replacement in INTENDED_CHANGES:
            if name == field:
                value = pattern.sub(replacement, value)
    return value


def golden_differences(games_text: str, results_text: str) -> list[str]:
    """Every difference of a run's outputs from the stored golden run (with
    :data:`INTENDED_CHANGES` applied to it)."""
    base_games = with_intended_changes(games_by_index((GOLDEN / "games.jsonl").read_text()))
    new_games = games_by_index(games_text)
    found = []
    if sorted(base_games) != sorted(new_games):
        found.append(f"games.jsonl: games {sorted(base_games)} became {sorted(new_games)}")
    for index in sorted(set(base_games) & set(new_games)):
        for line in differences(base_games[index], new_games[index], TIME_FIELDS_GAME):
            found.append(f"games.jsonl game {index}: {line}")
    base_results = with_intended_changes(json.loads((GOLDEN / "results.json").read_text()))
    for line in differences(base_results, json.loads(results_text), TIME_FIELDS_RESULTS):
        found.append(f"results.json: {line}")
    return found


if __name__ == "__main__":
    # python tests/golden_run.py ROOT DEST: write the golden files.
    root, dest = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    work = Path(tempfile.mkdtemp(prefix="arena-golden-"))
    work.chmod(0o777)
    try:
        games, results = run_golden(root, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "games.jsonl").write_text(games)
    (dest / "results.json").write_text(results)
