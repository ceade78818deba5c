"""Samples of streams (issue 18, item 3): ``reservoir_sample(expr, n)`` per
group in continuous views, and ``TABLESAMPLE BERNOULLI (p)`` as an
insert-time filter; RESERVOIR on a stream is refused with 0A000."""
from __future__ import annotations

import math
import threading

import numpy as np
import psycopg
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution import reservoir_agg  # noqa: F401  (installs reservoir_sample)
from splitstream.executor.execution.aggregates import AggSpec
from splitstream.protocol import oids
from tests.unit.test_reservoir import chi2_critical, skewed_chunks


def _spec() -> AggSpec:
    return AggSpec("reservoir_sample", [None, None], [oids.INT8, oids.INT4])


def _feed(state, values: np.ndarray, groups: np.ndarray, n: int) -> None:
    ng = int(groups.max()) + 1 if len(groups) else 0
    state.ensure(ng)
    state.update(groups, ng, [Col(values, None, oids.INT8), Col(np.full(len(values), n, np.int32), None, oids.INT4)], None)


def test_split_maintenance_sample_is_uniform_per_group():
    """Two thread-local states fed with skewed chunks, merged into the global
    state at interleaved reads (as a view does), 10,000 seeded trials: each
    position of each group is in the group's sample with probability n/N."""
    N, n, trials = 40, 6, 10_000
    rng = np.random.default_rng(21)
    hits = np.zeros((2, N))
    spec = _spec()
    for _ in range(trials):
        glob = spec.make_state()
        locs = [spec.make_state(), spec.make_state()]
        pos = 0
        for m in skewed_chunks(rng, 2 * N):
            vals = np.arange(pos, pos + m, dtype=np.int64)
            _feed(locs[int(rng.random() < 0.8)], vals, (vals % 2).astype(np.int64), n)
            pos += m
            if rng.random() < 0.3:                       # a read: merge the locals, start them afresh
                for i, loc in enumerate(locs):
                    glob.ensure(2)
                    loc.ensure(2)
                    glob.merge(loc, np.arange(2))
                    locs[i] = spec.make_state()
        for loc in locs:
            glob.ensure(2)
            loc.ensure(2)
            glob.merge(loc, np.arange(2))
        for g in (0, 1):
            got = glob.vals[g]
            assert len(got) == n and len(set(got)) == n and all(v % 2 == g for v in got)
            hits[g, np.array(got) // 2] += 1
    exp = trials * n / N
    for g in (0, 1):
        assert ((hits[g] - exp) ** 2 / exp).sum() < chi2_critical(N - 1)


def test_fewer_rows_than_n_keeps_them_all():
    spec = _spec()
    a, b = spec.make_state(), spec.make_state()
    _feed(a, np.arange(3, dtype=np.int64), np.zeros(3, np.int64), 10)
    _feed(b, np.arange(3, 5, dtype=np.int64), np.zeros(2, np.int64), 10)
    a.merge(b, np.arange(1))
    assert sorted(a.vals[0]) == [0, 1, 2, 3, 4]
    _feed(a, np.arange(5, 30, dtype=np.int64), np.zeros(25, np.int64), 10)     # after a merge: fresh + merge
    assert len(a.vals[0]) == 10 and a.seen[0] == 30 and len(set(a.vals[0])) == 10


@pytest.fixture()
def stream(ss_conn, unique_name):
    s = unique_name("s")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int, k int) SERVER stream")
    yield s
    ss_conn.execute(f"DROP FOREIGN TABLE {s} CASCADE")


