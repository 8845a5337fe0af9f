"""Running ``check``: each scenario's games played by the real referee with
the bot at one seat (started as a tournament starts it) against scripted
seats, its ``bye``, and the whole run's :class:`CheckReport`."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

from arena.game.referee import (
    GameSpec,
    Referee,
    RefereeSettings,
    SeatSetup,
    handshake,
)
from arena.sandbox.entrants import Entrant
from arena.sandbox.launcher import Launcher
from arena.seats.process import BotProcess
from arena.seats.stand_ins import Exchange, Message, RecordingSeat, ScriptedSeat, preference_play
from arena.tools.check.judging import CheckResult, ScenarioRun, judge
from arena.tools.check.scenarios import Scenario, ScenarioError

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
