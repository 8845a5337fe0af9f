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
