"""``python -m arena``: the same as the ``hearts-arena`` command."""

import sys

from arena.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
