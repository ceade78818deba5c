"""PipelineDB's scalar sketch functions of builtin.rst that build on a
sketch value, and its freq_merge_agg (pipelinedb--1.0.0.sql): hll_add,
hll_union, freq_add, freq_norm, dist_add.

The oracle of an exact operation is the sketch aggregate itself: adding a
value to a sketch gives the bytes the aggregate gives over the rows plus
that value (registers and counters are order-free maxima and sums); an
approximate one (the t-digest) is held to its error bound against
PostgreSQL's percentile_cont."""
from __future__ import annotations

import psycopg
import pytest


def _one(conn, sql, *args):
    return conn.execute(sql, args or None).fetchone()


@pytest.fixture
def table(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (k int, x int, s text)")
    ss_conn.execute(f"INSERT INTO {t} SELECT g % 3, g % 97, 'v' || (g % 13) FROM generate_series(1, 2000) g")
    yield t
    ss_conn.execute(f"DROP TABLE {t}")


def test_hll_add_is_the_aggregate_with_the_value(ss_conn, table):
    got, want = _one(ss_conn, f"SELECT hll_add(hll_agg(x), 1000), (SELECT hll_agg(y) FROM "
                              f"(SELECT x FROM {table} UNION ALL SELECT 1000) u(y)) FROM {table}")
    assert got == want
    assert _one(ss_conn, f"SELECT hll_add(hll_agg(x), 5) = hll_agg(x) FROM {table}") == (True,)   # already counted
    assert _one(ss_conn, "SELECT hll_cardinality(hll_add(NULL, 'a'::text)), hll_add(NULL, NULL::int)") == (1, None)


def test_hll_union_is_the_aggregate_of_the_union(ss_conn, table):
    got, want = _one(ss_conn, f"SELECT hll_union((SELECT hll_agg(x) FROM {table} WHERE k = 0), NULL, "
                              f"(SELECT hll_agg(x) FROM {table} WHERE k = 1)), "
                              f"(SELECT hll_agg(x) FROM {table} WHERE k IN (0, 1))")
    assert got == want
    assert _one(ss_conn, "SELECT hll_union(NULL::bytea, NULL)") == (None,)


def test_freq_add_and_freq_norm(ss_conn, table):
    got, want = _one(ss_conn, f"SELECT freq_add(freq_agg(s), 'zz'::text, 7), (SELECT freq_agg(y) FROM "
                              f"(SELECT s FROM {table} UNION ALL SELECT 'zz' FROM generate_series(1, 7)) u(y)) "
                              f"FROM {table}")
    assert got == want
    got, want = _one(ss_conn, f"SELECT freq_add(freq_agg(s), 'v1'), (SELECT freq_agg(y) FROM "
                              f"(SELECT s FROM {table} UNION ALL SELECT 'v1') u(y)) FROM {table}")
    assert got == want
    norm, freq, total = _one(ss_conn, f"SELECT freq_norm(freq_agg(s), 'v3'::text), freq(freq_agg(s), 'v3'), "
                                      f"freq_total(freq_agg(s)) FROM {table}")
    assert norm == freq / total
    assert _one(ss_conn, "SELECT freq_norm(NULL, 1), freq(freq_add(NULL, 'a'::text), 'a')") == (0.0, 1)
    with pytest.raises(psycopg.errors.DatatypeMismatch):     # (cmsketch, anyelement, integer) only, as PipelineDB's
        ss_conn.execute(f"SELECT freq_add(freq_agg(s), 'a', 2) FROM {table}")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
        ss_conn.execute(f"SELECT freq_add(freq_agg(s), 'a'::text, -1) FROM {table}")
    assert e.value.diag.message_primary == "cmsketch type doesn't support negative increments"


def test_dist_add_within_the_error_bound(ss_conn, pg_conn, table):
    rows = ss_conn.execute(f"SELECT x FROM {table}").fetchall()
    for q in (0.25, 0.5, 0.75):     # away from the one heavy centroid, which interpolation spreads
        ours = _one(ss_conn, f"SELECT dist_quantile(dist_add(dist_agg(x), 500, 400), {q}) FROM {table}")[0]
        pg_conn.execute("CREATE TEMP TABLE d (x float8)")
        try:
            pg_conn.cursor().executemany("INSERT INTO d VALUES (%s)", rows + [(500,)] * 400)
            lo, hi = _one(pg_conn, f"SELECT percentile_disc({max(q - 0.01, 0)}) WITHIN GROUP (ORDER BY x), "
                                   f"percentile_disc({min(q + 0.01, 1)}) WITHIN GROUP (ORDER BY x) FROM d")
        finally:
            pg_conn.execute("DROP TABLE d")
        assert lo <= ours <= hi, (q, lo, ours, hi)
    assert _one(ss_conn, "SELECT dist_quantile(dist_add(NULL, 5), 0.5), dist_add(NULL, 5, 0)") == (5.0, None)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        ss_conn.execute("SELECT dist_add(NULL, 5, -1)")


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_freq_merge_agg_over_a_continuous_view(ss_conn, table, unique_name, backend):
    s, v = unique_name("s"), unique_name("v")
    try:
        ss_conn.execute(f"SET executor_backend = {backend}")
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, s text) SERVER pipelinedb")
        ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, freq_agg(s) AS f FROM {s} GROUP BY k")
        ss_conn.execute(f"INSERT INTO {s} SELECT * FROM {table}")
        got = _one(ss_conn, f"SELECT freq_merge_agg(f) FROM {v}")[0]
        assert got == _one(ss_conn, f"SELECT freq_agg(s) FROM {table}")[0]
        per_k = ss_conn.execute(f"SELECT k, freq_merge_agg(f) FROM (SELECT k, f FROM {v} UNION ALL "
                                f"SELECT k, f FROM {v}) u GROUP BY k ORDER BY k").fetchall()
        twice = ss_conn.execute(f"SELECT k, freq_agg(s) FROM (SELECT * FROM {table} UNION ALL "
                                f"SELECT * FROM {table}) u GROUP BY k ORDER BY k").fetchall()
        assert per_k == twice
    finally:
        ss_conn.execute("RESET executor_backend")
