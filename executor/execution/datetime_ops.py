"""Arithmetic on dates, timestamps and intervals (PostgreSQL's operators)."""
from __future__ import annotations

import calendar
import math
import datetime as dt

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DATETIME_FIELD_OVERFLOW, DIVISION_BY_ZERO, PgError

from . import expr
from splitstream.protocol import types as wiretypes
from splitstream.protocol.types import Interval

from .zoned_casts import local_wall, wall_to_utc

_TS = (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ)


def add_interval(v, iv, sign: int = 1):
    if wiretypes.dt64_infinity(v) is not None:     # infinity +- a finite interval
        return v
    months = iv.months * sign
    try:
        if months:
            y, m = divmod(v.month - 1 + months, 12)
            y += v.year
            d = min(v.day, calendar.monthrange(y, m + 1)[1])
            v = v.replace(year=y, month=m + 1, day=d)
        return v + dt.timedelta(days=iv.days * sign, microseconds=iv.microseconds * sign)
    except (OverflowError, ValueError):      # past 9999 or before 1 AD (calendar's years end there too)
        raise wiretypes.out_of_range("timestamp") from None


def _date_plus(d, days: int):
    """date + integer; an infinite date stays infinite (date_pli)."""
    return d if wiretypes.dt64_infinity(d) is not None else d + dt.timedelta(days=days)


_INT32 = 2 ** 31
_SECS_PER_DAY = 86_400


def _tsround(v: float) -> float:
    """PostgreSQL's TSROUND: rounded to microsecond precision."""
    return round(v * 1e6) / 1e6


def _interval_out_of_range() -> PgError:
    return PgError(DATETIME_FIELD_OVERFLOW, "interval out of range")


def checked_interval(v: Interval) -> Interval:
    """``v`` if its fields fit PostgreSQL's (int32 months and days, int64
    microseconds), else interval_pl's error (a sum of intervals)."""
    if not (-_INT32 <= v.months < _INT32 and -_INT32 <= v.days < _INT32 and -(2 ** 63) <= v.microseconds < 2 ** 63):
        raise _interval_out_of_range()
    return v


def _interval_field(v: float) -> int:
    if math.isnan(v) or v > _INT32 - 1 or v < -_INT32:
        raise _interval_out_of_range()
    return int(v)                            # C's (int32) cast truncates toward zero


def _interval_scaled(a: Interval, months: float, days: float, time: float) -> Interval:
    """PostgreSQL 15's interval_mul/interval_div once the three fields are
    scaled: whole months and days kept, their fractions cascaded down to
    days and microseconds (never up)."""
    m, d = _interval_field(months), _interval_field(days)
    month_days = _tsround((months - m) * 30)
    sec = _tsround((days - d + month_days - int(month_days)) * _SECS_PER_DAY)
    if abs(sec) >= _SECS_PER_DAY:
        d += int(sec / _SECS_PER_DAY)
        sec -= int(sec / _SECS_PER_DAY) * _SECS_PER_DAY
    d += int(month_days)
    us = time + sec * 1e6
    if not math.isfinite(us) or not -(2.0 ** 63) <= us < 2.0 ** 63:
        raise _interval_out_of_range()
    return Interval(m, d, round(us))        # rint: half to even, as Python's round


def interval_mul(a: Interval, f: float) -> Interval:
    """interval * float8, as PostgreSQL 15's interval_mul."""
    return _interval_scaled(a, a.months * f, a.days * f, a.microseconds * f)


def interval_div(a: Interval, f: float) -> Interval:
    """interval / float8, as PostgreSQL 15's interval_div (also avg(interval))."""
    if f == 0:
        raise PgError(DIVISION_BY_ZERO, "division by zero")
    return _interval_scaled(a, a.months / f, a.days / f, a.microseconds / f)

_OUT_OF_RANGE = {type_oids.DATE: "date out of range", type_oids.INTERVAL: "interval out of range"}


def _elementwise(fn, oid):
    def impl(cols, n, ctx):
        a, b = cols[0].to_pylist(), cols[1].to_pylist()
        try:
            return Col.from_pylist([None if x is None or y is None else fn(x, y) for x, y in zip(a, b)], oid)
        except (OverflowError, ValueError):
            # Python's date range ends at year 9999: past it PostgreSQL's answer is its range error, not a crash
            raise PgError("22008", _OUT_OF_RANGE.get(oid, "timestamp out of range")) from None

    return impl


