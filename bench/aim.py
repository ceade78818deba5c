"""The AIM benchmark as the thesis runs it in section 4.3.1 (issue 5).

    python -m bench.aim [--customers 10000000] [--events 5000000] [--seconds 5]
    python -m bench.aim --customers 100000 --events 500000 --seconds 2     # quick

splitstream: an `events` stream, a `customers` table and the six continuous
views of Table 4.3 (bench/aim_queries.py).

PostgreSQL 15, side by side: an unlogged `events` table whose statement-level
trigger (REFERENCING NEW TABLE) upserts per-(entity, week) aggregates into an
unlogged table -- the "analytics matrix" a PostgreSQL user would build -- and
the six queries rewritten to read that table (joined with customers where the
query needs it).

Phases, in the thesis' order:
 1. load customers; create the views / trigger; insert --init-events random
    events (the thesis initialises with 10K);
 2. round trips per second for each query, no concurrent writes, pgbench -M
    prepared with 1 and 2 connections;
 3. query throughput (the six queries with equal probability, one pgbench
    connection) while a paced writer thread COPYs events at each --rates value;
 4. isolated ingest: COPY batches of --batch events, --events in total, with all
    six views attached (and the trigger on the PostgreSQL side);
 5. the six results of both systems compared.
The thesis' published figures (Table 4.4, Umbra and PipelineDB, SF 1; 1.5M
events/s ingest) are printed as reference lines.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
import tempfile
import threading
import time

import numpy as np

from .common import (Servers, connect, fmt_rate, human_bytes, machine_note, pgbench, query_dicts, ratio, rss_kb,
                     section, table)

from .aim_queries import AIM_QUERIES, CUSTOMERS_DDL, EVENTS_COLS


def aim_queries() -> dict[str, str]:
    return dict(AIM_QUERIES)


# PostgreSQL: per-(entity, week) aggregates kept by a statement-level trigger.
PG_SETUP = """
CREATE FUNCTION current_week() RETURNS int LANGUAGE sql STABLE AS $$ SELECT extract(week FROM now())::int $$;
CREATE UNLOGGED TABLE events {cols};
CREATE UNLOGGED TABLE aim_agg (
  entity_id int, week int,
  cnt bigint, cnt_local_calls bigint, sum_duration bigint, max_cost float8, sum_cost float8,
  nl_cnt bigint, nl_sum_duration bigint, sum_ld_cost float8, sum_local_cost float8,
  PRIMARY KEY (entity_id, week));
CREATE FUNCTION aim_agg_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO aim_agg AS a
  SELECT entity_id, week, count(*), count(local_calls), sum(duration), max(cost), sum(cost),
         count(*) FILTER (WHERE NOT long_distance), coalesce(sum(duration) FILTER (WHERE NOT long_distance), 0),
         sum(long_distance_cost), sum(local_cost)
    FROM new_rows GROUP BY entity_id, week
  ON CONFLICT (entity_id, week) DO UPDATE SET
    cnt = a.cnt + excluded.cnt, cnt_local_calls = a.cnt_local_calls + excluded.cnt_local_calls,
    sum_duration = a.sum_duration + excluded.sum_duration, max_cost = greatest(a.max_cost, excluded.max_cost),
    sum_cost = a.sum_cost + excluded.sum_cost, nl_cnt = a.nl_cnt + excluded.nl_cnt,
    nl_sum_duration = a.nl_sum_duration + excluded.nl_sum_duration,
    sum_ld_cost = a.sum_ld_cost + excluded.sum_ld_cost, sum_local_cost = a.sum_local_cost + excluded.sum_local_cost;
  RETURN NULL;
