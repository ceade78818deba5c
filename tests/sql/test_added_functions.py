"""Issue 15, functions the catalog lacked, compared with PostgreSQL 15 with
ordinary values, NULLs and edge values (zero, negative, NaN/Infinity,
empty): values, column names, result types and errors."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches

CALLS = [
    # to_timestamp / to_date
    "SELECT to_timestamp(0), to_timestamp(1.5), to_timestamp(-86400.25), to_timestamp(NULL::float8)",
    "SELECT to_timestamp('NaN'::float8)",
    "SELECT to_timestamp('2020-03-08 13:45:10', 'YYYY-MM-DD HH24:MI:SS'), to_timestamp('2020', 'YYYY'), "
    "to_timestamp('08/03/20 01:02:03 PM', 'DD/MM/YY HH12:MI:SS AM'), to_timestamp('2020-03-08 13:45:10.123', 'YYYY-MM-DD HH24:MI:SS.MS')",
    "SELECT to_date('08 Mar 2020', 'DD Mon YYYY'), to_date('2020-12-31', 'YYYY-MM-DD'), to_date('March 1 1999', 'Month DD YYYY'), "
    "to_date(NULL, 'YYYY')",
    "SELECT to_date('2020-13-01', 'YYYY-MM-DD')",
    # make_interval, justify_*
    "SELECT make_interval(), make_interval(1), make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval(0, 0, 0, 1), "
    "make_interval(-1, 0, 0, 0, -25), make_interval(0, 0, 0, 0, 0, 0, 0.000001)",
    "SELECT justify_hours(interval '27 hours'), justify_hours(interval '-27 hours'), justify_hours(interval '1 day -1 hour'), "
    "justify_days(interval '35 days'), justify_days(interval '-35 days'), justify_days(interval '1 mon -1 day'), "
    "justify_interval(interval '1 mon -1 hour'), justify_interval(interval '-1 mon 49 hours'), justify_interval(interval '0')",
    # width_bucket
    "SELECT width_bucket(5.35, 0.024, 10.06, 5), width_bucket(-1, 0, 10, 5), width_bucket(10, 0, 10, 5), "
    "width_bucket(5, 10, 0, 5), width_bucket(0, 10, 0, 5), width_bucket(2.5::float8, 0, 10, 4), width_bucket(NULL, 0, 1, 2)",
    "SELECT width_bucket(1, 0, 10, 0)",
    "SELECT width_bucket(1, 5, 5, 2)",
    # format
    "SELECT format('Hello %s, %I, %L, %%', 'a', 'B c', 'it''s'), format('%s', NULL), format('%L', NULL), "
    "format('%-5s|%5s|', 'ab', 'cd'), format('%2$s %1$s', 'a', 'b'), format('%s %s', 1.50, true), format('x'), "
    "format(NULL, 1), format('%L', E'a\\\\b')",
    "SELECT format('%s %s', 'a')",
    "SELECT format('%I', NULL)",
    "SELECT format('%0$s', 'a')",
    # hashing and encoding
    "SELECT sha256('abc'), sha224(''::bytea), sha512('\\x00'::bytea), md5(''), encode('\\x0102ff'::bytea, 'hex'), "
    "encode('abc'::bytea, 'base64'), decode('0102', 'hex'), decode('YWJj', 'base64'), encode('\\x00615c80'::bytea, 'escape'), "
    "decode('a\\\\\\\\b\\\\001', 'escape'), encode(''::bytea, 'hex')",
    "SELECT encode(repeat('x', 100)::bytea, 'base64')",
    "SELECT encode('a'::bytea, 'rot13')",
    "SELECT decode('zz', 'hex')",
    "SELECT decode('abc', 'hex')",
    # arrays, json
    "SELECT array_remove(ARRAY[1, 2, 1, NULL], 1), array_remove(ARRAY['a', 'b'], 'b'), array_remove(ARRAY[]::int[], 1), "
    "array_remove(NULL::int[], 1)",
    "SELECT jsonb_build_object('b', 1, 'a', 'x', 'c', NULL), jsonb_build_object(), jsonb_build_object('k', ARRAY[1, 2], 'n', 1.50)",
    "SELECT jsonb_build_object('a')",
    "SELECT jsonb_build_object(NULL, 1)",
    "SELECT json_build_object(NULL, 1)",
    "SELECT json_build_object('a', 1, 'b', NULL), json_build_object()",
    "SELECT pg_notify('c', 'p')",
    "SELECT quote_literal(E'a\\\\b'), quote_literal('it''s'), quote_ident('A b'), quote_ident('ab')",
]


@pytest.mark.parametrize("sql", CALLS)
def test_added_function_like_postgres(sql, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [sql])
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_to_timestamp_reads_the_session_zone(zone, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    sql = ("SELECT to_timestamp('2020-03-08 02:30', 'YYYY-MM-DD HH24:MI'), to_timestamp('2020-11-01 01:30', 'YYYY-MM-DD HH24:MI'), "
           "to_timestamp('2020-06-01', 'YYYY-MM-DD'), to_timestamp(1583650800)")
    wrong = mismatches(ss_conn, pg_conn, [sql])
    assert not wrong, "\n".join(wrong)
