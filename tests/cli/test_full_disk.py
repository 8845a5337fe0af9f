"""A full disk on --out: one error line, exit code 3, only whole lines in
games.jsonl, no temporary file left; --resume after making room continues
exactly (issue 13)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import bot, load_outputs, run_arena

from arena.cli.main import EXIT_OUTPUT

ENTRANTS = [bot("random_legal", "r1"), bot("random_legal", "r2"), bot("first_legal", "f")]
ENTRANTS.append(bot("first_legal", "g"))
ARGS = ["--hands", "1", "--rounds", "3", "--seed", "4", "--jobs", "1", "--quiet"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 20 KiB tmpfs (room for run.json and a few games), unmounted after."""
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20k,mode=0755", "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _games(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


def test_a_full_disk_is_one_error_and_resume_continues_exactly(
    small_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference"
    assert run_arena(["run", *ENTRANTS, *ARGS, "--out", str(reference)]) == 0
    ref_results, ref_records = load_outputs(reference)
    capsys.readouterr()

    out = small_disk / "out"
    assert run_arena(["run", *ENTRANTS, *ARGS, "--out", str(out)]) == EXIT_OUTPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write to the output folder ")
    assert "No space left on device" in err[0]
    assert err[0].endswith(f"continue with: hearts-arena run --resume --out {out}")
    text = (out / "games.jsonl").read_text()
    assert text == "" or text.endswith("\n")  # only whole lines
    kept = _games(out)
    assert 0 < len(kept) < 12
    indexes = [r["game_index"] for r in kept]
    assert len(set(indexes)) == len(indexes) and set(indexes) <= set(range(12))
    assert sorted(p.name for p in out.rglob("*.tmp")) == []
    assert not (out / "results.json").exists()

    subprocess.run(["mount", "-o", "remount,size=10m", str(small_disk)], check=True)
    # The command the error line gives: settings and entrants come from run.json.
    assert run_arena(["run", "--resume", "--out", str(out)]) == 0
    results, records = load_outputs(out)
    assert results["complete"] is True
    assert results["standings"] == ref_results["standings"]
    strip = ("timing", "started_at", "duration_s")

    def games(recs: list[dict[str, object]]) -> list[dict[str, object]]:
        recs = sorted(recs, key=lambda r: r["game_index"])  # type: ignore[arg-type,return-value]
        return [{k: v for k, v in r.items() if k not in strip} for r in recs]

    assert len(records) == 12 and games(records) == games(ref_records)
    assert sorted(p.name for p in out.rglob("*.tmp")) == []
