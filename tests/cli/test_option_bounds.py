"""Every numeric option is bounded to what the protocol and the machine can
carry (issue 24 item 17): its largest and smallest values are accepted and
run, one past either is a usage error of one line (exit 2), on the command
line of every command, in a ``--config`` file and in a recorded run that
``--resume`` reads. The options are read from the parser itself, so an
option added later is covered (and one of a raw ``int``/``float`` type fails
:func:`test_every_numeric_option_is_bounded`)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import BOTS, load_outputs, run_arena

from arena.cli.errors import EXIT_USAGE, CliError
from arena.cli.main import build_parser
from arena.cli.options import INT32_MAX, RUN_OPTIONS, Number, option_for

#: The arguments a command needs besides the option tried.
REQUIRED: dict[str, list[str]] = {
    "replay": ["x", "--seat", "0"],
    "watch": ["x", "--live", "0"],
    "audit": ["x"],
    "submit": ["http://127.0.0.1:9", "x.py"],
    "serve": ["x"],
}


def _numeric_actions() -> list[tuple[str, argparse.Action]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for command, p in sub.choices.items():
        for action in p._actions:
            if action.option_strings and (
                isinstance(action.type, Number) or action.type in (int, float)
            ):
                found.append((command, action))
    return found


NUMERIC = _numeric_actions()
CASES = [
    pytest.param(command, action.option_strings[0], action.type, id=f"{command} {action.dest}")
    for command, action in NUMERIC
    if isinstance(action.type, Number)
]


def test_every_numeric_option_is_bounded() -> None:
    """No option takes a raw int or float (unbounded) unless its choices bound it."""
    raw = [(c, a.option_strings[0]) for c, a in NUMERIC if not isinstance(a.type, Number)]
    assert raw == [("play", "--seat")]  # choices=range(4)
    seat = next(a for c, a in NUMERIC if (c, a.option_strings[0]) == ("play", "--seat"))
    assert list(seat.choices or ()) == [0, 1, 2, 3]
    assert len(CASES) >= 30  # run's 22, and the tools'
    flags = {f for _, f, _ in (p.values for p in CASES)}
    assert {"--time-limit", "--startup-time", "--hands", "--jobs", "--delay", "--trick"} <= flags


def _over(bounds: Number) -> list[str]:
    high = bounds.high
    if bounds.integer:
        return [str(int(high) + 1), str(10**30)]
    return [repr(high * 1.0001 + 0.01), "1e300", "inf", "nan"]


def _under(bounds: Number) -> list[str]:
    low = bounds.low
    if bounds.integer:
        return [str(int(low) - 1)] if low > -(2**63) else [str(-(2**63) - 1)]
    return [repr(low / 2) if low > 0 else "-0.5", "-inf"]


def _parse(command: str, flag: str, value: str) -> Any:
    args = build_parser().parse_args([command, *REQUIRED.get(command, []), f"{flag}={value}"])
    return args


@pytest.mark.parametrize(("command", "flag", "bounds"), CASES)
def test_a_numeric_option_takes_its_bounds_and_refuses_past_them(
    command: str, flag: str, bounds: Number, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = next(a.dest for c, a in NUMERIC if c == command and a.option_strings[0] == flag)
    for value in (bounds.low, bounds.high):
        text = str(int(value)) if bounds.integer else repr(float(value))
        assert getattr(_parse(command, flag, text), dest) == value
    for text in [*_over(bounds), *_under(bounds), "x"]:
        with pytest.raises(CliError) as info:
            _parse(command, flag, text)
        assert info.value.code == EXIT_USAGE
        message = str(info.value)
        assert "\n" not in message and flag in message, message
    # Through main: exit 2 and one line on stderr, no traceback.
    for text in (_over(bounds)[0], _under(bounds)[0]):
        argv = [command, *REQUIRED.get(command, []), f"{flag}={text}"]
        assert run_arena(argv) == EXIT_USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: "), err


def test_time_options_fit_a_32_bit_time_ms() -> None:
    for flag in ("--time-limit", "--startup-time"):
        bounds = next(b for _, f, b in (p.values for p in CASES) if f == flag)
        assert int(bounds.high * 1000) == INT32_MAX
        assert int(bounds.low * 1000) >= 1
    err = _message("run", "--time-limit", "1e12")
    assert err == (
        "hearts-arena run: argument --time-limit: must be at most 2147483.647 seconds, "
        "got 1e12 (its milliseconds, time_ms, are a 32-bit integer)"
    )


def _message(command: str, flag: str, value: str) -> str:
    with pytest.raises(CliError) as info:
        _parse(command, flag, value)
    return str(info.value)


FILE_CASES = [
    pytest.param(o, id=o.dest) for o in RUN_OPTIONS if o.in_file and isinstance(o.type, Number)
]


@pytest.mark.parametrize("option", FILE_CASES)
def test_a_config_key_is_bounded_as_its_flag(option: Any, tmp_path: Path) -> None:
    bounds: Number = option.type
    for value in (bounds.low, bounds.high):
        assert option.convert(value, "key", tmp_path) == value
    for text in [*_over(bounds), *_under(bounds)]:
        value = float(text) if not bounds.integer else int(text)
        with pytest.raises(CliError) as info:
            option.convert(value, f"key {option.dest!r}", tmp_path)
        assert info.value.code == EXIT_USAGE and "\n" not in str(info.value)
    # Through a file and main: exit 2.
    toml = tmp_path / "t.toml"
    over = _over(bounds)[0]
    toml.write_text(f"{option.dest} = {over}\n")
    assert run_arena(["run", "--config", str(toml)]) == EXIT_USAGE


def test_the_largest_values_run_and_reach_the_bots(open_tmp: Path) -> None:
    """A run at the upper bound of every option that does not lengthen it
    (times, limits, counts) plays, and its bots are sent the largest
    time_ms, which fits a 32-bit integer; the lengths at their bounds pass
    ``--dry-run``."""
    out = open_tmp / "out"
    top = {f: b for _, f, b in (p.values for p in CASES) if _ == "run"}
    args: list[str] = []
    for flag in (
        "--time-limit", "--startup-time", "--strikes", "--memory-limit", "--cpu-limit",
        "--max-processes", "--cores", "--max-open-files", "--tmp-size", "--jobs",
        "--transcript-cap", "--disqualify-after", "--seed",
    ):  # fmt: skip
        high = top[flag].high
        args.append(f"{flag}={int(high) if top[flag].integer else repr(high)}")
    bots = [str(BOTS / "first_legal.py"), "sample:low", "sample:duck", "sample:random"]
    short = ["--rounds", "1", "--hands", "1", "--quiet", "--transcripts", "--out", str(out)]
    assert run_arena(["run", *bots, *short, *args]) == 0
    results, records = load_outputs(out)
    assert results["complete"] and len(records) == 4
    sent = [
        m["sent"]["time_ms"]
        for r in records
        for seat in r["transcripts"]
        for m in seat
        if "time_ms" in m.get("sent", {})
    ]
    assert sent and set(sent) == {INT32_MAX}
    for flag in ("--rounds", "--hands", "--target-score"):
        high = int(top[flag].high)
        other = ["--hands", "1"] if flag == "--rounds" else ["--rounds", "1"]
        assert run_arena(["run", *bots, f"{flag}={high}", *other, "--dry-run", "--out",
                          str(open_tmp / "dry")]) == 0  # fmt: skip


def test_resume_of_a_record_past_a_bound_is_a_usage_error(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run.json written before the bounds (time_limit 1e300 crashed the run
    and then its --resume) is refused in one line."""
    out = open_tmp / "o"
    bots = [str(BOTS / "first_legal.py"), "sample:low", "sample:duck", "sample:random"]
    assert run_arena(["run", *bots, "--rounds", "1", "--hands", "1", "--quiet",
                      "--out", str(out)]) == 0  # fmt: skip
    run_json = out / "run.json"
    info = json.loads(run_json.read_text())
    info["settings"]["time_limit"] = 1e300
    run_json.write_text(json.dumps(info))
    journal = out / "games.jsonl"
    journal.write_text(journal.read_text().splitlines(keepends=True)[0])
    capsys.readouterr()
    assert run_arena(["run", "--resume", "--out", str(out)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f"error: --resume: {run_json}: time_limit: must be at most 2147483.647 seconds, "
        "got 1e+300 (its milliseconds, time_ms, are a 32-bit integer)\n"
    )
    assert math.isfinite(option_for("time_limit").type.high)  # type: ignore[union-attr]
