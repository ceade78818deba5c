"""Date/time functions of PostgreSQL's formatting and date/time chapters:
to_timestamp, to_date, make_interval, justify_hours/days/interval.

Why a module of its own: to_timestamp(text, template) parses by a
template (formatting.c's rules, the common fields) and reads the fields on
the session TimeZone's wall clock; the interval functions follow
PostgreSQL's field arithmetic (C division, sign fixes).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re

from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import DATETIME_FIELD_OVERFLOW, INVALID_DATETIME_FORMAT, INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import Interval

from splitstream.protocol import oids as type_oids

from splitstream.catalog.datatypes.vector import Col

from . import zones
from .functions import age_fields, elementwise, register, scalar
from .truncation import cdiv as _cdiv
from .zoned_casts import local_wall, wall_to_utc

_DAY_US = 86_400_000_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _to_timestamp_epoch(seconds: float):
    """to_timestamp(double precision): seconds since the Unix epoch."""
    if math.isnan(seconds):
        raise PgError(DATETIME_FIELD_OVERFLOW, "timestamp cannot be NaN")
    if math.isinf(seconds):
        return wiretypes.TSTZ_POS_INF if seconds > 0 else wiretypes.TSTZ_NEG_INF
    try:
        return _EPOCH + dt.timedelta(microseconds=round(seconds * 1_000_000))
    except OverflowError:
        raise PgError(DATETIME_FIELD_OVERFLOW, f'timestamp out of range: "{seconds:g}"') from None


_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
#: template fields, longest first: (pattern, field, digits)
_FIELDS = [("HH24", "hour", 2), ("HH12", "hour12", 2), ("YYYY", "year", 4), ("MONTH", "monthname", 0),
           ("MON", "monname", 0), ("HH", "hour12", 2), ("MI", "minute", 2), ("SS", "second", 2), ("MS", "ms", 3),
           ("US", "us", 6), ("YY", "yy", 2), ("MM", "month", 2), ("DDD", "doy", 3), ("DD", "day", 2),
           ("TZH", "tzh", 2), ("TZM", "tzm", 2), ("AM", "ampm", 0), ("PM", "ampm", 0), ("A.M.", "ampm", 0),
           ("P.M.", "ampm", 0)]


def _parse_template(text: str, template: str) -> dict[str, int]:
    """The fields of ``text`` read by ``template`` (a separator in the
    template skips one separator of the input; spaces skip spaces)."""
    fields: dict[str, int] = {}
    i = j = 0
    while i < len(template):
        for pat, name, width in _FIELDS:
            if template[i:i + len(pat)].upper() == pat:
                # a field right before another reads its own width only (YYYYMMDD), as from_char_parse_int_len
                glued = i + len(pat) < len(template) and template[i + len(pat)].isalpha()
                j = _read_field(text, j, name, width, fields, glued)
                i += len(pat)
                break
        else:
            ch = template[i]
            while ch == " " and j < len(text) and text[j] == " ":
                j += 1
            if ch != " " and j < len(text) and not text[j].isalnum():
                j += 1
            i += 1
    return fields


def _read_field(text: str, j: int, name: str, width: int, fields: dict[str, int], glued: bool = False) -> int:
    while j < len(text) and text[j] == " ":
        j += 1
    if name in ("monthname", "monname"):
        m = re.match(r"[A-Za-z]+", text[j:])
        word = m.group(0).lower() if m else ""
        hits = [k for k, full in enumerate(_MONTHS) if (full == word if name == "monthname" else full[:3] == word[:3])]
        if not hits or (name == "monname" and len(word) < 3):
            raise PgError(INVALID_DATETIME_FORMAT, f'invalid value "{text[j:j + 3]}" for "{name[:3].upper()}"')
        fields["month"] = hits[0] + 1
        return j + (len(word) if name == "monthname" else 3)
    if name == "ampm":
        word = text[j:j + 4].upper()
        fields["pm"] = int(word.startswith(("PM", "P.M.")))
        return j + (4 if "." in word[:4] else 2)
    m = re.match(r"[+-]?\d{1,%d}" % (width if name != "year" or glued else 9), text[j:])
    if m is None:
        raise PgError(INVALID_DATETIME_FORMAT, f'invalid value "{text[j:j + width]}" for "{name}"')
    fields[name] = int(m.group(0))
    if name == "tzh":                       # TZM takes the sign of TZH, "-00" included
        fields["tz_sign"] = -1 if m.group(0).startswith("-") else 1
    return j + len(m.group(0))


def _wall_time(text: str, template: str) -> dt.datetime:
    return _wall_of(_parse_template(text, template), text)


def _wall_of(f: dict[str, int], text: str) -> dt.datetime:
    year = f.get("year", 1)
    if "yy" in f:
        year = f["yy"] + (2000 if f["yy"] < 70 else 1900)
    hour = f.get("hour", 0)
    if "hour12" in f:
        hour = f["hour12"] % 12 + (12 if f.get("pm") else 0)
    micro = f.get("us", f.get("ms", 0) * 1000)
    try:
        if "doy" in f:                      # DDD: the day of the year
            day = dt.date(year, 1, 1) + dt.timedelta(days=f["doy"] - 1)
            if day.year != year:
                raise ValueError(text)
            return dt.datetime.combine(day, dt.time(hour, f.get("minute", 0), f.get("second", 0), micro))
        return dt.datetime(year, f.get("month", 1), f.get("day", 1), hour, f.get("minute", 0), f.get("second", 0), micro)
    except ValueError:
        raise PgError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{text}"') from None


@register("to_timestamp", sigs="float8 -> timestamptz | text, text -> timestamptz")
def _to_timestamp(cols, n, ctx):
    """Seconds since the epoch; or text read by a template, on the wall
    clock of the session's TimeZone."""
    if len(cols) == 1:
        return elementwise(_to_timestamp_epoch, type_oids.TIMESTAMPTZ)(cols, n, ctx)
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    return elementwise(lambda text, template: _instant(_parse_template(text, template), text, zone),
                       type_oids.TIMESTAMPTZ)(cols, n, ctx)


