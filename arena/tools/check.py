"""``hearts-arena check BOT``: a conformance checker for one bot.

The bot is started alone, exactly as a tournament starts it (the same
:class:`~arena.sandbox.launcher.Launcher`, user, limits and sandbox), and driven
through scripted scenarios (``arena/tools/scenarios/*.toml``, described in the
README there). In each scenario it plays fixed-length games at one seat of
the real :class:`~arena.game.referee.Referee` against three
:class:`~arena.seats.stand_ins.ScriptedSeat` opponents; the deals and the opponents'
moves are chosen so that an awkward position of the rules is reached whatever
the bot does. Every request is judged as in a tournament; each check reports
passed or failed with the reason.

Typical use::

    result = run_checks(entrant, load_scenarios(), CheckSettings(), Launcher())
    print(format_report(result)); sys.exit(0 if result.passed else 5)
"""

from __future__ import annotations

import functools
import json
import re
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from arena.core.cards import CARD_NAMES, SUITS, mask_of_names
from arena.core.keys import MasterKey
from arena.core.rules import deal_name, deal_with, table_deal
from arena.game.referee import (
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
    handshake,
)
from arena.protocol.codec import error_excerpt
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.seats.process import BotProcess
from arena.seats.stand_ins import Exchange, Message, RecordingSeat, ScriptedSeat, preference_play

#: The scenarios shipped with the package.
SCENARIO_DIR: Final = Path(__file__).resolve().parent / "scenarios"

_SCENARIO_KEYS: Final = frozenset(
    {"about", "seat", "hands", "games", "seed", "checks", "deals", "passes", "plays"}
)
_CHECK_KEYS: Final = frozenset({"name", "about", "at", "expect"})
_AT_KEYS: Final = frozenset({"hello", "bye", "game", "hand", "trick", "pass"})
#: Expectation keys and the TOML type of their value.
EXPECT_KEYS: Final = {
    "direction": str,
    "legal": list,
    "legal_count": int,
    "legal_suits": str,
    "legal_has": str,
    "legal_lacks": str,
    "legal_excludes": list,
    "hand_suits": str,
    "holds": str,
    "void": str,
    "leading": bool,
    "hearts_broken": bool,
    "no_pass": bool,
}
_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class At:
    """Where a check's position is (see the scenarios README)."""

    hello: bool = False
    bye: bool = False
    game: int = 1
    hand: int | None = None
    trick: int | None = None
    pass_: bool = False

    def matches(self, ex: Exchange) -> bool:
        """Whether the request ``ex`` is this position."""
        if self.hello:
            return ex.kind == "hello"
        if self.bye or ex.kind == "hello" or ex.game != self.game:
            return False
        if self.hand is None:
            return True
        if ex.hand != self.hand:
            return False
        if self.pass_:
            return ex.kind == "pass"
        return ex.kind == "play" and ex.trick == self.trick

    def describe(self) -> str:
        """The position in words, e.g. ``"game 1 hand 2 trick 3"``."""
        if self.hello:
            return "the handshake"
        if self.bye:
            return "bye"
        text = f"game {self.game}"
        if self.hand is not None:
            text += f" hand {self.hand}"
            text += " pass" if self.pass_ else f" trick {self.trick}"
        return text


@dataclass(frozen=True)
class CheckSpec:
    """One check of a scenario: its name, what it is about, its position and
    the expectations on the request sent there."""

    name: str
    about: str
    at: At
    expect: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    """A scenario file, validated (see the scenarios README for the keys).

    ``deals``, ``passes`` and ``plays`` map hand number -> seat -> cards.
    """

    name: str
    path: Path
    about: str
    seat: int
    hands: int
    games: int
    seed: str
    checks: tuple[CheckSpec, ...]
    deals: dict[int, dict[int, list[str]]] = field(default_factory=dict)
    passes: dict[int, dict[int, list[str]]] = field(default_factory=dict)
    plays: dict[int, dict[int, list[str]]] = field(default_factory=dict)

    def key(self) -> MasterKey:
        """The scenario's key: public, from its seed text (``check:SEED``)."""
        return MasterKey.from_seed(f"check:{self.seed}")

    def deal(self, game: int, hand: int) -> tuple[str, tuple[int, int, int, int]]:
        """The deal's name and the four dealt card masks of a hand of ``game``.

        Seats listed in ``deals`` get their cards; the other cards, in the order
        of the deal the tournament algorithm makes for this hand, fill the
        other seats up to 13 cards in seat order (:func:`arena.core.rules.deal_with`
        under the scenario's table key; with no cards given, the tournament's
        own :func:`arena.core.rules.table_deal`).

        Raises:
            ValueError: the scenario gives a card twice or a seat over 13 cards (R2).
        """
        label = deal_name(self.deal_key(game), hand)
        table_key = self.key().table_key(str(game))
        given = self.deals.get(hand)
        if not given:
            return label, table_deal(table_key, hand)
        fixed = [mask_of_names(given.get(s, [])) for s in range(4)]
        return label, deal_with(fixed, str(hand), table_key)

    def deal_key(self, game: int) -> str:
        """The public name of ``game``'s deals: ``check:SEED:GAME``."""
        return f"check:{self.seed}:{game}"


# -- loading ------------------------------------------------------------------


