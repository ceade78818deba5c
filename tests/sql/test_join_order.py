"""The cost-based join order (issue 18, item 4): estimates from samples and
distinct counts, dynamic programming over connected subsets, the build side
by size, and EXPLAIN's estimated rows beside the actual ones."""
from __future__ import annotations

import re

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Batch, Col

from splitstream.executor.sql.planner import join_order
from splitstream.executor.sql.planner.cardinality import ItemEstimate
from tests.support.engine import open_engine, plain_session, result_rows


class _Known:
    """A table sample stand-in with given distinct counts."""

    def __init__(self, ndv):
        self.ndv_of, self.batch = ndv, Batch([Col(np.zeros(1, np.int64), None, 20)] * len(ndv), 1)

    def ndv(self, i):
        return self.ndv_of[i]


def _graph(rows, ndvs, edges):
    items = [ItemEstimate(r, _Known(list(n))) for r, n in zip(rows, ndvs)]
    g = join_order.JoinGraph(items)
    for (a, ca), (b, cb) in edges:
        g.eq_keys.append(((1 << a) | (1 << b), ((a, ca), (b, cb))))
    return g


def test_join_size_is_product_over_larger_distinct_count():
    g = _graph([1000, 50], [[100], [50]], [((0, 0), (1, 0))])
    assert join_order.subset_rows(g, 0b11) == pytest.approx(1000 * 50 / 100)


def test_composite_key_does_not_multiply_selectivities():
    # two keys between the same items (a composite foreign key): correlated, so
    # the most selective one counts, not 1/200 x 1/100
    g = _graph([8000, 6000], [[200, 100], [200, 100]], [((0, 0), (1, 0)), ((0, 1), (1, 1))])
    assert join_order.subset_rows(g, 0b11) == pytest.approx(8000 * 6000 / 200)


def test_chain_avoids_cross_product_and_builds_the_smaller_side():
    # a(1e6) - b(1000) - c(10): c is written first but joins only b
    g = _graph([10, 1_000_000, 1000], [[10], [1000], [1000, 10]], [((1, 0), (2, 0)), ((2, 1), (0, 0))])
    tree = join_order.best_tree(g)
    assert tree == (1, (2, 0)), tree           # the big table probes (b join c)


def test_disconnected_group_is_left_to_the_greedy_order():
    g = _graph([10, 20, 30], [[10], [20], [30]], [((0, 0), (1, 0))])
    assert join_order.best_tree(g) is None


def test_beyond_the_limit_no_dp():
    n = join_order.DP_LIMIT + 1
    g = _graph([10] * n, [[10]] * n, [((k, 0), (k + 1, 0)) for k in range(n - 1)])
    assert join_order.best_tree(g) is None


@pytest.fixture()
def es(tmp_path):
    with open_engine(str(tmp_path)) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE TABLE big (id int, k int, v int)")
        s.execute_sql("CREATE TABLE mid (k int, g int)")
        s.execute_sql("CREATE TABLE small (g int, name text)")
        s.execute_sql("INSERT INTO big SELECT i, i % 500, i % 7 FROM generate_series(1, 20000) i")
        s.execute_sql("INSERT INTO mid SELECT i, i % 10 FROM generate_series(0, 499) i")
        s.execute_sql("INSERT INTO small SELECT i, 'n' || i FROM generate_series(0, 9) i")
        yield s


QUERY = ("SELECT count(*), sum(big.id) FROM small, big, mid "
         "WHERE big.k = mid.k AND mid.g = small.g AND small.name = 'n3' AND big.v < 3")


def _expected():
    ids = [i for i in range(1, 20001) if (i % 500) % 10 == 3 and i % 7 < 3]
    return [(len(ids), sum(ids))]


def test_reordered_join_answers_as_written(es):
    assert result_rows(es, QUERY) == _expected()


def test_explain_analyze_estimates_beside_actual_rows(es):
    lines = [r[0] for r in result_rows(es, "EXPLAIN ANALYZE " + QUERY)]
    joins = [ln for ln in lines if ln.lstrip(" ->").startswith("Hash Join")]
    assert len(joins) == 2, lines
    for ln in joins:
        m = re.search(r"\(rows=(\d+)\)\s+\(actual rows=(\d+)", ln)
        assert m is not None, ln
        est, actual = int(m.group(1)), int(m.group(2))
        assert actual / 10 <= est <= actual * 10, ln
    # the big table is the top join's probe (first) child, mid join small its build side
    top = lines.index(joins[0])
    assert "Seq Scan on big" in " ".join(lines[top + 1:top + 3]), lines
    assert lines[top + 3].lstrip(" ->").startswith("Hash Join"), lines


def test_outer_join_keeps_written_order(es):
    q = ("SELECT count(*), count(small.g) FROM mid LEFT JOIN small ON mid.g = small.g AND small.name = 'n3' "
         "JOIN big ON big.k = mid.k WHERE big.v = 0")
    got = result_rows(es, q)
    rows = [(i % 500) % 10 for i in range(1, 20001) if i % 7 == 0]
    assert got == [(len(rows), sum(1 for g in rows if g == 3))]


