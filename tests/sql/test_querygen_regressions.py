"""Minimal reproductions of what the random differential queries
(tests/sql/querygen) found, each compared with PostgreSQL 15 on its own so
a regression names the construct, not a random seed."""
from __future__ import annotations

import pytest

from tests.support.diff import check_both


@pytest.fixture
def zoned(ss_conn, pg_conn):
    """Both connections in a zone whose offset at year 1 is its LMT (-04:56:02)."""
    for conn in (ss_conn, pg_conn):
        conn.execute("SET TimeZone = 'America/New_York'")
    return ss_conn, pg_conn


def test_timestamptz_whose_local_time_is_1_bc(zoned):
    """0001-01-01 00:00+00 is 1 BC in New York: printed, not an internal error."""
    check_both(*zoned, [
        "SELECT '0001-01-01 00:00:00+00'::timestamptz",
        "SELECT '0001-01-01 04:56:01.5+00'::timestamptz, '0001-01-01 04:56:02+00'::timestamptz",
        "SELECT date_trunc('minute', DATE '0001-01-01')::date",
    ])


def test_refused_aggregate_in_grouped_query_is_0a000(ss_conn, pg_conn):
    """corr() is refused with 0A000 and a hint, not 42803 about its argument."""
    for sql in ("SELECT corr(f, f) FROM (VALUES (1.0::float8, true)) v(f, p) GROUP BY p",
                "SELECT CASE WHEN p THEN corr(f, f) END FROM (VALUES (1.0::float8, true)) v(f, p) GROUP BY p"):
        with pytest.raises(Exception) as exc:
            ss_conn.execute(sql)
        assert exc.value.sqlstate == "0A000", sql
        assert exc.value.diag.message_hint, sql


def test_text_of_timestamptz_in_concat_follows_timezone(zoned):
    """concat, concat_ws and || print a timestamptz in the session's TimeZone, as format() does."""
    ts = "TIMESTAMPTZ '2024-03-10 08:00:00+00'"
    check_both(*zoned, [
        f"SELECT concat({ts}, 'a', 1.5::float8, true), concat_ws('-', {ts}, 2.5), 'a' || {ts} || true",
        f"SELECT {ts} || 'x', format('%s|%s', {ts}, {ts}::text)",
    ])


def test_interval_sum_overflow_and_infinite_differences(ss_conn, pg_conn):
    """interval +/- interval past int32 months or days is 22008, as are
    date - date and timestamp - timestamp over an infinity (PostgreSQL 15)."""
    check_both(ss_conn, pg_conn, [
        "SELECT INTERVAL '178000000 years' + INTERVAL '178000000 years'",
        "SELECT INTERVAL '178000000 years' - INTERVAL '-178000000 years'",
        "SELECT INTERVAL '2000000000 days' + INTERVAL '2000000000 days'",
        "SELECT INTERVAL '-178000000 years' + INTERVAL '178000000 years'",
        "SELECT DATE 'infinity' - DATE '2024-01-01'",
        "SELECT DATE '2024-01-01' - DATE '-infinity'",
        "SELECT TIMESTAMPTZ 'infinity' - TIMESTAMPTZ '2024-01-01 00:00+00'",
        "SELECT TIMESTAMP '2024-01-01' - TIMESTAMP '-infinity'",
        "SELECT DATE 'infinity' - 3, DATE '2024-01-01' - DATE '2023-01-01'",
    ])


def test_date_plus_bigint_does_not_exist(ss_conn, pg_conn):
    """date + int8 is no operator of PostgreSQL's (date_pli takes int4): 42883."""
    check_both(ss_conn, pg_conn, [
        "SELECT DATE '2024-01-01' + 2::int8",
        "SELECT 2::int8 + DATE '2024-01-01'",
        "SELECT DATE '2024-01-01' - 2::int8",
        "SELECT DATE '2024-01-01' + 2::int2, DATE '2024-01-01' - 2",
    ])


