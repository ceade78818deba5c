"""Issue 15, the timetz type (time with time zone, OID 1266): text input and
output, typmod rounding, casts to and from time, timestamptz and text in
the session zone, ordering and equality (PostgreSQL's: UTC time of day,
then zone), arithmetic with intervals, AT TIME ZONE, extract; a table
column through a restart-free round trip; and the binary codec.  Compared
with PostgreSQL 15."""
from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from tests.support.fidelity import mismatches

VALUES = ["10:00+02", "10:00:01.5-05:30", "23:59:59.999999+14", "00:00-12", "09:00+01", "08:00+00", "12:34:56.789+05:45"]
SOURCE = "FROM (VALUES " + ", ".join(f"(timetz '{v}')" for v in VALUES) + ", (NULL)) v(t)"


def _statements():
    yield f"SELECT t, t::text AS x, t::time AS tm, pg_typeof(t) {SOURCE} ORDER BY t"
    yield f"SELECT a.t, b.t, a.t = b.t, a.t < b.t, a.t >= b.t, a.t <> b.t {SOURCE.replace('v(t)', 'a(t)')}, " \
          f"(VALUES (timetz '10:00+02'), (timetz '09:00+01'), (NULL)) b(t) ORDER BY 1, 2"
    yield f"SELECT max(t), min(t), count(DISTINCT t) {SOURCE}"
    yield f"SELECT t + interval '1 hour', t - interval '25 hours', interval '90 minutes' + t, date '2020-06-01' + t {SOURCE} ORDER BY 1"
    for unit in ("hour", "minute", "second", "milliseconds", "microseconds", "epoch", "timezone", "timezone_hour",
                 "timezone_minute"):
        yield f"SELECT t, extract({unit} from t), date_part('{unit}', t) {SOURCE} ORDER BY t"
    for zone in ("'UTC'", "'Asia/Kolkata'", "'EST'", "'UTC+3'", "interval '-03:30'"):
        yield f"SELECT t, t AT TIME ZONE {zone} {SOURCE} ORDER BY t"
    yield "SELECT '10:00:00.123456+02'::timetz(2), '10:00:00.125+02'::timetz(2), '10:00:00.5-01'::timetz(0), time with time zone '01:02:03'"
    yield "SELECT '10:00'::timetz, time '10:00'::timetz, timestamptz '2020-01-01 10:00+00'::timetz, timestamptz '2020-07-01 10:00+00'::timetz"
    yield "SELECT '10:00 EST'::timetz, '10:00 America/New_York'::timetz::text IS NOT NULL"
    # errors
    yield "SELECT timetz '25:00+02'"
    yield "SELECT timetz '10:00+16'"
    yield "SELECT timetz 'abc'"
    yield "SELECT extract(day from timetz '10:30+02')"
    yield "SELECT timestamp '2020-01-01'::timetz"


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_timetz_like_postgres(zone, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    wrong = mismatches(ss_conn, pg_conn, list(_statements()))
    assert not wrong, f"{len(wrong)} differ:\n" + "\n".join(wrong[:8])


def test_timetz_column(ss_conn, pg_conn, unique_name):
    t = unique_name("tz")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (a timetz, b timetz(1), c time(3))")
    try:
        wrong = mismatches(ss_conn, pg_conn, [
            f"INSERT INTO {t} VALUES ('10:00+02', '10:00:00.55+01', '10:00:00.0005'), (NULL, NULL, NULL), ('09:00+01', '09:00+01', '23:59:59.9991')",
            f"SELECT a, b, c, a = b FROM {t} ORDER BY a NULLS FIRST",
            f"SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attnum > 0 ORDER BY attnum",
            f"SELECT a FROM {t} WHERE a = '08:00+00'",
            f"SELECT a FROM {t} WHERE a = '10:00+02' OR a > '09:30+01' ORDER BY a"])
        assert not wrong, "\n".join(wrong)
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


def test_timetz_binary_codec(ss_conn, pg_conn):
    """OID 1266 in binary: microseconds of the day, then the zone in seconds west."""
    sql = "SELECT timetz '10:00:01.5-05:30', timetz '23:59:59.999999+14', NULL::timetz"
    got = [conn.cursor(binary=True).execute(sql).fetchone() for conn in (ss_conn, pg_conn)]
    assert got[0] == got[1]
    assert got[0][0] == dt.time(10, 0, 1, 500000, tzinfo=dt.timezone(-dt.timedelta(hours=5, minutes=30)))
    with ss_conn.cursor(binary=True) as cur:    # a binary parameter back in
        cur.execute("SELECT %b::text", [dt.time(7, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=3)))])
        assert cur.fetchone() == ("07:08:09+03",)
    with pytest.raises(psycopg.Error) as e:
        ss_conn.execute("SELECT timetz '10:00+16'")
    assert e.value.sqlstate == "22009"


def test_timetz_and_infinities_through_copy(ss_conn, pg_conn, unique_name):
    """COPY in and out, text and binary: the same bytes and values as PostgreSQL."""
    t = unique_name("cp")
    row = [dt.time(1, 2, 3, tzinfo=dt.timezone(-dt.timedelta(hours=3))), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
           dt.date(2020, 5, 5)]
    outs = []
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (a timetz, b timestamptz, d date)")
        try:
            with conn.cursor().copy(f"COPY {t} FROM STDIN") as cp:
                cp.write("10:00:00+02\tinfinity\t-infinity\n\\N\t2020-01-01 10:00+05\t2020-01-01\n")
            with conn.cursor().copy(f"COPY {t} FROM STDIN (FORMAT binary)") as cp:
                cp.set_types(["timetz", "timestamptz", "date"])
                cp.write_row(row)
            with conn.cursor().copy(f"COPY (SELECT * FROM {t} ORDER BY a) TO STDOUT") as cp:
                text = b"".join(bytes(d) for d in cp)
            values = conn.cursor(binary=True).execute(f"SELECT a FROM {t} ORDER BY a").fetchall()
            outs.append((text, values))
        finally:
            conn.execute(f"DROP TABLE {t}")
    assert outs[0] == outs[1]
    assert outs[0][1][0] == (row[0],)
