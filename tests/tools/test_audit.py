"""``hearts-arena audit``: the clairvoyance signal, the command, determinism.

The runs are played in-process (``tests/audit_runs.py``: the real schedule,
deals of a public seed and the rules engine, the players policies of
``tests/bots/cheatlib.py``), so each takes seconds.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import audit_runs
import cheatlib

from arena.cli.main import main
from arena.tools import audit as au

BUDGET = 400  # the players' search, simulated card plays per decision
AUDIT_BUDGET = 1000

# Each test takes seconds of CPU; a busy machine stretches the wall time.
pytestmark = pytest.mark.timeout(600)


def honest_field(seed: str) -> dict[str, Any]:
    return {
        "search": lambda: cheatlib.HonestSearch(BUDGET),
        "heuristic": lambda: audit_runs.Heuristic(),
        "search2": lambda: cheatlib.HonestSearch(BUDGET),
        "random": lambda: audit_runs.Random(),
    }


def run_audit(folder: Path, **kw: Any) -> au.AuditResult:
    kw.setdefault("decisions", 150)
    kw.setdefault("budget", AUDIT_BUDGET)
    return au.audit(au.load_run(folder), **kw)


@pytest.fixture(scope="module")
def clairvoyant_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """48 one-hand games (each entrant plays 48 hands): two honest search
    players, the heuristic, and a player that knows every hand from the
    public seed and plays the same search on them."""
    seed = "audit-c1"
    field = {
        "search": lambda: cheatlib.HonestSearch(BUDGET),
        "heuristic": lambda: audit_runs.Heuristic(),
        "search2": lambda: cheatlib.HonestSearch(BUDGET),
        "cheat": lambda: cheatlib.Clairvoyant(seed, BUDGET),
    }
    return audit_runs.build_run(tmp_path_factory.mktemp("c") / "run", field, seed=seed, rounds=12)


@pytest.fixture(scope="module")
def judgments() -> dict[tuple[Any, ...], au.Judged]:
    """What :func:`arena.tools.audit.judge` said of each decision, kept for the module."""
    return {}


@pytest.fixture
def judged_once(
    judgments: dict[tuple[Any, ...], au.Judged], monkeypatch: pytest.MonkeyPatch
) -> dict[tuple[Any, ...], au.Judged]:
    """The commands' audits of the clairvoyant run (the same 60 decisions, budget
    and key three times: JSON, text, the report's) judge each decision once:
    ``judge`` depends on the decision, its seed, the budget and the
    counterfactuals only (its docstring), so a later audit is served what an
    earlier one computed. In this process only (``--jobs 1``); the jobs test
    does not use it."""
    real = au.judge

    def judge(d: au.Decision, search: Any, seed: str, budget: int, cfs: int) -> au.Judged:
        key = (d.ref, d.entrant, d.card, seed, budget, cfs)
        if key not in judgments:
            judgments[key] = real(d, search, seed, budget, cfs)
        return judgments[key]

    monkeypatch.setattr(au, "judge", judge)
    return judgments


@pytest.mark.parametrize("seed", ["audit-h1", "audit-h2", "audit-h3"])
def test_an_honest_field_is_not_flagged(tmp_path: Path, seed: str) -> None:
    folder = audit_runs.build_run(tmp_path / "run", honest_field(seed), seed=seed, rounds=8)
    result = run_audit(folder)
    assert result.flagged == []
    for name, signals in result.entrants.items():
        c = signals["clairvoyance"]
        if name != "random":  # a random player rarely meets the searches' moves
            assert c["tested"], (name, c)
            assert c["rate"] < c["expected"] + 0.2
        assert not any(s["flagged"] for s in signals.values())
    assert result.tests >= 8


def test_a_player_that_sees_every_hand_is_flagged_within_200_hands(clairvoyant_run: Path) -> None:
    result = run_audit(clairvoyant_run)
    assert result.flagged == ["cheat"]
    c = result.entrants["cheat"]["clairvoyance"]
    assert c["flagged"] and c["tested"]
    # It plays the full-information move wherever it differs from the view's.
    assert c["rate"] > 0.9 and c["rate"] - c["expected"] > 0.3
    assert c["interval"][0] > 0 and c["z"] > 4
    assert not result.entrants["cheat"]["memory"]["flagged"]
    hands = sum(
        len(r["hands"]) for r in au.load_run(clairvoyant_run).records if "cheat" in r["seats"]
    )
    assert hands <= 200
    # The decisions that weigh most, with links into the replay player.
    shown = result.evidence["cheat"]
    assert shown and shown[0]["seat_view"].startswith("games/")
    assert "#h=1&t=" in shown[0]["seat_view"] and shown[0]["full_deal"].endswith("seat=open")
    assert shown[0]["card"] in (shown[0]["full_information_move"], *cheatlib_cards(shown[0]))


def cheatlib_cards(row: dict[str, Any]) -> list[str]:
    """A card interchangeable with the full-information move is the same move."""
    return [row["card"]]


def test_the_output_does_not_depend_on_jobs(clairvoyant_run: Path) -> None:
    one = run_audit(clairvoyant_run, decisions=40, jobs=1).to_json()
    two = run_audit(clairvoyant_run, decisions=40, jobs=2).to_json()
    assert one == two
    assert one["entrants"]["cheat"]["clairvoyance"]["decisions"] == 40


def test_decisions_are_sampled_from_the_key(clairvoyant_run: Path) -> None:
    run = au.load_run(clairvoyant_run)
    every = au.sample_decisions(run, 10**6)
    some = au.sample_decisions(run, 30)
    assert all(len(v) == 30 for v in some.values())
    for name in run.names:
        assert set(some[name]) <= set(every[name]) and len(every[name]) > 30
    assert some == au.sample_decisions(run, 30)


def test_contested_is_the_search_bots_own_test(clairvoyant_run: Path) -> None:
    """The audit's cheap test on the hand's state says what the search's
    ``candidate_groups`` and points-left test say on the seat's view."""
    run = au.load_run(clairvoyant_run)
    search = au.search_module()
    checked = both = 0
    for g, rec in enumerate(run.records[:12]):
        fast = {ref for _, ref in au.contested_refs(rec, g)}
        for d in au.iter_decisions(rec, g):
            view = d.view
            k = search.Knowledge(view)
            groups = search.candidate_groups(k, au.mask_of_names(view["legal"]))
            left = (k.unseen | k.hand) & search.POINT_CARDS or any(
                search.POINTS[c] for c in k.trick
            )
            slow = len(view["legal"]) > 1 and len(groups) > 1 and bool(left)
            assert (d.ref in fast) == slow, (rec["game_id"], d.ref)
            checked += 1
            both += slow
    assert checked == 12 * 52 and 0 < both < checked


