"""Top-k, Bloom, sets, buckets, keyed min/max and first values through SQL
(issue 17 scope 1): a continuous view equals the same aggregates over a
table of the inserted rows, across batches, a checkpoint and a restart, on
the vector and the LLVM backend (windows with retention: test_sketch_sql.py); the
functions reading them; errors; the catalog; the Spark translator's
sketch states."""
from __future__ import annotations

import json

import pytest

from tests.sketches.support import assert_sqlstate, batches_checkpoint_restart, reopened, survives_kill9
from tests.support.engine import open_engine, postgres_session, result_rows

AGGS = ("topk_agg(x, 4) AS t, bloom_agg(x) AS bl, set_agg(x) AS st, exact_count_distinct(x) AS e,"
        " keyed_min(x, y) AS kmin, keyed_max(x, y) AS kmax, first_values(3, y) AS fv, bucket_agg(x, b) AS bu,"
        " topk_agg(b, 2, w) AS tw")
COLS = "t, bl, st, e, kmin, kmax, fv, bu, tw"


def _insert(run, lo: int, hi: int) -> None:
    """x: 11 values per group, b: 5 (top-k with 3k counters counts them exactly, so merged states equal
    one pass); y: distinct, so keyed_min/max have one answer."""
    for target in ("s", "t"):
        run(f"INSERT INTO {target} SELECT g % 7, (g * 31) % 11, g * 13 % 100003, (g % 5)::int2, g % 3"
            f" FROM generate_series({lo}, {hi}) g")


def _setup(run) -> None:
    run("CREATE FOREIGN TABLE s (k int, x int, y int8, b int2, w int8) SERVER stream")
    run("CREATE TABLE t (k int, x int, y int8, b int2, w int8)")
    run(f"CREATE VIEW v AS SELECT k, {AGGS} FROM s GROUP BY k")


def _same(rows) -> None:
    view = rows(f"SELECT k, {COLS} FROM v ORDER BY k")
    oracle = rows(f"SELECT k, {AGGS} FROM t GROUP BY k ORDER BY k")
    assert len(view) == 7
    # bucket_agg's arrival order is the insert order in both: the same buckets
    assert view == oracle


def test_views_equal_the_aggregates_over_a_table_across_batches_and_restart(tmp_path):
    d = str(tmp_path / "d")
    batches_checkpoint_restart(d, _setup, _insert, _same, [(lo, lo + 2999) for lo in range(1, 12001, 3000)],
                               (12001, 14000))
    with reopened(d, _insert, _same, (14001, 15000)) as es:
        (per_group,), = result_rows(es, "SELECT bytes_per_group FROM splitstream.views WHERE name = 'v'")
        assert per_group > 33_000              # the Bloom filter's 32.6 KiB, measured with the rest


