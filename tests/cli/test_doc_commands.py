"""Every command of README.md and docs/*.md that starts a tournament runs as
written, sealed, on a checkout's layout (issue 24 item 2: ``run --config
examples/tournament.toml`` and the ``bots/*.py`` layout were refused once
bubblewrap was installed, because the bots shared a folder).

Each ``sh`` block is read, its ``hearts-arena run`` commands run (in this
process, with the words the shell would pass: one interpreter's start less
each; test_a_documented_command_runs_from_the_shell runs the installed
command from bash) in a copy of the checkout's ``examples/`` and ``sample_bots/`` (as a fresh clone has them:
not the package's own sample folder), with the bot files they name made from
a sample bot, at a reduced size (``--rounds 1 --hands 1``, a ladder's
``--games 4``, any free port for ``--live``, no live delay) and ``--sandbox``
unless the command says ``--no-sandbox``: a refusal (exit 2, 3 or 4) fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

from arena.cli.main import main

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

#: Commands that need what a test machine has not (a Dask scheduler's address).
NEEDS_MORE: tuple[str, ...] = ("tcp://SCHEDULER",)
#: The bots a glob (``bots/*/*.py``) finds: each in a folder of its own.
FIELD = ("alice", "bob", "carol", "dave")


def _blocks(path: Path) -> list[tuple[int, str]]:
    """The ``sh`` blocks of a Markdown file: (line of the fence, text)."""
    out = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```sh", "```bash", "```shell"):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start, "\n".join(body)))
        i += 1
    return out


def _commands(text: str) -> list[str]:
    """The ``hearts-arena run`` commands of a block, continuations joined,
    comments dropped, ``pip install . &&`` before them left out."""
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        for part in " ".join(shlex.quote(w) for w in words).split(" '&&' "):
            if part.startswith("hearts-arena run") or part.startswith("python -m arena run"):
                found.append(part)
    return found


def _cases() -> list[object]:
    cases = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line, block in _blocks(doc):
            for command in _commands(block):
                if not any(marker in command for marker in NEEDS_MORE):
                    cases.append(pytest.param(command, id=f"{doc.name}:{line}:{command[:60]}"))
    return cases


CASES = _cases()


def test_the_docs_hold_the_commands_that_start_tournaments() -> None:
    commands = [c.values[0] for c in CASES]
    assert "hearts-arena run --config examples/tournament.toml" in commands
    assert sum("bots/*/*.py" in c for c in commands) >= 4
    assert len(commands) >= 9


def _bot_file(path: Path) -> None:
    """A bot at ``path`` (a copy of the low sample bot; executable when it has
    no ``.py``), in a folder the bot users can read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for folder in (path.parent, *path.parent.parents):
        if folder == Path("/") or folder.stat().st_uid != 0:
            break
        folder.chmod(folder.stat().st_mode | 0o755)
    source = (ROOT / "sample_bots" / "low_bot.py").read_text()
    if path.suffix == ".py":
        path.write_text(source)
        path.chmod(0o644)
    else:
        path.write_text(f"#!{sys.executable}\n{source}")
        path.chmod(0o755)


def _prepare(command: str, place: Path) -> list[str]:
    """Make the files the command names, and return it (as words) at a reduced size."""
    words = shlex.split(command)
    for word in words[2:]:
        if word.startswith("-"):
            continue
        for piece in shlex.split(word.partition("=")[2]) if "=" in word else [word]:
            if "*" in piece:
                root = Path(piece.split("*")[0])
                for name in FIELD:
                    _bot_file(Path(place, root, name, f"{name}.py") if not root.is_absolute()
                              else Path(root, name, f"{name}.py"))  # fmt: skip
            elif piece.startswith("bots/") or piece.endswith(".py"):
                target = Path(place, piece)
                if not target.exists():
                    _bot_file(target)
    out = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in ("--live", "--live-delay"):
            value = words[i + 1]
            if word == "--live":
                host = value.rpartition(":")[0]
                out += [word, f"{host}:0" if host else "0"]
            else:
                out += [word, "0"]
            skip = True
            continue
        out.append(word)
    out += ["--rounds", "1", "--hands", "1", "--quiet"]
    if "--format" in out and out[out.index("--format") + 1] == "ladder":
        out += ["--games", "4"]
    if "--no-sandbox" not in out:
        out.append("--sandbox")  # sealed, or exit 4: the rule on folders applies
    return out


@pytest.mark.parametrize("command", CASES)
def test_a_documented_command_runs_as_written(
    command: str,
    open_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    place = open_tmp / "checkout"
    place.mkdir()
    place.chmod(0o755)
    for folder in ("examples", "sample_bots"):
        shutil.copytree(ROOT / folder, place / folder)
    if "ci/gauntlet.toml" in command:  # the config docs/ci.md shows beside the command
        guide = (ROOT / "docs" / "ci.md").read_text()
        toml = guide.split("```toml\n", 1)[1].split("```", 1)[0]
        (place / "ci").mkdir(mode=0o755)
        (place / "ci" / "gauntlet.toml").write_text(toml)
        for entrant in tomllib.loads(toml).get("entrants", []):
            if "path" in entrant:
                _bot_file(Path(place, "ci", entrant["path"]).resolve())
    words = _prepare(command, place)
    assert words[:2] == ["hearts-arena", "run"]
    monkeypatch.chdir(place)  # relative paths as from the checkout's top
    capsys.readouterr()
    code = main(["run", *_globbed(words[2:], place)])
    out, err = capsys.readouterr()
    assert code in (0, 5), f"exit {code}: {err[-2000:]}"
    assert "refused" not in err and not re.search(r"^error:", err, re.M)
    assert "--dry-run" in words or "games; report:" in out


def _globbed(words: list[str], place: Path) -> list[str]:
    """The words as the shell hands them to the program: one with a ``*``
    (a glob, quoted or not in the docs: unquoted here) replaced by the paths
    it matches under ``place``, sorted, or kept as it is if none does."""
    out = []
    for word in words:
        found = sorted(str(p.relative_to(place)) for p in place.glob(word)) if "*" in word else []
        out += found or [word]
    return out


def test_a_documented_command_runs_from_the_shell(open_tmp: Path) -> None:
    """The installed ``hearts-arena`` command, from bash in a checkout: the
    glob of the README's first field (``bots/*/*.py``, one folder a bot) is
    the shell's, as a reader types it (the test above runs each documented
    command in this process, with the same words)."""
    place = open_tmp / "checkout"
    for name in FIELD:
        _bot_file(place / "bots" / name / f"{name}.py")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        ["bash", "-c", "hearts-arena run bots/*/*.py --rounds 1 --hands 1 --sandbox --out o"],
        cwd=place, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "games; report:" in proc.stdout
    results = json.loads((place / "o" / "results.json").read_text())
    assert sorted(row["name"] for row in results["standings"]) == sorted(FIELD)
    assert results["complete"] is True and results["games_played"] == 4
