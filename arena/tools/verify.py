"""``hearts-arena verify``: check a finished tournament against its revealed key.

What it checks (each failed check is one line naming the game and hand):

* the key in ``results.json`` hashes (SHA-256) to the commitment printed when
  the run started, as recorded in ``run.json`` and ``results.json``;
* for a round-robin or a gauntlet, the journal holds exactly the scheduled
  games (ids, seats and deal keys as :func:`arena.tournament.runner.schedule` makes
  them from the key); for a ladder, each game's deal key and id are those of
  its table (the tables a ladder chose depend on its ratings, which are not
  re-derived here);
* every game's bot seeds and every hand's dealt cards are those the key
  gives (:mod:`arena.core.keys`, :func:`arena.core.rules.table_deal`);
* every hand replays under the rules engine: the recorded passes are legal
  and applied (R3), every card played is legal (R4-R8), trick winners and
  points (R9, R10) and the hand's points after the moon rule (R11, R12)
  match the record, and the running scores add up;
* every game ends where R13 says (:func:`check_game_end`): after the hand
  where a total reaches the target with a single lowest total (or the
  tie-break cap), or after its fixed number of hands, with the totals' ranks.

Pure apart from reading the folder: :func:`verify_folder` returns the
problems found, an empty list when everything holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from arena.core.cards import mask_of_names, names_of, parse_card
from arena.core.keys import BadKeyError, MasterKey
from arena.core.rules import (
    GameScore,
    Hand,
    IllegalMoveError,
    ladder_deal_key,
    pass_mask,
    table_deal,
)
from arena.protocol.records import GameRecordJSON, HandJSON
from arena.tournament.runner import ScheduleStream, TournamentSettings, read_journal
from arena.tournament.settings import RunSettings, SettingsError, tournament_from_json

#: Problems listed before the rest are only counted.
MAX_PROBLEMS: Final = 50


class VerifyError(RuntimeError):
    """The folder cannot be verified at all (files missing or unreadable, no
    key revealed); the message is one line for the user."""


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifyError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise VerifyError(f"{path} is not a JSON object")
    return data


def revealed_key(results: dict[str, Any], run: dict[str, Any]) -> tuple[MasterKey, list[str]]:
    """The key ``results.json`` reveals, and how it fails its commitments (a
    key whose SHA-256 is not the commitment of ``run.json``, commitments that
    differ, a key that is not the recorded seed's).

    Raises:
        VerifyError: no key revealed (an unfinished run), or a malformed key.
    """
    text = results.get("key")
    if not isinstance(text, str):
        raise VerifyError(
            "results.json reveals no key: the tournament is not finished "
            "(the key is revealed only once every scheduled game is played)"
        )
    try:
        key = MasterKey.from_hex(text)
    except BadKeyError as exc:
        raise VerifyError(f"results.json: {exc}") from None
    problems = []
    committed = run.get("settings", {}).get("key_commitment")
    if committed != key.commitment():
        problems.append(
            f"the revealed key's SHA-256 {key.commitment()} is not the commitment "
            f"{committed!s} recorded when the run started"
        )
    if results.get("key_commitment") != committed:
        problems.append("results.json and run.json record different key commitments")
    seed = run.get("settings", {}).get("seed")
    if seed is not None and MasterKey.from_seed(seed).secret != key.secret:
        problems.append(f"the revealed key is not the key of the recorded seed {seed!r}")
    return key, problems


def settings_of(record: dict[str, Any], key: MasterKey) -> TournamentSettings:
    """The :class:`TournamentSettings` a ``run.json`` settings record
    describes, with ``key`` (read by :func:`arena.tournament.settings.tournament_from_json`:
    missing fields take the defaults ``run`` plays with).

    Raises:
        VerifyError: a setting of the wrong type or out of bounds.
    """
    try:
        return tournament_from_json(record, key)
    except SettingsError as exc:
        raise VerifyError(f"run.json: {exc}") from None


def check_hand(hand: HandJSON, dealt: Sequence[int], scores_before: Sequence[int]) -> str | None:
    """Replay one recorded hand from its dealt cards under the rules; the first
    difference from the record, or ``None`` when it all holds."""
    number = int(hand["hand_number"])
    if [mask_of_names(cards) for cards in hand["dealt"]] != list(dealt):
        return "dealt cards are not the key's deal (R2)"
    state = Hand.new(number, dealt)
    try:
        recorded = hand.get("passes")
        if recorded is not None:
            passes = [
                pass_mask(seat, [parse_card(c) for c in p]) for seat, p in enumerate(recorded)
            ]
            for seat, cards in enumerate(passes):
                state.check_pass(seat, cards)
            state.apply_passes(passes)
        for t, trick in enumerate(hand["tricks"], start=1):
            if state.turn != trick["leader"]:
                return f"trick {t}: led by seat {trick['leader']}, the rules say {state.turn}"
            done = None
            for name in trick["cards"]:
                card = parse_card(name)
                state.check_play(state.turn, card)
                done = state.play(card)
            if done is None or done.winner != trick["winner"] or done.points != trick["points"]:
                return f"trick {t}: winner or points differ from the rules (R9, R10)"
    except (IllegalMoveError, ValueError, KeyError, TypeError) as exc:
        return f"not playable under the rules: {exc}"
    if not state.is_over():
        return "the hand stops before its 13 tricks"
    points, moon = state.points()
    if list(state.taken_points) != list(hand["raw_points"]) or points != list(hand["points"]):
        return "points differ from the tricks (R10-R12)"
    if moon != hand.get("moon"):
        return "the moon differs from the tricks (R11)"
    if [a + b for a, b in zip(scores_before, points, strict=True)] != list(hand["scores"]):
        return "running scores do not add up"
    return None


def verify_folder(folder: Path) -> tuple[int, list[str]]:
    """Verify a finished tournament's folder; see the module docstring.

    Returns:
        ``(games checked, problems)``; no problems means it verifies.

    Raises:
        VerifyError: the folder cannot be verified at all.
    """
    run = _load(folder / "run.json")
    results = _load(folder / "results.json")
    key, problems = revealed_key(results, run)
    if problems:  # nothing else can be trusted
        return 0, problems
    try:
        recorded = RunSettings.from_json(run.get("settings", {}), key)
    except SettingsError as exc:
        raise VerifyError(f"run.json: {exc}") from None
    names = recorded.names
    try:
        records = read_journal(folder / "games.jsonl", names)
    except (OSError, ValueError) as exc:
        raise VerifyError(str(exc)) from None
    settings = recorded.tournament
    by_index = {r["game_index"]: r for r in records}
    if settings.format != "ladder":
        expected = ScheduleStream(names, settings)  # walked, not built
        if len(records) != len(expected):
            problems.append(f"the journal holds {len(records)} games, the schedule {len(expected)}")
        for spec in expected:
            rec = by_index.get(spec.game_index)
            if rec is None:
                problems.append(f"game {spec.game_id}: missing from the journal")
                continue
            if (rec["game_id"], list(rec["seats"]), rec["deal_key"]) != (
                spec.game_id,
                list(spec.seats),
                spec.deal_key,
            ):
                problems.append(f"game {rec['game_id']}: id, seats or deal key not the schedule's")
    elif len(records) != run.get("games_total"):
        problems.append(
            f"the journal holds {len(records)} games, run.json {run.get('games_total')}"
        )
    for rec in sorted(records, key=lambda r: r["game_index"]):
        gid = rec["game_id"]
        if settings.format == "ladder":
            table = rec.get("table")
            table_deals = ladder_deal_key(table) if isinstance(table, int) else None
            if rec["deal_key"] != table_deals or not str(gid).startswith(f"l{table}-k"):
                problems.append(f"game {gid}: deal key {rec['deal_key']!r} is not its table's")
        if list(rec.get("bot_seeds", [])) != list(key.bot_seeds(gid)):
            problems.append(f"game {gid}: bot seeds are not the key's")
        table_key = key.table_key(rec["deal_key"])
        problem = check_game_play(rec, table_key, settings.referee.max_tiebreak_hands, gid)
        if problem is not None:
            problems.append(problem)
    return len(records), problems


def check_game_play(
    rec: GameRecordJSON, table_key: bytes, max_tiebreak_hands: int, name: str
) -> str | None:
    """Replay a game record's hands from the deals of ``table_key`` under the
    rules (:func:`check_hand`), then its final scores (the hands' sum) and its
    end (R13, :func:`check_game_end`). The first problem as one line naming
    the game ``name`` (``game NAME hand N: ...``, ``game NAME: ...``), or
    ``None``. Used by ``verify``, the server's export check and the server's
    re-check of every record."""
    scores = [0, 0, 0, 0]
    for hand in rec["hands"]:
        number = int(hand["hand_number"])
        problem = check_hand(hand, table_deal(table_key, number), scores)
        if problem is not None:
            return f"game {name} hand {number}: {problem}"
        scores = list(hand["scores"])
    if list(rec["scores"]) != scores:
        return f"game {name}: final scores are not the hands' sum"
    end = check_game_end(rec, max_tiebreak_hands)
    return None if end is None else f"game {name}: {end}"


def check_game_end(rec: GameRecordJSON, max_tiebreak_hands: int) -> str | None:
    """Whether the game ends where R13 says, given its hands' points: after
    the hand where a total reaches the target with a single lowest total (or
    the tie-break cap), or after ``hands_limit`` hands; and its ranks are the
    totals' competition ranks. The first difference, or ``None``."""
    try:
        score = GameScore(rec["target_score"], rec["hands_limit"], max_tiebreak_hands)
    except ValueError as exc:
        return f"no game length: {exc}"
    for hand in rec["hands"]:
        if score.is_over():
            return f"hand {hand['hand_number']} is played after the game ended (R13)"
        score.add_hand(hand["points"])
    if not score.is_over():
        return "the game stops before its end (R13)"
    if score.ranks() != list(rec["ranks"]):
        return "ranks are not the totals' (R13)"
    return None


def describe_deal(key: MasterKey, deal_key: str, hand_number: int) -> list[list[str]]:
    """The four hands (card names, seat order) of hand ``hand_number`` under
    ``deal_key``: what anyone holding the revealed key can re-derive."""
    return [names_of(m) for m in table_deal(key.table_key(deal_key), hand_number)]
