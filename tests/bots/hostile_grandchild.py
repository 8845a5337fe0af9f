"""Starts a grandchild that keeps the pipes open (argv[1] == "pipes") or that
leaves the process group with setsid (argv[1] == "setsid"), then plays correctly."""

import subprocess
import sys

from botlib import serve

if sys.argv[1] == "setsid":
    subprocess.Popen(
        ["sleep", "1000"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
else:
    subprocess.Popen(["sleep", "1000"])  # inherits stdin, stdout and stderr
serve("grandchild")
