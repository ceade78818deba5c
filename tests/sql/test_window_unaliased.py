"""Issue 15, window functions without an alias: ``rank() OVER (...)`` and
``sum(x) OVER (...)`` unaliased failed with 42803 (an aggregate under OVER
was taken for a grouped query).  Each call is compared with PostgreSQL 15,
with and without an alias: values, column names, result types."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches, table_on_both

CALLS = [
    "rank() OVER (ORDER BY x)", "dense_rank() OVER (PARTITION BY g ORDER BY x)", "row_number() OVER (ORDER BY x)",
    "sum(x) OVER ()", "sum(x) OVER (ORDER BY x)", "sum(x) OVER (PARTITION BY g)", "avg(x) OVER (PARTITION BY g)",
    "count(*) OVER ()", "count(x) OVER (PARTITION BY g ORDER BY x)", "max(x) OVER (ORDER BY x ROWS 1 PRECEDING)",
    "min(x) OVER (PARTITION BY g)", "lag(x) OVER (ORDER BY x)", "lead(x, 2, 0) OVER (ORDER BY x)",
    "first_value(x) OVER (PARTITION BY g ORDER BY x)", "ntile(2) OVER (ORDER BY x)",
    "sum(x) OVER (ORDER BY x) + 1", "(sum(x) OVER ())::text",
]


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("win"), "x int, g text",
                       "(1, 'a'), (2, 'a'), (3, 'b'), (5, 'b'), (8, 'b')") as name:
        yield name


@pytest.mark.parametrize("alias", ["", " AS w"], ids=["unaliased", "aliased"])
def test_window_calls(table, alias, ss_conn, pg_conn):
    sqls = [f"SELECT x, {call}{alias} FROM {table} ORDER BY x" for call in CALLS]
    sqls.append(f"SELECT g, sum(x), rank() OVER (ORDER BY sum(x)){alias} FROM {table} GROUP BY g ORDER BY g")
    sqls.append(f"SELECT g, sum(sum(x)) OVER (){alias} FROM {table} GROUP BY g ORDER BY g")
    wrong = mismatches(ss_conn, pg_conn, sqls)
    assert not wrong, "\n".join(wrong)


def test_ungrouped_column_under_window_still_refused(table, ss_conn, pg_conn):
    """An aggregate next to a window over an ungrouped column stays 42803."""
    sql = f"SELECT sum(x), sum(x) OVER () FROM {table}"
    assert not mismatches(ss_conn, pg_conn, [sql])
