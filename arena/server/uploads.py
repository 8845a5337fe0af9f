"""Submissions as uploaded: a ``.py`` file or a zip of a bot folder, checked
and unpacked into a folder of their own, named by their SHA-256.

Pure of any web framework: the web process (:mod:`arena.server.web`) hands
over the request's ``Content-Length`` and its body as an async iterator of
chunks; this module counts the bytes as they come (:func:`read_capped`),
refuses what cannot be a bot, and unpacks the rest (:func:`store_upload`).

What is refused, each with an :class:`UploadError` of one line:

* a body over :attr:`UploadLimits.body_bytes`: a ``Content-Length`` over it
  before a byte is read, else once the bytes read pass it (413);
* a ``.py`` that is not UTF-8 text (PEP 3120) or holds a NUL byte;
* a zip with an absolute path, a ``..`` or ``.`` part, an empty part, a
  backslash, a control or bidirectional character, a part of a name over
  255 bytes (UTF-8), more than :attr:`UploadLimits.depth` parts, duplicate
  names, names differing only in case (or a file named as another's folder),
  a link entry or any entry neither a file nor a folder (the Unix mode in
  the high 16 bits of ``external_attr``), an encrypted entry, a compression
  other than stored or deflated, more than :attr:`UploadLimits.entries`
  entries, declared sizes summing over :attr:`UploadLimits.unpacked_bytes`,
  entries whose bytes overlap one another or the central directory (Python
  before 3.11.8 does not refuse them: one compressed stream could be
  expanded many times), an entry over 1 MiB that expands more than
  :attr:`UploadLimits.ratio` times (a bomb), or no ``bot.toml`` at its root
  (or a ``bot.toml`` that :func:`arena.sandbox.botfolder.load_bot_folder`
  refuses).

What is written: the folder ``UPLOADS/<sha256>`` and nothing else. It is
unpacked into a fresh folder ``UPLOADS/.new-<random>`` (mode 0700) with every
file created by ``openat`` relative to its parent's descriptor, exclusively
and following no link (``O_CREAT | O_EXCL | O_NOFOLLOW``), then renamed into
place; modes are normalised (folders 0555, files 0444, or 0555 when the zip
gave them an execute bit): a stored submission is never changed. The
client's file name is never used: a ``.py`` is stored as ``bot.py`` beside a
``bot.toml`` of ``command = "bot.py"``, so every submission is a bot folder.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import io
import itertools
import os
import secrets
import shutil
import stat
import struct
import unicodedata
import zipfile
from collections.abc import AsyncIterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from arena.sandbox.botfolder import BOT_TOML, BotFolderError, load_bot_folder

#: Largest upload read, in bytes (the request's body).
BODY_BYTES: Final = 16 * 1024 * 1024
#: Largest sum of a zip's files, unpacked, in bytes.
UNPACKED_BYTES: Final = 128 * 1024 * 1024
#: Most entries (files and folders) in a zip.
ENTRIES: Final = 5000
#: Most parts of a name in a zip (``a/b/c`` has 3).
DEPTH: Final = 32
#: Largest part of a name, in UTF-8 bytes (what Linux file systems take).
NAME_BYTES: Final = 255
#: Largest expansion (unpacked / compressed size) of an entry over :data:`RATIO_FLOOR`.
RATIO: Final = 200
#: Entries up to this many bytes unpacked are never refused for their ratio.
RATIO_FLOOR: Final = 1024 * 1024
#: The file a ``.py`` upload is stored as.
PY_NAME: Final = "bot.py"

# zipfile decodes names with cp437 (without the UTF-8 flag), a codec found on
# first use: found now, since the web process drops its rights (to a user who
# may not read the installation) after importing this module.
codecs.lookup("cp437")

_ZIP_MAGIC: Final = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC: Final = b"PK\x05\x06"
_LOCAL_HEADER: Final = struct.Struct("<4s5H3L2H")  # 30 bytes
_CHUNK: Final = 64 * 1024


class UploadError(ValueError):
    """An upload refused; the message is one line for the participant.

    Attributes:
        status: the HTTP status the web process answers with (400, or 413
            for a body over the cap).
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """The caps of an upload (bytes, counts); the defaults are the module's."""

    body_bytes: int = BODY_BYTES
    unpacked_bytes: int = UNPACKED_BYTES
    entries: int = ENTRIES
    depth: int = DEPTH
    ratio: int = RATIO