def test_view_keeps_min_n_N_per_group(ss_conn, stream, unique_name):
    v = unique_name("v")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, reservoir_sample(x, 50) AS r, count(*) AS c FROM {stream} GROUP BY k")
    ss_conn.execute(f"INSERT INTO {stream} SELECT g, g % 3 FROM generate_series(1, 10000) g")
    ss_conn.execute(f"INSERT INTO {stream} SELECT g, 7 FROM generate_series(1, 20) g")
    rows = {k: (r, c) for k, r, c in ss_conn.execute(f"SELECT k, r, c FROM {v}")}
    for k in (0, 1, 2):
        r, c = rows[k]
        assert len(r) == 50 and len(set(r)) == 50 and all(x % 3 == k for x in r)
    assert sorted(rows[7][0]) == list(range(1, 21)) and rows[7][1] == 20


def test_concurrent_writers_then_restart(ss_server_factory):
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE FOREIGN TABLE s (x int, k int) SERVER stream")
        c.execute("CREATE VIEW v AS SELECT k, reservoir_sample(x, 20) AS r, count(*) AS c FROM s GROUP BY k")

    def writer(base: int) -> None:
        with psycopg.connect(srv.dsn, autocommit=True) as w:
            for i in range(10):
                lo = base + i * 100
                w.execute(f"INSERT INTO s SELECT g, g % 2 FROM generate_series({lo}, {lo + 99}) g")

    threads = [threading.Thread(target=writer, args=(b,)) for b in (0, 100_000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        before = {k: (sorted(r), n) for k, r, n in c.execute("SELECT k, r, c FROM v")}
        c.execute("CHECKPOINT")
        c.execute("INSERT INTO s SELECT g, g % 2 FROM generate_series(500000, 500099) g")
    assert {k: n for k, (_, n) in before.items()} == {0: 1000, 1: 1000}
    srv.restart()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        after = {k: (sorted(r), n) for k, r, n in c.execute("SELECT k, r, c FROM v")}
    for k in (0, 1):
        r, n = after[k]
        assert n == 1050 and len(r) == 20 and len(set(r)) == 20 and all(x % 2 == k for x in r)


def test_bernoulli_on_a_stream_filters_at_insert(ss_conn, stream, unique_name):
    v = unique_name("v")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT count(*) AS c FROM {stream} TABLESAMPLE BERNOULLI (20)")
    for i in range(5):
        ss_conn.execute(f"INSERT INTO {stream} SELECT g, 0 FROM generate_series(1, 10000) g")
    c = ss_conn.execute(f"SELECT c FROM {v}").fetchone()[0]
    sd = math.sqrt(50_000 * 0.2 * 0.8)
    assert abs(c - 10_000) < 5 * sd


def test_bernoulli_repeatable_survives_replay(ss_server_factory):
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE FOREIGN TABLE s (x int) SERVER stream")
        c.execute("CREATE VIEW v AS SELECT count(*) AS c, sum(x) AS sx FROM s TABLESAMPLE BERNOULLI (30) REPEATABLE (5)")
        for i in range(4):
            c.execute(f"INSERT INTO s SELECT g FROM generate_series({i * 1000}, {i * 1000 + 999}) g")
        before = c.execute("SELECT c, sx FROM v").fetchone()
    srv.restart(crash=True)                              # the view is rebuilt by replaying the WAL
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        assert c.execute("SELECT c, sx FROM v").fetchone() == before


@pytest.mark.parametrize("method", ["RESERVOIR (10)", "SYSTEM (10)", "SYSTEM_ROWS (10)"])
def test_other_methods_on_a_stream_refused(ss_conn, stream, method):
    with pytest.raises(psycopg.Error) as err:
        ss_conn.execute(f"CREATE VIEW v_refused AS SELECT x FROM {stream} TABLESAMPLE {method}")
    assert err.value.sqlstate == "0A000" and err.value.diag.message_hint


def test_bad_sizes(ss_conn, stream):
    for sql in (f"CREATE VIEW v_bad AS SELECT reservoir_sample(x, 0) FROM {stream}",):
        ss_conn.execute(sql)
        with pytest.raises(psycopg.Error) as err:
            ss_conn.execute(f"INSERT INTO {stream} VALUES (1, 1)")
        assert err.value.sqlstate == "22023"
        ss_conn.execute("DROP VIEW v_bad")
