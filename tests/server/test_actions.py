"""The organiser's actions (issue 28): recorded as the web process records
them (arena.server.actions.request_action), applied by the runner's
scheduler through its one hook. The runner's seam to the tournament layer
is scripted (test_runner_logic's ``scripted``): no bot process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_runner_logic import Script, _competition, _game, _read, _run, scripted

from arena.protocol.records import GameSpec
from arena.server import actions, folder, ladder, store

# init_folder fills its database from a migrated template (tests/server/db_fixtures.py).
pytestmark = pytest.mark.usefixtures("migrated_folders")
pytest_plugins = ["db_fixtures"]

__all__ = ["scripted"]


def _record(root: Path, kind: str, **target: Any) -> actions.ActionRow:
    comp = folder.open_folder(root)
    try:
        with comp.database.write() as conn:
            return actions.request_action(conn, kind, 5.0, **target)
    finally:
        comp.close()


def _reversed(spec: GameSpec) -> dict[str, Any]:
    game = _game(spec)
    game["ranks"] = [5 - r for r in game["ranks"]]  # the other way round
    return game


def _fresh_fold(root: Path) -> dict[str, store.Rating]:
    """The fold made afresh over the ladder's done tables, in order."""

    def fold(conn: Any) -> dict[str, store.Rating]:
        tables = store.tables_in(conn, "ladder")
        records = [store.table_records(conn, t.id) for t in tables if t.status == "done"]
        return ladder.fold_tables({}, records)

    return _read(root, fold)


def test_play_a_table_again_folds_the_ratings_again_from_it_and_records_it(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 2)
    _run(root, 3)
    before = _read(root, store.fold_at, 3)
    assert _read(root, store.rated_through) == 3
    a = _record(root, "replay", table_number=1)
    assert (a.status, a.table_id) == ("pending", _read(root, store.table_by_number, "ladder", 1).id)
    assert _record(root, "replay", table_number=1).id == a.id  # recorded once
    scripted.append(("L1", _reversed))
    log = _run(root, 3)
    tables = _read(root, store.tables_in, "ladder")
    assert [(t.number, t.status, t.attempt) for t in tables] == [
        (0, "done", 1),
        (1, "done", 1),
        (2, "done", 1),
    ]
    after = _read(root, store.fold_at, 3)
    assert after != before  # table 1's games were played the other way round
    assert after == _fresh_fold(root)
    done = _read(root, actions.action, a.id)
    assert done.status == "applied"
    assert done.result == "ladder table 1 is played again under its deal L1"
    assert done.refold is not None and done.refolded_at is not None
    assert (done.refold["from"], done.refold["through"]) == (1, 3)
    assert done.refold["ratings"] == {e: [r.mu, r.sigma, r.games] for e, r in after.items()}
    # the replayed table's games were taken off and counted again: 3 tables x 4 games
    for sid in (1, 2):
        assert _read(root, store.submission, sid).ranked_games == 12
    events = [e["event"] for e in log if e["event"] in ("action", "table", "rated", "refolded")]
    assert events[:2] == ["action", "table"] and events[-1] == "refolded"


def test_void_a_table_by_hand_skips_it_in_a_new_fold(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 2)
    _run(root, 3)
    with pytest.raises(actions.ActionError, match="give a reason"):
        _record(root, "void", table_number=1, reason="  \x1b\u202e ")
    with pytest.raises(actions.ActionError, match="no ladder table 9"):
        _record(root, "void", table_number=9, reason="x")
    a = _record(root, "void", table_number=1, reason="collusion\r\nfaked line")
    _run(root, 3)
    t1 = _read(root, store.table_by_number, "ladder", 1)
    assert (t1.status, t1.void_reason) == ("void", "voided by the organiser: collusion faked line")
    assert _read(root, store.fold_at, 3) == _fresh_fold(root)
    assert {n: r.games for n, r in _read(root, store.fold_at, 3).items()} == dict.fromkeys(
        ["house:low", "house:random", "s1", "s2"], 8
    )
    assert _read(root, store.fold_at, 2) == _read(root, store.fold_at, 1)  # table 1 skipped
    done = _read(root, actions.action, a.id)
    assert (done.status, done.refold["from"], done.refold["through"]) == ("applied", 1, 3)
    assert [_read(root, store.submission, s).ranked_games for s in (1, 2)] == [8, 8]


def test_suspend_and_restore_a_participant(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 2)
    _record(root, "suspend", participant_id=1)
    log = _run(root, 2)
    assert _read(root, store.participant_by_id, 1).status == "suspended"
    assert all("s1" not in t.seating for t in _read(root, store.tables_in, "ladder"))
    assert [e["result"] for e in log if e["event"] == "action"] == ["participant p0 suspended"]
    _record(root, "restore", participant_id=1)
    _run(root, 3)
    assert _read(root, store.participant_by_id, 1).status == "active"
    assert "s1" in _read(root, store.table_by_number, "ladder", 2).seating
    kinds = [
        (x.kind, x.status) for x in _read(root, lambda c: actions.actions_on(c, participant_id=1))
    ]
    assert kinds == [("suspend", "applied"), ("restore", "applied")]


def test_run_a_validation_again(
    tmp_path: Path, scripted: list[tuple[str, Script | Exception]]
) -> None:
    root = tmp_path / "c"
    _competition(root, 1)
    scripted.append(("V", lambda spec: _game(spec, crashed=["s1"])))
    _run(root, 0)
    assert _read(root, store.submission, 1).status == "failed"
    ranked = _record(root, "revalidate", submission_id=1)
    _run(root, 0)
    sub = _read(root, store.submission, 1)
    assert (sub.status, sub.failed_step, sub.reason) == ("ranked", None, None)
    assert [(t.number, t.status) for t in _read(root, store.tables_in, "validation")] == [
        (0, "done"),
        (1, "done"),
    ]
    assert (
        _read(root, actions.action, ranked.id).result == "submission 1: its validation runs again"
    )
    # a ranked submission is not validated again: refused, with its reason
    again = _record(root, "revalidate", submission_id=1)
    _run(root, 0)
    found = _read(root, actions.action, again.id)
    assert (found.status, found.result) == (
        "refused",
        "submission 1 is ranked: only a failed check or validation runs again",
    )
