"""Issue 15, column names: an unaliased select-list item is named as
PostgreSQL's FigureColname names it -- functions under their written names,
operators ``?column?``, casts by their argument or else their type, CASE,
subqueries, EXISTS, ARRAY, subscripts, row constructors ... -- compared with
PostgreSQL 15's RowDescription (psycopg's cursor.description)."""
from __future__ import annotations

import psycopg
import pytest

TABLE = "CREATE TABLE {t} (x int, s text, a int[], j jsonb, ts timestamptz, b bool)"

ITEMS = [
    # functions under the names written
    "char_length(s)", "character_length(s)", "length(s)", "strpos(s, 'a')", "rpad(s, 3)", "lpad(s, 3)",
    "to_char(ts, 'YYYY')", "version()", "lower(s)", "round(x)", "power(x, 2)", "pow(x, 2)", "abs(x)",
    "now()", "pg_catalog.now()", "count(*)", "sum(x)", "stddev_samp(x)", "coalesce(x, 1)", "nullif(x, 1)",
    "greatest(x, 1)", "least(x, 1)", "concat(s, x)", "date_trunc('day', ts)", "extract(year from ts)",
    "date_part('year', ts)", "substring(s from 1)", "substring(s, 1, 2)", "substr(s, 1)", "position('a' in s)",
    "trim(s)", "trim(leading 'x' from s)", "trim(trailing from s)", "btrim(s)", "string_agg(s, ',')",
    "array_agg(x)", "bool_and(b)", "mode() WITHIN GROUP (ORDER BY x)", "count(*) FILTER (WHERE x > 1)",
    "ts AT TIME ZONE 'UTC'",
    # operators have no name
    "2 ^ 10", "x ^ 2", "true AND null", "b OR b", "NOT b", "x + 1", "-x", "s || 'a'", "j ->> 'k'", "j -> 'k'",
    "j #> '{k}'", "x IS NULL", "x IS DISTINCT FROM 1", "x BETWEEN 1 AND 2", "x IN (1, 2)", "s LIKE 'a%'",
    "s ~ 'a'", "x = ANY(a)", "1", "'a'", "NULL", "b IS TRUE",
    # casts: the argument's name, else the (outermost) type's
    "x::text", "x::int::text", "(x + 1)::int", "(x + 1)::int::text", "CAST(1 AS int)", "CAST(1 AS integer)",
    "1::double precision", "'a'::text", "'1'::varchar(3)", "'1'::numeric(10, 2)", "1::bigint", "'t'::bool",
    "'a'::\"char\"", "now()::date", "'2020-01-01'::timestamp with time zone", "1::real", "1::float",
    "'{1}'::int[]", "date '2020-01-01'", "interval '1 day'", "interval '1 day'::text", "CAST(x AS numeric)",
    "'a'::char(2)", "1::smallint", "CAST(NULL AS text)",
    # special forms
    "CASE WHEN b THEN 1 END", "CASE WHEN b THEN 1 ELSE x END", "CASE WHEN b THEN 1 ELSE x END::text", "CASE x WHEN 1 THEN 'a' END::text", "(SELECT 1)", "(SELECT x)",
    "(SELECT max(x) FROM {t})", "(SELECT x AS y)", "EXISTS (SELECT 1)", "NOT EXISTS (SELECT 1)",
    "ARRAY[1, 2]", "ARRAY(SELECT 1)", "a[1]", "(a)[1]", "(x)", "((x))",
    "current_date", "current_timestamp", "localtimestamp", "current_user", "session_user", "current_schema",
]


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    name = unique_name("cn")
    for conn in (ss_conn, pg_conn):
        conn.execute(TABLE.format(t=name))
    yield name
    for conn in (ss_conn, pg_conn):
        conn.execute(f"DROP TABLE {name}")


def _names(conn, sql):
    with conn.cursor() as cur:
        try:
            cur.execute(sql)
        except psycopg.Error as e:
            return f"ERROR {e.sqlstate}: {e.diag.message_primary}"
        return [d.name for d in cur.description]


def test_column_names_like_postgres(table, ss_conn, pg_conn):
    """Each item on its own, so one divergence does not hide the others."""
    wrong = []
    for item in ITEMS:
        sql = f"SELECT {item.replace('{t}', table)} FROM {table}"
        got, want = _names(ss_conn, sql), _names(pg_conn, sql)
        if got != want:
            wrong.append(f"{item}: splitstream {got}, postgresql {want}")
    assert not wrong, "\n".join(wrong)
