"""The README's "Running a competition server" commands (issue 27), as
written: ``serve DIR --init`` and ``serve DIR --add NAME --token-file F`` run
on a temporary folder (``DIR`` and the web user replaced: ``nobody`` stands for
``hearts-web``); ``serve DIR --user U`` and ``submit URL PATH --token-file F
--wait`` are parsed by the real parser (starting a server and a submission's
check and validation is test_serve_e2e's and test_submit's)."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import pytest

from arena.cli.main import build_parser, main

ROOT = Path(__file__).parents[2]


def _server_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Running a competition server\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["sudo"]:
            words = words[1:]
        assert words[0] == "hearts-arena", line
        out.append(words[1:])
    return out


def test_the_readme_names_the_three_serve_commands_and_submit() -> None:
    commands = _server_commands()
    assert [c[0] for c in commands] == ["serve", "serve", "serve", "submit"]
    assert "--init" in commands[0] and "--add" in commands[1] and "--token-file" in commands[1]
    assert "--user" in commands[2] and {"--token-file", "--wait"} <= set(commands[3])
    section = (ROOT / "README.md").read_text().split("## Running a competition server\n")[1]
    for doc in ("docs/competition-server.md", "docs/server-web.md"):
        assert f"]({doc})" in section.split("\n## ")[0]


def test_the_readme_serve_commands_run_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "srv"

    def real(words: list[str]) -> list[str]:
        user = "nobody" if os.geteuid() == 0 else None
        out = []
        for i, w in enumerate(words):
            if w == "DIR":
                w = str(folder)
            if i and words[i - 1] == "--user":
                if user is None:  # not root: --user is refused at --init
                    out.pop()
                    continue
                w = user
            out.append(w)
        return out

    init, add, start, submit = (real(c) for c in _server_commands())
    assert main(init) == 0
    assert "key SHA-256: " in capsys.readouterr().out
    assert main(add) == 0
    assert "token written to alice.token" in capsys.readouterr().out
    token = (tmp_path / "alice.token").read_text().strip()
    assert len(token) >= 43
    assert stat.S_IMODE((tmp_path / "alice.token").stat().st_mode) == 0o600
    # The start and the submission, parsed as written.
    args = build_parser().parse_args(start)
    assert (args.command, args.folder, args.listen) == ("serve", folder, "127.0.0.1:8000")
    args = build_parser().parse_args(submit)
    assert args.command == "submit" and args.wait and args.token_file == Path("alice.token")
