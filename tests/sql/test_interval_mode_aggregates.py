"""sum(interval), avg(interval) and mode() WITHIN GROUP (ORDER BY x), in
queries and in continuous views, compared with PostgreSQL 15 (issue 14: they
failed with internal errors).  avg(interval) is interval_div of the sum by the
count, so months and days cascade down as PostgreSQL's do; mode() keeps the
first most frequent value in the WITHIN GROUP order (the smallest among ties,
the largest under DESC)."""
from __future__ import annotations

import pytest

from tests.support.diff import assert_same, execute
from tests.support.fidelity import table_on_both

ROWS = [
    "(1, '1 day', 3, 'b')", "(1, '2 hours', 1, 'a')", "(2, NULL, NULL, NULL)", "(1, '1 mon 3 sec', 2, 'c')",
    "(1, '1 day', 3, 'b')", "(1, '2 hours', 1, 'a')", "(3, '-7 hours', 5, 'z')", "(3, '1 mon', 5, 'z')",
    "(3, '1 day 00:00:01', 4, 'y')", "(4, '1 year 2 mons 3 days 04:05:06.789', 9, 'q')",
]
AGGS = ("sum(x) AS s, avg(x) AS a, mode() WITHIN GROUP (ORDER BY x) AS mx, "
        "mode() WITHIN GROUP (ORDER BY y DESC) AS my, mode() WITHIN GROUP (ORDER BY t) AS mt")


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("t"), "k int, x interval, y int, t text", ", ".join(ROWS)) as name:
        yield name


@pytest.mark.parametrize("query", [
    "SELECT {aggs} FROM {t}",
    "SELECT k, {aggs} FROM {t} GROUP BY k ORDER BY k",
    "SELECT {aggs} FROM {t} WHERE x IS NULL",
    "SELECT avg(x) FILTER (WHERE k = 3), sum(x * 1.5) FROM {t}",
])
def test_interval_and_mode_aggregates_match_postgres(ss_conn, pg_conn, table, query) -> None:
    sql = query.format(aggs=AGGS, t=table)
    assert_same(execute(ss_conn, sql), execute(pg_conn, sql))


def test_sum_of_intervals_out_of_range(ss_conn, pg_conn, table) -> None:
    sql = f"SELECT sum(x * 1e9) FROM {table}"
    got, want = execute(ss_conn, sql), execute(pg_conn, sql)
    assert want.sqlstate == "22008"
    assert_same(got, want)


def test_interval_and_mode_aggregates_in_a_continuous_view(ss_conn, pg_conn, table, unique_name) -> None:
    stream, view = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {stream} (k int, x interval, y int, t text) SERVER stream")
    try:
        ss_conn.execute(f"CREATE VIEW {view} AS SELECT k, {AGGS} FROM {stream} GROUP BY k")
        ss_conn.execute(f"INSERT INTO {stream} VALUES (2, NULL, NULL, NULL)")     # an all-NULL batch first
        for row in ROWS:                                                        # then one batch per row
            ss_conn.execute(f"INSERT INTO {stream} VALUES {row}")
        assert_same(execute(ss_conn, f"SELECT * FROM {view} ORDER BY k"),
                    execute(pg_conn, f"SELECT k, {AGGS} FROM (SELECT * FROM {table} UNION ALL "
                                     f"SELECT 2, NULL, NULL, NULL) u GROUP BY k ORDER BY k"))
    finally:
        ss_conn.execute(f"DROP FOREIGN TABLE {stream} CASCADE")
