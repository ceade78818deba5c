"""``python -m splitstream.server [serve] ...``: the same as the ``splitstream`` command."""
import sys

from .cli import main

sys.exit(main())
