"""The sealed root's system folders, made once per arena process.

A sealed bot's root holds only allowlisted files (:mod:`arena.sandbox.seal`):
some sixty single files (libraries, programs, ``/etc`` files) beside a
dozen whole folders. Bound one by one, each file is a mount of its own, and
bubblewrap reads the whole mount table (``/proc/self/mountinfo``) after
every mount it makes: the cost grows with the square of the mounts, and was
about 37 ms of CPU per sealed start on the CI machines (upstream bubblewrap
issue 384).

A root view is a folder, made once per process, holding the same tree:
each allowlisted file as a hard link to the file itself (the same inode, so
the same bytes and the same page cache pages as a bind of it), the
symbolic links the runtimes resolve through, and an empty folder or file
where a whole folder (or a file that cannot be linked: another file system,
or a user without the right to link it) is still bound on top. The sandbox
then binds one folder per top-level name (``/etc``, ``/usr``) instead of
each file: what the bot sees at each path is unchanged.

Limits: a file the machine replaces (a package upgrade renames a new file
over the old one) keeps its old inode in the view until the arena exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Name prefix of the root views (``hearts-arena-root-<pid>-*``).
ROOT_VIEW_PREFIX: Final = "hearts-arena-root-"


def _top(path: str) -> str:
    return path.split("/", 2)[1]


@dataclass(frozen=True)
class RootView:
    """The folder of a root view and what bubblewrap still makes itself.

    Attributes:
        folder: the view's folder (``<tmp>/hearts-arena-root-<pid>-*``).
        tops: the top-level names bound from the view (``("etc", "usr")``).
        binds: real paths bound read-only at their own place after the tops
            (the whole folders, and files that could not be linked), in the
            order given.
        links: ``(where, text)`` symbolic links bubblewrap makes (those
            outside the tops, such as ``/bin`` -> ``usr/bin``), parents first.
        bound_folders: the folders of ``binds`` (their insides need no
            mount point in the view).
    """

    folder: Path
    tops: tuple[str, ...]
    binds: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    bound_folders: tuple[str, ...]

    def argv(self) -> list[str]:
        """The bubblewrap arguments that build the allowlisted root: each
        top bound read-only from the view, then :attr:`binds`, then the
        :attr:`links` (with ``--dir`` for a parent bubblewrap must make)."""
        args: list[str] = []
        for top in self.tops:
            args += ["--ro-bind", str(self.folder / top), f"/{top}"]
        for path in self.binds:
            args += ["--ro-bind", path, path]
        made = {"/", *(f"/{t}" for t in self.tops)}
        for where, text in self.links:
            parent = os.path.dirname(where)
            if parent not in made:
                args += ["--dir", parent]
                made.add(parent)
            args += ["--symlink", text, where]
        return args

    def mount_point(self, target: str, *, folder: bool) -> None:
        """Make sure ``target`` (an absolute path in the sandbox where
        something else is mounted later, such as the bot kit or a
        ``--sandbox-ro`` path) exists in the view when it lies under one of
        its tops: bubblewrap cannot make it in a read-only bind. A folder
        when ``folder``, else an empty file. Nothing when the target lies
        outside the tops or inside a bound folder (it exists there).

        Raises:
            OSError: it could not be made.
        """
        if target.count("/") < 2 or _top(target) not in self.tops:
            return
        if any(target == b or target.startswith(b + "/") for b in self.bound_folders):
            return
        where = self.folder / target.lstrip("/")
        with _GUARD:
            if os.path.lexists(where):
                return
            _make_dirs(where.parent)
            if folder:
                where.mkdir(mode=0o755)
                where.chmod(0o755)
            else:
                where.touch(mode=0o644)


_GUARD = threading.Lock()
_VIEWS: dict[int, RootView] = {}


def _make_dirs(folder: Path) -> None:
    """``mkdir -p`` with every folder readable by everyone (whatever the umask)."""
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
        path.chmod(0o755)


def _remove(folder: Path, pid: int) -> None:
    if os.getpid() == pid:  # never a parent's view from a forked child's exit
        shutil.rmtree(folder, ignore_errors=True)


def root_view(bound: Iterable[str], links: Mapping[str, str]) -> RootView:
    """The root view of this process for ``bound`` and ``links`` (made at
    the first call, removed at exit; after a SIGKILL,
    :func:`arena.sandbox.seal.remove_package_copies_of_dead_arenas` removes it).

    Args:
        bound: the real paths a sealed bot may read (files and folders, none
            inside another), as :func:`arena.sandbox.seal.readable_paths`.
        links: the symbolic links to re-create, ``where -> text``.

    Raises:
        OSError: the view's folder could not be made.
    """
    pid = os.getpid()
    with _GUARD:
        found = _VIEWS.get(pid)
        if found is not None and found.folder.is_dir():
            return found
        view = _build(tuple(bound), dict(links))
        atexit.register(_remove, view.folder, pid)
        _VIEWS[pid] = view
        return view


def _build(bound: tuple[str, ...], links: dict[str, str]) -> RootView:
    whole = {_top(p) for p in bound if p.count("/") == 1}
    whole |= {_top(w) for w in links if w.count("/") == 1}
    deep = [p for p in (*bound, *links) if p.count("/") >= 2]
    tops = sorted({_top(p) for p in deep} - whole)
    folder = Path(tempfile.mkdtemp(prefix=f"{ROOT_VIEW_PREFIX}{os.getpid()}-"))
    folder.chmod(0o755)
    for top in tops:
        (folder / top).mkdir(mode=0o755)
        (folder / top).chmod(0o755)
    binds: list[str] = []
    bound_folders: list[str] = []
    for path in bound:
        staged = path.count("/") >= 2 and _top(path) in tops
        if os.path.isdir(path):
            binds.append(path)
            bound_folders.append(path)
            if staged:
                _make_dirs(folder / path.lstrip("/"))
            continue
        if not staged:
            binds.append(path)
            continue
        staged_file = folder / path.lstrip("/")
        _make_dirs(staged_file.parent)
        try:
            os.link(path, staged_file)
        except OSError:  # another file system, or no right to link it: bind it
            staged_file.touch(mode=0o644)
            binds.append(path)
    kept: list[tuple[str, str]] = []
    for where, text in sorted(links.items(), key=lambda item: (item[0].count("/"), item[0])):
        if where.count("/") >= 2 and _top(where) in tops:
            place = folder / where.lstrip("/")
            _make_dirs(place.parent)
            os.symlink(text, place)
        else:
            kept.append((where, text))
    return RootView(folder, tuple(tops), tuple(binds), tuple(kept), tuple(bound_folders))