@dataclass(frozen=True, slots=True)
class StoredUpload:
    """A submission as stored.

    Attributes:
        sha256: SHA-256 of the uploaded bytes (64 hexadecimal digits).
        folder: ``UPLOADS/<sha256>``, a bot folder.
        kind: ``"py"`` or ``"zip"``.
        size: bytes uploaded.
        files: regular files in the folder.
        unpacked: bytes of those files.
        new: whether this call stored it (``False``: the same bytes were stored before).
    """

    sha256: str
    folder: Path
    kind: str
    size: int
    files: int
    unpacked: int
    new: bool


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def check_length(header: str | None, limits: UploadLimits) -> None:
    """Refuse a ``Content-Length`` over the cap before anything is read
    (``None``: no header, the bytes are counted as they come).

    Raises:
        UploadError: (413) over :attr:`UploadLimits.body_bytes`; (400) not a
            decimal number.
    """
    if header is None:
        return
    text = header.strip()
    if not text.isdigit() or not text.isascii():
        raise UploadError(f"Content-Length {header[:40]!r} is not a number of bytes")
    if int(text) > limits.body_bytes:
        raise UploadError(
            f"upload of {int(text)} bytes is over the limit of {_mib(limits.body_bytes)}", 413
        )


async def read_capped(chunks: AsyncIterable[bytes], limits: UploadLimits) -> bytes:
    """The body, read chunk by chunk and refused as soon as it passes the cap
    (whatever ``Content-Length`` said, or without one).

    Raises:
        UploadError: (413) more than :attr:`UploadLimits.body_bytes` bytes; (400) none.
    """
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limits.body_bytes:
            raise UploadError(f"upload is over the limit of {_mib(limits.body_bytes)}", 413)
        parts.append(chunk)
    if size == 0:
        raise UploadError("the upload is empty: send a .py file or a zip of a bot folder")
    return b"".join(parts)


def upload_kind(data: bytes) -> str:
    """``"zip"`` for a zip's bytes, else ``"py"`` (by content, never by a file name)."""
    return "zip" if data.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)) else "py"


# -- checks ------------------------------------------------------------------------


def _bad_character(name: str) -> str | None:
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"U+{ord(ch):04X}"
    return None


def _check_name(raw: str, limits: UploadLimits) -> tuple[str, ...]:
    """The parts of an entry's name (a folder's without its final ``/``).

    Raises:
        UploadError: a name that cannot be unpacked safely here.
    """
    shown = ascii(raw)[1:-1][:120]
    bad = _bad_character(raw)
    if bad is not None:
        raise UploadError(f"zip entry '{shown}': holds a control character ({bad})")
    if "\\" in raw:
        raise UploadError(f"zip entry '{shown}': holds a backslash (use / between folders)")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise UploadError(f"zip entry '{shown}': an absolute path")
    name = raw[:-1] if raw.endswith("/") else raw
    parts = tuple(name.split("/"))
    if ".." in parts:
        raise UploadError(f"zip entry '{shown}': holds '..' (a path out of the folder)")
    if "." in parts or "" in parts:
        raise UploadError(f"zip entry '{shown}': holds an empty or '.' part")
    if len(parts) > limits.depth:
        raise UploadError(f"zip entry '{shown}': more than {limits.depth} folders deep")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > NAME_BYTES:
            raise UploadError(f"zip entry '{shown}': a name over {NAME_BYTES} bytes")
    return parts


def _check_overlaps(data: bytes, infos: list[zipfile.ZipInfo], directory: int) -> None:
    """Refuse entries whose local header and compressed bytes overlap another
    entry's or the central directory (at offset ``directory``), read from the
    local headers themselves.

    Raises:
        UploadError: a bad local header, or two extents that overlap.
    """
    extents: list[tuple[int, int, str]] = []
    for info in infos:
        start = info.header_offset
        header = data[start : start + _LOCAL_HEADER.size]
        shown = ascii(info.filename)[1:-1][:120]
        if len(header) < _LOCAL_HEADER.size:
            raise UploadError(f"zip entry '{shown}': its local header is outside the file")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != _ZIP_MAGIC:
            raise UploadError(f"zip entry '{shown}': no local header at its offset")
        name_length, extra_length = fields[9], fields[10]
        end = start + _LOCAL_HEADER.size + name_length + extra_length + info.compress_size
        extents.append((start, end, shown))
    extents.sort()
    for (_, end, shown), (next_start, _, next_shown) in itertools.pairwise(extents):
        if end > next_start:
            raise UploadError(
                f"zip entries '{shown}' and '{next_shown}' overlap (one compressed stream "
                "read twice: a zip bomb?)"
            )
    if extents and extents[-1][1] > directory:
        raise UploadError(f"zip entry '{extents[-1][2]}' overlaps the zip's central directory")


