"""Which column a bare name in ORDER BY / GROUP BY / DISTINCT ON means, as
PostgreSQL 15's findTargetlistEntrySQL92 decides: ORDER BY looks at output
names first (any item's name, not only aliases), inside an expression at
input columns; GROUP BY at input columns first; two output columns of one
name computing different things are ambiguous (42702); constants are
positions or 42601; a set operation sorts on result columns only.
Each statement is compared with PostgreSQL: rows, names, types, errors."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches, table_on_both

ORDER_BY = [
    "SELECT a AS b, b AS a FROM {t} ORDER BY a",
    "SELECT a AS b, b AS a FROM {t} ORDER BY b",
    "SELECT a AS b, b AS a FROM {t} ORDER BY a + 1",
    "SELECT a AS b, b AS a FROM {t} ORDER BY -a",
    "SELECT a AS b, b AS a FROM {t} ORDER BY (a)",
    "SELECT a AS b, b AS a FROM {t} ORDER BY {t}.a",
    "SELECT a AS b, b AS a FROM {t} ORDER BY a DESC, b",
    "SELECT a AS x, b AS x FROM {t} ORDER BY x",
    "SELECT a AS x, b AS x FROM {t} ORDER BY x + 1",
    "SELECT a, b AS a FROM {t} ORDER BY a",
    "SELECT *, b AS a FROM {t} ORDER BY a",
    "SELECT a, a FROM {t} ORDER BY a",
    "SELECT a, {t}.a FROM {t} ORDER BY a",
    "SELECT a + 1 AS x, a + 1 AS x FROM {t} ORDER BY x",
    "SELECT {t}.a, u.a FROM {t}, {t} u ORDER BY a",
    "SELECT a + 1 FROM {t} ORDER BY \"?column?\"",
    "SELECT upper(c) FROM {t} ORDER BY upper DESC",
    "SELECT c, count(*) FROM {t} GROUP BY c ORDER BY count DESC, c",
    "SELECT c AS a, sum(a) AS s FROM {t} GROUP BY c ORDER BY a",
    "SELECT a AS x, b AS x FROM {t} GROUP BY a, b ORDER BY x",
    "SELECT -b AS a FROM {t} ORDER BY (a), 1",
    "SELECT a, b, c FROM {t} ORDER BY (3) DESC, 1",
    "SELECT DISTINCT a AS b, b AS a FROM {t} ORDER BY a",
    "SELECT DISTINCT ON (a) a AS b, b AS a FROM {t} ORDER BY a",
    "SELECT DISTINCT ON (x) a AS x, b AS x FROM {t} ORDER BY 1",
    "SELECT a FROM {t} ORDER BY 'x'",
    "SELECT a FROM {t} ORDER BY NULL",
    "SELECT a FROM {t} ORDER BY true",
    "SELECT a FROM {t} ORDER BY 1.5",
    "SELECT a FROM {t} ORDER BY 99999999999",
    "SELECT a FROM {t} ORDER BY -1",
    "SELECT a FROM {t} ORDER BY 0",
]

GROUP_BY = [
    "SELECT a % 2 AS b, count(*) FROM {t} GROUP BY b ORDER BY 1, 2",
    "SELECT a % 2 AS a, count(*) FROM {t} GROUP BY a ORDER BY 1, 2",
    "SELECT a % 2 AS k, count(*) FROM {t} GROUP BY k ORDER BY 1, 2",
    "SELECT a % 2 AS k, b AS k FROM {t} GROUP BY k",
    "SELECT a AS k, a AS k FROM {t} GROUP BY k ORDER BY 1",
    "SELECT upper(c), count(*) FROM {t} GROUP BY upper ORDER BY 1",
    "SELECT b AS k, sum(a) FROM {t} GROUP BY ROLLUP (k) ORDER BY 1, 2",
    "SELECT c, sum(a) FROM {t} GROUP BY (1) ORDER BY (2)",
    "SELECT sum(a) AS q FROM {t} GROUP BY q",
    "SELECT row_number() OVER () AS r FROM {t} GROUP BY r",
    "SELECT a FROM {t} GROUP BY 'x'",
    "SELECT a FROM {t} GROUP BY 0",
    "SELECT {t}.a FROM {t}, {t} u GROUP BY a",
]

SET_OPS = [
    "SELECT a AS x, b AS x FROM {t} UNION SELECT 1, 2 ORDER BY x",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY y, x",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY 2 DESC, (1)",
    "SELECT a AS x FROM {t} EXCEPT SELECT 1 ORDER BY (x) DESC",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY x + 1",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY {t}.x",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY z",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY upper(q)",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY 3",
    "SELECT a AS x, b AS y FROM {t} UNION SELECT 1, 2 ORDER BY 'q'",
]


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    # a, b and -b sort three different ways; c repeats
    with table_on_both((ss_conn, pg_conn), unique_name("names"), "a int, b int, c text",
                       "(1, 3, 'x'), (2, 1, 'y'), (3, 2, 'z'), (4, 4, 'x')") as name:
        yield name


@pytest.mark.parametrize("sqls", [ORDER_BY, GROUP_BY, SET_OPS], ids=["order_by", "group_by", "set_ops"])
def test_names_resolve_as_postgresql(table, sqls, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in sqls])
    assert not wrong, "\n".join(wrong)
