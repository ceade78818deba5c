"""pgbench against splitstream and a PostgreSQL 15 started here, same scripts.

    python -m bench.pgbench_compare [--seconds 5]

Prints tps for SELECT 1 and a one-row prepared INSERT, with 1 and 2 clients,
and the ratio splitstream / PostgreSQL.
"""
from __future__ import annotations

import argparse
import sys

from .common import Servers, pgbench, psql, rss_kb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pgbench_compare")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--fsync", choices=("on", "off"), default="on", help="splitstream --fsync (default on)")
    a = ap.parse_args(argv)
    print(f"# pgbench_compare: {a.seconds} s per case, splitstream --fsync {a.fsync}")
    with Servers(fsync=a.fsync) as s:
        # both sides UNLOGGED, as in the brief's PostgreSQL figure
        for port in (s.ss_port, s.pg_port):
            psql(port, "CREATE UNLOGGED TABLE bench_ins (a int, b int)")
        print(f"splitstream idle RSS: {rss_kb(s.ss_pid) / 1024:.1f} MB")
        cases = [("SELECT 1", "SELECT 1;\n"), ("prepared INSERT", "INSERT INTO bench_ins VALUES (1, 2);\n")]
        print(f"{'case':<18}{'clients':>8}{'splitstream tps':>18}{'postgres tps':>15}{'ratio':>8}")
        for name, script in cases:
            for clients in (1, 2):
                ss = pgbench(s.ss_port, script, clients, a.seconds)
                pg = pgbench(s.pg_port, script, clients, a.seconds)
                print(f"{name:<18}{clients:>8}{ss:>18.0f}{pg:>15.0f}{(ss / pg if pg else 0):>8.2f}", flush=True)
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
