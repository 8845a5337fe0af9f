"""Uploads (issue 27): the zip corpus, each refused with one line and nothing
written outside the submission's folder; the body cap with and without a
``Content-Length``; what a stored submission looks like."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import warnings
import zipfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from arena.sandbox.botfolder import load_bot_folder
from arena.server.uploads import (
    UploadError,
    UploadLimits,
    check_length,
    read_capped,
    store_upload,
)

BOT_PY = b"import sys\nfor line in sys.stdin:\n    pass\n"
TOML = b'command = "bot.py"\n'


def make_zip(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # "Duplicate name": what the duplicate case makes
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def base(*more: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    return make_zip([("bot.toml", TOML), ("bot.py", BOT_PY), *more])


def central_headers(data: bytes) -> list[int]:
    """Offsets of the central directory's file headers."""
    found, at = [], data.find(b"PK\x01\x02")
    while at >= 0:
        found.append(at)
        at = data.find(b"PK\x01\x02", at + 4)
    return found


def patch_central(data: bytes, index: int, offset: int, fmt: str, value: int) -> bytes:
    """Set a field (at ``offset`` in the ``index``th central header) to ``value``."""
    at = central_headers(data)[index] + offset
    size = struct.calcsize(fmt)
    return data[:at] + struct.pack(fmt, value) + data[at + size :]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def uploads(tmp_path: Path) -> Path:
    folder = tmp_path / "uploads"
    folder.mkdir()
    return folder


def refused(data: bytes, uploads: Path, limits: UploadLimits | None = None) -> str:
    """Store ``data``; assert it is refused with one line and nothing written anywhere."""
    outside = uploads.parent
    before = tree(outside)
    with pytest.raises(UploadError) as caught:
        store_upload(data, uploads, limits)
    message = str(caught.value)
    assert message and "\n" not in message
    assert tree(outside) == before  # not in the uploads folder, not beside it
    assert list(uploads.iterdir()) == []
    return message


def symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    info.create_system = 3
    return info


CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "zip-slip": (lambda: base(("../evil.py", b"x")), "holds '..'"),
    "zip-slip deep": (lambda: base(("lib/../../evil.py", b"x")), "holds '..'"),
    "absolute": (lambda: base(("/tmp/evil.py", b"x")), "an absolute path"),
    "backslash": (lambda: base(("lib\\..\\evil.py", b"x")), "backslash"),
    "control character": (lambda: base(("a\x1b[2Jb.py", b"x")), "control character"),
    "bidirectional character": (lambda: base(("a\u202eyp.txt", b"x")), "control character"),
    "dot part": (lambda: base(("./a.py", b"x")), "empty or '.' part"),
    "empty part": (lambda: base(("lib//a.py", b"x")), "empty or '.' part"),
    "long name": (lambda: base(("a" * 256, b"x")), "over 255 bytes"),
    "too deep": (lambda: base(("/".join("d" * 40) + "/f", b"x")), "folders deep"),
    "symlink": (lambda: base((symlink_info("link"), b"/etc/passwd")), "symbolic link"),
    "duplicate": (lambda: base(("bot.py", b"again")), "twice"),
    "case collision": (lambda: base(("Bot.py", b"x")), "differ only in case"),
    "file and folder": (lambda: base(("bot.py/x", b"x")), "a file and a folder"),
    "no bot.toml": (lambda: make_zip([("bot.py", BOT_PY)]), "no bot.toml at its root"),
    "nested bot.toml": (
        lambda: make_zip([("mybot/bot.toml", TOML), ("mybot/bot.py", BOT_PY)]),
        "found mybot/bot.toml",
    ),
    "bad bot.toml": (
        lambda: make_zip([("bot.toml", b'comand = "x"\n')]),
        "bot.toml: key 'command' is missing",
    ),
    "ratio bomb": (lambda: base(("zeros", bytes(4 * 1024 * 1024))), "a zip bomb?"),
    "not a zip": (lambda: b"PK\x03\x04" + bytes(100), "not a readable zip"),
    "not utf-8": (lambda: b"print('\xff')\n", "neither a zip nor UTF-8"),
    "nul byte": (lambda: b"print(1)\0\n", "NUL byte"),
    # the general purpose flags at offset 8 of a central header: bit 0, encrypted
    "encrypted": (lambda: patch_central(base(), 1, 8, "<H", 1), "encrypted"),
    # a central header's relative offset of its local header (offset 42): the
    # second entry pointing at the first's bytes (a non-recursive zip bomb)
    "overlap: same local header": (
        lambda: patch_central(base(("c.txt", b"c" * 50)), 2, 42, "<L", 0),
        "overlap",
    ),
    # the first entry's compressed size (offset 20) running into the next entry
    "overlap: extent into the next": (
        lambda: patch_central(base(), 0, 20, "<L", 400),
        "overlap",
    ),
    # bzip2: refused, only stored and deflated
    "compression": (lambda: patch_central(base(), 1, 10, "<H", 12), "compression method 12"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_zip_corpus_refused_with_one_line(case: str, uploads: Path) -> None:
    make, expected = CASES[case]
    assert expected in refused(make(), uploads)


def test_overlapping_entries_are_a_real_bomb_without_the_check() -> None:
    """The overlap corpus is what it claims: Python 3.11.7's zipfile opens
    both entries, the second expanding the first one's stream again."""
    data = patch_central(base(("c.txt", b"c" * 50)), 2, 42, "<L", 0)
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.infolist()[2].header_offset == archive.infolist()[0].header_offset


def test_too_many_entries(uploads: Path) -> None:
    data = base(*((f"f{i}", b"x") for i in range(9)))
    assert "11 entries, over the limit of 10" in refused(data, uploads, UploadLimits(entries=10))
    store_upload(data, uploads, UploadLimits(entries=11))


def test_declared_sizes_over_the_cap(uploads: Path) -> None:
    data = base(("table.bin", os.urandom(3000)))
    message = refused(data, uploads, UploadLimits(unpacked_bytes=3000))
    assert "add up to over 3000 bytes unpacked" in message


def test_a_declared_size_that_lies_stops_at_its_size(uploads: Path) -> None:
    """A central directory declaring 10 bytes for a 3000-byte file: zipfile
    stops at 10, the CRC does not match, the upload is refused."""
    data = base(("table.bin", os.urandom(3000)))
    data = patch_central(data, 2, 24, "<L", 10)  # uncompressed size
    assert "cannot be unpacked" in refused(data, uploads)


def test_body_cap_with_content_length() -> None:
    limits = UploadLimits(body_bytes=1000)
    check_length("1000", limits)
    check_length(None, limits)
    with pytest.raises(UploadError) as caught:
        check_length("1001", limits)
    assert caught.value.status == 413
    assert str(caught.value) == "upload of 1001 bytes is over the limit of 1000 bytes"
    with pytest.raises(UploadError) as caught:
        check_length("12, 12", limits)
    assert caught.value.status == 400


def test_body_cap_counted_as_read() -> None:
    """Without a Content-Length (or with a false one) the bytes are counted:
    refused at the chunk that passes the cap, the rest never read."""
    limits = UploadLimits(body_bytes=1000)
    read: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(10):
            read.append(i)
            yield bytes(300)

    async def main() -> None:
        with pytest.raises(UploadError) as caught:
            await read_capped(chunks(), limits)
        assert caught.value.status == 413
        assert read == [0, 1, 2, 3]

        async def small() -> AsyncIterator[bytes]:
            yield b"abc"
            yield b"def"

        assert await read_capped(small(), limits) == b"abcdef"

    trio.run(main)


def test_zip_stored_by_sha256_immutable(uploads: Path) -> None:
    exe = zipfile.ZipInfo("run.sh")
    exe.external_attr = (stat.S_IFREG | 0o777) << 16
    setuid = zipfile.ZipInfo("lib/x.txt")
    setuid.external_attr = (stat.S_IFREG | 0o4666) << 16
    data = make_zip(
        [
            ("bot.toml", TOML),
            ("bot.py", BOT_PY),
            (exe, b"#!/bin/sh\n"),
            ("lib/", b""),
            (setuid, b"hi"),
        ]
    )
    stored = store_upload(data, uploads)
    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    assert stored.folder == uploads / stored.sha256
    assert (stored.kind, stored.files, stored.new) == ("zip", 4, True)
    assert stored.unpacked == len(TOML) + len(BOT_PY) + 10 + 2
    assert tree(uploads) == [
        stored.sha256,
        *(f"{stored.sha256}/{n}" for n in ["bot.py", "bot.toml", "lib", "lib/x.txt", "run.sh"]),
    ]
    modes = {
        str(p.relative_to(stored.folder)): stat.S_IMODE(p.lstat().st_mode)
        for p in stored.folder.rglob("*")
    }
    assert modes == {
        "bot.py": 0o444,
        "bot.toml": 0o444,
        "run.sh": 0o555,
        "lib": 0o555,
        "lib/x.txt": 0o444,
    }
    assert stat.S_IMODE(stored.folder.stat().st_mode) == 0o555
    assert (stored.folder / "lib/x.txt").read_bytes() == b"hi"
    assert load_bot_folder(stored.folder).command == ("bot.py",)
    again = store_upload(data, uploads)
    assert (again.folder, again.new, again.files) == (stored.folder, False, 4)


def test_py_stored_as_a_bot_folder(uploads: Path) -> None:
    stored = store_upload(BOT_PY, uploads)
    assert stored.kind == "py"
    assert sorted(p.name for p in stored.folder.iterdir()) == ["bot.py", "bot.toml"]
    assert (stored.folder / "bot.py").read_bytes() == BOT_PY
    assert load_bot_folder(stored.folder).command == ("bot.py",)
    assert [p.name for p in uploads.iterdir()] == [hashlib.sha256(BOT_PY).hexdigest()]
