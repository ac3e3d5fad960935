"""``python -m paththeory_tools ...`` is ``paththeory-tools ...``."""

import sys

from paththeory_tools.cli import main

sys.exit(main())