def _card_list(value: Any, where: str, *, most: int = 13) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise ScenarioError(f"{where}: must be a list of card names")
    bad = [c for c in value if c not in CARD_NAMES]
    if bad:
        raise ScenarioError(f"{where}: not a card: {bad[0]!r}")
    if len(set(value)) != len(value):
        raise ScenarioError(f"{where}: a card is listed twice")
    if len(value) > most:
        raise ScenarioError(f"{where}: at most {most} cards, got {len(value)}")
    return list(value)


def _int(value: Any, where: str, low: int, high: int | None = None) -> int:
    if type(value) is not int or value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f"{low} or more"
        raise ScenarioError(f"{where}: must be an integer {span}, got {value!r}")
    return value


def _by_hand(data: Any, key: str, where: str, hands: int) -> dict[int, dict[int, list[str]]]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: key '{key}': must be a table of hands")
    out: dict[int, dict[int, list[str]]] = {}
    for hand_key, seats in data.items():
        hand = _int(int(hand_key) if str(hand_key).isdigit() else hand_key,
                    f"{where}: key '{key}.{hand_key}'", 1, hands)  # fmt: skip
        if not isinstance(seats, dict):
            raise ScenarioError(f"{where}: key '{key}.{hand_key}': must be a table of seats")
        out[hand] = {}
        for seat_key, cards in seats.items():
            name = f"{where}: key '{key}.{hand_key}.{seat_key}'"
            seat = _int(int(seat_key) if str(seat_key).isdigit() else seat_key, name, 0, 3)
            out[hand][seat] = _card_list(cards, name, most=13 if key == "deals" else 52)
    return out


def _at(data: Any, where: str, games: int, hands: int) -> At:
    if not isinstance(data, dict) or not data:
        raise ScenarioError(f"{where}: must be a table such as {{ hand = 1, trick = 2 }}")
    unknown = set(data) - _AT_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    if data.get("hello") or data.get("bye"):
        if (
            len(data) != 1
            or data.get("hello", True) is not True
            or data.get("bye", True) is not True
        ):
            raise ScenarioError(f"{where}: hello = true and bye = true stand alone")
        return At(hello=bool(data.get("hello")), bye=bool(data.get("bye")))
    game = _int(data.get("game", 1), f"{where}.game", 1, games)
    if "hand" not in data:
        if set(data) - {"game"}:
            raise ScenarioError(f"{where}: trick and pass need a hand")
        return At(game=game)
    hand = _int(data["hand"], f"{where}.hand", 1, hands)
    if data.get("pass"):
        if "trick" in data:
            raise ScenarioError(f"{where}: give either pass = true or a trick")
        return At(game=game, hand=hand, pass_=True)
    trick = _int(data.get("trick"), f"{where}.trick", 1, 13)
    return At(game=game, hand=hand, trick=trick)


def load_scenario(path: Path) -> Scenario:
    """Read and validate one scenario file.

    Raises:
        ScenarioError: the file is not TOML, or a key is unknown, missing or
            has a bad value; the message names the file and the key.
    """
    where = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    unknown = set(data) - _SCENARIO_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    stem = re.sub(r"^\d+[_-]", "", path.stem).replace("_", "-")
    seat = _int(data.get("seat"), f"{where}: key 'seat'", 0, 3)
    hands = _int(data.get("hands"), f"{where}: key 'hands'", 1, 50)
    games = _int(data.get("games", 1), f"{where}: key 'games'", 1, 10)
    seed = data.get("seed", stem)
    about = data.get("about", "")
    if not isinstance(seed, str) or not isinstance(about, str):
        raise ScenarioError(f"{where}: keys 'seed' and 'about' must be text")
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ScenarioError(f"{where}: key 'checks': give at least one [[checks]] table")
    checks = []
    for i, raw in enumerate(raw_checks):
        at_where = f"{where}: key 'checks[{i}]'"
        if not isinstance(raw, dict):
            raise ScenarioError(f"{at_where}: must be a table")
        unknown = set(raw) - _CHECK_KEYS
        if unknown:
            raise ScenarioError(f"{at_where}: unknown key '{sorted(unknown)[0]}'")
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ScenarioError(
                f"{at_where}.name: lower-case letters, digits and '-', got {name!r}"
            )
        expect = raw.get("expect", {})
        if not isinstance(expect, dict):
            raise ScenarioError(f"{at_where}.expect: must be a table")
        for key, value in expect.items():
            kind = EXPECT_KEYS.get(key)
            if kind is None:
                raise ScenarioError(f"{at_where}.expect: unknown key '{key}'")
            if type(value) is not kind:
                raise ScenarioError(f"{at_where}.expect.{key}: must be {kind.__name__}")
        checks.append(
            CheckSpec(
                name,
                str(raw.get("about", "")),
                _at(raw.get("at"), f"{at_where}.at", games, hands),
                dict(expect),
            )
        )
    if len({c.name for c in checks}) != len(checks):
        raise ScenarioError(f"{where}: two checks have one name")
    scenario = Scenario(
        name=stem,
        path=path,
        about=about,
        seat=seat,
        hands=hands,
        games=games,
        seed=seed,
        checks=tuple(checks),
        deals=_by_hand(data.get("deals"), "deals", where, hands),
        passes=_by_hand(data.get("passes"), "passes", where, hands),
        plays=_by_hand(data.get("plays"), "plays", where, hands),
    )
    for hand, seats in scenario.deals.items():
        cards = [c for s in seats.values() for c in s]
        if len(set(cards)) != len(cards):
            raise ScenarioError(f"{where}: key 'deals.{hand}': a card is dealt twice")
    for hand, seats in scenario.passes.items():
        for s, cards in seats.items():
            if len(cards) != 3:
                raise ScenarioError(f"{where}: key 'passes.{hand}.{s}': a pass is three cards")
            if s == seat:
                raise ScenarioError(f"{where}: key 'passes.{hand}.{s}': that is the bot's seat")
    for hand, seats in scenario.plays.items():
        if seat in seats:
            raise ScenarioError(f"{where}: key 'plays.{hand}.{seat}': that is the bot's seat")
    return scenario


