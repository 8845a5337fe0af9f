"""``hearts-arena verify`` on a run folder of format ``server``: a closed
competition's export (``hearts-arena export``) or a participant's download
of one table (:mod:`arena.server.downloads`). protocol/RUN_FOLDER.md gives
the files; docs/checking-results.md what is proved and what is not.

What it checks, each failed check one line naming the table (``ladder
table 3: ...``, ``validation table 0 game v0-k2 hand 1: ...``):

* the key: the revealed key (``results.json``'s ``key``, or ``--key-file``)
  hashes (SHA-256) to the commitment published since ``--init``
  (``run.json`` and ``results.json`` both record it); when it does not,
  nothing else is checked. A download checked before the close has only
  its table key: its deals are checked with it, its bot seeds and the
  table key itself once the master key is given;
* every table's games: its deal key is its numbering's (``L<t>`` for ladder
  table t, ``V<submission>`` for a validation table, ``F<round>-t<table>``,
  ``G<k>``, ``C<n>`` for a final, gauntlet or challenge table), each game's
  deal key, table, rotation and seats are the table's (rotation ``k``
  seats ``seating[i]`` at ``(i + k) % 4``), a finished table has its four
  rotations, and each game's bot seeds, dealt cards (R2), passes and plays
  (R3-R8), trick winners and points (R9-R12), running scores and end (R13)
  are those the key and the rules give (:func:`arena.tools.verify.check_hand`,
  :func:`~arena.tools.verify.check_game_end`);
* the ladder, for a competition's export: each table's seating and focus
  are re-derived with the server's own chooser
  (:func:`arena.server.ladder.choose_ladder_table`, a pure function of the
  key, the table number, the lag, the entrants it was chosen among, the fold
  it was chosen from and the seatings of the tables before it) from the
  ratings this checker folds itself over the recorded games
  (:func:`arena.server.ladder.fold_tables`: finished tables in table order,
  void ones skipped); each table's recorded ``ratings_after`` is that fold,
  and ``results.json``'s ``rated_through``, ratings and standings are the
  fold's end.

It imports nothing of the database (no ``[server]`` extra needed): a
participant runs it on their own machine.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from arena.core.keys import BadKeyError, MasterKey
from arena.protocol.records import GameRecordJSON
from arena.server.ladder import (
    ROTATIONS,
    PastTable,
    choose_ladder_table,
    fold_point,
    fold_tables,
    gauntlet_seed_id,
)
from arena.server.rating import PRIOR, Rating, submission_of
from arena.tools.verify import VerifyError, check_game_play
from arena.tournament.runner import read_journal

#: ``run.json``'s ``format`` of a server's run folder.
FORMAT: Final = "server"
#: The deal key of each numbering's table (``{number}``, ``{submission}``
#: from its ``tables.jsonl`` line), as a regular expression; a numbering
#: not named here is not checked for its deal key's name.
DEAL_KEYS: Final = {
    "ladder": "L{number}",
    "validation": "V{submission}",
    "final": r"F\d+-t\d+",
    "gauntlet": r"G\d+",
    "challenge": r"C\d+",
}
#: The game id prefix of each numbering's games (``l3-k0``); others unchecked.
GAME_PREFIXES: Final = {"ladder": "l", "validation": "v"}
#: Relative difference within which a recorded rating is the re-fold's (the
#: same arithmetic gives the same bits; JSON's float text round-trips).
RATING_TOLERANCE: Final = 1e-9


@dataclass
class Verified:
    """What :func:`verify_server` found: ``games`` checked, ``problems`` (one
    line each, none: it verifies) and ``checked``, what was proved (for the
    line ``verify`` prints)."""

    games: int
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifyError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise VerifyError(f"{path} is not a JSON object")
    return data


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VerifyError(f"{path} cannot be read: {exc.strerror or exc}") from None
    out = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise VerifyError(f"{path}: line {i + 1} is not JSON") from None
        if not isinstance(row, dict):
            raise VerifyError(f"{path}: line {i + 1} is not a JSON object")
        out.append(row)
    return out


def is_server_folder(folder: Path) -> bool:
    """Whether ``folder/run.json`` is a server's run folder (format ``server``)."""
    try:
        data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RATING_TOLERANCE, abs_tol=RATING_TOLERANCE)


