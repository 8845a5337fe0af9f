"""An attacker: looks for the tournament's key and deals everywhere it can read.

It opens the output folder's files (path in argv[1]), reads /proc/*/cmdline and
/proc/*/environ of every process (and the file named after ``--key-file`` on a
command line), its own environment, and files of the arena under /tmp and
/dev/shm, and reports on stderr what it could open and every 64-digit
hexadecimal string it found (a key candidate). Files named in argv[2:] are read
too (controls: files any user may read, to show the hunt can read). Then it
plays legally.
"""

from __future__ import annotations

import itertools
import os
import re
import sys

from botlib import serve

HEX64 = re.compile(rb"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])")


def hunt(out: str) -> None:
    candidates: set[bytes] = set()
    opened: list[str] = []
    denied: list[str] = []

    def grab(path: str) -> None:
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            denied.append(path)
            return
        opened.append(path)
        candidates.update(HEX64.findall(data))

    for name in ("run.json", "games.jsonl", "tournament.key", ".hearts-arena.lock", "results.json"):
        grab(os.path.join(out, name))
    try:
        listing = os.listdir(out)
        opened.append(out + "/ (listing)")
    except OSError:
        listing = []
    for name in listing:
        grab(os.path.join(out, name))
    procs = 0
    key_files: set[str] = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            procs += 1
            for part in ("cmdline", "environ"):
                try:
                    with open(f"/proc/{pid}/{part}", "rb") as f:
                        data = f.read(1 << 16)
                except OSError:
                    continue
                candidates.update(HEX64.findall(data))
                words = data.split(b"\0")
                for flag, word in itertools.pairwise(words):
                    if flag == b"--key-file":
                        key_files.add(os.fsdecode(word))
    key_files_opened = 0
    for path in key_files:
        before = len(opened)
        grab(path)
        key_files_opened += len(opened) > before
    controls_opened = 0
    for path in sys.argv[2:]:
        before = len(opened)
        grab(path)
        controls_opened += len(opened) > before
    for value in os.environ.values():
        candidates.update(HEX64.findall(value.encode()))
    for root in ("/tmp", "/dev/shm"):
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                if "hearts" in path:
                    grab(path)
    out_files = [p for p in opened if p.startswith(out)]
    sys.stderr.write(
        f"HUNT procs={procs} out_opened={len(out_files)} denied={len(denied)} "
        f"key_files_seen={len(key_files)} key_files_opened={key_files_opened} "
        f"controls_opened={controls_opened}\n"
    )
    for path in out_files:
        sys.stderr.write(f"HUNT opened {path}\n")
    for c in sorted(candidates)[:50]:
        sys.stderr.write(f"HUNT candidate {c.decode()}\n")
    sys.stderr.flush()


hunted = False


def on_request(msg: dict[str, object], counts: dict[str, int]) -> bool:
    """Hunt once, at the first play request: the run is well under way."""
    global hunted
    if msg["type"] == "play" and not hunted:
        hunted = True
        hunt(sys.argv[1] if len(sys.argv) > 1 else "reports")
    return False


serve("key-hunter", on_request)
