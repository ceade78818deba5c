"""``python -m server [serve] ...``: same as the ``splitstream`` command."""
import sys

from .cli import main

sys.exit(main())
