"""Event-time windows over COPY (issue 16): rows/s into a stream with one view
of each kind, run side by side in one server run.

    python -m bench.time_windows [--rows 2000000] [--keys 100]

Views: an integer key (the baseline), ``GROUP BY date_trunc('minute', ts)``
(in UTC and in a zone with DST, Europe/Berlin), ``TUMBLE(s, ts, 1 minute)``
and ``HOP(s, ts, 10 s, 1 minute)`` (six panes per row).  Each case is a
fresh stream with only that view, fed the same CSV by psycopg COPY.
Target (issue 16): the date_trunc view at >= 5M rows/s over COPY.

The machine is shared, so next to the wall-clock rate the table prints the
rows per CPU second the server process spent on the COPY (all its threads,
from /proc): what the server itself costs, whatever else runs.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from .common import Servers, connect, copy_file, fmt_rate, machine_note, query_one, ratio, section, table, timed

CASES = {
    "integer key": ("UTC", "SELECT k, count(*), sum(x) FROM {s} GROUP BY k"),
    "date_trunc minute, UTC": ("UTC", "SELECT date_trunc('minute', ts) AS m, count(*), sum(x) FROM {s} GROUP BY 1"),
    "date_trunc minute, Berlin": ("Europe/Berlin",
                                  "SELECT date_trunc('minute', ts) AS m, count(*), sum(x) FROM {s} GROUP BY 1"),
    "TUMBLE 1 minute": ("UTC", "SELECT window_start, count(*), sum(x) FROM TUMBLE({s}, ts, INTERVAL '1 minute') "
                               "GROUP BY window_start"),
    "HOP 10 s / 1 minute": ("UTC", "SELECT window_start, count(*), sum(x) FROM "
                                   "HOP({s}, ts, INTERVAL '10 seconds', INTERVAL '1 minute') GROUP BY window_start"),
}


def write_csv(path: str, rows: int, keys: int) -> None:
    """k, x, ts: one row every 100 us from 2024-01-01 (a minute holds 600k rows)."""
    rnd = np.random.default_rng(16)
    k = rnd.integers(0, keys, rows)
    x = rnd.integers(0, 1000, rows)
    base = np.datetime64("2024-03-31T00:00:00", "us")      # a DST change in Berlin within the data
    ts = base + (np.arange(rows, dtype=np.int64) * 100).astype("timedelta64[us]")
    text = np.char.add(np.char.add(np.char.add(k.astype(str), ","), np.char.add(x.astype(str), ",")),
                       np.datetime_as_string(ts, unit="us"))
    with open(path, "w") as f:
        f.write("\n".join(np.char.add(text, "+00").tolist()))
        f.write("\n")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=100)
    a = ap.parse_args(argv)
    print(machine_note())
    with tempfile.TemporaryDirectory() as d, Servers(pg=False, fsync="off") as s:
        path = os.path.join(d, "rows.csv")
        write_csv(path, a.rows, a.keys)
        rates: dict[str, float] = {}
        cpu_rates: dict[str, float] = {}
        pid = s.ss_proc.pid if s.ss_proc is not None else 0
        with connect(s.ss_port) as conn:
            for i, (label, (zone, sql)) in enumerate(CASES.items()):
                name = f"tw{i}"
                conn.execute(f"SET TimeZone = '{zone}'")
                conn.execute(f"CREATE FOREIGN TABLE {name} (k int, x int, ts timestamptz) SERVER stream")
                conn.execute(f"CREATE VIEW {name}_v AS " + sql.format(s=name))
                cpu = cpu_seconds(pid)
                secs, _ = timed(copy_file, conn, name, path)
                rates[label] = a.rows / secs
                cpu_rates[label] = a.rows / max(cpu_seconds(pid) - cpu, 1e-3)
                total = query_one(conn, f"SELECT sum(count) FROM {name}_v")
                assert total is not None
        section(f"COPY into a stream with one view ({a.rows:,} rows, psycopg COPY)")
        base = rates["integer key"]
        table(["view", "rows/s", "vs integer key", "rows per server CPU s"],
              [[k, fmt_rate(v), ratio(v, base), fmt_rate(cpu_rates[k])] for k, v in rates.items()])
        print(f"target: date_trunc minute view >= 5M rows/s over COPY: "
              f"{fmt_rate(rates['date_trunc minute, UTC'])} (UTC), {fmt_rate(rates['date_trunc minute, Berlin'])} "
              "(Berlin)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
