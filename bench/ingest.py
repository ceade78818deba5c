"""Ingest into a splitstream stream vs a PostgreSQL 15 unlogged table (issue 4),
and the trigger comparison of MISSION.md.

    python -m bench.ingest [--rows 10000000] [--groups 1000] [--insert-seconds 5] [--repeat 3]

A CSV of six integer columns (a in [0, groups), b..f in [0, 1e6)) is written
once with DuckDB.  Each case ingests all of it into a fresh target:

    splitstream stream             CREATE FOREIGN TABLE ... SERVER stream, no view
    splitstream stream + CV        the same with  CREATE VIEW .. SELECT a, count(*), sum(b), sum(c) .. GROUP BY a
    PG15 unlogged table            CREATE UNLOGGED TABLE
    PG15 trigger aggregate         unlogged table + statement-level trigger (REFERENCING NEW TABLE)
                                   upserting the same grouped aggregate into an unlogged table

through psql \\copy and through psycopg COPY (large chunks).  Then multi-row
INSERT (--insert-batch rows per statement) and prepared single-row INSERT
(pgbench -M prepared, 1 and 2 clients; psycopg executemany) into the same four
targets.  Memory (issue 4: "a stream holds its capacity times its row width,
plus the live string bytes, and nothing else"; "ingest must not grow the
server's memory beyond it, whatever the volume"):

  * splitstream.streams while a scan keeps the ring in use: bytes held against
    capacity x row width + string bytes (+ NULL flags), and bytes per slot;
  * the server's RSS before, after every phase, and after --repeat further
    psql \\copy runs of the whole CSV into one stream (RSS must stay flat).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

from .common import (Servers, connect, copy_file, fmt_rate, human_bytes, machine_note, pgbench, psql_copy,
                     query_dicts, query_one, ratio, rss_kb, section, table)

COLS = "(a int, b int, c int, d int, e int, f int)"
ROW_WIDTH = 6 * 4 + 8          # six int4 + the implicit arrival_timestamp
CV_SQL = "SELECT a, count(*) AS cnt, sum(b) AS sb, sum(c) AS sc FROM {s} GROUP BY a"

PG_TRIGGER = """
CREATE UNLOGGED TABLE {t} {cols};
CREATE UNLOGGED TABLE {t}_agg (a int PRIMARY KEY, cnt bigint, sb bigint, sc bigint);
CREATE FUNCTION {t}_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {t}_agg SELECT a, count(*), sum(b), sum(c) FROM new_rows GROUP BY a
  ON CONFLICT (a) DO UPDATE SET cnt = {t}_agg.cnt + excluded.cnt, sb = {t}_agg.sb + excluded.sb,
                                sc = {t}_agg.sc + excluded.sc;
  RETURN NULL;
END $$;
CREATE TRIGGER {t}_tr AFTER INSERT ON {t} REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {t}_fn();
"""

TARGETS = ["ss_stream", "ss_cv", "pg_unlogged", "pg_trigger"]
LABEL = {"ss_stream": "splitstream stream", "ss_cv": "splitstream stream + CV",
         "pg_unlogged": "PG15 unlogged table", "pg_trigger": "PG15 trigger aggregate"}


# ------------------------------------------------------------------ data

def write_csv(path: str, rows: int, groups: int, seed: int = 42) -> tuple[int, int]:
    """Write the CSV with DuckDB; return (sum(b), sum(c)) for checking views."""
    import duckdb

    con = duckdb.connect()
    con.sql(f"SELECT setseed({(seed % 1000) / 1000})")
    con.sql(f"""CREATE TABLE g AS SELECT (i % {groups})::INT AS a,
                   (random() * 1000000)::INT AS b, (random() * 1000000)::INT AS c,
                   (random() * 1000000)::INT AS d, (random() * 1000000)::INT AS e,
                   (random() * 1000000)::INT AS f
                FROM range({rows}) t(i)""")
    con.sql(f"COPY g TO '{path}' (FORMAT csv, HEADER false)")
    sb, sc = con.sql("SELECT sum(b), sum(c) FROM g").fetchone()
    con.close()
    return int(sb), int(sc)


class RssSampler:
    """Peak RSS of a process, sampled every 20 ms in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, rss_kb(pid), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_kb(self.pid))

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_kb(self.pid))


