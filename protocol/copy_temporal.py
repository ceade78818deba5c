"""Vectorised reading of ISO 8601 dates and timestamps in COPY data.

Timestamps are what event streams carry in every row, and reading them one
value at a time (or through pyarrow's parser, whose zone rules are not
PostgreSQL's) kept COPY into a windowed view near 0.5M rows/s.  This module
reads one string column at once with numpy: one gather per character
position, a digit check and a weighted sum, the calendar arithmetic as
integer vectors.

It accepts only a strict grammar whose meaning is the same under every
DateStyle and identical to PostgreSQL's datetime input::

    YYYY-MM-DD                                    (date; midnight for timestamps)
    YYYY-MM-DD{ |T}HH:MM:SS[.f{1,6}][Z|{+|-}HH[[:]MM]]

with a four-digit year from 0001, a real calendar day, hours 0-23, minutes
and seconds 0-59 and a zone offset up to 15:59.  Any value outside it
(whitespace, BC, ``infinity``, leap seconds, ``24:00``, seven fractional
digits, zone names, a bad value) makes the whole column decline (None) and
the caller reads it on the exact per-value path, which also produces
PostgreSQL's error for a bad value.

A ``timestamptz`` without an offset is local time in the session's zone.
Offsets are resolved once per distinct local hour by the exact per-value
path (so gaps and overlaps follow PostgreSQL's rules, not pyarrow's): when
the offset is the same at both ends of the hour every value in it takes it,
otherwise (a transition inside the hour) its values are read one by one.
"""
from __future__ import annotations

import datetime as _dt
from typing import Literal

import numpy as np

from . import types as wiretypes
from .errors import PgError

Kind = Literal["date", "timestamp", "timestamptz"]

_US_SEC = 1_000_000
_US_DAY = 86_400 * _US_SEC
_MAX_LEN = 32            # "YYYY-MM-DDTHH:MM:SS.ffffff+HH:MM" is 32 characters
_MAX_ZONE_HOUR = 15      # PostgreSQL's MAX_TZDISP_HOUR
_MAX_HOURS = 256         # distinct local hours resolved one by one before the per-value path is cheaper
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)
_FRAC_SCALE = np.array([0, 100_000, 10_000, 1_000, 100, 10, 1], np.int64)   # by digit count


class _Decline(Exception):
    """A value outside the strict grammar: the caller reads the column exactly."""


