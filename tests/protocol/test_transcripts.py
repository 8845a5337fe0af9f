"""``run --transcripts``: every message per seat with times, capped at
``--transcript-cap`` with a marker, recorded in the settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import bot, load_outputs, run_arena

from arena.game.referee import RefereeSettings
from arena.protocol.codec import check_referee_message

FOUR = [bot("first_legal", n) for n in "abcd"]


@pytest.fixture(scope="module")
def transcribed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[dict[str, Any]]]:
    """One ``run --transcripts`` (4 games), shared by the tests that read it: its
    output folder, and the records the run handed to its report (``write_outputs``
    watched)."""
    import arena.run.run

    seen: list[dict[str, Any]] = []
    real = arena.run.run.write_outputs

    def spy(out: Path, settings: Any, names: Any, records: Any, *rest: Any) -> Any:
        seen.extend(records)
        return real(out, settings, names, records, *rest)

    out = tmp_path_factory.mktemp("transcripts") / "o"
    args = ["run", *FOUR, "--hands", "1", "--rounds", "1", "--seed", "2", "--quiet"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(arena.run.run, "write_outputs", spy)
        assert run_arena([*args, "--transcripts", "--out", str(out)]) == 0
    return out, seen


def test_transcripts_hold_every_message_with_times(
    transcribed: tuple[Path, list[dict[str, Any]]],
) -> None:
    out, _ = transcribed
    _, records = load_outputs(out)
    for rec in records:
        assert len(rec["transcripts"]) == 4
        for seat, entries in enumerate(rec["transcripts"]):
            times = [e["t"] for e in entries]
            assert times == sorted(times) and times[0] >= 0
            sent = [e["sent"] for e in entries if "sent" in e]
            for message in sent:
                check_referee_message(message)
            assert sent[0]["type"] == "game_start" and sent[0]["seat"] == seat
            assert sent[-1]["type"] == "game_end"
            requests = {m["id"] for m in sent if "id" in m}
            answered = {e["id"] for e in entries if "received" in e}
            assert requests == answered  # first_legal answers everything
            assert all(e["received"]["id"] == e["id"] for e in entries if "received" in e)
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["transcripts"] is True
    assert settings["transcript_cap"] == RefereeSettings().transcript_cap == 1000


def test_the_cap_keeps_the_start_and_counts_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["run", *FOUR, "--hands", "1", "--rounds", "1", "--seed", "2", "--quiet"]
    assert run_arena([*args, "--transcripts", "--transcript-cap", "10", "--out", str(out)]) == 0
    _, records = load_outputs(out)
    entries = records[0]["transcripts"][0]
    assert len(entries) == 11
    assert entries[0]["sent"]["type"] == "game_start"
    assert set(entries[-1]) == {"t", "truncated"} and entries[-1]["truncated"] > 30


def test_no_transcripts_unless_asked(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["run", *FOUR, "--hands", "1", "--rounds", "1", "--seed", "2", "--quiet"]
    assert run_arena([*args, "--out", str(out)]) == 0
    _, records = load_outputs(out)
    assert all("transcripts" not in r for r in records)
    assert "transcript_cap" not in json.loads((out / "run.json").read_text())["settings"]


def test_transcripts_go_to_the_journal_not_to_the_records_kept_for_the_report(
    transcribed: tuple[Path, list[dict[str, Any]]],
) -> None:
    """The run keeps every record in memory for its report; the report never
    reads transcripts, so they are dropped from memory once journaled."""
    out, seen = transcribed
    _, on_disk = load_outputs(out)
    assert len(seen) == len(on_disk) == 4
    assert all(len(r["transcripts"]) == 4 for r in on_disk)
    assert not any("transcripts" in r for r in seen)
    assert [r["scores"] for r in seen] == [r["scores"] for r in on_disk]
