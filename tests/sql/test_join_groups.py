"""Parenthesized joins in FROM and parenthesized GROUP BY keys, as
pg_get_viewdef and pg_dump write them (``FROM (a JOIN b ON ((...)))``,
``GROUP BY (date_trunc(...))``) and users write them: they were "unsupported
query: Table" and "must appear in the GROUP BY clause".  Compared with
PostgreSQL 15 over the same tables, values and SQLSTATEs; the forms
splitstream refuses (a parenthesized group under an outer join) are 0A000."""
from __future__ import annotations

import pytest

from tests.support.fidelity import simple_outcome

SETUP = ["CREATE TABLE {p}a (id int, x int)", "CREATE TABLE {p}b (id int, y int)", "CREATE TABLE {p}c (id int, z int)",
         "INSERT INTO {p}a VALUES (1, 10), (2, 20), (3, 30), (NULL, 40)",
         "INSERT INTO {p}b VALUES (1, 100), (2, 200), (5, 500)",
         "INSERT INTO {p}c VALUES (1, 7), (3, 9), (5, 11)"]

QUERIES = [
    "SELECT a.x, b.y FROM ({p}a a JOIN {p}b b ON ((a.id = b.id))) ORDER BY 1, 2",
    "SELECT a.x, b.y FROM ({p}a a LEFT JOIN {p}b b ON a.id = b.id) ORDER BY 1, 2",
    "SELECT a.x, b.y, c.z FROM (({p}a a JOIN {p}b b ON a.id = b.id) JOIN {p}c c ON c.id = a.id) ORDER BY 1",
    "SELECT a.x, b.y, c.z FROM ({p}a a LEFT JOIN {p}b b ON a.id = b.id) LEFT JOIN {p}c c ON c.id = b.id "
    "ORDER BY 1, 2, 3",
    "SELECT a.x, b.y, c.z FROM ({p}a a FULL JOIN {p}b b ON a.id = b.id) JOIN {p}c c ON c.id = coalesce(a.id, b.id) "
    "ORDER BY 1, 2, 3",
    "SELECT a.x, b.y, c.z FROM {p}c c, ({p}a a LEFT JOIN {p}b b ON a.id = b.id) WHERE c.id = a.id ORDER BY 1",
    "SELECT count(*) FROM {p}c c, ({p}a a JOIN {p}b b ON a.id = b.id)",
    "SELECT a.x, b.y, c.z FROM {p}a a JOIN ({p}b b JOIN {p}c c ON b.id = c.id) ON a.id = b.id ORDER BY 1",
    "SELECT a.x, b.y, c.z FROM ({p}a a JOIN ({p}b b JOIN {p}c c ON b.id = c.id) ON a.id = c.id) ORDER BY 1",
    "SELECT b.y, count(*) FROM ({p}a a JOIN {p}b b ON a.id = b.id) GROUP BY b.y ORDER BY 1",
    "SELECT x + 1 AS w, count(*) FROM {p}a GROUP BY (x + 1) ORDER BY 1",
    "SELECT x AS w, count(*) FROM {p}a GROUP BY (x) ORDER BY 1",
    "SELECT x, id, count(*) FROM {p}a GROUP BY (x, id) ORDER BY 1, 2",
    "SELECT (x / 20) AS q, count(*) FROM {p}a GROUP BY ((x / 20)) ORDER BY 1",
]


@pytest.fixture
def tables(ss_conn, pg_conn, unique_name):
    p = unique_name("jg") + "_"
    for conn in (ss_conn, pg_conn):
        for sql in SETUP:
            conn.execute(sql.format(p=p))
    yield p
    for conn in (ss_conn, pg_conn):
        for t in "abc":
            conn.execute(f"DROP TABLE IF EXISTS {p}{t}")


@pytest.mark.parametrize("sql", QUERIES)
def test_parenthesized_joins_and_group_keys_agree_with_postgresql(ss_conn, pg_conn, tables, sql):
    q = sql.format(p=tables)
    got, want = simple_outcome(ss_conn, q)[:2], simple_outcome(pg_conn, q)[:2]
    assert got == want
    assert want[0] == "ok"


def test_a_group_under_an_outer_join_is_refused(ss_conn, tables):
    q = f"SELECT 1 FROM {tables}a a LEFT JOIN ({tables}b b JOIN {tables}c c ON b.id = c.id) ON a.id = b.id"
    assert simple_outcome(ss_conn, q)[0] == "0A000"


def test_a_view_written_with_a_parenthesized_join_prints_as_postgresql(ss_conn, pg_conn, tables, unique_name):
    """A view created from pg_dump's text (FROM (a JOIN b ON ((...)))) prints
    the same definition again, as PostgreSQL does (it printed sqlglot's text)."""
    v = unique_name("jgv")
    body = (f"SELECT a.x, count(*) AS count FROM ({tables}a a JOIN {tables}b b ON ((a.id = b.id))) "
            f"GROUP BY a.x")
    outs = []
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE VIEW {v} AS {body}")
        outs.append(conn.execute(f"SELECT pg_get_viewdef('{v}'::regclass)").fetchone()[0])
        conn.execute(f"DROP VIEW {v}")
    assert outs[0] == outs[1]