def test_llvm_backend_gives_the_same_results_and_spark_builds_the_states_but_arrival_buckets(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        es.execute_sql("SET executor_backend = 'llvm'")
        _setup(es.execute_sql)
        _insert(es.execute_sql, 1, 6000)
        _same(lambda q: result_rows(es, q))
        desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('s')")[0][0])
        assert desc["pushable"] is False and "bucket_agg(x, bucket) keeps each value's latest arrival" in desc["reason"]
        es.execute_sql("CREATE FOREIGN TABLE s2 (k int, x int, y int8, b int2, w int8, ts timestamptz) SERVER stream")
        es.execute_sql(f"CREATE VIEW v2 AS SELECT k, {AGGS.replace('bucket_agg(x, b)', 'bucket_agg(x, b, ts)')}"
                       " FROM s2 GROUP BY k")
        desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('s2')")[0][0])
        assert desc["pushable"], desc["reason"]
        assert {st["kind"] for st in desc["views"][0]["pipelines"][0]["states"]} == {"sketch"}


def test_reading_functions_against_exact_answers(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        q = lambda sql: result_rows(es, sql)         # noqa: E731
        src = "FROM (SELECT g % 13 AS x FROM generate_series(1, 1300) g UNION ALL SELECT 5 FROM generate_series(1, 50)) z"
        ((values, freqs),) = q(f"SELECT topk_values(topk_agg(x, 2), NULL::int[]), topk_freqs(topk_agg(x, 2)) {src}")
        assert values[0] == 5 and freqs == [150, 100] and values[1] in range(13)
        assert q(f"SELECT value, frequency FROM topk((SELECT topk_agg(x, 1) {src}))") == [("5", 150)]
        assert q(f"SELECT topk_freqs(topk_increment(topk_agg(x, 1), 7, 500)) {src}") == [([600],)]
        assert q(f"SELECT set_cardinality(set_agg(x)), exact_count_distinct(x), count(DISTINCT x) {src}") == [(13, 13, 13)]
        got = q(f"SELECT bloom_contains(bloom_agg(x), 12), bloom_contains(bloom_agg(x), 99), bloom_cardinality(bloom_agg(x)),"
                f" bloom_contains(bloom_add(bloom_empty(), 99), 99), bloom_contains(bloom_empty(0.01, 100), 1) {src}")
        assert got == [(True, False, 13, True, False)]
        assert q("SELECT bloom_contains(bloom_intersection(bloom_agg(x), bloom_agg(x + 1)), 5),"
                 " bloom_contains(bloom_union(bloom_agg(x), bloom_agg(x + 100)), 105)"
                 " FROM generate_series(1, 10) x") == [(True, True)]
        assert q("SELECT unnest(bucket_ids(b)), unnest(bucket_cardinalities(b)), bucket_cardinality(b) FROM"
                 " (SELECT bucket_agg(x % 6, (x % 3)::int2) AS b FROM generate_series(1, 100) x) z") == [
            (0, 2, 6), (1, 2, 6), (2, 2, 6)]
        assert q("SELECT keyed_min(-x, x::text), keyed_max(x, NULL::int), first_values(2, -x)"
                 " FROM generate_series(1, 50) x") == [("50", None, [-50, -49])]


@pytest.mark.parametrize("sql,state", [
    ("SELECT topk_agg(x, 2, 3, 4) FROM generate_series(1, 3) x", "0A000"),
    ("SELECT topk_agg(x, 0) FROM generate_series(1, 3) x", "22023"),
    ("SELECT topk_agg(x, x) FROM generate_series(1, 3) x", "22023"),
    ("SELECT topk_agg(x, 2, -1::int8) FROM generate_series(1, 3) x", "22023"),
    ("SELECT topk_freqs('\\x0102'::bytea)", "22023"),
    ("SELECT bloom_contains('\\x0102'::bytea, 1)", "22023"),
    ("SELECT bloom_agg(x, 1.5, 10) FROM generate_series(1, 3) x", "22023"),
    ("SELECT bloom_union(bloom_empty(), bloom_empty(0.1, 10))", "22023"),
    ("SELECT bucket_ids('\\x00'::bytea)", "22023"),
    ("SELECT first_values(2, x, x) FROM generate_series(1, 3) x", "0A000"),
    ("SELECT topk_agg(DISTINCT x, 2) FROM generate_series(1, 3) x", "0A000"),
    ("SELECT keyed_min(DISTINCT x, x) FROM generate_series(1, 3) x", "0A000"),
    ("SELECT first_values(DISTINCT 2, x) FROM generate_series(1, 3) x", "0A000"),
])
def test_errors(tmp_path, sql, state):
    assert_sqlstate(str(tmp_path / "d"), sql, state)


def test_catalog_lists_the_functions(tmp_path):
    names = {"topk_agg": "a", "topk_values": "f", "topk_freqs": "f", "topk_increment": "f", "bloom_agg": "a",
             "bloom_union_agg": "a", "bloom_intersection_agg": "a", "bloom_contains": "f", "bloom_cardinality": "f",
             "bloom_union": "f", "bloom_intersection": "f", "bloom_empty": "f", "bloom_add": "f", "set_agg": "a",
             "set_cardinality": "f", "exact_count_distinct": "a", "keyed_min": "a", "keyed_max": "a",
             "first_values": "a", "bucket_agg": "a", "bucket_ids": "f", "bucket_cardinalities": "f",
             "bucket_cardinality": "f"}
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        listed = ", ".join(f"'{n}'" for n in names)
        got = set(result_rows(es, f"SELECT proname::text, prokind::text FROM pg_proc WHERE proname IN ({listed})"))
        assert got == set(names.items())


def test_views_survive_kill9(ss_server_factory):
    survives_kill9(ss_server_factory(), _setup, _insert, _same, (1, 4000), (4001, 7000), (7001, 8000))