def _rating_problem(entrant: str, recorded: Any, folded: Rating) -> str | None:
    try:
        mu, sigma, games = float(recorded["mu"]), float(recorded["sigma"]), int(recorded["games"])
    except (KeyError, TypeError, ValueError):
        return f"{entrant}'s rating is not a mu, sigma and games"
    if _close(mu, folded.mu) and _close(sigma, folded.sigma) and games == folded.games:
        return None
    return (
        f"{entrant}'s rating mu {mu:.6f} sigma {sigma:.6f} ({games} games) is not the "
        f"re-fold's mu {folded.mu:.6f} sigma {folded.sigma:.6f} ({folded.games} games)"
    )


def _fold_problems(recorded: Any, folded: Mapping[str, Rating]) -> list[str]:
    if not isinstance(recorded, dict):
        return ["no ratings recorded"]
    out = []
    for name in sorted(set(recorded) | set(folded)):
        if name not in recorded:
            out.append(f"{name}'s rating is missing")
        elif name not in folded:
            out.append(f"{name} is rated but played no folded table")
        elif (p := _rating_problem(name, recorded[name], folded[name])) is not None:
            out.append(p)
    return out


def _deal_key_problem(line: Mapping[str, Any]) -> str | None:
    pattern = DEAL_KEYS.get(str(line.get("numbering")))
    if pattern is None:
        return None
    expected = pattern.format(number=line.get("number"), submission=line.get("submission"))
    if re.fullmatch(expected, str(line.get("deal_key"))) is None:
        return f"deal key {line.get('deal_key')!r} is not its numbering's ({expected})"
    return None


def _game_problems(
    rec: GameRecordJSON,
    line: Mapping[str, Any],
    k: int,
    key: MasterKey | None,
    table_key: bytes,
    max_tiebreak_hands: int,
) -> list[str]:
    gid = str(rec["game_id"])
    out: list[str] = []
    seating = list(line["seating"])
    seats = ["", "", "", ""]
    for i, name in enumerate(seating[:4]):
        seats[(i + k) % 4] = str(name)
    if rec["deal_key"] != line["deal_key"]:
        out.append(f"game {gid}: deal key {rec['deal_key']!r} is not its table's")
    if rec.get("table") != line["number"] or rec.get("rotation") != k:
        out.append(f"game {gid}: not rotation {k} of table {line['number']}")
    prefix = GAME_PREFIXES.get(str(line["numbering"]))
    if prefix is not None and gid != f"{prefix}{line['number']}-k{k}":
        out.append(f"game {gid}: not the id of rotation {k} ({prefix}{line['number']}-k{k})")
    if list(rec["seats"]) != seats:
        out.append(f"game {gid}: seats {list(rec['seats'])} are not the table's rotation {k}")
    # A gauntlet's seeds are its deal's and rotation's, the same for every participant.
    seed_id = gauntlet_seed_id(str(line["deal_key"]), k) if line["numbering"] == "gauntlet" else gid
    if key is not None and list(rec.get("bot_seeds", [])) != list(key.bot_seeds(seed_id)):
        out.append(f"game {gid}: bot seeds are not the key's")
    problem = check_game_play(rec, table_key, max_tiebreak_hands, gid)
    if problem is not None:
        out.append(problem)
    return out


def _key(text: Any, where: str) -> MasterKey | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise VerifyError(f"{where}: the key is not a text of 64 hexadecimal digits")
    try:
        return MasterKey.from_hex(text)
    except BadKeyError as exc:
        raise VerifyError(f"{where}: {exc}") from None