def _instant(f: dict[str, int], text: str, zone: dt.tzinfo) -> dt.datetime:
    """The parsed wall-clock time at its own TZH:TZM offset, else in the session's zone."""
    wall = _wall_of(f, text)
    if "tzh" not in f:
        return wall_to_utc(wall, zone)
    offset = dt.timedelta(hours=f["tzh"], minutes=f.get("tzm", 0) * f["tz_sign"])
    return (wall - offset).replace(tzinfo=dt.timezone.utc)


scalar("to_date", sigs="text, text -> date")(lambda text, template: _wall_time(text, template).date())


def _justify_hours(v: Interval) -> Interval:
    days, time = v.days + _cdiv(v.microseconds, _DAY_US), v.microseconds - _cdiv(v.microseconds, _DAY_US) * _DAY_US
    if days > 0 and time < 0:
        days, time = days - 1, time + _DAY_US
    elif days < 0 and time > 0:
        days, time = days + 1, time - _DAY_US
    return Interval(v.months, days, time)


def _justify_days(v: Interval) -> Interval:
    months, days = v.months + _cdiv(v.days, 30), v.days - _cdiv(v.days, 30) * 30
    if months > 0 and days < 0:
        months, days = months - 1, days + 30
    elif months < 0 and days > 0:
        months, days = months + 1, days - 30
    return Interval(months, days, v.microseconds)


def _justify_interval(v: Interval) -> Interval:
    """interval_justify_interval: hours into days, days into months, one sign."""
    months, days, time = v.months, v.days, v.microseconds
    if (days > 0 and time > 0) or (days < 0 and time < 0):
        months, days = months + _cdiv(days, 30), days - _cdiv(days, 30) * 30
    days, time = days + _cdiv(time, _DAY_US), time - _cdiv(time, _DAY_US) * _DAY_US
    months, days = months + _cdiv(days, 30), days - _cdiv(days, 30) * 30
    if months > 0 and (days < 0 or (days == 0 and time < 0)):
        months, days = months - 1, days + 30
    elif months < 0 and (days > 0 or (days == 0 and time > 0)):
        months, days = months + 1, days - 30
    if days > 0 and time < 0:
        days, time = days - 1, time + _DAY_US
    elif days < 0 and time > 0:
        days, time = days + 1, time - _DAY_US
    return Interval(months, days, time)