# ------------------------------------------------------------------ targets

class Bench:
    def __init__(self, s: Servers, a) -> None:
        self.s, self.a = s, a
        self.ss = connect(s.ss_port)
        self.pg = connect(s.pg_port)
        self.n = 0

    def make(self, kind: str) -> tuple[int, str, object]:
        """Create a fresh target; return (port, name, connection)."""
        self.n += 1
        name = f"{kind}_{self.n}"
        if kind.startswith("ss"):
            opts = f" OPTIONS (capacity '{self.a.capacity}')" if self.a.capacity else ""
            self.ss.execute(f"CREATE FOREIGN TABLE {name} {COLS} SERVER stream{opts}")
            if kind == "ss_cv":
                self.ss.execute(f"CREATE VIEW {name}_v AS " + CV_SQL.format(s=name))
            return self.s.ss_port, name, self.ss
        if kind == "pg_unlogged":
            self.pg.execute(f"CREATE UNLOGGED TABLE {name} {COLS}")
        else:
            self.pg.execute(PG_TRIGGER.format(t=name, cols=COLS))
        return self.s.pg_port, name, self.pg

    def agg_totals(self, kind: str, name: str) -> tuple | None:
        """(groups, sum cnt, sum sb, sum sc) read back from the view / aggregate table, and the read time."""
        if kind == "ss_cv":
            conn, rel = self.ss, f"{name}_v"
        elif kind == "pg_trigger":
            conn, rel = self.pg, f"{name}_agg"
        else:
            return None
        t0 = time.perf_counter()
        r = query_one(conn, f"SELECT count(*), sum(cnt), sum(sb), sum(sc) FROM {rel}")
        return tuple(int(x or 0) for x in r), time.perf_counter() - t0


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ingest")
    ap.add_argument("--rows", type=int, default=10_000_000, help="CSV rows (default 10M)")
    ap.add_argument("--groups", type=int, default=1000, help="distinct keys of the grouped view (default 1000)")
    ap.add_argument("--chunk", type=int, default=8 << 20, help="psycopg COPY write size in bytes (default 8 MiB)")
    ap.add_argument("--insert-seconds", type=int, default=5, help="duration of each INSERT case (default 5)")
    ap.add_argument("--insert-batch", type=int, default=1000, help="rows per multi-row INSERT (default 1000)")
    ap.add_argument("--executemany-rows", type=int, default=200, help="rows per psycopg executemany call (default 200)")
    ap.add_argument("--capacity", type=int, default=0, help="stream capacity option (default: server default)")
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="splitstream --fsync (default on)")
    ap.add_argument("--csv", default=None, help="reuse/keep this CSV file")
    ap.add_argument("--skip-psql", action="store_true", help="skip the psql \\copy cases")
    ap.add_argument("--skip-insert", action="store_true", help="skip the INSERT cases")
    ap.add_argument("--skip-scan", action="store_true", help="skip COPY with a listening session-window scan")
    ap.add_argument("--repeat", type=int, default=3, help="psql \\copy runs of the whole CSV into one stream at the "
                                                       "end, RSS after each (default 3)")
    a = ap.parse_args(argv)

    tmp = None
    path = a.csv
    if path is None:
        tmp = tempfile.mkdtemp(prefix="bench-ingest-")
        path = os.path.join(tmp, "six_ints.csv")
    print(f"# bench.ingest: {a.rows:,} rows x 6 int columns, {a.groups:,} groups, psycopg COPY chunk "
          f"{human_bytes(a.chunk)}, splitstream --fsync {a.fsync}; {machine_note()}")
    t0 = time.perf_counter()
    sb, sc = write_csv(path, a.rows, a.groups)
    print(f"CSV written by DuckDB in {time.perf_counter() - t0:.1f} s: {path} ({human_bytes(os.path.getsize(path))})")
    expected = (min(a.groups, a.rows), a.rows, sb, sc)

    try:
        with Servers(fsync=a.fsync) as s:
            b = Bench(s, a)
            run(b, s, a, path, expected)
    finally:
        if tmp:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def run(b: Bench, s: Servers, a, path: str, expected: tuple) -> None:
    rows = a.rows
    copy_rates: dict[tuple[str, str], float] = {}
    mem_rows = []
    checks = []
    idle = rss_kb(s.ss_pid)
    phases: list[list[str]] = [["idle (server started)", f"{idle / 1024:.1f}", "-"]]
    print(f"splitstream idle RSS: {idle / 1024:.1f} MiB")

    # ---------------------------------------------------------------- COPY
    section("COPY of the CSV (rows/s)")
    methods = ([] if a.skip_psql else [("psql \\copy", "psql")]) + [("psycopg COPY", "psycopg")]
    for mlabel, method in methods:
        for kind in TARGETS:
            port, name, conn = b.make(kind)
            before = rss_kb(s.ss_pid)
            with RssSampler(s.ss_pid) as samp:
                t0 = time.perf_counter()
                try:
                    if method == "psql":
                        psql_copy(port, name, path)
                    else:
                        copy_file(conn, name, path, a.chunk)
                    dt = time.perf_counter() - t0
                    rate = rows / dt
                except Exception as e:  # a product failure: report and carry on
                    print(f"  {mlabel} into {LABEL[kind]} FAILED: {str(e).strip()[:300]}")
                    rate = None
            copy_rates[(method, kind)] = rate
            if kind.startswith("ss"):
                mem_rows.append([f"{mlabel} -> {LABEL[kind]}", f"{before / 1024:.1f}", f"{rss_kb(s.ss_pid) / 1024:.1f}",
                                 f"{samp.peak / 1024:.1f}",
                                 f"{(rss_kb(s.ss_pid) - before) * 1024 / rows:.1f}" if rate else "-"])
            if rate is not None:
                tot = b.agg_totals(kind, name)
                if tot is not None:
                    (g, cnt, tsb, tsc), rd = tot
                    ok = (g, cnt, tsb, tsc) == expected
                    checks.append(f"{mlabel} -> {LABEL[kind]}: groups={g:,} count={cnt:,} sum(b)={tsb:,} "
                                  f"first read {rd * 1000:.1f} ms  {'OK' if ok else 'MISMATCH, expected ' + str(expected)}")
        hdr = ["target", "rows/s", "vs PG unlogged", "vs PG trigger"]
        out = []
        for kind in TARGETS:
            r = copy_rates[(method, kind)]
            out.append([LABEL[kind], fmt_rate(r), ratio(r, copy_rates[(method, "pg_unlogged")]),
                        ratio(r, copy_rates[(method, "pg_trigger")])])
        print(f"-- {mlabel}")
        table(hdr, out, [28, 14, 16, 16])
        phases.append([f"after {mlabel} into the 4 targets", f"{rss_kb(s.ss_pid) / 1024:.1f}", "-"])
    print()
    print("aggregate check (view / trigger table vs the CSV):")
    for c in checks:
        print("  " + c)

    print()
    print("splitstream RSS around each COPY:")
    table(["COPY case", "RSS before MiB", "after MiB", "peak MiB", "growth B/row"], mem_rows, [48, 16, 12, 12, 14])

    section("Targets (COPY, same run)")
    tgt = []
    for mlabel, method in methods:
        cv = copy_rates[(method, "ss_cv")]
        tgt += [[f"{mlabel}: stream / PG COPY unlogged", ratio(copy_rates[(method, "ss_stream")],
                                                            copy_rates[(method, "pg_unlogged")]), ">= 1.0"],
                [f"{mlabel}: stream + CV / PG COPY unlogged", ratio(cv, copy_rates[(method, "pg_unlogged")]), ">= 1.0"],
                [f"{mlabel}: stream + CV / PG trigger aggregate", ratio(cv, copy_rates[(method, "pg_trigger")]),
                 ">= 2.0"]]
    table(["ratio", "measured", "target"], tgt, [52, 12, 10])

    # ---------------------------------------------------------------- scan listening during COPY
    if not a.skip_scan:
        section("psycopg COPY into a stream while a session-window scan listens (ring buffer in use)")
        port, name, conn = b.make("ss_stream")
        res = {}

        # A COPY delivers its rows at CopyDone (all or nothing), so the scan must
        # wait longer than the whole COPY for its first rows: twice the time the
        # same COPY took above (it ends that long after the last rows, too).
        prev = copy_rates.get(("psycopg", "ss_stream"))
        wait_s = max(5, int(2 * rows / prev) + 1) if prev else 60

        def scan():
            c = connect(s.ss_port)
            try:
                c.execute(f"SET stream_session_timeout = '{wait_s}s'")
                res["scan"] = query_one(c, f"SELECT count(*), sum(b) FROM {name}")
            except Exception as e:
                res["scan"] = f"error: {e}"
            finally:
                c.close()

        th = threading.Thread(target=scan)
        th.start()
        time.sleep(0.5)
        before = rss_kb(s.ss_pid)
        with RssSampler(s.ss_pid) as samp:
            t0 = time.perf_counter()
            try:
                copy_file(conn, name, path, a.chunk)
                dt = time.perf_counter() - t0
            except Exception as e:
                dt = None
                print(f"  COPY FAILED: {e}")
            st = query_dicts(b.ss, f"SELECT * FROM splitstream.streams WHERE name = '{name}'")
            th.join()
        print(f"rows/s with a listener: {fmt_rate(rows / dt) if dt else '-'}; "
              f"scan returned {res.get('scan')} (expected count {rows:,}, sum(b) {expected[2]:,})")
        print(f"RSS before {before / 1024:.1f} MiB, after {rss_kb(s.ss_pid) / 1024:.1f} MiB, peak {samp.peak / 1024:.1f} MiB "
              "(the scan result itself is materialised in the server)")
        phases.append(["after psycopg COPY with a listening scan (holds the scan's result)",
                       f"{rss_kb(s.ss_pid) / 1024:.1f}", f"{samp.peak / 1024:.1f}"])
        if st:
            print("splitstream.streams while the ring is full:")
            print_stream_bound(st)

    # ---------------------------------------------------------------- INSERT
    if not a.skip_insert:
        insert_cases(b, s, a, path)
        phases.append(["after the INSERT cases", f"{rss_kb(s.ss_pid) / 1024:.1f}", "-"])

    # ---------------------------------------------------------------- volume
    if a.repeat:
        section(f"psql \\copy of the whole CSV {a.repeat} more times into one stream: RSS must not grow with volume")
        port, name, _ = b.make("ss_stream")
        out = []
        for i in range(a.repeat):
            before = rss_kb(s.ss_pid)
            with RssSampler(s.ss_pid) as samp:
                t0 = time.perf_counter()
                psql_copy(port, name, path)
                dt = time.perf_counter() - t0
            after = rss_kb(s.ss_pid)
            out.append([f"run {i + 1}: {(i + 1) * rows:,} rows so far", fmt_rate(rows / dt), f"{before / 1024:.1f}",
                        f"{after / 1024:.1f}", f"{samp.peak / 1024:.1f}"])
            phases.append([f"after repeat run {i + 1} ({(i + 1) * rows:,} rows into {name})", f"{after / 1024:.1f}",
                           f"{samp.peak / 1024:.1f}"])
        table(["psql \\copy", "rows/s", "RSS before MiB", "after MiB", "peak MiB"], out, [40, 12, 16, 12, 12])

    # ---------------------------------------------------------------- memory
    section("splitstream memory")
    print(f"end: {machine_note()}")
    print("server RSS after each phase (MiB):")
    table(["phase", "RSS MiB", "peak MiB"], phases, [76, 10, 10])
    st = query_dicts(b.ss, "SELECT * FROM splitstream.streams ORDER BY name")
    if st is None:
        print("splitstream.streams: missing (skipped)")
    else:
        print("splitstream.streams (bytes_held is 0 until a scan first listens: only then is the ring allocated):")
        print_stream_bound(st)
    vw = query_dicts(b.ss, "SELECT name, groups, state_bytes, bytes_per_group, rows_in FROM splitstream.views ORDER BY name")
    if vw is None:
        print("splitstream.views: missing (skipped)")
    else:
        print("splitstream.views:")
        table(["view", "groups", "state bytes", "B/group", "rows in"],
              [[r["name"], fmt_rate(r["groups"]), fmt_rate(r["state_bytes"]),
                f"{r['bytes_per_group']:.1f}" if r["bytes_per_group"] else "-", fmt_rate(r["rows_in"])] for r in vw],
              [18, 10, 14, 10, 14])


