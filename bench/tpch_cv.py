"""TPC-H lineitem as a stream into continuous views for Q1, Q3, Q6, Q15, Q20 (issue 5,
thesis 4.3.2), and the state-memory experiment of thesis Fig. 4.13.

    python -m bench.tpch_cv [--sf 1] [--batch 100000] [--mem-rows 10000000]
    python -m bench.tpch_cv --sf 0.05 --mem-rows 1000000          # quick

Data comes from DuckDB's tpch extension (bench/tpch_data.py).  The seven other
tables are ordinary tables on both systems (PostgreSQL with primary keys).
lineitem is sent in COPY batches of --batch rows, identical for every system:

    splitstream CV      lineitem is a stream (one per query), the query a continuous view
    PG trigger          an unlogged lineitem table per query whose statement-level trigger
                        (REFERENCING NEW TABLE) upserts the query's aggregate into a table;
                        the query then reads that table
    PG plain view       one unlogged lineitem table, the query an ordinary view recomputed
                        at every read

Q20's correlated subquery over the stream may be refused as a continuous view; the
refusal is printed and the decorrelated form (stream aggregated in FROM, grouped by
the correlation keys) is used instead, as the refusal's hint suggests.  Then all
views on one stream (and all triggers on one table) at once.  Finally Fig. 4.13:
--mem-rows rows over --mem-keys keys into a grouped view, state bytes per group
after the first 100,000 rows and at the end (splitstream.views).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time

import numpy as np

from .common import (Servers, connect, copy_file, fmt_rate, human_bytes, machine_note, query_dicts, ratio, rss_kb,
                     section, table)

QNUMS = [1, 3, 6, 15, 20]

Q20_DECORRELATED = """SELECT s_name, s_address
FROM supplier, nation, partsupp,
     (SELECT l_partkey, l_suppkey, 0.5 * sum(l_quantity) AS half_qty FROM lineitem
       WHERE l_shipdate >= CAST('1994-01-01' AS date) AND l_shipdate < CAST('1995-01-01' AS date)
       GROUP BY l_partkey, l_suppkey) agg
WHERE s_suppkey = ps_suppkey AND ps_partkey = agg.l_partkey AND ps_suppkey = agg.l_suppkey
  AND ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')
  AND ps_availqty > agg.half_qty
  AND s_nationkey = n_nationkey AND n_name = 'CANADA'
