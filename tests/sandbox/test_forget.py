"""The page cache's forget (arena.sandbox.forget): which files a list of
roots covers (nested roots once, each file once), each root's files found
once per process, and found again when a new folder stands at a root's path
(issue 22, attack 4: a file left out is a page a bot can still signal by)."""

from __future__ import annotations

import itertools
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.sandbox import forget


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    """Each test starts with no root walked and no list remembered."""
    saved = (dict(forget._ROOT_FILES), dict(forget._LISTS), dict(forget._COUNTS))
    for cache in (forget._ROOT_FILES, forget._LISTS, forget._COUNTS):
        cache.clear()
    yield
    for cache, old in zip((forget._ROOT_FILES, forget._LISTS, forget._COUNTS), saved, strict=True):
        cache.clear()
        cache.update(old)  # type: ignore[arg-type]


def _tree(top: Path, files: int, tag: str = "x") -> list[Path]:
    (top / "sub").mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(files):
        path = top / ("sub" if i % 2 else "") / f"f{i}"
        path.write_text(f"{tag}{i}\n")
        made.append(path)
    return made


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The roots :func:`forget._walk` is called on, in order, from now on."""
    calls: list[str] = []
    real = forget._walk

    def walk(root: Path) -> Iterator[tuple[str, int, tuple[int, int]]]:
        calls.append(str(root))
        return real(root)

    monkeypatch.setattr(forget, "_walk", walk)
    return calls


def test_outer_roots_is_the_pairwise_definition(tmp_path: Path) -> None:
    """A root is dropped exactly when it lies inside another given root
    (not when it only shares a prefix of its name: ``/a/bc`` is not inside
    ``/a/b``); order is kept and each root given once."""
    names = ["a", "a/b", "a/bc", "a/b/c", "d", "d/e/f", "g/h", "a/b/c/d"]
    rng = random.Random(7)
    for _ in range(200):
        roots = [tmp_path / rng.choice(names) for _ in range(rng.randint(1, 8))]
        given = list(dict.fromkeys(roots))
        want = [r for r in given if not any(o != r and r.is_relative_to(o) for o in given)]
        assert forget.outer_roots(roots) == want, roots


def test_each_file_once_nested_roots_and_links(tmp_path: Path) -> None:
    """A file under two roots, a root inside another and a hard link all
    count once; a symbolic link is not followed; a missing root is passed
    over."""
    top = tmp_path / "top"
    made = _tree(top, 6)
    os.link(made[0], top / "sub" / "hard")
    outside = tmp_path / "outside"
    outside.write_text("not reached\n")
    (top / "link").symlink_to(outside)
    roots = [top, top / "sub", made[1], tmp_path / "missing"]
    found = dict(forget.readable_files(roots))
    assert sorted(found) == sorted(str(p) for p in made)
    assert found[str(made[0])] == made[0].stat().st_size
    paths, size = forget._files_of(roots)
    assert sorted(paths) == sorted(found) and size == sum(found.values())


def test_a_root_is_walked_once_across_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each server table forgets the seal's roots with copy folders of its
    own: the roots already walked are not walked again, only the new copy."""
    shared = tmp_path / "runtime"
    _tree(shared, 10)
    walks = _walks(monkeypatch)
    for table in range(3):
        copy = tmp_path / f"copy{table}"
        _tree(copy, 2, tag=str(table))
        stats = forget.forget([shared, copy], mode="evict")
        assert stats.files == 12 and stats.errors == 0
    assert walks == [str(shared), str(tmp_path / "copy0"), str(tmp_path / "copy1"),
                     str(tmp_path / "copy2")]  # fmt: skip
    forget.forget([shared, tmp_path / "copy2"], mode="evict")  # the same list again
    assert len(walks) == 4


def test_a_folder_made_anew_at_a_roots_path_is_walked_again(tmp_path: Path) -> None:
    """A copy folder removed and made again at the same path (another entrant's
    files) is walked again: every file under it now is covered."""
    copy = tmp_path / "copy"
    _tree(copy, 3)
    assert forget.forget([copy], mode="evict").files == 3
    shutil.rmtree(copy)
    new = _tree(copy, 5, tag="new")
    (copy / "extra.py").write_text("print('new')\n")
    stats = forget.forget([copy], mode="evict")
    assert stats.files == 6 and stats.errors == 0
    paths, _ = forget._files_of([copy])
    assert sorted(paths) == sorted(str(p) for p in [*new, copy / "extra.py"])


def test_the_roots_kept_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived server sees new copy folders at every table: at most
    ``ROOTS_KEPT`` roots' files are kept, the oldest dropped first."""
    monkeypatch.setattr(forget, "ROOTS_KEPT", 3)
    roots = []
    for i in range(5):
        root = tmp_path / f"r{i}"
        _tree(root, 1)
        roots.append(root)
        forget.forget([root], mode="evict")
    kept = [key[0] for key in forget._ROOT_FILES]
    assert kept == [str(r) for r in roots[2:]]
    walks = _walks(monkeypatch)
    assert forget.forget([roots[0], roots[4]], mode="evict").files == 2
    assert walks == [str(roots[0])]  # dropped, walked again; the newest kept


@pytest.mark.parametrize(("files", "many"), [(4, False), (5, True)])
def test_many_files_counts_each_root_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int, many: bool
) -> None:
    """``auto``'s count (more than ``DROP_ABOVE`` files) adds up the roots,
    nested ones once, each root counted once per process."""
    monkeypatch.setattr(forget, "DROP_ABOVE", 4)
    a, b = tmp_path / "a", tmp_path / "b"
    _tree(a, 2)
    _tree(b, files - 2)
    walks = _walks(monkeypatch)
    for _ in range(2):
        assert forget._many_files([a, b, a / "sub"]) is many
    assert walks == [str(a), str(b)]


def test_all_pairs_of_small_trees_agree_with_a_plain_walk(tmp_path: Path) -> None:
    """Whatever the mix of roots, the cached lists give the files a plain
    ``os.walk`` of the outer roots finds."""
    tops = []
    for i in range(3):
        _tree(tmp_path / f"t{i}", 3, tag=str(i))
        tops += [tmp_path / f"t{i}", tmp_path / f"t{i}" / "sub"]
    for pair in itertools.permutations(tops, 2):
        want = set()
        for root in forget.outer_roots(pair):
            for folder, _, names in os.walk(root):
                want |= {os.path.join(folder, n) for n in names}
        paths, _ = forget._files_of(list(pair))
        assert set(paths) == want and len(paths) == len(want), pair
