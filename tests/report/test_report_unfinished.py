"""The report of an interrupted run shows no card of a deal still to be
played (issue 24 item 10): the other rotations of its table, which
``--resume`` plays, are dealt the same cards (R2)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from arena.report.outputs import game_page, hidden_deals, write_outputs
from arena.tournament.runner import TournamentSettings
from arena.tournament.synthetic import synthesize

NAMES = ["ada", "bob", "cy", "dee", "eve"]
DETAIL = "played QH: R7; legal: 2C 3C"
STDERR = "my hand: AS KS QS"
CARD = re.compile(r'<i class="[cdsh]">')


def _run(tmp_path: Path, played: int, **kw: Any) -> tuple[Path, list[Any]]:
    settings = TournamentSettings(seed=5, rounds=1, hands=2, target_score=None, **kw)
    every = dict.fromkeys(NAMES, DETAIL)
    records = synthesize(NAMES, settings, faults=every, stderr=dict.fromkeys(NAMES, STDERR))
    info = {**settings.to_json(), "entrants": [{"name": n} for n in NAMES]}
    out = tmp_path / f"out{played}"
    out.mkdir()
    write_outputs(out, info, NAMES, records[:played], len(records))
    return out, records


def test_an_interrupted_run_hides_the_cards_of_deals_still_to_be_played(tmp_path: Path) -> None:
    out, records = _run(tmp_path, 6)  # r1-t0 (games 0-3) done; r1-t1 has 2 of 4
    settings = {"seating": "rotations"}
    assert hidden_deals(settings, records[:6], len(records)) == {"r1-t1"}
    assert hidden_deals(settings, records, len(records)) == set()
    done = (out / "games" / game_page(records[0])).read_text()
    assert CARD.search(done) and 'id="replay-data"' in done
    for rec in records[4:6]:
        page = (out / "games" / game_page(rec)).read_text()
        assert 'id="hidden-deal"' in page and "2 of the 4 games of deal r1-t1" in page
        assert not CARD.search(page) and 'id="replay-data"' not in page
        assert DETAIL not in page and STDERR not in page
    both = next(n for n in records[0]["seats"] if n in records[4]["seats"])
    index = (out / "index.html").read_text()
    entrant = next((out / "entrants").glob(f"{NAMES.index(both)}-*.html")).read_text()
    for text in (index, entrant):
        assert "hidden until every game of deal r1-t1 has finished" in text
        assert DETAIL in text  # finished deals keep their details
    shown = sum(1 for r in records[:4] if both in r["seats"])
    assert entrant.count(STDERR) == shown
    # --resume finishes the deal: its pages are whole again.
    out2, _ = _run(tmp_path, len(records))
    page = (out2 / "games" / game_page(records[4])).read_text()
    assert CARD.search(page) and 'id="hidden-deal"' not in page


def test_full_seating_waits_for_all_24_seatings(tmp_path: Path) -> None:
    out, records = _run(tmp_path, 23, seating="full")
    assert hidden_deals({"seating": "full"}, records[:23], len(records)) == {"r1-t0"}
    page = (out / "games" / game_page(records[0])).read_text()
    assert 'id="hidden-deal"' in page and "23 of the 24 games" in page
