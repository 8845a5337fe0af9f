"""protocol/FIRST_BOT.md: its generated exchange is up to date with the code,
and its 20-line bot passes ``hearts-arena check``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import ROOT

from arena.protocol.codec import check_referee_message
from arena.sandbox.entrants import parse_entrant
from arena.tools.check import CheckSettings, load_scenarios, run_checks
from arena.tools.docs import regenerate

GUIDE = ROOT / "protocol" / "FIRST_BOT.md"


def test_the_generated_exchange_is_up_to_date() -> None:
    ((path, (old, new)),) = regenerate(ROOT / "protocol").items()
    assert path == GUIDE
    assert old == new, "protocol/FIRST_BOT.md is out of date: run python -m arena.tools.docs"


def test_the_exchange_is_a_real_hand_of_valid_messages() -> None:
    text = GUIDE.read_text()
    block = text.split("<!-- BEGIN GENERATED example-exchange", 1)[1]
    lines = re.findall(r"^([<>]) (.*)$", block, re.MULTILINE)
    sent = [json.loads(body) for mark, body in lines if mark == ">"]
    for message in sent:
        check_referee_message(message)
    kinds = [m["type"] for m in sent]
    assert kinds[0] == "game_start" and kinds[-1] == "game_end"
    assert kinds.count("play") + kinds.count("pass") == sum(mark == "<" for mark, _ in lines)
    assert kinds.count("trick") == 13


def test_the_minimum_bot_is_at_most_20_lines_and_passes_check(open_tmp: Path) -> None:
    text = GUIDE.read_text()
    section = text.split("## The minimum bot", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 20
    path = open_tmp / "first_bot.py"
    path.write_text(code)
    path.chmod(0o644)
    report = run_checks(parse_entrant(str(path)), load_scenarios(), CheckSettings())
    assert report.passed, [f"{r.name}: {r.reason}" for r in report.results if not r.passed]
