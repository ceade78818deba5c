"""date_bin on whole columns (issue 16): equal to PostgreSQL 15 for constant
and per-row strides, origins before and after the source, NULLs, timestamp
and timestamptz; errors as PostgreSQL (22008 stride <= 0, 0A000 months),
checked only on rows whose arguments are all present."""
from __future__ import annotations

import datetime as dt
import random
import tempfile

import pytest

from tests.support.engine import open_engine, postgres_session, result_rows

STRIDES = ["15 minutes", "1 second", "7 seconds 250 milliseconds", "1 day", "2 days 3 hours", "1 microsecond", None]


def _rows(seed: int, n: int = 300) -> list[tuple]:
    rnd = random.Random(seed)
    base = dt.datetime(2020, 2, 28, 22, 0, 0)
    out = []
    for i in range(n):
        ts = None if i % 37 == 0 else base + dt.timedelta(microseconds=rnd.randint(-10**12, 10**12))
        out.append((i, ts, rnd.choice(STRIDES)))
    return out


QUERIES = [
    "SELECT i, date_bin(INTERVAL '15 minutes', ts, TIMESTAMP '2001-01-01') FROM t ORDER BY i",
    "SELECT i, date_bin(INTERVAL '7 seconds 250 milliseconds', ts, TIMESTAMP '2030-05-05 01:02:03.5') FROM t ORDER BY i",
    "SELECT i, date_bin(stride, ts, TIMESTAMP '2000-01-01') FROM t ORDER BY i",
    "SELECT i, date_bin(stride, ts, ts - INTERVAL '1 hour') FROM t ORDER BY i",
    "SELECT i, date_bin(INTERVAL '1 day', ts::timestamptz, TIMESTAMPTZ '2000-01-01 00:00:00+00') FROM t ORDER BY i",
    "SELECT i, date_bin(NULL::interval, ts, TIMESTAMP '2000-01-01') FROM t ORDER BY i",
    "SELECT i FROM t WHERE date_bin(INTERVAL '1 hour', ts, TIMESTAMP '2000-01-01') = ts ORDER BY i",
]


def _load(run, rows) -> None:
    run("CREATE TABLE t (i int, ts timestamp, stride interval)")
    for k in range(0, len(rows), 100):
        values = ", ".join(f"({i}, {'NULL' if ts is None else repr(ts.isoformat(sep=' '))}::timestamp, "
                           f"{'NULL' if s is None else repr(s)}::interval)" for i, ts, s in rows[k:k + 100])
        run(f"INSERT INTO t VALUES {values}")


def test_date_bin_equals_postgres(pg_conn, unique_name):
    rows = _rows(1)
    schema = unique_name("db")
    pg_conn.execute(f"CREATE SCHEMA {schema}")
    try:
        pg_conn.execute(f"SET search_path = {schema}")
        pg_conn.execute("SET TimeZone = 'UTC'")
        _load(pg_conn.execute, rows)
        want = [pg_conn.execute(q).fetchall() for q in QUERIES]
    finally:
        pg_conn.execute(f"DROP SCHEMA {schema} CASCADE")
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql("SET TimeZone = 'UTC'")
        _load(es.execute_sql, rows)
        for q, w in zip(QUERIES, want):
            assert result_rows(es, q) == [tuple(r) for r in w], q


@pytest.mark.parametrize("sql, state", [
    ("SELECT date_bin(INTERVAL '0 seconds', ts, TIMESTAMP '2000-01-01') FROM t", "22008"),
    ("SELECT date_bin(INTERVAL '-1 hour', ts, TIMESTAMP '2000-01-01') FROM t", "22008"),
    ("SELECT date_bin(INTERVAL '1 month', ts, TIMESTAMP '2000-01-01') FROM t", "0A000"),
    ("SELECT date_bin(stride, ts, TIMESTAMP '2000-01-01') FROM t", "22008"),       # one bad row among good ones
])
def test_date_bin_errors(pg_conn, unique_name, sql, state):
    rows = [(1, dt.datetime(2024, 1, 1), "1 hour"), (2, dt.datetime(2024, 1, 2), "0 seconds"),
            (3, None, "1 month")]                        # a NULL source: its stride is never looked at
    schema = unique_name("dbe")
    pg_conn.execute(f"CREATE SCHEMA {schema}")
    try:
        pg_conn.execute(f"SET search_path = {schema}")
        _load(pg_conn.execute, rows)
        with pytest.raises(Exception) as pg_err:
            pg_conn.execute(sql)
        assert pg_err.value.sqlstate == state
    finally:
        pg_conn.execute(f"DROP SCHEMA {schema} CASCADE")
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        _load(es.execute_sql, rows)
        with pytest.raises(Exception) as info:
            es.execute_sql(sql)
        assert getattr(info.value, "sqlstate", None) == state
        assert str(pg_err.value).splitlines()[0] in str(info.value)
        # the NULL-source row's month stride alone raises nothing
        assert result_rows(es, "SELECT date_bin(stride, ts, TIMESTAMP '2000-01-01') FROM t WHERE i = 3") == [(None,)]
