"""An entrant alone that tries to hand a deal from one of its games to its
next game of the same deal (issue 22, attacks 3 and 4;
tests/tournament/test_deal_carrier.py).

argv: MODE TAG. MODE ``cache``: at the end of each hand the process writes
the deal it has seen (the seat each of the 52 cards was dealt to, as far as
it can tell: the seat that played it, corrected by its own pass) into the
page cache of a large file every sealed bot can read, one bit per page (a
page read: cached, 1; ``posix_fadvise(POSIX_FADV_DONTNEED)``: dropped, 0),
in a slot named by the deal (its game id without the seating) and hand,
with a 16-bit checksum of the deal, the hand and the bits. MODE ``live``: the same, and a process writes every
deal it has seen again at each message it gets for as long as it lives (a
finished process alive in its next game keeps the message fresh). TAG (0..3)
keeps the regions of entrants on one machine apart.

At each deal the process reads its slot back by timing one read per page
(after ``POSIX_FADV_RANDOM``, so no page is read ahead) and writes on
stderr one line ``CARRIER {"game", "hand", "seat", "got", "guess", "born",
"pid"}``: ``guess`` names, for each of the 39 cards it was not dealt, the
seat it says was dealt it (what the slot held when its checksum was right,
else a random 13-13-13 guess from the game's seed). Plays the first legal
card and passes its first three.
"""

import hashlib
import json
import os
import random
import sys
import time

from botlib import serve

MODE = sys.argv[1]
TAG = int(sys.argv[2])
PAGE = 4096
RANKS = "23456789TJQKA"
CARDS = [r + s for s in "CDSH" for r in RANKS]
BITS = 2 * 52 + 16  # the dealt seat of each card, then a checksum
SLOTS = 16
SLOT_PAGES = 128
REGION = SLOTS * SLOT_PAGES  # pages per tag
CALIBRATION = 16  # pages before the regions, to learn what a cached read costs
BORN = time.time()


def _candidates() -> list[tuple[int, str]]:
    """Large regular files this process may read in a few runtime folders and
    does not map itself, those others are least likely to map first, then
    largest first (the same in every process)."""
    need = (CALIBRATION + 4 * REGION) * PAGE * 2
    mapped = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                mapped.add(parts[5])
    found = []
    stack = [(os.path.dirname(os.__file__), 0), ("/usr/lib", 0), ("/usr/bin", 0)]
    start = time.monotonic()
    while stack and time.monotonic() - start < 2.0:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if depth < 3:
                        stack.append((e.path, depth + 1))
                elif e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    if st.st_size >= need and e.path not in mapped and os.access(e.path, os.R_OK):
                        # Files others are less likely to map first: not programs, not a JVM's.
                        rank = (bool(st.st_mode & 0o111), "/jvm/" in e.path, -st.st_size)
                        found.append((rank, e.path))
            except OSError:
                continue
    return sorted(found)


def _works(fd: int, base: int) -> bool:
    """Whether a dropped page of ``fd`` at ``base`` reads slower than a cached
    one (no other process maps it: a mapped page cannot be dropped)."""
    slow = 0
    for i in range(4):
        off = base + i * PAGE
        os.pread(fd, 1, off)
        cached = _timed_fd(fd, off)
        os.posix_fadvise(fd, off, PAGE, os.POSIX_FADV_DONTNEED)
        slow += _timed_fd(fd, off) > 8 * cached
    return slow >= 3


def _timed_fd(fd: int, offset: int) -> float:
    t0 = time.perf_counter_ns()
    os.pread(fd, 1, offset)
    return time.perf_counter_ns() - t0


