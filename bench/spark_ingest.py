"""Spark -> splitstream ingest, three ways (issue 7).

Writes N rows (default 10 million) from Spark ``local[2]`` into a stream
with a grouped continuous view of at most 10,000 groups:

1. ``jdbc``      -- ``df.write.jdbc`` through pgjdbc with default settings (Spark's
                    batchsize 1000, one prepared INSERT executed per row, ~256 pipelined
                    Bind/Describe/Execute cycles per Sync; the server reads each run of them
                    as one, protocol/bind_runs.py, and coalesces the Executes up to Sync,
                    executor/insert_batching.py); ``--jdbc-rewrite`` adds reWriteBatchedInserts=true;
2. ``copy``      -- ``connectors.spark.write`` (binary COPY from the executors);
3. ``pushdown``  -- ``connectors.spark.write(..., pushdown=True)``: executors
   run the view's stream pipeline and ship partial group states.

Timed runs connect straight to the server.  "Bytes sent" is measured by an
untimed run of ``--bytes-rows`` rows through a byte-counting TCP proxy:
everything the client sent to the server (protocol overhead included).  The
proxy is Python threads in the Spark driver's process, so it caps a
round-trip-bound client (pgjdbc waits for each Sync's answers) at what the
proxy relays; timing through it measured the proxy (~12-14k rows/s
whatever the server did).
Prints rows/s and bytes per method and the ratios against JDBC; checks the
view's count after each method.

    python -m bench.spark_ingest [--rows N] [--jdbc-rows N] [--groups G] [--only jdbc,copy,pushdown]
                                 [--jdbc-rewrite] [--fsync on|off] [--warmup N] [--repeat K]

``--warmup N`` first writes N rows by each method untimed (the JVM's JIT and
Spark's first job otherwise dominate a short run); ``--repeat K`` times each
method K times (each line is one run).
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PGJDBC = "/usr/share/java/postgresql.jar"


class CountingProxy:
    """Loopback TCP proxy counting bytes client->server and server->client."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.up = 0
        self.down = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            s = socket.create_connection(self.target)
            for a, b, up in ((c, s, True), (s, c, False)):
                threading.Thread(target=self._pipe, args=(a, b, up), daemon=True).start()

    def _pipe(self, a, b, up: bool) -> None:
        try:
            while True:
                data = a.recv(1 << 20)
                if not data:
                    break
                with self.lock:
                    if up:
                        self.up += len(data)
                    else:
                        self.down += len(data)
                b.sendall(data)
        except OSError:
            pass
        finally:
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def reset(self) -> tuple[int, int]:
        with self.lock:
            r = (self.up, self.down)
            self.up = self.down = 0
            return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--jdbc-rows", type=int, default=None, help="rows for the JDBC method (default: --rows)")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--only", default="jdbc,copy,pushdown")
    ap.add_argument("--port", type=int, default=None, help="use a running server instead of starting one")
    ap.add_argument("--jdbc-rewrite", action="store_true", help="pgjdbc reWriteBatchedInserts=true")
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="server WAL fsync (default on)")
    ap.add_argument("--warmup", type=int, default=0, help="rows written untimed by each method first")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per method")
    ap.add_argument("--bytes-rows", type=int, default=50_000, help="rows of the untimed run that counts bytes")
    args = ap.parse_args(argv)
    methods = [m.strip() for m in args.only.split(",") if m.strip()]

    import psycopg

    from bench.common import Servers

    servers = None
    if args.port is None:
        servers = Servers(pg=False, fsync=args.fsync).__enter__()
        port = servers.ss_port
    else:
        port = args.port
    proxy = CountingProxy(port)
    direct = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    urls = {via: (f"postgresql://postgres@127.0.0.1:{p}/postgres", f"jdbc:postgresql://127.0.0.1:{p}/postgres")
            for via, p in ((False, port), (True, proxy.port))}

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from splitstream.connectors.spark import write

    t = time.perf_counter()
    spark = (SparkSession.builder.master("local[2]").appName("splitstream-bench")
             .config("spark.jars", PGJDBC).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark started in {time.perf_counter() - t:.1f}s")

    conn = psycopg.connect(direct, autocommit=True)
    conn.execute("DROP VIEW IF EXISTS bench_spark_v")
    conn.execute("DROP TABLE IF EXISTS bench_spark_ev")
    conn.execute("CREATE FOREIGN TABLE bench_spark_ev (entity_id int, duration int, cost float8, kind int) SERVER stream")
    conn.execute("CREATE VIEW bench_spark_v AS SELECT entity_id, count(*) AS calls, sum(duration) AS dur, "
                 "sum(cost) AS cost, min(cost) AS min_cost, max(duration) AS max_dur FROM bench_spark_ev "
                 "GROUP BY entity_id")

    def frame(n):
        return spark.range(n, numPartitions=args.partitions).selectExpr(
            f"cast(id % {args.groups} as int) as entity_id", "cast(id % 1000 as int) as duration",
            "cast(id % 400 as double) / 4 as cost", "cast(id % 7 as int) as kind")

    def view_count():
        return int(conn.execute("SELECT coalesce(sum(calls), 0) FROM bench_spark_v").fetchone()[0])

    def run(m: str, df, via_proxy: bool = False) -> None:
        url, jdbc = urls[via_proxy]
        if m == "jdbc":
            props = {"user": "postgres", "driver": "org.postgresql.Driver"}
            if args.jdbc_rewrite:
                props["reWriteBatchedInserts"] = "true"
            df.write.jdbc(jdbc, "bench_spark_ev", mode="append", properties=props)
        elif m == "copy":
            write(df, "bench_spark_ev", url)
        elif m == "pushdown":
            r = write(df, "bench_spark_ev", url, pushdown=True)
            assert r.mode == "pushdown", r.reason
        else:
            raise SystemExit(f"unknown method {m}")

    def bytes_per_row(m: str) -> float:
        """Bytes the client sends per row, counted by the proxy in an untimed run."""
        proxy.reset()
        run(m, frame(args.bytes_rows), via_proxy=True)
        return proxy.reset()[0] / args.bytes_rows

    results = {}
    per_row: dict[str, float] = {}
    for m in [m for m in methods for _ in range(args.repeat)]:
        if m not in per_row:
            if args.warmup:
                run(m, frame(args.warmup))
            per_row[m] = bytes_per_row(m)
        n = (args.jdbc_rows or args.rows) if m == "jdbc" else args.rows
        df = frame(n)
        before = view_count()
        t = time.perf_counter()
        run(m, df)
        secs = time.perf_counter() - t
        up = int(per_row[m] * n)
        got = view_count() - before
        ok = "ok" if got == n else f"MISMATCH (view grew by {got})"
        results[m] = (n, secs, up)
        print(f"{m:9s} {n:>11,d} rows  {secs:8.2f} s  {n / secs:>13,.0f} rows/s  {up:>14,d} bytes sent "
              f"({up / n:8.3f} B/row)  view count {ok}", flush=True)
    if "jdbc" in results:
        jn, js, jb = results["jdbc"]
        for m in ("copy", "pushdown"):
            if m in results:
                n, s, b = results[m]
                print(f"{m} vs jdbc: {(n / s) / (jn / js):.1f}x rows/s, {(jb / jn) / (b / n):.0f}x fewer bytes per row")
    spark.stop()
    conn.close()
    if servers is not None:
        servers.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
