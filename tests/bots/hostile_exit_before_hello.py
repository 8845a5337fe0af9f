"""Says why on stderr, then exits at once, before the handshake."""

import sys

print("exit-before-hello: cannot start, missing a model file", file=sys.stderr, flush=True)
sys.exit(7)