def test_nullif_has_the_type_its_equality_gives_the_first_argument(ss_conn, pg_conn):
    """nullif(int2, int4) is int2 (int24eq takes it as it is), nullif(int8,
    numeric) numeric; with int4 wrongly widened to int8 an overflow PostgreSQL
    raises went unnoticed."""
    check_both(ss_conn, pg_conn, [
        "SELECT nullif(7::int2, 8), nullif(7, 8::int8), nullif(7::int8, 1.5), nullif(1.5, 2::float8)",
        "SELECT nullif(1.5::float4, 2::float8), nullif(DATE '2024-01-01', TIMESTAMPTZ '2024-01-01 00:00+00')",
        "SELECT nullif('a', 'b'), nullif('1', 1), nullif(1, '1')",
        "SELECT 2147483647 - nullif(-1, 5::int8)",
    ])


def test_numeric_abs_is_exact(ss_conn, pg_conn):
    """abs(numeric) of 31 digits kept them all (Decimal's abs() rounded to 28: a wrong value)."""
    check_both(ss_conn, pg_conn, [
        "SELECT abs(123456789012345678901234567890.5), abs(-123456789012345678901234567890.123456789)",
        "SELECT abs(n) FROM (VALUES (-98765432109876543210987654321.75), (NULL), ('NaN'), ('-Infinity')) v(n)",
    ])


def test_cbrt_is_the_c_librarys(ss_conn, pg_conn):
    """cbrt is libm's, as PostgreSQL's (numpy's differs in the last bit, visible once printed into text)."""
    check_both(ss_conn, pg_conn, [
        "SELECT cbrt(0.1::float8) || '', cbrt(2.5::float8) || '', cbrt(-2.25::float8) || '', cbrt(1e-5::float8) || ''",
        "SELECT cbrt(f) || '' FROM (VALUES (27::float8), ('NaN'), ('-Infinity'), (NULL)) v(f)",
    ])


def test_to_hex_of_int4_and_int8(ss_conn, pg_conn):
    """to_hex(int4) of a negative is 32-bit (ffffffff), of int8 64-bit; to_hex(int2) is ambiguous (42725)."""
    check_both(ss_conn, pg_conn, [
        "SELECT to_hex(-1), to_hex(-1::int8), to_hex(-2147483648), to_hex(255), to_hex(NULL::int4)",
        "SELECT to_hex(b) FROM (VALUES (-5), (42)) v(b)",
        "SELECT to_hex(1::int2)",
    ])


def test_real_compares_with_numeric_as_float8(ss_conn, pg_conn):
    """real = numeric (or int) is float48eq after widening both to float8,
    not a comparison of reals: 1.1::float4 = 1.1 is false."""
    check_both(ss_conn, pg_conn, [
        "SELECT 1.1::float4 = 1.1, 1.1::float4 < 1.1, 1.1 = 1.1::float4, 1.1::float4 IS DISTINCT FROM 1.1",
        "SELECT 16777217 = 16777216::float4, 16777217::int8 > 16777216::float4, 0.1::float4 = 0.1::float8",
        "SELECT 1.1::float4 IN (1.1, 2), 1.1::float4 BETWEEN 1.1 AND 2, 0.1::float4 = 0.1::float4",
        "SELECT nullif(1.1::float4, 1.1), nullif(1, 1.5::float4)",
    ])


def test_numeric_aggregates_over_a_list_are_exact(ss_conn, pg_conn):
    """sum/avg(DISTINCT numeric) kept every digit (Python's sum() rounded to
    28: a wrong value) and inf + -inf is NaN; var_pop over values whose
    squares pass 60 digits no longer fails internally."""
    big = "(VALUES (123456789012345678901234567890.5), (1.25), (1.25)) v(n)"
    check_both(ss_conn, pg_conn, [
        f"SELECT sum(DISTINCT n), avg(DISTINCT n) FROM {big}",
        "SELECT sum(DISTINCT n), avg(DISTINCT n) FROM (VALUES ('Infinity'::numeric), ('-Infinity')) v(n)",
        "SELECT sum(DISTINCT n), avg(DISTINCT n) FROM (VALUES ('NaN'::numeric), (1)) v(n)",
        "SELECT var_pop(n * n), var_samp(n * n * n), stddev_samp(n * n) FROM "
        "(VALUES (0.000000001), (10.00), (123.456), (0)) v(n)",
        f"SELECT var_pop(n), stddev_pop(n * n) FROM {big}",
    ])


