"""Two copies of this bot try to exchange a hand over every channel a process
on one machine might share with another (tests/sandbox/test_seal.py).

argv: ROLE (A sends, B receives) PORT_TCP PORT_UDP OUT_IP PORT_OUT_TCP PORT_OUT_UDP
PORT_SERVICE MACHINE_FILE (a file of the machine that any user may read) TAG (hex
digits naming this run's files, sockets, IPC keys and queues, so that two runs on
one machine do not see each other's). B also reports whether it could read
MACHINE_FILE and write to its own folder. A publishes its hand at each deal on every
channel; B forgets what it found at each deal, tries every channel at each request
and, at its first play from trick 11 on, writes on stderr one line per hand
``COLLUDE {"hand": N, "channel": what it received or null, ...}``. Both play the
first legal card.
"""

import contextlib
import ctypes
import ctypes.util
import fcntl
import json
import os
import platform
import socket
import struct
import sys
import threading

from botlib import serve

ROLE = sys.argv[1]
PORT_TCP, PORT_UDP = int(sys.argv[2]), int(sys.argv[3])
OUT_IP, PORT_OUT_TCP, PORT_OUT_UDP = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
PORT_SERVICE = int(sys.argv[7])
MACHINE_FILE = sys.argv[8]
TAG = sys.argv[9]
RANKS = "23456789TJQKA"
CARDS = [r + s for s in "CDSH" for r in RANKS]
FILES = {"tmp": "/tmp", "shm": "/dev/shm", "vartmp": "/var/tmp"}
NAME = f"hearts-collude-{TAG}"  # files, sockets, queues and keys of this run
ABSTRACT = b"\0" + NAME.encode()
UNIX_PATH = f"/tmp/{NAME}.sock"
SYSV_KEY = int(TAG, 16) % 0x7FFF_FFFF + 1  # System V shared memory and message queue
MQ_NAME = b"/" + NAME.encode()
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
#: add_key, request_key, keyctl (kernel keyrings have no wrapper in libc).
KEY_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(platform.machine())
KEY_SPEC_USER_KEYRING = -4
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_LINK, KEYCTL_SEARCH, KEYCTL_READ = 8, 10, 11
libc.syscall.restype = ctypes.c_long
if KEY_CALLS:  # possess the user keyring's keys (only a possessor may read a key)
    libc.syscall(KEY_CALLS[2], KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)
hand_text = ""  # A: the hand being published
got: dict[str, str | None] = {}
reported = 0  # B: the last hand reported


def library() -> str:
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "libc.so" in path or "libc-" in path:
                return path
    return "/usr/lib/x86_64-linux-gnu/libc.so.6"


LOCK_FILES = {"lock-program": os.path.realpath(sys.argv[0]), "lock-library": library()}
lock_fds = {name: os.open(path, os.O_RDONLY) for name, path in LOCK_FILES.items()}
WATCHED = os.path.realpath(sys.executable)  # not a locked file: a close drops its locks


def serve_socket(sock: socket.socket) -> None:
    while True:
        conn, _ = sock.accept()
        with conn:
            conn.sendall(hand_text.encode())


def listen(family: int, address: object) -> None:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the port of an earlier A
    sock.bind(address)
    if family == socket.AF_UNIX and isinstance(address, str):
        os.chmod(address, 0o777)
    sock.listen(8)
    threading.Thread(target=serve_socket, args=(sock,), daemon=True).start()


