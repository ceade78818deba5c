"""Property test: random streams, random views of the supported shapes and
random interleavings of inserts (from two connections) with reads.  Every
read equals the same query over a table holding every row inserted before
it — splitstream's own table path is the oracle."""
from __future__ import annotations

import random
import threading

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .oracle import close, rows

SHAPES = [
    "SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k",
    "SELECT k, min(x) AS lo, max(x) AS hi, avg(y) AS ay FROM {s} WHERE x > {c} GROUP BY k",
    "SELECT count(*) AS n, sum(y) AS sy, count(DISTINCT k) AS dk FROM {s}",
    "SELECT k % 3 AS kk, sum(x * 2 + y) AS v FROM {s} GROUP BY k % 3 HAVING count(*) > 1",
    "SELECT g, count(*) AS n FROM (SELECT k, sum(x) AS g FROM {s} GROUP BY k) q GROUP BY g",
    "SELECT t.label, sum(s.x) AS sx, count(*) AS n FROM {s} s JOIN {t} t ON s.k = t.k GROUP BY t.label",
    "SELECT k, sum(x) - min(y) AS d, bool_or(x > {c}) AS anyx FROM {s} GROUP BY k",
    "SELECT k, count(x) AS cx, sum(y) FILTER (WHERE y > 0) AS sy FROM {s} GROUP BY k",
    "WITH a AS (SELECT k, count(*) AS c FROM {s} GROUP BY k) SELECT a.k, a.c, t.label FROM a JOIN {t} t ON t.k = a.k",
]

row = st.tuples(st.integers(0, 12), st.one_of(st.none(), st.integers(-50, 50)), st.integers(-5, 5))
step = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 1), st.lists(row, min_size=1, max_size=30)),
    st.tuples(st.just("read"), st.just(0), st.just([])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(SHAPES), c=st.integers(-20, 20), steps=st.lists(step, min_size=1, max_size=8))
def test_views_equal_table_oracle(ss_server, unique_name, shape, c, steps):
    conns = [psycopg.connect(ss_server.dsn, autocommit=True) for _ in range(2)]
    try:
        cur = conns[0].cursor()
        s, tbl, t, v = unique_name("ps"), unique_name("pt"), unique_name("pl"), unique_name("pv")
        cur.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, y int) SERVER stream")
        cur.execute(f"CREATE TABLE {tbl} (k int, x int, y int)")
        cur.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, label text)")
        cur.execute(f"INSERT INTO {t} SELECT i, 'L' || (i % 4) FROM generate_series(0, 12) i")
        cur.execute(f"CREATE VIEW {v} AS " + shape.format(s=s, t=t, c=c))
        oracle = shape.format(s=tbl, t=t, c=c)
        for kind, who, data in steps:
            if kind == "insert":
                # two connections insert concurrently; both copies go in before the next read
                half = len(data) // 2
                parts = [data[:half], data[half:]]
                threads = [threading.Thread(target=_insert, args=(conns[i], s, tbl, parts[i])) for i in range(2)]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
            else:
                got, want = rows(cur, f"SELECT * FROM {v}"), rows(cur, oracle)
                assert close(got, want), f"{shape}\n got {got}\nwant {want}"
        got, want = rows(cur, f"SELECT * FROM {v}"), rows(cur, oracle)
        assert close(got, want), f"{shape}\n got {got}\nwant {want}"
    finally:
        for cn in conns:
            cn.close()


def _insert(conn, stream, table, data):
    if not data:
        return
    cur = conn.cursor()
    if random.random() < 0.5:
        cur.executemany(f"INSERT INTO {stream} VALUES (%s, %s, %s)", data)
    else:
        with cur.copy(f"COPY {stream} (k, x, y) FROM STDIN") as cp:
            for r in data:
                cp.write_row(r)
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", data)
