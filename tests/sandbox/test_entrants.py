"""An entrant given as a symbolic link (issue 24 item 11): its name is the
link's, as typed; the program run, and the folder it runs in and is copied
from when sealed, are those of the file the link points to."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import BOTS, load_outputs, run_arena

from arena.sandbox.entrants import parse_entrant, parse_entrants


def _linked(open_tmp: Path) -> tuple[Path, Path]:
    """A data-reading bot in ``real/`` and a folder ``links/`` of two links to it."""
    real, links = open_tmp / "real", open_tmp / "links"
    for folder in (real, links):
        folder.mkdir()
        folder.chmod(0o755)
    target = real / "data_bot.py"
    target.write_text((BOTS / "data_bot.py").read_text())
    (real / "data_bot.txt").write_text("linked\n")
    for f in (target, real / "data_bot.txt"):
        f.chmod(0o644)
    (links / "alpha.py").symlink_to(target)
    (links / "beta").symlink_to("../real/data_bot.py")  # relative, no suffix
    return target, links


def test_a_link_is_named_after_itself_and_runs_its_target(open_tmp: Path) -> None:
    target, links = _linked(open_tmp)
    alpha, beta = parse_entrants([str(links / "alpha.py"), "beta"], base=links)
    assert (alpha.name, beta.name) == ("alpha", "beta")  # was data_bot twice: refused
    for e in (alpha, beta):
        assert e.argv == (sys.executable, str(target))
        assert e.cwd == target.parent
        assert e.program == target
    assert (alpha.source, beta.source) == (str(links / "alpha.py"), "beta")
    # A NAME= keeps its name; a link in a command runs its target's folder.
    named = parse_entrant(f"mine={links / 'alpha.py'}")
    assert (named.name, named.cwd) == ("mine", target.parent)


def test_two_links_to_one_program_play_sealed_in_the_target_folder(open_tmp: Path) -> None:
    """Both links play (the same program entered twice is allowed sealed), and
    each reads the data file beside the target by a relative path: it runs in,
    and is given a copy of, the target's folder, not the links' folder."""
    _, links = _linked(open_tmp)
    out = open_tmp / "out"
    args = ["--rounds", "1", "--hands", "1", "--seed", "4", "--quiet", "--out", str(out)]
    entrants = [str(links / "alpha.py"), str(links / "beta"), "sample:low", "sample:duck"]
    assert run_arena(["run", *entrants, *args]) == 0
    results, records = load_outputs(out)
    rows = {row["name"]: row for row in results["standings"]}
    assert sorted(rows) == ["alpha", "beta", "duck", "low"]
    assert sum(rows["alpha"]["faults"].values()) == sum(rows["beta"]["faults"].values()) == 0
    assert rows["alpha"]["games"] == rows["beta"]["games"] == len(records) == 4


def test_an_interpreter_given_by_its_path_runs_in_the_folder_of_the_script(
    tmp_path: Path,
) -> None:
    # /usr/bin/python3 bot.py (or the arena's own Python by its path) is the
    # interpreter, not the bot: the bot's files are bot.py's folder, as for
    # python3 bot.py. It was the interpreter's folder (a copy of a bin folder
    # as the sealed bot's /entrant, where it could not start).
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "bot.py").write_text("print('hi')\n")
    python = Path(sys.executable)
    e = parse_entrant(f"me={python} -S {folder / 'bot.py'}")
    assert e.cwd == folder.resolve()
    assert e.program == (folder / "bot.py").resolve()
    assert e.argv == (str(python), "-S", str((folder / "bot.py").resolve()))
    installed = Path("/bin/sh")
    e = parse_entrant(f"sh={installed} {folder / 'bot.py'}")
    assert e.cwd == folder.resolve() and e.argv[0] == str(installed)
    # A program of the bot's own, given by its path, still names the folder.
    own = folder / "run-me"
    own.write_text("#!/bin/sh\n")
    own.chmod(0o755)
    e = parse_entrant(f"own={own} {folder / 'bot.py'}")
    assert e.cwd == folder.resolve() and e.program == own.resolve()
    # ... even when its name starts like an interpreter's.
    lookalike = folder / "python_bot"
    lookalike.write_text("#!/bin/sh\n")
    lookalike.chmod(0o755)
    e = parse_entrant(f"look={lookalike}")
    assert e.cwd == folder.resolve() and e.program == lookalike.resolve()
    # Another interpreter of the machine's, by its path, outside PATH.
    elsewhere = tmp_path / "py" / "bin"
    elsewhere.mkdir(parents=True)
    (elsewhere / "python3.11").symlink_to(python.resolve())
    e = parse_entrant(f"py={elsewhere / 'python3.11'} {folder / 'bot.py'}")
    assert e.cwd == folder.resolve() and e.program == (folder / "bot.py").resolve()


def test_the_sample_bots_of_the_standard_library_start_without_site() -> None:
    # duck, heuristic, low and random import only the standard library: -S
    # (no site-packages, no .pth file run at start); kit and search import
    # the arena package and keep site.
    for name in ("duck", "heuristic", "low", "random"):
        assert parse_entrant(f"sample:{name}").argv[1] == "-S"
    for name in ("kit", "search"):
        assert "-S" not in parse_entrant(f"sample:{name}").argv
