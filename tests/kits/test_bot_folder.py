"""Bot folders (``bot.toml``), ``hearts-arena new`` and ``hearts-arena build``
(issue 25): the file's checks and their one-line errors, the entrant a
folder gives (its command, its name, the folder it runs in), and the
commands' refusals. No toolchain needed: the folders hold Python bots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import BOTS, run_arena

from arena.cli.config import load_config
from arena.cli.errors import CliError
from arena.cli.kits import KITS
from arena.core.resources import kits_dir
from arena.sandbox.botfolder import BotFolderError, load_bot_folder
from arena.sandbox.entrants import EntrantError, parse_entrant


def _folder(tmp_path: Path, toml: str, name: str = "mybot") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "bot.toml").write_text(toml, encoding="utf-8")
    (folder / "first_legal.py").write_text((BOTS / "first_legal.py").read_text())
    return folder


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('name = "x"\n', "key 'command' is missing"),
        ('command = "a.py"\ncomand = "b"\n', "unknown key 'comand' (known: build, command, name)"),
        ("command = 3\n", "key 'command': must be text, got int"),
        ('command = ""\n', "key 'command': must not be empty"),
        ('command = "a.py"\nname = ""\n', "key 'name': must not be empty"),
        (f'command = "a.py"\nname = "{"n" * 65}"\n', "key 'name': longer than 64 characters"),
        ('command = "a.py \'unclosed"\n', "key 'command': cannot split it into words"),
        ('command = "   "\n', "key 'command': holds no command"),
        ('command = "a.py"\nbuild = ["make"]\n', "key 'build': must be text, got list"),
        ("command = \n", "not TOML"),
    ],
)
def test_bot_toml_errors_are_one_line_naming_the_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    folder = _folder(tmp_path, toml)
    with pytest.raises(BotFolderError) as caught:
        load_bot_folder(folder)
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert text.startswith(str(folder.resolve() / "bot.toml"))


def test_bot_toml_read_whole(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'name = "mine"\nbuild = "make -j2 bot"\ncommand = "./bot --fast"\n')
    spec = load_bot_folder(folder)
    assert spec.folder == folder.resolve()
    assert spec.command == ("./bot", "--fast")
    assert spec.build == ("make", "-j2", "bot")
    assert spec.name == "mine"
    assert spec.missing_files() == ["./bot"]  # not built yet


def test_a_folder_is_an_entrant_running_in_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'command = "first_legal.py --x"\n')
    entrant = parse_entrant(str(folder))
    assert entrant.name == "mybot"  # the folder's name
    assert entrant.cwd == folder.resolve()
    assert entrant.argv == (sys.executable, str(folder.resolve() / "first_legal.py"), "--x")
    assert entrant.source == str(folder)


def test_a_folder_name_from_bot_toml_then_from_the_command_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'name = "from-toml"\ncommand = "first_legal.py"\n')
    assert parse_entrant(str(folder)).name == "from-toml"
    given = parse_entrant(f"typed={folder}")
    assert given.name == "typed" and given.cwd == folder.resolve()


def test_a_folder_relative_to_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, 'command = "python3 first_legal.py"\n')
    (folder / "sub").mkdir()
    monkeypatch.chdir(folder / "sub")
    entrant = parse_entrant("..")
    assert entrant.cwd == folder.resolve()
    assert entrant.argv[1] == str(folder.resolve() / "first_legal.py")
    assert entrant.name == "mybot"  # ".." names no folder: the resolved one's name


def test_an_unbuilt_folder_says_to_build_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'build = "sh build.sh"\ncommand = "java -jar bot.jar"\n')
    with pytest.raises(
        EntrantError, match=r"is not built \(bot.jar is missing\): run `hearts-arena build "
    ):
        parse_entrant(str(folder))


def test_a_program_outside_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.py").write_text("print()\n")
    folder = _folder(tmp_path, 'command = "python3 ../elsewhere.py"\n')
    with pytest.raises(EntrantError, match="is not in its dir"):
        parse_entrant(str(folder))


def test_a_folder_without_bot_toml_says_so(tmp_path: Path) -> None:
    with pytest.raises(EntrantError, match=r"is a folder without a bot\.toml"):
        parse_entrant(str(tmp_path))


def test_config_path_names_a_bot_folder(tmp_path: Path) -> None:
    _folder(tmp_path, 'name = "toml-name"\ncommand = "first_legal.py"\n')
    config = tmp_path / "t.toml"
    config.write_text('[[entrants]]\npath = "mybot"\n[[entrants]]\nname = "two"\npath = "mybot"\n')
    _values, entrants = load_config(config)
    assert [e.name for e in entrants] == ["toml-name", "two"]
    assert {e.cwd for e in entrants} == {(tmp_path / "mybot").resolve()}


def test_config_with_a_broken_bot_toml_names_the_entrant(tmp_path: Path) -> None:
    _folder(tmp_path, "command = 1\n")
    config = tmp_path / "t.toml"
    config.write_text('[[entrants]]\npath = "mybot"\n')
    with pytest.raises(CliError, match=r"key 'entrants\[0\]'.path: .*key 'command': must be text"):
        load_config(config)


def test_check_takes_a_bot_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'name = "folder-bot"\ncommand = "first_legal.py"\n')
    junit = tmp_path / "c.xml"
    assert (
        run_arena(
            ["check", str(folder), "--no-sandbox", "--only", "handshake", "--junit", str(junit)]
        )
        == 0
    )
    assert "folder-bot" in junit.read_text()


# -- new and build ----------------------------------------------------------------


@pytest.mark.parametrize("language", sorted(KITS))
def test_new_copies_the_kit_with_its_bot_toml(
    language: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "fresh" / "bot"
    assert run_arena(["new", language, str(folder)]) == 0
    source = kits_dir() / KITS[language][0]
    copied = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    assert set(shipped) <= set(copied)
    assert "bot.toml" in copied and "README.md" in copied
    spec = load_bot_folder(folder)
    out = capsys.readouterr().out
    assert f"hearts-arena check {folder}" in out
    assert (f"hearts-arena build {folder}" in out) == (spec.build is not None)
    if language == "python":
        assert "botkit.py" in copied  # the kit itself, so the bot runs with any Python 3.11


def test_new_python_bot_plays_without_the_arena_installed(tmp_path: Path) -> None:
    """The Python kit's copy runs with ``python3 -I`` (no arena on its path)."""
    import subprocess

    folder = tmp_path / "py"
    assert run_arena(["new", "python", str(folder)]) == 0
    hello = json.dumps({"type": "hello", "id": 4, "protocol": "hearts-arena/1", "time_ms": 1})
    done = subprocess.run(
        [sys.executable, "-I", "bot.py"],
        cwd=folder,
        input=hello + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout) == {
        "type": "hello", "id": 4, "name": "python-kit", "author": "hearts-arena kits", "version": "1"
    }  # fmt: skip