scalar("justify_hours", sigs="interval -> interval")(_justify_hours)
scalar("justify_days", sigs="interval -> interval")(_justify_days)
scalar("justify_interval", sigs="interval -> interval")(_justify_interval)

_MAKE_INTERVAL_ARGS = ["int4"] * 6 + ["float8"]


def _make_interval(years=0, months=0, weeks=0, days=0, hours=0, mins=0, secs=0.0) -> Interval:
    if math.isnan(secs) or math.isinf(secs):
        raise PgError(DATETIME_FIELD_OVERFLOW, "interval out of range")
    us = (hours * 3600 + mins * 60) * 1_000_000 + round(secs * 1_000_000)
    return Interval(years * 12 + months, weeks * 7 + days, us)


scalar("make_interval", sigs=" | ".join(", ".join(_MAKE_INTERVAL_ARGS[:k]) + " -> interval" for k in range(8)))(
    _make_interval)


# ------------------------------------------------------------ the SQL value functions

def _rounded(v, precision: int | None):
    """A time or timestamp rounded to ``precision`` fractional digits, as
    AdjustTimestampForTypmod (halves away from zero); 0..6, more reads as 6."""
    if precision is None or precision >= 6:
        return v
    if precision < 0:
        raise PgError(INVALID_PARAMETER_VALUE, f"TIMESTAMP({precision}) precision must not be negative")
    step = 10 ** (6 - precision)
    micro = (v.microsecond + step // 2) // step * step
    if isinstance(v, dt.time):
        moved = (dt.datetime.combine(dt.date(2000, 1, 1), v.replace(microsecond=0)) + dt.timedelta(microseconds=micro))
        return moved.time() if v.tzinfo is None else wiretypes.timetz(moved.time(), v.utcoffset() or dt.timedelta(0))
    return v.replace(microsecond=0) + dt.timedelta(microseconds=micro)


def _session_local(ctx) -> dt.datetime:
    """The statement's start on the session TimeZone's wall clock (aware)."""
    return ctx.now.astimezone(wiretypes.zone_of(ctx.setting("timezone", "UTC")))


def _value_function(oid: int, of_local):
    def impl(cols, n, ctx):
        precision = cols[0].to_pylist()[0] if cols else None
        if cols and precision is None:
            return Col.const(None, oid, n)
        value = of_local(_session_local(ctx))
        return Col.const(value if precision is None else _rounded(value, precision), oid, n)

    return impl


register("current_timestamp", sigs=" -> timestamptz | int4 -> timestamptz")(
    _value_function(type_oids.TIMESTAMPTZ, lambda local: local.astimezone(dt.timezone.utc)))
register("localtimestamp", sigs=" -> timestamp | int4 -> timestamp")(
    _value_function(type_oids.TIMESTAMP, lambda local: local.replace(tzinfo=None)))
register("current_time", sigs=" -> timetz | int4 -> timetz")(
    _value_function(type_oids.TIMETZ, lambda local: wiretypes.timetz(local.time(), local.utcoffset() or dt.timedelta(0))))
register("localtime", sigs=" -> time | int4 -> time")(
    _value_function(type_oids.TIME, lambda local: local.time()))
register("current_date", sigs=" -> date")(_value_function(type_oids.DATE, lambda local: local.date()))


# ------------------------------------------------------------ age, make_*, timeofday

@register("age", sigs="timestamptz -> interval | timestamp -> interval | timestamptz, timestamptz -> interval"
                      " | timestamp, timestamp -> interval")
def _age(cols, n, ctx):
    """age: field-wise differences; of timestamptz on the session zone's wall
    clock (timestamptz_age), and age(x) from today's midnight there."""
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    tz = cols[0].oid == type_oids.TIMESTAMPTZ
    lists = [[None if v is None else (local_wall(v, zone) if tz else v) for v in c.to_pylist()] for c in cols]
    if len(cols) == 1:
        midnight = _session_local(ctx).replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
        lists.insert(0, [midnight] * n)
    return Col.from_pylist([None if a is None or b is None else _finite_age(a, b) for a, b in zip(*lists)],
                           type_oids.INTERVAL)


def _finite_age(a: dt.datetime, b: dt.datetime) -> Interval:
    if wiretypes.dt64_infinity(a) is not None or wiretypes.dt64_infinity(b) is not None:
        raise PgError(DATETIME_FIELD_OVERFLOW, "timestamp out of range")
    return age_fields(a, b)


def _make_time(hour: int, minute: int, sec: float) -> dt.time:
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= sec < 60):
        raise PgError(DATETIME_FIELD_OVERFLOW, f"time field value out of range: {hour:02d}:{minute:02d}:{sec:02g}")
    whole = int(sec)
    return dt.time(hour, minute, whole, round((sec - whole) * 1_000_000))


