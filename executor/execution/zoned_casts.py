"""Casts whose result depends on the session: its TimeZone, and its
extra_float_digits for float to text.

``catalog.types.cast_col`` knows no session, so it treats timestamptz as
UTC and writes floats as extra_float_digits 1 does.  PostgreSQL converts
timestamptz to and from text, timestamp, date and time in the session's
zone; ``expr.Cast`` routes those pairs here when the zone is not UTC (and
float to text when extra_float_digits is below 1).  Values go through
zoneinfo one at a time: these casts are rare on hot paths, and DST makes the
offset vary by value.
"""
from __future__ import annotations

import datetime as dt


from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import DATETIME_FIELD_OVERFLOW, PgError

_TEXT = (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME)
_LOCAL = (type_oids.TIMESTAMP, type_oids.DATE, type_oids.TIME, type_oids.TIMETZ)


def zone_dependent(src: int, target: int) -> bool:
    """True for the casts PostgreSQL evaluates with the session's settings."""
    if src in (type_oids.FLOAT4, type_oids.FLOAT8):
        return target in _TEXT
    if src == type_oids.TIMESTAMPTZ:
        return target in _TEXT or target in _LOCAL
    if target == type_oids.TIMESTAMPTZ:
        return src in _TEXT or src == type_oids.UNKNOWN or src in (type_oids.TIMESTAMP, type_oids.DATE)
    if target == type_oids.TIMETZ:
        return src in _TEXT or src in (type_oids.UNKNOWN, type_oids.TIME)
    return False


def float_text(col: Col, target: int, typmod: int, explicit: bool, digits: int) -> Col:
    """float4/float8 to text as float4out/float8out write it under extra_float_digits."""
    text = wiretypes.encode_text_column(col.oid, col.data, col.nulls, float_digits=digits)
    out = [None if v is None else v.decode() for v in text]
    return sqltypes.cast_col(Col.from_pylist(out, type_oids.TEXT), target, typmod, explicit)


def cast_in_zone(col: Col, target: int, typmod: int, explicit: bool, tz: str) -> Col:
    src = col.oid
    if src == type_oids.TIMESTAMPTZ and target in _TEXT:
        text = wiretypes.encode_text_column(type_oids.TIMESTAMPTZ, col.data, col.nulls, tz=tz)
        out = [None if v is None else v.decode() for v in text]
        return sqltypes.cast_col(Col.from_pylist(out, type_oids.TEXT), target, typmod, explicit)
    zone = wiretypes.zone_of(tz)
    if target == type_oids.TIMETZ:
        return sqltypes.cast_col(Col.from_pylist([None if v is None else _timetz_in_zone(src, v, zone, tz)
                                                  for v in col.to_pylist()], type_oids.TIMETZ), target, typmod, explicit)
    if src == type_oids.TIMESTAMPTZ:        # to local wall-clock time, then on to date / time
        local = [None if v is None else local_wall(v, zone) for v in col.to_pylist()]
        return sqltypes.cast_col(Col.from_pylist(local, type_oids.TIMESTAMP), target, typmod, explicit)
    if src in _TEXT or src == type_oids.UNKNOWN:
        vals = [None if v is None else wiretypes.decode_text(type_oids.TIMESTAMPTZ, str(v), tz=tz) for v in col.to_pylist()]
        return sqltypes.cast_col(Col.from_pylist(vals, type_oids.TIMESTAMPTZ), target, typmod, explicit)
    # timestamp / date: the wall-clock time in the session's zone
    wall = sqltypes.cast_col(col, type_oids.TIMESTAMP) if src == type_oids.DATE else col
    vals = [None if v is None else wall_to_utc(v, zone) for v in wall.to_pylist()]
    result = Col.from_pylist(vals, type_oids.TIMESTAMPTZ)
    return result if typmod < 0 else sqltypes.cast_col(result, target, typmod, explicit)





def local_wall(v: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """A timestamptz on the zone's wall clock; an infinity stays one."""
    if wiretypes.is_pos_infinity(v):
        return wiretypes.TS_POS_INF
    if wiretypes.is_neg_infinity(v):
        return wiretypes.TS_NEG_INF
    try:
        return v.astimezone(zone).replace(tzinfo=None)
    except OverflowError:       # the wall clock is in 1 BC or 10000 AD, which Python's datetime cannot hold
        raise _beyond_python_years() from None


def wall_to_utc(wall: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """A wall-clock time of ``zone`` as a UTC instant; a skipped or repeated
    time takes the smaller of its two offsets (PostgreSQL's
    DetermineTimeZoneOffset); an infinity stays one."""
    if wiretypes.is_pos_infinity(wall):
        return wiretypes.TSTZ_POS_INF
    if wiretypes.is_neg_infinity(wall):
        return wiretypes.TSTZ_NEG_INF
    if not isinstance(wall, dt.datetime):       # numpy's int for a wall clock before year 1
        raise _beyond_python_years()
    offset = min(wall.replace(tzinfo=zone, fold=0).utcoffset() or dt.timedelta(0),
                 wall.replace(tzinfo=zone, fold=1).utcoffset() or dt.timedelta(0))
    try:
        return (wall - offset).replace(tzinfo=dt.timezone.utc)
    except OverflowError:
        raise _beyond_python_years() from None


def _beyond_python_years() -> PgError:
    """PostgreSQL holds 4713 BC to 294276 AD; splitstream's datetimes stop
    at years 1 and 9999, so past them it answers PostgreSQL's range error."""
    return PgError(DATETIME_FIELD_OVERFLOW, "timestamp out of range")


def _timetz_in_zone(src: int, v, zone: dt.tzinfo, tz: str) -> dt.time | None:
    """A timestamptz's local time with its offset; a time with the zone's
    offset today (PostgreSQL's time_timetz); text read in the zone."""
    if src == type_oids.TIMESTAMPTZ:
        if wiretypes.dt64_infinity(v) is not None:
            return None
        local = v.astimezone(zone)
        return wiretypes.timetz(local.time(), local.utcoffset() or dt.timedelta(0))
    if src == type_oids.TIME:
        now = dt.datetime.now(dt.timezone.utc).astimezone(zone)
        return wiretypes.timetz(v, now.utcoffset() or dt.timedelta(0))
    return wiretypes.decode_text(type_oids.TIMETZ, str(v), tz=tz)
