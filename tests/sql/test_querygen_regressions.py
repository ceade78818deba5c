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
