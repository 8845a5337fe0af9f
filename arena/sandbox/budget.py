"""The bots' memory against the machine's: fitting ``--memory-limit`` to
``--jobs`` (issue 22 item 9).

A run holds up to ``--jobs`` x 4 bots at once, each bound to
``--memory-limit`` MiB (its whole control group, or its address space per
process). At the defaults on a 24 GiB machine with 2 cores that was 2 x 4 x
4096 = 32 GiB: bots using their bound at once would bring the kernel's
machine-wide out-of-memory killer down on any process, the arena's too.

:func:`fit_memory` decides, at start:

- the default bound (:data:`DEFAULT_MEMORY_MB`, 4096 MiB) is kept when all
  the bots fit in the machine's memory less a reserve for the arena and the
  system (:func:`reserve_mb`: an eighth of the memory, at least 1 GiB); else
  it is lowered to the largest multiple of 64 MiB that fits (never below
  :data:`MIN_MEMORY_MB`), said in one line;
- an explicit ``--memory-limit`` (on the command line, in a config file, or
  recorded by the run being resumed) is never changed: when the bots cannot
  all fit, one warning line says so and the run goes on. A bound is a ceiling,
  not a reservation: bots that use less than it fit, and the organiser who
  chose it may know that (refusing would stop runs that work);
- ``--memory-limit 0`` (no bound) is not checked.

Separately, a sealed bot's ``/tmp`` and ``/dev/shm`` are memory (tmpfs): what
it writes there is charged to its memory bound, so a ``--tmp-size`` above
``--memory-limit`` gets one line (:func:`tmp_note`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Where the machine's memory is read (a test points it elsewhere).
MEMINFO: Path = Path("/proc/meminfo")
#: The default bound per bot, in MiB (as :class:`arena.sandbox.isolation.Limits`).
DEFAULT_MEMORY_MB: Final = 4096
#: The lowest bound the default is lowered to, in MiB.
MIN_MEMORY_MB: Final = 256
#: Bots at a table: each game in flight holds four.
BOTS_PER_GAME: Final = 4


def machine_memory_mb(meminfo: Path | None = None) -> int | None:
    """The machine's memory (``MemTotal`` of ``/proc/meminfo``) in MiB, or
    ``None`` where it cannot be read."""
    try:
        text = (meminfo or MEMINFO).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            try:
                return int(line.split()[1]) // 1024  # kB
            except (IndexError, ValueError):
                return None
    return None


def reserve_mb(machine_mb: int) -> int:
    """MiB kept for the arena and the rest of the system: an eighth of the
    machine's memory, at least 1 GiB."""
    return max(1024, machine_mb // 8)


@dataclass(frozen=True)
class MemoryFit:
    """What :func:`fit_memory` decided.

    Attributes:
        memory_mb: the bound per bot to use, in MiB (0: none).
        note: one line for the user (what was lowered, or a warning), or ``None``.
    """

    memory_mb: int
    note: str | None = None


def fit_memory(jobs: int, memory_mb: int | None, machine_mb: int | None) -> MemoryFit:
    """Fit the memory bound per bot to ``jobs`` games of four bots.

    Args:
        jobs: games in flight at once (``--jobs``, as fitted to the open-files limit).
        memory_mb: the ``--memory-limit`` given, in MiB, or ``None`` for the default.
        machine_mb: the machine's memory in MiB (:func:`machine_memory_mb`),
            or ``None`` if unknown (then nothing is checked).
    """
    bots = max(1, jobs) * BOTS_PER_GAME
    wanted = DEFAULT_MEMORY_MB if memory_mb is None else memory_mb
    if not wanted or machine_mb is None:
        return MemoryFit(wanted)
    room = machine_mb - reserve_mb(machine_mb)
    if bots * wanted <= room:
        return MemoryFit(wanted)
    whole = (
        f"--jobs {jobs} x {BOTS_PER_GAME} bots x {wanted} MiB = {bots * wanted} MiB, more than "
        f"the {room} MiB the bots may use of this machine's {machine_mb} MiB"
    )
    if memory_mb is not None:
        return MemoryFit(
            wanted,
            f"warning: {whole}; bots that all use their bound at once may be killed by the "
            "machine's out-of-memory killer (give a lower --memory-limit or fewer --jobs)",
        )
    fitted = max(MIN_MEMORY_MB, room // bots // 64 * 64)
    short = "" if bots * fitted <= room else "; even that does not fit: give fewer --jobs"
    return MemoryFit(
        fitted,
        f"--memory-limit lowered to {fitted} MiB per bot: {whole} (give --memory-limit to "
        f"choose){short}",
    )


def tmp_note(tmp_mb: int, memory_mb: int) -> str | None:
    """One line when a sealed bot's ``/tmp`` (``--tmp-size``) can hold more
    than its whole memory bound, else ``None``: its ``/tmp`` and ``/dev/shm``
    are memory, charged to the bound."""
    if not memory_mb or tmp_mb <= memory_mb:
        return None
    return (
        f"warning: --tmp-size {tmp_mb} MiB is more than --memory-limit {memory_mb} MiB: what a "
        "sealed bot writes to its /tmp and /dev/shm counts as its memory, so it is killed "
        "for memory before its /tmp is full"
    )