def load_scenarios(extra: Iterable[Path] = ()) -> list[Scenario]:
    """The shipped scenarios, then those of each folder in ``extra``, each
    folder's ``*.toml`` files in name order.

    Raises:
        ScenarioError: a bad file, a missing folder, or two checks with one name.
    """
    files = sorted(SCENARIO_DIR.glob("*.toml"))
    for folder in extra:
        if not folder.is_dir():
            raise ScenarioError(f"scenario folder not found: {folder}")
        files.extend(sorted(folder.glob("*.toml")))
    scenarios = [load_scenario(f) for f in files]
    seen: dict[str, str] = {}
    for scn in scenarios:
        for check in scn.checks:
            if check.name in seen:
                raise ScenarioError(
                    f"{scn.path.name}: check {check.name!r} is also in {seen[check.name]}"
                )
            seen[check.name] = scn.path.name
    return scenarios


# -- expectations ---------------------------------------------------------------


def _suits(cards: Iterable[str]) -> set[str]:
    return {c[1] for c in cards}


def expectation_problems(
    expect: dict[str, Any], request: Message, passed_this_hand: bool
) -> list[str]:
    """What in ``request`` (the request sent at a check's position) differs
    from the scenario's ``expect`` table; empty when all hold."""
    legal: list[str] = request.get("legal", [])
    hand: list[str] = request.get("hand", [])
    actual: dict[str, Any] = {
        "direction": request.get("direction"),
        "legal": legal,
        "legal_count": len(legal),
        "leading": not request.get("trick"),
        "hearts_broken": request.get("hearts_broken"),
        "no_pass": not passed_this_hand,
    }
    problems = []
    for key, want in expect.items():
        if key in actual:
            ok = actual[key] == want
            got: Any = actual[key]
        elif key == "legal_suits":
            got = "".join(s for s in SUITS if s in _suits(legal))
            ok = _suits(legal) == set(want)
        elif key == "hand_suits":
            got = "".join(s for s in SUITS if s in _suits(hand))
            ok = _suits(hand) == set(want)
        elif key in ("legal_has", "holds"):
            pool = legal if key == "legal_has" else hand
            got = "".join(s for s in SUITS if s in _suits(pool))
            ok = set(want) <= _suits(pool)
        elif key in ("legal_lacks", "void"):
            pool = legal if key == "legal_lacks" else hand
            got = "".join(s for s in SUITS if s in _suits(pool))
            ok = not set(want) & _suits(pool)
        else:  # legal_excludes
            got = [c for c in want if c in legal]
            ok = not got
        if not ok:
            problems.append(f"{key} should be {want!r}, got {got!r}")
    return problems


# -- running ------------------------------------------------------------------


#: The referee's defaults, the one home of the time limits and strikes.
_REFEREE_DEFAULTS: Final = RefereeSettings()


@dataclass(frozen=True)
class CheckSettings:
    """How the checker runs a bot. Times are in seconds; the defaults are
    :class:`RefereeSettings`' (a tournament's).

    Attributes:
        time_limit: time per decision (``pass`` and ``play``), as ``run --time-limit``.
        startup_time: time for the ``hello`` handshake.
        strikes: consecutive timeouts after which the bot is struck out of a game.
        grace: seconds the bot has to exit after ``bye``.
    """

    time_limit: float = _REFEREE_DEFAULTS.time_limit
    startup_time: float = _REFEREE_DEFAULTS.startup_time
    strikes: int = _REFEREE_DEFAULTS.strikes
    grace: float = _REFEREE_DEFAULTS.grace

    def referee(self) -> RefereeSettings:
        """The referee settings of the checker's games."""
        return RefereeSettings(
            time_limit=self.time_limit,
            startup_time=self.startup_time,
            strikes=self.strikes,
            grace=self.grace,
        )


@dataclass
class CheckResult:
    """The outcome of one check.

    Attributes:
        name: the check's name.
        scenario: the scenario's name.
        about: what the check is about.
        passed: whether it passed.
        reason: one line: why it failed, or what was seen when it passed.
        details: more lines for a failure (the request sent, the bot's
            stderr), or empty.
        time: seconds the bot spent answering the check's requests.
        requests: number of requests it judged.
        skipped: not run at all (``--only``).
        exchanges: the requests it judged, as asked and answered (``-v`` shows them).
    """

    name: str
    scenario: str
    about: str
    passed: bool
    reason: str
    details: str = ""
    time: float = 0.0
    requests: int = 0
    skipped: bool = False
    exchanges: list[Exchange] = field(default_factory=list)


