"""date_trunc and date_bin, as PostgreSQL computes them.

Why a module of its own: truncating a timestamptz happens on the wall
clock of a time zone -- the session's TimeZone, or the third argument --
and PostgreSQL's rules at DST transitions are particular
(timestamptz_trunc_internal): units of a day or more are re-resolved in the
zone from the truncated wall-clock time, smaller units keep the input's
UTC offset.  A wall-clock time the zone skips or repeats takes the smaller
of its two offsets, as PostgreSQL's DetermineTimeZoneOffset does (the one
before a spring-forward gap, the one after a fall-back overlap).

Naive timestamps, and timestamptz in UTC, are truncated on whole numpy
columns; other zones go value by value (the offset varies with DST).
"""
from __future__ import annotations

import ctypes
import datetime as dt

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import Interval

from .functions import register
from .zoned_casts import wall_to_utc

#: PostgreSQL's spellings of the units (DecodeUnits), to one name each
_UNITS = {
    **dict.fromkeys(("microsecond", "microseconds", "us", "usec", "usecs", "useconds"), "microseconds"),
    **dict.fromkeys(("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds"), "milliseconds"),
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
}
#: units re-resolved in the zone after truncation (PostgreSQL's redotz)
_REZONED = ("day", "week", "month", "quarter", "year", "decade", "century", "millennium")
#: numpy's datetime64 units for the truncations it does by itself
_NUMPY_UNITS = {"microseconds": "us", "milliseconds": "ms", "second": "s", "minute": "m", "hour": "h", "day": "D",
                "month": "M", "year": "Y"}


def _unit(text: str, type_oid: int) -> str:
    low = text.lower()
    unit = _UNITS.get(low)
    if unit is None:
        raise PgError(INVALID_PARAMETER_VALUE, f'unit "{low}" not recognized for type {sqltypes.format_type(type_oid)}')
    return unit