def test_many_items_fall_back_to_greedy(es):
    n = join_order.DP_LIMIT + 2
    items = ", ".join(f"small s{i}" for i in range(n))
    conds = " AND ".join(f"s{i}.g = s{i + 1}.g" for i in range(n - 1))
    assert result_rows(es, f"SELECT count(*) FROM {items} WHERE {conds}") == [(10,)]


def test_numeric_filter_is_estimated_on_the_sample(es):
    # a numeric(p,s) filter evaluated on the sample, in the form the scan hands it to filters
    es.execute_sql("CREATE TABLE priced (k int, price numeric(15,2))")
    es.execute_sql("INSERT INTO priced SELECT i % 500, (i % 100) + 0.25 FROM generate_series(0, 9999) i")
    q = ("SELECT count(*) FROM priced, mid, small WHERE priced.k = mid.k AND mid.g = small.g "
         "AND priced.price < 5.00")
    lines = [r[0] for r in result_rows(es, "EXPLAIN ANALYZE " + q)]
    for ln in lines:
        m = re.search(r"Join\s+\(rows=(\d+)\)\s+\(actual rows=(\d+)", ln)
        if m is not None:
            est, actual = int(m.group(1)), int(m.group(2))
            assert actual / 2 <= est <= actual * 2, lines      # the default 1/3 would be 6x off
    assert result_rows(es, q) == [(sum(1 for i in range(10000) if i % 100 < 5),)]


def _join_estimates(s, q) -> list[tuple[int, int, str]]:
    """(estimate, actual, line) of every join of EXPLAIN ANALYZE ``q``."""
    out = []
    for ln in (r[0] for r in result_rows(s, "EXPLAIN ANALYZE " + q)):
        if "Join" in ln and not ln.lstrip().startswith("Pipeline"):
            m = re.search(r"\(rows=(\d+)\)\s+\(actual rows=(\d+)", ln)
            assert m is not None, f"a join without an estimate: {ln}"
            out.append((int(m.group(1)), int(m.group(2)), ln))
    return out


@pytest.fixture()
def dated(tmp_path):
    """orders and their lines, each line shipped within 30 days of its order:
    a filter on each side's date is correlated across the join."""
    with open_engine(str(tmp_path)) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE TABLE ord (ok int, od int, cust int)")
        s.execute_sql("CREATE TABLE line (lok int, sd int)")
        s.execute_sql("CREATE TABLE cust (ck int, seg int)")
        s.execute_sql("INSERT INTO ord SELECT i, i % 1000, i % 300 FROM generate_series(1, 20000) i")
        s.execute_sql("INSERT INTO line SELECT (i % 20000) + 1, ((i % 20000) + 1) % 1000 + (i % 30) "
                      "FROM generate_series(0, 79999) i")
        s.execute_sql("INSERT INTO cust SELECT i, i % 5 FROM generate_series(0, 299) i")
        yield s


def test_correlated_filters_are_followed_through_the_join(dated):
    # orders before day 500 joined to lines shipped after day 520: only the
    # few orders of days 491..499 qualify; independence would say ~half of all
    q = "SELECT count(*) FROM line JOIN ord ON lok = ok WHERE od < 500 AND sd > 520"
    (est, actual, ln), = _join_estimates(dated, q)
    assert actual == result_rows(dated, q)[0][0] > 0
    assert actual / 3 <= est <= actual * 3, ln


def test_semi_anti_and_outer_joins_are_estimated(dated):
    qs = ["SELECT count(*) FROM ord WHERE EXISTS (SELECT 1 FROM line WHERE lok = ok AND sd > 1020)",
          "SELECT count(*) FROM ord WHERE NOT EXISTS (SELECT 1 FROM line WHERE lok = ok AND sd > 1020)",
          "SELECT count(*) FROM cust LEFT JOIN ord ON ck = cust AND od = 7",
          "SELECT count(*) FROM ord JOIN cust ON ck = cust JOIN line ON lok = ok WHERE seg = 2 AND sd < 100"]
    for q in qs:
        joins = _join_estimates(dated, q)
        assert joins, q
        for est, actual, ln in joins:
            assert max(actual, 1) / 10 <= est <= max(actual, 1) * 10, (q, ln)


def test_having_is_estimated_on_sampled_groups(dated):
    # few orders have lines summing past a high bar: the default 1/3 of the
    # groups would be thousands of times off
    q = ("SELECT count(*) FROM ord WHERE ok IN "
         "(SELECT lok FROM line GROUP BY lok HAVING sum(sd) > 3990)")
    lines = [r[0] for r in result_rows(dated, "EXPLAIN " + q)]
    having = next(ln for ln in lines if "Filter" in ln and "IN (SubPlan)" in ln)
    est = int(re.search(r"\(rows=(\d+)\)", having).group(1))
    actual = result_rows(dated, q)[0][0]
    assert max(actual, 1) / 10 <= est <= max(actual, 1) * 10, (actual, lines)
