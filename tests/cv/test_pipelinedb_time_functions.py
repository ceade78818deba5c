"""PipelineDB's time truncation functions year(ts) ... second(ts)
(pipelinedb--1.0.0.sql: ``year(timestamptz) RETURNS timestamptz``, ...):
date_trunc of that unit in the session's TimeZone, a timestamp argument cast
to timestamptz.  PostgreSQL 15's date_trunc is the oracle, over plain values
and as a continuous view's group key on both executor backends."""
from __future__ import annotations

import random

import pytest

UNITS = ("year", "month", "day", "hour", "minute", "second")
ZONES = ("UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
#: around DST transitions, month ends, a leap day and fractional seconds
VALUES = ["2026-03-08 06:59:59.5+00", "2026-03-08 07:00:00+00", "2026-11-01 05:30:00.25+00",
          "2024-02-29 23:59:59.999999+00", "2025-12-31 23:00:00+00", "1999-04-04 01:30:00-05"]


@pytest.mark.parametrize("zone", ZONES)
def test_values_like_date_trunc(ss_conn, pg_conn, zone):
    # as text: psycopg cannot load infinity
    ours_sql = ", ".join(f"{u}(v::timestamptz)::text, {u}(v::timestamptz::timestamp)::text" for u in UNITS)
    pg_sql = ", ".join(f"date_trunc('{u}', v::timestamptz)::text, "
                       f"date_trunc('{u}', v::timestamptz::timestamp::timestamptz)::text" for u in UNITS)
    values = ", ".join(f"('{v}')" for v in VALUES) + ", (NULL), ('infinity')"
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    try:
        ours = ss_conn.execute(f"SELECT {ours_sql} FROM (VALUES {values}) t(v)").fetchall()
        want = pg_conn.execute(f"SELECT {pg_sql} FROM (VALUES {values}) t(v)").fetchall()
        assert ours == want
        cur = ss_conn.execute("SELECT pg_typeof(year(now()::timestamp)), pg_typeof(second(now()))")
        assert cur.fetchall() == [("timestamp with time zone", "timestamp with time zone")]
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("RESET TimeZone")


def test_wrong_argument_is_undefined(ss_conn):
    with pytest.raises(Exception) as e:
        ss_conn.execute("SELECT hour(1)")
    assert e.value.sqlstate == "42883"


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_group_key_of_a_continuous_view(ss_conn, pg_conn, unique_name, backend):
    s, v, t = unique_name("s"), unique_name("v"), unique_name("t")
    rng = random.Random(7)
    rows = [(rng.randrange(5), f"2026-03-0{rng.randrange(7, 9)} {rng.randrange(24):02}:{rng.randrange(60):02}:"
                                f"{rng.randrange(60):02}.{rng.randrange(10**6):06}+00") for _ in range(300)]
    keys = ", ".join(f"{u}(ts) AS {u}_k" for u in UNITS)
    try:
        ss_conn.execute(f"SET executor_backend = {backend}")
        for conn in (ss_conn, pg_conn):
            conn.execute("SET TimeZone = 'America/New_York'")
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int, ts timestamptz) SERVER pipelinedb")
        ss_conn.execute(f"CREATE VIEW {v} AS SELECT {keys}, count(*), sum(x) FROM {s} "
                        f"GROUP BY {', '.join(f'{u}_k' for u in UNITS)}")
        ss_conn.cursor().executemany(f"INSERT INTO {s} VALUES (%s, %s)", rows)
        ours = ss_conn.execute(f"SELECT * FROM {v} ORDER BY 1, 2, 3, 4, 5, 6").fetchall()
        pg_conn.execute(f"CREATE TABLE {t} (x int, ts timestamptz)")
        pg_conn.cursor().executemany(f"INSERT INTO {t} VALUES (%s, %s)", rows)
        pg_keys = ", ".join(f"date_trunc('{u}', ts)" for u in UNITS)
        want = pg_conn.execute(f"SELECT {pg_keys}, count(*), sum(x) FROM {t} GROUP BY {pg_keys} "
                               f"ORDER BY 1, 2, 3, 4, 5, 6").fetchall()
        assert ours == want and len(ours) > 100
    finally:
        pg_conn.execute(f"DROP TABLE IF EXISTS {t}")
        for conn in (ss_conn, pg_conn):
            conn.execute("RESET TimeZone")
        ss_conn.execute("RESET executor_backend")