def _field_date(year: int, month: int, day: int) -> dt.date | None:
    """make_date's date, None when the fields name a real day of a year
    outside 1 to 9999 (PostgreSQL's negative years are BC), or PostgreSQL's
    'date field value out of range'."""
    try:
        return dt.date(year, month, day)
    except ValueError:
        astro = year + 1 if year < 0 else year            # 1 BC is year 0 of the proleptic Gregorian calendar
        leap = astro % 4 == 0 and (astro % 100 != 0 or astro % 400 == 0)
        days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1] if 1 <= month <= 12 else 0
        if year != 0 and 1 <= day <= days:
            return None
        raise PgError(DATETIME_FIELD_OVERFLOW, f"date field value out of range: {astro}-{month:02d}-{day:02d}") from None


def _make_date(year: int, month: int, day: int) -> dt.date:
    d = _field_date(year, month, day)
    if d is None:
        raise dataclasses.replace(wiretypes.out_of_range("date"), message=f"date out of range: {year}-{month:02d}-{day:02d}")
    return d


def _make_timestamp(year, month, day, hour, minute, sec) -> dt.datetime:
    d = _field_date(year, month, day)
    t = _make_time(hour, minute, sec)
    if d is None:
        raise dataclasses.replace(wiretypes.out_of_range("timestamp"),
                                  message=f"timestamp out of range: {year}-{month:02d}-{day:02d} {hour}:{minute:02d}:{sec:02g}")
    return dt.datetime.combine(d, t)


scalar("make_date", sigs="int4, int4, int4 -> date")(_make_date)


scalar("make_time", sigs="int4, int4, float8 -> time")(_make_time)
scalar("make_timestamp", sigs="int4, int4, int4, int4, int4, float8 -> timestamp")(_make_timestamp)


@register("make_timestamptz", sigs="int4, int4, int4, int4, int4, float8 -> timestamptz"
                                  " | int4, int4, int4, int4, int4, float8, text -> timestamptz")
def _make_timestamptz(cols, n, ctx):
    """The wall-clock time read in the session's zone, or in the one named."""
    session = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    lists = [c.to_pylist() for c in cols]
    out = []
    for row in zip(*lists):
        if any(v is None for v in row):
            out.append(None)
            continue
        zone = zones.resolve(row[6]) if len(row) > 6 else session
        out.append(wall_to_utc(_make_timestamp(*row[:6]), zone))
    return Col.from_pylist(out, type_oids.TIMESTAMPTZ)


@register("timeofday", sigs=" -> text", volatile=True)
def _timeofday(cols, n, ctx):
    """The wall clock now, as PostgreSQL's timeofday() writes it."""
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    now = dt.datetime.now(dt.timezone.utc).astimezone(zone)
    return Col.const(now.strftime("%a %b %d %H:%M:%S.%f %Y ") + (now.tzname() or ""), type_oids.TEXT, n)
