"""The database is the record of a table (issue 29, "Lost work"): a result
is accepted once per table; a late one, of an earlier attempt (from a worker
presumed dead) or of a table already recorded, is dropped, its games
included. Real SQLite; no bot process."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from arena.server import folder, store
from arena.server.runner import RunnerConfig, _Finished, start_runner


def _record(rotation: int, seats: list[str], scores: list[int]) -> dict[str, Any]:
    return {
        "rotation": rotation,
        "seats": seats,
        "scores": scores,
        "ranks": [1, 2, 3, 4],
        "faults": [],
        "struck_out": [],
    }


def test_a_late_result_of_an_earlier_attempt_or_a_recorded_table_is_dropped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "c"
    folder.init_folder(root, folder.CompetitionSettings.from_mapping({"game": {"hands": 1}}, "t"))
    r = start_runner(root, RunnerConfig(sandbox=None, log=io.StringIO()))
    try:
        seating = ["house:low", "house:random", "house:heuristic", "s1"]

        def setup(conn: Any) -> int:
            p = store.add_participant(conn, "ann", 0.0)
            store.add_submission(conn, p.id, "a" * 64, "py", 1, 0.5)
            t = store.add_table(conn, "ladder", 0, "L0", seating, seating, 1.0)
            store.set_table_status(conn, t.id, "playing", 2.0)  # attempt 1: its worker died
            store.set_table_status(conn, t.id, "chosen", 3.0)  # the runner restarted
            store.set_table_status(conn, t.id, "playing", 4.0)  # attempt 2, sent again
            return t.id

        tid = r.database.run_write(setup)
        late = [_record(k, seating, [99, 0, 0, 0]) for k in range(4)]
        # The first attempt's games and result arrive late: dropped.
        events = r.database.run_write(r._finish_table, _Finished(tid, late, None, 1), 5.0)
        assert events == [("duplicate", {"numbering": "ladder", "number": 0})]
        with r.database.read() as conn:
            t = store.table_by_id(conn, tid)
            assert t is not None and (t.status, t.attempt) == ("playing", 2)
            assert store.table_records(conn, tid) == []
        # The second attempt's is accepted, once.
        good = [_record(k, seating, [1, 2, 3, 4]) for k in range(4)]
        events = r.database.run_write(r._finish_table, _Finished(tid, good, None, 2), 6.0)
        assert ("done", {"number": 0}) in events
        again = r.database.run_write(r._finish_table, _Finished(tid, late, None, 2), 7.0)
        assert again == [("duplicate", {"numbering": "ladder", "number": 0})]
        with r.database.read() as conn:
            recs = store.table_records(conn, tid)
        assert [x["scores"] for x in recs] == [[1, 2, 3, 4]] * 4
    finally:
        r.comp.close()
