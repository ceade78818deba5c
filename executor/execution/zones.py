"""AT TIME ZONE and timezone(zone, value): which zone a text or an interval
names, and the conversions, as PostgreSQL 15 does them.

Why a module of its own: PostgreSQL reads the zone argument in a fixed
order (timestamptz_zone): an abbreviation of the Default set first (``EST``
is always -05, ``z`` UTC), then a zone name of the tz database, matched
without regard to case, then a POSIX specification (``UTC+3`` is three
hours *west* of Greenwich, ``<+0330>-3:30`` east); anything else is 22023.
An interval names a fixed offset east of UTC and may hold no months or days.
A timetz moves by the zone's offset now (timetz_zone).
"""
from __future__ import annotations

import datetime as dt
import functools
import zoneinfo

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import Interval

from . import zone_abbrevs
from .functions import register
from .zoned_casts import local_wall, wall_to_utc

@functools.lru_cache(maxsize=256)
def resolve(name: str) -> dt.tzinfo:
    """The zone a text argument of AT TIME ZONE names (PostgreSQL's order)."""
    low = name.lower()
    fixed = zone_abbrevs.FIXED.get(low)
    if fixed is not None:
        return dt.timezone(dt.timedelta(seconds=fixed[0]))
    full = zone_abbrevs.DYNAMIC.get(low) or wiretypes.canonical_zone_name(name)
    if full is not None:
        return zoneinfo.ZoneInfo(full)
    posix = wiretypes.posix_zone(name)
    if posix is not None:
        return posix
    raise PgError(INVALID_PARAMETER_VALUE, f'time zone "{name}" not recognized')


def interval_zone(iv: Interval) -> dt.tzinfo:
    """An interval as a fixed zone, east of UTC (timestamptz_izone)."""
    if iv.months or iv.days:
        raise PgError(INVALID_PARAMETER_VALUE,
                      f'interval time zone "{wiretypes.encode_text(type_oids.INTERVAL, iv).decode()}" '
                      "must not include months or days")
    try:
        return dt.timezone(dt.timedelta(microseconds=iv.microseconds))
    except ValueError:
        raise PgError(INVALID_PARAMETER_VALUE, "interval time zone out of range") from None


def _move_timetz(v: dt.time, zone: dt.tzinfo, now: dt.datetime) -> dt.time:
    """timetz_zone: the same instant of the day at the zone's offset now."""
    off = now.astimezone(zone).utcoffset() or dt.timedelta(0)
    moved = dt.datetime.combine(dt.date(2000, 1, 3), v).astimezone(dt.timezone(off))
    return wiretypes.timetz(moved.time(), off)


_CONVERT = {type_oids.TIMESTAMPTZ: local_wall, type_oids.TIMESTAMP: wall_to_utc}


@register("timezone", sigs="text, timestamptz -> timestamp | text, timestamp -> timestamptz | text, timetz -> timetz"
                           " | interval, timestamptz -> timestamp | interval, timestamp -> timestamptz"
                           " | interval, timetz -> timetz")
def _timezone(cols, n, ctx):
    zones, src = cols
    out_oid = {type_oids.TIMESTAMPTZ: type_oids.TIMESTAMP, type_oids.TIMESTAMP: type_oids.TIMESTAMPTZ}.get(
        src.oid, type_oids.TIMETZ)
    pick = interval_zone if zones.oid == type_oids.INTERVAL else resolve
    now = ctx.now if ctx is not None else dt.datetime.now(dt.timezone.utc)
    out = []
    for z, v in zip(zones.to_pylist(), src.to_pylist()):
        if z is None or v is None:
            out.append(None)
        elif src.oid == type_oids.TIMETZ:
            out.append(_move_timetz(v, pick(z), now))
        else:
            out.append(_CONVERT[src.oid](v, pick(z)))
    return Col.from_pylist(out, out_oid)
