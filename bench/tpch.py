"""TPC-H, the 22 queries: splitstream (per executor backend) vs PostgreSQL 15 vs DuckDB
(issues 3 and 6).

    python -m bench.tpch [--sf 1] [--queries 1,3,6] [--backends auto,vector,llvm] [--runs 3]
    python -m bench.tpch --sf 0.1 --queries 1,6            # quick

Data comes from DuckDB's tpch extension (bench/tpch_data.py), exported to CSV once
(--data-dir keeps it between runs) and loaded into splitstream and into a PostgreSQL 15
that this benchmark starts, both by COPY (CSV) over the wire; DuckDB (in process) reads
the same CSV files into tables with the same DDL.  PostgreSQL also gets primary keys,
the indexes of tpch_data.ORACLE_INDEXES (without them its Q17/Q20 correlated
subqueries rescan lineitem per outer row and take many minutes) and ANALYZE.

Every system runs the same query texts.  Each query runs once as warm-up and then
--runs times; the best time counts.  The result of every system is compared with
PostgreSQL's (order-insensitive, numbers with a small tolerance) and a mismatch is
flagged in the table.  Ratios are splitstream / peer, so below 1 means splitstream
is faster; the last row is the geometric mean over the queries every system ran.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time

from . import tpch_data as tpch
from .common import Servers, connect, machine_note, section, table
from .tpch_cv import same_rows


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.tpch")
    ap.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    ap.add_argument("--queries", default="1-22", help="e.g. 1,3,6 or 1-22 (default all)")
    ap.add_argument("--backends", default="auto", help="splitstream executor backends: auto,vector,llvm")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per query after one warm-up; best counts")
    ap.add_argument("--timeout", default="900s", help="statement_timeout on both servers")
    ap.add_argument("--data-dir", default=None,
                    help="directory for the CSV files, kept and reused (default: a temporary one, removed)")
    ap.add_argument("--no-pg", action="store_true", help="skip PostgreSQL (no ratios against it)")
    ap.add_argument("--no-duckdb", action="store_true", help="skip DuckDB")
    return ap.parse_args(argv)


def parse_queries(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    bad = [n for n in out if not 1 <= n <= 22]
    if bad:
        raise SystemExit(f"no TPC-H query {bad}")
    return out


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


# ------------------------------------------------------------------ runners

class Result:
    """Best time of one (system, query) and its rows, or the error that stopped it."""

    def __init__(self) -> None:
        self.best: float | None = None
        self.rows: list | None = None
        self.error: str | None = None


def _timed(fetch, runs: int, errors: type | tuple, describe) -> Result:
    """One warm-up (its rows kept for the check), then `runs` timed calls of `fetch`."""
    r = Result()
    try:
        for i in range(runs + 1):
            t0 = time.perf_counter()
            rows = fetch()
            dt = time.perf_counter() - t0
            if i == 0:
                r.rows = rows
            elif r.best is None or dt < r.best:
                r.best = dt
    except errors as e:
        r.error = describe(e)
        r.best = None
    return r


def run_wire(conn, sql: str, runs: int) -> Result:
    """Over psycopg (rows fetched)."""
    import psycopg

    return _timed(lambda: conn.execute(sql).fetchall(), runs, psycopg.Error,
                  lambda e: f"{e.sqlstate}: {str(e).strip().splitlines()[0][:160]}")


def run_duck(con, sql: str, runs: int) -> Result:
    """In-process DuckDB, which raises its own exception classes."""
    return _timed(lambda: con.sql(sql).fetchall(), runs, Exception,
                  lambda e: f"{type(e).__name__}: {str(e)[:160]}")


# ------------------------------------------------------------------ loading

def load_wire(conn, data_dir, oracle: bool, label: str) -> float:
    t0 = time.perf_counter()
    tpch.load(conn, data_dir=data_dir, oracle=oracle)
    dt = time.perf_counter() - t0
    print(f"{label}: loaded by COPY in {dt:.1f} s" + (" (with primary keys, indexes, ANALYZE)" if oracle else ""),
          flush=True)
    return dt


def load_duckdb(data_dir):
    import duckdb

    t0 = time.perf_counter()
    con = duckdb.connect()
    for t in tpch.TABLES:
        con.sql(f"CREATE TABLE {t} ({tpch.DDL[t]}, PRIMARY KEY ({tpch.PRIMARY_KEYS[t]}))")
        con.sql(f"COPY {t} FROM '{os.path.join(str(data_dir), t + '.csv')}' (FORMAT csv, HEADER false)")
    print(f"DuckDB {duckdb.__version__}: loaded from the CSV files in {time.perf_counter() - t0:.1f} s "
          f"({con.sql('SELECT current_setting(' + repr('threads') + ')').fetchone()[0]} threads)", flush=True)
    return con


# ------------------------------------------------------------------ report

def fmt_s(r: Result | None) -> str:
    if r is None:
        return "-"
    if r.error:
        return "ERR"
    return f"{r.best:.3f}" if r.best < 10 else f"{r.best:.1f}"


def ratio_of(a: Result | None, b: Result | None) -> float | None:
    if a is None or b is None or a.best is None or b.best is None or not b.best:
        return None
    return a.best / b.best


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report(qnums: list[int], backends: list[str], res: dict, have_pg: bool, have_duck: bool) -> None:
    header = ["query"] + [f"ss:{b} s" for b in backends]
    if have_pg:
        header.append("PG s")
    if have_duck:
        header.append("DuckDB s")
    for b in backends:
        if have_pg:
            header.append(f"{b}/PG")
        if have_duck:
            header.append(f"{b}/Duck")
    header.append("check")
    rows, ratios = [], {}
    for n in qnums:
        pg, duck = res.get(("pg", n)), res.get(("duck", n))
        row = [f"Q{n:02d}"] + [fmt_s(res.get((b, n))) for b in backends]
        row += [fmt_s(pg)] if have_pg else []
        row += [fmt_s(duck)] if have_duck else []
        for b in backends:
            for peer, on in (("pg", have_pg), ("duck", have_duck)):
                if on:
                    x = ratio_of(res.get((b, n)), res.get((peer, n)))
                    ratios.setdefault((b, peer), {})[n] = x
                    row.append(fmt_ratio(x))
        row.append(check_note(n, backends, res, have_pg, have_duck))
        rows.append(row)
    # geometric means over the queries every system answered
    systems = backends + (["pg"] if have_pg else []) + (["duck"] if have_duck else [])
    common = [n for n in qnums if all(res.get((s, n)) and res[(s, n)].best for s in systems)]
    gm = {s: geomean([res[(s, n)].best for n in common]) for s in systems}
    row = [f"geomean({len(common)})"] + [fmt_ratio(gm[b]) for b in backends]
    row += [fmt_ratio(gm["pg"])] if have_pg else []
    row += [fmt_ratio(gm["duck"])] if have_duck else []
    for b in backends:
        for peer, on in (("pg", have_pg), ("duck", have_duck)):
            if on:
                row.append(fmt_ratio(gm[b] / gm[peer] if gm[b] and gm[peer] else None))
    row.append("")
    rows.append(row)
    table(header, rows)
    for (s, n), r in sorted(res.items(), key=lambda kv: kv[0][1]):
        if r.error:
            print(f"  Q{n:02d} {s}: {r.error}")


def check_note(n: int, backends: list[str], res: dict, have_pg: bool, have_duck: bool) -> str:
    """'ok' when every system's rows match PostgreSQL's (or DuckDB's when PG is skipped)."""
    ref = res.get(("pg", n)) if have_pg else res.get(("duck", n))
    if ref is None or ref.rows is None:
        return "?"
    bad = []
    for s in backends + (["duck"] if have_pg and have_duck else []):
        r = res.get((s, n))
        if r is not None and r.rows is not None and not same_rows(r.rows, ref.rows):
            bad.append(s)
    return "DIFF:" + ",".join(bad) if bad else "ok"


# ------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    qnums = parse_queries(a.queries)
    backends = [b.strip() for b in a.backends.split(",") if b.strip()]
    print(f"# bench.tpch: SF {a.sf}, queries {a.queries}, splitstream backends {backends}, "
          f"1 warm-up + best of {a.runs}; {machine_note()}", flush=True)
    tmp = None
    data_dir = a.data_dir
    if data_dir is None:
        tmp = data_dir = tempfile.mkdtemp(prefix="bench-tpch-")
    try:
        t0 = time.perf_counter()
        d = tpch.generate(a.sf, data_dir)
        print(f"data: {d} (generated or reused in {time.perf_counter() - t0:.1f} s)", flush=True)
        queries = tpch.queries()
        res: dict = {}
        with Servers(pg=not a.no_pg) as s:
            section("loading")
            ss = connect(s.ss_port, prepare=False)
            load_wire(ss, d, oracle=False, label="splitstream")
            pg = None
            if not a.no_pg:
                pg = connect(s.pg_port, prepare=False)
                load_wire(pg, d, oracle=True, label="PostgreSQL 15")
                pg.execute(f"SET statement_timeout = '{a.timeout}'")
            duck = None if a.no_duckdb else load_duckdb(d)
            ss.execute(f"SET statement_timeout = '{a.timeout}'")
            section("queries (seconds, best of runs)")
            for n in qnums:
                line = [f"Q{n:02d}"]
                for b in backends:
                    ss.execute(f"SET executor_backend = '{b}'")
                    res[(b, n)] = run_wire(ss, queries[n], a.runs)
                    line.append(f"{b}={fmt_s(res[(b, n)])}")
                if pg is not None:
                    res[("pg", n)] = run_wire(pg, queries[n], a.runs)
                    line.append(f"pg={fmt_s(res[('pg', n)])}")
                if duck is not None:
                    res[("duck", n)] = run_duck(duck, queries[n], a.runs)
                    line.append(f"duckdb={fmt_s(res[('duck', n)])}")
                print("  " + " ".join(line), flush=True)
            section(f"TPC-H SF {a.sf}: seconds (best of {a.runs}) and ratios splitstream/peer")
            report(qnums, backends, res, pg is not None, duck is not None)
            ss.close()
            if pg is not None:
                pg.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
