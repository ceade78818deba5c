"""``python -m tests.sql.corpus_gen``: (re)write the generated corpus files."""
from __future__ import annotations

import sys

from .build import write_all

if __name__ == "__main__":
    for path, count in write_all():
        print(f"{path}: {count} statements")
    sys.exit(0)
