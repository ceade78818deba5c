"""DISTINCT aggregates over arrays, json, jsonb, numeric and interval, and
the order jsonb sorts in, compared with PostgreSQL 15: count(DISTINCT
int[]) raised a TypeError (arrays are lists, unhashable), sum/avg(DISTINCT
interval) had no interval arithmetic, json (no equality operator) was
accepted, jsonb sorted as its text ('{"a": 1}' before '{}')."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches, table_on_both

ROWS = """(1, '{1,2}', '{a,b}', '{"a":1}', '{"a":1}', 1.50, '1 day', 'x'),
          (1, '{1,2}', '{a,b}', '{"a":1}', '{"a": 1}', 1.5, '24 hours', 'x'),
          (1, '{3}', '{c}', '[1]', '[1]', 2, '1 mon', 'y'),
          (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
          (2, '{}', '{}', '{}', '{}', 0, '0', ''),
          (2, '{1,NULL}', '{NULL}', '"s"', '"s"', -0.5, '-1 day', 'z'),
          (3, '{{1,2},{3,4}}', '{q}', '1.0', '1.0', 'NaN', '30 days', 'q'),
          (3, '{{1,2},{3,4}}', '{q}', '1', '2', 'NaN', '720 hours', 'q')"""

STATEMENTS = [
    "SELECT count(DISTINCT arr), count(DISTINCT tarr) FROM {t}",
    "SELECT g, count(DISTINCT arr), count(DISTINCT tarr) FROM {t} GROUP BY g ORDER BY g",
    "SELECT count(DISTINCT arr) FILTER (WHERE g = 1) FROM {t}",
    "SELECT min(DISTINCT arr), max(DISTINCT arr), min(DISTINCT tarr) FROM {t}",
    "SELECT g, min(DISTINCT arr), max(DISTINCT tarr) FROM {t} GROUP BY g ORDER BY g",
    "SELECT array_agg(DISTINCT arr) FROM {t}",
    "SELECT array_agg(DISTINCT arr ORDER BY arr) FROM {t} WHERE g = 1",
    "SELECT array_agg(DISTINCT arr) FROM {t} WHERE g = 3",
    "SELECT json_agg(DISTINCT arr), jsonb_agg(DISTINCT tarr) FROM {t}",
    "SELECT count(DISTINCT jb), jsonb_agg(DISTINCT jb), array_agg(DISTINCT jb) FROM {t}",
    "SELECT g, count(DISTINCT jb) FROM {t} GROUP BY g ORDER BY g",
    "SELECT count(DISTINCT n), sum(DISTINCT n), avg(DISTINCT n), array_agg(DISTINCT n) FROM {t}",
    "SELECT count(DISTINCT iv), sum(DISTINCT iv), avg(DISTINCT iv), array_agg(DISTINCT iv) FROM {t}",
    "SELECT g, count(DISTINCT iv), sum(DISTINCT iv), avg(DISTINCT iv) FROM {t} GROUP BY g ORDER BY g",
    "SELECT string_agg(DISTINCT t, ','), string_agg(DISTINCT t, ',' ORDER BY t) FROM {t}",
    "SELECT count(DISTINCT j) FROM {t}",
    "SELECT array_agg(DISTINCT j) FROM {t}",
    "SELECT json_agg(DISTINCT j) FROM {t}",
    "SELECT count(DISTINCT j::text) FROM {t}",
    "SELECT count(DISTINCT arr) OVER () FROM {t}",
    "SELECT DISTINCT j FROM {t}",
    "SELECT j FROM {t} GROUP BY j",
    "SELECT j FROM {t} ORDER BY j",
    "SELECT j FROM {t} UNION SELECT j FROM {t}",
    "SELECT DISTINCT ON (j) j FROM {t}",
    "SELECT count(*) FROM (SELECT j FROM {t} UNION ALL SELECT j FROM {t}) s",
    "SELECT jb FROM {t} ORDER BY jb, g",
    "SELECT arr FROM {t} ORDER BY arr, g",
    "SELECT arr FROM {t} ORDER BY arr DESC, g",
    "SELECT arr, count(*) FROM {t} GROUP BY arr ORDER BY arr",
    "SELECT min(arr), max(arr) FROM {t}",
    "SELECT '{{{{1,2}},{{3,4}}}}'::int[] > '{{1,2,3,4}}'::int[], '{{{{1,2}},{{3,4}}}}'::int[] = '{{1,2,3,4}}'::int[],"
    " '{{1,2}}'::int[] < '{{1,2,0}}'::int[], '{{1,NULL}}'::int[] > '{{1,2}}'::int[]",
    "SELECT jb FROM {t} ORDER BY jb DESC NULLS LAST, g",
    "SELECT DISTINCT jb FROM {t} ORDER BY jb",
    "SELECT jsonb_agg(x ORDER BY x) FROM (VALUES ('[1,2]'::jsonb), ('{{\"b\":1,\"aa\":2}}'), ('{{\"aa\":2,\"b\":1}}'),"
    " ('[]'), ('null'), ('true'), ('false'), ('3'), ('\"z\"'), ('[3]'), ('{{\"a\":{{\"x\":[1]}}}}'), ('{{\"a\":{{}}}}'),"
    " ('[\"a\"]'), ('[null]'), ('2.50')) v(x)",
    "SELECT count(DISTINCT x) FROM (VALUES ('1.0'::jsonb), ('1'), ('[1.0]'), ('[1]'), ('{{\"k\":1.0}}'), ('{{\"k\":1}}')) v(x)",
]


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("dist"),
                       "g int, arr int[], tarr text[], j json, jb jsonb, n numeric, iv interval, t text", ROWS) as name:
        yield name


def test_distinct_aggregates_agree_with_postgresql(table, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in STATEMENTS])
    assert not wrong, "\n".join(wrong)
