"""Writes two megabytes to stderr before every reply, then answers correctly."""

import sys

from botlib import serve

BLOCK = ("noise " * 170 + "\n") * 2048  # about 2 MB


def noisy(msg, counts):
    sys.stderr.write(BLOCK)
    sys.stderr.flush()
    return False


serve("stderr-flood", noisy)
