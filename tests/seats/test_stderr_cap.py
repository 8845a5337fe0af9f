"""A bot's stderr past its cap per game is discarded unread (issue 22 item 9):
the arena reads the cap's bytes into Python and no more, counts the rest,
and says so in the game's record. Assertions on bytes read, not on time."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import trio
from conftest import bot, load_outputs, run_arena

from arena.sandbox.isolation import Limits
from arena.sandbox.spawn import LaunchSpec
from arena.seats.process import BotProcess

#: Writes argv[1] bytes to stderr in 64 KiB chunks, then argv[2] bytes more
#: after a line on stdout, then exits.
FLOODER = """
import os, sys
first, second = int(sys.argv[1]), int(sys.argv[2])
chunk = b"x" * 65536
def flood(n):
    while n > 0:
        n -= os.write(2, chunk[:n])
flood(first)
os.write(1, b"half\\n")
sys.stdin.readline()
flood(second)
"""


async def _until(done: Callable[[], bool]) -> None:
    """Wait (polling; at most 60 s) until ``done()``."""
    for _ in range(6000):
        if done():
            return
        await trio.sleep(0.01)
    raise AssertionError("not done after 60 s")


def _spec(tmp_path: Path, first: int, second: int, kib: int) -> LaunchSpec:
    script = tmp_path / "flooder.py"
    script.write_text(FLOODER)
    return LaunchSpec(
        argv=(sys.executable, str(script), str(first), str(second)),
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        label="flooder",
        limits=Limits(stderr_kib=kib, memory_mb=0, cpu_seconds=0),
    )


def test_past_its_cap_a_bots_stderr_is_counted_not_read(tmp_path: Path) -> None:
    first, second = 3 << 20, 5 << 20  # 3 MiB in a first game, 5 MiB in a second
    spec = _spec(tmp_path, first, second, kib=256)

    async def main() -> tuple[int, int, str, int, int, str]:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                # The first "game": wait for its stdout line and for the pipe to drain.
                await _until(lambda: bot.stderr.total + bot.stderr.discarded >= first)
                read1, skipped1 = bot.stderr.total, bot.stderr.discarded
                text1 = bot.stderr.take()  # a game's end: the cap starts afresh
                os.write(bot._pipes.stdin_fd, b"go\n")
                await _until(lambda: bot.stderr.total + bot.stderr.discarded >= second)
                return (
                    read1,
                    skipped1,
                    text1,
                    bot.stderr.total,
                    bot.stderr.discarded,
                    bot.stderr.text(),
                )
            finally:
                await bot.close(0.2)

    read1, skipped1, text1, read2, skipped2, text2 = trio.run(main)
    assert read1 == 256 * 1024 and skipped1 == first - 256 * 1024
    assert read2 == 256 * 1024 and skipped2 == second - 256 * 1024
    assert f"{first - 256 * 1024} more bytes not read" in text1
    assert "stderr cap of 262144 bytes per game (--stderr-limit)" in text1
    assert f"{second - 256 * 1024} more bytes not read" in text2


def test_without_a_cap_every_byte_is_read(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 1 << 20, 0, kib=0)

    async def main() -> tuple[int, int]:
        async with trio.open_nursery() as nursery:
            bot = await BotProcess.start(spec, nursery)
            try:
                await _until(lambda: bot.stderr.total >= 1 << 20)
                return bot.stderr.total, bot.stderr.discarded
            finally:
                await bot.close(0.2)

    assert trio.run(main) == (1 << 20, 0)


def test_a_flooders_record_says_its_stderr_was_not_read(tmp_path: Path) -> None:
    """The hostile flooder writes 2 MB before every reply: with a 64 KiB cap
    its record keeps 16 KiB, and names how many bytes were not read."""
    out = tmp_path / "out"
    args = [
        "run",
        bot("hostile_stderr_flood", "flood"),
        *(bot("first_legal", f"ok{i}") for i in range(3)),
    ]
    args += ["--hands", "1", "--rounds", "1", "--seed", "3", "--stderr-limit", "64"]
    args += ["--time-limit", "5", "--out", str(out), "--quiet", "--jobs", "1"]
    assert run_arena(args) == 0
    _, records = load_outputs(out)
    assert len(records) == 4
    for rec in records:
        seat = rec["seats"].index("flood")
        assert [f for f in rec["faults"] if f["entrant"] == "flood"] == []
        text = rec["stderr"][seat]
        assert "more bytes not read: over the stderr cap of 65536 bytes per game" in text
        skipped = int(text.rsplit("[... ", 1)[1].split()[0])
        # 13 replies (hello's before the game is not this game's) of about 2 MB
        # each, all but 64 KiB of it never read.
        assert skipped > 12 * 2_000_000
        assert len(text.encode()) < 17 * 1024
