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
played, say) counts as holding, so that CI never passes by accident.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from arena.faults import FAULT_KINDS
from arena.junit import Case

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


def junit_cases(
    standings: Sequence[Mapping[str, Any]],
    failed: Sequence[tuple[Condition, list[tuple[str, str]]]],
    records: Sequence[Mapping[str, Any]],
) -> list[Case]:
    """One JUnit case per entrant (in standings order): failed when it has
    faults or a ``--fail-if`` condition holds for it. The case's time is the
    seconds its bot spent answering requests over all its games."""
    seconds: dict[str, float] = {}
    for rec in records:
        for seat, timing in enumerate(rec.get("timing") or []):
            name = rec["seats"][seat]
            seconds[name] = (
                seconds.get(name, 0.0) + timing.get("requests", 0) * timing.get("mean_ms", 0) / 1000
            )
    cases = []
    for row in standings:
        name = row["name"]
        problems = []
        faults = {k: v for k, v in row["faults"].items() if v}
        if faults:
            problems.append(
                f"{sum(faults.values())} faults ("
                + ", ".join(f"{v} {k}" for k, v in sorted(faults.items()))
                + ")"
            )
        for c, found in failed:
            mine = [text for subject, text in found if subject == name]
            if mine:
                problems.append(f"fail-if {c.text}: {'; '.join(mine)}")
        ppH = row.get("points_per_hand")
        summary = (
            f"rank {row['rank']}, {row['games']} games, {row['wins']} wins, "
            f"points per hand {_fmt(ppH)}, mean rank {_fmt(row.get('mean_rank'))}"
        )
        cases.append(
            Case(
                name=name,
                classname="hearts-arena.run",
                time=seconds.get(name, 0.0),
                failure="; ".join(problems) if problems else None,
                details="\n".join([*problems, summary]) if problems else summary,
            )
        )
    return cases
