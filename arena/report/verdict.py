"""CI verdicts of a tournament: ``run --fail-if CONDITION`` and ``run --junit FILE``.

A condition is ``METRIC OP VALUE``, spaces optional:

* ``METRIC``: one of :data:`METRICS`, read from the entrant's row of the
  standings (``results.json``);
* ``OP``: ``>``, ``>=``, ``<``, ``<=``, ``==`` or ``!=``;
* ``VALUE``: a number, or the name of another entrant, meaning that
  entrant's value of the same metric.

Examples: ``faults>0`` (any fault at all), ``faults_timeout>=3``,
``points_per_hand>low`` (more points per hand than the entrant ``low``:
worse, since points are bad), ``mean_rank>2.5``, ``rank>1``.

A condition *fails the run* when it holds: for the candidate in a gauntlet,
for every entrant otherwise. A metric that cannot be measured (no hands
played, say) counts as holding, so that CI never passes by accident. With
``--junit`` and no condition, ``faults>0`` is judged. :func:`judge` makes
the one :class:`Verdict` of a run: a JUnit case per judged entrant, failed if
and only if a condition holds for it, and exit code 5 if and only if a case
failed.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from arena.protocol.faults import FAULT_KINDS
from arena.protocol.records import GameRecordJSON
from arena.report.junit import Case

#: Metrics a condition may name, with what they mean.
METRICS: Final = {
    "faults": "faults of every kind",
    **{f"faults_{k}": f"{k} faults" for k in FAULT_KINDS},
    "points_per_hand": "penalty points per hand, after the moon rule (lower is better)",
    "points": "penalty points in all",
    "mean_rank": "mean finishing place in its games (1 = first)",
    "rank": "place in the standings (1 = best rating)",
    "wins": "games won (shared first places count)",
    "win_rate": "games won / games played",
    "games": "games played",
    "conservative": "TrueSkill mu - 3 sigma",
    "mu": "TrueSkill mu",
    "sigma": "TrueSkill sigma",
    "moons": "moons shot",
    "queens": "queens of spades taken",
    "duplicate": "duplicate score per hand (negative is better)",
}

_OPS: Final[dict[str, Callable[[float, float], bool]]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_SYNTAX: Final = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|==|!=|>|<)\s*(.+?)\s*$")
_NUMBER: Final = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class ConditionError(ValueError):
    """A ``--fail-if`` condition that cannot be parsed or refers to no entrant."""


@dataclass(frozen=True)
class Condition:
    """One parsed ``--fail-if`` condition.

    Attributes:
        text: as given.
        metric: a key of :data:`METRICS`.
        op: the comparison operator's text.
        value: the number compared with, or ``None`` when ``other`` is set.
        other: the entrant whose value of ``metric`` is compared with.
    """

    text: str
    metric: str
    op: str
    value: float | None
    other: str | None

    def measure(self, row: Mapping[str, Any]) -> float | None:
        """The metric's value in a standings row, or ``None`` if unknown."""
        return metric_value(row, self.metric)

    def failures(
        self, rows: Mapping[str, Mapping[str, Any]], subjects: Sequence[str]
    ) -> list[tuple[str, str]]:
        """For each subject for which the condition holds: ``(subject, the
        measured values as text)``, e.g. ``("mybot", "mybot 7.25 > low 5.1")``.
        Empty when it holds for none."""
        out = []
        if self.other is not None:
            bound = self.measure(rows[self.other])
            bound_text = f"{self.other} {_fmt(bound)}"
        else:
            bound = self.value
            bound_text = _fmt(bound)
        for name in subjects:
            if name == self.other:
                continue
            mine = self.measure(rows[name])
            if mine is None or bound is None:
                text = f"{name} {_fmt(mine)} {self.op} {bound_text} (unknown counts as failed)"
                out.append((name, text))
            elif _OPS[self.op](mine, bound):
                out.append((name, f"{name} {_fmt(mine)} {self.op} {bound_text}"))
        return out


def _fmt(value: float | None) -> str:
    if value is None:
        return "unknown"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0")


def metric_value(row: Mapping[str, Any], metric: str) -> float | None:
    """The value of ``metric`` in a standings row (``results.json``), or
    ``None`` when it is unknown (no games or hands yet)."""
    faults: Mapping[str, int] = row.get("faults", {})
    if metric == "faults":
        return float(sum(faults.values()))
    if metric.startswith("faults_"):
        return float(faults.get(metric.removeprefix("faults_"), 0))
    if metric == "win_rate":
        games = row.get("games") or 0
        return row["wins"] / games if games else None
    value = row.get(metric)
    return None if value is None else float(value)


def parse_condition(text: str) -> Condition:
    """Parse ``METRIC OP VALUE`` (see the module docstring).

    Raises:
        ConditionError: not of that form, an unknown metric, or a value that
            is neither a finite number nor a name.
    """
    match = _SYNTAX.match(text)
    if match is None:
        raise ConditionError(
            f"--fail-if {text!r}: expected METRIC OP VALUE such as 'faults>0' "
            f"(operators: {' '.join(sorted(_OPS))})"
        )
    metric, op, raw = match.groups()
    if metric not in METRICS:
        raise ConditionError(
            f"--fail-if {text!r}: unknown metric {metric!r}; one of {', '.join(METRICS)}"
        )
    if _NUMBER.match(raw):
        value = float(raw)
        if not math.isfinite(value):
            raise ConditionError(f"--fail-if {text!r}: {raw} is not a finite number")
        return Condition(text, metric, op, value, None)
    return Condition(text, metric, op, None, raw)


