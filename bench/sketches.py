"""Sketch ingest (issue 17's benchmark): COPY into a stream read by a view
with ``hll_agg``, ``topk_agg`` and ``dist_agg`` over 10,000 groups, against
the same stream and groups with ``count`` and ``sum``.  Target: the sketch
view ingests at least 50% of the plain view's rate.  Prints the state bytes
per group that ``splitstream.views`` reports.

    python -m bench.sketches [--rows 2000000] [--groups 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from .common import Servers, connect, copy_bytes, fmt_rate, human_bytes, machine_note, ratio, section, table

VIEWS = {
    "count + sum": "SELECT k, count(*) AS n, sum(x) AS total FROM {s} GROUP BY k",
    "hll_agg + topk_agg + dist_agg": "SELECT k, hll_agg(u) AS users, topk_agg(u, 10) AS top_users,"
                                     " dist_agg(x) AS latency FROM {s} GROUP BY k",
}


def make_csv(rows: int, groups: int, seed: int = 7) -> bytes:
    """k (group), u (a user id, many repeats), x (a latency-like float)."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, groups, rows)
    u = rng.integers(0, rows // 4 + 1, rows)
    x = np.round(rng.lognormal(3.0, 1.0, rows), 3)
    lines = np.char.add(np.char.add(np.char.add(np.char.add(k.astype(str), ","), u.astype(str)), ","), x.astype(str))
    return ("\n".join(lines.tolist()) + "\n").encode()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sketches")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="COPY runs per view (their total rate is reported)")
    a = ap.parse_args(argv)
    print(f"# bench.sketches: {a.rows:,} rows, {a.groups:,} groups; {machine_note()}", flush=True)
    data = make_csv(a.rows, a.groups)
    rates: dict[str, float] = {}
    per_group: dict[str, tuple] = {}
    with Servers(pg=False) as s, connect(s.ss_port) as conn:
        for i, (label, sql) in enumerate(VIEWS.items()):
            stream = f"s{i}"
            conn.execute(f"CREATE FOREIGN TABLE {stream} (k int, u int8, x float8) SERVER stream")
            conn.execute(f"CREATE VIEW v{i} AS " + sql.format(s=stream))
            spent = 0.0
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                copy_bytes(conn, stream, data)
                spent += time.perf_counter() - t0
            # over all runs, not the best one: a sketch state folds its buffered input every few runs
            rates[label] = a.repeat * a.rows / spent
            conn.execute(f"SELECT count(*) FROM v{i}").fetchone()      # merge local states before measuring
            per_group[label] = conn.execute("SELECT groups, state_bytes, bytes_per_group FROM splitstream.views"
                                            " WHERE name = %s", (f"v{i}",)).fetchone()
    section("COPY into a stream with one view (rows/s over all runs)")
    base = rates["count + sum"]
    table(["view", "rows/s", "vs count + sum", "groups", "state", "bytes/group"],
          [[label, fmt_rate(r), ratio(r, base), per_group[label][0], human_bytes(per_group[label][1]),
            f"{per_group[label][2]:,.0f}"] for label, r in rates.items()])
    met = rates["hll_agg + topk_agg + dist_agg"] >= 0.5 * base
    print(f"target (>= 50% of count + sum): {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