@dataclass
class ScenarioRun:
    """What happened in one scenario: the requests, the bye and why it stopped."""

    scenario: Scenario
    exchanges: list[Exchange] = field(default_factory=list)
    stopped: str | None = None  # why later positions were not reached
    hello_timeout: bool = False
    hello_failed: bool = False  # any handshake fault: the later scenarios are not run
    bye: tuple[bool, str, float] | None = None  # (passed, text, seconds)
    stderr: list[str] = field(default_factory=list)


@dataclass
class CheckReport:
    """The outcome of ``check``: one :class:`CheckResult` per check and the
    slowest reply (seconds, and where)."""

    entrant: Entrant
    settings: CheckSettings
    results: list[CheckResult]
    slowest: tuple[float, str] | None
    duration: float

    @property
    def passed(self) -> bool:
        """True when every check that ran passed."""
        return all(r.passed for r in self.results if not r.skipped)


def _opponent(scenario: Scenario, seat: int) -> ScriptedSeat:
    passes = {h: cards[seat] for h, cards in scenario.passes.items() if seat in cards}

    def play(request: Message) -> str:
        prefs = scenario.plays.get(request["hand_number"], {}).get(seat, [])
        return preference_play(prefs, request["legal"])

    return ScriptedSeat(f"checker-{seat}", passes, play)


def game_spec(scenario: Scenario, game: int, entrant_name: str) -> GameSpec:
    """The :class:`GameSpec` of game ``game`` (1-based) of a scenario."""
    seats = [f"checker-{s}" for s in range(4)]
    seats[scenario.seat] = entrant_name
    return GameSpec(
        game_index=game - 1,
        game_id=f"check-{scenario.name}-{game}",
        round=game,
        table=0,
        rotation=0,
        seats=(seats[0], seats[1], seats[2], seats[3]),
        deal_key=scenario.deal_key(game),
        bot_seeds=scenario.key().bot_seeds(f"check-{scenario.name}-{game}"),
        target_score=None,
        hands=scenario.hands,
        table_key=scenario.key().table_key(str(game)),
    )


async def play_scenario(
    scenario: Scenario,
    seat: SeatSetup,
    settings: CheckSettings,
    on_game: Any = None,
) -> ScenarioRun:
    """Play a scenario's games with ``seat.bot`` (a :class:`RecordingSeat`, or
    any seat object) at the scenario's seat, after its handshake. Returns the
    run without the bye. ``on_game(record)`` is called after each game.

    Raises:
        ScenarioError: a scripted seat faulted (the scenario is wrong).
    """
    run = ScenarioRun(scenario)
    recorder = seat.bot
    for game in range(1, scenario.games + 1):
        if isinstance(recorder, RecordingSeat):
            recorder.game = game
        spec = game_spec(scenario, game, seat.entrant)
        setups = [SeatSetup(f"checker-{s}", _opponent(scenario, s)) for s in range(4)]
        setups[scenario.seat] = seat
        referee = Referee(
            spec, setups, settings.referee(), deals=functools.partial(scenario.deal, game)
        )
        record = await referee.play()
        if on_game is not None:
            on_game(record)
        for fault in record.faults:
            if fault.seat != scenario.seat:
                raise ScenarioError(
                    f"{scenario.path.name}: scripted seat {fault.seat} faulted: {fault.detail}"
                )
        if isinstance(recorder, RecordingSeat):
            _apply_faults(recorder.exchanges, game, record.faults)
            recorder.games_played.add(spec.deal_key)
        run.stderr.append(record.stderr[scenario.seat])
        crash = next((f for f in record.faults if f.reason == "crashed"), None)
        if crash is not None:
            run.stopped = f"the bot crashed in {_fault_where(crash, game)}: {crash.detail}"
            break
        if scenario.seat in record.struck_out:
            run.stopped = (
                f"the bot was struck out of game {game} after {settings.strikes} timeouts in a row"
            )
            break
    return run


def _fault_where(fault: Any, game: int) -> str:
    parts = [f"game {game}"]
    if fault.hand_number is not None:
        parts.append(f"hand {fault.hand_number}")
    if fault.trick_number is not None:
        parts.append(f"trick {fault.trick_number}")
    return " ".join(parts)


def _apply_faults(exchanges: list[Exchange], game: int, faults: Sequence[Any]) -> None:
    """Mark the exchanges of ``game`` that the referee judged illegal."""
    by_id = {ex.request_id: ex for ex in exchanges if ex.game == game}
    for fault in faults:
        ex = by_id.get(fault.request_id) if fault.request_id is not None else None
        if ex is not None and ex.fault is None:
            ex.fault = fault.reason
            ex.detail = fault.detail


