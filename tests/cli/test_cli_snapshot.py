"""The command line's words are part of its contract (issue 26): the ``--help``
of ``hearts-arena`` and of every subcommand, and the first line on stderr and
the exit code of every error a user can provoke without playing a game, are
byte for byte those recorded in ``tests/cli/snapshots/`` (taken from the main
at 165bb19, before the run was moved out of the command line).

Normalised: the terminal width (``COLUMNS=100``), the test's temporary folder
(``<TMP>``) and the Python version in ``--version``. Nothing else.

To record the snapshots again after a deliberate change of wording::

    SNAPSHOT_UPDATE=1 python -m pytest tests/cli/test_cli_snapshot.py -n 0

and say why in the commit (a changed error line breaks scripts that match it).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from arena.cli.main import build_parser, main

SNAPSHOTS = Path(__file__).parent / "snapshots"
HELP_DIR = SNAPSHOTS / "help"
ERRORS_FILE = SNAPSHOTS / "errors.json"
UPDATE = os.environ.get("SNAPSHOT_UPDATE") == "1"

#: A key of 64 hexadecimal digits (any 256-bit value is a key).
GOOD_KEY = "0123456789abcdef" * 4


def _subcommands() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[attr-defined]


#: The subcommands at the base (a new one needs its own snapshot: see below).
SUBCOMMANDS = [
    "audit", "build", "check", "cleanup", "export", "new", "play", "replay", "report", "run",
    "serve", "status", "submit", "verify", "watch",
]  # fmt: skip
# serve, submit and status came after 165bb19 (issue 27), export after them
# (issue 30); their snapshots were recorded when they were added.


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    path.write_text(text)
    os.chmod(path, mode)


def _run_json(folder: Path, info: object) -> None:
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(info))


def _setup(tmp: Path) -> None:
    """The files the error cases name (under ``<TMP>``)."""
    _write(tmp / "file.txt", "not a folder\n", 0o644)
    (tmp / "empty").mkdir()
    os.chmod(tmp / "empty", 0o755)  # named in an error line, whatever the umask
    (tmp / "full").mkdir()
    (tmp / "full" / "x").write_text("x")
    _write(tmp / "key_bad", "not hexadecimal at all\n")
    _write(tmp / "key_short", "0123abcd\n")
    _write(tmp / "key_public", GOOD_KEY + "\n", 0o644)
    _write(tmp / "key_good", GOOD_KEY + "\n")
    _write(tmp / "not.toml", "this is = = not toml [\n")
    _write(tmp / "unknown_key.toml", "roundz = 3\n")
    _write(tmp / "bad_value.toml", "rounds = 0\n")
    _write(tmp / "bad_bool.toml", "quiet = 3\n")
    _write(tmp / "bad_choice.toml", 'seating = "diagonal"\n')
    _write(tmp / "clash.toml", "hands = 2\ntarget_score = 50\n")
    _write(tmp / "entrants_not_array.toml", 'entrants = "x"\n')
    _write(tmp / "entrant_two.toml", '[[entrants]]\npath = "a.py"\nsample = "duck"\n')
    _write(tmp / "entrant_unknown.toml", '[[entrants]]\nsample = "duck"\ncolour = "red"\n')
    _write(tmp / "entrant_sample.toml", '[[entrants]]\nsample = "nosuch"\n')
    _write(tmp / "entrant_command.toml", '[[entrants]]\ncommand = "python3 x.py"\n')
    _write(tmp / "entrant_empty.toml", '[[entrants]]\npath = ""\n')
    _write(tmp / "entrant_dir.toml", '[[entrants]]\nsample = "duck"\ndir = "d"\n')
    _write(tmp / "few.toml", '[[entrants]]\nsample = "duck"\n[[entrants]]\nsample = "low"\n')
    (tmp / "bots").mkdir()
    _write(tmp / "bots" / "bot.py", "print('hi')\n", 0o755)
    (tmp / "notoml").mkdir()
    _write(tmp / "games.jsonl", "this is not json\n")
    _run_json(tmp / "oldrun", {"format_version": 1, "settings": {}, "games_total": 0})
    minimal = {"entrants": [{"name": "duck", "command": ["x"]}], "seed": 1}
    _run_json(tmp / "minrun", {"format_version": 1, "settings": minimal, "games_total": 4})
    (tmp / "badrun").mkdir()
    (tmp / "badrun" / "run.json").write_text("{")
    (tmp / "norun").mkdir()
    (tmp / "norun" / "games.jsonl").write_text("")


#: Sample bots, to make up a field.
THREE = ["sample:duck", "sample:low", "sample:heuristic"]
FOUR = [*THREE, "sample:random"]

#: (case id, arguments). ``{tmp}`` is the temporary folder. Every case ends
#: before a bot or a game starts.
ERROR_CASES: list[tuple[str, list[str]]] = [
    # the parser: unknown commands and options, missing arguments
    ("unknown-command", ["fly"]),
    ("unknown-option", ["--colour"]),
    ("run-unknown-option", ["run", "--roundz", "3"]),
    ("run-abbreviated-option", ["run", "--round", "3"]),
    ("run-option-needs-value", ["run", "--rounds"]),
    ("run-bad-choice", ["run", "--seating", "diagonal"]),
    ("run-bad-format", ["run", "--format", "swiss"]),
    ("run-bad-executor", ["run", "--executor", "ray"]),
    ("run-hands-and-target", ["run", "--hands", "2", "--target-score", "50"]),
    ("report-no-dir", ["report"]),
    ("verify-no-dir", ["verify"]),
    ("cleanup-no-dir", ["cleanup"]),
    ("watch-no-live", ["watch", "{tmp}/empty"]),
    ("replay-no-seat", ["replay", "{tmp}/games.jsonl"]),
    ("replay-trick-and-pass", ["replay", "x", "--seat", "0", "--trick", "2", "--pass"]),
    ("new-bad-language", ["new", "cobol", "{tmp}/newbot"]),
    ("new-no-dir", ["new", "python"]),
    ("play-bad-seat", ["play", "--human", "--seat", "4"]),
    ("play-hands-and-target", ["play", "--hands", "1", "--target-score", "50"]),
    # bounded numbers
    ("rounds-zero", ["run", "--rounds", "0"]),
    ("rounds-not-integer", ["run", "--rounds", "two"]),
    ("rounds-too-many", ["run", "--rounds", "999999999999"]),
    ("hands-zero", ["run", "--hands", "0"]),
    ("hands-too-many", ["run", "--hands", "100000000"]),
    ("target-too-high", ["run", "--target-score", "2147483647"]),
    ("time-limit-zero", ["run", "--time-limit", "0"]),
    ("time-limit-tiny", ["run", "--time-limit", "0.0001"]),
    ("time-limit-nan", ["run", "--time-limit", "nan"]),
    ("time-limit-huge", ["run", "--time-limit", "1e12"]),
    ("time-limit-text", ["run", "--time-limit", "fast"]),
    ("startup-negative", ["run", "--startup-time", "-1"]),
    ("strikes-negative", ["run", "--strikes", "-1"]),
    ("pace-too-long", ["run", "--pace", "4000"]),
    ("pace-text", ["run", "--pace", "slow"]),
    ("wall-cap-below-one", ["run", "--wall-cap", "0.5"]),
    ("wall-cap-text", ["run", "--wall-cap", "x"]),
    ("disqualify-zero", ["run", "--disqualify-after", "0"]),
    ("jobs-zero", ["run", "--jobs", "0"]),
    ("jobs-too-many", ["run", "--jobs", "5000"]),
    ("cores-too-many", ["run", "--cores", "2000"]),
    ("cores-negative", ["run", "--cores", "-1"]),
    ("tmp-size-zero", ["run", "--tmp-size", "0"]),
    ("tmp-size-huge", ["run", "--tmp-size", "99999999"]),
    ("memory-negative", ["run", "--memory-limit", "-5"]),
    ("memory-huge", ["run", "--memory-limit", "99999999999999999999"]),
    ("stderr-negative", ["run", "--stderr-limit", "-1"]),
    ("cpu-limit-negative", ["run", "--cpu-limit", "-1"]),
    ("max-processes-zero", ["run", "--max-processes", "0"]),
    ("max-processes-huge", ["run", "--max-processes", "99999999"]),
    ("max-open-files-huge", ["run", "--max-open-files", "99999999"]),
    ("seed-too-big", ["run", "--seed", str(2**64)]),
    ("seed-text", ["run", "--seed", "abc"]),
    ("games-zero", ["run", "--games", "0"]),
    ("games-too-many", ["run", "--games", "2000000000"]),
    ("sigma-zero", ["run", "--sigma-target", "0"]),
    ("sigma-huge", ["run", "--sigma-target", "5000"]),
    ("ladder-batch-zero", ["run", "--ladder-batch", "0"]),
    ("transcript-cap-zero", ["run", "--transcript-cap", "0"]),
    ("live-delay-negative", ["run", "--live-delay", "-1"]),
    ("live-delay-too-long", ["run", "--live-delay", "4000"]),
    ("play-delay-too-long", ["play", "--delay", "4000"]),
    ("replay-hand-zero", ["replay", "x", "--seat", "0", "--hand", "0"]),
    ("replay-trick-zero", ["replay", "x", "--seat", "0", "--trick", "0"]),
    ("audit-alpha-one", ["audit", "{tmp}/empty", "--alpha", "1"]),
    ("audit-alpha-text", ["audit", "{tmp}/empty", "--alpha", "x"]),
    ("audit-decisions-zero", ["audit", "{tmp}/empty", "--decisions", "0"]),
    ("check-time-limit-zero", ["check", "sample:duck", "--time-limit", "0"]),
    ("check-strikes-negative", ["check", "sample:duck", "--strikes", "-2"]),
    # --fail-if and --junit
    ("fail-if-unknown-metric", ["run", "--fail-if", "pointz>1"]),
    ("fail-if-no-operator", ["run", "--fail-if", "faults"]),
    ("fail-if-bad-value", ["run", "--fail-if", "faults>lots"]),
    ("fail-if-unknown-entrant", ["run", "--fail-if", "faults>nobody"]),
    ("junit-empty", ["run", "--junit", ""]),
    ("junit-folder", ["run", "--junit", "{tmp}/empty"]),
    ("junit-under-file", ["run", "--junit", "{tmp}/file.txt/out.xml"]),
    ("out-empty", ["run", "--out", " "]),
    # flags that do not go together
    ("resume-and-overwrite", ["run", "--resume", "--overwrite", "--out", "{tmp}/empty"]),
    ("seed-and-key-file", ["run", "--seed", "1", "--key-file", "{tmp}/key_good"]),
    ("gauntlet-no-candidate", ["run", "--format", "gauntlet"]),
    ("candidate-not-gauntlet", ["run", "--candidate", "duck"]),
    ("candidate-not-entrant", ["run", "--format", "gauntlet", "--candidate", "nobody"]),
    ("ladder-no-games", ["run", "--format", "ladder"]),
    ("games-not-ladder", ["run", "--games", "8"]),
    ("sigma-not-ladder", ["run", "--sigma-target", "2"]),
    ("ladder-full-seating", ["run", "--format", "ladder", "--games", "8", "--seating", "full"]),
    ("scheduler-not-dask", ["run", "--scheduler", "tcp://127.0.0.1:8786"]),
    ("live-delay-without-live", ["run", "--live-delay", "5"]),
    ("too-many-games", ["run", "--seating", "full", "--rounds", "100000000"]),
    # entrants
    ("too-few-entrants", ["run", "sample:duck", "sample:low"]),
    ("unknown-sample", ["run", "sample:nosuch", *THREE]),
    ("missing-bot-file", ["run", "{tmp}/nope.py", *THREE]),
    ("bot-folder-without-toml", ["run", "{tmp}/notoml", *THREE]),
    (
        "duplicate-entrant-names",
        ["run", "a=sample:duck", "a=sample:low", "sample:heuristic", "sample:random"],
    ),
    ("empty-name-command", ["run", "=", *THREE]),
    # key files
    ("key-file-missing", ["run", "--key-file", "{tmp}/nokey"]),
    ("key-file-bad", ["run", "--key-file", "{tmp}/key_bad"]),
    ("key-file-short", ["run", "--key-file", "{tmp}/key_short"]),
    ("key-file-public", ["run", "--key-file", "{tmp}/key_public"]),
    ("key-file-folder", ["run", "--key-file", "{tmp}/empty"]),
    # --config
    ("config-missing", ["run", "--config", "{tmp}/nope.toml"]),
    ("config-not-toml", ["run", "--config", "{tmp}/not.toml"]),
    ("config-unknown-key", ["run", "--config", "{tmp}/unknown_key.toml"]),
    ("config-bad-value", ["run", "--config", "{tmp}/bad_value.toml"]),
    ("config-bad-bool", ["run", "--config", "{tmp}/bad_bool.toml"]),
    ("config-bad-choice", ["run", "--config", "{tmp}/bad_choice.toml"]),
    ("config-clash", ["run", "--config", "{tmp}/clash.toml"]),
    ("config-entrants-not-array", ["run", "--config", "{tmp}/entrants_not_array.toml"]),
    ("config-entrant-two-kinds", ["run", "--config", "{tmp}/entrant_two.toml"]),
    ("config-entrant-unknown-key", ["run", "--config", "{tmp}/entrant_unknown.toml"]),
    ("config-entrant-bad-sample", ["run", "--config", "{tmp}/entrant_sample.toml"]),
    ("config-entrant-command-no-name", ["run", "--config", "{tmp}/entrant_command.toml"]),
    ("config-entrant-empty-path", ["run", "--config", "{tmp}/entrant_empty.toml"]),
    ("config-entrant-sample-dir", ["run", "--config", "{tmp}/entrant_dir.toml"]),
    ("config-too-few", ["run", "--config", "{tmp}/few.toml"]),
    ("config-is-folder", ["run", "--config", "{tmp}/empty"]),
    # output folders
    ("resume-empty-folder", ["run", "--resume", "--out", "{tmp}/empty", "--hands", "1"]),
    ("resume-not-a-run-file", ["run", "--resume", "--out", "{tmp}/oldrun"]),
    ("resume-unreadable-run-file", ["run", "--resume", "--out", "{tmp}/badrun"]),
    (
        "resume-entrant-without-command",
        ["run", "--resume", "--out", "{tmp}/minrun", "--hands", "1"],
    ),
    ("out-holds-a-tournament", ["run", "--out", "{tmp}/minrun", "--hands", "1"]),
    ("out-is-file", ["run", "--out", "{tmp}/file.txt", "--hands", "1"]),
    ("report-no-run", ["report", "{tmp}/empty"]),
    ("report-missing-folder", ["report", "{tmp}/nothere"]),
    ("verify-no-run", ["verify", "{tmp}/empty"]),
    ("verify-bad-run-no-results", ["verify", "{tmp}/oldrun"]),
    ("verify-no-results", ["verify", "{tmp}/minrun"]),
    ("report-unreadable-run-file", ["report", "{tmp}/badrun"]),
    ("audit-no-run", ["audit", "{tmp}/empty"]),
    ("cleanup-no-run", ["cleanup", "{tmp}/empty"]),
    ("watch-no-run", ["watch", "{tmp}/empty", "--live", "0"]),
    ("watch-not-a-run-file", ["watch", "{tmp}/oldrun", "--live", "0"]),
    ("watch-bad-address", ["watch", "{tmp}/minrun", "--live", "nohost:port"]),
    ("watch-bad-port", ["watch", "{tmp}/minrun", "--live", "99999"]),
    # the tools
    ("check-no-bot", ["check"]),
    ("check-unknown-only", ["check", "sample:duck", "--only", "nosuch"]),
    ("check-missing-bot", ["check", "{tmp}/nope.py"]),
    ("check-scenarios-missing", ["check", "sample:duck", "--scenarios", "{tmp}/noscen"]),
    ("replay-missing-file", ["replay", "{tmp}/nope.jsonl", "--seat", "0"]),
    ("replay-not-json", ["replay", "{tmp}/games.jsonl", "--seat", "0"]),
    ("replay-empty-games", ["replay", "{tmp}/norun/games.jsonl", "--seat", "0"]),
    ("play-too-many-bots", ["play", *FOUR, "sample:search"]),
    ("play-human-four-bots", ["play", "--human", *FOUR]),
    ("replay-no-game-id", ["replay", "{tmp}/minrun", "--seat", "0"]),
    ("replay-unknown-game", ["replay", "{tmp}/norun#r9-t9-k9", "--seat", "0"]),
    ("play-missing-bot", ["play", "{tmp}/nope.py"]),
    ("new-into-full-folder", ["new", "python", "{tmp}/full"]),
    ("new-into-file", ["new", "python", "{tmp}/file.txt"]),
    ("build-no-toml", ["build", "{tmp}/notoml"]),
    ("build-missing-folder", ["build", "{tmp}/nothere"]),
]


@pytest.fixture(autouse=True)
def _width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("LINES", raising=False)


def _normalise(text: str, tmp: Path | None = None) -> str:
    if tmp is not None:
        text = text.replace(str(tmp), "<TMP>")
    return text.replace(f"(Python {platform.python_version()})", "(Python <VERSION>)")


def _compare(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode())
        return
    assert path.exists(), f"no snapshot {path.name}: record it (see the module's docstring)"
    expected = path.read_bytes().decode()
    assert actual == expected, f"{path.name} differs from the snapshot"


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_subcommands_are_those_snapshotted() -> None:
    """A command added or removed needs its ``--help`` snapshot (or its removal)."""
    assert _subcommands() == SUBCOMMANDS


@pytest.mark.parametrize("command", ["", *SUBCOMMANDS])
def test_help_is_the_snapshot(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _call([command, "--help"] if command else ["--help"], capsys)
    assert (code, err) == (0, "")
    _compare(HELP_DIR / f"{command or 'hearts-arena'}.txt", _normalise(out))


def test_bare_command_and_version_are_the_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _call([], capsys)
    assert (code, out) == (2, "")
    _compare(HELP_DIR / "bare.txt", _normalise(err))
    code, out, err = _call(["--version"], capsys)
    assert (code, err) == (0, "")
    _compare(HELP_DIR / "version.txt", _normalise(out).replace(out.split()[1], "<ARENA>", 1))


def test_error_lines_are_the_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case: its exit code and the first line on stderr, byte for byte.
    One test for all cases (one temporary folder), every difference listed."""
    monkeypatch.chdir(tmp_path)  # relative names (--config's, a bot's dir) stay inside
    _setup(tmp_path)
    ids = [case for case, _ in ERROR_CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    actual: dict[str, dict[str, object]] = {}
    for case, template in ERROR_CASES:
        argv = [a.replace("{tmp}", str(tmp_path)) for a in template]
        code, _out, err = _call(argv, capsys)
        first = err.splitlines()[0] if err else ""
        actual[case] = {"argv": template, "exit": code, "stderr": _normalise(first, tmp_path)}
    text = json.dumps(actual, indent=1, ensure_ascii=False) + "\n"
    if UPDATE:
        _compare(ERRORS_FILE, text)
        return
    expected = json.loads(ERRORS_FILE.read_text())
    differ = [
        f"{case}: {expected.get(case)} != {got}"
        for case, got in actual.items()
        if expected.get(case) != got
    ]
    assert not differ, "\n".join(differ)
    assert set(expected) == set(actual), sorted(set(expected) ^ set(actual))
    assert all(int(str(c["exit"])) != 0 for c in actual.values()), "an error case exited 0"
