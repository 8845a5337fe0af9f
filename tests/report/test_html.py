"""The report's Jinja2 environment (``arena/report/html.py``): compiled
templates kept between processes, and never taken from a folder another
user could have written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from arena.report import html

#: Compiles every template of the report in a fresh process and prints how
#: many of them Jinja2 compiled from source (not taken from the cache).
_COMPILE_ALL = """
import os, jinja2.environment as je
from arena.report import html
compiled = []
real = je.Environment._parse
def counting(self, source, name, filename):
    compiled.append(name)
    return real(self, source, name, filename)
je.Environment._parse = counting
env = html.environment()
for name in sorted(os.listdir(html.templates_dir())):
    if name.endswith('.j2'):
        env.get_template(name)
print(len(compiled))
"""


def _compiled(cache_home: Path, **env: str) -> int:
    base = {k: v for k, v in os.environ.items() if k != "HEARTS_ARENA_TEMPLATE_CACHE"}
    out = subprocess.run(
        [sys.executable, "-c", _COMPILE_ALL],
        env={**base, "XDG_CACHE_HOME": str(cache_home), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def test_a_second_process_takes_the_compiled_templates_from_the_cache(tmp_path: Path) -> None:
    templates = len([n for n in os.listdir(html.templates_dir()) if n.endswith(".j2")])
    assert templates >= 5
    assert _compiled(tmp_path) == templates
    folder = tmp_path / "hearts-arena" / "templates"
    assert len(list(folder.iterdir())) == templates
    assert folder.stat().st_mode & 0o777 == 0o700
    assert _compiled(tmp_path) == 0
    assert _compiled(tmp_path, HEARTS_ARENA_TEMPLATE_CACHE="0") == templates


def test_a_cache_folder_others_could_write_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "hearts-arena" / "templates"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert _compiled(tmp_path) > 0
    assert list(folder.iterdir()) == []
    folder.chmod(0o700)
    folder.parent.chmod(0o777)
    assert _compiled(tmp_path) > 0
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="gives the folder to another user")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "hearts-arena" / "templates"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 65534, 65534)
    assert _compiled(tmp_path) > 0
    assert list(folder.iterdir()) == []


def test_a_cache_that_cannot_be_written_still_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: object, bucket: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "dump_bytecode", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HEARTS_ARENA_TEMPLATE_CACHE", raising=False)
    cache = html._bytecode_cache()
    assert cache is not None
    env = jinja2.Environment(
        loader=jinja2.DictLoader({"t": "{{ x }}!"}), autoescape=True, bytecode_cache=cache
    )
    assert env.get_template("t").render(x="<b>") == "&lt;b&gt;!"
