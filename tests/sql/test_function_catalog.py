"""Issue 15, the function catalog: calls bind by the name the user wrote,
through PostgreSQL's overload rules, and every answer -- values, column
names, result types, and an error's SQLSTATE, message and hint -- is
PostgreSQL 15's."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches

CALLS = [
    # written names survive (sqlglot would say length, position, lpad, current_version ...)
    "SELECT char_length('abc'), character_length('ab'), length('x'), strpos('abc', 'c')",
    "SELECT rpad('a', 3, 'x'), lpad('a', 3), rpad('abc', 2), ltrim('  a'), rtrim('a  '), btrim('xax', 'x')",
    "SELECT lower('ABC'), upper('abc'), initcap('hello world'), md5('a'), reverse('abc'), repeat('ab', 2)",
    "SELECT version() LIKE 'PostgreSQL 15%'",
    "SELECT concat(1, 'a', NULL, 2.5), concat_ws('-', 1, 'b', NULL)",
    "SELECT substr('abcdef', 2), substr('abcdef', 2, 3), split_part('a,b,c', ',', 2), starts_with('abc', 'ab')",
    "SELECT regexp_replace('aaa', 'a', 'b'), regexp_replace('aaa', 'a', 'b', 'g')",
    # overloads: exact, implicit casts, preferred types, unknown literals
    "SELECT round(1), round(2.5), round(2.567, 2), round('1.5'), trunc(2.7), trunc(-2.7::float8)",
    "SELECT sqrt(4), sqrt('4'), abs(-3::int2), abs(-2.5), abs(-7::bigint), abs(-1.5::real)",
    "SELECT mod(5::int2, 2), mod(7, 3), mod(7::bigint, 3), mod(5, 2.5), power(2, 10), pow(2.0, 3)",
    "SELECT ceil(1.2), ceiling(-1.2::float8), floor(1.8), floor(2), sign(-3), sign(2.5), exp(0), ln(1)",
    "SELECT log(100), log10(1000::float8), pi() > 3",
    "SELECT age(timestamp '2020-03-01', timestamp '2020-01-15')",
    "SELECT date_part('year', date '2020-03-04'), date_part('epoch', interval '1 day'), date_part(NULL, now()), "
    "date_part('hour', timestamp '2020-01-01 10:00'), date_part(f, timestamp '2020-01-01 10:00') FROM (VALUES ('minute')) v(f)",
    "SELECT date_part('year', '2020-01-01')",
    # ordered-set aggregates (mode() WITHIN GROUP was an internal error)
    "SELECT mode() WITHIN GROUP (ORDER BY x), percentile_cont(0.5) WITHIN GROUP (ORDER BY x), "
    "percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (2), (4), (NULL)) t(x)",
    "SELECT mode() FROM (VALUES (1)) t(x)",
    "SELECT mode(1) WITHIN GROUP (ORDER BY x) FROM (VALUES (1)) t(x)",
    "SELECT percentile_cont(0.5) FROM (VALUES (1)) t(x)",
    "SELECT every() FROM (VALUES (1)) t(x)",
    "SELECT count(1, 2) FROM (VALUES (1)) t(x)",
    "SELECT row_number() FROM (VALUES (1)) t(x)",
    "SELECT array_append(1, 2)",
    "SELECT array_append(ARRAY[1], 2), array_cat(ARRAY[1], ARRAY[2]), array_length(ARRAY[1, 2], 1), cardinality(ARRAY[1])",
    # errors name the written function and PostgreSQL's type words
    "SELECT lower(1)",
    "SELECT substr(1, 2)",
    "SELECT round(1, 2, 3)",
    "SELECT lpad(5, 3)",
    "SELECT foo(1, 'a', NULL)",
    "SELECT Foo(1.5, now())",
    "SELECT concat_ws()",
    "SELECT approx_distinct(1)",
    "SELECT abs('x')",
    "SELECT upper(true)",
    "SELECT starts_with(1::smallint, 'a')",
    "SELECT sum('a'::text)",
    "SELECT nosuchagg(x) FROM (VALUES (1)) t(x) GROUP BY x",
    "SELECT nosuchwin(x) OVER () FROM (VALUES (1)) t(x)",
]


@pytest.mark.parametrize("sql", CALLS)
def test_call_like_postgres(sql, ss_conn, pg_conn):
    assert not mismatches(ss_conn, pg_conn, [sql]), "\n".join(mismatches(ss_conn, pg_conn, [sql]))


def test_pg_proc_lists_the_catalog(ss_conn):
    """pg_proc is generated from the registry: overloads with their types."""
    cur = ss_conn.execute(
        "SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), p.prokind "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'pg_catalog' AND p.proname IN ('round', 'count', 'rank', 'concat') ORDER BY 1, 2")
    assert cur.fetchall() == [
        ("concat", 'VARIADIC "any"', "text", "f"),
        ("count", "", "bigint", "a"),
        ("count", '"any"', "bigint", "a"),
        ("rank", "", "bigint", "w"),
        ("rank", 'VARIADIC "any" ORDER BY VARIADIC "any"', "bigint", "a"),
        ("round", "double precision", "double precision", "f"),
        ("round", "numeric", "numeric", "f"),
        ("round", "numeric, integer", "numeric", "f"),
    ]
