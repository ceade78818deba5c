"""Issue 15, time zones: extract/date_part, to_char, AT TIME ZONE (both
directions; zone names, abbreviations, POSIX specifications, intervals),
and timestamptz casts to date, time, timestamp and text honour the session
TimeZone exactly as PostgreSQL 15 does, across DST transitions (New York,
Lord Howe's half-hour shift) and in zones with odd offsets (Kolkata).
Statements are generated over units, templates and instants, with NULLs
and infinities; each outcome (values, column names, type OIDs, SQLSTATE and
message) is compared with PostgreSQL 15."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches

ZONES = ["America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "UTC"]
#: around the 2020 transitions of New York (March 8, November 1) and Lord Howe
#: (April 5: +11 -> +10:30, October 4: back), a year end, the epoch, and before 1970
INSTANTS = ["2020-03-08 06:59:59.999999+00", "2020-03-08 07:00:00+00", "2020-11-01 05:30:00+00",
            "2020-11-01 06:30:00.5+00", "2020-04-04 14:45:00+00", "2020-04-04 15:15:00+00",
            "2020-10-03 15:45:00+00", "2020-10-03 16:15:00+00", "2020-12-31 19:00:00+00",
            "2021-01-03 23:59:59+00", "1970-01-01 00:00:00+00", "1969-07-20 20:17:40+00", "2000-02-29 12:00:00+00"]
SOURCE = ("FROM (VALUES " + ", ".join(f"(timestamptz '{t}')" for t in INSTANTS)
          + ", (NULL), (timestamptz 'infinity'), (timestamptz '-infinity')) v(t) ORDER BY t")
FINITE = "FROM (VALUES " + ", ".join(f"(timestamptz '{t}')" for t in INSTANTS) + ", (NULL)) v(t) ORDER BY t"
UNITS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "month", "quarter", "year", "decade",
         "century", "millennium", "week", "dow", "isodow", "doy", "isoyear", "julian", "epoch", "timezone",
         "timezone_hour", "timezone_minute", "hrs", "msec", "y"]
TEMPLATES = ["YYYY-MM-DD HH24:MI:SS.US TZ tz OF TZH:TZM", "Day DD Month YYYY HH12:MI AM", "FMDay FMDD FMMonth HH12 pm",
             "IYYY-IW-ID IDDD WW W J Q CC DDD D", "Dy Mon dy mon DY MON RM rm", "SSSS SSSSS MS FF1 FF3 FF6",
             "DDth DDTH FMDDth Y,YYY YYY YY Y", "\"quoted\" HH24\\\"MI A.M. a.m. AD bc", "OF TZH TZM"]
ZONE_ARGS = ["'UTC'", "'Asia/Kolkata'", "'america/new_york'", "'EST'", "'EDT'", "'UTC+3'", "'<+0330>-3:30'",
             "'Australia/Lord_Howe'", "'z'", "interval '5 hours'", "interval '-03:30'", "NULL::text"]


def _statements():
    for unit in UNITS:
        yield f"SELECT t, extract({unit} from t), date_part('{unit}', t) {SOURCE}"
        yield f"SELECT extract({unit} from t::timestamp) {SOURCE}"
        yield f"SELECT extract({unit} from t::date) {SOURCE}"
    for tpl in TEMPLATES:
        yield f"SELECT t, to_char(t, '{tpl}'), to_char(t::timestamp, '{tpl}') {SOURCE}"
    for zone in ZONE_ARGS:
        yield f"SELECT t, t AT TIME ZONE {zone}, (t AT TIME ZONE {zone}) AT TIME ZONE {zone} {SOURCE}"
        yield f"SELECT timezone({zone}, t::timestamp) {SOURCE}"
    yield (f"SELECT t, t::date AS d, t::time AS tm, t::text AS tx, t::timestamp AS ts, t::timetz AS ttz,"
           f" t::timestamp::timestamptz AS back {SOURCE}")
    yield "SELECT '2020-03-08 02:30'::timestamptz, '2020-11-01 01:30'::timestamptz, timestamp '2020-03-08 02:30' AT TIME ZONE 'America/New_York'"
    yield "SELECT date '2020-03-08'::timestamptz, date '2020-04-05'::timestamptz, current_date - current_date"
    yield ("SELECT to_char(interval '-1 year -2 mons 3 days -04:05:06.789', 'YYYY MM DD HH24 HH MI SS MS US FF2 SSSS'),"
           " to_char(interval '100 hours 5 minutes', 'HH HH12 HH24 MI'), to_char(interval '0', 'HH12 AM'),"
           " to_char(time '10:30:15', 'HH24:MI:SS'), to_char(date '2020-03-08', 'YYYY-MM-DD Day TZ')")
    yield ("SELECT extract(epoch from interval '-1 year -1 mon -1 day -00:00:01.5'), extract(year from interval '-13 months'),"
           " extract(quarter from interval '-5 months'), date_part('epoch', interval '1 year 1 mon 1 day 00:00:01.1'),"
           " date_part('second', interval '61.5 seconds'), date_part('julian', date '2020-01-01'), date_part('hour', date '2020-01-01')")
    for span in ("interval '1 day'", "interval '24 hours'", "interval '1 mon'", "interval '-1 day 2 hours'",
                 "interval '1 year 1 mon 1 day 00:00:01.5'"):
        yield f"SELECT t, t + {span}, t - {span}, {span} + t {SOURCE}"
    yield f"SELECT t, age(t, timestamptz '2020-01-01 00:00+00'), age(timestamptz '2020-06-15 12:00+00', t) {SOURCE}"
    yield (f"SELECT t, age(t, timestamptz '2020-01-01 00:00+00'), age(timestamptz '2020-06-15 12:00+00', t),"
           f" age(t::timestamp, timestamp '2020-03-08 01:00'), age(t) > interval '0' {FINITE}")
    yield ("SELECT make_time(10, 30, 15.5), make_timestamp(2020, 3, 8, 2, 30, 0), make_timestamptz(2020, 3, 8, 2, 30, 0),"
           " make_timestamptz(2020, 3, 8, 2, 30, 0, 'Asia/Kolkata'), make_timestamptz(2020, 11, 1, 1, 30, 0),"
           " make_timestamptz(2020, 4, 5, 1, 45, 0), make_timestamptz(2020, 10, 4, 2, 15, 0), date '2020-03-08' + time '02:30'")
    yield ("SELECT to_timestamp('2020-03-08 02:30', 'YYYY-MM-DD HH24:MI'), to_timestamp('2020-11-01 01:30 +01', 'YYYY-MM-DD HH24:MI TZH'),"
           " to_timestamp('2000-12-05 -00:30', 'YYYY-MM-DD TZH:TZM'), to_timestamp('2000-12-05 +05:45', 'YYYY-MM-DD TZH:TZM'),"
           " to_timestamp('202003081530', 'YYYYMMDDHH24MI'), to_date('2020-366', 'YYYY-DDD'), to_date('20200308', 'YYYYMMDD')")
    # errors
    yield "SELECT to_date('2021-366', 'YYYY-DDD')"
    yield "SELECT make_time(25, 0, 0)"
    yield "SELECT make_timestamp(2020, 2, 30, 0, 0, 0)"
    yield "SELECT make_timestamptz(2020, 1, 1, 0, 0, 0, 'Mars/Olympus')"
    yield "SELECT extract(hour from '2020-01-01 10:00')"
    yield "SELECT now() AT TIME ZONE 'Mars/Olympus'"
    yield "SELECT now() AT TIME ZONE interval '1 day'"
    yield "SELECT extract(fortnight from now())"
    yield "SELECT extract(timezone from timestamp '2020-01-01')"
    yield "SELECT extract(hour from date '2020-01-01')"
    yield "SELECT extract(dow from interval '1 day')"
    yield "SELECT to_char(interval '1 day', 'Day')"


@pytest.mark.parametrize("zone", ZONES)
def test_session_zone_like_postgres(zone, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET TimeZone = '{zone}'")
    wrong = mismatches(ss_conn, pg_conn, list(_statements()))
    assert not wrong, f"{len(wrong)} differ:\n" + "\n".join(wrong[:8])


def test_value_functions_in_the_session_zone(ss_conn):
    """current_time/localtime/localtimestamp/current_date read the statement's
    clock on the session's wall clock: compared with now() AT TIME ZONE."""
    ss_conn.execute("SET TimeZone = 'Asia/Kolkata'")
    row = ss_conn.execute(
        "SELECT localtimestamp = now() AT TIME ZONE 'Asia/Kolkata', current_date = (now() AT TIME ZONE 'Asia/Kolkata')::date,"
        " localtime = (now() AT TIME ZONE 'Asia/Kolkata')::time, extract(timezone from current_time),"
        " pg_typeof(current_time)::text, pg_typeof(localtime)::text, pg_typeof(localtimestamp(2))::text").fetchone()
    assert row == (True, True, True, 19800, "time with time zone", "time without time zone",
                   "timestamp without time zone")


