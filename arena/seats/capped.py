"""A byte buffer of bounded size that keeps the head and the tail of a stream."""

from __future__ import annotations

from typing import Final

#: Bytes of a bot's stderr kept per game: the first ``STDERR_HEAD`` and the last
#: ``STDERR_TAIL`` bytes (a crash's traceback is at the end).
STDERR_HEAD: Final = 4 * 1024
STDERR_TAIL: Final = 12 * 1024


class CappedBuffer:
    """Keeps the first ``head`` and the last ``tail`` bytes written, counting the rest.

    Memory stays under ``head + 2 * tail`` bytes whatever is written.
    """

    def __init__(self, head: int = STDERR_HEAD, tail: int = STDERR_TAIL) -> None:
        self._head_cap = head
        self._tail_cap = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Append ``data``."""
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data[-self._tail_cap :]
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        """What was kept, decoded leniently, with a marker where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_cap :])
        dropped = self.total - len(self._head) - len(tail)
        head = self._head.decode("utf-8", "replace")
        if dropped > 0:
            return f"{head}\n[... {dropped} bytes not kept ...]\n{tail.decode('utf-8', 'replace')}"
        return head + tail.decode("utf-8", "replace")

    def take(self) -> str:
        """Return :meth:`text` and start afresh."""
        out = self.text()
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        return out