def truncate_wall(unit: str, v: dt.datetime) -> dt.datetime:
    """A wall-clock time truncated to ``unit`` (ISO weeks start on Monday)."""
    if unit == "microseconds":
        return v
    if unit == "milliseconds":
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    if unit == "second":
        return v.replace(microsecond=0)
    if unit == "minute":
        return v.replace(second=0, microsecond=0)
    if unit == "hour":
        return v.replace(minute=0, second=0, microsecond=0)
    midnight = v.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return midnight
    if unit == "week":
        return midnight - dt.timedelta(days=v.weekday())
    first = midnight.replace(day=1)
    if unit == "month":
        return first
    if unit == "quarter":
        return first.replace(month=(v.month - 1) // 3 * 3 + 1)
    year = {"year": v.year, "decade": v.year // 10 * 10, "century": (v.year - 1) // 100 * 100 + 1,
            "millennium": (v.year - 1) // 1000 * 1000 + 1}[unit]
    return first.replace(year=year, month=1)


def truncate_zoned(unit: str, v: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    local = v.astimezone(zone)
    wall = truncate_wall(unit, local.replace(tzinfo=None))
    if unit in _REZONED:
        return wall_to_utc(wall, zone)
    offset = local.utcoffset() or dt.timedelta(0)
    return (wall - offset).replace(tzinfo=dt.timezone.utc)


def cdiv(a: int, b: int) -> int:
    """C's integer division (toward zero), as PostgreSQL's field arithmetic."""
    q = abs(a) // b
    return q if a >= 0 else -q


def truncate_interval(unit: str, v: Interval) -> Interval:
    """interval_trunc: the fields below ``unit`` zeroed."""
    if unit == "week":
        raise PgError(FEATURE_NOT_SUPPORTED, 'unit "week" not supported for type interval',
                      detail="Months usually have fractional weeks.")
    years = cdiv(v.months, 12)
    months = v.months - 12 * years
    by_years = {"year": 1, "decade": 10, "century": 100, "millennium": 1000}
    if unit in by_years:
        return Interval(cdiv(years, by_years[unit]) * by_years[unit] * 12, 0, 0)
    if unit in ("quarter", "month"):
        return Interval(12 * years + (cdiv(months, 3) * 3 if unit == "quarter" else months), 0, 0)
    step = {"day": 0, "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "milliseconds": 1000,
            "microseconds": 1}[unit]
    return Interval(v.months, v.days, cdiv(v.microseconds, step) * step if step else 0)


def _zone(name: str) -> dt.tzinfo:
    """A time zone argument; PostgreSQL refuses names it does not know."""
    zone = wiretypes.zone_of(name)
    if zone is wiretypes.UTC and name.strip().upper() not in ("UTC", "GMT", "Z", "ZULU", "ETC/UTC", "UCT", "ETC/UCT"):
        raise PgError(INVALID_PARAMETER_VALUE, f'time zone "{name}" not recognized')
    return zone


def _column_trunc(unit: str, col: Col) -> Col | None:
    """The whole-column truncation of naive wall-clock times, or None."""
    np_unit = _NUMPY_UNITS.get(unit)
    if np_unit is None or col.data.dtype.kind != "M":
        return None
    data = col.data.astype(f"datetime64[{np_unit}]").astype("datetime64[us]")
    raw = col.data.view(np.int64)
    infinite = (raw == wiretypes.DT64_POS_INF) | (raw == wiretypes.DT64_NEG_INF)
    if infinite.any():                      # an infinity truncates to itself
        data = np.where(infinite, col.data, data)
    return Col(data, col.nulls, col.oid)


#: distinct minutes a column may span for the whole-column zoned path (one offset lookup each)
_MAX_ZONED_MINUTES = 200_000
_MINUTE_US = 60_000_000


def _offsets_us(us: np.ndarray, zone: dt.tzinfo) -> np.ndarray | None:
    """Each instant's UTC offset in ``zone`` (microseconds), looked up once per
    distinct minute; None when a minute holds an offset change (then the
    caller goes value by value) or the column spans too many minutes."""
    minutes = us // _MINUTE_US
    uniq, inv = np.unique(minutes, return_inverse=True)
    if len(uniq) > _MAX_ZONED_MINUTES:
        return None
    def off(t_us: int) -> int:
        utc = _EPOCH + dt.timedelta(microseconds=t_us)
        o = wiretypes.utc_offset_at(utc, zone)
        return (o.days * 86_400 + o.seconds) * 1_000_000 + o.microseconds
    starts = [off(int(m) * _MINUTE_US) for m in uniq.tolist()]
    ends = [off(int(m) * _MINUTE_US + _MINUTE_US - 1) for m in uniq.tolist()]
    if starts != ends:
        return None
    return np.asarray(starts, dtype=np.int64)[inv.reshape(-1)]


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _column_trunc_zoned(unit: str, col: Col, zone: dt.tzinfo) -> Col | None:
    """date_trunc of timestamptz on the wall clock of ``zone``, on whole
    columns: the wall clock is the instant plus its offset; units below a
    day keep the input's offset, larger ones are re-resolved in the zone
    once per distinct truncated wall-clock time (truncate_zoned's rules)."""
    np_unit = _NUMPY_UNITS.get(unit)
    if np_unit is None or len(col) == 0:
        return None
    us = col.data.astype("datetime64[us]").view(np.int64)
    infinite = (us == wiretypes.DT64_POS_INF) | (us == wiretypes.DT64_NEG_INF)
    valid = col.valid_mask() & ~infinite
    safe = np.where(valid, us, 0)
    offsets = _offsets_us(safe, zone)
    if offsets is None:
        return None
    wall = (safe + offsets).view("datetime64[us]").astype(f"datetime64[{np_unit}]").astype("datetime64[us]")
    if unit not in _REZONED:
        out = wall.view(np.int64) - offsets
    else:
        walls, inv = np.unique(wall, return_inverse=True)
        utc = [wall_to_utc(w, zone) for w in walls.astype(dt.datetime).tolist()]
        out = np.asarray([(u - _EPOCH) // dt.timedelta(microseconds=1) for u in utc], dtype=np.int64)[inv.reshape(-1)]
    out = np.where(infinite, us, out)         # an infinity truncates to itself
    return Col(out.view("datetime64[us]"), col.nulls, col.oid)


@register("date_trunc", sigs="text, timestamp -> timestamp | text, timestamptz -> timestamptz | text, interval -> interval"
                             " | text, timestamptz, text -> timestamptz")
def _date_trunc(cols, n, ctx):
    units, src = cols[0].to_pylist(), cols[1]
    zones = cols[2].to_pylist() if len(cols) > 2 else None
    session = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
    first = units[0] if n else None
    if zones is None and first is not None and units.count(first) == n and src.valid_mask().any() \
            and (src.oid == type_oids.TIMESTAMP or wiretypes.zone_of(session) is wiretypes.UTC):
        fast = _column_trunc(_unit(first, src.oid), src)
        if fast is not None:
            return fast
    if zones is None and first is not None and src.oid == type_oids.TIMESTAMPTZ and units.count(first) == n \
            and src.valid_mask().any():
        zoned = _column_trunc_zoned(_unit(first, src.oid), src, wiretypes.zone_of(session))
        if zoned is not None:
            return zoned
    out: list[object] = []
    for i, (u, v) in enumerate(zip(units, src.to_pylist())):
        z = zones[i] if zones is not None else session
        if u is None or v is None or z is None:
            out.append(None)
            continue
        unit = _unit(u, src.oid)
        if wiretypes.dt64_infinity(v) is not None:     # an infinity truncates to itself
            out.append(v)
        elif src.oid == type_oids.INTERVAL:
            out.append(truncate_interval(unit, v))
        elif src.oid == type_oids.TIMESTAMPTZ:
            out.append(truncate_zoned(unit, v, _zone(z) if zones is not None else wiretypes.zone_of(z)))
        else:
            out.append(truncate_wall(unit, v))
    return Col.from_pylist(out, src.oid)


@register("date_bin", sigs="interval, timestamp, timestamp -> timestamp | interval, timestamptz, timestamptz -> timestamptz")
def _date_bin(cols, n, ctx):
    """date_bin(stride, source, origin): source moved back to the start of
    its stride-wide bin counted from origin (also when the origin is later),
    on whole columns of microseconds; the stride's width is worked out once
    per distinct stride (a constant stride: once)."""
    strides, src, origin = cols
    valid = src.valid_mask() & origin.valid_mask() & strides.valid_mask()
    width = _stride_widths(strides, valid)
    diff = src.data.astype("datetime64[us]").astype(np.int64) - origin.data.astype("datetime64[us]").astype(np.int64)
    safe = np.where(valid, width, 1)
    moved = src.data.astype("datetime64[us]") - np.mod(diff, safe).astype("timedelta64[us]")
    return Col(moved, None if valid.all() else ~valid, src.oid)


def _month_days_from_2000(months: int) -> int:
    """Days in the first ``months`` months from 2000-01-01."""
    if not months:
        return 0
    y, m = divmod(months, 12)
    return (dt.date(2000 + y, 1 + m, 1) - dt.date(2000, 1, 1)).days


#: microseconds from 1970-01-01 to PostgreSQL's epoch 2000-01-01
_PG_EPOCH_US = 946_684_800_000_000


@register("date_round", sigs="timestamptz, interval -> timestamptz", strict=False)
def _date_round(cols, n, ctx):
    """PipelineDB's date_round(ts, interval): ts rounded down to a multiple of
    the interval counted from 2000-01-01 (C's remainder, so a time before
    2000 rounds up towards it, as PipelineDB's round_down); a NULL interval
    keeps ts.  Whole columns: Python runs per distinct interval only."""
    src, strides = cols
    valid = src.valid_mask() & strides.valid_mask()
    width = np.where(valid, _stride_widths(strides, valid, months_from_2000=True), 1)
    width = np.where(width == 0, 1, width)
    us = src.data.astype("datetime64[us]").astype(np.int64) - _PG_EPOCH_US
    out = (us - np.fmod(us, width) + _PG_EPOCH_US).astype("datetime64[us]")
    out = np.where(valid, out, src.data.astype("datetime64[us]"))
    return Col(out, None if src.valid_mask().all() else ~src.valid_mask(), src.oid)


def _stride_widths(strides: Col, valid: np.ndarray, months_from_2000: bool = False) -> np.ndarray:
    """Each row's stride in microseconds (0 where the row is NULL); the rows'
    strides are told apart by identity (a constant's column repeats one
    object), so Python runs once per distinct interval object, not per row.
    As PostgreSQL, only strides of rows with all arguments present are checked.
    ``months_from_2000``: an interval with months is as wide as it is from
    2000-01-01 (PipelineDB's date_round), instead of refused (date_bin)."""
    data = np.ascontiguousarray(strides.data)
    n = len(data)
    if n == 0 or not valid.any():
        return np.zeros(n, np.int64)
    ids = np.ctypeslib.as_array(ctypes.cast(data.ctypes.data, ctypes.POINTER(ctypes.c_ssize_t)), shape=(n,)).copy()
    _uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    inv = inv.reshape(n)
    used = np.zeros(len(first), dtype=bool)
    used[inv[valid]] = True
    widths = np.zeros(len(first), np.int64)
    for j in np.flatnonzero(used).tolist():
        s = data[first[j]]
        if s.months and not months_from_2000:
            raise PgError(FEATURE_NOT_SUPPORTED, "timestamps cannot be binned into intervals containing months or years")
        widths[j] = (_month_days_from_2000(s.months) + s.days) * 86_400_000_000 + s.microseconds
        if widths[j] <= 0:
            raise PgError(DATETIME_FIELD_OVERFLOW, "stride must be greater than zero")
    return widths[inv]


def _truncation_to(unit: str):
    """PipelineDB's ``year(ts)`` ... ``second(ts)``: ``date_trunc(unit, ts)``
    in the session's TimeZone, through the same column kernels."""
    def impl(cols, n, ctx):
        return _date_trunc([Col.const(unit, type_oids.TEXT, n), cols[0]], n, ctx)

    return impl


# pipelinedb--1.0.0.sql declares them on timestamptz only: a timestamp argument is cast (in the session zone)
for _unit_name in ("year", "month", "day", "hour", "minute", "second"):
    register(_unit_name, sigs="timestamptz -> timestamptz")(_truncation_to(_unit_name))