async def _run_one(
    scenario: Scenario,
    entrant: Entrant,
    launcher: Launcher,
    settings: CheckSettings,
    nursery: trio.Nursery,
) -> ScenarioRun:
    spec = launcher.spec(entrant)
    try:
        bot = await BotProcess.start(spec, nursery)
    except OSError as exc:  # BotProcess.start released the spec
        run = ScenarioRun(scenario)
        run.stopped = f"could not start {spec.argv[0]!r}: {exc.strerror or exc}"
        return run
    recorder = RecordingSeat(bot)
    run = ScenarioRun(scenario)
    try:
        fault = await handshake(recorder, scenario.seat, settings.startup_time)
        if fault is not None:
            run.exchanges = recorder.exchanges
            run.stopped = f"the handshake failed: {fault.reason}: {fault.detail}"
            run.hello_timeout = fault.reason == "timeout"
            run.hello_failed = True
            run.stderr.append(bot.stderr.take())
            return run
        setup = SeatSetup(entrant.name, recorder)
        played = await play_scenario(scenario, setup, settings)
        run.stopped, run.stderr = played.stopped, played.stderr
        run.exchanges = recorder.exchanges
        if any(c.at.bye for c in scenario.checks) and run.stopped is None:
            run.bye = await _bye(bot, settings.grace)
            run.stderr.append(bot.stderr.take())
    finally:
        run.exchanges = recorder.exchanges
        await bot.close(settings.grace)
    return run


async def _bye(bot: BotProcess, grace: float) -> tuple[bool, str, float]:
    """Send ``bye`` and wait ``grace`` seconds for the process to exit."""
    start = trio.current_time()
    if bot.dead is not None:
        return False, f"the bot was gone before bye: {bot.dead}", 0.0
    bot.thaw()  # frozen off move: it could not read the bye
    bot.notify({"type": "bye"})
    bot.flush()
    with trio.move_on_after(grace):
        await bot.exited.wait()
    waited = trio.current_time() - start
    if not bot.exited.is_set():
        bot.dead = "sent bye"  # close() then skips a second bye and ends it
        return (
            False,
            f"still running {round(grace * 1000)} ms after bye (the arena then kills it)",
            waited,
        )
    status = bot.exit_status()
    if status != "exit code 0":
        return False, f"{status} after bye (expected exit code 0)", waited
    return True, f"exited (exit code 0) {waited * 1000:.0f} ms after bye", waited


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _fault_line(ex: Exchange) -> str:
    if ex.fault == "timeout":
        return (
            f"{ex.where()}: timeout: no valid reply within {ex.request['time_ms']} ms "
            f"(gave up after {_ms(ex.elapsed)})"
        )
    return f"{ex.where()}: {ex.fault}: {ex.detail}"


def _answer_text(ex: Exchange) -> str:
    """What the bot answered at a position, in words."""
    reply = ex.reply or {}
    if ex.kind == "hello":
        return f"answered hello as {reply.get('name', '')!r} in {_ms(ex.elapsed)}"
    if ex.kind == "pass":
        cards = " ".join(reply.get("cards", []))
        return f"{ex.where()}: passed {cards} to seat {ex.request.get('to')}"
    legal = " ".join(ex.request.get("legal", []))
    return f"{ex.where()}: played {reply.get('card')} (legal: {legal})"


def _tail(text: str) -> str:
    """What ``check`` shows of a bot's stderr: the start of its last error
    report and its last lines (:func:`arena.protocol.codec.error_excerpt`),
    made visible."""
    return "\n".join(error_excerpt(text))


#: Most requests ``-v`` shows under one check (its first, then faulted ones).
VERBOSE_REQUESTS: Final = 3

#: Hints for the commonest mistakes, keyed by what the fault detail holds.
HINT_NOT_JSON: Final = (
    "hint: stdout carries protocol lines only, one JSON object a line; a debug print "
    "there is a line that is not JSON. Write debug output to stderr"
)
HINT_ONE_LINE: Final = (
    "hint: a reply is one JSON object on one line, ended by a newline; pretty-printed "
    "JSON spreads an object over several lines, and its first line alone is not JSON"
)
HINT_FLUSH: Final = (
    "hint: did you flush stdout? An answer left in the bot's output buffer never "
    "reaches the referee: flush after each line"
)
HINT_CARD: Final = (
    'hint: a card is two characters, rank then suit: "TS" is the ten of spades '
    "(ranks 2-9 T J Q K A, suits C D S H)"
)

#: The language's own words for a hint (after the protocol's), by hint and by
#: the bot's language (:func:`bot_language`); ``compiled`` is a program whose
#: language the command does not tell (a C, C++, Go or Rust binary).
LANGUAGE_HINTS: Final[dict[str, dict[str, str]]] = {
    HINT_NOT_JSON: {
        "python": "in Python: print(..., file=sys.stderr)",
        "javascript": "in JavaScript: console.error(...)",
        "java": "in Java: System.err.println(...)",
        "compiled": (
            "in C: fprintf(stderr, ...); C++: std::cerr << ...; "
            "Go: fmt.Fprintln(os.Stderr, ...); Rust: eprintln!(...)"
        ),
    },
    HINT_ONE_LINE: {
        "python": "in Python: json.dumps(reply) with no indent=, then print(..., flush=True)",
        "javascript": "in JavaScript: JSON.stringify(reply) with no spacing argument",
        "java": "in Java: gson.toJson(reply) on a Gson made without setPrettyPrinting()",
        "compiled": (
            "in C++ (nlohmann): j.dump() with no indent; Go: json.Marshal, not "
            "MarshalIndent; Rust: serde_json::to_string, not to_string_pretty"
        ),
    },
    HINT_FLUSH: {
        "python": "in Python: print(..., flush=True), or sys.stdout.flush() after each line",
        "javascript": "in JavaScript: process.stdout.write(line + '\\n') (console.log also works)",
        "java": "in Java: System.out.println(...) then System.out.flush()",
        "compiled": (
            "in C: fflush(stdout); C++: std::cout << line << std::endl; "
            "Go: w.Flush() on a bufio.Writer; Rust: std::io::stdout().flush()"
        ),
    },
}