@pytest.mark.parametrize("setting", ["SET TimeZone = 'UTC+3'", "SET TimeZone = 'europe/berlin'", "SET TimeZone = 'EST5EDT'",
                                     "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE", "SET TIME ZONE -7",
                                     "SET TimeZone = '<+0330>-3:30'", "SET TimeZone = 'Etc/GMT-14'", "SET TIME ZONE 'EST'"])
def test_time_zone_settings_like_postgres(setting, ss_conn, pg_conn):
    """SET TimeZone / SET TIME ZONE in every form PostgreSQL takes: names
    without regard to case (shown as the tz database spells them), POSIX
    specifications, hours and intervals (shown as PostgreSQL names them)."""
    for conn in (ss_conn, pg_conn):
        conn.execute(setting)
    wrong = mismatches(ss_conn, pg_conn, [
        "SELECT current_setting('TimeZone')",
        f"SELECT t, extract(timezone from t), to_char(t, 'HH24:MI OF TZH TZM'), t::date AS d, t::time AS tm {SOURCE}"])
    assert not wrong, "\n".join(wrong)


def test_unknown_time_zone_setting_is_refused(ss_conn, pg_conn):
    # (PostgreSQL also takes POSIX offsets of a day or more, 'UTC+99': refused here, 22023, a Python tzinfo cannot hold one)
    assert not mismatches(ss_conn, pg_conn, ["SET TimeZone = 'Mars/Olympus'", "SET TimeZone = 'Europe/Nowhere'"])
