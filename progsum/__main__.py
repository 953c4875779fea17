"""``python -m progsum``: the command line (see `progsum.cli`)."""

import sys

from progsum.cli import main

sys.exit(main())