def bot_language(argv: Sequence[str]) -> str:
    """The bot's language as far as its command tells: ``python``,
    ``javascript``, ``java`` or ``compiled`` (anything else)."""
    for word in argv[:3]:
        base = Path(word).name.lower()
        if base.endswith(".py") or base.startswith("python") or base == "pypy3":
            return "python"
        if base.endswith((".js", ".mjs", ".cjs")) or base in ("node", "nodejs"):
            return "javascript"
        if base.endswith((".jar", ".class")) or base == "java":
            return "java"
    return "compiled"


def _pretty_printed(detail: str) -> bool:
    """Whether a "not JSON" line looks like a piece of pretty-printed JSON:
    a lone brace or bracket, or a ``"key": value`` line."""
    match = re.search(r"at column \d+: (.*)$", detail)
    if match is None:
        return False
    line = match.group(1).strip("'\"").strip()
    return line in ("{", "[", "}", "]", "},", "],") or re.match(r'^"\w+"\s*:', line) is not None


def hint_for(ex: Exchange) -> str | None:
    """A hint for the fault of ``ex`` when it looks like one of the commonest
    mistakes, in the protocol's words (:func:`format_report` adds the bot's
    language's): a debug print to stdout (a line that is not JSON or not an
    object), pretty-printed JSON (an object over several lines), a missing
    flush (a timeout), a card written ``"10S"``."""
    detail = ex.detail or ""
    if ex.fault == "malformed" and "line is not JSON" in detail and _pretty_printed(detail):
        return HINT_ONE_LINE
    if ex.fault == "malformed" and (
        "line is not JSON" in detail or "line is JSON but not an object" in detail
    ):
        return HINT_NOT_JSON
    if ex.fault == "timeout":
        return HINT_FLUSH
    if ex.fault == "malformed" and "is not a card" in detail:
        return HINT_CARD
    return None


def _exchange_lines(ex: Exchange) -> list[str]:
    """What ``-v`` shows of one request: what was asked and what came back."""
    asked = json.dumps(ex.request, separators=(",", ":"))
    lines = [f"asked:    {_cut(asked, 400)}"]
    if ex.reply is not None:
        answered = json.dumps(ex.reply, separators=(",", ":"))
        lines.append(f"answered: {_cut(answered, 400)} in {_ms(ex.elapsed)}")
    if ex.fault is not None:
        lines.append(f"fault:    {ex.fault}: {ex.detail} (after {_ms(ex.elapsed)})")
    return lines


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _positions(check: CheckSpec, exchanges: Sequence[Exchange]) -> list[int]:
    """The indices of the requests a check judges: its one request (the
    handshake, a pass, a play), or every request of its game (``at = { game = G }``)."""
    at = check.at
    if at.hello or at.hand is not None:
        found = next((i for i, ex in enumerate(exchanges) if at.matches(ex)), None)
        return [] if found is None else [found]
    return [i for i, ex in enumerate(exchanges) if ex.kind != "hello" and ex.game == at.game]


def judge(run: ScenarioRun) -> list[CheckResult]:
    """Turn a scenario's run into one :class:`CheckResult` per check, and
    one more, ``SCENARIO-other-requests``, when the bot faulted at a request
    no check covers (a play of trick 3 in a scenario that checks passes):
    a fault is reported under the check whose position it is, never under
    an unrelated earlier one."""
    scenario = run.scenario
    exchanges = run.exchanges
    stderr = _tail("\n".join(run.stderr))  # printed on a terminal: made visible
    covered: set[int] = set()
    results = []
    for check in scenario.checks:
        base = CheckResult(check.name, scenario.name, check.about, False, "")
        if check.at.bye:
            if run.bye is None:
                base.reason = f"not reached: {run.stopped or 'the bot was gone before bye'}"
                base.details = f"bot stderr:\n{stderr}" if stderr else ""
            else:
                base.passed, base.reason, base.time = run.bye
                if not base.passed and stderr:
                    base.details = f"bot stderr:\n{stderr}"
            results.append(base)
            continue
        found = _positions(check, exchanges)
        if not found:
            why = run.stopped or (
                "the scenario never reached its position (a bug in the scenario, not the bot)"
            )
            base.reason = f"not reached: {why}"
            base.details = f"bot stderr:\n{stderr}" if stderr else ""
            results.append(base)
            continue
        covered.update(found)
        segment = [exchanges[i] for i in found]
        at_focus = segment[0]
        base.requests = len(segment)
        base.time = sum(ex.elapsed for ex in segment)
        base.exchanges = segment
        passed_hand = any(
            ex.kind == "pass" and ex.game == at_focus.game and ex.hand == at_focus.hand
            for ex in exchanges
        )
        problems = expectation_problems(check.expect, at_focus.request, passed_hand)
        faulted = [ex for ex in segment if ex.fault is not None]
        if faulted:
            _fail_with(base, faulted, stderr)
        elif problems:
            base.reason = (
                f"scenario error at {check.at.describe()}: {'; '.join(problems)} "
                "(a bug in the scenario, not the bot)"
            )
        else:
            base.passed = True
            # The handshake has its own (start-up) allowance: its time is not a reply's.
            times = [ex.elapsed for ex in segment if ex.reply is not None and ex.kind != "hello"]
            n = len(segment)
            base.reason = f"{_answer_text(at_focus)}; {n} request{'s' if n != 1 else ''}"
            if times:
                base.reason += f", slowest {_ms(max(times))}"
        results.append(base)
    stray = [
        ex
        for i, ex in enumerate(exchanges)
        if i not in covered and ex.fault is not None and ex.kind != "hello"
    ]
    if stray:
        other = CheckResult(
            f"{scenario.name}-other-requests",
            scenario.name,
            f"the requests of scenario {scenario.name} that no check is about",
            False,
            "",
        )
        other.requests = len(stray)
        other.time = sum(ex.elapsed for ex in stray)
        other.exchanges = stray
        _fail_with(other, stray, stderr)
        results.append(other)
    return results


