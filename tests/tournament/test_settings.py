"""Round trips of a run's typed settings (arena.tournament.settings) and the
readers that use them: an old run.json, verify's defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.keys import MasterKey
from arena.game.referee import RefereeSettings
from arena.sandbox.entrants import sample_entrants
from arena.tools.verify import settings_of
from arena.tournament.runner import TournamentSettings
from arena.tournament.settings import (
    LaunchSettings,
    NotARunFileError,
    RunFile,
    RunSettings,
    SettingsError,
    VerdictSettings,
    tournament_from_json,
)

#: A run.json written by main at 165bb19 (``run --hands 1 --rounds 1 --seed 1``).
OLD_RUN_JSON = Path(__file__).parent / "data" / "run_json_165bb19.json"


def _settings(**fields: object) -> TournamentSettings:
    return TournamentSettings(key=MasterKey.from_seed(7), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"rounds": 3, "hands": 2, "target_score": None, "jobs": 4, "seating": "full"},
        {"format": "gauntlet", "candidate": "duck", "disqualify_after": 5},
        {"format": "ladder", "games": 40, "sigma_target": 2.5, "ladder_batch": 3},
        {
            "fresh_processes": True,
            "drop_kernel_caches": True,
            "referee": RefereeSettings(
                time_limit=0.25, strikes=1, transcripts=True, transcript_cap=9, pace=0.5
            ),
        },
    ],
)
def test_run_settings_round_trip(fields: dict[str, object]) -> None:
    settings = _settings(**fields)
    launch = LaunchSettings(memory_mb=512, processes=8, sandbox=True, sandbox_ro=("/opt",))
    run = RunSettings.of(settings, sample_entrants(), launch)
    record = run.to_json()
    back = RunSettings.from_json(json.loads(json.dumps(record)), settings.master_key)
    assert back.tournament == settings
    assert back.launch == launch
    assert back.names == ["duck", "heuristic", "low", "random"]
    assert back.to_json() == record
    assert back.differences(run) == []


def test_run_file_round_trip_and_differences() -> None:
    settings = _settings(rounds=3)
    run = RunFile(
        RunSettings.of(settings, sample_entrants()),
        24,
        run_id="abc123",
        verdict=VerdictSettings(("rank(duck) <= 2",), "/tmp/j.xml"),
    )
    back = RunFile.from_json(json.loads(json.dumps(run.to_json())), settings.master_key)
    assert back == run
    other = RunSettings.of(_settings(rounds=2, jobs=5), sample_entrants())
    assert run.settings.differences(other) == ["rounds"]  # jobs may differ on a resume


def test_old_run_json_reads_and_writes_back_the_same() -> None:
    info = json.loads(OLD_RUN_JSON.read_text(encoding="utf-8"))
    run = RunFile.read(OLD_RUN_JSON)  # seeded: the key comes from the seed
    assert run.format_version == 2
    assert run.games_total == 4
    assert run.settings.names == ["duck", "heuristic", "low", "random"]
    assert (run.settings.tournament.rounds, run.settings.tournament.hands) == (1, 1)
    assert run.settings.tournament.target_score is None
    assert run.settings.launch is not None and run.settings.launch.memory_mb == 2624
    assert run.verdict == VerdictSettings((), None)
    assert run.to_json() == info
    assert [e.name for e in run.settings.entrant_list()] == run.settings.names


def test_a_secret_key_record_reads_without_the_key() -> None:
    key = MasterKey.from_hex("ab" * 32)
    record = RunSettings.of(TournamentSettings(key=key), sample_entrants()).to_json()
    back = RunSettings.from_json(record)  # a reader without the key (report, watch)
    assert back.tournament.key is None
    assert back.key_commitment == key.commitment()
    assert back.to_json() == record


def test_missing_fields_take_the_defaults_run_plays_with() -> None:
    record = {"seed": 3, "entrants": [{"name": "a"}]}
    settings = tournament_from_json(record, None)
    assert settings.rounds == 2
    assert settings.target_score == 100
    assert settings.hands is None
    assert settings.referee == RefereeSettings()


def test_verify_reads_rounds_default_two() -> None:
    """verify restated the defaults, with rounds 1 where run plays 2."""
    key = MasterKey.from_seed(3)
    settings = settings_of({"seed": 3, "hands": 2, "entrants": []}, key)
    assert settings.rounds == 2
    assert settings.hands == 2


@pytest.mark.parametrize(
    ("info", "error"),
    [
        ([], NotARunFileError),
        ({"settings": {"entrants": []}}, NotARunFileError),
        ({"settings": {"entrants": [{"name": 3}]}, "games_total": 4}, NotARunFileError),
        ({"settings": {"entrants": [], "seed": [1]}, "games_total": 4}, NotARunFileError),
        ({"settings": {"entrants": [], "rounds": 0}, "games_total": 4}, SettingsError),
    ],
)
def test_bad_run_files_are_refused(info: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        RunFile.from_json(info)