def test_new_refuses_a_folder_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert run_arena(["new", "go", str(tmp_path)]) == 3
    assert "already exists and is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_arena(["new", "go", str(empty)]) == 0
    assert (empty / "bot.toml").is_file()


def test_new_refuses_an_unknown_language(tmp_path: Path) -> None:
    assert run_arena(["new", "cobol", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


def test_build_runs_the_build_command_in_the_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 'build = "sh make.sh"\ncommand = "./made"\n')
    (folder / "make.sh").write_text(
        "pwd > where.txt\nprintf '#!/bin/sh\\n' > made\nchmod +x made\n"
    )
    with pytest.raises(EntrantError, match="is not built"):
        parse_entrant(str(folder))
    assert run_arena(["build", str(folder)]) == 0
    assert (folder / "where.txt").read_text().strip() == str(folder.resolve())
    assert parse_entrant(str(folder)).argv == (str(folder.resolve() / "made"),)


def test_build_failure_and_missing_tool_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = _folder(tmp_path, 'build = "sh -c \'exit 7\'"\ncommand = "./x"\n', "failing")
    assert run_arena(["build", str(failing)]) == 5
    assert "failed (exit 7)" in capsys.readouterr().err
    absent = _folder(tmp_path, 'build = "no-such-compiler-here"\ncommand = "./x"\n', "absent")
    assert run_arena(["build", str(absent)]) == 4
    assert "'no-such-compiler-here' not found on PATH" in capsys.readouterr().err
    nothing = _folder(tmp_path, 'command = "first_legal.py"\n', "nothing")
    assert run_arena(["build", str(nothing)]) == 0
    assert "nothing to build" in capsys.readouterr().out
    assert run_arena(["build", str(tmp_path)]) == 2
    assert "bot.toml" in capsys.readouterr().err
