"""``run --config FILE``: entrants and settings from TOML, the command line
overriding the file, and errors that name the key (exit code 2)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import BOTS, ROOT, bot_path, load_outputs, run_arena

from arena.cli.config import given_on_command_line, load_config
from arena.cli.main import EXIT_USAGE, CliError

CONFIG = """
rounds = 2
hands = 2
seed = 11
time-limit = 0.5
out = "out"
quiet = true
fail_if = ["faults>0"]

[[entrants]]
name = "a"
path = "{bots}/first_legal.py"

[[entrants]]
name = "b"
command = "{bots}/random_legal.py"

[[entrants]]
path = "{bots}/first_legal.py"

[[entrants]]
sample = "low"
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "t.toml"
    for program in ("first_legal", "random_legal"):  # each in a folder of its own
        text = text.replace(f"{{bots}}/{program}.py", str(bot_path(program)))
    path.write_text(text.replace("{bots}", str(BOTS)))
    return path


def test_config_gives_entrants_and_settings(open_tmp: Path) -> None:
    path = write(open_tmp, CONFIG)  # NAME=COMMAND bots run in the file's folder
    assert run_arena(["run", "--config", str(path)]) == 0
    out = open_tmp / "out"  # relative to the file's folder
    results, records = load_outputs(out)
    s = results["settings"]
    assert (s["rounds"], s["hands"], s["seed"], s["time_limit"]) == (2, 2, 11, 0.5)
    assert [e["name"] for e in s["entrants"]] == ["a", "b", "first_legal", "low"]
    assert len(records) == 8


def test_command_line_overrides_the_file(open_tmp: Path) -> None:
    path = write(open_tmp, CONFIG)
    out = open_tmp / "elsewhere"
    args = ["run", "--config", str(path), "--rounds", "1", "--target-score", "5", "--out", str(out)]
    assert run_arena(args) == 0
    s = json.loads((out / "run.json").read_text())["settings"]
    assert s["rounds"] == 1 and s["target_score"] == 5 and s["hands"] is None
    assert s["seed"] == 11  # from the file
    # Bots on the command line replace the file's entrants.
    bots = [f"{n}={BOTS / 'first_legal.py'}" for n in "wxyz"]
    args = ["run", "--config", str(path), *bots, "--out", str(out), "--overwrite", "--rounds", "1"]
    assert run_arena([*args, "--hands", "1"]) == 0
    s = json.loads((out / "run.json").read_text())["settings"]
    assert [e["name"] for e in s["entrants"]] == list("wxyz")


def test_a_format_on_the_command_line_drops_the_files_options_of_another_format(
    open_tmp: Path,
) -> None:
    gauntlet = CONFIG.replace("rounds = 2", 'rounds = 2\nformat = "gauntlet"\ncandidate = "a"')
    path = write(open_tmp, gauntlet)
    out = open_tmp / "rr"
    args = ["run", "--config", str(path), "--format", "round-robin", "--out", str(out)]
    assert run_arena([*args, "--rounds", "1", "--hands", "1"]) == 0
    s = json.loads((out / "run.json").read_text())["settings"]
    assert s["format"] == "round-robin" and s.get("candidate") is None
    assert s["seed"] == 11  # the file's other settings still apply
    # The file's gauntlet, as written, keeps its candidate.
    out = open_tmp / "g"
    assert run_arena(["run", "--config", str(path), "--out", str(out), "--rounds", "1"]) == 0
    s = json.loads((out / "run.json").read_text())["settings"]
    assert s["format"] == "gauntlet" and s["candidate"] == "a"


def test_given_flags_are_found_whatever_their_spelling() -> None:
    given = given_on_command_line(
        ["run", "--config", "x", "--rounds", "3", "--time-limit=2", "a.py"]
    )
    assert {"rounds", "time_limit", "config"} <= given
    assert "seed" not in given and "hands" not in given


