"""The sealed root's view (arena.sandbox.rootview): the allowlisted files
reached through one bind per top-level folder, the same inodes as bound one
by one, and far fewer mounts for bubblewrap to read its mount table after."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import needs_seal

from arena.sandbox import rootview, seal


def _tree(top: Path) -> dict[str, str]:
    """A small machine under ``top``: two files and a folder of a system
    tree, a file outside it, and their symbolic links."""
    (top / "usr/lib/x").mkdir(parents=True)
    (top / "usr/lib/libc.so.6").write_text("libc\n")
    (top / "usr/lib/x/mod.py").write_text("module\n")
    (top / "etc").mkdir()
    (top / "etc/hosts").write_text("127.0.0.1 localhost\n")
    return {"usr": str(top / "usr"), "etc": str(top / "etc")}


def test_files_are_linked_folders_bound_and_links_made(tmp_path: Path) -> None:
    """Each allowlisted file of a top-level folder is the same inode in the
    view; a folder is bound on top of an empty mount point; a link under a
    top is made in the view, one at the top level is left to bubblewrap."""
    machine = tmp_path / "m"
    machine.mkdir()
    _tree(machine)
    libc = str(machine / "usr/lib/libc.so.6")
    folder = str(machine / "usr/lib/x")
    hosts = str(machine / "etc/hosts")
    links = {f"{machine}/usr/lib/libc.so": "libc.so.6", "/lib": "usr/lib"}
    view = rootview._build((folder, libc, hosts), links)
    try:
        top = machine.parts[1]
        assert view.tops == (top,)
        assert view.binds == (folder,)  # the folder only: the files are linked
        staged = view.folder / libc.lstrip("/")
        assert os.stat(staged).st_ino == os.stat(libc).st_ino
        assert os.stat(view.folder / hosts.lstrip("/")).st_ino == os.stat(hosts).st_ino
        assert (view.folder / folder.lstrip("/")).is_dir()
        assert list((view.folder / folder.lstrip("/")).iterdir()) == []  # a mount point
        assert os.readlink(view.folder / f"{machine}/usr/lib/libc.so".lstrip("/")) == "libc.so.6"
        assert view.links == (("/lib", "usr/lib"),)
        argv = view.argv()
        assert argv[:3] == ["--ro-bind", str(view.folder / top), f"/{top}"]
        assert argv.count("--ro-bind") == 2
        assert argv[-3:] == ["--symlink", "usr/lib", "/lib"]
        assert os.stat(view.folder).st_mode & 0o777 == 0o755
    finally:
        rootview._remove(view.folder, os.getpid())
    assert os.path.exists(libc)  # removing the view removes links, not files


def test_a_file_that_cannot_be_linked_is_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a hard link fails (another file system: EXDEV), the file is
    bound one by one on an empty mount point, as before the view."""
    machine = tmp_path / "m"
    machine.mkdir()
    _tree(machine)
    libc = str(machine / "usr/lib/libc.so.6")

    def refuse(src: str, dst: str) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    view = rootview._build((libc,), {})
    try:
        assert view.binds == (libc,)
        staged = view.folder / libc.lstrip("/")
        assert staged.is_file() and staged.stat().st_size == 0
    finally:
        rootview._remove(view.folder, os.getpid())


def test_mount_points_are_made_under_the_tops_only(tmp_path: Path) -> None:
    """A path mounted later (the bot kit, a --sandbox-ro path) gets a mount
    point when it lies under a top, not inside a bound folder or elsewhere."""
    machine = tmp_path / "m"
    machine.mkdir()
    _tree(machine)
    folder = str(machine / "usr/lib/x")
    view = rootview._build((folder, str(machine / "etc/hosts")), {})
    try:
        view.mount_point(f"{machine}/opt/kit", folder=True)
        view.mount_point(f"{machine}/etc/extra.conf", folder=False)
        view.mount_point(f"{folder}/inside", folder=True)
        view.mount_point("/entrant", folder=True)
        assert (view.folder / f"{machine}/opt/kit".lstrip("/")).is_dir()
        assert (view.folder / f"{machine}/etc/extra.conf".lstrip("/")).is_file()
        assert not (view.folder / f"{folder}/inside".lstrip("/")).exists()
        assert not (view.folder / "entrant").exists()
    finally:
        rootview._remove(view.folder, os.getpid())


