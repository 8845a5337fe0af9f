"""Make the page cache of what sealed bots can read forget what a bot wrote in it.

The page cache is one store for the whole machine, per file (an overlay or a
read-only bind does not separate it): a bot can *write* a bit into a page of
any file it may read, by reading the page (it becomes cached) or by
``posix_fadvise(POSIX_FADV_DONTNEED)`` on it (it is dropped, unless some
process maps it), and a later bot can *read* the bit by timing one read of
the page (after ``POSIX_FADV_RANDOM``, so that the kernel reads no page
ahead) or with ``mincore``. The store outlives the writer: an entrant's
process that has seen a deal could leave it for the entrant's next process
that is dealt the same deal from another seat (issue 22, attack 4).

:func:`forget` erases such a message: every page of every regular file under
the roots it is given (what a sealed bot can read: today the seal's binds,
:meth:`arena.sandbox.launcher.Launcher.readable_roots`) is put in a state that
does not depend on what any bot did. The modes (:data:`MODES`):

* ``"evict"``: ``posix_fadvise(POSIX_FADV_DONTNEED)`` on every
  file, so that no page is cached but those some live process maps (which
  no bot can drop either, so they carry nothing). Cost: one ``open`` and one
  system call per file, and the next bot starts from a cold cache (its
  interpreter is read from disk again).
* ``"drop"`` (root only): ``1`` to ``/proc/sys/vm/drop_caches``, the same
  for every file of the machine in one system call: cheaper than ``evict``
  when the roots hold many files (all of ``/usr``), but the whole machine's
  clean page cache goes. ``"auto"`` (the runner's) picks it as root above
  :data:`DROP_ABOVE` files.
* ``"reread"``: every page of every file is read, so that every page is
  cached. Cost: reading every byte under the roots (memory as large as
  they are, and disk reads for what was dropped); the next bot starts warm.

The figures behind ``auto`` are in ``docs/competitions.md``
(``benchmarks/forget_pages.py`` measures each mode).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Ways to make the page cache forget (see the module docstring); ``"auto"``
#: is ``"drop"`` as root when the roots hold more than :data:`DROP_ABOVE`
#: files, else ``"evict"``.
MODES: Final = ("auto", "evict", "drop", "reread")
#: Files under the roots above which root drops the machine's whole clean
#: page cache instead of advising each file: on a busy two-core machine
#: ``DONTNEED`` on each of 132,000 files took 2.0 s of CPU (and up to 20 s of
#: wall time), writing ``1`` to ``drop_caches`` 0.24 s of system time.
DROP_ABOVE: Final = 20_000
#: Bytes read at a time by the ``"reread"`` mode.
READ_CHUNK: Final = 1 << 20
#: Threads that open and advise files at once: one (on two busy cores, 132,000
#: files took 2.0 s with one, 2.8 s with two or four).
THREADS: Final = 1


@dataclass(frozen=True)
class ForgetStats:
    """What one :func:`forget` did.

    Attributes:
        files: regular files treated.
        bytes: their total size, in bytes.
        seconds: wall time it took, in seconds.
        errors: files that could not be opened or advised (vanished, or
            refused: a bot could not read those either, or a file system
            without page cache).
    """

    files: int
    bytes: int
    seconds: float
    errors: int


def outer_roots(roots: Iterable[Path]) -> list[Path]:
    """``roots`` made absolute, each once, in their order, without those
    inside another of them (a root inside another is walked with it). A
    set of the roots and each root's parents: O(n * depth), where a check of
    every pair was O(n^2) (the seal's roots and a server's copy folders are
    hundreds)."""
    given = list(dict.fromkeys(Path(os.path.abspath(r)) for r in roots))
    found = set(given)
    return [r for r in given if not any(p in found for p in r.parents)]


def readable_files(roots: Iterable[Path]) -> Iterator[tuple[str, int]]:
    """Every regular file under ``roots`` (each a folder or a file), with its
    size in bytes, each file (device and inode) once. Symbolic links are not
    followed (their targets are under a root, or a bot cannot reach them);
    folders that cannot be listed are skipped."""
    seen: set[tuple[int, int]] = set()
    for root in outer_roots(roots):
        for path, nbytes, ident in _walk(root):
            if ident not in seen:
                seen.add(ident)
                yield path, nbytes


def _walk(root: Path) -> Iterator[tuple[str, int, tuple[int, int]]]:
    """The regular files under one root: (path, size in bytes, (device,
    inode)); a file linked twice under it comes twice."""
    try:
        st = os.lstat(root)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        yield str(root), st.st_size, (st.st_dev, st.st_ino)
    if not stat.S_ISDIR(st.st_mode):
        return
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    est = entry.stat(follow_symlinks=False)
                    yield entry.path, est.st_size, (est.st_dev, est.st_ino)
            except OSError:
                continue


def _evict(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _reread(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        buf = bytearray(READ_CHUNK)
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            while f.readinto(buf):
                pass
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


#: The files under each root, found by the first :func:`forget` that
#: covers it: ``(path, device, inode, change time in ns)`` of the root
#: (another folder made at the same path later is walked again) to its
#: files as :func:`_walk` gives them. At most :data:`ROOTS_KEPT`, the
#: oldest dropped first (a server's tables each bring new copy folders).
_ROOT_FILES: dict[tuple[str, int, int, int], list[tuple[str, int, tuple[int, int]]]] = {}
#: Roots whose files :data:`_ROOT_FILES` keeps.
ROOTS_KEPT: Final = 256
#: Held while the caches of this module change (forgets of several
#: runners in one process run in threads of their own).
_CACHE_LOCK = threading.Lock()


def _root_key(root: Path) -> tuple[str, int, int, int] | None:
    try:
        st = os.lstat(root)
    except OSError:
        return None
    return (str(root), st.st_dev, st.st_ino, st.st_ctime_ns)


def _files_of_root(root: Path) -> list[tuple[str, int, tuple[int, int]]]:
    key = _root_key(root)
    if key is None:
        return []
    with _CACHE_LOCK:
        found = _ROOT_FILES.pop(key, None)  # popped and put back: the newest
        if found is not None:
            _ROOT_FILES[key] = found
            return found
    found = list(_walk(root))  # outside the lock: two threads may both walk
    with _CACHE_LOCK:
        _ROOT_FILES.pop(key, None)
        while len(_ROOT_FILES) >= ROOTS_KEPT:
            del _ROOT_FILES[next(iter(_ROOT_FILES))]
        _ROOT_FILES[key] = found
    return found


#: The result of :func:`_files_of` for each list of roots (as the keys of
#: its roots, :func:`_root_key`): a runner forgets the same list again and
#: again. At most 8 lists.
_LISTS: dict[tuple[tuple[str, int, int, int] | None, ...], tuple[list[str], int]] = {}


def _files_of(roots: Sequence[Path]) -> tuple[list[str], int]:
    """The paths of the regular files under ``roots``, each file once, and
    their total size in bytes: what :func:`readable_files` gives, from each
    root's files found once (:data:`_ROOT_FILES`)."""
    outer = outer_roots(roots)
    key = tuple(_root_key(r) for r in outer)
    found = _LISTS.get(key)
    if found is not None:
        return found
    paths: list[str] = []
    size = 0
    seen: set[tuple[int, int]] = set()
    for root in outer:
        for path, nbytes, ident in _files_of_root(root):
            if ident not in seen:
                seen.add(ident)
                paths.append(path)
                size += nbytes
    with _CACHE_LOCK:
        if len(_LISTS) >= 8:
            _LISTS.clear()
        found = _LISTS[key] = (paths, size)
    return found


