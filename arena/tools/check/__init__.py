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

The parts, one module each: the scenario files and expectations
(:mod:`~arena.tools.check.scenarios`), the verdict of each check
(:mod:`~arena.tools.check.judging`), the hints for common mistakes
(:mod:`~arena.tools.check.hints`), running the bot through the scenarios
(:mod:`~arena.tools.check.running`) and the printed report
(:mod:`~arena.tools.check.report`). Their public names are re-exported here.
"""

from __future__ import annotations

from arena.tools.check.hints import (
    HINT_CARD,
    HINT_FLUSH,
    HINT_NOT_JSON,
    HINT_ONE_LINE,
    LANGUAGE_HINTS,
    bot_language,
    hint_for,
)
from arena.tools.check.judging import CheckResult, ScenarioRun, judge
from arena.tools.check.report import VERBOSE_REQUESTS, format_report, list_checks
from arena.tools.check.running import (
    CheckReport,
    CheckSettings,
    game_spec,
    play_scenario,
    run_checks,
)
from arena.tools.check.scenarios import (
    EXPECT_KEYS,
    SCENARIO_DIR,
    At,
    CheckSpec,
    Scenario,
    ScenarioError,
    expectation_problems,
    load_scenario,
    load_scenarios,
)

__all__ = [
    "EXPECT_KEYS",
    "HINT_CARD",
    "HINT_FLUSH",
    "HINT_NOT_JSON",
    "HINT_ONE_LINE",
    "LANGUAGE_HINTS",
    "SCENARIO_DIR",
    "VERBOSE_REQUESTS",
    "At",
    "CheckReport",
    "CheckResult",
    "CheckSettings",
    "CheckSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioRun",
    "bot_language",
    "expectation_problems",
    "format_report",
    "game_spec",
    "hint_for",
    "judge",
    "list_checks",
    "load_scenario",
    "load_scenarios",
    "play_scenario",
    "run_checks",
]
