"""Where the files shipped with the package live.

In a wheel, ``protocol/``, ``sample_bots/`` and ``kits/`` are copied into the
package as ``arena/_protocol``, ``arena/_sample_bots`` and ``arena/_kits`` (see
``pyproject.toml``); in a source checkout or an editable install they are
found beside the package.
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


def kits_dir() -> Path:
    """Folder holding the starter kits, one folder per language (``kits/go``...)."""
    return _data_dir("kits")


def botkit_file() -> Path:
    """The Python bot kit's module (``arena/botkit.py``), which ``hearts-arena
    new python`` copies beside the bot."""
    return _PACKAGE / "botkit.py"


def templates_dir() -> Path:
    """Folder holding the Jinja2 templates of the report."""
    return _PACKAGE / "report" / "templates"