#: Where the kernel's clean caches are dropped (root only).
DROP_CACHES: Final = Path("/proc/sys/vm/drop_caches")


def drop_kernel_caches() -> None:
    """Drop the machine's unused dentries and inodes (``2`` to
    :data:`DROP_CACHES`): a bot that looked a name up (``stat`` of a file
    that does not exist leaves a negative dentry) could be told apart by the
    next one by the time the same lookup takes, about 1.8 against 4.8
    microseconds (one bit per name, 99.95% right). Machine-wide, for every
    user; 0.7 s of system time on a busy machine (7.6 s of wall time).

    Raises:
        OSError: not root.
    """
    DROP_CACHES.write_text("2\n")


#: Files under each root, counted up to :data:`DROP_ABOVE` + 1, by the
#: root's key (:func:`_root_key`); at most :data:`ROOTS_KEPT`.
_COUNTS: dict[tuple[str, int, int, int], int] = {}


def _count_of_root(root: Path) -> int:
    key = _root_key(root)
    if key is None:
        return 0
    found = _COUNTS.get(key)
    if found is None:
        found = 0
        for _ in _walk(root):
            found += 1
            if found > DROP_ABOVE:
                break
        with _CACHE_LOCK:
            while len(_COUNTS) >= ROOTS_KEPT:
                del _COUNTS[next(iter(_COUNTS))]
            _COUNTS[key] = found
    return found


def _many_files(roots: Sequence[Path]) -> bool:
    """Whether more than :data:`DROP_ABOVE` files are under ``roots``: each
    root's files counted once per process, and only that far (a file linked
    under two roots counts twice)."""
    total = 0
    for root in outer_roots(roots):
        total += _count_of_root(root)
        if total > DROP_ABOVE:
            return True
    return False


def forget(roots: Sequence[Path], mode: str = "auto", threads: int = THREADS) -> ForgetStats:
    """Put the page cache of every regular file under ``roots`` in a state
    that does not depend on what bots did (see the module docstring).

    Blocking (file system calls); the runner calls it in a thread. Needs no
    privilege beyond reading the files (the arena reads what its bots can).
    The files under each root are found once per process (the first call
    that covers it walks it; a folder made anew at a root's path is walked
    again): a file added under a root later (a package installed during a
    run) is not covered.

    Args:
        roots: folders and files sealed bots can read.
        mode: one of :data:`MODES`.
        threads: files treated at once.

    Raises:
        ValueError: an unknown ``mode``.
        OSError: ``"drop"`` and not root.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    start = time.monotonic()
    if mode == "auto":
        mode = "drop" if os.geteuid() == 0 and _many_files(roots) else "evict"
    if mode == "drop":
        DROP_CACHES.write_text("1\n")
        return ForgetStats(0, 0, time.monotonic() - start, 0)
    paths, size = _files_of(roots)
    treat = _evict if mode == "evict" else _reread
    step = max(1, threads)

    def part(i: int) -> int:
        return sum(1 for path in paths[i::step] if not treat(path))

    if step == 1:
        errors = part(0)
    else:
        with ThreadPoolExecutor(max_workers=step) as pool:
            errors = sum(pool.map(part, range(step)))
    return ForgetStats(len(paths), size, time.monotonic() - start, errors)
