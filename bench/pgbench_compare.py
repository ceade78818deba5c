"""pgbench against splitstream and a PostgreSQL 15 started here, same scripts.

    python -m bench.pgbench_compare [--seconds 5]

Prints tps for SELECT 1 and a one-row prepared INSERT, with 1 and 2 clients,
and the ratio splitstream / PostgreSQL.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PG_BIN = "/usr/lib/postgresql/15/bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def start_postgres(port: int) -> str:
    d = tempfile.mkdtemp(prefix="bench-pg-", dir="/tmp")
    os.chmod(d, 0o755)
    shutil.chown(d, "postgres")
    run = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run + [f"{PG_BIN}/initdb", "-D", f"{d}/data", "-A", "trust", "-U", "postgres"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(run + [f"{PG_BIN}/pg_ctl", "-D", f"{d}/data", "-o", f"-p {port} -k {d} -c listen_addresses=127.0.0.1",
                          "-w", "-l", f"{d}/log", "start"], check=True, stdout=subprocess.DEVNULL)
    return d


def stop_postgres(d: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/pg_ctl", "-D", f"{d}/data", "-m", "fast", "stop"],
                   stdout=subprocess.DEVNULL)
    shutil.rmtree(d, ignore_errors=True)


def psql(port: int, sql: str) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-q", "-c", sql], check=True,
                   stdout=subprocess.DEVNULL)


def pgbench(port: int, script: str, clients: int, seconds: int) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    out = subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-n", "-M", "prepared",
                          "-f", f.name, "-c", str(clients), "-j", str(clients), "-T", str(seconds), "postgres"],
                         capture_output=True, text=True)
    m = re.search(r"tps = ([\d.]+)", out.stdout)
    return float(m.group(1)) if m else 0.0


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args(argv)
    ss_port, pg_port = free_port(), free_port()
    ss_dir = tempfile.mkdtemp(prefix="bench-ss-")
    ss = subprocess.Popen([sys.executable, "-m", "server", "serve", "--port", str(ss_port), "--data-dir", ss_dir],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pg_dir = start_postgres(pg_port)
    try:
        wait_port(ss_port)
        for port, unlogged in ((ss_port, ""), (pg_port, "UNLOGGED ")):
            psql(port, f"CREATE {unlogged}TABLE bench_ins (a int, b int)")
        print(f"splitstream idle RSS: {rss_kb(ss.pid) / 1024:.1f} MB")
        cases = [("SELECT 1", "SELECT 1;\n"), ("prepared INSERT", "INSERT INTO bench_ins VALUES (1, 2);\n")]
        print(f"{'case':<18}{'clients':>8}{'splitstream tps':>18}{'postgres tps':>15}{'ratio':>8}")
        for name, script in cases:
            for clients in (1, 2):
                s = pgbench(ss_port, script, clients, a.seconds)
                p = pgbench(pg_port, script, clients, a.seconds)
                print(f"{name:<18}{clients:>8}{s:>18.0f}{p:>15.0f}{(s / p if p else 0):>8.2f}")
    finally:
        ss.terminate()
        ss.wait(timeout=30)
        stop_postgres(pg_dir)
        shutil.rmtree(ss_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
