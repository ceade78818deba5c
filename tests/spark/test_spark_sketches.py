"""Spark pushdown of the sketch aggregates (issue 17 scope 7): executors
build HyperLogLog, count-min, t-digest, top-k, Bloom, set, keyed and
first-values states and ship them; the views equal the same views fed rows
(forged states: tests/sketches/test_sketch_pushdown.py)."""
from __future__ import annotations

import numpy as np
import pytest

from splitstream.executor.execution.sketches import tdigest
from tests.spark.test_spark import EVENTS_DDL, rows, write_rows_and_pushdown

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SKETCH_VIEW = ("SELECT region, hll_agg(entity_id) AS h, freq_agg(duration) AS f, bloom_agg(entity_id) AS b,"
               " set_agg(duration % 11) AS st, exact_count_distinct(entity_id) AS e, topk_agg(entity_id % 7, 3) AS t,"
               " keyed_max(ts, duration) AS km, first_values(3, cost) AS fv, dist_agg(cost) AS d,"
               " count(*) AS n FROM {s} WHERE is_local GROUP BY region")


def test_pushdown_of_sketches_equals_rows(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import describe

    streams = {k: unique_name(f"sk_{k}") for k in ("rows", "push")}
    for s in streams.values():
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
        ss_conn.execute(f"CREATE VIEW {s}_v AS " + SKETCH_VIEW.format(s=s))
    desc = describe(ss_server.url, streams["push"])
    assert desc["pushable"], desc["reason"]
    write_rows_and_pushdown(spark, ss_server.url, streams)
    cols = "region, h, f, b, st, e, t, km, fv, n, dist_quantile(d, 0), dist_quantile(d, 1)"
    a = rows(ss_conn, f"SELECT {cols} FROM {streams['rows']}_v")
    b = rows(ss_conn, f"SELECT {cols} FROM {streams['push']}_v")
    assert a == b and len(a) == 5
    # the t-digests merged from executors' states meet the rank bound against the exact values of region r0
    costs = np.sort(np.array([(i % 13) / 4 for i in range(20000) if i % 5 == 0 and i % 3 != 0]))
    for q in (0.1, 0.5, 0.9):
        (got,), = ss_conn.execute(f"SELECT dist_quantile(d, {q}) FROM {streams['push']}_v WHERE region = 'r0'").fetchall()
        lo, hi = (np.searchsorted(costs, got, side) / len(costs) for side in ("left", "right"))
        assert lo - tdigest.RANK_ERROR <= q <= hi + tdigest.RANK_ERROR, (q, got)
