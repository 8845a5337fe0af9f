"""Prints a banner line before answering hello."""

import sys

from botlib import serve

sys.stdout.write("*** Welcome to BannerBot 3000 ***\n")
sys.stdout.flush()
serve("banner")