def check_zip(data: bytes, limits: UploadLimits) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """Open and check a zip's bytes; returns it and its entries (in order).

    Raises:
        UploadError: the first reason found (see the module's list).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UploadError(f"not a readable zip: {exc}") from None
    infos = archive.infolist()
    if len(infos) > limits.entries:
        raise UploadError(f"the zip has {len(infos)} entries, over the limit of {limits.entries}")
    seen: dict[str, str] = {}  # casefolded name -> name
    files: set[tuple[str, ...]] = set()
    folders: set[tuple[str, ...]] = set()
    declared = 0
    for info in infos:
        parts = _check_name(info.orig_filename, limits)
        shown = ascii(info.filename)[1:-1][:120]
        key = "/".join(parts).casefold()
        if key in seen:
            other = seen[key]
            what = "twice" if other == "/".join(parts) else f"and '{ascii(other)[1:-1]}'"
            raise UploadError(f"zip entry '{shown}' {what}: names differ only in case or repeat")
        seen[key] = "/".join(parts)
        mode = info.external_attr >> 16
        is_dir = info.is_dir()
        if mode and stat.S_IFMT(mode):
            if stat.S_ISLNK(mode):
                raise UploadError(f"zip entry '{shown}': a symbolic link (links are refused)")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UploadError(f"zip entry '{shown}': neither a file nor a folder")
            if stat.S_ISDIR(mode) and not is_dir:
                raise UploadError(f"zip entry '{shown}': a folder without a final '/'")
        if info.flag_bits & 0x1:
            raise UploadError(f"zip entry '{shown}': encrypted (upload it unencrypted)")
        if not is_dir and info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise UploadError(
                f"zip entry '{shown}': compression method {info.compress_type} "
                "(use deflate or none)"
            )
        declared += info.file_size
        if declared > limits.unpacked_bytes:
            raise UploadError(
                f"the zip's files add up to over {_mib(limits.unpacked_bytes)} unpacked"
            )
        if info.file_size > RATIO_FLOOR and info.file_size > limits.ratio * max(
            info.compress_size, 1
        ):
            raise UploadError(
                f"zip entry '{shown}' expands {info.file_size // max(info.compress_size, 1)} "
                f"times (over {limits.ratio}: a zip bomb?)"
            )
        (folders if is_dir else files).add(tuple(p.casefold() for p in parts))
    for path in files:
        for depth in range(1, len(path)):
            if path[:depth] in files:
                raise UploadError(f"zip entry '{'/'.join(path[:depth])}' is a file and a folder")
    if ("bot.toml",) not in files:
        tops = sorted(p[0] for p in files if len(p) == 2 and p[1] == "bot.toml")
        hint = (
            f" (found {tops[0]}/bot.toml: zip the folder's contents, not the folder)"
            if tops
            else ""
        )
        raise UploadError("the zip has no bot.toml at its root" + hint)
    _check_overlaps(data, infos, archive.start_dir)
    return archive, infos


def check_python(data: bytes) -> None:
    """Refuse a ``.py`` upload that is not UTF-8 text.

    Raises:
        UploadError: a NUL byte, or bytes that are not UTF-8.
    """
    if b"\0" in data:
        raise UploadError("the upload is neither a zip nor a Python file (it holds a NUL byte)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(
            f"the upload is neither a zip nor UTF-8 Python source (byte {exc.start})"
        ) from None


# -- writing -----------------------------------------------------------------------

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folder(root: int, parts: tuple[str, ...], opened: dict[tuple[str, ...], int]) -> int:
    """The descriptor of folder ``parts`` under ``root``, made as needed
    (0700), never through a link."""
    fd = root
    for depth in range(1, len(parts) + 1):
        key = parts[:depth]
        if key in opened:
            fd = opened[key]
            continue
        with contextlib.suppress(FileExistsError):
            os.mkdir(parts[depth - 1], 0o700, dir_fd=fd)
        fd = os.open(parts[depth - 1], _DIR_FLAGS, dir_fd=fd)
        opened[key] = fd
    return fd


def _write_file(folder: int, name: str, source: IO[bytes], cap: int) -> int:
    """Write ``source`` into a new file ``name`` of ``folder`` (exclusively);
    returns the bytes written.

    Raises:
        UploadError: more than ``cap`` bytes.
    """
    fd = os.open(name, _FILE_FLAGS, 0o600, dir_fd=folder)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            if written > cap:
                raise UploadError(f"the zip's files add up to over {_mib(cap)} unpacked")
            out.write(chunk)
    return written


def _unpack_zip(
    archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], root: int, limits: UploadLimits
) -> tuple[int, int, set[tuple[str, ...]]]:
    """Unpack into the folder ``root``; returns files, bytes and the files to make executable."""
    opened: dict[tuple[str, ...], int] = {}
    files = total = 0
    executable: set[tuple[str, ...]] = set()
    try:
        for info in infos:
            parts = _check_name(info.orig_filename, limits)
            if info.is_dir():
                _open_folder(root, parts, opened)
                continue
            folder = _open_folder(root, parts[:-1], opened)
            try:
                with archive.open(info) as source:
                    total += _write_file(folder, parts[-1], source, limits.unpacked_bytes - total)
            except (zipfile.BadZipFile, zlib_error(), EOFError) as exc:
                shown = ascii(info.filename)[1:-1][:120]
                raise UploadError(f"zip entry '{shown}': cannot be unpacked: {exc}") from None
            files += 1
            if (info.external_attr >> 16) & 0o111:
                executable.add(parts)
    finally:
        for fd in opened.values():
            os.close(fd)
    return files, total, executable


def zlib_error() -> type[Exception]:
    """The error of a corrupt deflate stream."""
    import zlib

    return zlib.error


def _normalise_modes(folder: Path, executable: set[tuple[str, ...]]) -> None:
    """Files 0444 (0555 for those in ``executable``), folders 0555, deepest first."""
    for path, dirs, names in os.walk(folder, topdown=False):
        base = Path(path)
        relative = base.relative_to(folder).parts
        for name in names:
            mode = 0o555 if (*relative, name) in executable else 0o444
            os.chmod(base / name, mode)
        for name in dirs:
            os.chmod(base / name, 0o555)
    os.chmod(folder, 0o555)


def _remove(folder: Path) -> None:
    """Remove a folder this module made, whatever its modes."""
    if not folder.exists():
        return
    for path, dirs, _ in os.walk(folder):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(Path(path) / name, 0o700)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    shutil.rmtree(folder, ignore_errors=True)


def store_upload(data: bytes, uploads: Path, limits: UploadLimits | None = None) -> StoredUpload:
    """Check ``data`` (a ``.py`` or a zip, told apart by its first bytes) and
    store it as the bot folder ``uploads/<sha256>``; the same bytes stored
    twice are stored once.

    Raises:
        UploadError: the upload is refused (one line); nothing is left behind.
        OSError: ``uploads`` cannot be written.
    """
    limits = limits or UploadLimits()
    if len(data) > limits.body_bytes:
        raise UploadError(f"upload is over the limit of {_mib(limits.body_bytes)}", 413)
    sha = hashlib.sha256(data).hexdigest()
    kind = upload_kind(data)
    if kind == "zip":
        archive, infos = check_zip(data, limits)
    else:
        check_python(data)
    final = uploads / sha
    if final.is_dir():
        files, unpacked = _count(final)
        return StoredUpload(sha, final, kind, len(data), files, unpacked, new=False)
    fresh = uploads / f".new-{secrets.token_hex(8)}"
    os.mkdir(fresh, 0o700)
    try:
        root = os.open(fresh, _DIR_FLAGS)
        try:
            if kind == "zip":
                files, unpacked, executable = _unpack_zip(archive, infos, root, limits)
            else:
                unpacked = _write_file(root, PY_NAME, io.BytesIO(data), limits.body_bytes)
                _write_file(root, BOT_TOML, io.BytesIO(b'command = "bot.py"\n'), 1024)
                files, executable = 2, set()
        finally:
            os.close(root)
        try:
            load_bot_folder(fresh)
        except BotFolderError as exc:
            raise UploadError(str(exc).replace(f"{fresh.resolve()}/", "")) from None
        _normalise_modes(fresh, executable)
        try:
            os.rename(fresh, final)
        except OSError:
            if not final.is_dir():
                raise
            _remove(fresh)  # the same bytes were stored meanwhile
            return StoredUpload(sha, final, kind, len(data), files, unpacked, new=False)
    except BaseException:
        _remove(fresh)
        raise
    return StoredUpload(sha, final, kind, len(data), files, unpacked, new=True)


def _count(folder: Path) -> tuple[int, int]:
    files = size = 0
    for path, _, names in os.walk(folder):
        for name in names:
            files += 1
            size += os.lstat(Path(path) / name).st_size
    return files, size
