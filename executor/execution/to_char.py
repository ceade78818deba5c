"""to_char(timestamp|timestamptz|interval, template), as formatting.c's
DCH_to_char writes it.

Why a module of its own: a template is read keyword by keyword (longest
first, case telling how names are written), with the FM/FX prefixes and
TH/th suffixes, quoted literals and backslash escapes; a timestamptz is
shown on the wall clock of the session's TimeZone with that zone's
abbreviation and offset at the instant (TZ, tz, OF, TZH, TZM), as
PostgreSQL does.  One value at a time: templates are per-row work anyway.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import INVALID_DATETIME_FORMAT, PgError
from splitstream.protocol.types import Interval

from . import number_format
from .functions import elementwise, register
from .truncation import cdiv

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]

#: keywords whose spelling is their output's case: name -> (field, case)
_CASED = {}
for _w, _f in (("MONTH", "month"), ("MON", "mon"), ("DAY", "day"), ("DY", "dy"), ("RM", "rm"), ("AM", "am"),
               ("PM", "am"), ("A.M.", "a.m."), ("P.M.", "a.m."), ("AD", "ad"), ("BC", "ad"), ("A.D.", "a.d."),
               ("B.C.", "a.d."), ("TZ", "tz")):
    _CASED[_w] = (_f, "upper")
    _CASED[_w.lower()] = (_f, "lower")
for _w, _f in (("Month", "month"), ("Mon", "mon"), ("Day", "day"), ("Dy", "dy")):
    _CASED[_w] = (_f, "cap")
#: numeric keywords (either case): name -> field
_NUMERIC = ["Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "I", "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS",
            "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "DDD", "DD", "D", "IDDD", "ID", "IW", "WW", "W",
            "MM", "CC", "J", "Q", "TZH", "TZM", "OF"]
_KEYWORDS: dict[str, tuple[str, str | None]] = {**_CASED, **{k: (k.lower(), None) for k in _NUMERIC},
                                                **{k.lower(): (k.lower(), None) for k in _NUMERIC}}
_BY_LENGTH = sorted(_KEYWORDS, key=len, reverse=True)
#: fields an interval has not (formatting.c's INVALID_FOR_INTERVAL)
_NOT_FOR_INTERVALS = {"month", "mon", "day", "dy", "ad", "a.d.", "d", "id"}


@dataclass
class Fields:
    """The broken-down value (pg_tm): calendar fields, the offset east of UTC
    in seconds, and the zone's abbreviation ('' for no zone)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    micro: int
    offset: int = 0
    zone: str = ""
    interval: bool = False


def fields_of(v, zone: dt.tzinfo | None) -> Fields:
    """A timestamp, a timestamptz read in ``zone``, or an interval's fields."""
    if isinstance(v, Interval):             # interval2tm: every field carries the sign (C division)
        t = v.microseconds
        hour = cdiv(t, 3_600_000_000)
        rest = t - hour * 3_600_000_000
        minute = cdiv(rest, 60_000_000)
        rest -= minute * 60_000_000
        second = cdiv(rest, 1_000_000)
        return Fields(cdiv(v.months, 12), v.months - cdiv(v.months, 12) * 12, v.days, hour, minute, second,
                      rest - second * 1_000_000, interval=True)
    if isinstance(v, dt.datetime) and v.tzinfo is not None and zone is not None:
        local = v.astimezone(zone)
        off = local.utcoffset() or dt.timedelta(0)
        return Fields(local.year, local.month, local.day, local.hour, local.minute, local.second, local.microsecond,
                      int(off.total_seconds()), local.tzname() or "")
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day)
    return Fields(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)


def _ordinal(n: int, upper: bool) -> str:
    last2 = abs(n) % 100
    suffix = "th" if 11 <= last2 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(abs(n) % 10, "th")
    return suffix.upper() if upper else suffix


def _cased(text: str, case: str | None) -> str:
    return text.upper() if case == "upper" else text.lower() if case == "lower" else text


def _date(f: Fields) -> dt.date | None:
    try:
        return dt.date(f.year, f.month, f.day) if not f.interval else None
    except ValueError:
        return None


def _text_field(name: str, case: str | None, f: Fields, fm: bool) -> str:
    d = _date(f)
    if name in ("month", "mon"):
        if f.interval and not f.month:
            return ""
        word = _MONTHS[f.month - 1]
        return _cased(word[:3] if name == "mon" else (word if fm else word.ljust(9)), case)
    if name in ("day", "dy"):
        if d is None:
            return ""
        word = _DAYS[(d.weekday() + 1) % 7]
        return _cased(word[:3] if name == "dy" else (word if fm else word.ljust(9)), case)
    if name == "rm":
        if f.interval and not f.month:
            return ""
        word = _ROMAN[f.month - 1]
        return _cased(word if fm else word.ljust(4), case)
    if name in ("am", "a.m."):
        pm = f.hour % 24 >= 12
        word = ("PM" if pm else "AM") if name == "am" else ("P.M." if pm else "A.M.")
        return _cased(word, case)
    if name in ("ad", "a.d."):
        word = ("AD" if f.year > 0 else "BC") if name == "ad" else ("A.D." if f.year > 0 else "B.C.")
        return _cased(word, case)
    return _cased(f.zone, case)             # tz


def _iso(f: Fields) -> tuple[int, int, int]:
    d = _date(f)
    return d.isocalendar() if d is not None else (f.year, 0, 0)