def test_the_example_config_is_valid() -> None:
    values, entrants = load_config(ROOT / "examples" / "tournament.toml")
    assert values["format"] == "gauntlet" and values["candidate"] == "kit"
    assert [c.text for c in values["fail_if"]] == ["faults>0", "points_per_hand>random"]
    assert values["out"] == ROOT / "reports" / "example"
    assert (entrants[0].name, entrants[0].program) == ("kit", ROOT / "sample_bots" / "kit_bot.py")
    assert len(entrants) == 5 and entrants[-1].name == "careful"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("rounds = 0\n", "key 'rounds': must be at least 1, got 0"),
        ("roundz = 2\n", "key 'roundz': unknown key (known: "),
        ("quiet = 1\n", "key 'quiet': must be true or false, got 1"),
        ('format = "swiss"\n', "key 'format': must be one of round-robin, gauntlet"),
        ('fail_if = ["speed>1"]\n', "key 'fail_if'[0]: unknown metric 'speed'"),
        ("hands = 1\ntarget_score = 50\n", "keys 'hands' and 'target_score' cannot both be given"),
        ("rounds = [1]\n", "key 'rounds': must be a number or text"),
        ('[[entrants]]\ncommand = "x"\n', "an entrant given by command needs a name"),
        ('[[entrants]]\nsample = "nope"\n', "key 'entrants[0]'.sample: one of"),
        (
            '[[entrants]]\npath = "a"\nsample = "low"\n',
            "give exactly one of command, path and sample",
        ),
        ("rounds = \n", "not TOML"),
    ],
)
def test_errors_name_the_key_and_exit_2(
    tmp_path: Path, text: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CliError) as info:
        load_config(path)
    assert fragment in str(info.value)
    assert info.value.code == EXIT_USAGE
    assert run_arena(["run", "--config", str(path), "--out", str(tmp_path / "o")]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert fragment in err and str(path) in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_a_missing_config_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_arena(["run", "--config", str(tmp_path / "none.toml")]) == EXIT_USAGE
    assert "none.toml" in capsys.readouterr().err


def test_the_ci_guide_job_runs(open_tmp: Path) -> None:
    """docs/ci.md, "A complete job": its check step and its gauntlet config work."""
    guide = (ROOT / "docs" / "ci.md").read_text()
    toml = guide.split("```toml\n", 1)[1].split("```", 1)[0]
    (open_tmp / "ci").mkdir()
    (open_tmp / "ci").chmod(0o755)
    (open_tmp / "ci" / "gauntlet.toml").write_text(toml)
    # The bot reads a data file next to itself: it runs in its own folder.
    (open_tmp / "my_bot.py").write_text((BOTS / "data_bot.py").read_text())
    (open_tmp / "my_bot.py").chmod(0o644)
    (open_tmp / "data_bot.txt").write_text("mine\n")
    (open_tmp / "data_bot.txt").chmod(0o644)
    assert run_arena(["check", str(open_tmp / "my_bot.py"), "--only", "handshake"]) == 0
    junit = open_tmp / "reports" / "gauntlet.xml"
    config = str(open_tmp / "ci" / "gauntlet.toml")
    code = run_arena(
        ["run", "--config", config, "--rounds", "1", "--hands", "1", "--junit", str(junit)]
    )
    assert code in (0, 5)  # 5 if first_legal loses to random on these deals
    settings = json.loads((open_tmp / "reports" / "gauntlet" / "run.json").read_text())["settings"]
    assert settings["format"] == "gauntlet" and settings["candidate"] == "mine"
    results, _ = load_outputs(open_tmp / "reports" / "gauntlet")
    mine = next(r for r in results["standings"] if r["name"] == "mine")
    assert sum(mine["faults"].values()) == 0
    cases = ET.parse(junit).getroot().findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["mine"]  # the candidate only
    assert (cases[0].find("failure") is not None) == (code == 5)


def _bot_in(folder: Path, file: str = "first_legal.py") -> Path:
    """Copy a test bot into ``folder`` (created, readable by the bot users)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    target = folder / file
    target.write_text((BOTS / file).read_text())
    target.chmod(0o644)
    return target


SHORT = 'rounds = 1\nhands = 1\nseed = 3\nquiet = true\nout = "out"\n'
OTHERS = '[[entrants]]\nsample = "low"\n\n[[entrants]]\nsample = "duck"\n\n' + (
    '[[entrants]]\nsample = "random"\n'
)


#: Folder names a path entrant may hold (one run seats a bot in each).
ODD_FOLDERS = ("bots dir", 'it\'s "ünï" = bots', "a'b")


def test_a_path_entrant_may_hold_spaces_quotes_and_unicode(open_tmp: Path) -> None:
    """Issue 14, item 1: ``path = "bots dir/tiny_bot.py"`` was split at the
    space. One run, a bot in each folder of :data:`ODD_FOLDERS` and a sample bot."""
    text = SHORT
    programs = []
    for i, folder in enumerate(ODD_FOLDERS):
        programs.append(
            _bot_in(open_tmp / folder, "first_legal.py").rename(open_tmp / folder / "tiny_bot.py")
        )
        toml_path = f"{folder}/tiny_bot.py".replace("\\", "\\\\").replace('"', '\\"')
        text += f'\n[[entrants]]\nname = "mine{i}"\npath = "{toml_path}"\n'
    path = open_tmp / "t.toml"
    path.write_text(f'{text}\n[[entrants]]\nsample = "low"\n')
    assert run_arena(["run", "--config", str(path)]) == 0
    results, _ = load_outputs(open_tmp / "out")
    entrants = json.loads((open_tmp / "out" / "run.json").read_text())["settings"]["entrants"]
    for i, program in enumerate(programs):
        mine = entrants[i]
        assert mine["name"] == f"mine{i}"
        assert mine["argv"][1] == str(program) and mine["cwd"] == str(program.parent)
        row = next(r for r in results["standings"] if r["name"] == f"mine{i}")
        assert row["games"] == 4 and sum(row["faults"].values()) == 0


def test_sample_entrants_work_when_the_arena_lives_under_a_folder_with_a_space(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14, item 1: ``sample = "low"`` was joined into ``low=/path with space/...``."""
    spaced = open_tmp / "my tools" / "sample_bots"
    shutil.copytree(ROOT / "sample_bots", spaced, dirs_exist_ok=True)
    for p in [spaced.parent, spaced, *spaced.iterdir()]:
        p.chmod(0o755)
    monkeypatch.setattr("arena.sandbox.entrants.sample_bots_dir", lambda: spaced)
    monkeypatch.setattr("arena.core.resources.sample_bots_dir", lambda: spaced)  # one shared folder
    path = open_tmp / "t.toml"
    path.write_text(f'{SHORT}\n{OTHERS}\n[[entrants]]\nsample = "heuristic"\n')
    assert run_arena(["run", "--config", str(path)]) == 0
    results, _ = load_outputs(open_tmp / "out")
    entrants = results["settings"]["entrants"]
    assert [e["argv"][-1] for e in entrants] == [
        str(spaced / f) for f in ("low_bot.py", "duck_bot.py", "random_bot.py", "heuristic_bot.py")
    ]
    assert all(sum(r["faults"].values()) == 0 for r in results["standings"])


def test_a_path_entrant_runs_in_the_folder_of_its_program(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14, item 2: a bot reading a file next to itself crashed in every
    game (it ran in the TOML file's folder) and the run exited 0."""
    program = _bot_in(open_tmp / "sub", "data_bot.py")
    (program.parent / "data_bot.txt").write_text("data-bot\n")
    (program.parent / "data_bot.txt").chmod(0o644)
    path = open_tmp / "t.toml"
    text = (
        f'{SHORT}fail_if = ["faults>0"]\n\n[[entrants]]\nname = "mine"\npath = "sub/data_bot.py"\n'
    )
    path.write_text(f"{text}\n{OTHERS}")
    assert run_arena(["run", "--config", str(path)]) == 0
    results, records = load_outputs(open_tmp / "out")
    mine = next(r for r in results["standings"] if r["name"] == "mine")
    assert mine["games"] == 4 and mine["faults"] == {k: 0 for k in mine["faults"]}
    assert all(r["faults"] == [] for r in records)
    # The same bot as NAME=FILE on the command line runs in its folder too.
    out = open_tmp / "cli"
    bots = [f"mine={program}", "sample:low", "sample:duck", "sample:random"]
    args = ["run", *bots, "--rounds", "1", "--hands", "1", "--quiet", "--out", str(out)]
    assert run_arena([*args, "--fail-if", "faults>0"]) == 0
    # A command entrant naming the program runs in the program's folder too.
    path.write_text(
        f'{SHORT}\n[[entrants]]\nname = "mine"\ncommand = "sub/data_bot.py"\n\n{OTHERS}'.replace(
            'out = "out"', 'out = "cmd"'
        )
    )
    assert run_arena(["run", "--config", str(path), "--fail-if", "faults>0"]) == 0
    assert "fail-if" not in capsys.readouterr().err


def test_a_missing_path_entrant_names_the_key_and_the_whole_path(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = open_tmp / "t.toml"
    path.write_text(f'{SHORT}\n[[entrants]]\nname = "mine"\npath = "bots dir/none.py"\n\n{OTHERS}')
    assert run_arena(["run", "--config", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {path}: key 'entrants[0]'.path: bot file not found: {open_tmp}/bots dir/none.py"
    )


def test_an_entrant_dir_is_its_folder(open_tmp: Path) -> None:
    """``dir`` names the entrant's folder: it runs there and (sealed) sees only it."""
    mine = open_tmp / "mine"
    (mine / "bot").mkdir(parents=True)
    (mine / "data.txt").write_text("from the entrant's folder\n")
    (mine / "bot" / "reader.py").write_text(
        "import sys\n"
        "from botlib import serve\n"
        "print('DATA', open('data.txt').read().strip(), file=sys.stderr, flush=True)\n"
        "serve('reader')\n"
    )
    (mine / "bot" / "botlib.py").write_text((BOTS / "botlib.py").read_text())
    text = '[[entrants]]\nname = "r"\npath = "mine/bot/reader.py"\ndir = "mine"\n'
    text += "".join(f'[[entrants]]\nsample = "{s}"\n' for s in ("low", "duck", "random"))
    path = open_tmp / "t.toml"
    path.write_text(f'hands = 1\nrounds = 1\nseed = 3\nout = "out"\nquiet = true\n{text}')
    assert run_arena(["run", "--config", str(path)]) == 0
    results, records = load_outputs(open_tmp / "out")
    assert all(sum(row["faults"].values()) == 0 for row in results["standings"])
    for rec in records:
        assert "DATA from the entrant's folder" in rec["stderr"][rec["seats"].index("r")]


def test_a_program_outside_its_dir_is_refused(
    open_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (open_tmp / "empty").mkdir()
    text = f'[[entrants]]\nname = "a"\npath = "{bot_path("first_legal")}"\ndir = "empty"\n'
    text += "".join(f'[[entrants]]\nsample = "{s}"\n' for s in ("low", "duck", "random"))
    path = open_tmp / "t.toml"
    path.write_text(text)
    assert run_arena(["run", "--config", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"entrant 'a': its program {bot_path('first_legal')} is not in its dir" in err
