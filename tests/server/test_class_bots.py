"""The gauntlet with real sealed bots (one hand a game): two participants who
submitted the same program get the same scores, game by game, from the same
deals, seats, opponents and seeds. The check is skipped (another test's);
validation and the gauntlet are played: 16 games."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import trio
from conftest import needs_seal

from arena.core.resources import sample_bots_dir
from arena.server import folder, gauntlet, store
from arena.server.runner import RunnerConfig, start_runner

# init_folder fills its database from a migrated template (tests/server/db_fixtures.py).
pytestmark = [needs_seal, pytest.mark.timeout(600), pytest.mark.usefixtures("migrated_folders")]
pytest_plugins = ["db_fixtures"]


def test_the_same_program_gets_the_same_gauntlet_scores(tmp_path: Path) -> None:
    klass = {"deadline": "2000-01-01T00:00:00Z", "gauntlet_deals": 1, "final": "none"}
    settings = folder.CompetitionSettings.from_mapping({"game": {"hands": 1}, "class": klass}, "t")
    root = tmp_path / "c"
    folder.init_folder(root, settings)
    comp = folder.open_folder(root)
    programs = ["random_bot.py", "random_bot.py"]
    with comp.database.write() as conn:
        for i, name in enumerate(programs):
            data = (sample_bots_dir() / name).read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            d = folder.submission_dir(comp.paths, sha)
            d.mkdir(exist_ok=True)
            (d / "bot.py").write_bytes(data)
            p = store.add_participant(conn, f"p{i}", 0.0)
            s, _ = store.add_submission(conn, p.id, sha, "py", len(data), 1.0)
            store.record_step(conn, s.id, "check", True, 2.0)
    comp.close()
    log = io.StringIO()
    runner = start_runner(root, RunnerConfig(exit_when_idle=True, log=log, ladder_tables=0))
    try:
        trio.run(runner.run)
    finally:
        runner.comp.close()
    events = [json.loads(x) for x in log.getvalue().splitlines()]
    assert [e["passed"] for e in events if e["event"] == "validated"] == [True] * 2
    comp = folder.open_folder(root)
    try:
        with comp.database.read() as conn:
            tables = store.tables_in(conn, "gauntlet")
            records = {t.seating[0]: store.table_records(conn, t.id) for t in tables}
            got = {r["participant"]: r for r in gauntlet.results(conn, settings)}
    finally:
        comp.close()
    assert [(t.deal_key, t.status) for t in tables] == [("G0", "done")] * 2

    def seen(label: str) -> list[Any]:
        return [(r["seats"], r["scores"], r["hands"]) for r in records[label]]

    same = [[n.replace("s2", "s1") for n in seats] for seats, _, _ in seen("s2")]
    assert same == [seats for seats, _, _ in seen("s1")]
    assert [(sc, h) for _, sc, h in seen("s1")] == [(sc, h) for _, sc, h in seen("s2")]
    # One hand a game: 26 points, or 78 when a seat shoots the moon (R12: 26 to
    # each other seat); the deals come from a fresh key each run.
    assert [sum(s) in (26, 78) for _, s, _ in seen("s1")] == [True] * 4
    keys = ("score", "against", "deals", "complete")
    assert {k: got["p0"][k] for k in keys} == {k: got["p1"][k] for k in keys}
    assert got["p0"]["complete"] is True