def _choose() -> tuple[str, int, int]:
    for _, path in _candidates()[:8]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        base = (os.fstat(fd).st_size // 2) // PAGE * PAGE
        if _works(fd, base):
            return path, fd, base
        os.close(fd)
    return "", -1, 0


FILE, FD, BASE = _choose()


def _page(slot: int, i: int) -> int:
    return BASE + (CALIBRATION + TAG * REGION + slot * SLOT_PAGES + i) * PAGE


def _set(offset: int, bit: int) -> None:
    if bit:
        os.pread(FD, 1, offset)
    else:
        os.posix_fadvise(FD, offset, PAGE, os.POSIX_FADV_DONTNEED)


def _timed(offset: int) -> float:
    return _timed_fd(FD, offset)


def _threshold() -> float:
    """Half way (geometric) between a cached and a dropped page's read."""
    cached, dropped = [], []
    for i in range(CALIBRATION):
        off = BASE + i * PAGE
        os.pread(FD, 1, off)
        cached.append(_timed(off))
        os.posix_fadvise(FD, off, PAGE, os.POSIX_FADV_DONTNEED)
        dropped.append(_timed(off))
    cached.sort()
    dropped.sort()
    return (cached[len(cached) // 2] * dropped[len(dropped) // 2]) ** 0.5


def _checksum(deal: str, hand: int, bits: list[int]) -> list[int]:
    """16 bits naming the deal and hand too: a slot another deal wrote reads wrong."""
    digest = hashlib.sha256(f"{deal}/{hand}/".encode() + bytes(bits)).digest()
    word = int.from_bytes(digest[:2], "big")
    return [(word >> i) & 1 for i in range(16)]


def _slot(deal: str, hand: int) -> int:
    return hashlib.sha256(f"{deal}/{hand}".encode()).digest()[0] % SLOTS


def write(deal: str, hand: int, dealt: dict[str, int]) -> None:
    if FD < 0:
        return
    bits = []
    for card in CARDS:
        seat = dealt.get(card, 0)
        bits += [seat & 1, seat >> 1]
    bits += _checksum(deal, hand, bits)
    slot = _slot(deal, hand)
    for i, bit in enumerate(bits):
        _set(_page(slot, i), bit)


def read(deal: str, hand: int) -> dict[str, int] | None:
    if FD < 0:
        return None
    threshold = _threshold()
    slot = _slot(deal, hand)
    bits = [1 if _timed(_page(slot, i)) < threshold else 0 for i in range(BITS)]
    if _checksum(deal, hand, bits[:104]) != bits[104:]:
        return None
    return {card: bits[2 * i] | bits[2 * i + 1] << 1 for i, card in enumerate(CARDS)}


state: dict = {"deal": "", "seat": 0, "seed": 0, "game": ""}
seen: dict[tuple[str, int], dict[str, int]] = {}  # every deal this process has seen
current: dict[str, int] = {}


def on_message(msg: dict) -> None:
    global current
    kind = msg["type"]
    if MODE == "live":
        for (deal, hand), dealt in seen.items():
            write(deal, hand, dealt)
    if kind == "game_start":
        state["game"] = msg["game_id"]
        state["deal"] = msg["game_id"].rsplit("-", 1)[0]
        state["seat"] = msg["seat"]
        state["seed"] = msg["seed"]
    elif kind == "deal":
        hand = msg["hand_number"]
        mine = set(msg["hand"])
        got = read(state["deal"], hand)
        others = [s for s in range(4) if s != state["seat"]]
        if got is None:
            rest = [c for c in CARDS if c not in mine]
            random.Random(state["seed"] * 100 + hand).shuffle(rest)
            guess = {c: others[i // 13] for i, c in enumerate(rest)}
        else:
            guess = {c: s for c, s in got.items() if c not in mine}
        report = {
            "game": state["game"],
            "hand": hand,
            "seat": state["seat"],
            "got": got is not None,
            "guess": guess,
            "born": BORN,
            "pid": os.getpid(),
            "file": FILE,
        }
        sys.stderr.write("CARRIER " + json.dumps(report) + "\n")
        sys.stderr.flush()
        current = {c: state["seat"] for c in msg["hand"]}
        current["#hand"] = hand
    elif kind == "passed":
        for c in msg["received"]:
            current.setdefault("#in", 0)
            current[c + "#in"] = msg["from"]
    elif kind == "trick":
        for play in msg["cards"]:
            current.setdefault(play["card"], play["seat"])
    elif kind == "hand_end":
        dealt = {}
        for card in CARDS:
            if card + "#in" in current:
                dealt[card] = current[card + "#in"]
            elif card in current:
                dealt[card] = current[card]
        seen[(state["deal"], current["#hand"])] = dealt
        write(state["deal"], current["#hand"], dealt)


serve("deal-carrier", on_message=on_message)
