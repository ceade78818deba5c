"""``python -m splitstream [serve] ...``: the same as the ``splitstream`` command."""
import sys

from splitstream.server.cli import main

sys.exit(main())