def test_cleanup_removes_the_root_views_of_arenas_that_are_gone(tmp_path: Path) -> None:
    dead_pid = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    left = tmp_path / f"{rootview.ROOT_VIEW_PREFIX}{dead_pid}-ab12"
    running = tmp_path / f"{rootview.ROOT_VIEW_PREFIX}{os.getpid()}-cd34"
    for folder in (left, running):
        (folder / "usr").mkdir(parents=True)
    assert seal.remove_package_copies_of_dead_arenas(tmp_path) == 1
    assert not left.exists() and running.exists()


def _sealed_shell(script: str) -> str:
    """Run ``script`` with ``/bin/sh`` sealed as bots are (no filter), and
    return its standard output."""
    folder = Path(tempfile.mkdtemp(prefix="arena-test-root-"))
    folder.chmod(0o755)
    try:
        argv = seal.sealed_argv(
            ["/bin/sh", "-c", script], folder=folder, cwd=seal.ENTRANT_DIR, tmp_mb=1, seccomp=False
        )
        argv = ['exec "$@"' if a == seal.STDIO_SCRIPT else a for a in argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.rmdir(folder)
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_seal
def test_a_sealed_bot_reads_the_allowlisted_files_themselves() -> None:
    """Inside the seal, every allowlisted file is the machine's own (same
    inode and size, through the view's one bind per top-level folder); the
    root holds the same names as before the view; the sandbox has fewer than
    70 mounts (bound one by one it had over 110)."""
    files = [str(p) for p in seal.readable_paths() if p.is_file()]
    assert len(files) > 20
    script = "; ".join(f"ls -iLn {f}" for f in files)
    script += "; echo MOUNTS $(wc -l < /proc/self/mountinfo); ls -a /etc; echo END"
    out = _sealed_shell(script).splitlines()
    inside = {line.split()[-1]: line.split() for line in out if line.split()[-1] in files}
    assert sorted(inside) == sorted(files)
    for path in files:
        st = os.stat(path)
        fields = inside[path]
        assert int(fields[0]) == st.st_ino, path
        assert int(fields[5]) == st.st_size, path
    mounts = int(next(line for line in out if line.startswith("MOUNTS ")).split()[1])
    assert 10 < mounts < 70
    etc = set(
        out[out.index(next(x for x in out if x.startswith("MOUNTS "))) + 1 : out.index("END")]
    )
    want = {".", ".."} | {
        p.split("/")[2]
        for p in [*map(str, seal.readable_paths()), *seal._readable()[1]]
        if p.startswith("/etc/")
    }
    assert etc == want


def _other_file_system() -> Path:
    """A fresh folder on a file system other than ``/usr``'s (a tmpfs
    ``/dev/shm``), as a temporary folder on a tmpfs is; skips the test when
    there is none, or when no folder of :data:`rootview.VIEW_PARENTS` lies
    on ``/usr``'s file system (the view then falls back to binds)."""
    usr = os.stat("/usr").st_dev
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == usr or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm on another file system than /usr here")
    if not any(os.path.isdir(p) and os.stat(p).st_dev == usr for p in rootview.VIEW_PARENTS):
        pytest.skip(f"none of {rootview.VIEW_PARENTS} lies on /usr's file system here")
    folder = Path(tempfile.mkdtemp(prefix="arena-test-tmpfs-", dir=shm))
    folder.chmod(0o1777)
    return folder


@pytest.fixture
def tmpfs_tmp() -> Iterator[Path]:
    """A temporary folder on another file system than ``/usr`` (see
    :func:`_other_file_system`), removed after the test."""
    folder = _other_file_system()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_with_the_temporary_folder_on_a_tmpfs_the_view_links_beside_the_files(
    tmpfs_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary folder on a tmpfs (another file system than the
    allowlisted files): the view is made in a folder of VIEW_PARENTS on their
    file system, every allowlisted file of the tops is linked (none bound one
    by one), and its folder names its maker. With no such folder, the view
    falls back to the temporary folder and binds every file, as before."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmpfs_tmp))
    bound, links = seal._readable()
    files = [p for p in bound if os.path.isfile(p) and p.count("/") >= 2]
    view = rootview._build(bound, links)
    try:
        assert str(view.folder.parent) in rootview.VIEW_PARENTS
        assert os.stat(view.folder).st_dev == os.stat("/usr").st_dev
        in_tops = [p for p in files if p.split("/")[1] in view.tops]
        assert len(in_tops) > 20
        assert not set(in_tops) & set(view.binds)  # all linked
        for path in in_tops:
            assert os.stat(view.folder / path.lstrip("/")).st_ino == os.stat(path).st_ino
        mark = (view.folder / rootview.OWNER_FILE).read_text().strip()
        assert mark == rootview.process_mark(os.getpid())
    finally:
        rootview._remove(view.folder, os.getpid())
    monkeypatch.setattr(rootview, "VIEW_PARENTS", ())
    fallback = rootview._build(bound, links)
    try:
        assert fallback.folder.parent == tmpfs_tmp
        assert set(in_tops) <= set(fallback.binds)  # every file bound one by one
    finally:
        rootview._remove(fallback.folder, os.getpid())


#: Run by a child with the temporary folder on a tmpfs: makes its root view,
#: prints its folder, then with "shell" runs a sealed shell that prints the
#: sandbox's mount count, else waits to be killed.
_CHILD = """
import os, subprocess, sys, tempfile, time
from pathlib import Path
from arena.sandbox import seal
view = seal._root_view()
print(view.folder, flush=True)
if sys.argv[1] == "shell":
    folder = Path(tempfile.mkdtemp(prefix="arena-test-root-"))
    folder.chmod(0o755)
    argv = seal.sealed_argv(["/bin/sh", "-c", "wc -l < /proc/self/mountinfo"], folder=folder,
                            cwd=seal.ENTRANT_DIR, tmp_mb=1, seccomp=False)
    argv = ['exec "$@"' if a == seal.STDIO_SCRIPT else a for a in argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    os.rmdir(folder)
    print("MOUNTS", done.stdout.strip(), flush=True)
else:
    time.sleep(120)
"""


def _child(tmp: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, mode], stdout=subprocess.PIPE, text=True, env=env
    )


@needs_seal
def test_a_sealed_start_with_a_tmpfs_temporary_folder_has_few_mounts(tmpfs_tmp: Path) -> None:
    """An arena whose temporary folder is on a tmpfs still reaches the
    allowlisted files through one bind per top-level folder: fewer than 70
    mounts in the sandbox (bound one by one, as when the view was made in
    the tmpfs, over 110)."""
    child = _child(tmpfs_tmp, "shell")
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0
    folder, mounts = out.splitlines()
    assert Path(folder).parent != tmpfs_tmp
    assert 10 < int(mounts.split()[1]) < 70
    assert not Path(folder).exists()  # removed at exit


def test_the_view_of_an_arena_killed_with_sigkill_is_removed(
    tmpfs_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root view a killed arena left beside the files (not in its
    temporary folder) is found and removed by the next arena's clean-up."""
    child = _child(tmpfs_tmp, "wait")
    try:
        assert child.stdout is not None
        folder = Path(child.stdout.readline().strip())
        assert str(folder.parent) in rootview.VIEW_PARENTS and folder.is_dir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmpfs_tmp))
        # Not a count: /var/tmp is the machine's, and an arena another test
        # killed may have left a view there in the meantime (it failed so
        # once in a loaded run, with 1 == 0).
        seal.remove_package_copies_of_dead_arenas()
        assert folder.is_dir()  # running: kept
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert folder.is_dir()  # nothing removed it at exit
    assert seal.remove_package_copies_of_dead_arenas() >= 1
    assert not folder.exists()


def test_a_view_whose_pid_is_another_process_now_is_removed(tmp_path: Path) -> None:
    """A view named after a live pid whose owner file names another process
    (the pid reused, as after a reboot for a view in /var/tmp) is removed;
    one whose owner file names the live process stays, as does one with no
    owner file."""
    me = rootview.process_mark(os.getpid())
    assert me is not None
    boot, start = me.split()
    cases = {"reused": f"{boot} {int(start) + 1}", "mine": me, "unmarked": None}
    for name, mark in cases.items():
        folder = tmp_path / f"{rootview.ROOT_VIEW_PREFIX}{os.getpid()}-{name}"
        (folder / "usr").mkdir(parents=True)
        if mark is not None:
            (folder / rootview.OWNER_FILE).write_text(mark + "\n")
    assert seal.remove_package_copies_of_dead_arenas(tmp_path) == 1
    assert sorted(p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir()) == ["mine", "unmarked"]
