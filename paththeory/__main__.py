"""``python -m paththeory ...``: the same command line as the ``paththeory`` script."""

import sys

from paththeory.cli import main

if __name__ == "__main__":
    sys.exit(main())
