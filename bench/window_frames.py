"""Moving-frame window aggregates: splitstream against PostgreSQL 15 and
DuckDB in the same run (issue 15, scope 8).

    python -m bench.window_frames [--rows 200000] [--repeat 3]

Each query reads one table of ``--rows`` rows and returns one aggregate of
the window column (so the figure is the window's work, not result transfer):
a moving max (non-invertible: sparse table), a moving float sum (exact, in
PostgreSQL's row order), a RANGE frame over timestamps, and a GROUPS frame
with EXCLUDE.  Rows per second of the best of ``--repeat`` runs, and ratios.
"""
from __future__ import annotations

import argparse
import time

from .common import Servers, connect, fmt_rate, ratio, section, table

QUERIES = {
    "max ROWS 1023 PRECEDING":
        "SELECT sum(m) FROM (SELECT max(x) OVER (ORDER BY i ROWS 1023 PRECEDING) AS m FROM wb) t",
    "sum(float8) ROWS 16 PRECEDING":
        "SELECT sum(m) FROM (SELECT sum(f) OVER (ORDER BY i ROWS 16 PRECEDING) AS m FROM wb) t",
    "count RANGE '1 hour' over timestamps":
        "SELECT sum(m) FROM (SELECT count(*) OVER (ORDER BY ts RANGE BETWEEN interval '1 hour' PRECEDING "
        "AND CURRENT ROW) AS m FROM wb) t",
    "min GROUPS 2 PRECEDING EXCLUDE GROUP":
        "SELECT sum(m) FROM (SELECT min(x) OVER (PARTITION BY p ORDER BY g GROUPS BETWEEN 2 PRECEDING AND "
        "CURRENT ROW EXCLUDE GROUP) AS m FROM wb) t",
}

SETUP = ("CREATE TABLE wb AS SELECT i, (i * 7919 % 100003)::float8 AS x, ((i % 1000) / 7.0)::float8 AS f, "
         "timestamp '2024-01-01' + i * interval '7 seconds' AS ts, i % 8 AS p, i / 50 AS g "
         "FROM generate_series(1, {n}) i")


def _best(run, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.window_frames")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    import duckdb

    duck = duckdb.connect()
    duck.execute(SETUP.format(n=a.rows).replace("generate_series(1, {n}) i".format(n=a.rows),
                                                f"range(1, {a.rows + 1}) r(i)").replace("i / 50", "i // 50"))
    rows = []
    with Servers() as s:
        ss, pg = connect(s.ss_port), connect(s.pg_port)
        for c in (ss, pg):
            c.execute(SETUP.format(n=a.rows))
        for name, sql in QUERIES.items():
            answers = [c.execute(sql).fetchone()[0] for c in (ss, pg)]
            duck_sql = sql.replace("i / 50", "i // 50")
            answers.append(duck.execute(duck_sql).fetchone()[0])
            t_ss = _best(lambda: ss.execute(sql).fetchone(), a.repeat)
            t_pg = _best(lambda: pg.execute(sql).fetchone(), a.repeat)
            t_duck = _best(lambda: duck.execute(duck_sql).fetchone(), a.repeat)
            same = "yes" if answers[0] == answers[1] else f"NO ({answers[0]} vs {answers[1]})"
            rows.append([name, fmt_rate(a.rows / t_ss), fmt_rate(a.rows / t_pg), fmt_rate(a.rows / t_duck),
                         ratio(t_pg, t_ss), ratio(t_duck, t_ss), same])
    section(f"window frames, {a.rows} rows, rows/s (best of {a.repeat})")
    table(["query", "splitstream", "PostgreSQL", "DuckDB", "ss/PG", "ss/DuckDB", "same as PG"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
