"""YSB's events, their reference results, and the pieces every YSB run shares
(bench/ysb.py's kernel reference, bench/ysb_windows.py's engine windows, the
PyFlink peer): one generator, one numpy reference, one engine harness, one
COPY runner and one PyFlink runner, so the variants measure the same events
and check them the same way.

Events (Grizzly 7.1.2): (event_type smallint, campaign_id, event_time, value
int), time-ordered; event_type 0 (a view, 33%) counts; 10,000 campaigns; 10 s
tumbling windows.  Times are milliseconds in the generator; a stream takes
them as bigint milliseconds or as a timestamp.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from typing import Callable

import numpy as np

CAMPAIGNS = 10_000
WINDOW_MS = 10_000


def make_events(n: int, batch: int, windows: int, seed: int = 42, key_dtype=np.int64) -> list:
    """Time-ordered batches (event_type, campaign_id, time ms, value); the
    events span ``windows`` tumbling windows."""
    rng = np.random.default_rng(seed)
    span = windows * WINDOW_MS
    out = []
    for a in range(0, n, batch):
        m = min(batch, n - a)
        et = rng.integers(0, 3, m).astype(np.int16)          # 0 = view (33%), 1 = click, 2 = purchase
        camp = rng.integers(0, CAMPAIGNS, m, dtype=key_dtype)
        t = ((a + np.arange(m, dtype=np.int64)) * span) // n
        val = rng.integers(1, 100, m, dtype=np.int32)
        out.append((et, camp, t, val))
    return out


def reference(batches) -> dict:
    """window index -> sum(value) per campaign (float64 array), by numpy."""
    ref: dict = {}
    for et, camp, t, val in batches:
        sel = et == 0
        w = t[sel] // WINDOW_MS
        for win in np.unique(w).tolist():
            m = w == win
            s = np.bincount(camp[sel][m], weights=val[sel][m].astype(np.float64), minlength=CAMPAIGNS)
            acc = ref.setdefault(win, np.zeros(CAMPAIGNS))
            acc += s
    return ref


def summary(ref: dict) -> dict:
    """window start (ms) -> (campaigns with events, total): what a peer reports back."""
    return {int(w) * WINDOW_MS: (int(np.count_nonzero(a)), int(a.sum())) for w, a in ref.items()}


def per_window(win: np.ndarray, keys: np.ndarray, sums: np.ndarray) -> dict:
    """Result rows (window index, campaign, sum) as the reference's dict."""
    got: dict = {}
    for w in np.unique(win).tolist():
        m = win == w
        acc = got.setdefault(w, np.zeros(CAMPAIGNS))
        acc[keys[m]] = sums[m]
    return got


def same(got: dict, ref: dict) -> bool:
    return sorted(got) == sorted(ref) and all(np.array_equal(got[w], ref[w]) for w in ref)


def csv_lines(batches, time_format: str, rows: int = 200_000):
    """The events as CSV text, ``rows`` lines at a time; times as bigint ms
    (``ms``) or ISO timestamps (``iso``)."""
    for et, camp, t, val in batches:
        for a in range(0, len(et), rows):
            sl = slice(a, a + rows)
            ts = t[sl] if time_format == "ms" else \
                np.datetime_as_string((t[sl] * 1000).view("datetime64[us]"), unit="us")
            yield "".join(f"{x},{y},{z},{w}\n" for x, y, z, w in zip(
                et[sl].tolist(), camp[sl].tolist(), ts.tolist(), val[sl].tolist()))


class ViewPipeline:
    """A stream and one continuous view over it in a real engine (temporary
    data directory); ``pipe`` is the view's stream pipeline, which the insert
    path hands decoded batches to."""

    def __init__(self, stream_ddl: str, view_sql: str) -> None:
        from splitstream.executor.context import SessionInfo
        from splitstream.executor.engine import Engine

        self.engine = Engine(tempfile.mkdtemp(prefix="ysb") + "/data", fsync=False)
        self.engine.open()
        s = self.engine.new_session(SessionInfo(settings={}))
        s.execute_sql(stream_ddl)
        s.execute_sql(view_sql)
        cv = next(iter(self.engine.streams.views.values()))
        self.pipe = next(iter(cv.pipelines.values()))[0]
        self.nstream_cols = len(self.pipe.scan.out)

    def ctx(self, backend: str):
        from splitstream.catalog.storage.database import Transaction
        from splitstream.executor.context import ExecContext, SessionInfo
        from splitstream.executor.engine import DEFAULT_SETTINGS

        settings = dict(DEFAULT_SETTINGS)
        settings["executor_backend"] = backend
        return ExecContext(db=self.engine.db, txn=Transaction(self.engine.db, implicit=True),
                           session=SessionInfo(settings=settings), engine=self.engine)

    def to_batch(self, et, camp, t_ms, val, timestamp: bool):
        """One batch of the stream's columns; ``timestamp``: event_time is a
        timestamp (else bigint ms)."""
        from splitstream.catalog.datatypes.vector import Batch, Col
        from splitstream.protocol import oids as type_oids

        n = len(et)
        key = type_oids.INT8 if camp.dtype == np.int64 else type_oids.INT4
        tcol = Col((t_ms.astype(np.int64) * 1000).view("datetime64[us]"), None, type_oids.TIMESTAMP) if timestamp \
            else Col(t_ms, None, type_oids.INT8)
        cols = [Col(et, None, type_oids.INT2), Col(camp, None, key), tcol, Col(val, None, type_oids.INT4)]
        while len(cols) < self.nstream_cols:           # arrival_timestamp (not read by the view)
            cols.append(Col(np.zeros(n, "datetime64[us]"), None, type_oids.TIMESTAMPTZ))
        return Batch(cols, n)

    def close(self) -> None:
        self.engine.close()