def print_stream_bound(st: list[dict]) -> None:
    """bytes held (splitstream.streams) against capacity x row width + string bytes (+ NULL flags)."""
    out = []
    for r in st:
        cap, held = r.get("capacity") or 0, r.get("bytes_held") or 0
        width, strings, flags = r.get("row_width"), r.get("string_bytes") or 0, r.get("null_flag_bytes") or 0
        bound = cap * width + strings + flags if width is not None else None
        ok = "-" if not held else ("within" if bound is not None and held <= bound else "OVER")
        out.append([r["name"], fmt_rate(r.get("rows_accepted")), fmt_rate(cap), fmt_rate(r.get("fill")),
                    fmt_rate(width), fmt_rate(strings), fmt_rate(flags), fmt_rate(bound), fmt_rate(held),
                    f"{held / cap:.1f}" if cap and held else "-", ok])
    table(["stream", "rows accepted", "capacity", "fill", "row width", "string B", "null flag B",
           "bound B", "bytes held", "B/slot", ""], out, [16, 15, 11, 11, 10, 10, 12, 14, 14, 8, 8])
    print("  (bound = capacity x row width + string bytes + NULL flag bytes; row width = declared slot width, "
          f"here {ROW_WIDTH} B: six int4 + the arrival_timestamp)")


