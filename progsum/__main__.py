"""``python -m progsum``: the command line (see `progsum.cli.main`)."""

import sys

from progsum.cli.main import main

sys.exit(main())
