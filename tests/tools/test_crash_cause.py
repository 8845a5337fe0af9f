"""A crash's cause is shown, not only its last lines (issue 24 item 3): the
start of the error report (node's line that threw and its ``TypeError``,
Python's ``Traceback``) and its end, in the record's report rows, in
``replay`` and in ``check -v``, with real node and Python bots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import BOTS, bot, run_arena

from arena.protocol.codec import error_excerpt
from arena.report.outputs import stderr_error

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
TYPE_ERROR = "TypeError: Cannot read properties of undefined (reading 'first')"


def _node_bot(tmp_path: Path) -> str:
    folder = tmp_path / "nodebot"
    folder.mkdir()
    shutil.copy(BOTS / "crash_node.js", folder / "crash_node.js")
    return f"node=node {folder / 'crash_node.js'}"


def _run(tmp_path: Path, entrant: str, name: str) -> tuple[Path, dict]:  # type: ignore[type-arg]
    out = tmp_path / "out"
    args = ["run", entrant, "sample:low", "sample:duck", "sample:random", "--hands", "1"]
    args += ["--rounds", "1", "--seed", "3", "--out", str(out), "--quiet", "--jobs", "1"]
    assert run_arena(args) == 0
    records = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    rec = records[0]
    [fault] = [f for f in rec["faults"] if f["entrant"] == name]
    assert fault["reason"] == "crashed" and fault["trick_number"] == 3
    return out, rec


@needs_node
def test_a_node_crash_shows_its_typeerror_and_the_line_that_threw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, rec = _run(tmp_path, _node_bot(tmp_path), "node")
    seat = rec["seats"].index("node")
    shown = stderr_error(rec, seat)
    assert shown[0].endswith("crash_node.js:20")  # the line that threw
    assert shown[1].strip() == 'send({ type: "play", id: msg.id, card: seen.first });'
    assert shown[3] == TYPE_ERROR
    assert shown[-1] == "Node.js v20.20.2" or shown[-1].startswith("Node.js v")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f"<br>{TYPE_ERROR.replace(chr(39), '&#39;')}<br>" in index
    capsys.readouterr()
    ref = f"{out}#{rec['game_id']}"
    code = run_arena(["replay", ref, "--seat", "node", "--hand", "1", "--trick", "3", "-v"])
    assert code == 0  # the same crash
    printed = capsys.readouterr().out
    then = printed.split("stderr then:\n", 1)[1]
    now = printed.split("stderr now:\n", 1)[1]
    for part in (then, now):
        assert f"  {TYPE_ERROR}\n" in part
        assert "crash_node.js:20\n" in part.split(TYPE_ERROR)[0]


@needs_node
def test_check_shows_a_node_crashs_typeerror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entrant = _node_bot(tmp_path)
    run_arena(["check", entrant, "-v"])
    printed = capsys.readouterr().out
    assert TYPE_ERROR in printed
    assert "crash_node.js:20" in printed


def test_a_python_crash_shows_its_traceback_start_and_its_error(tmp_path: Path) -> None:
    out, rec = _run(tmp_path, bot("crash_traceback", "py"), "py")
    shown = stderr_error(rec, rec["seats"].index("py"))
    assert shown[0] == "Traceback (most recent call last):"
    assert shown[-1] == "ZeroDivisionError: division by zero"
    assert "..." in shown and len(shown) == 9  # 4 first lines, the cut, 4 last
    assert not any(line.startswith("debug: thinking") for line in shown)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "stderr at the crash:<br>Traceback (most recent call last):<br>" in index


def test_the_excerpt_without_a_known_opening_is_the_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(20)) + "\n\n"
    assert error_excerpt(text) == [f"line {i}" for i in range(12, 20)]
    assert error_excerpt("") == []
    assert error_excerpt("a\x1b[31mb\n") == ["a\\x1b[31mb"]  # made visible