class _Chars:
    """Characters of every value at a position, gathered on demand.

    ``starts``/``lengths`` locate each value in ``data``; a position past a
    value's end reads as 0, which matches no digit or separator.  When every
    value has the same length and they lie back to back (a column of one
    format without NULLs, the usual case) the values are a 2-D view of the
    bytes and a position is one strided column of it."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.data, self.starts, self.lengths = data, starts, lengths
        self.last = max(len(data) - 1, 0)
        self.grid: np.ndarray | None = None
        n = len(starts)
        if n and (lengths == lengths[0]).all():
            width, first = int(lengths[0]), int(starts[0])
            if width and int(starts[-1]) == first + (n - 1) * width and first + n * width <= len(data):
                self.grid = data[first: first + n * width].reshape(n, width)

    def at(self, pos: int | np.ndarray) -> np.ndarray:
        if self.grid is not None and isinstance(pos, int):
            if pos >= self.grid.shape[1]:
                return np.zeros(len(self.starts), np.uint8)
            return self.grid[:, pos]
        idx = self.starts + pos
        inside = np.asarray(pos) < self.lengths
        return np.where(inside, self.data.take(np.minimum(idx, self.last)), 0).astype(np.uint8)

    def digits(self, first: int, count: int) -> np.ndarray:
        """The number written at ``first`` .. ``first + count - 1`` (declines on a non-digit)."""
        value = np.zeros(len(self.starts), np.int64)
        for p in range(first, first + count):
            d = self.at(p) - np.uint8(48)        # wraps: a non-digit is > 9
            if (d > 9).any():
                raise _Decline()
            value = value * 10 + d
        return value


def parse_column(data: np.ndarray, offsets: np.ndarray, nulls: np.ndarray | None, kind: Kind,
                 tz: str) -> np.ndarray | None:
    """The values of a string column (``offsets``: n + 1 positions in the
    bytes ``data``; ``nulls``: True where NULL) as datetime64[D] (date) or
    datetime64[us] (UTC for timestamptz), NULL slots holding the epoch; None
    when any value is outside the strict grammar."""
    n = len(offsets) - 1
    unit = "datetime64[D]" if kind == "date" else "datetime64[us]"
    keep = np.ones(n, np.bool_) if nulls is None else ~nulls
    rows = np.flatnonzero(keep)
    out = np.zeros(n, np.int64)
    if len(rows):
        starts = offsets[:-1][rows].astype(np.int64)
        lengths = (offsets[1:][rows] - offsets[:-1][rows]).astype(np.int64)
        try:
            out[rows] = _parse(_Chars(data, starts, lengths), kind, tz)
        except _Decline:
            return None
    return out.astype(unit)


def _parse(ch: _Chars, kind: Kind, tz: str) -> np.ndarray:
    lengths = ch.lengths
    if lengths.max() > _MAX_LEN or lengths.min() < 10:
        raise _Decline()
    days = _date_days(ch)
    if kind == "date":
        if (lengths != 10).any():
            raise _Decline()
        return days
    date_only = lengths == 10
    clock, zone_start = _time_of_day(ch, date_only)
    local = days * _US_DAY + clock
    offset, has_zone = _zone_offsets(ch, zone_start)
    if kind == "timestamp":
        if has_zone.any():
            raise _Decline()
        return np.asarray(local, np.int64)
    if not has_zone.all():
        naive = ~has_zone
        offset[naive] = _session_offsets(local[naive], tz)
    return np.asarray(local - offset, np.int64)


def _date_days(ch: _Chars) -> np.ndarray:
    """YYYY-MM-DD at the start: days since 1970-01-01."""
    if ((ch.at(4) != 45) | (ch.at(7) != 45)).any():
        raise _Decline()
    y, m, d = ch.digits(0, 4), ch.digits(5, 2), ch.digits(8, 2)
    if ((y < 1) | (m < 1) | (m > 12) | (d < 1)).any():
        raise _Decline()
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    if (d > _DAYS_IN_MONTH[m] + (leap & (m == 2))).any():
        raise _Decline()
    # days from civil (Howard Hinnant's algorithm), vectorised
    yy = y - (m <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return np.asarray(era * 146_097 + doe - 719_468, np.int64)


def _time_of_day(ch: _Chars, date_only: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """{ |T}HH:MM:SS[.ffffff] after the date (absent where ``date_only``):
    microseconds since midnight, and where each value's zone text starts."""
    n = len(ch.starts)
    if date_only.all():
        return np.zeros(n, np.int64), np.full(n, 10, np.int64)
    sep = ch.at(10)
    timed = ~date_only
    if ((timed & (sep != 32) & (sep != 84)) | (timed & ((ch.at(13) != 58) | (ch.at(16) != 58)))).any():
        raise _Decline()
    if date_only.any():           # a date among timestamps: read as midnight, rarely mixed
        raise _Decline()
    hh, mi, ss = ch.digits(11, 2), ch.digits(14, 2), ch.digits(17, 2)
    if ((hh > 23) | (mi > 59) | (ss > 59)).any():
        raise _Decline()
    dot = ch.at(19) == 46
    frac = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    running = dot.copy()
    for p in range(20, 26):
        d = ch.at(p) - np.uint8(48)
        running &= d <= 9
        frac = np.where(running, frac * 10 + d, frac)
        count += running
    if (dot & (count == 0)).any() or (dot & (count == 6) & (ch.at(26) - np.uint8(48) <= 9)).any():
        raise _Decline()          # "SS." or a seventh digit: PostgreSQL rounds, left to the exact path
    clock = ((hh * 60 + mi) * 60 + ss) * _US_SEC + frac * _FRAC_SCALE[count]
    return clock, np.where(dot, 20 + count, 19)