def _finite(v, what: str):
    """An operand of date - date or timestamp - timestamp: PostgreSQL 15
    refuses an infinite one (there is no infinite interval to answer)."""
    if wiretypes.dt64_infinity(v) is not None:
        raise PgError(DATETIME_FIELD_OVERFLOW, f"cannot subtract infinite {what}")
    return v


def _date_at_time(d: dt.date, t: dt.time) -> dt.date:
    return d if wiretypes.dt64_infinity(d) is not None else dt.datetime.combine(d, t)


def add_interval_in_zone(v: dt.datetime, iv: Interval, sign: int, zone: dt.tzinfo) -> dt.datetime:
    """timestamptz_pl_interval: months, then days, on the zone's wall clock
    (each re-resolved there, DetermineTimeZoneOffset), then the time part."""
    if wiretypes.dt64_infinity(v) is not None:
        return v
    if iv.months or iv.days:
        wall = add_interval(local_wall(v, zone), Interval(iv.months, iv.days, 0), sign)
        v = wall_to_utc(wall, zone)
    return v + dt.timedelta(microseconds=sign * iv.microseconds)


def _in_session_zone(sign: int):
    def impl(cols, n, ctx):
        zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
        return _elementwise(lambda a, b: add_interval_in_zone(a, b, sign, zone), type_oids.TIMESTAMPTZ)(cols, n, ctx)

    return impl


