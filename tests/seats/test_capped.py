"""The stderr buffer cuts bot bytes on UTF-8 character boundaries (issue 24
item 12): whatever the text and however it arrives, what is kept decodes to
the text's own characters, a prefix and a suffix of it, and the bytes
counted as dropped are exactly the rest."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.seats.capped import (
    CappedBuffer,
    boundary_at_or_after,
    boundary_at_or_before,
    incomplete_suffix,
)

#: Any character but U+FFFD itself (which marks a split in what is decoded)
#: and surrogates (which UTF-8 cannot carry).
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd"),
    max_size=400,
)
MARKER = re.compile(r"\n\[\.\.\. (\d+) bytes not kept \.\.\.\]\n")


def _write_in_pieces(buf: CappedBuffer, data: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(data)) for c in cuts})
    start = 0
    for p in [*points, len(data)]:
        if p > start:
            buf.write(data[start:p])
            start = p


@settings(max_examples=400, deadline=None)
@given(TEXT, st.lists(st.integers(0, 2000), max_size=8), st.integers(0, 40), st.integers(1, 40))
def test_kept_text_is_whole_characters(text: str, cuts: list[int], head: int, tail: int) -> None:
    data = text.encode()
    buf = CappedBuffer(head=head, tail=tail)
    _write_in_pieces(buf, data, cuts)
    out = buf.text()
    assert buf.total == len(data)
    assert "\ufffd" not in out  # no character was cut in two
    found = MARKER.search(out)
    if found is None:
        assert out == text  # nothing dropped: decoded in one piece
        assert len(data) <= head + tail
        return
    kept_head, kept_tail = out[: found.start()], out[found.end() :]
    assert text.startswith(kept_head) and text.endswith(kept_tail)
    dropped = int(found.group(1))
    assert len(kept_head.encode()) + dropped + len(kept_tail.encode()) == len(data)
    assert len(kept_head.encode()) <= head and len(kept_tail.encode()) <= tail
    # Each end gives up at most one character (3 bytes) to stay whole.
    assert len(kept_head.encode()) > head - 4 or len(kept_head.encode()) == len(data)
    assert len(kept_tail.encode()) > tail - 4


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(0, 2000))
def test_boundaries_split_no_character(text: str, cut: int) -> None:
    data = text.encode()
    before = boundary_at_or_before(data, cut)
    after = boundary_at_or_after(data, min(cut, len(data)))
    for i in (before, after):
        assert data[:i].decode() + data[i:].decode() == text  # raises if split
    assert min(cut, len(data)) - 3 <= before <= min(cut, len(data)) <= after
    assert after <= min(cut, len(data)) + 3


def test_a_character_across_the_head_stays_one_character() -> None:
    # 4095 ASCII bytes, then a 3-byte euro sign across the 4 KiB head's end.
    text = "a" * 4095 + "\u20ac" + "b" * 100
    buf = CappedBuffer()
    buf.write(text.encode())
    assert buf.text() == text
    assert buf.take() == text and buf.total == 0


def test_dropped_bytes_keep_whole_ends() -> None:
    text = "\u00e9" * 20_000  # two bytes each: 40,000 bytes, head and tail cut mid-way
    buf = CappedBuffer(head=4097, tail=12 * 1024 + 1)
    for i in range(0, len(text), 333):
        buf.write(text[i : i + 333].encode())
    out = buf.text()
    found = MARKER.search(out)
    assert found is not None
    head, tail = out[: found.start()], out[found.end() :]
    assert head == "\u00e9" * 2048 and tail == "\u00e9" * 6144
    assert int(found.group(1)) == 40_000 - 2 * 2048 - 2 * 6144


def test_incomplete_suffix_counts_an_unfinished_character() -> None:
    euro = "\u20ac".encode()  # e2 82 ac
    assert incomplete_suffix(b"ab" + euro[:1]) == 1
    assert incomplete_suffix(b"ab" + euro[:2]) == 2
    assert incomplete_suffix(b"ab" + euro) == 0
    assert incomplete_suffix(b"\x80\x80\x80\x80") == 0  # not UTF-8: nothing held back


def test_bytes_not_read_are_said() -> None:
    buf = CappedBuffer()
    buf.cap = 1024 * 1024
    buf.write(b"hello\n")
    buf.discarded = 5_000_000
    assert buf.text() == (
        "hello\n\n[... 5000000 more bytes not read: over the stderr cap of 1048576 bytes "
        "per game (--stderr-limit) ...]"
    )
    buf.take()
    assert buf.discarded == 0 and buf.text() == ""