def test_named_arguments_of_the_make_functions(ss_conn, pg_conn):
    """make_interval(days => 3) and the other make_* constructors in named
    notation (they were 0A000 'unsupported expression'); wrong names, types
    and orders fail as in PostgreSQL."""
    check_both(ss_conn, pg_conn, [
        "SELECT make_interval(days => 3), make_interval(hours => 2, days => 1), make_interval(1, days => 2)",
        "SELECT make_interval(secs => 1.5), make_interval(weeks => -1, mins => 90)",
        "SELECT make_date(year => 2024, month => 2, day => 29), make_date(2024, day => 1, month => 3)",
        "SELECT make_timestamptz(2024, 1, 2, 3, 4, 5, timezone => 'Asia/Tokyo')",
        "SELECT make_time(hour => 1, min => 2, sec => 3.5)",
        "SELECT make_interval(days => 2::int8)",
        "SELECT make_interval(dayz => 1)",
        "SELECT make_interval(days => 1, days => 2)",
        "SELECT make_interval(days => 1, 2)",
        "SELECT make_date(year => 2024, month => 2)",
        "SELECT abs(x => 1)",
    ])


def test_string_agg_of_char_n_drops_the_padding(ss_conn, pg_conn):
    """string_agg takes text: a char(4) value arrives without its trailing blanks ('a', not 'a   ')."""
    check_both(ss_conn, pg_conn, [
        "SELECT string_agg('a'::char(4), ','), string_agg('a'::char(4), ','::char(3))",
        "SELECT string_agg(DISTINCT c, ',' ORDER BY c) FROM (VALUES ('x'::char(3)), ('y'), ('x')) v(c)",
    ])


def test_infinities_order_beyond_years_1_and_9999(ss_conn, pg_conn):
    """greatest/least, min/max(DISTINCT) and an aggregate's ORDER BY rank
    'infinity' above 9999-12-31 and '-infinity' below 0001-01-01 (the
    markers tied with those dates: least('0001-01-01', '-infinity') was 0001-01-01)."""
    vals = "(VALUES (DATE '0001-01-01'), ('-infinity'), ('9999-12-31'), ('infinity'), (NULL)) v(d)"
    check_both(ss_conn, pg_conn, [
        f"SELECT d, least(d, DATE '-infinity'), greatest(d, DATE 'infinity') FROM {vals}",
        f"SELECT min(DISTINCT d), max(DISTINCT d), array_agg(d ORDER BY d)::text FROM {vals}",
        f"SELECT array_agg(d::timestamptz ORDER BY d::timestamptz DESC)::text, "
        f"greatest(d::timestamp, TIMESTAMP 'infinity') FROM {vals} GROUP BY d",
    ])


def test_window_sum_of_int8_near_its_limits(ss_conn, pg_conn):
    """sum(int8) over a ROWS frame is exact past int64 (its prefix sums wrapped
    when a value was int64's minimum, whose np.abs is negative)."""
    check_both(ss_conn, pg_conn, [
        "SELECT i, sum(v) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM "
        "(VALUES (1, -9223372036854775808), (2, -9223372036854775808), (3, -4), (4, 5)) t(i, v) ORDER BY i",
    ])


def test_lag_lead_default_takes_the_common_type(ss_conn, pg_conn):
    """lag/lead(anycompatible, int, anycompatible): lead(int2, 2, -1) is int4,
    lag(int2, 1, 1.5) numeric; an unknown literal alone is 42804."""
    t = "(VALUES (1, 5::int2, 'a'), (2, 7::int2, 'b')) v(i, a, s)"
    check_both(ss_conn, pg_conn, [
        f"SELECT i, lead(a, 2, -1) OVER (ORDER BY i), lag(a, 1, 1.5) OVER (ORDER BY i), "
        f"lead(s, 1, 'none') OVER (ORDER BY i), lag('a', 1, 'b') OVER (ORDER BY i) FROM {t} ORDER BY i",
        f"SELECT lag('Zz', 1) OVER (ORDER BY i) FROM {t}",
        f"SELECT first_value('12') OVER (ORDER BY i) FROM {t}",
        f"SELECT lag(a, 1, DATE '2024-01-01') OVER (ORDER BY i) FROM {t}",
    ])


