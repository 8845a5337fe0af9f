"""Leaves something for the next bot given its uid, and looks for what the
previous holder of its uid left (tests/sandbox/test_seal.py).

argv: TAG (hex digits naming this run's notes and keys). At start it writes
on stderr one line ``LEFTOVER {"uid": its uid, "notes": [what it found in
/tmp, /var/tmp, /dev/shm], "keys": [what it found in its uid's user and
user-session keyrings]}``, then leaves a note in each of those folders and a
key in each of those keyrings (both persist after all the uid's processes
have exited). Plays the first legal card.
"""

import contextlib
import ctypes
import ctypes.util
import json
import os
import platform
import sys

from botlib import serve

TAG = sys.argv[1]
NAME = f"hearts-uid-leftover-{TAG}"
FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")
#: add_key, request_key, keyctl (kernel keyrings have no wrapper in libc).
KEY_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(platform.machine())
KEYRINGS = (-4, -5)  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_LINK, KEYCTL_SEARCH, KEYCTL_READ = 8, 10, 11
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.syscall.restype = ctypes.c_long
uid = os.getuid()
message = f"left by pid {os.getpid()} as uid {uid}"

if KEY_CALLS:  # possess the uid's keyrings' keys (only a possessor may read a key)
    for keyring in KEYRINGS:
        libc.syscall(KEY_CALLS[2], KEYCTL_LINK, keyring, KEY_SPEC_SESSION_KEYRING)
notes = []
for folder in FOLDERS:
    with contextlib.suppress(OSError), open(os.path.join(folder, f"{NAME}-{uid}")) as f:
        notes.append(f.read())
keys = []
if KEY_CALLS:
    for keyring in KEYRINGS:
        key = libc.syscall(KEY_CALLS[2], KEYCTL_SEARCH, keyring, b"user", NAME.encode(), 0)
        if key >= 0:
            buf = ctypes.create_string_buffer(256)
            n = libc.syscall(KEY_CALLS[2], KEYCTL_READ, key, buf, 256)
            keys.append(buf.raw[:n].decode() if n > 0 else "(unreadable)")
print("LEFTOVER " + json.dumps({"uid": uid, "notes": notes, "keys": keys}), file=sys.stderr)
sys.stderr.flush()

for folder in FOLDERS:
    with contextlib.suppress(OSError), open(os.path.join(folder, f"{NAME}-{uid}"), "w") as f:
        f.write(message)
if KEY_CALLS:
    data = message.encode()
    for keyring in KEYRINGS:
        libc.syscall(KEY_CALLS[0], b"user", NAME.encode(), data, len(data), keyring)

serve("uid_leftovers")