GROUP BY s_name, s_address
ORDER BY s_name"""

# PostgreSQL trigger maintenance per query: {li} lineitem table, {a} aggregate table.
# (setup statements, trigger body, read query)
PG_TRIGGER = {
    1: ("CREATE UNLOGGED TABLE {a} (l_returnflag char(1), l_linestatus char(1), sum_qty numeric, "
        "sum_base_price numeric, sum_disc_price numeric, sum_charge numeric, sum_disc numeric, count_order bigint, "
        "PRIMARY KEY (l_returnflag, l_linestatus))",
        "INSERT INTO {a} AS t SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), "
        "sum(l_extendedprice * (1 - l_discount)), sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), "
        "sum(l_discount), count(*) FROM new_rows WHERE l_shipdate <= CAST('1998-09-02' AS date) GROUP BY 1, 2 "
        "ON CONFLICT (l_returnflag, l_linestatus) DO UPDATE SET sum_qty = t.sum_qty + excluded.sum_qty, "
        "sum_base_price = t.sum_base_price + excluded.sum_base_price, "
        "sum_disc_price = t.sum_disc_price + excluded.sum_disc_price, sum_charge = t.sum_charge + excluded.sum_charge, "
        "sum_disc = t.sum_disc + excluded.sum_disc, count_order = t.count_order + excluded.count_order",
        "SELECT l_returnflag, l_linestatus, sum_qty, sum_base_price, sum_disc_price, sum_charge, "
        "sum_qty / count_order AS avg_qty, sum_base_price / count_order AS avg_price, "
        "sum_disc / count_order AS avg_disc, count_order FROM {a} ORDER BY l_returnflag, l_linestatus"),
    3: ("CREATE UNLOGGED TABLE {a} (l_orderkey int, o_orderdate date, o_shippriority int, revenue numeric, "
        "PRIMARY KEY (l_orderkey, o_orderdate, o_shippriority))",
        "INSERT INTO {a} AS t SELECT l_orderkey, o_orderdate, o_shippriority, "
        "sum(l_extendedprice * (1 - l_discount)) FROM customer, orders, new_rows "
        "WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey "
        "AND o_orderdate < CAST('1995-03-15' AS date) AND l_shipdate > CAST('1995-03-15' AS date) "
        "GROUP BY 1, 2, 3 ON CONFLICT (l_orderkey, o_orderdate, o_shippriority) "
        "DO UPDATE SET revenue = t.revenue + excluded.revenue",
        "SELECT l_orderkey, revenue, o_orderdate, o_shippriority FROM {a} "
        "ORDER BY revenue DESC, o_orderdate LIMIT 10"),
    6: ("CREATE UNLOGGED TABLE {a} (revenue numeric); INSERT INTO {a} VALUES (NULL)",
        "UPDATE {a} SET revenue = CASE WHEN d.s IS NULL THEN revenue ELSE coalesce(revenue, 0) + d.s END "
        "FROM (SELECT sum(l_extendedprice * l_discount) AS s FROM new_rows "
        "WHERE l_shipdate >= CAST('1994-01-01' AS date) AND l_shipdate < CAST('1995-01-01' AS date) "
        "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24) d",
        "SELECT revenue FROM {a}"),
    15: ("CREATE UNLOGGED TABLE {a} (supplier_no int PRIMARY KEY, total_revenue numeric)",
         "INSERT INTO {a} AS t SELECT l_suppkey, sum(l_extendedprice * (1 - l_discount)) FROM new_rows "
         "WHERE l_shipdate >= CAST('1996-01-01' AS date) AND l_shipdate < CAST('1996-04-01' AS date) GROUP BY 1 "
         "ON CONFLICT (supplier_no) DO UPDATE SET total_revenue = t.total_revenue + excluded.total_revenue",
         "SELECT s_suppkey, s_name, s_address, s_phone, total_revenue FROM supplier, {a} "
         "WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM {a}) ORDER BY s_suppkey"),
    20: ("CREATE UNLOGGED TABLE {a} (l_partkey int, l_suppkey int, sum_qty numeric, PRIMARY KEY (l_partkey, l_suppkey))",
         "INSERT INTO {a} AS t SELECT l_partkey, l_suppkey, sum(l_quantity) FROM new_rows "
         "WHERE l_shipdate >= CAST('1994-01-01' AS date) AND l_shipdate < CAST('1995-01-01' AS date) GROUP BY 1, 2 "
         "ON CONFLICT (l_partkey, l_suppkey) DO UPDATE SET sum_qty = t.sum_qty + excluded.sum_qty",
         "SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp "
         "JOIN {a} g ON ps_partkey = g.l_partkey AND ps_suppkey = g.l_suppkey WHERE ps_partkey IN "
         "(SELECT p_partkey FROM part WHERE p_name LIKE 'forest%') AND ps_availqty > 0.5 * g.sum_qty) "
         "AND s_nationkey = n_nationkey AND n_name = 'CANADA' ORDER BY s_name"),
}


def trigger_sql(n: int, li: str, a: str, bodies: list[str] | None = None) -> str:
    """DDL for an aggregate table + statement-level trigger on `li` (one function running `bodies`)."""
    setup, body, _ = PG_TRIGGER[n]
    return (setup.format(a=a) + ";\n" +
            f"CREATE FUNCTION {a}_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            + "; ".join(bodies or [body.format(a=a)]) + "; RETURN NULL; END $$;\n" +
            f"CREATE TRIGGER {a}_tr AFTER INSERT ON {li} REFERENCING NEW TABLE AS new_rows "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {a}_fn();")


def on_table(sql: str, li: str) -> str:
    return re.sub(r"\blineitem\b", li, sql)


# ------------------------------------------------------------------ helpers

class Batches:
    """A CSV file in memory, cut into line-aligned COPY batches."""

    def __init__(self, path: str, batch: int) -> None:
        with open(path, "rb") as f:
            self.data = f.read()
        ends = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10) + 1
        self.rows = len(ends)
        cuts = [0] + [int(ends[min(i + batch, self.rows) - 1]) for i in range(0, self.rows, batch)]
        self.slices = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]
        self.counts = [min(batch, self.rows - i) for i in range(0, self.rows, batch)]

    def __iter__(self):
        mv = memoryview(self.data)
        for a, b in self.slices:
            yield mv[a:b]


def ingest(conn, table_name: str, batches: Batches) -> float:
    """COPY every batch; return rows/s."""
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        for chunk in batches:
            with cur.copy(f"COPY {table_name} FROM STDIN (FORMAT csv)") as cp:
                cp.write(chunk)
    return batches.rows / (time.perf_counter() - t0)


def timed_read(conn, sql: str) -> tuple[float, list | None, str | None]:
    import psycopg

    t0 = time.perf_counter()
    try:
        rows = conn.execute(sql).fetchall()
        return time.perf_counter() - t0, rows, None
    except psycopg.Error as e:
        return time.perf_counter() - t0, None, f"{e.sqlstate}: {str(e).strip()[:200]}"


def same_rows(a: list | None, b: list | None) -> bool | None:
    if a is None or b is None:
        return None
    def key(r):
        return tuple((x is None, str(x).strip()) for x in r)
    a, b = sorted(a, key=key), sorted(b, key=key)
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb):
            if x is None or y is None:
                if not (x is None and y is None):
                    return False
            elif isinstance(x, str) or isinstance(y, str) or hasattr(x, "isoformat"):
                if str(x).strip() != str(y).strip():
                    return False
            elif not math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-6):
                return False
    return True


_DROP_FAILED = []


def drop_stream(conn, name: str) -> None:
    """DROP FOREIGN TABLE .. CASCADE; when the product fails at that, drop the views alone and carry on."""
    import psycopg

    try:
        conn.execute(f"DROP FOREIGN TABLE {name} CASCADE")
    except psycopg.Error as e:
        if not _DROP_FAILED:
            print(f"  (DROP FOREIGN TABLE {name} CASCADE failed: {e.sqlstate} {str(e).strip()[:120]}; "
                  "dropping its views only)")
        _DROP_FAILED.append(name)
        for (v,) in conn.execute("SELECT name FROM splitstream.views WHERE streams = %s", (name,)).fetchall():
            try:
                conn.execute(f"DROP VIEW {v}")
            except psycopg.Error as e2:
                print(f"  (DROP VIEW {v} failed too: {e2})")


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.1f}"


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tpch_cv")
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--batch", type=int, default=100_000, help="lineitem rows per COPY (default 100k)")
    ap.add_argument("--queries", default=",".join(map(str, QNUMS)),
                    help="subset, e.g. 1,6; \"\" runs only the Fig. 4.13 experiment")
    ap.add_argument("--skip-all", action="store_true", help="skip the all-views-on-one-stream run")
    ap.add_argument("--skip-pg", action="store_true", help="splitstream only")
    ap.add_argument("--mem-rows", type=int, default=10_000_000, help="rows of the Fig. 4.13 experiment (0 = skip)")
    ap.add_argument("--mem-keys", type=int, default=10_000, help="keys of the Fig. 4.13 experiment")
    ap.add_argument("--decimal-as", default=None,
                    help="declare lineitem's decimal(15,2) columns as this type on both systems (e.g. float8)")
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="splitstream --fsync (default on)")
    ap.add_argument("--read-timeout", default="300s", help="statement_timeout for view reads")
    a = ap.parse_args(argv)
    qnums = [int(x) for x in a.queries.split(",") if x]
    print(f"# bench.tpch_cv: SF {a.sf}, lineitem in COPY batches of {a.batch:,}, queries {qnums}, "
          f"lineitem decimals as {a.decimal_as or 'decimal(15,2)'}, "
          f"Fig. 4.13 {a.mem_rows:,} rows over {a.mem_keys:,} keys; splitstream --fsync {a.fsync}; {machine_note()}")
    tmp = tempfile.mkdtemp(prefix="bench-tpch-")
    try:
        with Servers(pg=not a.skip_pg, fsync=a.fsync) as s:
            ss = connect(s.ss_port)
            pg = connect(s.pg_port) if s.pg_port else None
            for c in (ss, pg):
                if c is not None:
                    try:
                        c.execute(f"SET statement_timeout = '{a.read_timeout}'")
                    except Exception:
                        pass
            if qnums:
                run_tpch(s, ss, pg, a, qnums, tmp)
            if a.mem_rows:
                run_memory(s, ss, a, tmp)
            print(f"\nend: {machine_note()}")
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def run_tpch(s, ss, pg, a, qnums, tmp) -> None:
    import psycopg

    from . import tpch_data as tpch

    section(f"TPC-H SF {a.sf}: data")
    t0 = time.perf_counter()
    d = tpch.generate(a.sf, os.path.join(tmp, "data"))
    print(f"generated by DuckDB in {time.perf_counter() - t0:.1f} s")
    queries = tpch.queries()
    li_ddl = tpch.DDL["lineitem"]
    if a.decimal_as:
        li_ddl = li_ddl.replace("decimal(15,2)", a.decimal_as)
    load = []
    for label, conn in (("splitstream", ss), ("PostgreSQL", pg)):
        if conn is None:
            continue
        t0 = time.perf_counter()
        for t in tpch.TABLES[:-1]:
            pk = f", PRIMARY KEY ({tpch.PRIMARY_KEYS[t]})" if conn is pg else ""
            conn.execute(f"CREATE TABLE {t} ({tpch.DDL[t]}{pk})")
            copy_file(conn, t, str(d / f"{t}.csv"))
        if conn is pg:
            conn.execute("ANALYZE")
        load.append([label, f"{time.perf_counter() - t0:.1f} s"])
    table(["static tables", "load time"], load, [16, 12])
    li = Batches(str(d / "lineitem.csv"), a.batch)
    print(f"lineitem: {li.rows:,} rows, {human_bytes(len(li.data))} CSV, {len(li.slices)} COPY batches")

    plain_rate = None
    if pg is not None:
        pg.execute(f"CREATE UNLOGGED TABLE li_plain ({li_ddl})")
        plain_rate = ingest(pg, "li_plain", li)
        pg.execute("ANALYZE li_plain")
        print(f"PostgreSQL plain COPY into an unlogged lineitem table: {fmt_rate(plain_rate)} rows/s")

    # the stream type: NOT NULL may or may not be supported on streams
    li_cols = li_ddl
    try:
        ss.execute(f"CREATE FOREIGN TABLE li_probe ({li_cols}) SERVER stream")
    except psycopg.Error as e:
        print(f"stream with NOT NULL columns refused ({e.sqlstate}: {str(e).strip()}); dropping NOT NULL")
        li_cols = li_cols.replace(" NOT NULL", "")

    section("per query: ingest of all of lineitem, then reads")
    results = []
    view_sql = {}
    for n in qnums:
        q = queries[n]
        stream = f"li_q{n}"
        ss.execute(f"CREATE FOREIGN TABLE {stream} ({li_cols}) SERVER stream")
        form = "as written"
        try:
            ss.execute(f"CREATE VIEW cv_q{n} AS " + on_table(q, stream))
        except psycopg.Error as e:
            print(f"Q{n}: CREATE VIEW refused: {e.sqlstate} {str(e).strip()}")
            if n != 20:
                drop_stream(ss, stream)
                results.append([f"Q{n}", "refused"] + ["-"] * 10)
                continue
            q = Q20_DECORRELATED
            form = "decorrelated"
            try:
                ss.execute(f"CREATE VIEW cv_q{n} AS " + on_table(q, stream))
                print(f"Q{n}: using the decorrelated form (stream grouped by l_partkey, l_suppkey in FROM)")
            except psycopg.Error as e2:
                print(f"Q{n}: decorrelated form refused too: {e2.sqlstate} {str(e2).strip()}")
                drop_stream(ss, stream)
                results.append([f"Q{n}", "refused"] + ["-"] * 10)
                continue
        view_sql[n] = q
        rss_before = rss_kb(s.ss_pid)
        try:
            ss_rate = ingest(ss, stream, li)
        except psycopg.Error as e:
            print(f"Q{n}: splitstream ingest FAILED: {e}")
            ss_rate = None
        first, ss_rows, err = timed_read(ss, f"SELECT * FROM cv_q{n}")
        if err:
            print(f"Q{n}: splitstream read failed: {err}")
        cached, _, _ = timed_read(ss, f"SELECT * FROM cv_q{n}")
        vw = query_dicts(ss, f"SELECT groups, state_bytes FROM splitstream.views WHERE name = 'cv_q{n}'")
        state = f"{vw[0]['groups']:,} groups, {human_bytes(vw[0]['state_bytes'])}" if vw else "-"
        print(f"Q{n} ({form}): splitstream {fmt_rate(ss_rate)} rows/s, state {state}, "
              f"RSS {rss_before / 1024:.0f} -> {rss_kb(s.ss_pid) / 1024:.0f} MiB", flush=True)

        trig_rate = trig_read = plain_read = None
        trig_rows = plain_rows = None
        if pg is not None:
            pg.execute(f"CREATE UNLOGGED TABLE li_q{n} ({li_ddl})")
            pg.execute(trigger_sql(n, f"li_q{n}", f"agg_q{n}"))
            trig_rate = ingest(pg, f"li_q{n}", li)
            trig_read, trig_rows, err = timed_read(pg, PG_TRIGGER[n][2].format(a=f"agg_q{n}"))
            trig_read, trig_rows, err = timed_read(pg, PG_TRIGGER[n][2].format(a=f"agg_q{n}"))
            if err:
                print(f"Q{n}: PG trigger read failed: {err}")
            pg.execute(f"CREATE VIEW plain_q{n} AS " + on_table(queries[n], "li_plain"))
            timed_read(pg, f"SELECT * FROM plain_q{n}")
            plain_read, plain_rows, err = timed_read(pg, f"SELECT * FROM plain_q{n}")
            if err:
                print(f"Q{n}: PG plain view read failed: {err}")
            pg.execute(f"DROP TABLE li_q{n} CASCADE")
        ok_plain, ok_trig = same_rows(ss_rows, plain_rows), same_rows(ss_rows, trig_rows)
        verdict = {True: "match", False: "DIFFER", None: "-"}
        if ok_plain is False:
            print(f"Q{n}: splitstream {(ss_rows or [])[:2]} vs PostgreSQL {(plain_rows or [])[:2]}")
        results.append([f"Q{n}", fmt_rate(ss_rate), fmt_rate(trig_rate), fmt_rate(plain_rate),
                        ratio(ss_rate, trig_rate), ratio(ss_rate, plain_rate),
                        ms(first), ms(cached), ms(trig_read), ms(plain_read),
                        verdict[ok_plain], verdict[ok_trig]])
        drop_stream(ss, stream)

    print()
    print("ingest rows/s (lineitem COPY) and read latency in ms after the ingest:")
    widths = [6, 12, 12, 12, 9, 9, 11, 11, 11, 11, 9, 9]
    table(["query", "ss CV", "PG trigger", "PG plain", "ss/trig", "ss/plain", "ss 1st rd", "ss cached",
           "PG trig rd", "PG view rd", "vs view", "vs trig"], results, widths)
    print("(ss 1st rd: first read after the ingest, merging local states and running the upper pipelines; "
          "PG view rd: plain view recomputed; vs view / vs trig: splitstream's result against each)")

    if not a.skip_all and view_sql:
        section("all views on one stream / all triggers on one table")
        ss.execute(f"CREATE FOREIGN TABLE li_all ({li_cols}) SERVER stream")
        for n, q in view_sql.items():
            ss.execute(f"CREATE VIEW cv_all_q{n} AS " + on_table(q, "li_all"))
        rss_before = rss_kb(s.ss_pid)
        ss_rate = ingest(ss, "li_all", li)
        print(f"splitstream, {len(view_sql)} views: {fmt_rate(ss_rate)} rows/s, "
              f"RSS {rss_before / 1024:.0f} -> {rss_kb(s.ss_pid) / 1024:.0f} MiB")
        if pg is not None:
            pg.execute(f"CREATE UNLOGGED TABLE li_all ({li_ddl})")
            bodies = []
            for n in view_sql:
                setup, body, _ = PG_TRIGGER[n]
                pg.execute(setup.format(a=f"agg_all_q{n}"))
                bodies.append(body.format(a=f"agg_all_q{n}"))
            pg.execute("CREATE FUNCTION agg_all_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                       + "; ".join(bodies) + "; RETURN NULL; END $$")
            pg.execute("CREATE TRIGGER agg_all_tr AFTER INSERT ON li_all REFERENCING NEW TABLE AS new_rows "
                       "FOR EACH STATEMENT EXECUTE FUNCTION agg_all_fn()")
            pg_rate = ingest(pg, "li_all", li)
            print(f"PostgreSQL, one trigger maintaining {len(view_sql)} aggregates: {fmt_rate(pg_rate)} rows/s")
            print(f"ratio splitstream / PostgreSQL trigger: {ratio(ss_rate, pg_rate)} (target >= 2.0); "
                  f"splitstream / PostgreSQL plain COPY: {ratio(ss_rate, plain_rate)}")
            pg.execute("DROP TABLE li_all CASCADE")
        drop_stream(ss, "li_all")


def run_memory(s, ss, a, tmp) -> None:
    """Thesis Fig. 4.13: state grows with groups, not with input."""
    import duckdb

    section(f"Fig. 4.13: {a.mem_rows:,} rows over {a.mem_keys:,} keys into a grouped view "
            "(count(*), sum(v), min(v), max(v))")
    path = os.path.join(tmp, "mem.csv")
    pool = min(a.mem_rows, 2_000_000)
    con = duckdb.connect()
    con.sql("SELECT setseed(0.25)")
    con.sql(f"COPY (SELECT (hash(i) % {a.mem_keys})::INT AS k, (random() * 1000000)::INT AS v FROM range({pool}) t(i)) "
            f"TO '{path}' (FORMAT csv, HEADER false)")
    con.close()
    first = Batches(path, min(100_000, pool))
    ss.execute("CREATE FOREIGN TABLE mem_s (k int, v int) SERVER stream")
    ss.execute("CREATE VIEW mem_v AS SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi "
               "FROM mem_s GROUP BY k")
    naggs = 4
    rss0 = rss_kb(s.ss_pid)

    def probe(label: str, sent: int) -> list:
        before = query_dicts(ss, "SELECT groups, state_bytes FROM splitstream.views WHERE name = 'mem_v'")
        got = ss.execute("SELECT count(*), sum(n) FROM mem_v").fetchone()
        after = query_dicts(ss, "SELECT groups, state_bytes FROM splitstream.views WHERE name = 'mem_v'")
        if after is None:
            return [label, fmt_rate(sent), "-", "splitstream.views missing", "-", "-", "-"]
        g, b = after[0]["groups"], after[0]["state_bytes"]
        return [label, fmt_rate(sent), fmt_rate(int(got[1] or 0)), fmt_rate(g), fmt_rate(b),
                f"{b / g:.1f}" if g else "-", f"{b / g / naggs:.1f}" if g else "-",
                f"{before[0]['state_bytes']:,}" if before else "-", f"{rss_kb(s.ss_pid) / 1024:.0f}"]

    rows = []
    sent = 0
    t0 = time.perf_counter()
    mv = memoryview(first.data)
    with ss.cursor() as cur:
        i = 0
        while sent < a.mem_rows:
            (lo, hi), n = first.slices[i % len(first.slices)], first.counts[i % len(first.slices)]
            if sent + n > a.mem_rows:
                break
            with cur.copy("COPY mem_s FROM STDIN (FORMAT csv)") as cp:
                cp.write(mv[lo:hi])
            sent += n
            i += 1
            if i == 1:
                t_probe = time.perf_counter()
                rows.append(probe("after first batch", sent))
                t0 += time.perf_counter() - t_probe
    dt = time.perf_counter() - t0
    rows.append(probe("at the end", sent))
    table(["point", "rows in", "view sum(n)", "groups", "state bytes", "B/group", "B/group/agg",
           "bytes pre-read", "RSS MiB"], rows, [18, 13, 13, 9, 13, 9, 12, 15, 9])
    if len(rows) == 2 and rows[0][5] != "-" and rows[1][5] != "-":
        b0, b1 = float(rows[0][5]), float(rows[1][5])
        equal, small = abs(b1 / b0 - 1) <= 0.05, max(b0, b1) / naggs <= 64
        print(f"B/group after the first {rows[0][1]} rows: {b0:.1f}; at the end ({rows[1][1]} rows): {b1:.1f}")
        print(f"criterion 1, equal within 5%: end/first = {b1 / b0:.3f} -> {'HOLDS' if equal else 'FAILS'}")
        print(f"criterion 2, <= 64 B/group/aggregate: {b0 / naggs:.1f} and {b1 / naggs:.1f} -> "
              f"{'HOLDS' if small else 'FAILS'}")
        print(f"ingest {fmt_rate(sent / dt)} rows/s; RSS before {rss0 / 1024:.0f} MiB")
    drop_stream(ss, "mem_s")


if __name__ == "__main__":
    sys.exit(main())
