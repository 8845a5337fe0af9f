"""The import contracts of pyproject.toml hold (``lint-imports``), among them
issue 26's: the referee (``arena.game``) reaches a bot's process only
through the :class:`~arena.seats.seat.Seat` interface, never the sandbox."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_game_layer_imports_nothing_of_the_sandbox_even_indirectly() -> None:
    graph = grimp.build_graph("arena")
    assert not graph.chain_exists(importer="arena.game", imported="arena.sandbox", as_packages=True)
    # ... while the seats below it do use the sandbox (the contract is not empty).
    assert graph.chain_exists(importer="arena.seats", imported="arena.sandbox", as_packages=True)
    # The sandbox imports nothing above it: only arena.core.
    above = ("arena.seats", "arena.game", "arena.protocol", "arena.tournament", "arena.cli")
    for package in above:
        assert not graph.chain_exists(
            importer="arena.sandbox", imported=package, as_packages=True
        ), package


def test_lint_imports_keeps_every_contract_with_the_sandbox_one() -> None:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    command = found or shutil.which("lint-imports")
    if command is None:  # pragma: no cover - installed with the dev dependencies
        pytest.skip("lint-imports (import-linter) is not installed")
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The referee sees seats only, never the sandbox KEPT" in done.stdout
    assert "0 broken" in done.stdout
