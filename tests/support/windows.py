"""Shared by the window tests (issue 16: tests/cv/test_time_windows.py,
test_session_windows.py, test_late_rows.py, test_windowed_llvm.py): the
stream ``ev (k int, x int, ts timestamptz)`` with an optional watermark,
batches of rows drifting in time with some out of order, which rows a
watermark admits, the TUMBLE/HOP oracle run by DuckDB, and the rows of a
windowed view normalised for comparison."""
from __future__ import annotations

import datetime as dt
import random

import duckdb

from tests.support.engine import result_rows

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_TZ = "TIMESTAMPTZ '1970-01-01 00:00:00+00'"
AGGS = "count(*) AS n, sum(x) AS sx, min(x) AS lo, max(x) AS hi"
#: the columns every windowed view of these tests is read by
VIEW_COLUMNS = "window_start, window_end, k, n, sx, lo, hi"


def batches(seed: int, nbatches: int = 12, per: int = 40, bursty: bool = False) -> list[list[tuple]]:
    """Rows (k, x, ts) drifting forward in time, a fifth of them up to 90 s
    out of order (late, or bridging sessions).  ``bursty``: bursts and
    pauses of 15-60 s, so that sessions open and close."""
    rnd = random.Random(seed)
    out, clock = [], 0.0
    for _ in range(nbatches):
        rows = []
        for _ in range(per):
            if bursty:
                clock += rnd.uniform(0, 4) if rnd.random() < 0.85 else rnd.uniform(15, 60)
            else:
                clock += rnd.uniform(0, 3)
            back = rnd.uniform(0, 90) if rnd.random() < 0.2 else 0
            us = int((clock - back) * 1_000_000)
            rows.append((rnd.randint(1, 3), rnd.randint(-50, 50), T0 + dt.timedelta(microseconds=us)))
        out.append(rows)
    return out


def admitted(batches: list[list[tuple]], delay_s: float | None) -> list[tuple]:
    """The rows a watermark of ``delay_s`` admits: each batch against the
    watermark before it (max ts so far - delay); all rows without one."""
    if delay_s is None:
        return [r for b in batches for r in b]
    kept, top = [], None
    for b in batches:
        wm = None if top is None else top - dt.timedelta(seconds=delay_s)
        kept += [r for r in b if wm is None or r[2] >= wm]
        m = max(r[2] for r in b)
        top = m if top is None or m > top else top
    return kept


def utc(v: dt.datetime) -> dt.datetime:
    return v.astimezone(dt.timezone.utc)


def normalised(rows) -> list[tuple]:
    """(start, end, k, n, sx, lo, hi) rows with UTC bounds and an int sum."""
    return [(utc(a), utc(b), k, n, int(sx), lo, hi) for a, b, k, n, sx, lo, hi in rows]


def oracle(rows, slide: int, size: int, offset: int) -> list[tuple]:
    """DuckDB (time_bucket, its date_bin): each row in every [start, start + size) holding it."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE t (k INT, x INT, ts TIMESTAMPTZ)")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    k = -(-size // slide)
    got = con.execute(f"""
        SELECT ws, ws + INTERVAL '{size} seconds' AS we, k, {AGGS} FROM (
          SELECT k, x, ts, time_bucket(INTERVAL '{slide} seconds', ts, {EPOCH_TZ} + INTERVAL '{offset} seconds')
                 - i * INTERVAL '{slide} seconds' AS ws
          FROM t, range(0, {k}) r(i))
        WHERE ws + INTERVAL '{size} seconds' > ts
        GROUP BY ws, k ORDER BY ws, k""").fetchall()
    return [(utc(a), utc(b), *rest) for a, b, *rest in got]


def view_rows(es, name: str) -> list[tuple]:
    """A windowed view's rows through an in-process session, normalised."""
    return normalised(result_rows(es, f"SELECT {VIEW_COLUMNS} FROM {name} ORDER BY 1, 3"))


def stream_ddl(delay: float | None) -> str:
    mark = "" if delay is None else f", WATERMARK FOR ts AS ts - INTERVAL '{delay} seconds'"
    return f"CREATE FOREIGN TABLE ev (k int, x int, ts timestamptz{mark}) SERVER stream"


def insert(es, rows) -> None:
    """One INSERT of ``rows`` into ``ev`` through an in-process session."""
    es.execute_sql("INSERT INTO ev VALUES " + ", ".join(f"({k}, {x}, '{ts.isoformat()}')" for k, x, ts in rows))


def insert_over_wire(con, rows) -> None:
    """The same through a psycopg connection (the crash tests' servers)."""
    con.execute("INSERT INTO ev VALUES " + ", ".join(["(%s, %s, %s)"] * len(rows)), [v for r in rows for v in r])
