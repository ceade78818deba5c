"""``python -m splitstream [serve] ...``: the same as the ``splitstream`` command."""
import sys

from splitstream.cli import main

sys.exit(main())
