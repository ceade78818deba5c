"""`make bench`: run every benchmark in turn at small sizes (about ten minutes on
this machine).  Each module keeps its full-size defaults when run alone:

    python -m bench                      # all, small
    python -m bench ingest aim           # a subset, small
    python -m bench.ingest --rows 10000000   # one, full size
"""
import sys
import time

from . import aim, change_latency, copy_parse, ingest, pgbench_compare, sketches, time_windows, tpch, tpch_cv, window_frames

SMALL = {
    "pgbench_compare": (pgbench_compare.main, ["--seconds", "3"]),
    "ingest": (ingest.main, ["--rows", "1000000", "--insert-seconds", "3", "--executemany-rows", "200"]),
    "aim": (aim.main, ["--customers", "100000", "--events", "500000", "--seconds", "3"]),
    "window_frames": (window_frames.main, ["--rows", "100000", "--repeat", "2"]),
    "time_windows": (time_windows.main, ["--rows", "500000"]),
    "copy_parse": (copy_parse.main, ["--rows", "500000"]),
    "change_latency": (change_latency.main, ["--seconds", "3"]),
    "sketches": (sketches.main, ["--rows", "1000000", "--repeat", "2"]),
    "tpch_cv": (tpch_cv.main, ["--sf", "0.02", "--mem-rows", "1000000"]),
    # the SF 1 run: python -m bench.tpch (--backends auto,vector,llvm)
    "tpch": (tpch.main, ["--sf", "0.1", "--runs", "1"]),
}


def main(argv: list[str]) -> int:
    names = argv or list(SMALL)
    unknown = [n for n in names if n not in SMALL]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(SMALL)}", file=sys.stderr)
        return 2
    rc = 0
    for name in names:
        fn, args = SMALL[name]
        print(f"\n######## bench.{name} {' '.join(args)}", flush=True)
        t0 = time.perf_counter()
        try:
            rc |= fn(args) or 0
        except Exception as e:  # one benchmark failing must not hide the others' figures
            print(f"bench.{name} FAILED: {type(e).__name__}: {e}", flush=True)
            rc = 1
        print(f"######## bench.{name}: {time.perf_counter() - t0:.0f} s", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