def end_to_end(batches, time_format: str, ddl: Callable[[str], str], view: Callable[[str], str], backends,
               verify: Callable, chunk_rows: int = 100_000, reps: int = 1) -> list:
    """COPY (csv, one COPY per ``chunk_rows`` rows: a stream of inserts) over the
    wire into a stream (``ddl(name)``) with a view (``view(stream)``), per
    backend, then one read; ``verify(conn, view name)`` raises on a wrong
    result.  Best of ``reps`` runs per backend, each into a new stream and
    view.  Returns [(backend, events/s, EXPLAIN's backend line)]."""
    from .common import Servers, connect

    n = sum(len(b[0]) for b in batches)
    chunks = [c.encode() for c in csv_lines(batches, time_format, chunk_rows)]
    out = []
    with Servers(pg=False, fsync="off") as s:
        conn = connect(s.ss_port)            # warm the server's COPY path first
        conn.execute(ddl("ysb_warm"))
        for c in chunks[:3]:
            _copy(conn, "ysb_warm", c)
        conn.close()
        runs = 0
        for backend in backends:
            best = None
            for _ in range(reps):
                conn = connect(s.ss_port)
                conn.execute(f"SET executor_backend = '{backend}'")
                st, vw = f"ysb_{backend}_{runs}", f"ysb_view_{backend}_{runs}"
                runs += 1
                conn.execute(ddl(st))
                conn.execute(f"CREATE VIEW {vw} AS " + view(st))
                t0 = time.perf_counter()
                for c in chunks:
                    _copy(conn, st, c)
                verify(conn, vw)                 # the read is part of the timed run
                dt = time.perf_counter() - t0
                line = [r[0].strip() for r in conn.execute(f"EXPLAIN ANALYZE SELECT * FROM {vw}").fetchall()
                        if r[0].strip().startswith("Backend:")]
                conn.close()
                if best is None or n / dt > best[1]:
                    best = (backend, n / dt, line[0] if line else "?")
            out.append(best)
    return out


def _copy(conn, stream: str, data: bytes) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"COPY {stream} FROM STDIN (FORMAT csv)") as cp:
            cp.write(data)


# ------------------------------------------------------------------ the PyFlink peer

def find_flink_python(explicit: str | None) -> tuple[str | None, str]:
    """The PyFlink interpreter: ``explicit``, else .venv-flink in the repo root."""
    if explicit:
        return (explicit, "") if os.access(explicit, os.X_OK) else (None, f"--flink-python {explicit} is not executable")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cand = os.path.join(root, ".venv-flink", "bin", "python")
    if os.access(cand, os.X_OK):
        return cand, ""
    return None, f"no PyFlink virtualenv at {os.path.dirname(os.path.dirname(cand))} (create it with `make flink-venv`, " \
                 f"or pass --flink-python PATH)"


def run_flink(py: str, batches, timeout: float, parallelism: str = "1,2", reps: int = 1) -> dict:
    """YSB in PyFlink (bench/ysb_flink.py, in its own virtualenv) over
    ``batches`` written to a CSV file, results checked against the reference.
    Returns {"rows": [(parallelism, seconds)], "fixed": s, "version": v} or {"error": text}."""
    want = summary(reference(batches))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ysb_flink.py")
    n = sum(len(b[0]) for b in batches)
    with tempfile.TemporaryDirectory(prefix="ysb-flink") as d:
        path = os.path.join(d, "events.csv")
        with open(path, "w") as f:
            for text in csv_lines(batches, "ms"):
                f.write(text)
        try:
            proc = subprocess.run([py, script, path, str(n), "--parallelism", parallelism, "--reps", str(reps)],
                                  capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"PyFlink run exceeded {timeout:.0f} s"}
    out: dict = {"rows": []}
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if "flink" in rec:
            out["version"] = rec["flink"]
        elif "fixed_seconds" in rec:
            out["fixed"] = rec["fixed_seconds"]
        elif "parallelism" in rec:
            got = {w[0]: (w[1], w[2]) for w in rec["windows"]}
            if got != want:
                return {"error": f"PyFlink result mismatch: {got} != {want}"}
            out["rows"].append((rec["parallelism"], rec["seconds"]))
    if proc.returncode != 0 or not out["rows"]:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"PyFlink exited with {proc.returncode}: " + " | ".join(tail)}
    return out
