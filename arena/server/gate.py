"""The gate a submission passes before ranked play (issue 27, "The gate"):
``queued`` -> ``check`` -> ``validation`` -> ``ranked``, or ``failed``.

* **check**: ``hearts-arena check`` on the submission, sealed (``--sandbox``:
  refused where bots cannot be sealed), with the competition's time limits
  and bot limits, as a process of its own (:func:`check_argv`) so the
  runner's loop never runs a second Trio loop. Exit 0 passes, 5 fails (the
  reason: the report's first failing line, :func:`judge_check`); any other
  exit, or the step's time budget passed, is the server's fault: the step
  runs once more, then fails saying so.
* **validation**: one table (its own numbering), deal key ``V<submission>``,
  four rotations of one hand, the submission against three house bots; not
  rated. It passes when the submission has no fault in the four games
  (:func:`judge_validation`); a house bot's fault makes it the machine's: the
  table is played once more, then void.

Pure functions; the runner runs the steps and stores the results.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from arena.protocol.codec import clean_text
from arena.protocol.records import GameRecordJSON, faults_of
from arena.server.folder import CompetitionSettings

#: ``check``'s exit codes: passed, a check failed.
CHECK_PASSED: Final = 0
CHECK_FAILED: Final = 5
#: Most characters of a check's report kept for its owner.
OUTPUT_CAP: Final = 64 * 1024
#: Runs of a step at most (a step that failed as the server's runs once more).
STEP_RUNS: Final = 2
_FAIL_LINE: Final = re.compile(r"^FAIL\s+(\S+)\s+(.*)$")


@dataclass(frozen=True, slots=True)
class StepResult:
    """A step's outcome: ``passed``; ``server_fault`` when the failure is the
    machine's (run the step again once, never charge the submission);
    ``reason`` one line; ``output`` for the owner only (capped)."""

    passed: bool
    reason: str
    server_fault: bool = False
    output: str = ""


def check_argv(entrant: str, settings: CompetitionSettings, python: str | None = None) -> list[str]:
    """The command line of a submission's check: ``python -m arena check
    --sandbox`` with the competition's time limits and limits, then the entrant."""
    g, lim = settings.game, settings.limits
    return [
        python or sys.executable,
        "-m",
        "arena",
        "check",
        "--sandbox",
        "--time-limit",
        f"{g.time_limit:g}",
        "--startup-time",
        f"{g.startup_time:g}",
        "--strikes",
        str(g.strikes),
        "--memory-limit",
        str(lim.memory_mb),
        "--cpu-limit",
        str(lim.cpu_seconds),
        "--max-processes",
        str(lim.processes),
        "--max-open-files",
        str(lim.open_files),
        "--stderr-limit",
        str(lim.stderr_kib),
        "--tmp-size",
        str(lim.tmp_mb),
        entrant,
    ]


def cap_output(text: str) -> str:
    """A check's report as kept: at most :data:`OUTPUT_CAP` characters (the
    start, then a line saying how much was cut)."""
    if len(text) <= OUTPUT_CAP:
        return text
    return text[:OUTPUT_CAP] + f"\n[{len(text) - OUTPUT_CAP} more characters not kept]\n"


def judge_check(exit_code: int | None, output: str) -> StepResult:
    """The check step's result from ``check``'s exit code (``None``: stopped
    at its time budget) and its report."""
    kept = cap_output(output)
    if exit_code == CHECK_PASSED:
        return StepResult(True, "every check passed", output=kept)
    if exit_code is None:
        return StepResult(False, "the check ran past its time budget", True, kept)
    if exit_code == CHECK_FAILED:
        for line in output.splitlines():
            m = _FAIL_LINE.match(line.strip())
            if m:
                return StepResult(
                    False, clean_text(f"check {m.group(1)}: {m.group(2)}", 200), output=kept
                )
        return StepResult(False, "a check failed", output=kept)
    last = [ln for ln in output.splitlines() if ln.strip()]
    said = clean_text(last[-1], 160) if last else "no output"
    return StepResult(False, f"the check could not run (exit {exit_code}): {said}", True, kept)


def _fault_line(record: GameRecordJSON, seat: int) -> str | None:
    faults = faults_of(record, seat)
    if faults:
        f = faults[0]
        return f"{f.reason} in game {record['game_id']}: {clean_text(f.detail, 160)}"
    if seat in record["struck_out"]:
        return f"struck out in game {record['game_id']}"
    return None


def judge_validation(records: Sequence[GameRecordJSON], submission: str) -> StepResult:
    """A validation table's result from its four records: a house bot's fault
    is the server's (``server_fault``), else a fault of ``submission`` fails
    it (the first, in one line), else it passes.

    Raises:
        ValueError: not four records, or ``submission`` not seated in one.
    """
    if len(records) != 4:
        raise ValueError(f"a validation table has four games, got {len(records)}")
    for rec in records:
        if submission not in rec["seats"]:
            raise ValueError(f"{submission} is not seated in game {rec['game_id']}")
    for rec in records:
        for seat, name in enumerate(rec["seats"]):
            if name != submission:
                line = _fault_line(rec, seat)
                if line is not None:
                    return StepResult(False, f"house bot {name}: {line}", True)
    for rec in records:
        line = _fault_line(rec, list(rec["seats"]).index(submission))
        if line is not None:
            return StepResult(False, f"validation: {line}")
    return StepResult(True, "four games of one hand without a fault")


def submission_entrant(label: str, kind: str, folder: Path) -> str:
    """The entrant text (``run``'s form) of a stored submission: a ``.py``
    file is ``folder/bot.py``, a zip is the bot folder ``folder`` (its
    ``bot.toml`` at the root): ``label=PATH``."""
    path = folder / "bot.py" if kind == "py" else folder
    return f"{label}={path}"
