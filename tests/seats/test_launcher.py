"""The launcher (arena/sandbox/launcher.py): which interpreter a ``.py`` bot
starts with when it runs as a bot user of its own."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from conftest import BOTS

from arena.sandbox import isolation
from arena.sandbox.entrants import path_entrant
from arena.sandbox.launcher import Launcher, LaunchOptions

STAND_IN = "/opt/stand-in/bin/python3"  # what python_for gives the bot user
PACKAGE_PARENT = "/opt/stand-in/lib"


def _odd_spelling(path: str) -> str:
    """``path`` spelled with ``..``, as ``sys.executable`` is when the arena
    was started by a relative interpreter path (``../venv/bin/python -m arena``)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, "..", os.path.basename(folder), name)


@pytest.mark.skipif(os.geteuid() != 0, reason="separate bot users need root")
def test_a_worker_swaps_the_interpreter_the_coordinator_spelled_otherwise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 15 item 5: the coordinator, started as ``../venv/bin/python``,
    parses the ``.py`` entrants and makes the launch options with its
    ``sys.executable`` (``/w/../venv/bin/python``); a ``--jobs 2`` worker
    process, spawned by that path, has it normalized (``/venv/bin/python``).
    The worker must still swap in the interpreter the bot user can run (with
    the arena on its ``PYTHONPATH``): it started the coordinator's private
    one, and every ``.py`` bot failed with "Permission denied"."""
    odd = _odd_spelling(sys.executable)
    assert odd != sys.executable and os.path.normpath(odd) == os.path.normpath(sys.executable)
    folder = tmp_path / "bot"
    folder.mkdir()
    shutil.copy(BOTS / "first_legal.py", folder / "mine.py")
    with monkeypatch.context() as coordinator:  # the coordinator's process
        coordinator.setattr(sys, "executable", odd)
        entrant = path_entrant(folder / "mine.py", name="mine", given="mine.py")
        options = LaunchOptions(sandbox=False, separate_users=True)
    assert entrant.argv[0] == odd
    # The worker: its own sys.executable, the coordinator's options and entrants.
    asked: list[int] = []

    def python_for(uid: int) -> tuple[str, str | None]:
        asked.append(uid)
        return STAND_IN, PACKAGE_PARENT

    monkeypatch.setattr(isolation, "python_for", python_for)
    launcher = Launcher(options)
    try:
        spec = launcher.spec(entrant)
        try:
            assert spec.user is not None and asked == [spec.user]
            assert spec.argv[0] == STAND_IN
            assert spec.argv[1].endswith("/mine.py")  # the entrant's private copy
            assert spec.env["PYTHONPATH"] == PACKAGE_PARENT
        finally:
            if spec.cgroup is not None:
                spec.cgroup.kill(timeout=0)
                spec.cgroup.remove()
            if spec.lease is not None:
                spec.lease.release()
            if spec.tmpdir is not None:
                shutil.rmtree(spec.tmpdir, ignore_errors=True)
    finally:
        launcher.close()


def test_the_arena_python_is_known_by_its_path_not_its_spelling(tmp_path: Path) -> None:
    """Spellings of one path name the arena's interpreter; another program,
    even a link to the same file, does not (a virtual environment's python
    is not the system's)."""
    launcher = Launcher(LaunchOptions(sandbox=False, arena_python=_odd_spelling(sys.executable)))
    try:
        assert launcher.is_arena_python(sys.executable)
        assert launcher.is_arena_python(_odd_spelling(sys.executable))
        folder, name = os.path.split(sys.executable)
        assert launcher.is_arena_python(f"{folder}//{name}")
        link = tmp_path / "python"
        link.symlink_to(sys.executable)
        assert not launcher.is_arena_python(str(link))
        assert not launcher.is_arena_python("python3")
        assert not launcher.is_arena_python("")
    finally:
        launcher.close()


def test_the_arena_python_reaches_a_bot_without_dot_dot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Started as ``../venv/bin/python`` with bots of the arena's own user, a
    ``.py`` bot got ``/w/../venv/bin/python``, which a sealed bot cannot walk
    (``/w`` is not in its sandbox: "not found"): it gets the interpreter's
    folder resolved, the interpreter's own name kept."""
    odd = _odd_spelling(sys.executable)
    folder = tmp_path / "bot"
    folder.mkdir()
    shutil.copy(BOTS / "first_legal.py", folder / "mine.py")
    with monkeypatch.context() as coordinator:
        coordinator.setattr(sys, "executable", odd)
        entrant = path_entrant(folder / "mine.py", name="mine", given="mine.py")
        options = LaunchOptions(sandbox=False, separate_users=False)
    launcher = Launcher(options)
    try:
        spec = launcher.spec(entrant)
        try:
            want = os.path.join(
                os.path.realpath(os.path.dirname(sys.executable)),
                os.path.basename(sys.executable),
            )
            assert spec.argv[0] == want and ".." not in spec.argv[0]
            assert spec.argv[1] == str(folder / "mine.py")
            assert spec.user is None and "PYTHONPATH" not in spec.env
        finally:
            if spec.cgroup is not None:
                spec.cgroup.kill(timeout=0)
                spec.cgroup.remove()
            if spec.tmpdir is not None:
                shutil.rmtree(spec.tmpdir, ignore_errors=True)
    finally:
        launcher.close()