def check_names(conditions: Sequence[Condition], names: Sequence[str]) -> None:
    """Check that every entrant a condition compares with exists.

    Raises:
        ConditionError: naming the condition and the unknown entrant.
    """
    for c in conditions:
        if c.other is not None and c.other not in names:
            raise ConditionError(
                f"--fail-if {c.text!r}: {c.other!r} is neither a number nor an entrant "
                f"(entrants: {', '.join(names)})"
            )


def evaluate(
    conditions: Sequence[Condition],
    standings: Sequence[Mapping[str, Any]],
    subjects: Sequence[str],
) -> list[tuple[Condition, list[tuple[str, str]]]]:
    """The conditions that hold for some subject, each with its measured
    values (see :meth:`Condition.failures`), in the order given."""
    rows = {r["name"]: r for r in standings}
    out = []
    for c in conditions:
        found = c.failures(rows, subjects)
        if found:
            out.append((c, found))
    return out


def failure_lines(failed: Sequence[tuple[Condition, list[tuple[str, str]]]]) -> list[str]:
    """One line per failed condition: ``fail-if faults>0: mybot 3 > 0``."""
    return [f"fail-if {c.text}: {'; '.join(text for _, text in found)}" for c, found in failed]


#: The condition judged when ``--junit`` is given without any ``--fail-if``.
DEFAULT_CONDITION: Final = "faults>0"


@dataclass(frozen=True)
class Verdict:
    """The one verdict of a finished run: it alone decides the exit code,
    the JUnit file and the ``fail-if`` lines printed, so they never disagree.

    Attributes:
        subjects: the entrants judged (the candidate of a gauntlet, else
            every entrant, in standings order); one JUnit case each.
        failed: each condition that holds for some subject, with the
            subjects and measured values (see :meth:`Condition.failures`).
        cases: the JUnit cases, one per subject, failed if and only if a
            condition holds for that subject.
        implicit: the conditions are :data:`DEFAULT_CONDITION`, judged
            because ``--junit`` was given without ``--fail-if``.
    """

    subjects: tuple[str, ...]
    failed: tuple[tuple[Condition, tuple[tuple[str, str], ...]], ...]
    cases: tuple[Case, ...]
    implicit: bool = False

    @property
    def passed(self) -> bool:
        """No condition holds for any subject (every JUnit case passes)."""
        return not any(c.failure is not None for c in self.cases)

    def lines(self) -> list[str]:
        """One line per condition that held: ``fail-if faults>0: mybot 3 > 0``
        (with the implicit condition, ``fail-if faults>0 (--junit without
        --fail-if): ...``)."""
        note = " (--junit without --fail-if)" if self.implicit else ""
        return [
            f"fail-if {c.text}{note}: {'; '.join(text for _, text in found)}"
            for c, found in self.failed
        ]


def judge(
    conditions: Sequence[Condition],
    standings: Sequence[Mapping[str, Any]],
    records: Sequence[GameRecordJSON],
    *,
    candidate: str | None = None,
    junit: bool = False,
) -> Verdict:
    """Judge a finished run.

    Args:
        conditions: the ``--fail-if`` conditions; with none and ``junit``,
            :data:`DEFAULT_CONDITION` (any fault) is judged instead.
        standings: the rows of ``results.json``.
        records: the games (for each bot's answering time, the cases' time
            in seconds).
        candidate: a gauntlet's candidate: the only subject.
        junit: whether a JUnit file is written.
    """
    implicit = not conditions and junit
    conds = [parse_condition(DEFAULT_CONDITION)] if implicit else list(conditions)
    subjects = [candidate] if candidate else [str(r["name"]) for r in standings]
    failed = evaluate(conds, standings, subjects)
    cases = _cases(standings, subjects, failed, records, implicit)
    return Verdict(
        tuple(subjects),
        tuple((c, tuple(found)) for c, found in failed),
        tuple(cases),
        implicit,
    )


def _cases(
    standings: Sequence[Mapping[str, Any]],
    subjects: Sequence[str],
    failed: Sequence[tuple[Condition, list[tuple[str, str]]]],
    records: Sequence[GameRecordJSON],
    implicit: bool,
) -> list[Case]:
    """One JUnit case per subject, failed if and only if a condition in
    ``failed`` holds for it; faults are listed in every case's details.
    The case's time is the seconds its bot spent answering requests."""
    seconds: dict[str, float] = {}
    for rec in records:
        for seat, timing in enumerate(rec.get("timing") or []):
            name = rec["seats"][seat]
            seconds[name] = (
                seconds.get(name, 0.0) + timing.get("requests", 0) * timing.get("mean_ms", 0) / 1000
            )
    rows = {r["name"]: r for r in standings}
    note = " (--junit without --fail-if)" if implicit else ""
    cases = []
    for name in subjects:
        row = rows[name]
        problems = []
        for c, found in failed:
            mine = [text for subject, text in found if subject == name]
            if mine:
                problems.append(f"fail-if {c.text}{note}: {'; '.join(mine)}")
        faults = {k: v for k, v in row["faults"].items() if v}
        fault_line = (
            f"{sum(faults.values())} faults ("
            + ", ".join(f"{v} {k}" for k, v in sorted(faults.items()))
            + ")"
            if faults
            else "no faults"
        )
        summary = (
            f"rank {row['rank']}, {row['games']} games, {row['wins']} wins, "
            f"points per hand {_fmt(row.get('points_per_hand'))}, "
            f"mean rank {_fmt(row.get('mean_rank'))}; {fault_line}"
        )
        cases.append(
            Case(
                name=name,
                classname="hearts-arena.run",
                time=seconds.get(name, 0.0),
                failure="; ".join(problems) if problems else None,
                details="\n".join([*problems, summary]),
            )
        )
    return cases