def _zone_offsets(ch: _Chars, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zone text from ``start`` to each value's end: Z, +HH, +HHMM or
    +HH:MM (or -): its offset east of UTC in microseconds, and whether there
    was one."""
    rest = ch.lengths - start
    has_zone = rest > 0
    offset = np.zeros(len(rest), np.int64)
    if not has_zone.any():
        return offset, has_zone
    sign_ch = ch.at(start)
    utc_z = (rest == 1) & (sign_ch == 90)
    signed = (sign_ch == 43) | (sign_ch == 45)
    if (has_zone & ~utc_z & ~(signed & np.isin(rest, (3, 5, 6)))).any():
        raise _Decline()
    numeric = has_zone & ~utc_z
    if not numeric.any():
        return offset, has_zone
    sel = np.flatnonzero(numeric)
    sub = _Chars(ch.data, ch.starts[sel] + start[sel] + 1, rest[sel] - 1)
    hours = sub.digits(0, 2)
    colon = rest[sel] == 6
    if (colon & (sub.at(2) != 58)).any():
        raise _Decline()
    minutes = np.zeros(len(sel), np.int64)
    with_min = rest[sel] > 3
    if with_min.any():
        mins = _Chars(ch.data, sub.starts[with_min] + np.where(colon[with_min], 3, 2), np.full(with_min.sum(), 2))
        minutes[with_min] = mins.digits(0, 2)
    if ((hours > _MAX_ZONE_HOUR) | (minutes > 59)).any():
        raise _Decline()
    east = np.where(sign_ch[sel] == 45, -1, 1) * (hours * 3600 + minutes * 60) * _US_SEC
    offset[sel] = east
    return offset, has_zone


def _session_offsets(local: np.ndarray, tz: str) -> np.ndarray:
    """Offsets (east of UTC, us) of local times in the session zone, as
    PostgreSQL resolves them; one exact resolution per distinct local hour."""
    if wiretypes.zone_of(tz) is wiretypes.UTC:
        return np.zeros(len(local), np.int64)
    hour_us = 3600 * _US_SEC
    hours, inverse = np.unique(local // hour_us, return_inverse=True)
    if len(hours) > _MAX_HOURS and len(hours) * 2 > len(local):
        raise _Decline()      # scattered over time: two exact reads per hour would cost more than one per value
    per_hour = np.empty(len(hours), np.int64)
    mixed: list[int] = []
    for i, h in enumerate(hours.tolist()):
        first = _exact_offset(h * hour_us, tz)
        if first != _exact_offset((h + 1) * hour_us - 1, tz):
            mixed.append(i)
        per_hour[i] = first
    offsets = per_hour[inverse.reshape(-1)]
    for i in mixed:                       # a transition inside this hour: value by value
        idx = np.flatnonzero(inverse.reshape(-1) == i)
        offsets[idx] = [_exact_offset(int(v), tz) for v in local[idx].tolist()]
    return offsets


_EPOCH = _dt.datetime(1970, 1, 1)


def _exact_offset(local_us: int, tz: str) -> int:
    """The offset PostgreSQL gives a local time (microseconds since 1970 on
    the wall clock) in zone ``tz``: through the exact text input path."""
    try:
        text = (_EPOCH + _dt.timedelta(microseconds=local_us)).isoformat(sep=" ")
        value = wiretypes.decode_text(wiretypes.TIMESTAMPTZ, text, tz=tz)
        utc = (value - _dt.datetime(1970, 1, 1, tzinfo=wiretypes.UTC)) // _dt.timedelta(microseconds=1)
    except (PgError, OverflowError, TypeError, ValueError):
        raise _Decline() from None      # near the ends of the range: the exact path decides
    return int(local_us - utc)
