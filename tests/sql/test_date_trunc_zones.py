"""Issue 15, time zones: date_trunc on timestamptz truncates on the wall
clock of the session's TimeZone (or of its third argument), across DST
transitions as PostgreSQL does; date_bin; date_trunc on intervals.  Every
answer is compared with PostgreSQL 15 under several zones."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches

ZONES = ["America/New_York", "Europe/Berlin", "Asia/Kolkata", "UTC"]
UNITS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year",
         "decade", "century", "millennium", "days", "mon", "hr"]
#: instants around the 2020 transitions of New York and Berlin, and year ends
INSTANTS = ["2020-03-08 06:30:00+00", "2020-03-08 07:30:00+00", "2020-03-08 04:59:59.5+00",
            "2020-11-01 05:30:00+00", "2020-11-01 06:30:00+00", "2020-11-01 04:00:00+00",
            "2020-03-29 00:30:00+00", "2020-03-29 01:30:00+00", "2020-10-25 00:30:00+00", "2020-10-25 01:30:00+00",
            "1999-12-31 23:59:59.999999+00", "2021-01-01 00:00:00+00", "2020-12-31 19:00:00+00",
            "2021-01-03 23:00:00+00", "1970-01-01 00:00:00+00"]
VALUES = ", ".join(f"(timestamptz '{t}')" for t in INSTANTS)


def _statements():
    src = f"FROM (VALUES {VALUES}, (NULL)) v(t) ORDER BY t"
    for unit in UNITS:
        yield f"SELECT t, date_trunc('{unit}', t), date_trunc('{unit}', t::timestamp) {src}"
    for zone in ("Asia/Kolkata", "America/New_York", "Europe/Berlin", "UTC"):
        yield f"SELECT t, date_trunc('day', t, '{zone}'), date_trunc('hour', t, '{zone}'), date_trunc('month', t, '{zone}') {src}"
    yield f"SELECT t, date_bin(interval '15 minutes', t, timestamptz '2001-01-01'), " \
          f"date_bin(interval '1 day', t, timestamptz '2020-01-01 00:00:00+05'), " \
          f"date_bin(interval '7 days 1 hour', t::timestamp, timestamp '2020-06-01') {src}"
    yield "SELECT date_bin(interval '1 hour', timestamp '2020-01-01 10:30', timestamp '2020-01-02')"
    yield "SELECT date_trunc('day', date '2020-03-08')"
    yield "SELECT date_trunc(u, interval '3 years 7 months 20 days 13:14:15.123456') FROM (VALUES ('year'), " \
          "('quarter'), ('month'), ('day'), ('hour'), ('minute'), ('second'), ('milliseconds'), ('decade')) v(u) ORDER BY u"
    yield "SELECT date_trunc(u, interval '-3 years -7 months -20 days -13:14:15.5') FROM (VALUES ('year'), " \
          "('quarter'), ('month'), ('hour'), ('second')) v(u) ORDER BY u"
    # errors
    yield "SELECT date_trunc('fortnight', now())"
    yield "SELECT date_trunc('dow', now())"
    yield "SELECT date_trunc('fortnight', timestamp '2020-01-01')"
    yield "SELECT date_trunc('day', now(), 'Mars/Olympus')"
    yield "SELECT date_trunc('week', interval '1 month')"
    yield "SELECT date_trunc('day', '2020-01-01 10:00')"
    yield "SELECT date_bin(interval '1 month', timestamp '2020-01-01', timestamp '2020-01-01')"
    yield "SELECT date_bin(interval '0 seconds', timestamp '2020-01-01', timestamp '2020-01-01')"


@pytest.mark.parametrize("zone", ZONES)
def test_date_trunc_in_zone(zone, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    wrong = mismatches(ss_conn, pg_conn, list(_statements()))
    assert not wrong, "\n".join(wrong[:10])
