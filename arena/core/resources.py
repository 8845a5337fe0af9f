"""Where the files shipped with the package live.

In a wheel, ``protocol/`` and ``sample_bots/`` are copied into the package as
``arena/_protocol`` and ``arena/_sample_bots`` (see ``pyproject.toml``); in a
source checkout or an editable install they are found beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def _data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / f"_{name}", _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the package data folder {name!r} is missing from this installation")


def protocol_dir() -> Path:
    """Folder holding ``schema.json`` and the protocol documentation."""
    return _data_dir("protocol")


def sample_bots_dir() -> Path:
    """Folder holding the sample bots."""
    return _data_dir("sample_bots")


def templates_dir() -> Path:
    """Folder holding the Jinja2 templates of the report."""
    return _PACKAGE / "report" / "templates"
