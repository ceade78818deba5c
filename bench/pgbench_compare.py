"""pgbench against splitstream and a PostgreSQL 15 started here, same scripts (issue 19).

    python -m bench.pgbench_compare [--seconds 5] [--clients 1,2,8,32,128] [--cases stream,table,select]

Cases, each a one-row prepared statement (``pgbench -M prepared``), with the
tps of both sides and the ratio splitstream / PostgreSQL per client count:

* ``stream``: INSERT into a stream with three continuous views, fsync on,
  against PostgreSQL's INSERT into an UNLOGGED table (issue 19's target:
  ratio >= 1.0 from 8 clients, >= 0.8 at 1 and 2);
* ``table``: INSERT into a logged table on both sides, fsync on (target >= 1.0);
* ``select``: SELECT 1 (the protocol's floor).

PostgreSQL runs with its default settings except ``max_connections``
(raised to 200 so that 128 clients can connect; it does not change the
cost of an insert).  splitstream's CPU seconds per statement are printed
too (the server's user + system time over the run / statements).
"""
from __future__ import annotations

import argparse
import os
import sys

from .common import Servers, pgbench, psql, rss_kb

#: name -> (splitstream setup, PostgreSQL setup, pgbench script)
CASES: dict[str, tuple[list[str], list[str], str]] = {
    "stream": (["CREATE FOREIGN TABLE bench_s (a int, b int) SERVER stream",
                "CREATE VIEW bench_v1 AS SELECT a, count(*) FROM bench_s GROUP BY a",
                "CREATE VIEW bench_v2 AS SELECT count(*), sum(b), max(b) FROM bench_s",
                "CREATE VIEW bench_v3 AS SELECT b % 10 AS k, avg(a) FROM bench_s GROUP BY b % 10"],
               ["CREATE UNLOGGED TABLE bench_s (a int, b int)"],
               "INSERT INTO bench_s VALUES (:client_id, 2);\n"),
    "table": (["CREATE TABLE bench_t (a int, b int)"], ["CREATE TABLE bench_t (a int, b int)"],
              "INSERT INTO bench_t VALUES (:client_id, 2);\n"),
    "select": ([], [], "SELECT 1;\n"),
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pgbench_compare")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--clients", default="1,2,8,32,128")
    ap.add_argument("--cases", default="stream,table,select")
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="splitstream --fsync (default on)")
    ap.add_argument("--memory", action="store_true", help="also measure RSS with 500 idle connections")
    a = ap.parse_args(argv)
    clients = [int(c) for c in a.clients.split(",")]
    cases = [c for c in a.cases.split(",") if c]
    print(f"# pgbench_compare: {a.seconds} s per run, splitstream --fsync {a.fsync}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other work on the machine skews both sides)")
    with Servers(fsync=a.fsync, pg_settings={"max_connections": "200"}) as s:
        print(f"splitstream idle RSS: {rss_kb(s.ss_pid) / 1024:.1f} MB")
        print(f"{'case':<8}{'clients':>8}{'splitstream tps':>17}{'postgres tps':>14}{'ratio':>7}{'ss CPU us/stmt':>16}")
        for name in cases:
            ss_setup, pg_setup, script = CASES[name]
            for sql in ss_setup:
                psql(s.ss_port, sql)
            for sql in pg_setup:
                psql(s.pg_port, sql)
            for n in clients:
                cpu0 = cpu_seconds(s.ss_pid)
                ss = pgbench(s.ss_port, script, n, a.seconds)
                cpu = (cpu_seconds(s.ss_pid) - cpu0) / max(ss * a.seconds, 1) * 1e6
                pg = pgbench(s.pg_port, script, n, a.seconds)
                print(f"{name:<8}{n:>8}{ss:>17.0f}{pg:>14.0f}{(ss / pg if pg else 0):>7.2f}{cpu:>16.0f}", flush=True)
        if a.memory:
            idle_connections_memory(s.ss_port, s.ss_pid)
    return 0


def idle_connections_memory(port: int, pid: int, n: int = 500) -> None:
    """Resident memory idle and with ``n`` idle connections (targets: < 150 MB, < 100 KB each)."""
    import time

    import psycopg

    before = rss_kb(pid)
    conns = []
    try:
        for _ in range(n):
            conns.append(psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True))
        time.sleep(1)
        after = rss_kb(pid)
    finally:
        for c in conns:
            c.close()
    print(f"splitstream RSS idle {before / 1024:.1f} MB; with {len(conns)} idle connections {after / 1024:.1f} MB "
          f"({(after - before) / max(len(conns), 1):.1f} KB per connection)")


if __name__ == "__main__":
    sys.exit(main())