def _fail_with(result: CheckResult, faulted: Sequence[Exchange], stderr: str) -> None:
    """Fill in a failed result from its faulted requests (the first is named)."""
    first = faulted[0]
    result.reason = _fault_line(first)
    if len(faulted) > 1:
        result.reason += f" (and {len(faulted) - 1} more faults)"
    details = ["request: " + _cut(json.dumps(first.request, separators=(",", ":")), 2000)]
    hint = hint_for(first)
    if hint is not None:
        details.insert(0, hint)
    if stderr:
        details.append(f"bot stderr:\n{stderr}")
    result.details = "\n".join(details)


async def _run_all(
    entrant: Entrant,
    scenarios: Sequence[Scenario],
    settings: CheckSettings,
    launcher: Launcher,
    only: set[str] | None,
    progress: Callable[[CheckResult], None] | None = None,
) -> tuple[list[CheckResult], tuple[float, str] | None]:
    results: list[CheckResult] = []
    slowest: tuple[float, str] | None = None
    no_hello: str | None = None
    async with trio.open_nursery() as nursery:
        for scenario in scenarios:
            wanted = only is None or any(c.name in only for c in scenario.checks)
            if not wanted or no_hello is not None:
                for c in scenario.checks:
                    reason = "not run: " + (no_hello or "not selected (--only)")
                    results.append(
                        CheckResult(
                            c.name,
                            scenario.name,
                            c.about,
                            no_hello is None,
                            reason,
                            skipped=no_hello is None,
                        )
                    )
                continue
            run = await _run_one(scenario, entrant, launcher, settings, nursery)
            start = len(results)
            if run.hello_timeout:
                no_hello = f"the bot did not answer hello in scenario {scenario.name}"
            elif run.hello_failed:
                no_hello = f"the bot failed its handshake in scenario {scenario.name}"
            judged = judge(run)
            names = {c.name: c for c in judged}
            for check in scenario.checks:
                result = names.pop(check.name)
                if only is not None and check.name not in only:
                    result.skipped, result.passed = True, True
                    result.reason = "not selected (--only)"
                results.append(result)
            for other in names.values():  # the scenario's other requests, if they faulted
                if only is not None:  # --only judges the named checks alone (-v shows it)
                    other.skipped, other.passed = True, True
                    other.reason = f"not judged (--only): {other.reason}"
                results.append(other)
            if progress is not None:
                for result in results[start:]:
                    progress(result)
            for ex in run.exchanges:
                if ex.kind == "hello" or ex.reply is None:
                    continue  # the handshake has its own (start-up) allowance
                if slowest is None or ex.elapsed > slowest[0]:
                    slowest = (ex.elapsed, f"scenario {scenario.path.name}, {ex.where()}")
        nursery.cancel_scope.cancel()
    return results, slowest


def run_checks(
    entrant: Entrant,
    scenarios: Sequence[Scenario],
    settings: CheckSettings | None = None,
    launcher: Launcher | None = None,
    only: Iterable[str] | None = None,
    progress: Callable[[CheckResult], None] | None = None,
) -> CheckReport:
    """Run every scenario against ``entrant`` (one fresh process each) and
    judge every check. Blocking (runs Trio). ``progress`` is called with each
    result of a scenario as soon as that scenario ends (``check`` prints it).

    Args:
        entrant: the bot (see :func:`arena.sandbox.entrants.parse_entrant`).
        scenarios: from :func:`load_scenarios`.
        settings: time limits (seconds) and strikes.
        launcher: starts the processes (user, limits, sandbox); default
            :class:`Launcher` with the tournament's default options.
        only: names of the checks to run (their scenarios run whole); others
            are reported as skipped.

    Raises:
        ScenarioError: a scenario's scripted seat faulted.
    """
    settings = settings or CheckSettings()
    own = launcher is None
    launcher = launcher or Launcher()
    chosen = set(only) if only is not None else None
    t0 = time.perf_counter()
    try:
        results, slowest = trio.run(
            _run_all, entrant, scenarios, settings, launcher, chosen, progress
        )
    finally:
        if own:
            launcher.close()
    return CheckReport(entrant, settings, results, slowest, time.perf_counter() - t0)


def _without_position(reason: str) -> str:
    """A failure's reason without the request it names ("hand 1 trick 2 play
    request 4: ") or its count of more faults."""
    text = re.sub(r"^.*?request \d+: ", "", reason)
    return re.sub(r" \(and \d+ more faults?\)$", "", text)