def publish(cards: list[str]) -> None:
    """A: the hand on every channel that A can write to."""
    global hand_text
    hand_text = " ".join(cards)
    for folder in FILES.values():
        with contextlib.suppress(OSError):
            path = os.path.join(folder, f"{NAME}-hand")
            with open(path, "w") as f:
                f.write(hand_text)
            os.chmod(path, 0o666)
        note = os.path.join(folder, f"hearts-uid-note-{TAG}-{os.getuid()}")  # for its next holder
        with contextlib.suppress(OSError), open(note, "w") as f:
            f.write(hand_text)
    with contextlib.suppress(OSError):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.sendto(hand_text.encode(), ("127.0.0.1", PORT_UDP))
        udp.close()
    for _name, fd in lock_fds.items():  # a read lock on byte i for each card i held
        with contextlib.suppress(OSError):
            fcntl.lockf(fd, fcntl.LOCK_UN, 64, 0)
            for card in cards:
                fcntl.fcntl(
                    fd,
                    fcntl.F_SETLK,
                    struct.pack("hhqqi", fcntl.F_RDLCK, 0, CARDS.index(card), 1, 0),
                )
    shm = libc.shmget(SYSV_KEY, 256, 0o1000 | 0o666)  # IPC_CREAT
    if shm >= 0:
        addr = libc.shmat(shm, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(addr, hand_text.encode().ljust(256, b"\0"), 256)
    queue = libc.msgget(SYSV_KEY, 0o1000 | 0o666)  # a System V message queue
    if queue >= 0:
        message = struct.pack("l", 1) + hand_text.encode()
        libc.msgsnd(queue, message, len(message) - 8, 0o4000)  # IPC_NOWAIT
    mq = libc.mq_open(MQ_NAME, os.O_CREAT | os.O_RDWR | os.O_NONBLOCK, 0o666, None)
    if mq >= 0:
        libc.mq_send(mq, hand_text.encode(), len(hand_text), 0)
    if KEY_CALLS:  # the hand in a key of the user's keyring
        data = hand_text.encode()
        libc.syscall(KEY_CALLS[0], b"user", NAME.encode(), data, len(data), KEY_SPEC_USER_KEYRING)
    with contextlib.suppress(OSError), open(WATCHED, "rb") as f:
        f.read(1)  # an event for whoever watches the interpreter
    # The hand in this process's name, one letter a card.
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as f:
        f.write("~" + "".join(chr(65 + CARDS.index(c)) for c in cards))


def connect(family: int, address: object) -> str | None:
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.2)
            sock.connect(address)
            return sock.recv(200).decode() or None
    except OSError:
        return None


def reach(family_type: int, address: tuple[str, int]) -> str | None:
    try:
        with socket.socket(socket.AF_INET, family_type) as sock:
            sock.settimeout(0.2)
            if family_type == socket.SOCK_DGRAM:
                sock.sendto(b"out", address)
            else:
                sock.connect(address)
            return "reached"
    except OSError:
        return None


def read_locks(fd: int) -> str | None:
    held = []
    for i, card in enumerate(CARDS):
        try:
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, i, 1, 0))
        except OSError:
            return None
        if struct.unpack("hhqqi", answer)[0] != fcntl.F_UNLCK:
            held.append(card)
    return " ".join(held) or None


def read_proc() -> tuple[str | None, str | None]:
    """The hand in another process's name, and the source of another copy of this bot."""
    name = code = None
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if comm.startswith("~") and len(comm) == 14:
                name = " ".join(CARDS[ord(ch) - 65] for ch in comm[1:])
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
            for w in words:
                if (
                    w.endswith(b"collude.py")
                    and os.path.realpath(w.decode()) != LOCK_FILES["lock-program"]
                ):
                    with open(w.decode(), "rb") as f:
                        code = f"{len(f.read())} bytes of {w.decode()}"
    return name, code


