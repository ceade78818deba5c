"""`make bench`: run every benchmark in turn (each is also runnable alone)."""
import sys

from . import pgbench_compare

if __name__ == "__main__":
    sys.exit(pgbench_compare.main(sys.argv[1:]))
