"""What ``hearts-arena check`` prints: the report of a run (one line per
check, the failures' details, each hint and stderr text once, the slowest
reply, a summary) and the list of checks (``--list``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

from arena.seats.stand_ins import Exchange
from arena.tools.check.hints import LANGUAGE_HINTS, bot_language
from arena.tools.check.judging import CheckResult, cut_text, milliseconds
from arena.tools.check.running import CheckReport
from arena.tools.check.scenarios import Scenario

#: Most requests ``-v`` shows under one check (its first, then faulted ones).
VERBOSE_REQUESTS: Final = 3


def _exchange_lines(ex: Exchange) -> list[str]:
    """What ``-v`` shows of one request: what was asked and what came back."""
    asked = json.dumps(ex.request, separators=(",", ":"))
    lines = [f"asked:    {cut_text(asked, 400)}"]
    if ex.reply is not None:
        answered = json.dumps(ex.reply, separators=(",", ":"))
        lines.append(f"answered: {cut_text(answered, 400)} in {milliseconds(ex.elapsed)}")
    if ex.fault is not None:
        lines.append(f"fault:    {ex.fault}: {ex.detail} (after {milliseconds(ex.elapsed)})")
    return lines


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
            f"slowest reply: {milliseconds(seconds)} ({where}); "
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
