"""``hearts-arena replay GAME --seat N``: ask a bot one recorded decision again.

The recorded game (a ``games.jsonl`` line) is played again through the real
:class:`~arena.game.referee.Referee` with its recorded deals, and every move
steered to the recorded one: the other three seats are
:class:`~arena.seats.stand_ins.ScriptedSeat` s playing their recorded cards, and the
replayed seat's bot is asked every request it was asked in the tournament,
but the referee goes on with the recorded answer (a recorded fault is
replayed as that fault, so the bot gets the same ``forfeit``). The messages
are rebuilt from the record with the rules engine; transcripts are not
needed. At the chosen decision the bot's answer is compared with the
recorded one and the game stops there.

GAME is ``PATH[#ID]``: ``PATH`` a ``games.jsonl`` file or a tournament folder
(holding ``games.jsonl`` and ``run.json``; a competition server's export or
a downloaded table too, with ``--bot``: the folder names no bot's command), ``ID`` the game's id
(``r1-t0-k2``) or its index in the schedule (``12``); a file of one game
needs no ``ID``.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from arena.core.cards import mask_of_names
from arena.core.rules import broken_play_rule
from arena.game.referee import (
    DealSource,
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
    handshake,
)
from arena.protocol.codec import error_excerpt
from arena.protocol.faults import Fault, FaultKind
from arena.protocol.records import GameRecordJSON, faults_of
from arena.report.runfile import RunFileError, load_run_file
from arena.sandbox.entrants import Entrant, EntrantError, entrant_from_record
from arena.sandbox.launcher import Launcher
from arena.seats.process import BotProcess, Reply
from arena.seats.stand_ins import Exchange, Message, RecordingSeat, ScriptedSeat


class ReplayError(ValueError):
    """A game reference or decision that cannot be replayed (one line)."""


@dataclass(frozen=True)
class Decision:
    """A decision of one seat: the pass of a hand (``trick`` is ``None``) or
    its play in a trick."""

    hand: int
    trick: int | None

    def describe(self) -> str:
        """``"hand 2 trick 5"`` or ``"hand 2 pass"``."""
        return f"hand {self.hand} " + (f"trick {self.trick}" if self.trick else "pass")


@dataclass
class ReplayResult:
    """What the bot answered at the decision, against the record.

    Attributes:
        request: the request message sent to the bot there.
        recorded: the move played in the game (a card, or three cards for a
            pass): the bot's answer, or the referee's default move after a fault.
        recorded_fault: the recorded fault at that decision (``"timeout: ..."``) or ``None``.
        recorded_answer: what the bot answered in the game: ``recorded``, the
            illegal move of an ``illegal`` fault, or ``None`` (no valid answer).
        answer: the bot's move now (legal or not), or ``None`` if it gave none.
        fault: its fault now (``"timeout: no reply within 1000 ms"``,
            ``"illegal: 2H is not in legal"``) or ``None``.
        elapsed: seconds it took to answer.
        transcript: every message of the game sent to the bot and answered,
            up to the decision (``{"sent": m}`` or ``{"id", "received": m}``,
            with ``t`` in seconds).
        stderr: what the bot wrote on stderr in the replayed game, up to the
            decision (its capped buffer's text; for a crash, waited for up to
            0.2 s after the bot exited).
    """

    request: Message
    recorded: Any
    recorded_fault: str | None
    recorded_answer: Any
    answer: Any
    fault: str | None
    elapsed: float
    transcript: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    @property
    def outcome_then(self) -> tuple[str, Any]:
        """The recorded outcome: see :func:`outcome`."""
        reason = self.recorded_fault.split(":", 1)[0] if self.recorded_fault else None
        return outcome(reason, self.recorded_answer)

    @property
    def outcome_now(self) -> tuple[str, Any]:
        """The outcome now: see :func:`outcome`."""
        reason = self.fault.split(":", 1)[0] if self.fault else None
        return outcome(reason, self.answer)

    @property
    def same(self) -> bool:
        """The bot does at the decision what it did in the game, judged the
        same way for every kind of outcome (:func:`outcome`): the same legal
        move (a pass: the same three cards in any order), the same illegal
        move, or a fault of the same kind (``malformed``, ``timeout``,
        ``crashed``; their details, which hold times and exit codes, may differ)."""
        return self.outcome_then == self.outcome_now


def outcome(reason: str | None, move: Any) -> tuple[str, Any]:
    """What a bot did at a decision, as a comparable value:
    ``("move", m)`` for a legal move, ``("illegal", m)`` for an illegal one
    (``m`` a card, or a pass's cards sorted), ``(reason, None)`` for the other
    faults (``malformed``, ``timeout``, ``crashed``)."""
    if isinstance(move, list):
        move = tuple(sorted(str(c) for c in move))
    if reason is None:
        return ("move", move)
    if reason == "illegal":
        return ("illegal", move)
    return (reason, None)


# -- finding the game -------------------------------------------------------------


def load_game(ref: str) -> tuple[GameRecordJSON, dict[str, Any] | None, Path]:
    """The record named by ``ref`` (``PATH[#ID]``), the tournament's
    ``run.json`` (``None`` if not beside it) and the ``games.jsonl`` path.

    Raises:
        ReplayError: no such file or game, or several games and no ``#ID``.
    """
    from arena.tournament.runner import read_journal

    path_text, sep, selector = ref.rpartition("#") if "#" in ref else (ref, "", "")
    path = Path(path_text)
    folder = path if path.is_dir() else path.parent
    games_file = path / "games.jsonl" if path.is_dir() else path
    if not games_file.is_file():
        raise ReplayError(f"no games file: {games_file}")
    try:
        records = read_journal(games_file)
    except (OSError, ValueError) as exc:
        raise ReplayError(str(exc)) from None
    if not records:
        raise ReplayError(f"{games_file} holds no game")
    if not sep or not selector:
        if len(records) != 1:
            ids = ", ".join(r["game_id"] for r in records[:5])
            raise ReplayError(
                f"{games_file} holds {len(records)} games: name one, as {path_text or ref}#ID "
                f"(a game id such as {records[0]['game_id']}, or an index); ids: {ids}, ..."
            )
        record = records[0]
    else:
        matches = [r for r in records if r["game_id"] == selector]
        if not matches and selector.isdigit():
            matches = [r for r in records if r["game_index"] == int(selector)]
        if not matches:
            raise ReplayError(f"{games_file} has no game {selector!r}")
        record = matches[-1]
    run_file = folder / "run.json"
    run_info = None
    if run_file.is_file():
        run_info = server_run_info(run_file)
        if run_info is None:
            try:
                run_info = load_run_file(run_file)
            except RunFileError as exc:
                raise ReplayError(str(exc)) from None
    return record, run_info, games_file


def server_run_info(path: Path) -> dict[str, Any] | None:
    """A competition server's ``run.json`` (format ``server``: ``hearts-arena
    export``'s, or a table's download), as JSON, or ``None`` for any other
    file. Its ``settings`` hold the referee's settings (``time_limit``,
    ``startup_time``, ``strikes``, ``grace``), as a tournament's do; it holds
    no bot's command (give ``--bot``: your own bot)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("format") == "server":
        return data
    return None


def seat_of(record: GameRecordJSON, text: str) -> int:
    """A seat given as ``0``..``3`` or as the entrant's name.

    Raises:
        ReplayError: neither.
    """
    if text.isdigit() and int(text) < 4:
        return int(text)
    if text in record["seats"]:
        return int(record["seats"].index(text))
    raise ReplayError(f"--seat {text!r}: give 0..3 or one of {', '.join(record['seats'])}")


def recorded_entrant(run_info: dict[str, Any] | None, name: str) -> Entrant | None:
    """The entrant ``name`` as the tournament's ``run.json`` recorded it."""
    if run_info is None:
        return None
    if run_info.get("format") == "server":
        raise ReplayError(
            f"a competition server's run folder holds no bot's command: give --bot "
            f"(your own bot, the one that played {name})"
        )
    for e in run_info["settings"]["entrants"]:
        if e["name"] == name:
            try:  # its recorded argv: the words are never joined and split again
                return entrant_from_record(e)
            except EntrantError as exc:
                raise ReplayError(f"run.json records {name!r}: {exc}; give --bot") from None
    return None


def choose_decision(
    record: GameRecordJSON, seat: int, hand: int | None, trick: int | None, pass_: bool
) -> Decision:
    """The decision to replay: ``--hand``/``--trick``/``--pass`` as given;
    with none of them the seat's first faulted decision (a crash too: the
    request at which the bot crashed), else its first decision of hand 1;
    ``--hand`` alone means that hand's pass, or trick 1 on a hold hand.

    The request at which a bot crashed, or was struck out, is itself
    replayable (the bot is asked it again, so a fixed bot can show its
    answer there); only decisions after it are not.

    Raises:
        ReplayError: a hand or trick the game does not have, a pass asked
            on a hold hand, or a decision the seat's bot was never asked
            (it crashed or was struck out before it, or failed its handshake).
    """
    hands = record["hands"]
    if hand is None and trick is None and not pass_:
        for f in faults_of(record, seat):
            if f.request in ("pass", "play") and f.hand_number is not None:
                hand, trick = f.hand_number, f.trick_number
                pass_ = f.request == "pass"
                break
    hand = hand or 1
    if hand > len(hands):
        raise ReplayError(f"the game has {len(hands)} hands, not {hand}")
    has_pass = hands[hand - 1]["passes"] is not None
    if pass_ and not has_pass:
        raise ReplayError(f"hand {hand} is a hold hand: it has no pass")
    if trick is None and not pass_:
        pass_ = has_pass
        trick = None if pass_ else 1
    if trick is not None and not 1 <= trick <= len(hands[hand - 1]["tricks"]):
        raise ReplayError(f"hand {hand} has tricks 1..{len(hands[hand - 1]['tricks'])}")
    decision = Decision(hand, None if pass_ else trick)
    here = _position(hand, decision.trick)
    for f in faults_of(record, seat):
        if f.request == "hello":
            raise ReplayError(f"seat {seat}'s bot failed its handshake: {f.detail}")
        at = _position(f.hand_number or 0, f.trick_number)
        if f.reason is FaultKind.CRASHED and at < here:
            raise ReplayError(
                f"seat {seat}'s bot crashed at {_fault_place(f)}, before "
                f"{decision.describe()}: {f.detail} (replay hand {f.hand_number}"
                + (f" trick {f.trick_number}" if f.trick_number else " --pass")
                + " to ask it that request again)"
            )
        if f.reason is FaultKind.TIMEOUT and _STRUCK_OUT in f.detail and at < here:
            raise ReplayError(
                f"seat {seat}'s bot was struck out at {_fault_place(f)}, "
                f"before {decision.describe()}"
            )
    return decision


def _position(hand: int, trick: int | None) -> tuple[int, int]:
    """A decision's place in the game's order: a hand's pass (trick ``None``)
    comes before its trick 1."""
    return (hand, trick or 0)


def _fault_place(fault: Fault) -> str:
    place = f"hand {fault.hand_number}"
    return place + (f" trick {fault.trick_number}" if fault.trick_number else " pass")


def game_spec(record: GameRecordJSON) -> GameSpec:
    """The :class:`GameSpec` a record was played from (without its table
    key: the deals come from the record, :func:`recorded_deals`)."""
    return GameSpec.from_json(record)


# -- steering the game along the record -------------------------------------------


def recorded_deals(record: GameRecordJSON) -> DealSource:
    """The referee's :data:`~arena.game.referee.DealSource` for ``record``:
    each hand's recorded deal seed and dealt cards."""

    def deal(hand_number: int) -> tuple[str, tuple[int, int, int, int]]:
        hand = record["hands"][hand_number - 1]
        m = [mask_of_names(cards) for cards in hand["dealt"]]
        return hand["deal_seed"], (m[0], m[1], m[2], m[3])

    return deal


def recorded_card(record: GameRecordJSON, seat: int, hand: int, trick: int) -> str:
    """The card ``seat`` played in ``trick`` of ``hand``."""
    t = record["hands"][hand - 1]["tricks"][trick - 1]
    return str(t["cards"][(seat - t["leader"]) % 4])


def _recorded_fault(
    record: GameRecordJSON, seat: int, kind: str, hand: int, trick: int | None
) -> Fault | None:
    for f in faults_of(record, seat):
        if f.request == kind and f.hand_number == hand and f.trick_number == trick:
            return f
    return None


def _recorded_move(record: GameRecordJSON, seat: int, ex: Exchange) -> Any:
    hand = ex.hand or 0
    if ex.kind == "pass":
        passes = record["hands"][hand - 1]["passes"]
        return list(passes[seat]) if passes is not None else None
    return recorded_card(record, seat, hand, ex.trick or 0)


async def replay_decision(
    record: GameRecordJSON,
    seat: int,
    decision: Decision,
    entrant: Entrant,
    launcher: Launcher,
    settings: RefereeSettings,
) -> ReplayResult:
    """Start ``entrant``'s bot, replay ``record`` for ``seat`` up to
    ``decision`` and return what it answered there. Runs inside Trio.

    Raises:
        ReplayError: the bot could not be started or failed its handshake,
            or it was never asked the decision.
    """
    spec = launcher.spec(entrant)
    result: list[ReplayResult] = []
    taken = ""
    async with trio.open_nursery() as nursery:
        try:
            bot = await BotProcess.start(spec, nursery)
        except OSError as exc:  # BotProcess.start released the spec
            raise ReplayError(f"could not start {spec.argv[0]!r}: {exc.strerror or exc}") from None
        try:
            recorder = RecordingSeat(bot)
            fault = await handshake(recorder, seat, settings.startup_time)
            if fault is not None:
                raise ReplayError(f"the bot failed its handshake: {fault.reason}: {fault.detail}")
            bot.stats.transcript = []  # the referee keeps it from game_start on

            def steer(ex: Exchange, reply: Reply) -> Reply | None:
                at = Decision(ex.hand or 0, ex.trick if ex.kind == "play" else None)
                recorded = _recorded_move(record, seat, ex)
                rf = _recorded_fault(record, seat, ex.kind, at.hand, at.trick)
                if at == decision:
                    answer, fault = None, f"{ex.fault}: {ex.detail}" if ex.fault else None
                    if ex.reply is not None:
                        answer = ex.reply["cards"] if ex.kind == "pass" else ex.reply["card"]
                        why = illegal_reason(ex.request, answer, seat)
                        fault = f"illegal: {why}" if why else None
                    then: Any = recorded
                    if rf is not None:
                        then = recorded_illegal_move(rf)
                    result.append(
                        ReplayResult(
                            request=ex.request,
                            recorded=recorded,
                            recorded_fault=f"{rf.reason}: {rf.detail}" if rf else None,
                            recorded_answer=then,
                            answer=answer,
                            fault=fault,
                            elapsed=ex.elapsed,
                            transcript=list(bot.stats.transcript or []),
                        )
                    )
                    return None  # the referee judges it; the stop hook ends the game then
                if rf is not None:
                    return _faulted_reply(ex, rf, reply.request_id)
                fields = {"cards": recorded} if ex.kind == "pass" else {"card": recorded}
                message = {"type": ex.kind, "id": reply.request_id, **fields}
                return Reply(message, None, "", ex.elapsed, reply.request_id)

            recorder.override = steer
            seats: list[SeatSetup] = []
            for s in range(4):
                if s == seat:
                    seats.append(SeatSetup(record["seats"][s], recorder))
                    continue
                other = _other_seat(record, s)
                seats.append(SeatSetup(record["seats"][s], other))
            referee = Referee(
                game_spec(record),
                seats,
                settings,
                deals=recorded_deals(record),
                stop=lambda _hand, _trick: bool(result),
            )
            await referee.play()
            taken = referee.record.stderr[seat]  # the game's, taken by the referee at its end
        finally:
            await bot.close(settings.grace)  # the bot's last words are read by then
            nursery.cancel_scope.cancel()
        if result:
            result[0].stderr = taken + bot.stderr.text()
    if not result:
        raise ReplayError(
            f"the bot of seat {seat} was not asked {decision.describe()} "
            "(it was played by default moves by then)"
        )
    return result[0]


_STRUCK_OUT = "; struck out after"


def recorded_illegal_move(fault: Fault) -> str | list[str] | None:
    """The move of a recorded ``illegal`` fault (a card, or a pass's cards),
    or ``None`` for another reason: the fault's ``answer`` field (for records
    older than that field, :meth:`Fault.from_json` reads it back)."""
    if fault.reason is not FaultKind.ILLEGAL or fault.answer is None:
        return None
    return list(fault.answer) if isinstance(fault.answer, list) else fault.answer


def illegal_reason(request: Message, answer: Any, seat: int) -> str | None:
    """Why a schema-valid ``answer`` of ``seat`` to ``request`` is illegal, in
    the referee's words and with its rule id (a pass: R3, three distinct
    cards of the hand; a play: R2, a card not held, else the rule of
    :func:`~arena.core.rules.broken_play_rule`), or ``None`` when it is legal.
    Example: ``"played 2C: seat 3: does not hold 2C (R2); legal: 5C 6C"``."""
    if request["type"] == "pass":
        shown = f"pass {' '.join(answer)}: seat {seat}:"
        if len(answer) != 3:
            return f"{shown} a pass is three distinct cards, got {len(answer)} cards (R3)"
        if len(set(answer)) != 3:
            return f"{shown} a pass is three distinct cards, got {len(set(answer))} (R3)"
        foreign = sorted({c for c in answer if c not in request["hand"]}, key=_card_order)
        if foreign:
            return f"{shown} passes cards it does not hold: {' '.join(foreign)} (R3)"
        return None
    if answer in request["legal"]:
        return None
    legal = " ".join(request["legal"])
    if answer not in request["hand"]:
        return f"played {answer}: seat {seat}: does not hold {answer} (R2); legal: {legal}"
    trick = request["trick"]
    led = trick[0]["card"][-1] if trick else None
    holds_led = led is not None and any(c[-1] == led for c in request["hand"])
    rule = broken_play_rule(not trick, request["trick_number"], holds_led)
    return f"played {answer}: seat {seat}: may not play {answer} ({rule}); legal: {legal}"


def _card_order(name: str) -> int:
    """A card's place in the protocol's sort order (suit C, D, S, H, then rank)."""
    return mask_of_names([name]).bit_length()


def _faulted_reply(ex: Exchange, fault: Fault, rid: int) -> Reply:
    """The reply that makes the referee record ``fault`` again and send the
    same ``forfeit``: for an illegal move the move itself, else the fault."""
    move = recorded_illegal_move(fault)
    if move is not None:
        field_ = {"cards": move} if ex.kind == "pass" else {"card": move}
        return Reply({"type": ex.kind, "id": rid, **field_}, None, "", ex.elapsed, rid)
    # The referee adds the strike-out note to the fault, not to the forfeit.
    detail = fault.detail.split(_STRUCK_OUT, 1)[0]
    return Reply(None, fault.reason, detail, ex.elapsed, rid)


def _other_seat(record: GameRecordJSON, seat: int) -> ScriptedSeat:
    passes = {
        h["hand_number"]: h["passes"][seat] for h in record["hands"] if h["passes"] is not None
    }

    def play(request: Message) -> str:
        return recorded_card(record, seat, request["hand_number"], request["trick_number"])

    return ScriptedSeat(record["seats"][seat], passes, play)


# -- the command --------------------------------------------------------------------


def _cards(value: Any) -> str:
    if value is None:
        return "-"
    return " ".join(value) if isinstance(value, list) else str(value)


def format_result(
    record: GameRecordJSON, seat: int, decision: Decision, entrant: Entrant, r: ReplayResult
) -> str:
    """The text ``replay`` prints (without ``--verbose``'s transcript)."""
    req = r.request
    lines = [
        f"game {record['game_id']} (index {record['game_index']}), seat {seat} "
        f"({record['seats'][seat]}), {decision.describe()}",
        f"bot: {entrant.name} ({shlex.join(entrant.argv)})",
    ]
    if decision.trick is None:
        lines.append(f"pass {req['direction']} to seat {req['to']}; hand: {_cards(req['hand'])}")
    else:
        trick = " ".join(f"{p['seat']}:{p['card']}" for p in req["trick"]) or "(you lead)"
        broken = "broken" if req["hearts_broken"] else "not broken"
        lines.append(f"trick so far: {trick}; hearts {broken}")
        lines.append(f"hand:  {_cards(req['hand'])}")
        lines.append(f"legal: {_cards(req['legal'])}")
    if r.recorded_fault:
        lines.append(f"played:   {_cards(r.recorded)}   (the referee's default move after a fault)")
        lines.append(f"recorded: {_cards(r.recorded_answer)}   ({r.recorded_fault})")
    else:
        lines.append(f"recorded: {_cards(r.recorded)}")
    if r.answer is None:
        lines.append(f"now:      fault: {r.fault}")
    elif r.fault is not None:
        lines.append(f"now:      {_cards(r.answer)}   ({r.fault}; {r.elapsed * 1000:.1f} ms)")
    else:
        lines.append(f"now:      {_cards(r.answer)}   ({r.elapsed * 1000:.1f} ms)")
    lines += _crash_lines("stderr then", r.recorded_fault, (record.get("stderr") or [""] * 4)[seat])
    lines += _crash_lines("stderr now", r.fault, r.stderr)
    lines.append(verdict_line(r))
    return "\n".join(lines)


def _crash_lines(title: str, fault: str | None, stderr: str) -> list[str]:
    """For a crash, the start and the end of the error in the bot's stderr
    (:func:`arena.protocol.codec.error_excerpt`), indented under ``title``;
    else nothing."""
    if not fault or not fault.startswith("crashed") or not stderr.strip():
        return []
    return [f"{title}:", *(f"  {line}" for line in error_excerpt(stderr))]


def verdict_line(r: ReplayResult) -> str:
    """The last line of ``replay``'s output: ``same as recorded`` or
    ``DIFFERENT from the record``, with what changed when a fault came or went."""
    if r.same:
        kind = r.outcome_now[0]
        return "same as recorded" + ("" if kind == "move" else f" (the same {kind} fault)")
    then, now = r.outcome_then[0], r.outcome_now[0]
    if then != "move" and now == "move":
        return f"DIFFERENT from the record: the recorded {then} fault is gone (a legal move now)"
    if then == "move" and now != "move":
        return f"DIFFERENT from the record: a {now} fault now, a legal move then"
    if then != now:
        return f"DIFFERENT from the record: a {now} fault now, a {then} fault then"
    return "DIFFERENT from the record"


def recorded_settings(
    run_info: dict[str, Any] | None, time_limit: float | None, startup_time: float | None
) -> RefereeSettings:
    """The referee's settings to replay a game with: the tournament's as
    ``run.json`` recorded them, ``time_limit`` and ``startup_time`` (seconds)
    instead when given, :class:`RefereeSettings`' defaults for what neither gives."""
    recorded = (run_info or {}).get("settings", {})
    default = RefereeSettings()
    return RefereeSettings(
        time_limit=time_limit or recorded.get("time_limit", default.time_limit),
        startup_time=startup_time or recorded.get("startup_time", default.startup_time),
        strikes=recorded.get("strikes", default.strikes),
        grace=recorded.get("grace", default.grace),
    )