def receive() -> None:
    """B: try every channel; keep what arrives."""
    found: dict[str, str | None] = {}
    for channel, folder in FILES.items():
        try:
            with open(os.path.join(folder, f"{NAME}-hand")) as f:
                found[channel] = f.read() or None
        except OSError:
            found[channel] = None
    found["abstract"] = connect(socket.AF_UNIX, ABSTRACT)
    found["unix-path"] = connect(socket.AF_UNIX, UNIX_PATH)
    found["tcp"] = connect(socket.AF_INET, ("127.0.0.1", PORT_TCP))
    try:
        found["udp"] = udp_in.recv(200).decode() or None if udp_in is not None else None
    except OSError:
        found["udp"] = None
    found["tcp-service"] = reach(socket.SOCK_STREAM, ("127.0.0.1", PORT_SERVICE))
    found["tcp-out"] = reach(socket.SOCK_STREAM, (OUT_IP, PORT_OUT_TCP))
    found["udp-out"] = reach(socket.SOCK_DGRAM, (OUT_IP, PORT_OUT_UDP))
    for name, fd in lock_fds.items():
        found[name] = read_locks(fd)
    found["sysv-ipc"] = None
    shm = libc.shmget(SYSV_KEY, 0, 0)
    if shm >= 0:
        addr = libc.shmat(shm, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            found["sysv-ipc"] = ctypes.string_at(addr, 256).rstrip(b"\0").decode() or None
    found["sysv-msg"] = None
    queue = libc.msgget(SYSV_KEY, 0)
    if queue >= 0:
        buf = ctypes.create_string_buffer(8 + 256)
        n = libc.msgrcv(queue, buf, 256, 0, 0o4000)  # IPC_NOWAIT
        if n > 0:
            found["sysv-msg"] = buf.raw[8 : 8 + n].decode()
    found["mqueue"] = None
    mq = libc.mq_open(MQ_NAME, os.O_RDONLY | os.O_NONBLOCK)
    if mq >= 0:
        buf = ctypes.create_string_buffer(8192)
        n = libc.mq_receive(mq, buf, 8192, None)
        if n > 0:
            found["mqueue"] = buf.raw[:n].decode()
    found["proc"], found["code"] = read_proc()
    found["keyring"] = None
    if KEY_CALLS:
        # Searched in the user keyring itself: request_key looks only in the
        # session keyring, which the arena gives each bot afresh.
        key = libc.syscall(
            KEY_CALLS[2], KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", NAME.encode(), 0
        )
        if key >= 0:
            buf = ctypes.create_string_buffer(256)
            n = libc.syscall(KEY_CALLS[2], KEYCTL_READ, key, buf, 256)
            found["keyring"] = buf.raw[:n].decode() if n > 0 else None
    found["inotify"] = None
    if watch is not None:
        with contextlib.suppress(OSError):
            events = os.read(watch, 4096)
            found["inotify"] = f"{len(events)} bytes of events on {WATCHED}"
    note = None
    for folder in FILES.values():  # a note a previous holder of this uid left
        path = os.path.join(folder, f"hearts-uid-note-{TAG}-{os.getuid()}")
        with contextlib.suppress(OSError), open(path) as f:
            note = f.read()
    found["uid-note"] = note
    try:
        with open(MACHINE_FILE) as f:
            found["machine-file"] = f.read() or None
    except OSError:
        found["machine-file"] = None
    try:
        with open(f"written-by-collude-{os.getpid()}.txt", "w") as f:
            f.write("x")
        os.remove(f"written-by-collude-{os.getpid()}.txt")
        found["write-folder"] = "written"
    except OSError:
        found["write-folder"] = None
    for key, value in found.items():
        if value is not None or key not in got:
            got[key] = value


if ROLE == "A":
    for family, address in ((socket.AF_UNIX, ABSTRACT), (socket.AF_UNIX, UNIX_PATH)):
        with contextlib.suppress(OSError):
            if isinstance(address, str) and os.path.exists(address):
                os.unlink(address)
            listen(family, address)
    with contextlib.suppress(OSError):
        listen(socket.AF_INET, ("127.0.0.1", PORT_TCP))
else:
    watch: int | None = libc.inotify_init1(os.O_NONBLOCK)
    if watch < 0 or libc.inotify_add_watch(watch, WATCHED.encode(), 0x21) < 0:
        watch = None  # IN_ACCESS | IN_OPEN refused
    try:  # sealed, IPv4 sockets are refused (the seccomp filter)
        udp_in: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        udp_in = None
    if udp_in is not None:
        with contextlib.suppress(OSError):
            udp_in.bind(("127.0.0.1", PORT_UDP))
        udp_in.setblocking(False)


def on_message(msg: dict) -> None:
    if msg["type"] == "deal":
        if ROLE == "A":
            publish(msg["hand"])
        else:
            got.clear()  # what B reports for a hand was found during it


def on_request(msg: dict, counts: dict) -> bool:
    global reported
    if ROLE == "A" and msg["type"] in ("pass", "play"):
        publish(msg["hand"]) if not hand_text else None
    if ROLE == "B":
        receive()
        hand = msg.get("hand_number")  # none in the handshake
        if msg["type"] == "play" and msg["trick_number"] >= 11 and hand != reported:
            reported = hand  # one line a hand (a bot's stderr is capped)
            print("COLLUDE " + json.dumps({"hand": hand, **got}), file=sys.stderr, flush=True)
    return False


serve("collude", on_request, on_message)