def _number(name: str, f: Fields) -> tuple[int, int] | str:
    """A numeric field as (value, digits to pad to), or its finished text."""
    hour12 = (abs(f.hour) % 12 or 12) * (-1 if f.hour < 0 and f.hour % 12 else 1)
    d = _date(f)
    iso_year, iso_week, iso_day = _iso(f)
    doy = d.timetuple().tm_yday if d is not None else f.day
    if name == "y,yyy":
        return f"{f.year // 1000},{f.year % 1000:03d}"
    if name in ("tzh", "of"):
        sign = "+" if f.offset >= 0 else "-"
        hours, rest = divmod(abs(f.offset), 3600)
        text = f"{sign}{hours:02d}"
        return text + (f":{rest // 60:02d}" if name == "of" and rest else "")
    simple: dict[str, tuple[int, int]] = {
        "yyyy": (f.year, 4), "yyy": (f.year % 1000, 3), "yy": (f.year % 100, 2), "y": (f.year % 10, 1),
        "iyyy": (iso_year, 4), "iyy": (iso_year % 1000, 3), "iy": (iso_year % 100, 2), "i": (iso_year % 10, 1),
        "hh24": (f.hour, 2), "hh12": (hour12, 2), "hh": (hour12, 2), "mi": (f.minute, 2), "ss": (f.second, 2),
        "ssss": (f.hour * 3600 + f.minute * 60 + f.second, 0), "sssss": (f.hour * 3600 + f.minute * 60 + f.second, 0),
        "ms": (cdiv(f.micro, 1000), 3), "us": (f.micro, 6), "ddd": (doy, 3), "dd": (f.day, 2),
        "d": ((d.weekday() + 1) % 7 + 1 if d else 0, 0), "iddd": ((iso_week - 1) * 7 + iso_day, 3), "id": (iso_day, 0),
        "iw": (iso_week, 2), "ww": ((doy - 1) // 7 + 1, 2), "w": ((f.day - 1) // 7 + 1, 0), "mm": (f.month, 2),
        "cc": ((f.year + 99) // 100 if not f.interval else f.year // 100, 2),
        "j": (d.toordinal() + 1721425 if d else 0, 0), "q": ((f.month - 1) // 3 + 1, 0),
        "tzm": ((abs(f.offset) % 3600) // 60, 2),
    }
    if name.startswith("ff"):
        digits = int(name[2])
        return cdiv(f.micro, 10 ** (6 - digits)), digits
    return simple[name]


def format_template(template: str, f: Fields) -> str:
    """The template with every keyword replaced by its field."""
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        fm = False
        while template.startswith(("FM", "fm", "FX", "fx"), i):
            fm = fm or template[i:i + 2].lower() == "fm"
            i += 2
        if i >= n:
            break
        kw = next((k for k in _BY_LENGTH if template.startswith(k, i)), None)
        if kw is None:
            i = _literal(template, i, out)
            continue
        i += len(kw)
        name, case = _KEYWORDS[kw]
        if f.interval and name in _NOT_FOR_INTERVALS:
            raise PgError(INVALID_DATETIME_FORMAT, "invalid format specification for an interval value",
                          hint="Intervals are not tied to specific calendar dates.")
        if case is not None:
            out.append(_text_field(name, case, f, fm))
            continue
        value = _number(name, f)
        if isinstance(value, str):
            out.append(value)
            continue
        num, width = value
        out.append(str(num) if fm or not width else f"{num:0{width + (num < 0)}d}")
        if template.startswith(("TH", "th"), i):
            out.append(_ordinal(num, template[i] == "T"))
            i += 2
    return "".join(out)


def _literal(template: str, i: int, out: list[str]) -> int:
    """Copy one literal character (or a quoted run, or an escaped one)."""
    ch = template[i]
    if ch == '"':
        j = i + 1
        while j < len(template) and template[j] != '"':
            if template[j] == "\\" and j + 1 < len(template):
                j += 1
            out.append(template[j])
            j += 1
        return j + 1
    if ch == "\\" and i + 1 < len(template) and template[i + 1] == '"':
        out.append('"')
        return i + 2
    out.append(ch)
    return i + 1


def to_char(v, template: str, zone: dt.tzinfo | None) -> str | None:
    """to_char of a timestamp, timestamptz (in ``zone``) or interval; NULL
    for an infinite timestamp and for an empty template, as PostgreSQL."""
    if not template or wiretypes.is_pos_infinity(v) or wiretypes.is_neg_infinity(v):
        return None
    return format_template(template, fields_of(v, zone))


_TEMPORAL = (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.INTERVAL)
#: numbers go through PostgreSQL's template processor (number_format), which
#: needs the argument's type (float4 and float8 print different digits)
_NUMBER_KINDS = {type_oids.INT2: "int4", type_oids.INT4: "int4", type_oids.INT8: "int8", type_oids.FLOAT4: "float4",
                 type_oids.FLOAT8: "float", type_oids.NUMERIC: "numeric"}


@register("to_char", sigs=" | ".join(f"{t}, text -> text" for t in (
    "timestamp", "timestamptz", "interval", "int4", "int8", "float4", "float8", "numeric")))
def _to_char(cols, n, ctx):
    if cols[0].oid not in _TEMPORAL:
        kind = _NUMBER_KINDS.get(cols[0].oid, "numeric")
        return elementwise(lambda v, f: number_format.to_char(v, f, kind), type_oids.TEXT)(cols, n, ctx)
    zone = wiretypes.zone_of(ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    out = [None if v is None or t is None else to_char(v, t, zone)
           for v, t in zip(cols[0].to_pylist(), cols[1].to_pylist())]
    return Col.from_pylist(out, type_oids.TEXT)
