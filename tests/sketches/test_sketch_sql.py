"""Sketch aggregates through SQL: ordinary queries, continuous views (equal
to the same aggregate over a table of the inserted rows, bit for bit for
HLL), restarts, kill -9, the LLVM backend's fallback, the Spark
translator's sketch states, the function catalog and errors (issue 17 scope 1)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from splitstream.executor.execution.sketches import tdigest
from tests.sketches.support import assert_sqlstate, batches_checkpoint_restart, reopened, survives_kill9
from tests.support.engine import open_engine, postgres_session, result_rows

VIEW = ("CREATE VIEW v AS SELECT k, hll_agg(x) AS h, approx_count_distinct(x) AS a, hll_count_distinct(x) AS c,"
        " dist_agg(x) AS d, freq_agg(x) AS f FROM s GROUP BY k")
ORACLE = ("SELECT k, hll_agg(x), approx_count_distinct(x), hll_count_distinct(x), dist_agg(x), freq_agg(x) FROM t"
          " GROUP BY k ORDER BY k")


def _insert(run, lo: int, hi: int) -> None:
    for target in ("s", "t"):
        run(f"INSERT INTO {target} SELECT g % 37, (g * 7919) % 5003 + 0.5 FROM generate_series({lo}, {hi}) g")


def _setup(run) -> None:
    run("CREATE FOREIGN TABLE s (k int, x float8) SERVER stream")
    run("CREATE TABLE t (k int, x float8)")
    run(VIEW)


def _check_view_equals_table(rows) -> None:
    view, table = rows("SELECT k, h, a, c, d, f FROM v ORDER BY k"), rows(ORACLE)
    assert [r[:4] for r in view] == [r[:4] for r in table]        # HLL: the same registers
    assert [r[5] for r in view] == [r[5] for r in table]          # count-min: the same counters
    assert all(isinstance(r[1], bytes) for r in view) and len(view) == 37
    values: dict[int, list[float]] = {}
    for k, x in rows("SELECT k, x FROM t"):
        values.setdefault(k, []).append(x)
    for k, _, _, _, digest, _ in view:                   # t-digest: every quantile within the rank bound
        xs = np.sort(np.array(values[k]))
        for q in (0.01, 0.5, 0.9):
            rank = np.searchsorted(xs, tdigest.quantile(bytes(digest), q), "right") / len(xs)
            assert abs(rank - q) <= tdigest.RANK_ERROR + 2 / len(xs), (k, q, rank)


def test_views_equal_the_aggregate_over_a_table_across_batches_and_restart(tmp_path):
    d = str(tmp_path / "d")
    batches_checkpoint_restart(d, _setup, _insert, _check_view_equals_table,
                               [(lo, lo + 3999) for lo in range(1, 20001, 4000)], (20001, 23000))
    with reopened(d, _insert, _check_view_equals_table, None) as es:
        (q50v, q50t, exact), = result_rows(es, "SELECT (SELECT dist_quantile(d, 0.5) FROM v WHERE k = 3),"
                                               " (SELECT dist_quantile(dist_agg(x), 0.5) FROM t WHERE k = 3),"
                                               " (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM t WHERE k = 3)")
        (n,), = result_rows(es, "SELECT count(*) FROM t WHERE k = 3")
        for got in (q50v, q50t):
            (below,), = result_rows(es, f"SELECT count(*) FROM t WHERE k = 3 AND x <= {got}")
            assert abs(below / n - 0.5) <= 0.005 + 1 / n, (got, exact)


def test_ordinary_queries_estimates_and_names(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        res = es.execute_sql("SELECT hll_count_distinct(g % 1000), approx_count_distinct(g::text),"
                             " hll_cardinality(hll_agg(g)), dist_cdf(dist_agg(g), 2500) FROM generate_series(1, 100000) g")
        assert [c.name for c in res.columns] == ["hll_count_distinct", "approx_count_distinct", "hll_cardinality",
                                                 "dist_cdf"]
        (c1, c2, c3, cdf), = result_rows(es, "SELECT hll_count_distinct(g % 1000), approx_count_distinct(g::text),"
                                              " hll_cardinality(hll_agg(g)), dist_cdf(dist_agg(g), 2500)"
                                              " FROM generate_series(1, 100000) g")
        assert abs(c1 - 1000) <= 25 and abs(c2 - 100_000) <= 2430 and abs(c3 - 100_000) <= 2430
        assert abs(cdf - 0.025) <= 0.005
        (f7, total), = result_rows(es, "SELECT freq(f, 7), freq_total(f) FROM (SELECT freq_agg(g % 100) AS f"
                                       " FROM generate_series(1, 100000) g) a")
        assert 1000 <= f7 <= 1000 + 0.002 * 100_000 and total == 100_000
        assert result_rows(es, "SELECT freq(freq_agg((g % 100)::text), '7') >= 1000 FROM generate_series(1, 100000) g") \
            == [(True,)]
        # no rows: no sketch (NULL), a count of 0
        assert result_rows(es, "SELECT hll_agg(g), hll_count_distinct(g), dist_agg(g) FROM generate_series(1, 0) g") \
            == [(None, 0, None)]
        # the union of per-group sketches is the sketch of all the values
        assert result_rows(es, "SELECT (SELECT hll_union_agg(h) FROM (SELECT g % 7 AS k, hll_agg(g) AS h"
                               " FROM generate_series(1, 5000) g GROUP BY 1) a)"
                               " = (SELECT hll_agg(g) FROM generate_series(1, 5000) g)") == [(True,)]


@pytest.mark.parametrize("sql, state", [
    ("SELECT hll_union_agg(1)", "42883"),
    ("SELECT dist_agg('a'::text)", "42883"),
    ("SELECT hll_cardinality('\\x0102'::bytea)", "22023"),
    ("SELECT dist_quantile(dist_agg(1.0), 2)", "22023"),
    ("SELECT dist_agg(DISTINCT 1.0)", "0A000"),
    ("SELECT freq_agg(DISTINCT 1)", "0A000"),
    ("SELECT hll_agg(1, 12)", "0A000"),        # PipelineDB's hll_agg(x, p): refused, p is fixed at 14
    ("SELECT freq_total('\\x00'::bytea)", "22023"),
])
def test_errors(tmp_path, sql, state):
    assert_sqlstate(str(tmp_path / "d"), sql, state)


def test_catalog_lists_the_sketch_functions(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        got = set(result_rows(es, "SELECT proname, prokind::text FROM pg_proc WHERE proname IN ('hll_agg',"
                                  " 'hll_union_agg', 'hll_count_distinct', 'approx_count_distinct', 'hll_cardinality',"
                                  " 'dist_agg', 'dist_quantile', 'dist_cdf', 'freq_agg', 'freq', 'freq_total')"))
        assert got == {("hll_agg", "a"), ("hll_union_agg", "a"), ("hll_count_distinct", "a"),
                       ("approx_count_distinct", "a"), ("hll_cardinality", "f"), ("dist_agg", "a"),
                       ("dist_quantile", "f"), ("dist_cdf", "f"), ("freq_agg", "a"), ("freq", "f"),
                       ("freq_total", "f")}


def test_llvm_backend_falls_back_with_the_same_result_and_spark_builds_sketches(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        es.execute_sql("SET executor_backend = 'llvm'")
        _setup(es.execute_sql)
        _insert(es.execute_sql, 1, 9000)
        _check_view_equals_table(lambda q: result_rows(es, q))
        desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('s')")[0][0])
        assert desc["pushable"], desc["reason"]          # executors build the sketch states (spark/sketch_states.py)
        assert {st["kind"] for st in desc["views"][0]["pipelines"][0]["states"]} == {"sketch"}
        (per_group,), = result_rows(es, "SELECT bytes_per_group FROM splitstream.views WHERE name = 'v'")
        assert per_group >= 2 * 16384                 # two dense HLLs per group, measured


def test_views_with_sketches_survive_kill9(ss_server_factory):
    survives_kill9(ss_server_factory(), _setup, _insert, _check_view_equals_table, (1, 5000), (5001, 9000), (9001, 9500))


#: top-k (exact: at most 3k values), Bloom, set, first values and keyed max: entry states gather their own groups
EXACT_IN_WINDOWS = ("topk_agg(x % 7, 3) AS t, set_agg(x) AS st, bloom_agg(x) AS bl, first_values(2, x) AS fv,"
                    " keyed_max(x, x * 2) AS km")


@pytest.mark.parametrize("window", ["TUMBLE(ev, ts, INTERVAL '1 minute')",
                                    "HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '2 minutes')"])
def test_windowed_views_with_retention_equal_a_table(tmp_path, window):
    """Window panes merge and retention re-keys the kept groups: every
    sketch of a kept window equals the one over a table of its rows."""
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE FOREIGN TABLE ev (k int, x int, ts timestamptz) SERVER stream")
        es.execute_sql("CREATE TABLE evt (k int, x int, ts timestamptz)")
        es.execute_sql(f"CREATE VIEW w WITH (retention = '3 minutes') AS SELECT window_start, k, hll_agg(x) AS h,"
                       f" freq_agg(x) AS f, dist_agg(x) AS d, {EXACT_IN_WINDOWS} FROM {window} GROUP BY window_start, k")
        for minute in range(12):
            for target in ("ev", "evt"):
                es.execute_sql(f"INSERT INTO {target} SELECT g % 3, (g * 37) % 101,"
                               f" timestamptz '2024-01-01 00:00:00+00' + interval '{minute} minutes'"
                               f" + g * interval '1 second' FROM generate_series(0, 59) g")
            view = result_rows(es, "SELECT window_start, k, h, f, t, st, bl, fv, km FROM w ORDER BY 1, 2")
            (n_windows,), = result_rows(es, "SELECT count(DISTINCT window_start) FROM w")
            assert n_windows <= 8
            starts = ", ".join(f"'{r[0].isoformat()}'" for r in view) or "NULL"
            oracle = result_rows(es, f"SELECT window_start, k, hll_agg(x), freq_agg(x), {EXACT_IN_WINDOWS}"
                                     f" FROM {window.replace('ev,', 'evt,')}"
                                     f" WHERE window_start IN ({starts}) GROUP BY 1, 2 ORDER BY 1, 2")
            assert view == oracle, minute
