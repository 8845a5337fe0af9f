"""``hearts-arena --version`` and the ``--help`` of every command load none
of the arena's heavy libraries (NumPy, SciPy, Trio, jsonschema, Jinja2,
SQLAlchemy, Dask): the parser reads its defaults from settings modules that
import none of them (:mod:`arena.game.settings`,
:mod:`arena.tournament.settings`, :mod:`arena.run.options`), and each command
imports its own libraries when it runs. Before, every ``python -m arena``
paid about 0.44 s of CPU to load them (NumPy's OpenBLAS threads alone
0.17 s), the test suite's ~120 such processes and each pool worker of a
``hearts-arena run`` with them.

Each check runs a fresh interpreter: this test process has loaded them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

#: The libraries no ``--help`` or ``--version`` may load (top-level package names).
HEAVY: Final = ("numpy", "scipy", "trio", "jsonschema", "jinja2", "sqlalchemy", "dask", "distributed")  # fmt: skip


def _arena(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "arena", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("argv", [["--version"], ["run", "--help"]], ids=" ".join)
def test_python_m_arena_loads_no_heavy_library(argv: list[str], tmp_path: Path) -> None:
    done = _arena(argv, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("hearts-arena" if argv == ["--version"] else "usage:")
    # -X importtime: one line on stderr per module imported, its name last.
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"arena.cli.main", "arena.cli.options"} <= names  # the command line was seen loading
    loaded = sorted({name.split(".")[0] for name in names} & set(HEAVY))
    assert loaded == []


#: Run in a fresh interpreter: every command's --help (and the bare command's,
#: and --version) in turn, printing which heavy libraries each newly loaded.
_EVERY_HELP: Final = """
import contextlib, io, json, sys
from arena.cli.main import build_parser, main
heavy = json.loads(sys.argv[1])
sub = next(a for a in build_parser()._actions if a.dest == "command")
found = {}
for argv in [["--version"], ["--help"], *([c, "--help"] for c in sorted(sub.choices))]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    found[" ".join(argv)] = [code, sorted(h for h in heavy if h in sys.modules)]
print(json.dumps(found))
"""


def test_no_command_help_loads_a_heavy_library(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_HELP, json.dumps(HEAVY)],
        cwd=tmp_path,
        env=dict(os.environ, COLUMNS="100"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, list[object]] = json.loads(done.stdout)
    from arena.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    commands = sorted(sub.choices)  # type: ignore[attr-defined]
    assert len(commands) >= 15 and set(found) == {
        "--version",
        "--help",
        *(f"{c} --help" for c in commands),
    }
    assert {argv: result for argv, result in found.items() if result != [0, []]} == {}


def test_a_command_that_runs_loads_its_libraries(tmp_path: Path) -> None:
    # The other side of the check above (it is not blind): ``report`` of a folder
    # loads the report's libraries (Jinja2; NumPy for the statistics) when it runs,
    # with OpenBLAS kept to one thread (arena.results.numeric).
    folder = tmp_path / "none"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from arena.cli.main import main; code = main(sys.argv[1:]); "
            "print(code, 'numpy' in sys.modules, 'jinja2' in sys.modules, "
            "os.environ.get('OPENBLAS_NUM_THREADS'))",
            "report",
            str(folder),
        ],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["3", "True", "True", "1"], done.stdout + done.stderr
