"""``python -m optcoll``: the ``optcoll`` command."""

import sys

from optcoll.cli import main

sys.exit(main())
