"""Issue 15, json_agg, jsonb_agg, json_object_agg and jsonb_object_agg:
generated over value types (with NULLs, NaN/Infinity, infinities, arrays,
json, text needing escapes) and call forms (ORDER BY inside the call, also
after a second argument; DISTINCT; FILTER; GROUP BY; windows); json_agg's
own spacing, jsonb normalised; errors.  Compared with PostgreSQL 15; and in
a continuous view, maintained as rows arrive, against the same query run by
PostgreSQL over the same rows."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import mismatches

TYPED = {
    "int": "(1), (NULL), (-3), (2)",
    "numeric": "(1.50), (NULL), ('NaN'::numeric), (-0.0), (1e20)",
    "float8": "('NaN'::float8), (1.5e300), ('-Infinity'), (0.1)",
    "text": "('a\"b'), (E'tab\\there'), (NULL), ('é'), ('')",
    "bool": "(true), (false), (NULL)",
    "date": "(date '2020-01-01'), (date 'infinity'), (NULL)",
    "timestamp": "(timestamp '2020-01-01 10:00:00.5'), (timestamp '-infinity')",
    "timestamptz": "(timestamptz '2020-03-08 06:30+00'), (timestamptz '2020-11-01 05:30+00'), (NULL)",
    "interval": "(interval '1 day 02:00'), (interval '-1 mon')",
    "int[]": "(ARRAY[1, 2]), (NULL), (ARRAY[NULL, 3]), ('{}')",
    "json": "('{\"b\": 1, \"a\": [1,  2]}'::json), ('null'::json), (NULL)",
    "jsonb": "('{\"b\": 1, \"a\": 2}'::jsonb), ('[1, \"x\"]'::jsonb)",
}


def _statements():
    for name, rows in TYPED.items():
        src = f"FROM (VALUES {rows}) v(x)"
        yield f"SELECT json_agg(x), jsonb_agg(x) {src}"
        yield f"SELECT json_object_agg('k' || length(x::text), x), jsonb_object_agg(coalesce(x::text, 'null'), x) {src}"
        yield f"SELECT json_agg(x) FILTER (WHERE x IS NOT NULL), jsonb_agg(x) FILTER (WHERE false) {src}"
    src = "FROM (VALUES (1, 'b', 3), (1, 'a', NULL), (2, 'c', 1), (1, 'b', 5)) v(g, k, x)"
    yield f"SELECT json_agg(x ORDER BY x DESC NULLS LAST), jsonb_agg(k ORDER BY x, k), json_agg(DISTINCT k), jsonb_agg(DISTINCT x) {src}"
    yield f"SELECT g, json_agg(x ORDER BY x), json_object_agg(k, x ORDER BY x DESC), jsonb_object_agg(k, x) {src} GROUP BY g ORDER BY g"
    yield (f"SELECT g, json_agg(k) OVER (PARTITION BY g ORDER BY x ROWS 1 PRECEDING),"
           f" jsonb_agg(x) OVER (ORDER BY g, x ROWS UNBOUNDED PRECEDING) {src} ORDER BY g, x")
    yield f"SELECT json_agg(x) {src} WHERE false"
    yield "SELECT json_agg(DISTINCT x) FROM (VALUES ('1'::json)) v(x)"
    yield "SELECT json_agg('a')"
    yield "SELECT json_object_agg('k', NULL), jsonb_object_agg('k', 'v')"
    yield "SELECT json_object_agg(k, 1) FROM (VALUES (NULL::text)) v(k)"
    yield "SELECT jsonb_object_agg(k, 1) FROM (VALUES (ARRAY[1])) v(k)"
    yield "SELECT json_agg(x, x) FROM (VALUES (1)) v(x)"
    yield "SELECT json_object_agg(x) FROM (VALUES (1)) v(x)"


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_json_aggregates_like_postgres(zone, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    wrong = mismatches(ss_conn, pg_conn, list(_statements()))
    assert not wrong, f"{len(wrong)} differ:\n" + "\n".join(wrong[:8])


def test_json_aggregates_in_a_continuous_view(ss_conn, pg_conn, unique_name):
    s, v, t = unique_name("s"), unique_name("v"), unique_name("t")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, tag text) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, json_agg(x ORDER BY x) AS a, jsonb_agg(tag) AS b,"
                    f" jsonb_object_agg(tag, x) AS o, json_agg(x) FILTER (WHERE x > 1) AS f FROM {s} GROUP BY k")
    pg_conn.execute(f"CREATE TABLE {t} (k int, x int, tag text)")
    query = ("SELECT k, json_agg(x ORDER BY x)::text, jsonb_object_agg(tag, x)::text,"
             " (json_agg(x) FILTER (WHERE x > 1))::text FROM {} GROUP BY k ORDER BY k")
    try:
        for rows in ["(1, 3, 'a'), (1, 1, 'b'), (2, NULL, 'c')", "(1, 2, 'a'), (2, 5, 'c'), (3, NULL, 'd')"]:
            ss_conn.execute(f"INSERT INTO {s} VALUES {rows}")
            pg_conn.execute(f"INSERT INTO {t} VALUES {rows}")
            got = ss_conn.execute(f"SELECT k, a::text, o::text, f::text FROM {v} ORDER BY k").fetchall()
            assert got == pg_conn.execute(query.format(t)).fetchall()
        ss_conn.execute(f"INSERT INTO {s} VALUES (4, 1, NULL)")     # a NULL key: the read fails as PostgreSQL's query does
        pg_conn.execute(f"INSERT INTO {t} VALUES (4, 1, NULL)")
        for conn, rel in ((ss_conn, v), (pg_conn, t)):
            with pytest.raises(psycopg.Error) as e:
                conn.execute(f"SELECT o FROM {rel}" if conn is ss_conn else query.format(t)).fetchall()
            assert e.value.sqlstate == "22023" and "field name must not be null" in str(e.value)
    finally:
        ss_conn.execute(f"DROP VIEW IF EXISTS {v}")
        ss_conn.execute(f"DROP FOREIGN TABLE IF EXISTS {s}")
        pg_conn.execute(f"DROP TABLE IF EXISTS {t}")


def test_whole_rows_like_postgres(ss_conn, pg_conn, unique_name):
    """json_agg(t), t.*, a subquery's row: row_to_json's objects, a newline between them."""
    t = unique_name("rows")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (a int, b text, c timetz, d numeric)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 'x\"y', '10:00+02', 'NaN'), (2, NULL, NULL, 1.50), (2, 'z', NULL, NULL)")
    try:
        wrong = mismatches(ss_conn, pg_conn, [
            f"SELECT json_agg(r), jsonb_agg(r ORDER BY a DESC, b) FROM {t} r",
            f"SELECT a, json_agg({t}), json_agg({t}.* ORDER BY b NULLS FIRST), json_object_agg(coalesce(b, '-'), {t}) FROM {t}"
            f" GROUP BY a ORDER BY a",
            f"SELECT s.a, json_agg(s), jsonb_agg(s) FROM (SELECT a, b AS \"Bee\", a * 2 AS twice FROM {t}) s GROUP BY s.a ORDER BY 1",
            f"SELECT json_agg(r) FILTER (WHERE a > 1), json_agg(r) FILTER (WHERE false) FROM {t} r"])
        assert not wrong, "\n".join(wrong)
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")