def test_timestamptz_whose_instant_is_1_bc(ss_conn, pg_conn):
    """date_trunc in Berlin (LMT +00:53:28) moves 0001-01-01 00:00+00 to an
    instant in 1 BC UTC: printed, not an internal error."""
    for conn in (ss_conn, pg_conn):
        conn.execute("SET TimeZone = 'Europe/Berlin'")
    check_both(ss_conn, pg_conn, [
        "SELECT date_trunc('minute', '0001-01-01 00:00:00+00'::timestamptz)",
        "SELECT date_trunc('hour', t) FROM (VALUES ('0001-01-01 00:00:00+00'::timestamptz), ('infinity'), (NULL)) v(t)",
    ])


def test_array_agg_of_an_unknown_literal_is_ambiguous(ss_conn, pg_conn):
    """array_agg('a') fits array_agg(anynonarray) and array_agg(anyarray): 42725, as PostgreSQL."""
    check_both(ss_conn, pg_conn, [
        "SELECT array_agg('a' ORDER BY 'a') FROM (VALUES (1)) v(i)",
        "SELECT array_agg(NULL) FROM (VALUES (1)) v(i)",
        "SELECT array_agg('a'::text) FROM (VALUES (1)) v(i)",
    ])


def test_float_underflow_and_real_overflow(ss_conn, pg_conn):
    """float8 * / ^ with a zero result from non-zero operands is 22003
    underflow, and float4 arithmetic overflows and underflows as float4
    (both answered a value: 0, or a real past its range)."""
    check_both(ss_conn, pg_conn, [
        "SELECT 1e-300::float8 * 1e-300::float8",
        "SELECT 1e-300::float8 / 1e300::float8",
        "SELECT ('-1e-310')::float8 ^ 2",
        "SELECT 1e-30::float4 * 1e-30::float4",
        "SELECT 3e38::float4 * 10::float4",
        "SELECT 0::float8 * 1e-300::float8, 0::float8 / 5::float8, 1::float8 / 'Infinity'::float8, 0::float8 ^ 2",
        "SELECT 1.5::float4 * 2::float4, 1::float4 / 3::float4, 1.1::float4 + 2.2::float4",
        "SELECT f * f FROM (VALUES (1e-200::float8), (0), (NULL), ('NaN')) v(f) WHERE f IS NULL OR f = 0",
        "SELECT power(1e-300::float8, 2)",
        "SELECT 2::float8 ^ -2000",
        "SELECT power('Infinity'::float8, -1), 0.5::float8 ^ 'Infinity'::float8, '-Infinity'::float8 ^ -3",
    ])


def test_grouped_numeric_sum_of_opposite_infinities(ss_conn, pg_conn):
    """sum/avg(numeric) per group: infinity + -infinity is NaN (it was an internal error)."""
    check_both(ss_conn, pg_conn, [
        "SELECT g, sum(n), avg(n) FROM (VALUES (1, 123456789012345678901234567890.5), (1, 1.25), "
        "(2, 'Infinity'), (2, '-Infinity'), (3, 'NaN'), (3, 1), (4, 'Infinity'), (4, 2)) v(g, n) GROUP BY g",
    ])


def test_string_types_keep_the_first_in_a_common_type(ss_conn, pg_conn):
    """select_common_type keeps the first of varchar/char/text unless it is
    text: coalesce(char(4), text) keeps the padding ('0   |'), varchar UNION
    text is varchar; an operator still compares as text; min(varchar) is text."""
    check_both(ss_conn, pg_conn, [
        "SELECT coalesce('0'::char(4), 'x'::text) || '|', pg_typeof(coalesce('x'::text, '0'::char(4)))",
        "SELECT 'a'::varchar UNION SELECT 'b'::text",
        "SELECT 'a'::text UNION SELECT 'b'::varchar",
        "SELECT CASE WHEN true THEN 'a'::char(3) ELSE 'b'::text END || '|'",
        "SELECT 'a '::char(2) = 'a '::text, 'a'::char(3) IN ('a'::text), 'a'::char(3) IN (SELECT 'a'::text)",
        "SELECT min(s::varchar), max(s::char(3)), min(s::varchar) OVER () FROM (VALUES ('x'), ('y')) v(s)",
    ])
