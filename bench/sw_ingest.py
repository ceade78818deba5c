"""Sliding-window view ingest and read latency (issue 16).

    python -m bench.sw_ingest [--rows 4000000] [--keys 10000] [--repeat 3]

1. COPY into a stream read by a view ``WITH (sw = '1 minute')`` grouped by
   10,000 keys (count, sum, min, max), against the same view without a
   window on a twin stream, in one server, alternating, best of
   ``--repeat``: rows per second and the ratio (target >= 0.9x).
2. Read latency as the panes held grow from 10 to 3,600: the panes of one
   view are combined by Two-Stacks (executor/stream/sliding.py); here the
   combiner itself is driven in process (3,600 panes cannot be reached
   through SQL: step_factor >= 1 keeps at most 100), each pane holding rows
   of 10,000 keys, the clock advancing one pane per read.  Printed: median
   and worst read, the worst round of the background reaper (which seals
   panes and does Two-Stacks' flips as the clock moves, under the view's
   lock but never blocking ingest) after the first (which builds the stacks
   from every pane, as after a restart), the state held, against
   recombining every live pane at each read.
"""
from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution.aggregates import AggSpec, GroupTable
from splitstream.executor.execution import expr
from splitstream.executor.stream.sliding import PaneSlider, WindowOptions
from splitstream.protocol import oids

from .common import Servers, connect, fmt_rate, ratio, section, table

AGGS = "count(*), sum(x), min(x), max(x)"


def csv_bytes(rows: int, keys: int) -> bytes:
    rng = np.random.default_rng(16)
    k = rng.integers(0, keys, rows)
    x = rng.integers(-1_000_000, 1_000_000, rows)
    buf = io.StringIO()
    np.savetxt(buf, np.column_stack([k, x]), fmt="%d", delimiter=",")
    return buf.getvalue().encode()


def copy_rate(conn, stream: str, data: bytes, rows: int) -> float:
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY {stream} FROM STDIN (FORMAT csv)") as cp:
            mv = memoryview(data)
            for i in range(0, len(data), 8 << 20):
                cp.write(mv[i:i + (8 << 20)])
    return rows / (time.perf_counter() - t0)


def ingest(rows: int, keys: int, repeat: int) -> None:
    section(f"COPY {rows:,} rows, {keys:,} keys: sw = '1 minute' view vs the same view without a window")
    data = csv_bytes(rows, keys)
    with Servers(pg=False) as s:
        c = connect(s.ss_port)
        c.execute("CREATE FOREIGN TABLE s_sw (k int, x int) SERVER pipelinedb")
        c.execute("CREATE FOREIGN TABLE s_plain (k int, x int) SERVER pipelinedb")
        c.execute(f"CREATE VIEW v_sw WITH (sw = '1 minute') AS SELECT k, {AGGS} FROM s_sw GROUP BY k")
        c.execute(f"CREATE VIEW v_plain AS SELECT k, {AGGS} FROM s_plain GROUP BY k")
        best = {"sw": 0.0, "plain": 0.0}
        for _ in range(repeat):
            best["plain"] = max(best["plain"], copy_rate(c, "s_plain", data, rows))
            best["sw"] = max(best["sw"], copy_rate(c, "s_sw", data, rows))
        t0 = time.perf_counter()
        n_sw = c.execute("SELECT count(*) FROM v_sw").fetchone()[0]
        read_sw = time.perf_counter() - t0
        t0 = time.perf_counter()
        n_plain = c.execute("SELECT count(*) FROM v_plain").fetchone()[0]
        read_plain = time.perf_counter() - t0
        panes = c.execute("SELECT panes FROM splitstream.views WHERE name = 'v_sw'").fetchone()[0]
        table(["view", "COPY rows/s", "vs plain", "groups", "first read"],
              [["sw 1 minute", fmt_rate(best["sw"]), ratio(best["sw"], best["plain"]), n_sw, f"{read_sw * 1e3:.1f} ms"],
               ["no window", fmt_rate(best["plain"]), "1.00x", n_plain, f"{read_plain * 1e3:.1f} ms"]])
        print(f"  panes held by v_sw after the run: {panes}")


def _pane_table(rng, keys: int, rows: int, pane: int) -> GroupTable:
    specs = [AggSpec("count", [], [], star=True), AggSpec("sum", [expr.ColRef(1, oids.INT4)], [oids.INT4]),
             AggSpec("min", [expr.ColRef(1, oids.INT4)], [oids.INT4]),
             AggSpec("max", [expr.ColRef(1, oids.INT4)], [oids.INT4])]
    t = GroupTable([oids.INT4, oids.INT8], specs)
    k = Col(rng.integers(0, keys, rows).astype(np.int32), None, oids.INT4)
    x = Col(rng.integers(-1000, 1000, rows).astype(np.int32), None, oids.INT4)
    p = Col(np.full(rows, pane, np.int64), None, oids.INT8)
    t.consume([k, p], [([], None), ([x], None), ([x], None), ([x], None)], rows)
    return t


def read_latency(keys: int, rows_per_pane: int, reads: int) -> None:
    section(f"read latency vs panes held ({keys:,} keys, {rows_per_pane:,} rows per pane)")
    rng = np.random.default_rng(7)
    header = ["panes", "read median", "read worst", "first build", "reaper worst (flip)", "state MB",
              "recombine all median", "speed-up"]
    out = []
    for panes in (10, 100, 1000, 3600):
        width = 1_000_000
        win = WindowOptions(sw_us=panes * width, pane_width_us=width)     # exactly `panes` panes
        probe = _pane_table(rng, keys, rows_per_pane, 0)
        slider = PaneSlider([oids.INT4], probe.specs, win)
        for p in range(panes):
            slider.harvest(_pane_table(rng, keys, rows_per_pane, p))
        now = panes * width
        ts, naive, flips = [], [], []
        for r in range(reads):
            now += width
            slider.harvest(_pane_table(rng, keys, rows_per_pane, now // width - 1))
            t0 = time.perf_counter()
            slider.expire(now)            # what the background reaper does as the clock moves
            flips.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            slider.result(now)
            ts.append(time.perf_counter() - t0)
            if r < 5:
                t0 = time.perf_counter()
                _recombine(slider, now)
                naive.append(time.perf_counter() - t0)
        med, worst, nv = statistics.median(ts), max(ts), statistics.median(naive)
        out.append([panes, f"{med * 1e3:.2f} ms", f"{worst * 1e3:.1f} ms", f"{flips[0] * 1e3:.0f} ms",
                    f"{max(flips[1:]) * 1e3:.0f} ms", f"{slider.nbytes() / 1e6:.0f}",
                    f"{nv * 1e3:.1f} ms", ratio(nv, med)])
    table(header, out)


def _recombine(slider: PaneSlider, now: int) -> None:
    """The alternative: merge every live pane at each read."""
    lo = slider.win.live_from(now)
    out = GroupTable(list(slider.key_oids), slider.specs)
    for p, t in slider.panes.items():
        if p >= lo:
            out.merge(t)
    out.result()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sw_ingest")
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows-per-pane", type=int, default=2_000)
    ap.add_argument("--reads", type=int, default=60)
    ap.add_argument("--skip-ingest", action="store_true")
    a = ap.parse_args(argv)
    if not a.skip_ingest:
        ingest(a.rows, a.keys, a.repeat)
    read_latency(a.keys, a.rows_per_pane, a.reads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
