"""EXTRACT and date_part, field by field as PostgreSQL 15 computes them.

Why a module of its own: which units a type supports (and which error a
wrong one gives), the numeric scale of each field, the fields of an
infinite timestamp, and reading a timestamptz on the wall clock of the
session's TimeZone (timestamptz_part: ``timestamp2tm`` with the session
zone) are PostgreSQL's rules, kept in one place.  Values go one at a time
except the common whole-column ``extract(year|month|day from date)``.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col, FixedCol
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import Interval

from .expr import numeric_op
from .functions import register, scalar
from .truncation import cdiv

D = decimal.Decimal
_TZ = type_oids.TIMESTAMPTZ

#: unit spellings (DecodeUnits/DecodeSpecial read at most 10 characters) to one name each
UNITS: dict[str, str] = {
    **dict.fromkeys(("microsecon", "us", "usec", "usecs", "useconds"), "microseconds"),
    **dict.fromkeys(("millisecon", "ms", "msec", "msecs", "mseconds"), "milliseconds"),
    **dict.fromkeys(("second", "seconds", "s", "sec", "secs"), "second"),
    **dict.fromkeys(("minute", "minutes", "m", "min", "mins"), "minute"),
    **dict.fromkeys(("hour", "hours", "h", "hr", "hrs"), "hour"),
    **dict.fromkeys(("day", "days", "d"), "day"),
    **dict.fromkeys(("week", "weeks", "w"), "week"),
    **dict.fromkeys(("month", "months", "mon", "mons"), "month"),
    **dict.fromkeys(("quarter", "qtr"), "quarter"),
    **dict.fromkeys(("year", "years", "y", "yr", "yrs"), "year"),
    **dict.fromkeys(("decade", "decades", "dec", "decs"), "decade"),
    **dict.fromkeys(("century", "centuries", "c", "cent"), "century"),
    **dict.fromkeys(("millennium", "millennia", "mil", "mils"), "millennium"),
    **dict.fromkeys(("julian", "j", "jd"), "julian"),
    "timezone": "timezone", "timezone_h": "timezone_hour", "timezone_m": "timezone_minute",
    "epoch": "epoch", "dow": "dow", "isodow": "isodow", "doy": "doy", "isoyear": "isoyear",
}
_CLOCK = {"microseconds", "milliseconds", "second", "minute", "hour"}
_ZONE = {"timezone", "timezone_hour", "timezone_minute"}
_CALENDAR = {"day", "week", "month", "quarter", "year", "decade", "century", "millennium", "julian", "dow", "isodow",
             "doy", "isoyear"}
#: the units each source type has
SUPPORTED: dict[int, set[str]] = {
    type_oids.DATE: _CALENDAR | {"epoch"},
    type_oids.TIMESTAMP: _CALENDAR | _CLOCK | {"epoch"},
    _TZ: _CALENDAR | _CLOCK | _ZONE | {"epoch"},
    type_oids.TIME: _CLOCK | {"epoch"},
    type_oids.TIMETZ: _CLOCK | _ZONE | {"epoch"},
    type_oids.INTERVAL: _CLOCK | {"day", "month", "quarter", "year", "decade", "century", "millennium", "epoch"},
}
#: units that grow with time: an infinite date or timestamp gives +-Infinity, the others NULL
_MONOTONIC = {"year", "decade", "century", "millennium", "julian", "isoyear", "epoch"}
_USECS_DAY = 86_400_000_000
_JULIAN_EPOCH = dt.date(1970, 1, 1).toordinal() - 2440588   # date2j(1970-01-01) = 2440588


def unit_of(text: str, type_oid: int) -> str:
    """The unit a field name means for ``type_oid``; 22023 for no unit, 0A000
    for a unit the type has not (PostgreSQL's two errors)."""
    low = text.lower()
    unit = UNITS.get(low[:10])
    tname = sqltypes.format_type(type_oid)
    if unit is None:
        raise PgError(INVALID_PARAMETER_VALUE, f'unit "{low}" not recognized for type {tname}')
    if unit not in SUPPORTED[type_oid]:
        raise PgError(FEATURE_NOT_SUPPORTED, f'unit "{low}" not supported for type {tname}')
    return unit


def _scaled(us: int, scale: int) -> D:
    """int64_div_fast_to_numeric: ``us`` millionths with ``scale`` decimals."""
    return D(us).scaleb(-6).quantize(D(1).scaleb(-scale))


def _clock_field(unit: str, h: int, mi: int, sec_us: int) -> D:
    if unit == "microseconds":
        return D(sec_us)
    if unit == "milliseconds":
        return _scaled(sec_us * 1000, 3)
    if unit == "second":
        return _scaled(sec_us, 6)
    return D(mi if unit == "minute" else h)


def _calendar_field(unit: str, d: dt.date) -> D:
    y = d.year
    value: int
    if unit == "day":
        value = d.day
    elif unit == "month":
        value = d.month
    elif unit == "quarter":
        value = (d.month - 1) // 3 + 1
    elif unit == "week":
        value = d.isocalendar()[1]
    elif unit == "isoyear":
        value = d.isocalendar()[0]
    elif unit == "year":
        value = y
    elif unit == "decade":
        value = y // 10
    elif unit == "century":
        value = (y + 99) // 100
    elif unit == "millennium":
        value = (y + 999) // 1000
    elif unit == "dow":
        value = (d.weekday() + 1) % 7
    elif unit == "isodow":
        value = d.weekday() + 1
    elif unit == "doy":
        value = d.timetuple().tm_yday
    else:                                   # julian day of a date
        value = d.toordinal() - _JULIAN_EPOCH
    return D(value)


def _zone_field(unit: str, offset_s: int) -> D:
    if unit == "timezone":
        return D(offset_s)
    if unit == "timezone_hour":
        return D(cdiv(offset_s, 3600))
    return D(cdiv(offset_s, 60) - cdiv(offset_s, 3600) * 60)


def _timestamp_field(unit: str, wall: dt.datetime, epoch_us: int, offset_s: int) -> D:
    if unit in _ZONE:
        return _zone_field(unit, offset_s)
    if unit == "epoch":
        return _scaled(epoch_us, 6)
    sec_us = wall.second * 1_000_000 + wall.microsecond
    if unit in _CLOCK:
        return _clock_field(unit, wall.hour, wall.minute, sec_us)
    if unit == "julian":
        of_day = ((wall.hour * 60 + wall.minute) * 60) * 1_000_000 + sec_us
        return numeric_op("+", _calendar_field("julian", wall.date()), numeric_op("/", D(of_day), D(_USECS_DAY)))
    return _calendar_field(unit, wall.date())


def _interval_field(unit: str, v: Interval) -> D:
    if unit == "epoch":
        months = v.months
        secs4 = (1461 * cdiv(months, 12) + 120 * (months - cdiv(months, 12) * 12) + 4 * v.days) * 21600
        return _scaled(secs4 * 1_000_000 + v.microseconds, 6)
    t = v.microseconds
    if unit in _CLOCK:
        return _clock_field(unit, cdiv(t, 3_600_000_000), cdiv(t, 60_000_000) - cdiv(t, 3_600_000_000) * 60,
                            t - cdiv(t, 60_000_000) * 60_000_000)
    if unit == "day":
        return D(v.days)
    years, month = cdiv(v.months, 12), v.months - cdiv(v.months, 12) * 12
    if unit == "month":
        return D(month)
    if unit == "quarter":
        return D(cdiv(month, 3) + 1)
    return D(cdiv(years, {"year": 1, "decade": 10, "century": 100, "millennium": 1000}[unit]))


def _time_field(unit: str, v: dt.time) -> D:
    off = v.utcoffset()
    offset_s = int(off.total_seconds()) if off is not None else 0
    if unit in _ZONE:
        return _zone_field(unit, offset_s)
    sec_us = v.second * 1_000_000 + v.microsecond
    if unit == "epoch":
        return _scaled(((v.hour * 60 + v.minute) * 60 - offset_s) * 1_000_000 + sec_us, 6)
    return _clock_field(unit, v.hour, v.minute, sec_us)


def _epoch_us(v: dt.datetime) -> int:
    naive = v.astimezone(dt.timezone.utc).replace(tzinfo=None) if v.tzinfo is not None else v
    d = naive - dt.datetime(1970, 1, 1)
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def field(unit: str, oid: int, v: Any, zone: dt.tzinfo) -> D | None:
    """One value's field (``unit`` already checked for ``oid``)."""
    if oid in (type_oids.DATE, type_oids.TIMESTAMP, _TZ):
        inf = 1 if wiretypes.is_pos_infinity(v) else -1 if wiretypes.is_neg_infinity(v) else 0
        if inf:
            return D(inf) * D("Infinity") if unit in _MONOTONIC else None
    if oid == type_oids.INTERVAL:
        return _interval_field(unit, v)
    if oid in (type_oids.TIME, type_oids.TIMETZ):
        return _time_field(unit, v)
    if oid == type_oids.DATE:
        if unit == "epoch":
            return D((v.toordinal() - dt.date(1970, 1, 1).toordinal()) * 86400)
        return _calendar_field(unit, v)
    if oid == _TZ:
        local = v.astimezone(zone)
        off = local.utcoffset()
        return _timestamp_field(unit, local.replace(tzinfo=None), _epoch_us(v), int(off.total_seconds()) if off else 0)
    return _timestamp_field(unit, v, _epoch_us(v), 0)


def _extract_vector(units: Col, src: Col) -> Col | None:
    """extract(year|month|day from date) as int64 numerics computed by numpy's
    calendar arithmetic; None for anything else (the per-value path)."""
    if src.oid != type_oids.DATE or not len(src) or units.data.dtype != object or units.nulls is not None:
        return None
    first = units.data[0]
    if not isinstance(first, str) or not (units.data == first).all():
        return None
    unit = UNITS.get(first.lower()[:10])
    d = src.data
    raw = d.view(np.int64)
    if ((raw == wiretypes.DT64_POS_INF) | (raw == wiretypes.DT64_NEG_INF)).any():
        return None                         # infinities: the per-value path
    if unit == "year":
        out = d.astype("datetime64[Y]").astype(np.int64) + 1970
    elif unit == "month":
        out = d.astype("datetime64[M]").astype(np.int64) % 12 + 1
    elif unit == "day":
        out = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
    else:
        return None
    return FixedCol(out.astype(np.int64), 0, src.nulls)


#: what EXTRACT and date_part read fields from
_SOURCES = " | ".join(f"text, {t} -> {{0}}" for t in ("date", "time", "timetz", "timestamp", "timestamptz", "interval"))


@register("extract", sigs=_SOURCES.format("numeric"))
def extract_impl(cols, n, ctx):
    units, src = cols
    fast = _extract_vector(units, src)
    if fast is not None:
        return fast
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    out = [None if u is None or v is None else field(unit_of(u, src.oid), src.oid, v, zone)
           for u, v in zip(units.to_pylist(), src.to_pylist())]
    return Col.from_pylist(out, type_oids.NUMERIC)


_FRACTIONAL = {"microseconds", "milliseconds", "second", "epoch", "julian"}


def _seconds(unit: str, sec: int, micro: int) -> float:
    if unit == "microseconds":
        return sec * 1000000.0 + micro
    if unit == "milliseconds":
        return sec * 1000.0 + micro / 1000.0
    return sec + micro / 1000000.0


def float_field(unit: str, oid: int, v: Any, zone: dt.tzinfo) -> float | None:
    """date_part's double precision, computed as PostgreSQL's *_part
    functions compute it (in floating point, so the last digits agree)."""
    if unit not in _FRACTIONAL or wiretypes.dt64_infinity(v) is not None:
        exact = field(unit, oid, v, zone)
        return None if exact is None else float(exact)
    if oid == type_oids.INTERVAL:
        if unit != "epoch":
            t = v.microseconds - cdiv(v.microseconds, 60_000_000) * 60_000_000
            return _seconds(unit, cdiv(t, 1_000_000), t - cdiv(t, 1_000_000) * 1_000_000)
        years, months = cdiv(v.months, 12), v.months - cdiv(v.months, 12) * 12
        return v.microseconds / 1000000.0 + 365.25 * 86400 * years + 30.0 * 86400 * months + 86400.0 * v.days
    if oid in (type_oids.TIME, type_oids.TIMETZ):
        of_day = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        if unit == "epoch":
            off = v.utcoffset()
            return of_day / 1000000.0 - (off.total_seconds() if off is not None else 0)
        return _seconds(unit, v.second, v.microsecond)
    wall = v.astimezone(zone).replace(tzinfo=None) if oid == _TZ else v
    if unit == "epoch":
        return _epoch_us(v) / 1000000.0
    if unit == "julian":
        seconds = ((wall.hour * 60) + wall.minute) * 60 + wall.second + wall.microsecond / 1000000.0
        return float(_calendar_field("julian", wall.date())) + seconds / 86400.0
    return _seconds(unit, wall.second, wall.microsecond)


@register("date_part", sigs=_SOURCES.format("float8"))
def _date_part(cols, n, ctx):
    """date_part: double precision; on a date, as on the date at midnight
    (PostgreSQL's SQL function over timestamp)."""
    units, src = cols
    if src.oid == type_oids.DATE:
        src = sqltypes.cast_col(src, type_oids.TIMESTAMP)
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    out = [None if u is None or v is None else float_field(unit_of(u, src.oid), src.oid, v, zone)
           for u, v in zip(units.to_pylist(), src.to_pylist())]
    return Col.from_pylist(out, type_oids.FLOAT8)


def _isfinite(v) -> bool:
    return not (wiretypes.is_pos_infinity(v) or wiretypes.is_neg_infinity(v))


scalar("isfinite", sigs="date -> bool | timestamp -> bool | timestamptz -> bool | interval -> bool")(_isfinite)
