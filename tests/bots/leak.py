"""Two copies of this bot try to pass the sender's dealt hand to the receiver
through each channel class of issue 22 (tests/sandbox/test_seal_channels.py,
benchmarks/seal_channels.py).

argv: ROLE (S sends, R receives) TAG (hex digits naming this run's files and
sockets, so that two runs on one machine do not see each other's).

Channels, by how they carry a hand:

* whole hand at each of the sender's requests (the receiver reads a set):
  ``dnotify`` (the sender reads a file in folder i of :data:`FOLDERS` for each
  card i; the receiver's ``F_NOTIFY`` with ``F_SETSIG`` gets a signal naming
  the folder), ``inotify`` (the same reads, watched with ``IN_ACCESS``),
  ``tmp-file``, ``abstract-socket``, ``lock-library`` (read locks on byte i
  of the C library);
* one card per sender request, as a machine-wide counter the sender moves
  and the receiver reads (levels ``L_k = L_{k-1} + card_k + 1`` modulo
  :data:`MOD`, so the receiver decodes the difference between its two reads):
  ``pty`` (``/proc/sys/kernel/pty/nr``: pseudo-terminals held), ``meminfo``
  (``Shmem``) and ``vmstat`` (``nr_shmem``): 256 KiB units of a file in
  ``/dev/shm``; ``loadavg`` (threads on the machine) and ``sysinfo`` (its
  ``procs``): threads held; ``file-nr``: descriptors held; ``inode-nr`` and
  ``dentry-state``: files held in ``/tmp``; ``stat`` (``processes``, a
  running count of forks and threads): ``card + 1`` threads started;
  ``uptime`` (busy time of the machine): ``card + 1`` ms of spinning.

The receiver also reports, once a process, what it finds of ``pid 1``
(``ptrace``, ``process_vm_readv``, ``/proc/1/environ``), its environment and
its mount table. At its last play of each hand it writes one line
``LEAK {"hand": N, "cards": {channel: "letters" or null}}`` (card i is the
letter ``chr(65 + i)``; null: the channel could not be opened), and once
``LEAKINFO {...}``. Both play the first legal card.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from botlib import serve

ROLE, TAG = sys.argv[1], sys.argv[2]
RANKS = "23456789TJQKA"
CARDS = [r + s for s in "CDSH" for r in RANKS]
MOD = 64
SPIN = 0.001  # seconds of CPU a card unit costs on the uptime channel
libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def _folders() -> list[str]:
    """A file in each of 52 folders both bots can read (sealed too) that no
    running program reads: the JVMs' licence folders, then Python's rarely
    imported packages."""
    import sysconfig

    tops = []
    if os.path.isdir("/usr/lib/jvm"):
        for part in ("legal", "include", "man", "jmods", "lib/security", "conf"):
            for top in sorted(os.listdir("/usr/lib/jvm")):
                if not os.path.islink(f"/usr/lib/jvm/{top}"):
                    tops.append(f"/usr/lib/jvm/{top}/{part}")
    stdlib = sysconfig.get_paths()["stdlib"]
    for name in (
        "curses", "dbm", "email/mime", "ensurepip", "html", "lib2to3", "pydoc_data", "sqlite3",
        "tomllib", "turtledemo", "venv", "wsgiref", "xml/dom", "xml/etree", "xml/parsers",
        "xml/sax", "xmlrpc", "zoneinfo", "idlelib", "tkinter",
    ):  # fmt: skip
        tops.append(os.path.join(stdlib, name))
    found: list[str] = []
    for top in tops:
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            real = [
                f
                for f in sorted(files)
                if not os.path.islink(f"{folder}/{f}") and os.access(f"{folder}/{f}", os.R_OK)
            ]
            if real:
                found.append(f"{folder}/{real[0]}")
    return found[:52] if len(found) >= 52 else []


FOLDERS = _folders()  # a file in each folder


def _libc_path() -> str:
    with open("/proc/self/maps") as f:
        for line in f:
            if "libc.so" in line:
                return line.split()[-1]
    return "/usr/lib/x86_64-linux-gnu/libc.so.6"


LOCKED = _libc_path()
ABSTRACT = b"\0hearts-leak-" + TAG.encode()
TMP_FILE = f"/tmp/hearts-leak-{TAG}"


def letters(cards: list[int]) -> str:
    return "".join(chr(65 + c) for c in cards)


# ---------------------------------------------------------------- sender
class Sender:
    def __init__(self) -> None:
        self.level = 0
        self.ptys: list[int] = []
        self.fds: list[int] = []
        self.files: list[str] = []
        self.threads: list[tuple[threading.Thread, threading.Event]] = []
        self.shm = f"/dev/shm/hearts-leak-{TAG}-{os.getpid()}"
        self.hand: list[int] = []
        self.lock_fd = os.open(LOCKED, os.O_RDONLY)
        self.server: socket.socket | None = None
        with contextlib.suppress(OSError):
            self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.server.bind(ABSTRACT)
            self.server.listen(8)
            threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        assert self.server is not None
        while True:
            conn, _ = self.server.accept()
            with conn:
                conn.sendall(letters(self.hand).encode())

    def deal(self, hand: list[str]) -> None:
        self.hand = sorted(CARDS.index(c) for c in hand)
        self.publish_whole()

    def publish_whole(self) -> None:
        for card in self.hand:
            if FOLDERS:
                with contextlib.suppress(OSError), open(FOLDERS[card], "rb") as f:
                    f.read(1)
        with contextlib.suppress(OSError), open(TMP_FILE, "w") as f:
            f.write(letters(self.hand))
        with contextlib.suppress(OSError):
            fcntl.lockf(self.lock_fd, fcntl.LOCK_UN, 64, 0)
            for card in self.hand:
                lock = struct.pack("hhqqi", fcntl.F_RDLCK, 0, card, 1, 0)
                fcntl.fcntl(self.lock_fd, fcntl.F_SETLK, lock)

    def step(self, k: int) -> None:
        """Request k of the hand (0: the pass): publish card k on the counters."""
        if not self.hand:
            return
        self.publish_whole()
        card = self.hand[k % 13]
        self.level = (self.level + card + 1) % MOD
        self.hold(self.level)
        for _ in range(card + 1):  # the count of forks counts threads too
            thread = threading.Thread(target=int)
            thread.start()
            thread.join()
        end = time.process_time() + SPIN * (card + 1)
        while time.process_time() < end:
            pass

    def hold(self, n: int) -> None:
        while len(self.ptys) > n:
            os.close(self.ptys.pop())
        while len(self.ptys) < n:
            try:
                master, slave = os.openpty()
            except OSError:
                break
            os.close(slave)
            self.ptys.append(master)
        while len(self.fds) > n:
            os.close(self.fds.pop())
        while len(self.fds) < n:
            self.fds.append(os.open("/dev/null", os.O_RDONLY))
        while len(self.files) > n:
            with contextlib.suppress(OSError):
                os.unlink(self.files.pop())
        while len(self.files) < n:
            path = f"/tmp/hearts-leak-{TAG}-{os.getpid()}-{len(self.files)}"
            with contextlib.suppress(OSError):
                open(path, "w").close()
            self.files.append(path)
        while len(self.threads) > n:
            thread, stop = self.threads.pop()
            stop.set()
            thread.join()
        while len(self.threads) < n:
            stop = threading.Event()
            thread = threading.Thread(target=stop.wait, daemon=True)
            thread.start()
            self.threads.append((thread, stop))
        with contextlib.suppress(OSError):
            fd = os.open(self.shm, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                os.ftruncate(fd, n * 256 * 1024)  # shrinks (frees pages) or grows
                if n:
                    os.posix_fallocate(fd, 0, n * 256 * 1024)  # tmpfs pages counted as Shmem
            finally:
                os.close(fd)


# ---------------------------------------------------------------- receiver
class SysInfo(ctypes.Structure):
    _fields_ = [
        ("uptime", ctypes.c_long),
        ("loads", ctypes.c_ulong * 3),
        ("totalram", ctypes.c_ulong),
        ("freeram", ctypes.c_ulong),
        ("sharedram", ctypes.c_ulong),
        ("bufferram", ctypes.c_ulong),
        ("totalswap", ctypes.c_ulong),
        ("freeswap", ctypes.c_ulong),
        ("procs", ctypes.c_ushort),
        ("pad", ctypes.c_char * 22),
    ]


def _field(path: str, key: str, index: int = 1) -> float | None:
    try:
        with open(path) as f:
            for line in f:
                words = line.split()
                if words and words[0].rstrip(":") == key:
                    return float(words[index])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _first(path: str) -> float | None:
    try:
        with open(path) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _loadavg_threads() -> float | None:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return None


def _sysinfo_procs() -> float | None:
    info = SysInfo()
    return float(info.procs) if libc.sysinfo(ctypes.byref(info)) == 0 else None


def _busy() -> float | None:
    try:
        with open("/proc/uptime") as f:
            up, idle = (float(x) for x in f.read().split())
    except (OSError, ValueError):
        return None
    return up * (os.cpu_count() or 1) - idle


#: Counter channels: (read, unit, modular).
COUNTERS = {
    "pty": (lambda: _first("/proc/sys/kernel/pty/nr"), 1, True),
    "meminfo": (lambda: _field("/proc/meminfo", "Shmem"), 256, True),
    "vmstat": (lambda: _field("/proc/vmstat", "nr_shmem"), 64, True),
    "loadavg": (_loadavg_threads, 1, True),
    "sysinfo": (_sysinfo_procs, 1, True),
    "file-nr": (lambda: _first("/proc/sys/fs/file-nr"), 1, True),
    "inode-nr": (lambda: _first("/proc/sys/fs/inode-nr"), 1, True),
    "dentry-state": (lambda: _first("/proc/sys/fs/dentry-state"), 1, True),
    "stat": (lambda: _field("/proc/stat", "processes"), 1, False),
    "uptime": (_busy, SPIN, False),
}
SET_CHANNELS = ("dnotify", "inotify", "tmp-file", "abstract-socket", "lock-library")


class Receiver:
    def __init__(self) -> None:
        self.prev: dict[str, float | None] = {}
        self.got: dict[str, list[int] | None] = {}
        self.opened: dict[str, bool] = {}
        self.signal_fd = self.open_dnotify()
        self.inotify_fd, self.watches = self.open_inotify()
        self.lock_fd = os.open(LOCKED, os.O_RDONLY)
        self.info_sent = False

    def open_dnotify(self) -> int:
        """F_NOTIFY with F_SETSIG on each folder; a signalfd to read which."""
        if not FOLDERS:
            return -1
        sig = signal.SIGRTMIN + 1
        signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
        mask = (ctypes.c_ulong * 16)()
        mask[(sig - 1) // 64] |= 1 << ((sig - 1) % 64)
        sfd = libc.signalfd(-1, ctypes.byref(mask), os.O_NONBLOCK | os.O_CLOEXEC)
        if sfd < 0:
            return -1
        self.dir_fds: dict[int, int] = {}
        try:
            for i, path in enumerate(FOLDERS):
                fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
                fcntl.fcntl(fd, 10, sig)  # F_SETSIG
                fcntl.fcntl(fd, 1026, 0x1 | 0x8000_0000)  # F_NOTIFY: DN_ACCESS | DN_MULTISHOT
                self.dir_fds[fd] = i
        except OSError:
            os.close(sfd)
            return -1
        return int(sfd)

    def open_inotify(self) -> tuple[int, dict[int, int]]:
        fd = libc.inotify_init1(os.O_NONBLOCK)
        if fd < 0 or not FOLDERS:
            return -1, {}
        watches = {}
        for i, path in enumerate(FOLDERS):
            wd = libc.inotify_add_watch(fd, os.path.dirname(path).encode(), 0x1)  # IN_ACCESS
            if wd < 0:
                os.close(fd)
                return -1, {}
            watches[wd] = i
        return fd, watches

    def new_hand(self) -> None:
        self.got = {name: [] for name in (*COUNTERS, *SET_CHANNELS)}
        self.drain()

    def drain(self) -> None:
        """Forget queued events (a new hand starts)."""
        for fd in (self.signal_fd, self.inotify_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    while os.read(fd, 4096):
                        pass

    def add(self, name: str, cards: list[int]) -> None:
        seen = self.got.setdefault(name, [])
        assert seen is not None
        for card in cards:
            if 0 <= card < 52 and card not in seen:
                seen.append(card)

    def read(self) -> None:
        for name, (read, unit, modular) in COUNTERS.items():
            value = read()
            self.opened[name] = self.opened.get(name, False) or value is not None
            before = self.prev.get(name)
            self.prev[name] = value
            if value is None or before is None:
                continue
            delta = round((value - before) / unit)
            if modular:
                delta %= MOD
            if 1 <= delta <= 52:
                self.add(name, [delta - 1])
        self.opened["dnotify"] = self.signal_fd >= 0
        if self.signal_fd >= 0:
            with contextlib.suppress(OSError):
                while data := os.read(self.signal_fd, 128 * 32):
                    for at in range(0, len(data), 128):
                        fd = struct.unpack_from("i", data, at + 20)[0]
                        if fd in self.dir_fds:
                            self.add("dnotify", [self.dir_fds[fd]])
        self.opened["inotify"] = self.inotify_fd >= 0
        if self.inotify_fd >= 0:
            with contextlib.suppress(OSError):
                while data := os.read(self.inotify_fd, 65536):
                    at = 0
                    while at < len(data):
                        wd, _mask, _cookie, size = struct.unpack_from("iIII", data, at)
                        if wd in self.watches:
                            self.add("inotify", [self.watches[wd]])
                        at += 16 + size
        try:
            with open(TMP_FILE) as f:
                self.add("tmp-file", [ord(c) - 65 for c in f.read()])
            self.opened["tmp-file"] = True
        except OSError:
            self.opened.setdefault("tmp-file", False)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.2)
                sock.connect(ABSTRACT)
                self.add("abstract-socket", [ord(c) - 65 for c in sock.recv(64).decode()])
            self.opened["abstract-socket"] = True
        except OSError:
            self.opened.setdefault("abstract-socket", False)
        held = []
        try:
            for card in range(52):
                probe = struct.pack("hhqqi", fcntl.F_WRLCK, 0, card, 1, 0)
                answer = fcntl.fcntl(self.lock_fd, fcntl.F_GETLK, probe)
                if struct.unpack("hhqqi", answer)[0] != fcntl.F_UNLCK:
                    held.append(card)
            self.opened["lock-library"] = True
        except OSError:
            self.opened["lock-library"] = False
        self.add("lock-library", held)

    def report(self, hand: int) -> None:
        cards = {
            name: letters(seen or []) if self.opened.get(name) else None
            for name, seen in self.got.items()
        }
        print("LEAK " + json.dumps({"hand": hand, "cards": cards}), file=sys.stderr, flush=True)
        if not self.info_sent:
            self.info_sent = True
            print("LEAKINFO " + json.dumps(pid_one_and_names()), file=sys.stderr, flush=True)


def pid_one_and_names() -> dict[str, object]:
    """What the receiver finds of pid 1, its environment and its mount table."""
    found: dict[str, object] = {}
    seize = libc.syscall(101, 0x4206, 1, 0, 0)  # ptrace(PTRACE_SEIZE, 1)
    found["ptrace-pid1"] = "attached" if seize == 0 else None
    if seize == 0:
        libc.syscall(101, 17, 1, 0, 0)  # PTRACE_DETACH
    buf = ctypes.create_string_buffer(8)
    address = 0
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/1/maps") as f:
        address = int(f.readline().split("-")[0], 16)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
    remote = (ctypes.c_void_p * 2)(address, 8)
    n = libc.syscall(310, 1, local, 1, remote, 1, 0) if address else -1  # process_vm_readv
    found["vm-readv-pid1"] = "read" if n == 8 else None
    try:
        with open("/proc/1/environ", "rb") as f:
            found["environ-pid1"] = f"{len(f.read())} bytes"
    except OSError:
        found["environ-pid1"] = None
    found["env"] = dict(os.environ)
    roots: list[str] = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            words = line.split()
            roots += [words[3], words[4]]
    found["mounts"] = sorted(set(roots))
    found["argv"] = sys.argv
    found["cwd"] = os.getcwd()
    return found


# ---------------------------------------------------------------- protocol
sender = Sender() if ROLE == "S" else None
receiver = Receiver() if ROLE == "R" else None
hand_number = 0


def on_message(msg: dict) -> None:
    global hand_number
    if msg["type"] == "deal":
        hand_number = msg.get("hand_number", hand_number + 1)
        if sender is not None:
            sender.deal(msg["hand"])
        if receiver is not None:
            receiver.new_hand()


def on_request(msg: dict, counts: dict) -> bool:
    if msg["type"] not in ("pass", "play"):
        return False
    k = 0 if msg["type"] == "pass" else int(msg.get("trick_number", 1))
    if sender is not None:
        sender.step(k)
    if receiver is not None:
        receiver.read()
        if msg["type"] == "play" and len(msg.get("hand", [])) == 1:
            receiver.report(hand_number)
    return False


serve("leak", on_request, on_message)
