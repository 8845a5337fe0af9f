"""A byte buffer of bounded size that keeps the head and the tail of a stream,
cut on UTF-8 character boundaries.

A bot's stderr is hostile bytes: the buffer never splits a multi-byte UTF-8
character between what it keeps and what it drops (the head ends, and the tail
starts, on a character boundary), and when nothing was dropped the text is
decoded in one piece, so a character across the head's end stays one character.
Bytes that are not UTF-8 at all are still decoded leniently (U+FFFD).
"""

from __future__ import annotations

from typing import Final

#: Bytes of a bot's stderr kept per game: the first ``STDERR_HEAD`` and the last
#: ``STDERR_TAIL`` bytes (a crash's traceback is at the end).
STDERR_HEAD: Final = 4 * 1024
STDERR_TAIL: Final = 12 * 1024

#: The longest UTF-8 encoding of one character, in bytes.
_UTF8_MAX: Final = 4


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _sequence_length(lead: int) -> int:
    """Bytes of the UTF-8 sequence ``lead`` starts (1 for ASCII and for bytes
    that start no valid sequence)."""
    if lead >= 0xF0:
        return 4 if lead < 0xF8 else 1
    if lead >= 0xE0:
        return 3
    if lead >= 0xC0:
        return 2
    return 1


def incomplete_suffix(data: bytes | bytearray) -> int:
    """How many bytes at the end of ``data`` are the start of a UTF-8
    character that ``data`` does not finish (0 to 3): cutting ``data`` that
    many bytes earlier ends it on a character boundary."""
    n = len(data)
    for back in range(1, min(_UTF8_MAX, n) + 1):
        byte = data[n - back]
        if not _is_continuation(byte):
            return back if _sequence_length(byte) > back else 0
    return 0  # only continuation bytes: not UTF-8 here, nothing to keep together


def boundary_at_or_before(data: bytes | bytearray, cut: int) -> int:
    """The largest index ``<= cut`` (and ``>= cut - 3``) where a UTF-8
    character of ``data`` starts (or ``len(data)``): ``data[:i]`` and
    ``data[i:]`` then split no character. ``cut`` itself when the bytes there
    are not UTF-8."""
    cut = max(0, min(cut, len(data)))
    return cut - incomplete_suffix(data[max(0, cut - _UTF8_MAX) : cut])


def boundary_at_or_after(data: bytes | bytearray, start: int) -> int:
    """The smallest index ``>= start`` (and ``<= start + 3``) that is not
    inside a UTF-8 character of ``data``: the index of the first byte from
    ``start`` that is not a continuation byte, or ``start`` when the next
    four bytes are all continuations (not UTF-8)."""
    for i in range(start, min(start + _UTF8_MAX, len(data) + 1)):
        if i == len(data) or not _is_continuation(data[i]):
            return i
    return start


class CappedBuffer:
    """Keeps the first ``head`` and the last ``tail`` bytes written, counting
    the rest; both ends are cut on UTF-8 character boundaries.

    Memory stays under ``head + 2 * tail`` bytes whatever is written.

    Attributes:
        total: bytes written (read from the bot) since the last :meth:`take`.
        discarded: bytes the bot wrote that were never read into Python (past
            the seat's cap on stderr, :data:`arena.seats.process.STDERR_CAP_KIB`),
            counted by whoever discarded them; said in :meth:`text`.
        cap: the cap on bytes read per game, named in :meth:`text`'s note
            when ``discarded`` is not 0 (0: no cap).
    """

    def __init__(self, head: int = STDERR_HEAD, tail: int = STDERR_TAIL) -> None:
        self._head_cap = head
        self._tail_cap = tail
        self._head = bytearray()
        self._head_closed = False  # the head is full (ended on a character boundary)
        self._tail = bytearray()
        self.total = 0
        self.discarded = 0
        self.cap = 0

    def write(self, data: bytes) -> None:
        """Append ``data``."""
        self.total += len(data)
        if not self._head_closed:
            room = self._head_cap - len(self._head)
            self._head += data[:room]
            data = data[room:]
            if data or len(self._head) >= self._head_cap:
                self._head_closed = True
                # End the head on a character boundary: a character it does
                # not finish goes to the tail, whole.
                partial = incomplete_suffix(self._head)
                if partial:
                    data = bytes(self._head[-partial:]) + data
                    del self._head[-partial:]
        if data:
            self._tail += data[-self._tail_cap :]
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        """What was kept, decoded leniently, with a marker where bytes were
        dropped (and a note when bytes past the cap were not read)."""
        kept_tail = len(self._tail)
        start = max(0, kept_tail - self._tail_cap)
        dropped = self.total - len(self._head) - (kept_tail - start)
        if dropped > 0:
            # Start the tail on a character boundary: a character cut at its
            # start is dropped whole (and counted).
            begin = boundary_at_or_after(self._tail, start)
            dropped += begin - start
            head = self._head.decode("utf-8", "replace")
            tail = self._tail[begin:].decode("utf-8", "replace")
            text = f"{head}\n[... {dropped} bytes not kept ...]\n{tail}"
        else:
            text = (bytes(self._head) + bytes(self._tail)).decode("utf-8", "replace")
        if self.discarded:
            cap = f" of {self.cap} bytes" if self.cap else ""
            text += (
                f"\n[... {self.discarded} more bytes not read: over the stderr cap{cap} "
                "per game (--stderr-limit) ...]"
            )
        return text

    def take(self) -> str:
        """Return :meth:`text` and start afresh."""
        out = self.text()
        self._head = bytearray()
        self._head_closed = False
        self._tail = bytearray()
        self.total = 0
        self.discarded = 0
        return out
