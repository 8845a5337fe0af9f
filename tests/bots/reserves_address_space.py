"""Reserves 1 GiB of address space without touching it (as a JVM's heap or Go's
arenas do), then plays correctly; under an address-space limit (RLIMIT_AS)
below that, the reservation fails and the bot exits before its hello."""

import mmap

from botlib import serve

# Read-only and never touched: address space only, no memory.
reserved = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
serve("reserves")
