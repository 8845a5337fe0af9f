"""Starts a child in a new session with an empty environment (no run id, no
token to find it by), which sleeps for good, then plays correctly."""

import subprocess

from botlib import serve

subprocess.Popen(
    ["/bin/sleep", "4242.131"],
    env={},
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
serve("clears-env")