def verify_server(folder: Path, key_text: str | None = None) -> Verified:
    """Verify a server's run folder (see the module docstring).

    Args:
        folder: the export, or the unzipped download.
        key_text: the master key (64 hex digits, ``--key-file``'s), for a
            download made before the close; else ``results.json``'s.

    Raises:
        VerifyError: the folder cannot be verified at all (a file missing
            or unreadable; a competition's export with no key: not closed).
    """
    run = _load(folder / "run.json")
    results = _load(folder / "results.json")
    if run.get("format") != FORMAT:
        raise VerifyError(f"{folder / 'run.json'} is not a server's run folder")
    scope = run.get("scope", "competition")
    settings = run.get("settings") or {}
    commitment = run.get("key_commitment")
    key = _key(key_text, "--key-file") or _key(results.get("key"), "results.json")
    table_key_text = results.get("table_key")
    if scope != "table" and key is None:
        raise VerifyError(
            "results.json reveals no key: the competition is not closed "
            "(hearts-arena serve DIR --close reveals it; export again after)"
        )
    if scope == "table" and key is None and not isinstance(table_key_text, str):
        raise VerifyError("results.json holds neither the key nor the table's key")
    done = Verified(0)
    if results.get("key_commitment") != commitment:
        done.problems.append("results.json and run.json record different key commitments")
    if key is not None and key.commitment() != commitment:
        done.problems.append(
            f"the key's SHA-256 {key.commitment()} is not the commitment {commitment!s} "
            "published since the competition's start"
        )
    if done.problems:
        return done  # nothing else can be trusted
    tables = _lines(folder / "tables.jsonl")
    entrants = run.get("entrants") or []
    names = [str(e.get("name")) for e in entrants if isinstance(e, dict)]
    try:
        records = read_journal(folder / "games.jsonl", names)
    except (OSError, ValueError) as exc:
        raise VerifyError(str(exc)) from None
    done.games = len(records)
    by_id: dict[str, GameRecordJSON] = {}
    for rec in records:
        if rec["game_id"] in by_id:
            done.problems.append(f"game {rec['game_id']}: twice in games.jsonl")
        by_id[str(rec["game_id"])] = rec
    listed = {str(g) for line in tables for g in line.get("games", [])}
    for gid in by_id:
        if gid not in listed:
            done.problems.append(f"game {gid}: in games.jsonl but at no table of tables.jsonl")
    max_tiebreak = int(settings.get("max_tiebreak_hands", 0) or 0)
    for line in tables:
        where = f"{line.get('numbering')} table {line.get('number')}"
        try:
            done.problems += [
                f"{where}: {p}"
                for p in _table_problems(line, by_id, key, max_tiebreak, table_key_text)
            ]
        except (KeyError, TypeError, ValueError) as exc:
            done.problems.append(f"{where}: its line cannot be read ({type(exc).__name__}: {exc})")
    if key is not None and scope == "table" and isinstance(table_key_text, str) and tables:
        deal = str(tables[0].get("deal_key"))
        if key.table_key(deal).hex() != table_key_text:
            done.problems.append(
                f"{tables[0].get('numbering')} table {tables[0].get('number')}: its table key "
                f"is not the master key's for deal {deal}"
            )
    if scope == "table":
        done.checked.append(
            f"every hand of its {done.games} games is dealt by the table's key "
            "and plays under the rules, and every game ends where R13 says"
        )
        if key is not None:
            done.checked.append(
                "the key matches its commitment, the table key and the bot seeds are the key's"
            )
        else:
            done.checked.append(
                "the bot seeds and the table key itself are checked against the "
                "master key once the competition closes (--key-file)"
            )
        return done
    done.checked.append(
        f"the key matches its commitment; every deal, bot seed and hand of the {done.games} "
        "games is the one the key and the rules give"
    )
    assert key is not None
    try:
        ladder = sorted(
            (t for t in tables if t.get("numbering") == "ladder"), key=lambda t: int(t["number"])
        )
        done.problems += _ladder_problems(ladder, by_id, key, run, results, done)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        done.problems.append(
            f"the ladder's tables or ratings cannot be read ({type(exc).__name__}: {exc})"
        )
    return done


def _table_problems(
    line: Mapping[str, Any],
    by_id: Mapping[str, GameRecordJSON],
    key: MasterKey | None,
    max_tiebreak: int,
    table_key_text: Any,
) -> list[str]:
    out: list[str] = []
    if (p := _deal_key_problem(line)) is not None:
        out.append(p)
    seating = list(line["seating"])
    if len(seating) != 4 or len(set(seating)) != 4:
        out.append(f"seating {seating} is not four different entrants")
        return out
    ids = [str(g) for g in line.get("games", [])]
    if line.get("status") == "done" and len(ids) != ROTATIONS:
        out.append(f"finished with {len(ids)} games, not its {ROTATIONS} rotations")
    if key is not None:
        table_key = key.table_key(str(line["deal_key"]))
    else:
        table_key = bytes.fromhex(str(table_key_text))
    for k, gid in enumerate(ids):
        rec = by_id.get(gid)
        if rec is None:
            out.append(f"game {gid}: missing from games.jsonl")
            continue
        out += _game_problems(rec, line, k, key, table_key, max_tiebreak)
    return out


