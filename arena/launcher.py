"""Turning an entrant into a :class:`~arena.botproc.LaunchSpec`: working folder,
private temporary folder and environment."""

from __future__ import annotations

from dataclasses import dataclass

from arena.botproc import LaunchSpec
from arena.entrants import Entrant, bot_environment, private_tmpdir


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How bot processes are started (shared by every entrant of a tournament)."""

    def describe(self) -> dict[str, object]:
        """The options as plain data for the settings record."""
        return {}


class Launcher:
    """Makes a fresh :class:`LaunchSpec` (with a new private temporary folder)
    for each process an entrant needs."""

    def __init__(self, options: LaunchOptions | None = None) -> None:
        self.options = options or LaunchOptions()

    def spec(self, entrant: Entrant) -> LaunchSpec:
        """A launch spec for a new process of ``entrant``; its ``tmpdir`` is
        created here and removed when the process is closed."""
        home = private_tmpdir()
        return LaunchSpec(
            argv=entrant.argv,
            cwd=entrant.cwd,
            env=bot_environment(home),
            label=entrant.name,
            tmpdir=home,
        )
