"""The parse step of COPY FROM alone, in process (issue 16): rows/s of
decoding bench.time_windows' CSV (int, int, timestamptz) into columns, by
each reader the COPY path has, side by side.

    python -m bench.copy_parse [--rows 2000000] [--ysb]

Readers: the compiled single-pass reader (``backends/llvm/csv.py``, ints and
ISO timestamps), pyarrow's CSV reader with the vectorised timestamp reader
(``protocol/copy_temporal.py``), and the exact per-value path (PostgreSQL's
input functions one value at a time; on a tenth of the rows).  Slabs of
8 MiB, as the COPY sink cuts them.  ``--ysb``: the YSB events of
bench.ysb_events instead (smallint, bigint, timestamp, int; 37-byte rows),
in the 512 kB slabs a pipelined COPY hands its decode threads.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from splitstream.executor.backends.llvm import csv as compiled_csv
from splitstream.protocol import copy as copyformat
from splitstream.protocol import oids as type_oids

from .common import fmt_rate, machine_note, ratio, section, table
from .time_windows import write_csv
from .ysb_events import csv_lines, make_events

OIDS = [type_oids.INT4, type_oids.INT4, type_oids.TIMESTAMPTZ]
YSB_OIDS = [type_oids.INT2, type_oids.INT8, type_oids.TIMESTAMP, type_oids.INT4]
SLAB = 8 << 20
YSB_SLAB = 512 << 10


def slabs(data: bytes, size: int = SLAB) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        j = data.find(b"\n", min(i + size, len(data) - 1)) + 1 or len(data)
        out.append(data[i:j])
        i = j
    return out


def ysb_csv(rows: int) -> bytes:
    """The YSB events as the end-to-end COPY benchmark sends them."""
    return "".join(csv_lines(make_events(rows, 1_000_000, 2, seed=9), "iso", 100_000)).encode()


def rate(parts: list[bytes], decode) -> float:
    """Rows per second of decoding every part (best of three: the machine is
    shared); 0 when the reader declines a part."""
    best = float("inf")
    rows = 0
    for _ in range(3):
        t0 = time.perf_counter()
        cols = [decode(p) for p in parts]
        best = min(best, time.perf_counter() - t0)
        if any(c is None for c in cols):
            return 0.0
        rows = sum(len(c[0][0]) for c in cols)
    return rows / best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--ysb", action="store_true", help="YSB events (smallint, bigint, timestamp, int)")
    a = ap.parse_args(argv)
    print(machine_note())
    opts = copyformat.parse_copy_options({"format": "csv"})
    oids = YSB_OIDS if a.ysb else OIDS
    if a.ysb:
        data = ysb_csv(a.rows)
    else:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rows.csv")
            write_csv(path, a.rows, 100)
            with open(path, "rb") as f:
                data = f.read()
    size = YSB_SLAB if a.ysb else SLAB
    parts = slabs(data, size)
    compiled_csv.decode(parts[0][:4096].rsplit(b"\n", 1)[0] + b"\n", opts, oids, wait=True)   # compile first
    rates = {
        "compiled reader": rate(parts, lambda p: compiled_csv.decode(p, opts, oids)),
        "pyarrow + copy_temporal": rate(parts, lambda p: copyformat.decode_copy(p, opts, oids)),
    }
    tenth = slabs(data[: len(data) // 10].rsplit(b"\n", 1)[0] + b"\n", size)
    names = ["a", "b", "c", "d"][:len(oids)]

    def exact(p: bytes):
        rows, lines = copyformat._python_rows(p, opts, 1, names)
        return copyformat._rows_to_columns(rows, oids, names, lines, "UTC")

    rates["exact per-value path"] = rate(tenth, exact)
    what = "smallint, bigint, timestamp, int (YSB)" if a.ysb else "int, int, timestamptz"
    section(f"COPY parse step alone, in process ({a.rows:,} rows of {what} CSV)")
    base = rates["exact per-value path"]
    table(["reader", "rows/s", "vs exact path"],
          [[k, fmt_rate(v) if v else "declines", ratio(v, base) if v else "-"] for k, v in rates.items()])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