def temporal_arith(planner, op: str, left: expr.Expr, right: expr.Expr) -> expr.Expr | None:
    lo, ro = left.oid, right.oid
    temporal = (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.INTERVAL, type_oids.TIME,
                type_oids.TIMETZ)
    if lo not in temporal and ro not in temporal:
        return None
    if lo != type_oids.UNKNOWN and sqltypes.is_string(lo) or ro != type_oids.UNKNOWN and sqltypes.is_string(ro):
        raise expr.operator_missing(op, lo, ro)       # no date/time operator takes a typed string
    if lo == type_oids.UNKNOWN:
        left = planner.coerce(left, type_oids.INTERVAL if ro in temporal and op in ("+", "-") and ro != type_oids.INTERVAL else ro)
        lo = left.oid
    if ro == type_oids.UNKNOWN:
        right = planner.coerce(right, type_oids.INTERVAL if lo in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.TIME, type_oids.TIMETZ) or (lo == type_oids.INTERVAL) else
                           (type_oids.DATE if lo == type_oids.DATE and op == "-" else type_oids.INT4))
        ro = right.oid

    def tsv(v):
        return dt.datetime(v.year, v.month, v.day) if type(v) is dt.date else v

    if op in ("+", "-") and ro == type_oids.INTERVAL and lo == type_oids.TIMESTAMPTZ:
        return expr.Func("tstz_interval", _in_session_zone(1 if op == "+" else -1), [left, right], lo)
    if op == "+" and lo == type_oids.INTERVAL and ro == type_oids.TIMESTAMPTZ:
        return expr.Func("tstz_interval", _in_session_zone(1), [right, left], ro)
    if op == "+" and {lo, ro} == {type_oids.DATE, type_oids.TIME}:       # datetime_timestamp
        args = [left, right] if lo == type_oids.DATE else [right, left]
        return expr.Func("date_time", _elementwise(_date_at_time, type_oids.TIMESTAMP), args, type_oids.TIMESTAMP)
    if op in ("+", "-") and ro == type_oids.INTERVAL and lo in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        sign = 1 if op == "+" else -1
        out = type_oids.TIMESTAMP if lo == type_oids.DATE else lo
        return expr.Func("ts_interval", _elementwise(lambda a, b: add_interval(tsv(a), b, sign), out), [left, right], out)
    if op == "+" and lo == type_oids.INTERVAL and ro in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        out = type_oids.TIMESTAMP if ro == type_oids.DATE else ro
        return expr.Func("ts_interval", _elementwise(lambda a, b: add_interval(tsv(b), a, 1), out), [left, right], out)
    if lo == type_oids.DATE and ro in (type_oids.INT4, type_oids.INT2) and op in ("+", "-"):   # no date + int8
        sign = 1 if op == "+" else -1
        return expr.Func("date_int", _elementwise(lambda a, b: _date_plus(a, sign * b), type_oids.DATE), [left, right], type_oids.DATE)
    if ro == type_oids.DATE and lo in (type_oids.INT4, type_oids.INT2) and op == "+":
        return expr.Func("date_int", _elementwise(lambda a, b: _date_plus(b, a), type_oids.DATE), [left, right], type_oids.DATE)
    if lo == type_oids.DATE and ro == type_oids.DATE and op == "-":
        return expr.Func("date_diff", _elementwise(lambda a, b: (_finite(a, "dates") - _finite(b, "dates")).days,
                                                   type_oids.INT4), [left, right], type_oids.INT4)
    if lo in _TS + (type_oids.DATE,) and ro in _TS + (type_oids.DATE,) and op == "-":
        if type_oids.TIMESTAMPTZ in (lo, ro):
            left, right = planner.coerce(left, type_oids.TIMESTAMPTZ), planner.coerce(right, type_oids.TIMESTAMPTZ)
        else:
            left, right = planner.coerce(left, type_oids.TIMESTAMP), planner.coerce(right, type_oids.TIMESTAMP)

        def diff(a, b):
            d = _finite(a, "timestamps") - _finite(b, "timestamps")
            us = d.seconds * 1_000_000 + d.microseconds
            return Interval(0, d.days, us) if d.days >= 0 or us == 0 else Interval(0, d.days + 1, us - 86_400_000_000)

        return expr.Func("ts_diff", _elementwise(diff, type_oids.INTERVAL), [left, right], type_oids.INTERVAL)
    if lo == type_oids.INTERVAL and ro == type_oids.INTERVAL and op in ("+", "-"):
        s = 1 if op == "+" else -1
        return expr.Func("iv", _elementwise(lambda a, b: checked_interval(Interval(
            a.months + s * b.months, a.days + s * b.days, a.microseconds + s * b.microseconds)), type_oids.INTERVAL),
            [left, right], type_oids.INTERVAL)
    if lo == type_oids.INTERVAL and ro in type_oids.NUMERIC_TYPES and op in ("*", "/"):
        right = planner.coerce(right, type_oids.FLOAT8)

        def scale(a, f):
            if op == "/":
                return interval_div(a, f)
            return interval_mul(a, f)

        return expr.Func("iv_scale", _elementwise(scale, type_oids.INTERVAL), [left, right], type_oids.INTERVAL)
    if ro == type_oids.INTERVAL and lo in type_oids.NUMERIC_TYPES and op == "*":
        return temporal_arith(planner, "*", right, left)
    if op == "+" and lo == type_oids.INTERVAL and ro in (type_oids.TIME, type_oids.TIMETZ):
        return temporal_arith(planner, "+", right, left)
    if lo in (type_oids.TIME, type_oids.TIMETZ) and ro == type_oids.INTERVAL and op in ("+", "-"):
        s = 1 if op == "+" else -1

        def tadd(a, b):
            base = dt.datetime(2000, 1, 1, a.hour, a.minute, a.second, a.microsecond)
            moved = (base + s * dt.timedelta(days=0, microseconds=b.microseconds)).time()
            return moved if lo == type_oids.TIME else wiretypes.timetz(moved, a.utcoffset())

        return expr.Func("time_iv", _elementwise(tadd, lo), [left, right], lo)
    if op == "+" and {lo, ro} == {type_oids.DATE, type_oids.TIMETZ}:
        def at_time(d, t):                  # datetimetz_timestamptz
            return dt.datetime.combine(d, t).astimezone(dt.timezone.utc)

        args = [left, right] if lo == type_oids.DATE else [right, left]
        return expr.Func("date_timetz", _elementwise(at_time, type_oids.TIMESTAMPTZ), args, type_oids.TIMESTAMPTZ)
    if op == "-" and lo == ro == type_oids.TIME:
        def tdiff(a, b):
            us = ((a.hour - b.hour) * 3600 + (a.minute - b.minute) * 60 + a.second - b.second) * 1_000_000 + a.microsecond - b.microsecond
            return Interval(0, 0, us)

        return expr.Func("time_diff", _elementwise(tdiff, type_oids.INTERVAL), [left, right], type_oids.INTERVAL)
    raise expr.operator_missing(op, lo, ro)

