"""The suite's temporary files on a tmpfs (called by tests/conftest.py at its
import, in the controller and in every xdist worker)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

#: Set to ``0`` to keep the suite's temporary files in the system's temporary folder.
TMPFS_VARIABLE = "HEARTS_ARENA_TEST_TMPFS"
#: The suite's temporary folder on a tmpfs, set by the process that made it
#: (the controller, or the one process with ``-n 0``) and read by its xdist
#: workers and the arenas, bots and nested runs they start.
SUITE_TMP_VARIABLE = "HEARTS_ARENA_TEST_TMP"
#: Names of the suite's temporary folders: ``/dev/shm/arena-tests-<pid>-*``.
#: No "hearts" in them: tests/bots/hostile_key_hunter.py opens every path
#: with "hearts" under /tmp and /dev/shm, as under /tmp before.
SUITE_TMP_PREFIX = "arena-tests-"
#: Bytes the tmpfs must have free for the suite's files (its peak, with the
#: kits built afresh, is some hundreds of MB).
SUITE_TMP_FREE = 4 << 30


def _file_system_type(path: str) -> str:
    """The type of the file system holding ``path`` (``tmpfs``, ``ext4``...),
    from ``/proc/self/mountinfo``; ``""`` when it cannot be read."""
    real = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        fields, _, tail = line.partition(" - ")
        point = fields.split()[4].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, tail.split()[0]
    return kind


def _remove_suite_tmp(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # never from a forked child's exit
        shutil.rmtree(folder, ignore_errors=True)


def temporary_files_on_a_tmpfs() -> str | None:
    """Put the suite's temporary files (``tmp_path``, the arenas' report
    folders, journals, entrant and package copies, bots' folders, the
    PostgreSQL server's) on a tmpfs: a fresh folder of ``/dev/shm`` (mode
    1777, as ``/tmp``), ``TMPDIR`` and ``tempfile.tempdir`` for this process
    and everything it starts, removed when the process that made it exits.
    On an ext4 ``/tmp`` the suite's constant making and removing of files
    cost the kernel's inode allocation about 3.5% of the suite's CPU.

    Nothing changes when :data:`TMPFS_VARIABLE` is ``0``, when the temporary
    folder is on a tmpfs already, or when ``/dev/shm`` is no writable tmpfs
    with :data:`SUITE_TMP_FREE` bytes free. Called at the import of
    tests/conftest.py, not in ``pytest_configure``: folders are made at
    that import. Folders of runs whose process is gone (killed) are removed.

    Returns:
        The suite's temporary folder on the tmpfs, or ``None`` (unchanged).
    """
    made = os.environ.get(SUITE_TMP_VARIABLE, "")
    if made and os.path.isdir(made):  # an xdist worker, or a run inside a test
        os.environ["TMPDIR"] = made
        tempfile.tempdir = made
        return made
    shm = "/dev/shm"
    if os.environ.get(TMPFS_VARIABLE) == "0" or _file_system_type(tempfile.gettempdir()) == "tmpfs":
        return None
    if _file_system_type(shm) != "tmpfs" or not os.access(shm, os.W_OK | os.X_OK):
        return None
    st = os.statvfs(shm)
    if st.f_bavail * st.f_frsize < SUITE_TMP_FREE:
        return None
    with os.scandir(shm) as entries:
        for entry in entries:
            pid = entry.name.removeprefix(SUITE_TMP_PREFIX).split("-", 1)[0]
            if entry.name.startswith(SUITE_TMP_PREFIX) and pid.isdigit():
                try:
                    os.kill(int(pid), 0)
                except ProcessLookupError:
                    shutil.rmtree(entry.path, ignore_errors=True)
                except OSError:
                    pass
    folder = tempfile.mkdtemp(prefix=f"{SUITE_TMP_PREFIX}{os.getpid()}-", dir=shm)
    os.chmod(folder, 0o1777)
    os.environ[SUITE_TMP_VARIABLE] = folder
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder
    atexit.register(_remove_suite_tmp, folder, os.getpid())
    return folder
