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

A hard link can only be made on the file system of the file linked, so
the view is made in the temporary folder when that lies on the file system
of the files to link, else in the first of :data:`VIEW_PARENTS` that does
and that the arena may write and every user may pass through (a ``/tmp``
on a tmpfs, as on Debian 13, Fedora and Arch, beside a root file system
holding ``/usr``: the view goes to ``/var/tmp``). Where none does, the view
is made in the temporary folder and every file is bound one by one, as
before the view (2.7 times the CPU per sealed start:
``benchmarks/seal_binds.py``).

Limits: a file the machine replaces (a package upgrade renames a new file
over the old one) keeps its old inode in the view until the arena exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Name prefix of the root views (``hearts-arena-root-<pid>-*``).
ROOT_VIEW_PREFIX: Final = "hearts-arena-root-"
#: Where a root view is made when the temporary folder lies on another file
#: system than the files it links, in order of preference (the first on
#: their file system that qualifies, see :func:`view_parent`).
VIEW_PARENTS: Final = ("/var/tmp", "/tmp")
#: A file in a view's folder naming its maker: ``<boot id> <start time>``
#: (the kernel's boot id, the process's start in clock ticks after boot,
#: field 22 of ``/proc/<pid>/stat``). ``/var/tmp`` outlives a reboot, where
#: a killed arena's pid may be another process's: this tells them apart.
#: Outside the tops, so no sandbox sees it.
OWNER_FILE: Final = ".owner"


def _top(path: str) -> str:
    return path.split("/", 2)[1]


@dataclass(frozen=True)
class RootView:
    """The folder of a root view and what bubblewrap still makes itself.

    Attributes:
        folder: the view's folder (``<parent>/hearts-arena-root-<pid>-*``,
            the parent from :func:`view_parent`).
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


def process_mark(pid: int) -> str | None:
    """``<boot id> <start time>`` of process ``pid`` (what :data:`OWNER_FILE`
    holds), or ``None`` when there is no such process or ``/proc`` cannot
    be read."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        with open(f"/proc/{pid}/stat", "rb") as f:
            start = f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return f"{boot} {start}"


def view_parent(files: Iterable[str]) -> str:
    """The folder to make a root view of ``files`` (the real paths to link)
    in: the temporary folder when it lies on the file system holding most
    of ``files`` (or when there are none), else the first of
    :data:`VIEW_PARENTS` that lies there, is a folder the arena may write
    and every user may pass through (bubblewrap binds the view as a bot
    user), and every folder above which every user may pass through; else
    the temporary folder (each file is then bound one by one)."""
    here = tempfile.gettempdir()
    devices: Counter[int] = Counter()
    for path in files:
        try:
            devices[os.stat(path).st_dev] += 1
        except OSError:
            continue
    if not devices:
        return here
    device = devices.most_common(1)[0][0]
    for candidate in (here, *VIEW_PARENTS):
        try:
            st = os.stat(candidate)
            passable = all(os.stat(p).st_mode & 0o001 for p in Path(candidate).parents)
        except OSError:
            continue
        if (
            st.st_dev == device
            and os.path.isdir(candidate)
            and st.st_mode & 0o001
            and passable
            and os.access(candidate, os.W_OK | os.X_OK)
        ):
            return candidate
    return here


def _build(bound: tuple[str, ...], links: dict[str, str]) -> RootView:
    whole = {_top(p) for p in bound if p.count("/") == 1}
    whole |= {_top(w) for w in links if w.count("/") == 1}
    deep = [p for p in (*bound, *links) if p.count("/") >= 2]
    tops = sorted({_top(p) for p in deep} - whole)
    to_link = [p for p in bound if p.count("/") >= 2 and _top(p) in tops and os.path.isfile(p)]
    folder = Path(
        tempfile.mkdtemp(prefix=f"{ROOT_VIEW_PREFIX}{os.getpid()}-", dir=view_parent(to_link))
    )
    folder.chmod(0o755)
    mark = process_mark(os.getpid())
    if mark is not None:
        (folder / OWNER_FILE).write_text(mark + "\n", encoding="ascii")
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