def test_holm_steps_down() -> None:
    p = {("a", "x"): 0.001, ("b", "x"): 0.003, ("c", "x"): 0.02, ("d", "x"): 0.5}
    # 0.001 <= 0.01/4, 0.003 <= 0.01/3, 0.02 > 0.01/2: stops there.
    assert au.holm(p, 0.01) == {("a", "x"), ("b", "x")}
    assert au.holm(p, 0.001) == set()


def test_the_command_prints_json_and_exits_5_on_a_flag(
    clairvoyant_run: Path,
    capsys: pytest.CaptureFixture[str],
    judged_once: dict[tuple[Any, ...], au.Judged],
) -> None:
    code = main(
        [
            "audit",
            str(clairvoyant_run),
            "--json",
            "--decisions",
            "60",
            "--jobs",
            "1",
            "--budget",
            str(AUDIT_BUDGET),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 5
    assert out["flagged"] == ["cheat"] and out["correction"] == "holm"
    assert set(out["entrants"]) == {"search", "heuristic", "search2", "cheat"}
    assert set(out["entrants"]["cheat"]) == {"clairvoyance", "memory", "collusion"}
    assert out["entrants"]["cheat"]["clairvoyance"]["decisions"] == 60
    written = json.loads((clairvoyant_run / "audit.json").read_text())
    assert written == out
    code = main(
        [
            "audit",
            str(clairvoyant_run),
            "--decisions",
            "60",
            "--jobs",
            "1",
            "--budget",
            str(AUDIT_BUDGET),
            "--no-write",
        ]
    )
    text = capsys.readouterr().out
    assert code == 5
    assert "flagged at alpha 0.01 (Holm over" in text and text.count("\n") == 7
    assert "cheat" in text.splitlines()[-2]
    assert len(judged_once) == 4 * 60  # the text run judged the JSON run's decisions


def test_the_command_refuses_a_run_whose_key_is_not_revealed(
    tmp_path: Path, clairvoyant_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "unfinished"
    folder.mkdir()
    for name in ("run.json", "games.jsonl"):
        (folder / name).write_text((clairvoyant_run / name).read_text())
    results = json.loads((clairvoyant_run / "results.json").read_text())
    del results["key"]
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["audit", str(folder)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: audit: results.json reveals no key") and "\n" not in err
    assert main(["audit", str(tmp_path / "nothing")]) == 3
    assert "holds no tournament" in capsys.readouterr().err
    results["key"] = "00" * 32  # not the committed key
    (folder / "results.json").write_text(json.dumps(results))
    assert main(["audit", str(folder)]) == 3
    assert "commitment" in capsys.readouterr().err


def test_the_report_gets_a_fair_play_section(
    tmp_path: Path,
    clairvoyant_run: Path,
    capsys: pytest.CaptureFixture[str],
    judged_once: dict[tuple[Any, ...], au.Judged],
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(clairvoyant_run, folder)
    (folder / "audit.json").unlink(missing_ok=True)
    key = au.load_run(folder).key
    (folder / "tournament.key").write_text(key.hex() + "\n")
    (folder / "tournament.key").chmod(0o600)
    assert main(["report", str(folder)]) == 0
    assert "Fair play" not in (folder / "index.html").read_text()
    code = main(["audit", str(folder), "--decisions", "60", "--jobs", "1", "--budget", "1000"])
    assert code == 5
    html = (folder / "index.html").read_text()
    section = html[html.index('<h2 id="fair-play">Fair play</h2>') : html.index("<h2>Games</h2>")]
    assert "not a verdict" in section
    assert ">cheat</a>: flagged</h3>" in section and "Clairvoyance (flagged)" in section
    for name in ("search", "heuristic", "search2"):
        assert f">{name}</a>: not flagged.</li>" in section
    assert 'href="games/' in section and "seat=open" in section
    # results.json keeps the key, and the audit verifies against it again.
    assert json.loads((folder / "results.json").read_text())["key"] == key.hex()
    capsys.readouterr()
