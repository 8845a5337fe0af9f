"""Turning an entrant into a :class:`~arena.botproc.LaunchSpec`: working folder,
private temporary folder, environment, user, resource limits and sandbox."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import isolation
from arena.botproc import LaunchSpec
from arena.entrants import Entrant, bot_environment, private_tmpdir
from arena.isolation import IsolationError, Limits

#: Environment variable naming the tournament run (to find its leftovers on --resume).
RUN_VARIABLE = "HEARTS_ARENA_RUN"
#: Environment variable with a token unique to one bot process (to find its strays).
TOKEN_VARIABLE = "HEARTS_ARENA_TOKEN"


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How bot processes are started (the same for every entrant of a tournament).

    Attributes:
        limits: resource limits of each process.
        sandbox: run each process in a bubblewrap sandbox.
        separate_users: run each process as its own unprivileged uid; ``None``
            means "when the arena runs as root".
        uid_base: first uid of the pool for :attr:`separate_users`.
        run_id: names the tournament run in every bot's environment.
    """

    limits: Limits = field(default_factory=Limits)
    sandbox: bool = False
    separate_users: bool | None = None
    uid_base: int = isolation.DEFAULT_UID_BASE
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def uses_separate_users(self) -> bool:
        """Whether bots get their own uid (needs root)."""
        if self.separate_users is None:
            return os.geteuid() == 0
        return self.separate_users

    def describe(self) -> dict[str, Any]:
        """The options as plain data for the settings record."""
        return {
            "limits": self.limits.describe(),
            "sandbox": self.sandbox,
            "separate_users": self.uses_separate_users,
        }


class Launcher:
    """Makes a fresh :class:`LaunchSpec` for each process an entrant needs:
    a new private temporary folder (its ``HOME`` and ``TMPDIR``), a uid of its
    own when running as root, resource limits, and the sandbox if asked.

    Raises:
        IsolationError: separate users asked for without root, or the sandbox
            asked for and unavailable (see :meth:`check`).
    """

    def __init__(self, options: LaunchOptions | None = None) -> None:
        self.options = options or LaunchOptions()
        self._python: tuple[str, str | None] | None = None

    def check(self, entrants: list[Entrant]) -> None:
        """Check up front that the options work here and that every entrant's
        program is reachable by the unprivileged bot user.

        Raises:
            IsolationError: with one line saying what is wrong.
        """
        opts = self.options
        if opts.separate_users is True and os.geteuid() != 0:
            raise IsolationError("separate bot users need the arena to run as root")
        if opts.sandbox:
            isolation.check_bwrap_works()
        for e in entrants:
            program = _program_file(e)
            if not program.exists():
                raise IsolationError(f"entrant {e.name!r}: bot file not found: {program}")
            if not program.is_file():
                raise IsolationError(f"entrant {e.name!r}: {program} is not a regular file")
            if not e.cwd.is_dir():
                raise IsolationError(f"entrant {e.name!r}: its folder {e.cwd} does not exist")
        if not opts.uses_separate_users:
            return
        lease = isolation.lease_uid(opts.uid_base)
        try:
            self._python = isolation.python_for(lease.uid)
            seen: set[tuple[Path, Path]] = set()
            for e in entrants:
                program = _program_file(e)
                if (program, e.cwd) in seen:
                    continue
                seen.add((program, e.cwd))
                problem = isolation.check_access_as(lease.uid, program, e.cwd)
                if problem:
                    raise IsolationError(
                        f"entrant {e.name!r}: {problem}; bots run as an unprivileged user when the "
                        "arena runs as root: make the bot's folder readable by others "
                        "(chmod -R o+rX), or give --same-user"
                    )
        finally:
            lease.release()

    def spec(self, entrant: Entrant) -> LaunchSpec:
        """A launch spec for a new process of ``entrant``. Its temporary
        folder and uid lease are released by :meth:`BotProcess.close`."""
        opts = self.options
        home = private_tmpdir(opts.run_id)
        lease = None
        try:
            if opts.uses_separate_users:
                lease = isolation.lease_uid(opts.uid_base)
                os.chown(home, lease.uid, lease.uid)
            token = secrets.token_hex(8)
            extra = {RUN_VARIABLE: opts.run_id, TOKEN_VARIABLE: token}
            argv: tuple[str, ...] = entrant.argv
            if lease is not None and argv[0] == sys.executable:
                python, pythonpath = self._bot_python(lease.uid)
                argv = (python, *argv[1:])
                if pythonpath:
                    extra["PYTHONPATH"] = pythonpath
            env = bot_environment(home, extra)
            if opts.sandbox:
                argv = tuple(isolation.sandbox_argv(argv, entrant.cwd, home, env))
            return LaunchSpec(
                argv=argv,
                cwd=entrant.cwd,
                env=env,
                label=entrant.name,
                preexec=isolation.make_preexec(opts.limits, limit_processes=lease is not None),
                user=lease.uid if lease else None,
                group=lease.uid if lease else None,
                tmpdir=home,
                lease=lease,
                token=f"{TOKEN_VARIABLE}={token}",
                limits=opts.limits,
            )
        except BaseException:
            if lease is not None:
                lease.release()
            shutil.rmtree(home, ignore_errors=True)
            raise

    def _bot_python(self, uid: int) -> tuple[str, str | None]:
        if self._python is None:
            self._python = isolation.python_for(uid)
        return self._python


def _program_file(entrant: Entrant) -> Path:
    """The file an entrant's command runs (a script, or the executable)."""
    argv = entrant.argv
    first = Path(argv[0])
    if len(argv) > 1 and first.name.startswith("python"):
        candidate = Path(entrant.cwd, argv[1])
        if candidate.is_file():
            return candidate
    if first.is_absolute() or "/" in argv[0]:
        return Path(entrant.cwd, first)
    found = shutil.which(argv[0])
    return Path(found) if found else Path(entrant.cwd, first)


__all__ = ["IsolationError", "LaunchOptions", "Launcher"]