NOSYNC = "-c synchronous_commit=off"


def insert_cases(b: Bench, s: Servers, a, path: str) -> None:
    """Multi-row INSERT, pgbench prepared single-row INSERT, psycopg executemany.

    splitstream acknowledges a stream insert after its WAL record is fsynced
    (synchronous_commit=on, the default); PostgreSQL's unlogged table writes no WAL
    at all.  So the single-row cases run splitstream both ways."""
    import psycopg

    ss_nosync = connect(s.ss_port, options=NOSYNC)
    variants = [("ss_stream", None), ("ss_cv", None), ("ss_stream", NOSYNC), ("ss_cv", NOSYNC),
                ("pg_unlogged", None), ("pg_trigger", None)]

    def vlabel(kind, opt):
        return LABEL[kind] + (" (sync off)" if opt else "")

    view_checks = []

    def check_view(kind, name, inserted=None):
        if kind != "ss_cv":
            return
        before = query_dicts(b.ss, f"SELECT rows_in, groups FROM splitstream.views WHERE name = '{name}_v'")
        acc = query_one(b.ss, f"SELECT rows_accepted FROM splitstream.streams WHERE name = '{name}'")
        cnt = query_one(b.ss, f"SELECT coalesce(sum(cnt), 0) FROM {name}_v")[0]
        after = query_dicts(b.ss, f"SELECT rows_in, groups FROM splitstream.views WHERE name = '{name}_v'")
        acc = acc[0] if acc else None
        ok = int(cnt) == (inserted if inserted is not None else acc)
        view_checks.append(f"{name}_v: stream accepted {fmt_rate(acc)}, view count {fmt_rate(int(cnt))} "
                           f"{'OK' if ok else 'MISMATCH'}; splitstream.views rows_in before read "
                           f"{fmt_rate(before[0]['rows_in']) if before else '-'}, after read "
                           f"{fmt_rate(after[0]['rows_in']) if after else '-'}")

    # multi-row INSERT: distinct statement texts built from the CSV, as a client would send them
    section(f"multi-row INSERT, {a.insert_batch} rows per statement, {a.insert_seconds} s per target (rows/s)")

    def statements(name):
        with open(path) as f:
            while True:
                lines = []
                for line in f:
                    lines.append(line.rstrip("\n"))
                    if len(lines) == a.insert_batch:
                        break
                if not lines:
                    f.seek(0)
                    continue
                yield f"INSERT INTO {name} VALUES (" + "),(".join(lines) + ")"

    rates = {}
    for kind, opt in variants:
        port, name, conn = b.make(kind)
        if opt:
            conn = ss_nosync
        gen = statements(name)
        n, t0 = 0, time.perf_counter()
        try:
            while time.perf_counter() - t0 < a.insert_seconds:
                conn.execute(next(gen))
                n += a.insert_batch
            rates[(kind, opt)] = n / (time.perf_counter() - t0)
        except psycopg.Error as e:
            print(f"  {vlabel(kind, opt)} FAILED: {e}")
            rates[(kind, opt)] = None
        check_view(kind, name, n)
    base, trig = rates[("pg_unlogged", None)], rates[("pg_trigger", None)]
    table(["target", "rows/s", "vs PG unlogged", "vs PG trigger"],
          [[vlabel(k, o), fmt_rate(rates[(k, o)]), ratio(rates[(k, o)], base), ratio(rates[(k, o)], trig)]
           for k, o in variants], [40, 14, 16, 16])

    # prepared single-row INSERT through pgbench (random key, as the view groups on it)
    section(f"prepared single-row INSERT, pgbench -M prepared, {a.insert_seconds} s per case (rows/s = tps)")
    script = ("\\set a random(0, {g})\n\\set b random(0, 1000000)\n"
              "INSERT INTO {t} VALUES (:a, :b, 3, 4, 5, 6);\n")
    out = []
    for clients in (1, 2):
        r = {}
        for kind, opt in variants:
            port, name, _ = b.make(kind)
            r[(kind, opt)] = pgbench(port, script.format(g=a.groups - 1, t=name), clients, a.insert_seconds,
                                     options=opt)
            check_view(kind, name)
        base, trig = r[("pg_unlogged", None)], r[("pg_trigger", None)]
        for kind, opt in variants:
            v = r[(kind, opt)]
            out.append([f"{vlabel(kind, opt)}, {clients} cl.", fmt_rate(v), ratio(v, base), ratio(v, trig)])
    table(["target", "rows/s", "vs PG unlogged", "vs PG trigger"], out, [48, 12, 16, 16])

    # psycopg executemany (pipelined extended protocol), in chunks until --insert-seconds passed
    section(f"prepared single-row INSERT, psycopg executemany in chunks of {a.executemany_rows:,} rows, "
            f"{a.insert_seconds} s per target (rows/s)")
    rows = []
    with open(path) as f:
        for line in f:
            rows.append(tuple(int(x) for x in line.split(",")))
            if len(rows) == a.executemany_rows:
                break
    rates = {}
    for kind, opt in variants:
        port, name, conn = b.make(kind)
        if opt:
            conn = ss_nosync
        n, t0 = 0, time.perf_counter()
        try:
            with conn.cursor() as cur:
                while time.perf_counter() - t0 < a.insert_seconds:
                    cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, %s)", rows)
                    n += len(rows)
            rates[(kind, opt)] = n / (time.perf_counter() - t0)
        except psycopg.Error as e:
            print(f"  {vlabel(kind, opt)} FAILED: {e}")
            rates[(kind, opt)] = None
        check_view(kind, name, n)
    base, trig = rates[("pg_unlogged", None)], rates[("pg_trigger", None)]
    table(["target", "rows/s", "vs PG unlogged", "vs PG trigger"],
          [[vlabel(k, o), fmt_rate(rates[(k, o)]), ratio(rates[(k, o)], base), ratio(rates[(k, o)], trig)]
           for k, o in variants], [40, 12, 16, 16])
    print()
    print("continuous views after the INSERT cases (view count vs rows accepted; splitstream.views rows_in):")
    for c in view_checks:
        print("  " + c)
    ss_nosync.close()


if __name__ == "__main__":
    sys.exit(main())