def _mistake(r: CheckResult) -> str | None:
    """What a failed check did wrong, the same for every check that failed the
    same way (the fault and its hint, or the reason without its position);
    ``None`` for a check that passed, was skipped, or was not reached."""
    if r.passed or r.skipped or r.reason.startswith(("not run:", "not reached:")):
        return None
    text = _without_position(r.reason)
    hint = next((x for x in r.details.splitlines() if x.startswith("hint:")), None)
    return f"{text.split(':', 1)[0]}: {hint}" if hint is not None else text


def format_report(report: CheckReport, *, verbose: bool = False) -> str:
    """The report printed by ``hearts-arena check``: one line per check
    (``PASS``/``FAIL``/``SKIP``, the name, the reason), the failures' details
    (indented: a hint for a common mistake, the request, the bot's stderr;
    each hint and each stderr text printed once), the slowest reply and a summary.

    A check that was not reached or not run for the reason of the check
    before it says ``(as above)``; a check that failed the same way as an
    earlier one (the same fault and hint) gets one line naming that check,
    without details. A hint is in the protocol's words, then the bot's
    language's (:data:`LANGUAGE_HINTS`, :func:`bot_language`). With
    ``verbose``: skipped checks too, and under every check what the bot was
    asked and answered at its position (for a whole-game check, its first
    request and any faulted ones)."""
    width = max([len(r.name) for r in report.results] + [10])
    lines = [
        f"checking {report.entrant.name} ({' '.join(report.entrant.argv)}), "
        f"{report.settings.time_limit:g} s per decision"
    ]
    shown_stderr: set[str] = set()
    shown_hints: set[str] = set()
    language = bot_language(report.entrant.argv)
    first_of: dict[str, str] = {}  # a mistake -> the first check that showed it
    previous = ""
    for r in report.results:
        if r.skipped and not verbose:
            continue
        mark = "SKIP" if r.skipped else ("PASS" if r.passed else "FAIL")
        repeated = r.reason == previous and r.reason.startswith(("not run:", "not reached:"))
        mistake = _mistake(r)
        if mistake is not None and mistake in first_of:
            # The same mistake again: one line, no details (they are above).
            what = _without_position(r.reason)
            lines.append(f"{mark}  {r.name:<{width}}  same mistake as {first_of[mistake]}: {what}")
            repeated = True
        else:
            if mistake is not None:
                first_of[mistake] = r.name
            lines.append(f"{mark}  {r.name:<{width}}  {'(as above)' if repeated else r.reason}")
        previous = r.reason
        if verbose:
            shown = r.exchanges[:1] + [ex for ex in r.exchanges[1:] if ex.fault is not None]
            for ex in shown[:VERBOSE_REQUESTS]:
                lines.extend("        " + line for line in _exchange_lines(ex))
            if len(shown) > VERBOSE_REQUESTS:
                more = len(shown) - VERBOSE_REQUESTS
                lines.append(f"        ... and {more} more faulted requests")
        if r.details and (not r.passed or verbose) and not repeated:
            head, sep, stderr = r.details.partition("bot stderr:\n")
            details = head.rstrip("\n") if sep else r.details
            if verbose and sep:
                details = "\n".join(x for x in details.splitlines() if x.startswith("hint:"))
            for line in details.splitlines():
                if line.startswith("hint:"):  # each hint once per report
                    if line in shown_hints:
                        continue
                    shown_hints.add(line)
                    lines.append("        " + line)
                    own = LANGUAGE_HINTS.get(line, {}).get(language)
                    if own is not None:  # the protocol's words first, the language's after
                        lines.append("          " + own)
                    continue
                lines.append("        " + line)
            if sep and stderr in shown_stderr:
                lines.append("        bot stderr: as above")
            elif sep:
                shown_stderr.add(stderr)
                lines.append("        bot stderr:")
                lines.extend("        " + line for line in stderr.splitlines())
    if report.slowest is not None:
        seconds, where = report.slowest
        lines.append(
            f"slowest reply: {_ms(seconds)} ({where}); "
            f"the limit is {report.settings.time_limit * 1000:.0f} ms"
        )
    ran = [r for r in report.results if not r.skipped]
    passed = sum(r.passed for r in ran)
    verdict = "all passed" if passed == len(ran) else f"{len(ran) - passed} failed"
    skipped = len(report.results) - len(ran)
    if skipped:
        verdict += f", {skipped} not selected"
    lines.append(f"{passed} of {len(ran)} checks passed ({verdict}) in {report.duration:.1f} s")
    return "\n".join(lines)


def list_checks(scenarios: Sequence[Scenario]) -> str:
    """The checks of ``scenarios``, one line each, grouped by scenario (``--list``)."""
    lines = []
    for scn in scenarios:
        lines.append(f"{scn.path.name}: {scn.about}")
        for c in scn.checks:
            lines.append(f"  {c.name:<28} {c.at.describe():<22} {c.about}")
    return "\n".join(lines)


__all__ = [
    "CheckReport",
    "CheckResult",
    "CheckSettings",
    "Scenario",
    "ScenarioError",
    "format_report",
    "list_checks",
    "load_scenario",
    "load_scenarios",
    "run_checks",
]
