"""Helpers shared by the benchmarks: start splitstream and a PostgreSQL 15 side
by side on free ports, run psql / pgbench against either, connect with psycopg,
read a process's RSS, print aligned tables of figures and ratios.

Every benchmark in bench/ starts its own servers in temporary directories and
removes them at exit; nothing here touches ./data or the Debian cluster on 5432.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PG_BIN = "/usr/lib/postgresql/15/bin"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ processes

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


def start_postgres(port: int, settings: dict[str, str] | None = None) -> str:
    """initdb + pg_ctl start as user postgres in a fresh /tmp directory; returns the directory."""
    d = tempfile.mkdtemp(prefix="bench-pg-", dir="/tmp")
    os.chmod(d, 0o755)
    shutil.chown(d, "postgres")
    run = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run + [f"{PG_BIN}/initdb", "-D", f"{d}/data", "-A", "trust", "-U", "postgres"], check=True,
                   stdout=subprocess.DEVNULL)
    opts = f"-p {port} -k {d} -c listen_addresses=127.0.0.1"
    for k, v in (settings or {}).items():
        opts += f" -c {k}={v}"
    subprocess.run(run + [f"{PG_BIN}/pg_ctl", "-D", f"{d}/data", "-o", opts, "-w", "-l", f"{d}/log", "start"],
                   check=True, stdout=subprocess.DEVNULL)
    return d


def stop_postgres(d: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/pg_ctl", "-D", f"{d}/data", "-m", "fast", "stop"],
                   stdout=subprocess.DEVNULL)
    shutil.rmtree(d, ignore_errors=True)


def start_splitstream(port: int, fsync: str = "on", extra: list[str] | None = None,
                      log: str | None = None) -> tuple[subprocess.Popen, str]:
    """python -m splitstream serve on a fresh data directory; returns (process, data dir)."""
    d = tempfile.mkdtemp(prefix="bench-ss-")
    out = open(log, "ab") if log else subprocess.DEVNULL
    p = subprocess.Popen([sys.executable, "-m", "splitstream", "serve", "--port", str(port), "--data-dir", d,
                          "--fsync", fsync, "--log-level", "WARNING", "--max-connections", "1000", *(extra or [])],
                         stdout=out, stderr=out, cwd=ROOT)
    try:
        wait_port(port)
    except Exception:
        p.kill()
        raise
    return p, d


def stop_splitstream(p: subprocess.Popen, d: str) -> None:
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    shutil.rmtree(d, ignore_errors=True)


class Servers:
    """Context manager: a splitstream and (unless pg=False) a PostgreSQL 15, side by side.

        with Servers() as s:
            s.ss_port, s.pg_port, s.ss_pid
    """

    def __init__(self, pg: bool = True, ss: bool = True, fsync: str = "on",
                 pg_settings: dict[str, str] | None = None, ss_log: str | None = "auto") -> None:
        self.want_pg, self.want_ss, self.fsync = pg, ss, fsync
        self.pg_settings = pg_settings
        self.ss_log = ss_log
        self.ss_port = self.pg_port = None
        self.ss_proc = None
        self._ss_dir = self._pg_dir = None

    def __enter__(self) -> "Servers":
        try:
            if self.want_ss:
                self.ss_port = free_port()
                if self.ss_log == "auto":   # kept after the run: internal errors are explained there
                    self.ss_log = f"/tmp/bench-splitstream-{self.ss_port}.log"
                    print(f"(splitstream server log: {self.ss_log})", flush=True)
                self.ss_proc, self._ss_dir = start_splitstream(self.ss_port, self.fsync, log=self.ss_log)
            if self.want_pg:
                self.pg_port = free_port()
                self._pg_dir = start_postgres(self.pg_port, self.pg_settings)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.ss_proc is not None:
            stop_splitstream(self.ss_proc, self._ss_dir)
            self.ss_proc = None
        if self._pg_dir is not None:
            stop_postgres(self._pg_dir)
            self._pg_dir = None

    @property
    def ss_pid(self) -> int:
        return self.ss_proc.pid

    def ss_alive(self) -> bool:
        return self.ss_proc is not None and self.ss_proc.poll() is None


# ------------------------------------------------------------------ clients

def dsn(port: int) -> str:
    return f"host=127.0.0.1 port={port} user=postgres dbname=postgres"


def connect(port: int, autocommit: bool = True, options: str | None = None, prepare: bool = True):
    """psycopg connection; `options` is the startup options string, e.g. "-c synchronous_commit=off".
    ``prepare=False``: never prepare a statement, so a repeated query text is planned and run
    each time on both servers (no prepared-plan or identical-cycle reuse in timed repeats)."""
    import psycopg

    kw = {"options": options} if options else {}
    conn = psycopg.connect(dsn(port), autocommit=autocommit, **kw)
    if not prepare:
        conn.prepare_threshold = None
    return conn


def psql(port: int, sql: str, capture: bool = False) -> str:
    """Run one psql -c command; raises on error (ON_ERROR_STOP)."""
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-X", "-q",
                          "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout if capture else ""


def pgbench(port: int, script: str | list[str], clients: int, seconds: int, extra: list[str] | None = None,
            options: str | None = None) -> float:
    """tps of a pgbench -M prepared run (0.0 when pgbench failed).  Several scripts are
    picked at random per transaction, with equal weight.  `options` goes to the server
    as PGOPTIONS (e.g. "-c synchronous_commit=off")."""
    env = dict(os.environ)
    if options:
        env["PGOPTIONS"] = options
    scripts = [script] if isinstance(script, str) else list(script)
    files = []
    try:
        for sc in scripts:
            with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
                f.write(sc)
            files.append(f.name)
        out = subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-n", "-M", "prepared",
                              *[x for fn in files for x in ("-f", fn)], "-c", str(clients), "-j", str(clients),
                              "-T", str(seconds), *(extra or []), "postgres"],
                             capture_output=True, text=True, env=env)
    finally:
        for fn in files:
            os.unlink(fn)
    m = re.search(r"tps = ([\d.]+)", out.stdout)
    if not m or "aborted" in out.stdout + out.stderr:
        err = (out.stderr.strip().splitlines() or [""])[-3:]
        print(f"  [pgbench on port {port}: {' | '.join(err)[:400]}]", flush=True)
    return float(m.group(1)) if m else 0.0


def copy_file(conn, table: str, path: str, chunk: int = 4 << 20, fmt: str = "csv") -> None:
    """psycopg COPY table FROM STDIN, feeding the file in `chunk`-byte writes."""
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} FROM STDIN (FORMAT {fmt})") as cp:
            with open(path, "rb") as f:
                while data := f.read(chunk):
                    cp.write(data)


def copy_bytes(conn, table: str, data: bytes, chunk: int = 4 << 20, fmt: str = "csv") -> None:
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} FROM STDIN (FORMAT {fmt})") as cp:
            mv = memoryview(data)
            for i in range(0, len(data), chunk):
                cp.write(mv[i:i + chunk])


def psql_copy(port: int, table: str, path: str) -> None:
    """psql \\copy table FROM 'path' (FORMAT csv)."""
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                    "-c", f"\\copy {table} FROM '{path}' (FORMAT csv)"], check=True, capture_output=True, text=True)


def query_one(conn, sql: str, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone()


def query_dicts(conn, sql: str, params=None) -> list[dict] | None:
    """Rows as dicts, or None when the statement fails (e.g. a system view that does not exist)."""
    import psycopg

    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            names = [d.name for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
    except psycopg.Error:
        if not conn.autocommit:
            conn.rollback()
        return None


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# ------------------------------------------------------------------ timing and printing

def machine_note() -> str:
    """One line on the machine's state: benchmarks on a shared 2-core box are only as good as its load."""
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = ["?"] * 3
    return f"cores={os.cpu_count()} loadavg(1/5/15 min)={' '.join(load)}"


@contextlib.contextmanager
def timer():
    t = [time.perf_counter(), None]
    try:
        yield t
    finally:
        t[1] = time.perf_counter() - t[0]


def timed(fn, *args, **kw) -> tuple[float, object]:
    t0 = time.perf_counter()
    r = fn(*args, **kw)
    return time.perf_counter() - t0, r


def ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.2f}"


def fmt_rate(x: float | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:,.0f}"


def table(header: list[str], rows: list[list], widths: list[int] | None = None) -> None:
    """Print an aligned table: first column left-aligned, the others right-aligned."""
    cells = [[str(c) for c in header]] + [[c if isinstance(c, str) else fmt_rate(c) for c in r] for r in rows]
    if widths is None:
        widths = [max(len(r[i]) for r in cells) + 2 for i in range(len(header))]
    for r in cells:
        print("".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    sys.stdout.flush()


def section(title: str) -> None:
    print()
    print(f"== {title}")
    sys.stdout.flush()


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return str(n)