def _ladder_problems(
    ladder: Sequence[Mapping[str, Any]],
    by_id: Mapping[str, GameRecordJSON],
    key: MasterKey,
    run: Mapping[str, Any],
    results: Mapping[str, Any],
    done: Verified,
) -> list[str]:
    out: list[str] = []
    numbers = [int(t["number"]) for t in ladder]
    if numbers != list(range(len(ladder))):
        return [f"the ladder's tables are not numbered 0..{len(ladder) - 1}: {numbers[:10]}"]
    # The fold, as the runner makes it: finished tables in order, void ones skipped.
    folds: list[dict[str, Rating]] = [{}]
    for line in ladder:
        status = line.get("status")
        if status == "done":
            records = [by_id[g] for g in line.get("games", []) if g in by_id]
            folds.append(fold_tables(folds[-1], [records]))
        elif status == "void":
            folds.append(dict(folds[-1]))
        else:
            break
    reach = len(folds) - 1
    competition = (run.get("settings") or {}).get("competition") or {}
    lag = int((competition.get("ladder") or {}).get("lag", 16))
    joined = {
        str(e["name"]): int(e["joined_table"])
        for e in run.get("entrants") or []
        if isinstance(e, dict) and e.get("joined_table") is not None
    }
    for t, line in enumerate(ladder):
        where = f"ladder table {t}"
        fp = fold_point(t, lag)
        if line.get("fold_through") != fp:
            out.append(
                f"{where}: chosen from the fold through table {line.get('fold_through')}, "
                f"the lag {lag} gives {fp}"
            )
            continue
        if fp > reach:
            out.append(
                f"{where}: chosen from the fold through table {fp}, "
                "which the finished tables do not reach"
            )
            continue
        field_ = [str(n) for n in line.get("active", [])]
        joined_t = {n: joined.get(n, t) for n in field_ if submission_of(n) is not None}
        late = [n for n, j in joined_t.items() if j > t]
        if late:
            out.append(
                f"{where}: {late[0]} joined the ladder at table {joined_t[late[0]]}, after it"
            )
            continue
        first = min(joined_t.values(), default=t)
        past = [
            PastTable(int(p["number"]), tuple(p["seating"]), p.get("focus"))
            for p in ladder[min(first, fp) : t]
        ]
        recent = [p for p in past if p.number >= fp]
        try:
            chosen = choose_ladder_table(t, key, lag, field_, folds[fp], recent, joined_t, past)
        except (ValueError, RuntimeError) as exc:
            out.append(f"{where}: its seating cannot be derived: {exc}")
            continue
        if tuple(line["seating"]) != chosen.seating or line.get("focus") != chosen.focus:
            out.append(
                f"{where}: seating {list(line['seating'])} (focus {line.get('focus')}) is not the "
                f"one the key and the fold give: {list(chosen.seating)} (focus {chosen.focus})"
            )
    for t, line in enumerate(ladder[:reach]):
        recorded = line.get("ratings_after")
        if recorded is not None:
            out += [
                f"ladder table {t}: ratings after it: {p}"
                for p in _fold_problems(recorded, folds[t + 1])
            ]
    ladder_results = results.get("ladder") or {}
    final = folds[reach]
    last = f"through ladder table {reach - 1}" if reach else "before any ladder table"
    if ladder_results.get("rated_through") != reach:
        out.append(
            f"results.json: rated through {ladder_results.get('rated_through')}, "
            f"the finished tables reach {reach}"
        )
    out += [
        f"results.json: ladder ratings {last}: {p}"
        for p in _fold_problems(ladder_results.get("ratings"), final)
    ]
    for i, row in enumerate(ladder_results.get("standings") or [], start=1):
        entrant = str(row.get("entrant"))
        p = _rating_problem(entrant, row, final.get(entrant, PRIOR))
        if p is not None:
            out.append(
                f"results.json: ladder standings row {i} ({row.get('participant')}) {last}: {p}"
            )
    done.checked.append(
        f"the seatings of the {len(ladder)} ladder tables re-derive from their folds and the key, "
        f"and the ratings re-fold to the published standings ({last})"
    )
    return out
