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


def _copying_options(sandbox: bool | None) -> LaunchOptions:
    """Options under which the launcher makes private copies: sealed, or as root
    (separate users); the test is skipped where neither holds."""
    options = LaunchOptions(sandbox=sandbox)
    if not options.uses_separate_users and not Launcher(options).sealed:
        pytest.skip("no private copies here: bots neither sealed nor run as separate users")
    return options


def _bot_folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(BOTS / "first_legal.py", folder / "bot.py")
    (folder / "notes.txt").write_text("the entrant's own file\n")
    return folder


@pytest.mark.parametrize("sandbox", [False, None], ids=["unsealed", "sealed-where-possible"])
def test_release_removes_one_entrants_copy_and_group_and_a_later_check_copies_afresh(
    tmp_path: Path, sandbox: bool | None
) -> None:
    """Issue 27: a long-lived launcher (the server's runner) lets go of one
    entrant when it retires: its copy's folder is removed and its group given
    back, the other entrant's copy stays, a second release does nothing, and a
    later check of the same entrant makes a fresh copy of its folder."""
    launcher = Launcher(_copying_options(sandbox))
    try:
        gone = path_entrant(_bot_folder(tmp_path, "a") / "bot.py", name="gone", given="bot.py")
        stays = path_entrant(_bot_folder(tmp_path, "b") / "bot.py", name="stays", given="bot.py")
        launcher.check([gone, stays])
        held = launcher.copies()
        assert sorted(held) == ["gone", "stays"]
        old = held["gone"]
        assert (old / "notes.txt").read_text() == "the entrant's own file\n"
        group = launcher._resources.copies["gone"].group
        assert (group is not None) == launcher.options.uses_separate_users
        assert launcher.release("gone") == "released"
        assert not old.exists()
        assert group is None or not group.held
        assert list(launcher.copies()) == ["stays"] and held["stays"].is_dir()
        assert old not in launcher.readable_roots()
        assert launcher.release("gone") == "none"  # idempotent
        assert launcher.release("never-checked") == "none"
        launcher.check([gone])
        fresh = launcher.copies()["gone"]
        assert fresh != old and (fresh / "bot.py").is_file()
        assert sorted(p.name for p in fresh.iterdir()) == ["bot.py", "notes.txt"]
    finally:
        launcher.close()
    assert not held["stays"].exists() and not fresh.exists()


def test_release_while_a_process_is_closing_waits_for_its_spec(tmp_path: Path) -> None:
    """An entrant released while a process of it has not been released yet
    keeps its copy (the bot still reads it) until that process's spec is
    released; meanwhile a check of the same entrant gets a new copy, and a
    spec released twice lets go once."""
    launcher = Launcher(_copying_options(None))
    try:
        entrant = path_entrant(_bot_folder(tmp_path, "a") / "bot.py", name="mine", given="bot.py")
        first = launcher.spec(entrant)
        second = launcher.spec(entrant)
        old = launcher.copies()["mine"]
        group = launcher._resources.copies["mine"].group
        assert launcher.release("mine") == "deferred"
        assert old.is_dir() and launcher.copies() == {}
        assert old in launcher.readable_roots() or not launcher.sealed
        launcher.check([entrant])
        fresh = launcher.copies()["mine"]
        assert fresh != old and fresh.is_dir()
        first.release()
        first.release()  # a second release of one spec does not count twice
        assert old.is_dir() and (group is None or group.held)
        second.release()
        assert not old.exists() and (group is None or not group.held)
        assert fresh.is_dir()
    finally:
        launcher.close()
    assert not fresh.exists()


def test_after_a_real_game_every_seat_has_let_go_of_its_copy(tmp_path: Path) -> None:
    """Four real bots play one game (their seats closed by the runner, their
    specs released in a worker thread): each entrant's copy is then free to
    release at once, not deferred, and its folder is removed."""
    import trio

    from arena.tournament.runner import TournamentRunner, TournamentSettings, schedule

    launcher = Launcher(_copying_options(None))
    names = ["a", "b", "c", "d"]
    entrants = [
        path_entrant(_bot_folder(tmp_path, n) / "bot.py", name=n, given="bot.py") for n in names
    ]
    settings = TournamentSettings(seed=27, rounds=1, hands=1, target_score=None)
    records: list[object] = []
    try:
        launcher.check(entrants)
        held = launcher.copies()
        runner = TournamentRunner(entrants, settings, launcher, records.append)
        trio.run(runner.run, schedule(names, settings)[:1])
        assert len(records) == 1
        assert [launcher.release(n) for n in names] == ["released"] * 4
        assert launcher.copies() == {} and not any(p.exists() for p in held.values())
        assert launcher._resources.retiring == []
    finally:
        launcher.close()
