"""The checks' verdicts: a scenario's requests, as asked and answered
(:class:`ScenarioRun`), turned into one :class:`CheckResult` per check
(:func:`judge`), with the reason in one line and the details of a failure
(the request, a hint, the bot's stderr)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from arena.protocol.codec import error_excerpt
from arena.seats.stand_ins import Exchange
from arena.tools.check.hints import hint_for
from arena.tools.check.scenarios import CheckSpec, Scenario, expectation_problems


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


def milliseconds(seconds: float) -> str:
    """``seconds`` as milliseconds, one decimal: ``"12.3 ms"``."""
    return f"{seconds * 1000:.1f} ms"


def _fault_line(ex: Exchange) -> str:
    if ex.fault == "timeout":
        return (
            f"{ex.where()}: timeout: no valid reply within {ex.request['time_ms']} ms "
            f"(gave up after {milliseconds(ex.elapsed)})"
        )
    return f"{ex.where()}: {ex.fault}: {ex.detail}"


def _answer_text(ex: Exchange) -> str:
    """What the bot answered at a position, in words."""
    reply = ex.reply or {}
    if ex.kind == "hello":
        return f"answered hello as {reply.get('name', '')!r} in {milliseconds(ex.elapsed)}"
    if ex.kind == "pass":
        cards = " ".join(reply.get("cards", []))
        return f"{ex.where()}: passed {cards} to seat {ex.request.get('to')}"
    legal = " ".join(ex.request.get("legal", []))
    return f"{ex.where()}: played {reply.get('card')} (legal: {legal})"


def stderr_tail(text: str) -> str:
    """What ``check`` shows of a bot's stderr: the start of its last error
    report and its last lines (:func:`arena.protocol.codec.error_excerpt`),
    made visible."""
    return "\n".join(error_excerpt(text))


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (the last three ``...``)."""
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
    stderr = stderr_tail("\n".join(run.stderr))  # printed on a terminal: made visible
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
                base.reason += f", slowest {milliseconds(max(times))}"
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
    details = ["request: " + cut_text(json.dumps(first.request, separators=(",", ":")), 2000)]
    hint = hint_for(first)
    if hint is not None:
        details.insert(0, hint)
    if stderr:
        details.append(f"bot stderr:\n{stderr}")
    result.details = "\n".join(details)