END $$;
CREATE TRIGGER aim_agg_tr AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION aim_agg_fn();
""".format(cols=EVENTS_COLS)

PG_QUERIES = {
    "q1": "SELECT avg(sum_duration) AS avg_duration FROM aim_agg WHERE week = current_week() AND cnt_local_calls > 2",
    "q2": "SELECT max(max_cost) AS max_cost FROM aim_agg WHERE week = current_week() AND cnt > 2",
    "q3": "SELECT sum(sum_cost) / sum(sum_duration) AS cost_ratio FROM aim_agg WHERE week = current_week() "
          "GROUP BY cnt LIMIT 100",
    "q4": "SELECT city_zip, avg(nl_cnt) AS avg_calls, sum(nl_sum_duration) AS duration FROM aim_agg a "
          "JOIN customers c ON a.entity_id = c.id WHERE week = current_week() AND nl_cnt > 4 "
          "AND nl_sum_duration > 25 GROUP BY city_zip",
    "q5": "SELECT c.region_id, sum(sum_ld_cost) AS cost_long, sum(sum_local_cost) AS cost_local FROM aim_agg a "
          "JOIN customers c ON a.entity_id = c.id WHERE week = current_week() AND c.type = 2 AND c.category = 1 "
          "GROUP BY c.region_id",
    "q7": "SELECT sum(sum_cost) / sum(sum_duration) AS ratio FROM aim_agg a JOIN customers c ON a.entity_id = c.id "
          "WHERE week = current_week() AND c.value_type = 2",
}

# Thesis Table 4.4, SF 1 (10M customers), queries/s without concurrent writes, two server threads.
UMBRA_QPS = {"q1": 10748, "q2": 10761, "q3": 10677, "q4": 10710, "q5": 10501, "q7": 10709}
PDB_QPS = {"q1": 6725, "q2": 7274, "q3": 6123, "q4": 125, "q5": 6987, "q7": 7957}
UMBRA_INGEST = 1_500_000


# ------------------------------------------------------------------ data

def duck():
    import duckdb

    con = duckdb.connect()
    con.sql("SELECT setseed(0.5)")
    return con


def write_customers(path: str, n: int) -> None:
    con = duck()
    con.sql(f"""COPY (SELECT i AS id, 'z' || lpad((hash(i) % 10000)::VARCHAR, 5, '0') AS city_zip,
                        (hash(i * 7) % 100)::INT AS region_id, (hash(i * 11) % 4)::INT AS type,
                        (hash(i * 13) % 4)::INT AS category, (hash(i * 17) % 4)::INT AS value_type
                 FROM range(1, {n + 1}) t(i)) TO '{path}' (FORMAT csv, HEADER false)""")
    con.close()


def write_events(path: str, n: int, customers: int, week: int) -> None:
    """90% of events in the current week, 10% in the one before; local_calls NULL half the time."""
    con = duck()
    con.sql(f"""COPY (SELECT 1 + (random() * {customers - 1})::INT AS entity_id,
                        CASE WHEN random() < 0.9 THEN {week} ELSE {week - 1} END AS week,
                        1 + (random() * 59)::INT AS duration, round(random() * 10, 2) AS cost,
                        CASE WHEN random() < 0.5 THEN 1 END AS local_calls, ld AS long_distance,
                        CASE WHEN ld THEN c ELSE 0 END AS long_distance_cost,
                        CASE WHEN ld THEN 0 ELSE c END AS local_cost
                 FROM (SELECT random() < 0.3 AS ld, round(random() * 10, 2) AS c FROM range({n})) t)
             TO '{path}' (FORMAT csv, HEADER false)""")
    con.close()


class EventSource:
    """The events CSV in memory.  Each system reads it through its own Cursor, which hands
    out line-aligned slices and wraps around, so after the same number of rows two
    systems have received exactly the same events whatever the slice sizes were."""

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            self.data = f.read()
        nl = np.frombuffer(self.data, dtype=np.uint8) == 10
        self.ends = np.flatnonzero(nl) + 1          # end offset of each line
        self.n = len(self.ends)

    def offset(self, line: int) -> int:
        return 0 if line == 0 else int(self.ends[line - 1])

    def cursor(self) -> "Cursor":
        return Cursor(self)


class Cursor:
    def __init__(self, src: EventSource) -> None:
        self.src, self.total = src, 0
        self.lock = threading.Lock()

    def take(self, rows: int) -> tuple[bytes, int]:
        with self.lock:
            src = self.src
            rows = min(rows, src.n)
            pos = self.total % src.n
            end = pos + rows
            if end <= src.n:
                data = src.data[src.offset(pos):src.offset(end)]
            else:
                data = src.data[src.offset(pos):] + src.data[:src.offset(end - src.n)]
            self.total += rows
            return data, rows


def copy_chunk(conn, table: str, data: bytes) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} FROM STDIN (FORMAT csv)") as cp:
            cp.write(data)


class PacedWriter(threading.Thread):
    """COPY `rate` events per second in ticks of 1/hz s; records what it achieved."""

    def __init__(self, port: int, table: str, src: "Cursor", rate: int, hz: int = 10) -> None:
        super().__init__(daemon=True)
        self.port, self.table, self.src, self.rate, self.hz = port, table, src, rate, hz
        self.stop = threading.Event()
        self.sent = 0
        self.error = None
        self.elapsed = 0.0

    def run(self) -> None:
        conn = connect(self.port)
        per_tick = max(1, self.rate // self.hz)
        t0 = time.perf_counter()
        tick = 0
        try:
            while not self.stop.is_set():
                data, n = self.src.take(per_tick)
                copy_chunk(conn, self.table, data)
                self.sent += n
                tick += 1
                wait = t0 + tick / self.hz - time.perf_counter()
                if wait > 0:
                    self.stop.wait(wait)
        except Exception as e:  # report, don't hide
            self.error = e
        finally:
            self.elapsed = time.perf_counter() - t0
            conn.close()


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.aim")
    ap.add_argument("--customers", type=int, default=10_000_000, help="customers (default 10M; 100000 for quick runs)")
    ap.add_argument("--events", type=int, default=5_000_000, help="events for the isolated ingest (default 5M)")
    ap.add_argument("--batch", type=int, default=100_000, help="events per COPY in the isolated ingest (default 100k)")
    ap.add_argument("--init-events", type=int, default=10_000, help="events before the query phases (thesis: 10K)")
    ap.add_argument("--seconds", type=int, default=5, help="seconds per query throughput case (default 5)")
    ap.add_argument("--rates", default="10000,50000", help="paced insert rates for phase 3 (events/s)")
    ap.add_argument("--pool", type=int, default=2_000_000, help="distinct events generated and cycled (default 2M)")
    ap.add_argument("--refresh-rows", type=int, default=100, help="events per COPY in the read-latency probe")
    ap.add_argument("--refresh-reps", type=int, default=9, help="repetitions of the read-latency probe")
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="splitstream --fsync (default on)")
    ap.add_argument("--skip-pg", action="store_true", help="splitstream only")
    a = ap.parse_args(argv)
    rates = [int(x) for x in a.rates.split(",") if x]

    print(f"# bench.aim: {a.customers:,} customers, {a.events:,} events in COPY batches of {a.batch:,}, "
          f"{a.init_events:,} initial events, {a.seconds} s per query case, paced rates {rates}; "
          f"splitstream --fsync {a.fsync}; {machine_note()}")
    tmp = tempfile.mkdtemp(prefix="bench-aim-")
    try:
        with Servers(pg=not a.skip_pg, fsync=a.fsync) as s:
            run(s, a, rates, tmp)
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def run(s: Servers, a, rates: list[int], tmp: str) -> None:
    import psycopg

    queries = aim_queries()
    names = list(queries)
    ss = connect(s.ss_port)
    pg = connect(s.pg_port) if s.pg_port else None
    week = ss.execute("SELECT current_week()").fetchone()[0]
    iso = dt.date.today().isocalendar()[1]
    if pg is not None:
        pg.execute(PG_SETUP)
        pgw = pg.execute("SELECT current_week()").fetchone()[0]
        if pgw != week:
            print(f"WARNING: current_week() differs: splitstream {week}, PostgreSQL {pgw}")
    print(f"current_week() = {week} (ISO week today {iso})")

    # ---------------------------------------------------------------- 1. load
    section("1. set-up")
    cpath, epath = os.path.join(tmp, "customers.csv"), os.path.join(tmp, "events.csv")
    t0 = time.perf_counter()
    write_customers(cpath, a.customers)
    write_events(epath, min(a.pool, max(a.events, a.init_events)), a.customers, week)
    src = EventSource(epath)
    print(f"data generated by DuckDB in {time.perf_counter() - t0:.1f} s: customers {human_bytes(os.path.getsize(cpath))}, "
          f"event pool {src.n:,} rows ({human_bytes(len(src.data))})")
    from .common import copy_file

    load = []
    for label, conn in (("splitstream", ss), ("PostgreSQL", pg)):
        if conn is None:
            continue
        conn.execute(f"CREATE TABLE customers {CUSTOMERS_DDL}")
        t0 = time.perf_counter()
        copy_file(conn, "customers", cpath)
        load.append([label, f"{time.perf_counter() - t0:.1f} s", fmt_rate(a.customers / (time.perf_counter() - t0))])
    table(["customers COPY", "time", "rows/s"], load, [18, 10, 14])

    ss.execute(f"CREATE FOREIGN TABLE events {EVENTS_COLS} SERVER stream")
    created = []
    for n in names:
        t0 = time.perf_counter()
        try:
            ss.execute(f"CREATE VIEW aim_{n} AS " + queries[n].format(e="events", c="customers"))
            created.append(n)
            print(f"CREATE VIEW aim_{n}: {1000 * (time.perf_counter() - t0):.0f} ms")
        except psycopg.Error as e:
            print(f"CREATE VIEW aim_{n} REFUSED: {e.sqlstate} {str(e).strip()}")
    rss0 = rss_kb(s.ss_pid)
    print(f"splitstream RSS after set-up: {rss0 / 1024:.1f} MiB")

    cur = {"ss": src.cursor(), "pg": src.cursor()}
    data, n0 = cur["ss"].take(a.init_events)
    copy_chunk(ss, "events", data)
    if pg is not None:
        copy_chunk(pg, "events", cur["pg"].take(a.init_events)[0])
    print(f"initialised with {n0:,} events")

    ss_q = {n: f"SELECT * FROM aim_{n};\n" for n in created}
    pg_q = {n: PG_QUERIES[n] + ";\n" for n in names}

    # ---------------------------------------------------------------- 2. round trips
    section(f"2. query round trips per second, no concurrent writes (pgbench -M prepared, {a.seconds} s each)")
    rows = []
    print_row(["query", "ss 1 conn", "PG 1 conn", "ratio", "ss 2 conn", "PG 2 conn", "ratio",
               "Umbra 4.4", "ss1/Umbra", "PDB 4.4"])
    for n in names:
        line = [n]
        for clients in (1, 2):
            sv = pgbench(s.ss_port, ss_q[n], clients, a.seconds) if n in ss_q else None
            pv = pgbench(s.pg_port, pg_q[n], clients, a.seconds) if pg is not None else None
            line += [fmt_rate(sv), fmt_rate(pv), ratio(sv, pv)]
            if clients == 1:
                line1 = sv
        line += [fmt_rate(UMBRA_QPS[n]), ratio(line1, UMBRA_QPS[n]), fmt_rate(PDB_QPS[n])]
        rows.append(line)
        print_row(line)

    # read latency of a view with new input since its last read (merge + upper pipelines), vs cached
    print()
    print(f"splitstream read latency per view: cached (no new input) vs after a {a.refresh_rows}-event COPY "
          f"(median of {a.refresh_reps}, ms)")
    lat = []
    for n in created:
        cached, fresh = [], []
        for _ in range(a.refresh_reps):
            t0 = time.perf_counter()
            ss.execute(f"SELECT * FROM aim_{n}").fetchall()
            cached.append(time.perf_counter() - t0)
            copy_chunk(ss, "events", cur["ss"].take(a.refresh_rows)[0])
            t0 = time.perf_counter()
            ss.execute(f"SELECT * FROM aim_{n}").fetchall()
            fresh.append(time.perf_counter() - t0)
        if pg is not None:
            copy_chunk(pg, "events", cur["pg"].take(a.refresh_rows * a.refresh_reps)[0])
        lat.append([n, f"{1000 * float(np.median(cached)):.2f}", f"{1000 * float(np.median(fresh)):.2f}"])
    table(["view", "cached ms", "after insert ms"], lat, [8, 12, 18])

    # ---------------------------------------------------------------- 3. under writes
    section(f"3. query throughput (Q1-Q7 mixed, equal probability, 1 pgbench connection, {a.seconds} s) "
            "while a paced writer COPYs events")
    out = []
    for rate in rates:
        line = [f"{rate:,}/s"]
        for label, port, scripts in (("ss", s.ss_port, list(ss_q.values())),
                                     ("pg", s.pg_port, list(pg_q.values()) if pg is not None else None)):
            if port is None or not scripts:
                line += ["-", "-"]
                continue
            w = PacedWriter(port, "events", cur[label], rate)
            w.start()
            time.sleep(0.3)
            q = pgbench(port, scripts, 1, a.seconds)
            w.stop.set()
            w.join()
            achieved = w.sent / w.elapsed if w.elapsed else 0
            line += [fmt_rate(q), fmt_rate(achieved) + ("" if w.error is None else " ERR")]
            if w.error is not None:
                print(f"  writer into {label} failed: {w.error}")
        out.append(line)
    table(["insert rate", "ss q/s", "ss events/s done", "PG q/s", "PG events/s done"], out, [14, 10, 18, 10, 18])
    print("reference, thesis Fig. 4.8: Umbra answers queries at roughly Table 4.4's rate under 10K and 50K events/s")

    # ---------------------------------------------------------------- 4. isolated ingest
    section(f"4. isolated ingest, all six views attached, COPY batches of {a.batch:,} events ({a.events:,} events)")
    ing = {}
    for label, conn, c in (("splitstream", ss, cur["ss"]), ("PostgreSQL trigger", pg, cur["pg"])):
        if conn is None:
            continue
        before = rss_kb(s.ss_pid)
        sent = 0
        t0 = time.perf_counter()
        try:
            while sent < a.events:
                data, n = c.take(min(a.batch, a.events - sent))
                copy_chunk(conn, "events", data)
                sent += n
            ing[label] = sent / (time.perf_counter() - t0)
        except psycopg.Error as e:
            print(f"  {label} FAILED after {sent:,} events: {e}")
            ing[label] = None
        if label == "splitstream":
            print(f"splitstream RSS {before / 1024:.1f} -> {rss_kb(s.ss_pid) / 1024:.1f} MiB")
    sv, pv = ing.get("splitstream"), ing.get("PostgreSQL trigger")
    table(["system", "events/s", "ratio"], [
        ["splitstream (6 CVs)", fmt_rate(sv), "1.00"],
        ["PostgreSQL 15 trigger aggregate", fmt_rate(pv), ratio(pv, sv)],
        ["Umbra, thesis Fig. 4.9 (target)", fmt_rate(UMBRA_INGEST), ratio(UMBRA_INGEST, sv)],
    ], [34, 12, 8])
    print(f"splitstream / PostgreSQL trigger = {ratio(sv, pv)} (target >= 2.0); "
          f"splitstream / Umbra 1.5M = {ratio(sv, UMBRA_INGEST)} (target >= 1.0)")

    # ---------------------------------------------------------------- 5. results
    section("5. results after all phases (splitstream view vs PostgreSQL aggregate query)")
    if pg is not None:   # the paced phase sent different counts: let the one behind catch up
        lag = cur["ss"].total - cur["pg"].total
        behind, conn = (cur["pg"], pg) if lag > 0 else (cur["ss"], ss)
        for _ in range(0, abs(lag), a.batch):
            data, n = behind.take(min(a.batch, abs(cur["ss"].total - cur["pg"].total)))
            copy_chunk(conn, "events", data)
        print(f"events sent: splitstream {cur['ss'].total:,}, PostgreSQL {cur['pg'].total:,}")
    total = ss.execute("SELECT rows_accepted FROM splitstream.streams WHERE name = 'events'").fetchone()
    print(f"events accepted by the stream: {fmt_rate(total[0]) if total else '-'}")
    for n in names:
        sres = read_sorted(ss, f"SELECT * FROM aim_{n}") if n in created else None
        pres = read_sorted(pg, PG_QUERIES[n]) if pg is not None else None
        same = same_rows(sres, pres) if sres is not None and pres is not None else None
        print(f"  {n}: {len(sres) if sres is not None else '-'} rows; "
              f"{'match' if same else 'DIFFER' if same is False else 'not compared'}"
              f"{'' if same or sres is None or pres is None else f'  ss={sres[:3]} pg={pres[:3]}'}")
    vw = query_dicts(ss, "SELECT name, groups, state_bytes, bytes_per_group, rows_in FROM splitstream.views "
                         "ORDER BY name")
    if vw:
        table(["view", "groups", "state bytes", "B/group", "rows in"],
              [[r["name"], fmt_rate(r["groups"]), fmt_rate(r["state_bytes"]),
                f"{r['bytes_per_group']:.1f}" if r["bytes_per_group"] else "-", fmt_rate(r["rows_in"])] for r in vw],
              [12, 12, 16, 10, 14])
    print(f"splitstream RSS at the end: {rss_kb(s.ss_pid) / 1024:.1f} MiB; {machine_note()}")


def print_row(line: list) -> None:
    widths = [7, 11, 11, 7, 11, 11, 7, 11, 11, 9]
    print("".join(str(c).ljust(widths[0]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(line)),
          flush=True)


def read_sorted(conn, sql: str) -> list[tuple] | None:
    import psycopg

    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return sorted(cur.fetchall(), key=lambda r: tuple((x is None, str(x)) for x in r))
    except psycopg.Error as e:
        print(f"  query failed: {e}")
        return None


def same_rows(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if x is None or y is None:
                if x is not y:
                    return False
                continue
            try:
                fx, fy = float(x), float(y)
                if not math.isclose(fx, fy, rel_tol=1e-6, abs_tol=1e-6):
                    return False
            except (TypeError, ValueError):
                if str(x).strip() != str(y).strip():
                    return False
    return True


if __name__ == "__main__":
    sys.exit(main())
