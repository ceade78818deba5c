"""Sketch states in sliding-window views (``WITH (sw)``, issue 16's panes):
each read combines the live panes' states per key through the states' own
merge and drops expired panes, so the view equals the aggregates over a
table of the rows still in the window (issue 17 scope 1)."""
from __future__ import annotations

import datetime as dt
import itertools
import random

import psycopg
import pytest

from tests.cv.test_sliding_windows import T0, live_edge, tick
from tests.support.servers import SplitstreamServer

AGGS = ("hll_agg(x), topk_agg(x %% 5, 3), set_agg(x), bloom_agg(x), first_values(2, x), keyed_max(n, x),"
        " exact_count_distinct(x), freq_agg(x)")


@pytest.fixture(scope="module")
def clock_conn(tmp_path_factory):
    server = SplitstreamServer(tmp_path_factory.mktemp("sk_sw") / "data", env={"SPLITSTREAM_TEST_CLOCK": "1"})
    server.start(timeout=60)
    try:
        with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as c:
            yield c
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_sw_view_of_sketches_equals_table_after_every_batch_and_tick(clock_conn, backend):
    conn = clock_conn
    s, t, v = f"sks_{backend}", f"skt_{backend}", f"skv_{backend}"
    sw, width = dt.timedelta(seconds=10), dt.timedelta(milliseconds=500)
    tick(conn, T0)
    conn.execute(f"SET executor_backend = {backend}")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, n int8) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} (k int, x int, n int8, at timestamptz)")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '10 seconds') AS SELECT k, {AGGS.replace('%%', '%')} FROM {s} GROUP BY k")
    rng, seq, now = random.Random(17), itertools.count(), T0

    def check() -> None:
        edge = live_edge(now, sw, width)
        want = sorted(conn.execute(f"SELECT k, {AGGS} FROM {t} WHERE at > %s GROUP BY k", (edge,)).fetchall(), key=repr)
        assert sorted(conn.execute(f"SELECT * FROM {v}").fetchall(), key=repr) == want, now

    for _ in range(30):
        now += rng.choice([width, width, 2 * width, dt.timedelta(milliseconds=130), 7 * width])
        tick(conn, now)
        check()
        rows = [(rng.randrange(4), rng.randrange(50), next(seq)) for _ in range(rng.randrange(1, 40))]
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {s} (k, x, n) VALUES (%s, %s, %s)", rows)
            cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s)", [r + (now,) for r in rows])
        check()
