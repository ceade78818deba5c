"""Casts whose result depends on the session's TimeZone.

``catalog.types.cast_col`` knows no session, so it treats timestamptz as
UTC.  PostgreSQL converts timestamptz to and from text, timestamp, date and
time in the session's zone; ``expr.Cast`` routes those pairs here when the
zone is not UTC.  Values go through zoneinfo one at a time: these casts are
rare on hot paths, and DST makes the offset vary by value.
"""
from __future__ import annotations

import datetime as dt


from catalog import types as T
from catalog.vector import Col
from protocol import oids as O
from protocol import types as PT

_TEXT = (O.TEXT, O.VARCHAR, O.BPCHAR, O.NAME)
_LOCAL = (O.TIMESTAMP, O.DATE, O.TIME)


def zone_dependent(src: int, target: int) -> bool:
    """True for the casts PostgreSQL evaluates in the session's TimeZone."""
    if src == O.TIMESTAMPTZ:
        return target in _TEXT or target in _LOCAL
    if target == O.TIMESTAMPTZ:
        return src in _TEXT or src == O.UNKNOWN or src in (O.TIMESTAMP, O.DATE)
    return False


def cast_in_zone(col: Col, target: int, typmod: int, explicit: bool, tz: str) -> Col:
    src = col.oid
    if src == O.TIMESTAMPTZ and target in _TEXT:
        text = PT.encode_text_column(O.TIMESTAMPTZ, col.data, col.nulls, tz=tz)
        out = [None if v is None else v.decode() for v in text]
        return T.cast_col(Col.from_pylist(out, O.TEXT), target, typmod, explicit)
    zone = PT.zone_of(tz)
    if src == O.TIMESTAMPTZ:        # to local wall-clock time, then on to date / time
        local = [None if v is None else v.astimezone(zone).replace(tzinfo=None) for v in col.to_pylist()]
        return T.cast_col(Col.from_pylist(local, O.TIMESTAMP), target, typmod, explicit)
    if src in _TEXT or src == O.UNKNOWN:
        vals = [None if v is None else PT.decode_text(O.TIMESTAMPTZ, str(v), tz=tz) for v in col.to_pylist()]
        return T.cast_col(Col.from_pylist(vals, O.TIMESTAMPTZ), target, typmod, explicit)
    # timestamp / date: the wall-clock time in the session's zone
    local = T.cast_col(col, O.TIMESTAMP) if src == O.DATE else col
    vals = [None if v is None else v.replace(tzinfo=zone).astimezone(dt.timezone.utc) for v in local.to_pylist()]
    out = Col.from_pylist(vals, O.TIMESTAMPTZ)
    return out if typmod < 0 else T.cast_col(out, target, typmod, explicit)



