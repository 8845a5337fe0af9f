"""Reads its input and never answers anything, not even hello."""

import sys

for _line in sys.stdin:
    pass
