"""``--jobs`` x 4 bots x ``--memory-limit`` against the machine's memory
(issue 22 item 9), with a faked machine: the default bound is lowered to fit
with one line; an explicit bound is kept with one warning; ``--tmp-size``
above the bound gets one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import bot, run_arena

from arena.sandbox import budget


def _machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mib: int) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       {mib * 1024} kB\nMemFree:         1000 kB\n")
    monkeypatch.setattr(budget, "MEMINFO", meminfo)


def test_the_default_fits_or_is_lowered_to_a_multiple_of_64_mib() -> None:
    # 24 GiB: 3 GiB kept back, 21 GiB for 8 bots at --jobs 2: 2688 MiB each.
    fit = budget.fit_memory(2, None, 24 * 1024)
    assert fit.memory_mb == 2688
    assert fit.note == (
        "--memory-limit lowered to 2688 MiB per bot: --jobs 2 x 4 bots x 4096 MiB = 32768 MiB, "
        "more than the 21504 MiB the bots may use of this machine's 24576 MiB (give "
        "--memory-limit to choose)"
    )
    assert budget.fit_memory(1, None, 24 * 1024) == budget.MemoryFit(4096)  # 16 GiB fits
    assert budget.fit_memory(8, None, 64 * 1024).memory_mb == 1792  # 56 GiB / 32 bots
    small = budget.fit_memory(16, None, 4 * 1024)  # 3 GiB for 64 bots: the floor, said
    assert small.memory_mb == 256 and small.note is not None
    assert small.note.endswith("; even that does not fit: give fewer --jobs")
    assert budget.fit_memory(2, None, None) == budget.MemoryFit(4096)  # unknown: unchecked


def test_an_explicit_bound_is_kept_with_a_warning() -> None:
    fit = budget.fit_memory(2, 8192, 24 * 1024)
    assert fit.memory_mb == 8192
    assert fit.note is not None and fit.note.startswith(
        "warning: --jobs 2 x 4 bots x 8192 MiB = 65536 MiB, more than the 21504 MiB"
    )
    assert budget.fit_memory(2, 2048, 24 * 1024) == budget.MemoryFit(2048)
    assert budget.fit_memory(64, 0, 1024) == budget.MemoryFit(0)  # no bound: nothing to fit


def test_tmp_above_the_memory_bound_is_said() -> None:
    assert budget.tmp_note(64, 4096) is None
    assert budget.tmp_note(64, 0) is None
    note = budget.tmp_note(512, 256)
    assert note is not None and "counts as its memory" in note and "/dev/shm" in note


def test_run_says_what_it_lowered_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _machine(monkeypatch, tmp_path, 24 * 1024)
    assert run_arena(["run", "--dry-run", "--jobs", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [x for x in err if "--memory-limit" in x] == [
        "--memory-limit lowered to 2688 MiB per bot: --jobs 2 x 4 bots x 4096 MiB = 32768 MiB, "
        "more than the 21504 MiB the bots may use of this machine's 24576 MiB (give "
        "--memory-limit to choose)"
    ]
    assert run_arena(["run", "--dry-run", "--jobs", "2", "--memory-limit", "9000"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len([x for x in err if x.startswith("warning: --jobs 2 x 4 bots x 9000 MiB")]) == 1
    assert run_arena(["run", "--dry-run", "--jobs", "1", "--tmp-size", "5000"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [x for x in err if "--memory-limit" in x] == [
        "warning: --tmp-size 5000 MiB is more than --memory-limit 4096 MiB: what a sealed bot "
        "writes to its /tmp and /dev/shm counts as its memory, so it is killed for memory "
        "before its /tmp is full"
    ]


def test_the_lowered_bound_binds_and_is_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _machine(monkeypatch, tmp_path, 4 * 1024)  # 3 GiB for 4 bots: 768 MiB each
    out = tmp_path / "out"
    args = ["run", *(bot("first_legal", n) for n in "abcd"), "--hands", "1", "--rounds", "1"]
    assert run_arena([*args, "--jobs", "1", "--seed", "2", "--out", str(out), "--quiet"]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["isolation"]["limits"]["memory_mb"] == 768
    # A resume keeps the recorded bound, whatever its --jobs (a fitted bound
    # that moved would be a setting that differs, and be refused).
    code = run_arena([*args, "--jobs", "2", "--seed", "2", "--out", str(out), "--resume"])
    assert code == 0
    assert (
        json.loads((out / "run.json").read_text())["settings"]["isolation"]["limits"]["memory_mb"]
        == 768
    )
