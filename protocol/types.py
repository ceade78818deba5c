"""PostgreSQL type table and sans-IO value codecs (text and binary).

Every single value inside splitstream uses one Python representation per
type (see ``PY_REPR`` below in the module docs of each codec) and one numpy
dtype per type for columns.  The wire layer converts between those and the
bytes PostgreSQL clients expect, so the codecs here must print exactly what
PostgreSQL 15 prints with default settings: clients (psql, ORMs, JDBC) parse
and sometimes compare that text.

Value contract: bool->bool; int2/int4/int8/oid/reg*/xid->int; float4/8->float;
numeric->Decimal; text-like->str; bytea->bytes; date->date; time->time;
timestamp->naive datetime; timestamptz->aware datetime (UTC);
interval->:class:`Interval`; uuid->UUID; json/jsonb->str (JSON text);
arrays->list (nested for multi-dimensional, None for NULL); record (a row
value)->:class:`composite.Record`.
Timestamp/date infinities are the marker objects ``DATE_POS_INF``,
``TS_POS_INF``, ``TSTZ_POS_INF`` (and ``_NEG_``), recognised by identity.
"""
from __future__ import annotations

import datetime as _dt
import functools
import json as _json
import math
import re
import struct
import uuid as _uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from .errors import (
    ARRAY_SUBSCRIPT_ERROR,
    DATETIME_FIELD_OVERFLOW,
    FEATURE_NOT_SUPPORTED,
    INVALID_BINARY_REPRESENTATION,
    INVALID_DATETIME_FORMAT,
    INVALID_PARAMETER_VALUE,
    INVALID_TEXT_REPRESENTATION,
    INVALID_TIME_ZONE_DISPLACEMENT_VALUE,
    NUMERIC_VALUE_OUT_OF_RANGE,
    UNDEFINED_OBJECT,
    PgError,
    invalid_utf8,
)
from fractions import Fraction
from zoneinfo import ZoneInfo, available_timezones

# --------------------------------------------------------------------------
# Type table
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PgType:
    """One row of pg_type as clients see it (RowDescription, catalogs)."""

    name: str
    oid: int
    typlen: int
    array_oid: int
    elem_oid: int
    category: str
    sql_name: str

    @property
    def is_array(self) -> bool:
        return self.category == "A" and self.elem_oid != 0


# (typname, oid, typlen, typarray, category, format_type) -- checked against PG15.
_SCALARS: list[tuple[str, int, int, int, str, str]] = [
    ("bool", 16, 1, 1000, "B", "boolean"),
    ("bytea", 17, -1, 1001, "U", "bytea"),
    ("char", 18, 1, 1002, "Z", '"char"'),
    ("name", 19, 64, 1003, "S", "name"),
    ("int8", 20, 8, 1016, "N", "bigint"),
    ("int2", 21, 2, 1005, "N", "smallint"),
    ("int4", 23, 4, 1007, "N", "integer"),
    ("regproc", 24, 4, 1008, "N", "regproc"),
    ("text", 25, -1, 1009, "S", "text"),
    ("oid", 26, 4, 1028, "N", "oid"),
    ("xid", 28, 4, 1011, "U", "xid"),
    ("cid", 29, 4, 1012, "U", "cid"),
    ("json", 114, -1, 199, "U", "json"),
    ("float4", 700, 4, 1021, "N", "real"),
    ("float8", 701, 8, 1022, "N", "double precision"),
    ("unknown", 705, -2, 0, "X", "unknown"),
    ("bpchar", 1042, -1, 1014, "S", "character"),
    ("varchar", 1043, -1, 1015, "S", "character varying"),
    ("date", 1082, 4, 1182, "D", "date"),
    ("time", 1083, 8, 1183, "D", "time without time zone"),
    ("timetz", 1266, 12, 1270, "D", "time with time zone"),
    ("timestamp", 1114, 8, 1115, "D", "timestamp without time zone"),
    ("timestamptz", 1184, 8, 1185, "D", "timestamp with time zone"),
    ("interval", 1186, 16, 1187, "T", "interval"),
    ("numeric", 1700, -1, 1231, "N", "numeric"),
    ("regclass", 2205, 4, 2210, "N", "regclass"),
    ("regtype", 2206, 4, 2211, "N", "regtype"),
    ("record", 2249, -1, 2287, "P", "record"),
    ("void", 2278, 4, 0, "P", "void"),
    ("uuid", 2950, 16, 2951, "U", "uuid"),
    ("jsonb", 3802, -1, 3807, "U", "jsonb"),
    ("regnamespace", 4089, 4, 4090, "N", "regnamespace"),
    ("regrole", 4096, 4, 4097, "N", "regrole"),
]

TYPES_BY_OID: dict[int, PgType] = {}
TYPES_BY_TYPNAME: dict[str, PgType] = {}


def _register(t: PgType) -> None:
    TYPES_BY_OID[t.oid] = t
    TYPES_BY_TYPNAME[t.name] = t


for _n, _o, _l, _a, _c, _s in _SCALARS:
    _register(PgType(_n, _o, _l, _a, 0, _c, _s))
    if _a:
        _register(PgType("_" + _n, _a, -1, 0, _o, "P" if _n == "record" else "A", _s + "[]"))
# Vector types: arrays of their element in the catalog, space separated text.
_register(PgType("int2vector", 22, -1, 1006, 21, "A", "int2vector"))
_register(PgType("oidvector", 30, -1, 1013, 26, "A", "oidvector"))
_register(PgType("_int2vector", 1006, -1, 0, 22, "A", "int2vector[]"))
_register(PgType("_oidvector", 1013, -1, 0, 30, "A", "oidvector[]"))

# Common OIDs as names, for readability at call sites.
BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT2VECTOR, INT4, REGPROC, TEXT, OID = 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26
XID, CID, OIDVECTOR, JSON, FLOAT4, FLOAT8, UNKNOWN = 28, 29, 30, 114, 700, 701, 705
BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL = 1042, 1043, 1082, 1083, 1114, 1184, 1186
NUMERIC, REGCLASS, REGTYPE, RECORD, VOID, UUID, JSONB = 1700, 2205, 2206, 2249, 2278, 2950, 3802
REGNAMESPACE, REGROLE = 4089, 4096
TIMETZ = 1266

_ALIASES: dict[str, str] = {
    "int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8",
    "real": "float4", "double precision": "float8", "float": "float8", "double": "float8",
    "decimal": "numeric", "character varying": "varchar", "char varying": "varchar",
    "char": "bpchar", "character": "bpchar", '"char"': "char", "boolean": "bool",
    "time without time zone": "time", "time with time zone": "timetz", "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamptz", "serial": "int4", "bigserial": "int8",
    "smallserial": "int2", "serial4": "int4", "serial8": "int8", "serial2": "int2",
}
_MODIFIER_RE = re.compile(r"\s*\(\s*[0-9 ,]*\)")


def type_by_name(name: str) -> PgType:
    """Resolve a SQL type spelling (aliases, modifiers, ``[]``, ``_x``).

    Raises PgError 42704 like PostgreSQL's ``type "x" does not exist``.
    """
    raw = name
    s = _MODIFIER_RE.sub("", name.strip()).lower()
    s = re.sub(r"\s+", " ", s)
    if s.startswith("pg_catalog."):
        s = s[len("pg_catalog."):]
    dims = 0
    while s.endswith("[]"):
        s = s[:-2].rstrip()
        dims += 1
    if s.endswith(" array"):
        s, dims = s[:-6].rstrip(), dims + 1
    s = _ALIASES.get(s, s)
    t = TYPES_BY_TYPNAME.get(s)
    if t is None:
        raise PgError(UNDEFINED_OBJECT, f'type "{raw.strip()}" does not exist')
    if dims:
        if t.elem_oid and t.category == "A" and t.name.startswith("_"):
            return t  # already an array: PostgreSQL arrays have no nested types
        if not t.array_oid:
            raise PgError(UNDEFINED_OBJECT, f'type "{raw.strip()}" does not exist')
        t = TYPES_BY_OID[t.array_oid]
    return t


def type_by_oid(oid: int) -> PgType:
    """Look up a type by OID, raising 42704 for unknown ones."""
    t = TYPES_BY_OID.get(oid)
    if t is None:
        raise PgError(UNDEFINED_OBJECT, f"cache lookup failed for type {oid}")
    return t


# --------------------------------------------------------------------------
# Interval
# --------------------------------------------------------------------------

USECS_PER_DAY = 86_400_000_000


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Interval:
    """PostgreSQL interval: months, days and microseconds kept apart.

    Equality and ordering follow PostgreSQL (interval_cmp): a month counts as
    30 days and a day as 24 hours, so '1 mon' = '30 days' = '720 hours'.
    """

    months: int = 0
    days: int = 0
    microseconds: int = 0

    def key(self) -> int:
        """The normalised comparison key in microseconds."""
        return (self.months * 30 + self.days) * USECS_PER_DAY + self.microseconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.key() == other.key()

    def __lt__(self, other: "Interval") -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.key() < other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __neg__(self) -> "Interval":
        return Interval(-self.months, -self.days, -self.microseconds)

    def __add__(self, other: "Interval") -> "Interval":
        if not isinstance(other, Interval):
            return NotImplemented
        return Interval(self.months + other.months, self.days + other.days,
                        self.microseconds + other.microseconds)

    def __sub__(self, other: "Interval") -> "Interval":
        if not isinstance(other, Interval):
            return NotImplemented
        return self + (-other)

    @classmethod
    def from_timedelta(cls, td: _dt.timedelta) -> "Interval":
        return cls(0, td.days, td.seconds * 1_000_000 + td.microseconds)

    def to_timedelta(self) -> _dt.timedelta:
        """Months are taken as 30 days (as justify_days does)."""
        return _dt.timedelta(days=self.months * 30 + self.days, microseconds=self.microseconds)

    def __str__(self) -> str:
        return _interval_out(self)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

PG_EPOCH_DATE = _dt.date(2000, 1, 1)
PG_EPOCH = _dt.datetime(2000, 1, 1)
PG_EPOCH_TZ = _dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)
_PG_EPOCH_ORD = PG_EPOCH_DATE.toordinal()
UTC = _dt.timezone.utc
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)


class _InfinityOrder:
    """Comparisons of an infinity marker: equal only to itself, above (or
    below) every finite value. The markers hold years 9999 and 1, and as
    plain dates they tied with 9999-12-31 and 0001-01-01 wherever Python
    compares or hashes values (greatest, min(DISTINCT), DISTINCT, ORDER BY
    inside an aggregate). A subclass's reflected comparison runs first, so
    ``date(1, 1, 1) < DATE_NEG_INF`` asks the marker too."""

    year: int

    def _sign(self) -> int:
        return 1 if self.year == 9999 else -1

    def _rank(self, other: object) -> int | None:
        if not isinstance(other, _dt.date):
            return None
        return other._sign() if isinstance(other, _InfinityOrder) else 0

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return hash(("infinity", self._sign()))

    def __lt__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else self._sign() < rank

    def __le__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else self is other or self._sign() < rank

    def __gt__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else self._sign() > rank

    def __ge__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else self is other or self._sign() > rank


class _InfDate(_InfinityOrder, _dt.date):
    """date marking PostgreSQL's +/-infinity; recognised by identity, not value."""

    def __repr__(self) -> str:
        return "DATE_POS_INF" if self.year == 9999 else "DATE_NEG_INF"


class _InfDatetime(_InfinityOrder, _dt.datetime):
    """datetime marking PostgreSQL's +/-infinity; recognised by identity, not value."""

    def __repr__(self) -> str:
        return ("TS" if self.tzinfo is None else "TSTZ") + ("_POS_INF" if self.year == 9999 else "_NEG_INF")


DATE_POS_INF, DATE_NEG_INF = _InfDate(9999, 12, 31), _InfDate(1, 1, 1)
TS_POS_INF = _InfDatetime(9999, 12, 31, 23, 59, 59, 999999)
TS_NEG_INF = _InfDatetime(1, 1, 1)
TSTZ_POS_INF = _InfDatetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
TSTZ_NEG_INF = _InfDatetime(1, 1, 1, tzinfo=UTC)


#: infinities in a numpy datetime64 column (any unit): the largest value, and
#: the smallest after NaT, so that they order as PostgreSQL orders them
DT64_POS_INF, DT64_NEG_INF = 2**63 - 1, -(2**63) + 1


def infinity_of(oid: int, raw: int) -> Any:
    """The marker object for a datetime64 column's raw value, or None."""
    if raw == DT64_POS_INF:
        return DATE_POS_INF if oid == DATE else TSTZ_POS_INF if oid == TIMESTAMPTZ else TS_POS_INF
    if raw == DT64_NEG_INF:
        return DATE_NEG_INF if oid == DATE else TSTZ_NEG_INF if oid == TIMESTAMPTZ else TS_NEG_INF
    return None


def dt64_infinity(v: object) -> int | None:
    """The raw datetime64 value of an infinity marker, or None."""
    if is_pos_infinity(v):
        return DT64_POS_INF
    if is_neg_infinity(v):
        return DT64_NEG_INF
    return None


def is_pos_infinity(v: object) -> bool:
    """True for the +infinity date/timestamp markers."""
    return v is DATE_POS_INF or v is TS_POS_INF or v is TSTZ_POS_INF


def is_neg_infinity(v: object) -> bool:
    """True for the -infinity date/timestamp markers."""
    return v is DATE_NEG_INF or v is TS_NEG_INF or v is TSTZ_NEG_INF


@functools.lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    """The tz database's zone names by their lower-case spelling."""
    return {name.lower(): name for name in available_timezones()}


def canonical_zone_name(name: str) -> str | None:
    """A tz database zone name as the database spells it (PostgreSQL matches
    them without regard to case), or None."""
    return _zone_names().get(name.strip().lower())


_POSIX_ZONE_RE = re.compile(r"(<[^>]*>|[A-Za-z]+)?([+-]?)(\d{1,3})(?::(\d{1,2})(?::(\d{1,2}))?)?")


def posix_zone(spec: str) -> _dt.tzinfo | None:
    """A POSIX zone specification without DST rules (``UTC+3``, ``<+05:30>-05:30``,
    ``+05``): a fixed offset, its sign WEST of Greenwich; None if not one."""
    m = _POSIX_ZONE_RE.fullmatch(spec.strip())
    if m is None:
        return None
    west = _dt.timedelta(hours=int(m.group(3)), minutes=int(m.group(4) or 0), seconds=int(m.group(5) or 0))
    if west >= _dt.timedelta(hours=24):
        return None
    east = west if m.group(2) == "-" else -west
    name = (m.group(1) or "").strip("<>")
    return _dt.timezone(east, name) if name else _dt.timezone(east)


@functools.lru_cache(maxsize=64)
def zone_of(tz: str) -> _dt.tzinfo:
    """Resolve a TimeZone setting (validated when set); unknown names fall back to UTC."""
    if tz.upper() in ("UTC", "GMT", "Z", "ZULU", "ETC/UTC"):
        return UTC
    name = canonical_zone_name(tz)
    if name is not None:
        return ZoneInfo(name)
    return posix_zone(tz) or UTC


def _as_str(data: bytes | str) -> str:
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise invalid_utf8(bytes(data), e.start) from None
    return data


def _syntax(typ: str, s: str, code: str = INVALID_TEXT_REPRESENTATION) -> PgError:
    return PgError(code, f'invalid input syntax for type {typ}: "{s}"')


def _bad_binary(msg: str = "incorrect binary data format") -> PgError:
    return PgError(INVALID_BINARY_REPRESENTATION, msg)


# --------------------------------------------------------------------------
# Text output
# --------------------------------------------------------------------------


def _on_rounding_boundary(r: str, x: float, f32: bool) -> bool:
    """True if decimal string r lies exactly halfway between x and a neighbour.

    Python (and numpy) accept such strings as shortest when round-half-even
    parsing maps them back to x; PostgreSQL's Ryu never emits them, so we must
    not either.  Only possible for large magnitudes, where midpoints are short.
    """

    fx, fs = Fraction(x), Fraction(r)
    if fx == fs:
        return False
    if f32:
        a = np.float32(abs(x))
        gap = float(np.spacing(a))
        if math.isinf(gap):           # the largest float4: its gap above equals the one below
            gap = float(a) - float(np.nextafter(a, np.float32(0)))
        ulp = Fraction(gap)
    else:
        ulp = Fraction(math.ulp(x))
    d = abs(fs - fx)
    if d * 2 == ulp:
        return True
    # below an exact power of two the neighbour is only half an ulp away
    return abs(math.frexp(x)[0]) == 0.5 and (fs < fx if x > 0 else fs > fx) and d * 4 == ulp


def _shortest_digits(x: float, f32: bool) -> tuple[str, int]:
    """Shortest round-trip digits and decimal exponent (value = d.ddd * 10**e)."""
    r = str(np.float32(x)) if f32 else repr(x)
    if abs(x) >= (2.0**21 if f32 else 2.0**50) and _on_rounding_boundary(r, x, f32):
        ndig = len(r.lower().partition("e")[0].replace("-", "").replace(".", "").strip("0"))
        for p in range(ndig, 18):
            cand = "%.*e" % (p - 1, x)
            back = float(np.float32(float(cand))) if f32 else float(cand)
            if back == x and not _on_rounding_boundary(cand, x, f32):
                r = cand
                break
    mant, _, exp = r.lower().partition("e")
    e = int(exp) if exp else 0
    ip, _, fp = mant.lstrip("-").partition(".")
    digits = (ip + fp)
    lead = len(digits) - len(digits.lstrip("0"))
    digits = digits.lstrip("0").rstrip("0") or "0"
    e += len(ip) - 1 - lead
    return digits, e


def format_float(x: float, f32: bool = False, extra_digits: int = 1) -> str:
    """float4out/float8out.  ``extra_digits`` is extra_float_digits: above
    0, the shortest text that reads back exactly (PostgreSQL 12+); at 0 or
    below, ``%g`` with 6 (float4) or 15 (float8) significant digits plus it."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    if extra_digits < 1:
        return "%.*g" % (max((6 if f32 else 15) + extra_digits, 1), x)
    if not f32:
        r = repr(x)
        if "e" not in r and abs(x) < 1e15:
            return r[:-2] if r.endswith(".0") else r
    digits, e = _shortest_digits(x, f32)
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if digits == "0":
        return sign + "0"
    if e < -4 or e >= (6 if f32 else 15):
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if e >= 0:
        ip = digits[: e + 1].ljust(e + 1, "0")
        fp = digits[e + 1:]
        return sign + ip + ("." + fp if fp else "")
    return sign + "0." + "0" * (-e - 1) + digits


def _f8_bytes(x: float) -> bytes:
    """format_float for float8 as bytes, with the common case inlined."""
    r = x.__repr__()
    if "e" not in r and "n" not in r and -1e15 < x < 1e15:
        return (r[:-2] if r.endswith(".0") else r).encode()
    return format_float(x).encode()


def format_numeric(d: Decimal) -> str:
    """numeric_out: plain notation keeping the scale; no negative zero."""
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "Infinity" if d > 0 else "-Infinity"
    if d.is_zero() and d.is_signed():
        d = d.copy_abs()
    return format(d, "f")


def _frac(us: int) -> str:
    return ("." + f"{us:06d}".rstrip("0")) if us else ""


def _offset_str(off: _dt.timedelta) -> str:
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    out = f"{sign}{h:02d}"
    if m or s:
        out += f":{m:02d}"
    if s:
        out += f":{s:02d}"
    return out


def format_date(d: _dt.date) -> str:
    if d is DATE_POS_INF:
        return "infinity"
    if d is DATE_NEG_INF:
        return "-infinity"
    return d.isoformat()


def format_timestamp(v: _dt.datetime) -> str:
    if v is TS_POS_INF:
        return "infinity"
    if v is TS_NEG_INF:
        return "-infinity"
    return f"{v.date().isoformat()} {v.hour:02d}:{v.minute:02d}:{v.second:02d}{_frac(v.microsecond)}"


def format_timestamptz(v: _dt.datetime, tz: str = "UTC") -> str:
    if v.tzinfo is None:
        v = v.replace(tzinfo=UTC)
    if v is TSTZ_POS_INF:
        return "infinity"
    if v is TSTZ_NEG_INF:
        return "-infinity"
    zone = zone_of(tz)
    try:
        loc = v.astimezone(zone)
    except OverflowError:       # the local time is in year 0 (1 BC) or 10000
        return _format_past_datetime(v, zone)
    off = loc.utcoffset() or _dt.timedelta(0)
    return format_timestamp(loc.replace(tzinfo=None)) + _offset_str(off)


def utc_offset_at(v: _dt.datetime, zone: _dt.tzinfo) -> _dt.timedelta:
    """The zone's UTC offset at the instant ``v`` (aware, or naive UTC), also
    where the local time falls outside Python's years 1..9999 (then the
    offset of the same wall time, which that far out is the zone's LMT or
    its last rule: no transition is that close to either end)."""
    utc = v if v.tzinfo is not None else v.replace(tzinfo=UTC)
    try:
        return utc.astimezone(zone).utcoffset() or _dt.timedelta(0)
    except OverflowError:
        return zone.utcoffset(utc.replace(tzinfo=None)) or _dt.timedelta(0)


def _format_past_datetime(v: _dt.datetime, zone: _dt.tzinfo) -> str:
    """A timestamptz whose local time Python cannot hold, as PostgreSQL
    prints it: 0001-01-01 00:00+00 in New York is 0001-12-31 19:03:58-04:56:02 BC."""
    return _format_far_timestamptz(np.datetime64(v.replace(tzinfo=None), "us"), zone)


def _far_timestamptz_text(v: np.datetime64, tz: str) -> bytes | None:
    """One value of a timestamptz column holding an instant Python cannot."""
    if np.isnat(v):
        return None
    try:
        return encode_text(TIMESTAMPTZ, _np_scalar_to_py(TIMESTAMPTZ, v), tz=tz)
    except OverflowError:
        return _format_far_timestamptz(v, zone_of(tz)).encode()


def _format_far_timestamptz(utc: np.datetime64, zone: _dt.tzinfo) -> str:
    """A timestamptz (microseconds since 1970 UTC) near or past Python's years
    1 and 9999, formatted with numpy's calendar; the offset is the zone's at
    the nearest instant Python holds (LMT at the start, the last rule at the end)."""
    try:
        probe = utc.astype(_dt.datetime).replace(tzinfo=UTC)
        if not isinstance(probe, _dt.datetime):
            raise OverflowError
    except (OverflowError, ValueError, AttributeError):
        probe = (_dt.datetime.min if utc < np.datetime64("2000-01-01") else _dt.datetime.max).replace(tzinfo=UTC)
    off = utc_offset_at(probe, zone)
    local = utc + np.timedelta64(off // _dt.timedelta(microseconds=1), "us")
    text = str(local)                       # e.g. '0000-12-31T19:03:58' (ISO year 0 is 1 BC)
    year_text, rest = text.split("-", 1) if not text.startswith("-") else ("-" + text[1:].split("-", 1)[0],
                                                                          text[1:].split("-", 1)[1])
    year = int(year_text)
    date_part, _, clock = rest.partition("T")
    hms, _, frac = clock.partition(".")
    frac = frac.rstrip("0")
    shown = f"{year:04d}" if year > 0 else f"{1 - year:04d}"
    out = f"{shown}-{date_part} {hms}{'.' + frac if frac else ''}{_offset_str(off)}"
    return out + (" BC" if year <= 0 else "")


def format_time(t: _dt.time) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}{_frac(t.microsecond)}"


class TimeTZ(_dt.time):
    """A timetz value: a time of day with its own UTC offset, ordered as
    PostgreSQL orders timetz (timetz_cmp_internal): by the time of day in
    UTC, then the zone east first; equal only with the same offset."""

    __slots__ = ()

    def pg_key(self) -> tuple[int, int]:
        east = int((self.utcoffset() or _dt.timedelta(0)).total_seconds())
        local = ((self.hour * 60 + self.minute) * 60 + self.second) * 1_000_000 + self.microsecond
        return local - east * 1_000_000, -east

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeTZ) and self.pg_key() == other.pg_key()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: object) -> bool:
        return self.pg_key() < _timetz_key(other)

    def __le__(self, other: object) -> bool:
        return self.pg_key() <= _timetz_key(other)

    def __gt__(self, other: object) -> bool:
        return self.pg_key() > _timetz_key(other)

    def __ge__(self, other: object) -> bool:
        return self.pg_key() >= _timetz_key(other)

    def __hash__(self) -> int:
        return hash(self.pg_key())


def _timetz_key(other: object) -> tuple[int, int]:
    if not isinstance(other, TimeTZ):
        raise TypeError("timetz compares only with timetz")
    return other.pg_key()


#: timetz's zone displacement limit (TZDISP_LIMIT): 15:59:59 either way
TIMETZ_DISPLACEMENT_LIMIT = 15 * 3600 + 59 * 60 + 59


def timetz(t: _dt.time, offset: _dt.timedelta) -> TimeTZ:
    """A time of day (its own zone dropped) at ``offset`` east of UTC."""
    return TimeTZ(t.hour, t.minute, t.second, t.microsecond, tzinfo=_dt.timezone(offset))


def format_timetz(t: _dt.time) -> str:
    """timetz_out: the time of day and its own UTC offset (``10:00:00+02``)."""
    return format_time(t) + _offset_str(t.utcoffset() or _dt.timedelta(0))


def _interval_out(iv: Interval) -> str:
    """EncodeInterval, IntervalStyle=postgres."""
    parts: list[str] = []
    is_zero, is_before = True, False

    def add(value: int, unit: str) -> None:
        nonlocal is_zero, is_before
        if value == 0:
            return
        plus = "+" if (is_before and value > 0) else ""
        parts.append(f"{plus}{value} {unit}{'' if value == 1 else 's'}")
        is_zero, is_before = False, value < 0

    year = int(iv.months / 12) if iv.months >= 0 else -((-iv.months) // 12)
    mon = iv.months - year * 12
    add(year, "year")
    add(mon, "mon")
    add(iv.days, "day")
    t = iv.microseconds
    if is_zero or t != 0:
        minus = t < 0
        a = abs(t)
        hour, a = divmod(a, 3_600_000_000)
        minute, a = divmod(a, 60_000_000)
        sec, us = divmod(a, 1_000_000)
        sign = "-" if minus else ("+" if is_before else "")
        parts.append(f"{sign}{hour:02d}:{minute:02d}:{sec:02d}{_frac(us)}")
    return " ".join(parts)


def _bytea_out(b: bytes) -> str:
    return "\\x" + bytes(b).hex()


_ARRAY_QUOTE_RE = re.compile(r'[\s"\\{},]')


def _array_elem_text(s: str, delim: str = ",") -> str:
    if s == "" or s.upper() == "NULL" or _ARRAY_QUOTE_RE.search(s) or (delim != "," and delim in s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def _array_out(elem_oid: int, value: list[Any], tz: str) -> str:
    def rec(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "{" + ",".join(rec(x) for x in v) + "}"
        if v is None:
            return "NULL"
        return _array_elem_text(_text_out(elem_oid, v, tz))

    return rec(list(value))


def _jsonb_out_value(v: Any) -> str:
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
        return "{" + ", ".join(f"{_json_str(k)}: {_jsonb_out_value(x)}" for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_jsonb_out_value(x) for x in v) + "]"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, Decimal):
        return format_numeric(v)
    if isinstance(v, (int, float)):
        return format_numeric(Decimal(str(v)))
    return _json_str(str(v))


def jsonb_text(v: Any) -> str:
    """jsonb_out of a parsed document (dicts, lists, Decimal numbers, str, bool, None)."""
    return _jsonb_out_value(v)


def _json_str(s: str) -> str:
    return _json.dumps(s, ensure_ascii=False)


def _text_out(oid: int, v: Any, tz: str = "UTC") -> str:
    """Text output of one non-NULL value as str."""
    f = _TEXT_OUT.get(oid)
    if f is not None:
        return f(v, tz)
    t = TYPES_BY_OID.get(oid)
    if t is not None and t.elem_oid:
        if oid in (INT2VECTOR, OIDVECTOR):
            return " ".join(str(int(x)) for x in v)
        return _array_out(t.elem_oid, v, tz)
    return str(v)


def _bool_out(v: Any, tz: str) -> str:
    return "t" if v else "f"


def _int_out(v: Any, tz: str) -> str:
    # reg* columns arrive already resolved to names by the executor
    return v if isinstance(v, str) else str(int(v))


def _jsonb_text_out(v: Any, tz: str) -> str:
    if isinstance(v, (bytes, bytearray)):
        v = v.decode()
    if isinstance(v, str):
        return normalize_jsonb(v)
    return _jsonb_out_value(v)


def _json_text_out(v: Any, tz: str) -> str:
    if isinstance(v, (bytes, bytearray)):
        return v.decode()
    if isinstance(v, str):
        return v
    return _json.dumps(v)


def _numeric_out(v: Any, tz: str) -> str:
    if isinstance(v, float):
        if v != v:
            return "NaN"
        v = Decimal(repr(v))
    return format_numeric(Decimal(v))


def char_in(s: str) -> str:
    """charin (and text_char): the first byte ('' is the zero byte), or
    ``\\ooo`` in octal.  A "char" is kept as the character whose code is
    its byte (0..255), so it orders as PostgreSQL's unsigned bytes do."""
    if len(s) == 4 and s[0] == "\\" and all(c in "01234567" for c in s[1:]):
        return char_of_byte(int(s[1:], 8) & 0xFF)
    return char_of_byte(s.encode("utf-8")[0]) if s else ""


def char_of_byte(b: int) -> str:
    """The "char" holding byte ``b`` (0..255): '' for 0."""
    return chr(b) if b else ""


def char_text(v: Any) -> str:
    """charout / char_text: the byte as itself, a byte above 127 as
    ``\\ooo`` in octal (a lone byte of a multibyte character is no text),
    the zero byte as ''."""
    c = str(v)[:1] if v else ""
    return f"\\{ord(c):03o}" if c and ord(c) > 127 else c


def char_int(v: Any) -> int:
    """chartoi4: the byte as a signed char (-128..127)."""
    b = ord(str(v)[:1]) if v else 0
    return b - 256 if b > 127 else b


def _char_out(v: Any, tz: str) -> str:
    return char_text(v)


def _uuid_out(v: Any, tz: str) -> str:
    return str(v if isinstance(v, _uuid.UUID) else _uuid.UUID(str(v)))


def _date_out(v: Any, tz: str) -> str:
    if isinstance(v, _dt.datetime):
        v = v.date()
    return format_date(v)


def _ts_out(v: Any, tz: str) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(UTC).replace(tzinfo=None)
    return format_timestamp(v)


def _interval_text_out(v: Any, tz: str) -> str:
    if isinstance(v, _dt.timedelta):
        v = Interval.from_timedelta(v)
    return _interval_out(v)


_TEXT_OUT: dict[int, Callable[[Any, str], str]] = {
    BOOL: _bool_out,
    INT2: _int_out, INT4: _int_out, INT8: _int_out, OID: _int_out, XID: _int_out, CID: _int_out,
    REGPROC: _int_out, REGCLASS: _int_out, REGTYPE: _int_out, REGNAMESPACE: _int_out, REGROLE: _int_out,
    FLOAT4: lambda v, tz: format_float(float(v), True),
    FLOAT8: lambda v, tz: format_float(float(v)),
    NUMERIC: _numeric_out,
    TEXT: lambda v, tz: str(v), VARCHAR: lambda v, tz: str(v), BPCHAR: lambda v, tz: str(v),
    NAME: lambda v, tz: str(v), UNKNOWN: lambda v, tz: str(v), CHAR: _char_out,
    BYTEA: lambda v, tz: _bytea_out(v),
    DATE: _date_out,
    TIME: lambda v, tz: format_time(v),
    TIMETZ: lambda v, tz: format_timetz(v),
    TIMESTAMP: _ts_out,
    TIMESTAMPTZ: lambda v, tz: format_timestamptz(v, tz),
    INTERVAL: _interval_text_out,
    UUID: _uuid_out,
    JSON: _json_text_out,
    JSONB: _jsonb_text_out,
    VOID: lambda v, tz: "",
}


def encode_text(oid: int, value: Any, *, tz: str = "UTC", datestyle: str = "ISO, MDY") -> bytes:
    """Text-format output of one non-NULL value, byte-exact with PostgreSQL 15.

    Only DateStyle ISO output is implemented (the default and what drivers
    ask for); ``datestyle`` is accepted for forward compatibility.
    """
    return _text_out(oid, value, tz).encode("utf-8")


# --------------------------------------------------------------------------
# Text input
# --------------------------------------------------------------------------

_BOOL_TRUE = ("t", "tr", "tru", "true", "y", "ye", "yes", "on", "1")
_BOOL_FALSE = ("f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0")
_INT_RE = re.compile(r"\s*[+-]?\d+\s*", re.ASCII)
_INT_RANGES = {INT2: (-(2**15), 2**15 - 1, "smallint"), INT4: (INT32_MIN, INT32_MAX, "integer"),
               INT8: (INT64_MIN, INT64_MAX, "bigint")}
_FLOAT_RE = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*", re.ASCII)
_FLOAT_SPECIAL = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
                  "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_NUMERIC_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*", re.ASCII)


def _bool_in(s: str) -> bool:
    t = s.strip().lower()
    if t in _BOOL_TRUE:
        return True
    if t in _BOOL_FALSE:
        return False
    raise _syntax("boolean", s)


def _int_in(oid: int, s: str) -> int:
    lo, hi, name = _INT_RANGES[oid]
    if not _INT_RE.fullmatch(s):
        raise _syntax(name, s)
    v = int(s)
    if v < lo or v > hi:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'value "{s}" is out of range for type {name}')
    return v


def _uint32_in(s: str, name: str) -> int:
    if not _INT_RE.fullmatch(s):
        raise _syntax(name, s)
    v = int(s)
    if v < -(2**31) or v > 2**32 - 1:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'value "{s}" is out of range for type {name}')
    return v & 0xFFFFFFFF


def _float_in(s: str, f32: bool) -> float:
    name = "real" if f32 else "double precision"
    t = s.strip().lower()
    if t in _FLOAT_SPECIAL:
        return _FLOAT_SPECIAL[t]
    if not _FLOAT_RE.fullmatch(s):
        raise _syntax(name, s)
    v = float(t)
    if f32:
        with np.errstate(over="ignore"):
            v32 = np.float32(v)
        if math.isinf(v32) or (v32 == 0 and v != 0):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type real')
        if v == 0 and re.search(r"[1-9]", t.split("e")[0]):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type real')
        return float(v32)
    if math.isinf(v) or (v == 0 and re.search(r"[1-9]", t.split("e")[0])):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type double precision')
    return v


def _numeric_in(s: str) -> Decimal:
    t = s.strip().lower()
    if t == "nan":
        return Decimal("NaN")
    if t in ("infinity", "+infinity", "inf", "+inf"):
        return Decimal("Infinity")
    if t in ("-infinity", "-inf"):
        return Decimal("-Infinity")
    m = _NUMERIC_RE.fullmatch(s)
    if not m:
        raise _syntax("numeric", s)
    d = Decimal(m.group(1))
    sign, digits, exponent = d.as_tuple()
    if isinstance(exponent, int) and exponent > 0:  # '1e3' -> 1000 with scale 0 (NaN/inf were handled above)
        d = Decimal((sign, digits + (0,) * exponent, 0))
    return d


def _bytea_in(s: str) -> bytes:
    if s.startswith("\\x"):
        h = re.sub(r"\s+", "", s[2:])
        bad = re.search(r"[^0-9a-fA-F]", h)
        if bad:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid hexadecimal digit: "{bad.group(0)}"')
        if len(h) % 2:
            raise PgError(INVALID_PARAMETER_VALUE, "invalid hexadecimal data: odd number of digits")
        return bytes.fromhex(h)
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif s[i + 1: i + 2] == "\\":
            out.append(0x5C)
            i += 2
        elif re.fullmatch(r"[0-3][0-7][0-7]", s[i + 1: i + 4]):
            out.append(int(s[i + 1: i + 4], 8))
            i += 4
        else:
            raise _syntax("bytea", s)
    return bytes(out)


def _check_json(s: str, typ: str = "json") -> Any:
    def bad_const(c: str) -> Any:
        raise ValueError(c)

    try:
        return _json.loads(s, parse_float=Decimal, parse_int=Decimal, parse_constant=bad_const,
                           object_pairs_hook=lambda pairs: dict(pairs))
    except (ValueError, RecursionError):
        raise PgError(INVALID_TEXT_REPRESENTATION, f"invalid input syntax for type {typ}") from None


def normalize_jsonb(s: str) -> str:
    """jsonb_in followed by jsonb_out: sorted keys, last duplicate wins."""
    if "\\u0000" in s:
        raise PgError("22P05", "unsupported Unicode escape sequence",
                      detail="\\u0000 cannot be converted to text.")
    return _jsonb_out_value(_check_json(s, "json"))


_UUID_RE = re.compile(r"\{?([0-9a-fA-F]{4}-?){7}[0-9a-fA-F]{4}\}?")


def _uuid_in(s: str) -> _uuid.UUID:
    t = s.strip()
    if not _UUID_RE.fullmatch(t) or (t.startswith("{") != t.endswith("}")):
        raise _syntax("uuid", s)
    return _uuid.UUID(t.strip("{}").replace("-", ""))


# ---- dates and times ----

_DATE_ISO_RE = re.compile(r"(\d{1,})-(\d{1,2})-(\d{1,2})", re.ASCII)
_DATE_MDY_RE = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{1,})", re.ASCII)
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?", re.ASCII)
_TZ_RE = re.compile(r"(?:(z|zulu|utc|gmt)|([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?|([a-z][a-z0-9_/+-]*))", re.I | re.ASCII)
_TS_RE = re.compile(
    r"\s*(?P<date>\d+-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d+|\d{8})"
    r"(?:(?:\s+|T|t)(?P<time>\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?))?"
    r"\s*(?P<tz>[zZ]|(?:utc|UTC|gmt|GMT)|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|(?!(?:BC|bc|AD|ad)\s*$)[A-Za-z][A-Za-z0-9_/+-]*)?"
    r"\s*(?P<bc>BC|bc|AD|ad)?\s*", re.ASCII)


def _parse_date_part(s: str, full: str, typ: str) -> _dt.date:
    m = _DATE_ISO_RE.fullmatch(s)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    elif len(s) == 8 and s.isdigit():
        y, mo, d = int(s[:4]), int(s[4:6]), int(s[6:])
    else:
        m = _DATE_MDY_RE.fullmatch(s)
        if not m:
            raise _syntax(typ, full, INVALID_DATETIME_FORMAT)
        mo, d, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if len(m.group(3)) <= 2:
            y += 2000 if y < 70 else 1900
    try:
        return _dt.date(y, mo, d)
    except ValueError:
        if 1 <= mo <= 12 and 1 <= d <= 31 and y >= 1:
            if y > 9999:
                raise out_of_range(typ, full) from None
        raise PgError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{full}"') from None


def _parse_time_part(s: str, full: str, typ: str) -> tuple[int, int, int, int]:
    m = _TIME_RE.fullmatch(s)
    if not m:
        raise _syntax(typ, full, INVALID_DATETIME_FORMAT)
    h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    frac = m.group(4) or ""
    us = round(Decimal("0." + frac) * 1_000_000) if frac else 0
    if h > 24 or mi > 59 or sec > 60 or (h == 24 and (mi or sec or us)):
        raise PgError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{full}"')
    return h, mi, sec, us


def _tz_offset(tzs: str, local: _dt.datetime, full: str, typ: str) -> _dt.timedelta:
    m = _TZ_RE.fullmatch(tzs)
    if not m:
        raise _syntax(typ, full, INVALID_DATETIME_FORMAT)
    if m.group(1):
        return _dt.timedelta(0)
    if m.group(2):
        if int(m.group(3)) > 15 or int(m.group(4) or 0) > 59 or int(m.group(5) or 0) > 59:
            # DecodeTimezone's MAX_TZDISP_HOUR and minute/second limits
            raise PgError("22009", f'time zone displacement out of range: "{full}"')
        off = _dt.timedelta(hours=int(m.group(3)), minutes=int(m.group(4) or 0), seconds=int(m.group(5) or 0))
        return off if m.group(2) == "+" else -off
    try:
        z = ZoneInfo(tzs)
    except Exception:
        raise PgError(INVALID_PARAMETER_VALUE, f'time zone "{tzs}" not recognized') from None
    return z.utcoffset(local) or _dt.timedelta(0)


def _timestamp_in(s: str, with_tz: bool, tz: str = "UTC") -> _dt.datetime:
    typ = "timestamp with time zone" if with_tz else "timestamp"
    low = s.strip().lower()
    if low in ("infinity", "+infinity"):
        return TSTZ_POS_INF if with_tz else TS_POS_INF
    if low == "-infinity":
        return TSTZ_NEG_INF if with_tz else TS_NEG_INF
    if low == "epoch":
        return PG_EPOCH_TZ.replace(year=1970) if with_tz else _dt.datetime(1970, 1, 1)
    m = _TS_RE.fullmatch(s)
    if not m:
        raise _syntax(typ, s, INVALID_DATETIME_FORMAT)
    if _is_bc(m):
        raise _bc_refused(typ, s)
    d = _parse_date_part(m.group("date"), s, typ)
    h = mi = sec = us = 0
    if m.group("time"):
        h, mi, sec, us = _parse_time_part(m.group("time"), s, typ)
    try:
        return _timestamp_at(m, s, d, (h, mi, sec, us), with_tz, tz)
    except OverflowError:       # a wall time or an instant past 9999 or before 1 AD
        raise out_of_range(typ, s) from None


def _timestamp_at(m: re.Match[str], s: str, d: _dt.date, hms: tuple[int, int, int, int], with_tz: bool,
                  tz: str) -> _dt.datetime:
    """The timestamp of date ``d`` at ``hms`` (24:00 and a leap second roll
    over), in the zone the text names or the session's for a timestamptz."""
    typ = "timestamp with time zone" if with_tz else "timestamp"
    h, mi, sec, us = hms
    extra = _dt.timedelta(0)
    if h == 24:
        h, extra = 0, _dt.timedelta(days=1)
    if sec == 60:
        sec, extra = 0, extra + _dt.timedelta(minutes=1)
    local = _dt.datetime(d.year, d.month, d.day, h, mi, sec, us) + extra
    if not with_tz:
        if m.group("tz"):
            _tz_offset(m.group("tz"), local, s, typ)  # validate only; PostgreSQL ignores it
        return local
    if m.group("tz"):
        off = _tz_offset(m.group("tz"), local, s, typ)
        return (local - off).replace(tzinfo=UTC)
    z = zone_of(tz)
    # a wall-clock time the zone skips or repeats takes the smaller of its two
    # offsets, as DetermineTimeZoneOffset (before a gap, standard time in an overlap)
    off = min(local.replace(tzinfo=z, fold=0).utcoffset() or _dt.timedelta(0),
              local.replace(tzinfo=z, fold=1).utcoffset() or _dt.timedelta(0))
    return (local - off).replace(tzinfo=UTC)


def _date_in(s: str) -> _dt.date:
    low = s.strip().lower()
    if low == "infinity":                   # (date_in has no "+infinity", unlike timestamp_in)
        return DATE_POS_INF
    if low == "-infinity":
        return DATE_NEG_INF
    if low == "epoch":
        return _dt.date(1970, 1, 1)
    t = s.strip()
    m = _TS_RE.fullmatch(t)
    if m and _is_bc(m):
        raise _bc_refused("date", s)
    if m and not m.group("time") and not m.group("tz"):
        return _parse_date_part(m.group("date"), s, "date")
    if m:  # a timestamp literal: keep the date
        return _timestamp_in(s, False).date()
    raise _syntax("date", s, INVALID_DATETIME_FORMAT)


def _is_bc(m: re.Match[str]) -> bool:
    """The literal ends in BC (AD, PostgreSQL's default era, changes nothing)."""
    era = m.group("bc")
    return era is not None and era.lower() == "bc"


#: why a date PostgreSQL holds is out of range here
TEMPORAL_RANGE_HINT = "splitstream's date, timestamp and timestamptz hold years 1 to 9999 AD."


def _bc_refused(typ: str, s: str) -> PgError:
    """Years BC: PostgreSQL takes them; here dates and timestamps hold years
    1 to 9999 (numpy datetime64 read back through Python datetime), so the
    value is refused with PostgreSQL's out-of-range error (22008, ``date``
    or ``timestamp out of range``, as date_in/timestamp_in word it), never
    read as a year AD.  INSERT, casts and every COPY path (text, CSV, the
    compiled and numpy readers, which decline such a column to this one)
    give this same error."""
    return out_of_range(typ, s)


def out_of_range(typ: str, s: str | None = None) -> PgError:
    """PostgreSQL's 22008 for a date or timestamp past the years held here
    (``typ`` date, timestamp or timestamp with time zone: both timestamps
    say timestamp), with the value as written when it was text."""
    word = "date" if typ == "date" else "timestamp"
    return PgError(DATETIME_FIELD_OVERFLOW, f'{word} out of range' + (f': "{s}"' if s is not None else ""),
                   hint=TEMPORAL_RANGE_HINT)


_TIME_IN_RE = re.compile(r"(?:\d+-\d{1,2}-\d{1,2}[ T])?(\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?)\s*(\S.*)?")


def _time_in(s: str, with_tz: bool = False, tz: str = "UTC") -> _dt.time:
    """time (a zone in the text is checked and dropped) or timetz (its zone
    kept; none given: the session zone's offset today, as PostgreSQL)."""
    typ = "time with time zone" if with_tz else "time"
    m = _TIME_IN_RE.fullmatch(s.strip())
    if not m:
        raise _syntax(typ, s, INVALID_DATETIME_FORMAT)
    h, mi, sec, us = _parse_time_part(m.group(1), s, typ)
    today = _dt.datetime.now(UTC).replace(tzinfo=None, hour=12)
    if with_tz and m.group(2) and "/" in m.group(2):
        raise _syntax(typ, s, INVALID_DATETIME_FORMAT)     # a zone name needs a date to give an offset
    off = _tz_offset(m.group(2), today, s, typ) if m.group(2) else None
    if h == 24:
        raise PgError(FEATURE_NOT_SUPPORTED, 'time value "24:00:00" is not representable')
    if sec == 60:
        sec = 59
    if not with_tz:
        return _dt.time(h, mi, sec, us)
    if off is None:
        off = zone_of(tz).utcoffset(today) or _dt.timedelta(0)
    if abs(off.total_seconds()) > TIMETZ_DISPLACEMENT_LIMIT:
        raise PgError(INVALID_TIME_ZONE_DISPLACEMENT_VALUE, f'time zone displacement out of range: "{s}"')
    return timetz(_dt.time(h, mi, sec, us), off)


# ---- interval ----

_IV_UNITS: dict[str, str] = {}
for _unit, _names in {
    "us": ("microsecond", "microseconds", "us", "usec", "usecs", "useconds", "microsecon"),
    "ms": ("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds", "millisecon"),
    "s": ("second", "seconds", "s", "sec", "secs"),
    "min": ("minute", "minutes", "m", "min", "mins"),
    "h": ("hour", "hours", "h", "hr", "hrs"),
    "d": ("day", "days", "d"),
    "w": ("week", "weeks", "w"),
    "mon": ("month", "months", "mon", "mons"),
    "y": ("year", "years", "y", "yr", "yrs"),
    "dec": ("decade", "decades", "dec", "decs"),
    "c": ("century", "centuries", "c", "cent"),
    "mil": ("millennium", "millennia", "mil", "mils", "millenniums"),
}.items():
    for _nm in _names:
        _IV_UNITS[_nm] = _unit

_IV_TOKEN_RE = re.compile(
    r"\s*(?:(?P<time>[+-]?\d+:\d+(?::\d+(?:\.\d*)?)?)"
    r"|(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>[a-z]+)?"
    r"|(?P<ago>ago))", re.ASCII)
_ISO_IV_RE = re.compile(
    r"p(?:(?P<y>[+-]?[\d.]+)y)?(?:(?P<mo>[+-]?[\d.]+)m)?(?:(?P<w>[+-]?[\d.]+)w)?(?:(?P<d>[+-]?[\d.]+)d)?"
    r"(?:t(?:(?P<h>[+-]?[\d.]+)h)?(?:(?P<mi>[+-]?[\d.]+)m)?(?:(?P<s>[+-]?[\d.]+)s)?)?", re.ASCII)


class _IvAcc:
    """Accumulates interval fields with PostgreSQL's fraction cascading."""

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.us = Decimal(0)

    def add(self, val: Decimal, unit: str) -> None:
        whole = int(val)
        frac = val - whole
        if unit == "us":
            self.us += val
        elif unit == "ms":
            self.us += val * 1000
        elif unit == "s":
            self.us += val * 1_000_000
        elif unit == "min":
            self.us += val * 60_000_000
        elif unit == "h":
            self.us += val * 3_600_000_000
        elif unit == "d":
            self.days += whole
            self.us += frac * USECS_PER_DAY
        elif unit == "w":
            self._frac_days(Decimal(whole * 7) + frac * 7)
        elif unit == "mon":
            self.months += whole
            self._frac_days(frac * 30)
        else:
            mult = {"y": 12, "dec": 120, "c": 1200, "mil": 12000}[unit]
            self.months += whole * mult + int((frac * mult).to_integral_value())

    def _frac_days(self, days: Decimal) -> None:
        wd = int(days)
        self.days += wd
        self.us += (days - wd) * USECS_PER_DAY

    def result(self) -> Interval:
        return Interval(self.months, self.days, int(self.us.to_integral_value()))


def _interval_in(s: str) -> Interval:
    t = s.strip().lower()
    if not t:
        raise _syntax("interval", s, INVALID_DATETIME_FORMAT)
    acc = _IvAcc()
    if t.startswith("p"):
        m = _ISO_IV_RE.fullmatch(t)
        if not m or t in ("p", "pt") or t.endswith("t"):
            raise _syntax("interval", s, INVALID_DATETIME_FORMAT)
        try:
            for g, unit in (("y", "y"), ("mo", "mon"), ("w", "w"), ("d", "d"), ("h", "h"), ("mi", "min"), ("s", "s")):
                if m.group(g) is not None:
                    acc.add(Decimal(m.group(g)), unit)
        except ArithmeticError:
            raise _syntax("interval", s, INVALID_DATETIME_FORMAT) from None
        return acc.result()
    if t.startswith("@"):
        t = t[1:]
    pos, ago, seen = 0, False, False
    while pos < len(t):
        if t[pos:].isspace():
            break
        m = _IV_TOKEN_RE.match(t, pos)
        if not m or m.end() == pos or ago:
            raise _syntax("interval", s, INVALID_DATETIME_FORMAT)
        pos = m.end()
        seen = True
        if m.group("ago"):
            ago = True
        elif m.group("time"):
            tm = m.group("time")
            neg = tm.startswith("-")
            parts = tm.lstrip("+-").split(":")
            us = Decimal(parts[0]) * 3_600_000_000 + Decimal(parts[1]) * 60_000_000
            if len(parts) > 2:
                us += Decimal(parts[2]) * 1_000_000
            acc.us += -us if neg else us
        else:
            unit = m.group("unit")
            val = Decimal(m.group("num"))
            if unit is None:
                unit = "s"
            elif unit not in _IV_UNITS:
                raise _syntax("interval", s, INVALID_DATETIME_FORMAT)
            else:
                unit = _IV_UNITS[unit]
            acc.add(val, unit)
    if not seen:
        raise _syntax("interval", s, INVALID_DATETIME_FORMAT)
    r = acc.result()
    if ago:
        r = -r
    if not (INT32_MIN <= r.months <= INT32_MAX and INT32_MIN <= r.days <= INT32_MAX and INT64_MIN <= r.microseconds <= INT64_MAX):
        raise PgError(DATETIME_FIELD_OVERFLOW, f'interval field value out of range: "{s}"')
    return r


# ---- arrays ----


_BOUND = re.compile(r"[-+\d]*")
ARRAY_BOUNDS_HINT = "splitstream's arrays all start at subscript 1."


def _array_decoration(s: str, bad: Callable[[str], PgError]) -> tuple[list[tuple[int, int]], str]:
    """array_in's explicit dimensions (``[1:3][2]={...}``): the (lower,
    upper) bound of each, and the text after the ``=``; whitespace is allowed
    between the items, not within them, as PostgreSQL's parser does."""
    bounds: list[tuple[int, int]] = []
    t = s.lstrip()
    while t.startswith("["):
        lo_text = _BOUND.match(t, 1).group(0)      # type: ignore[union-attr]
        if not lo_text:
            raise bad('"[" must introduce explicitly-specified array dimensions.')
        pos, lo = 1 + len(lo_text), None
        if t[pos:pos + 1] == ":":
            lo = lo_text
            lo_text = _BOUND.match(t, pos + 1).group(0)      # type: ignore[union-attr]
            if not lo_text:
                raise bad('"[" must introduce explicitly-specified array dimensions.')
            pos += 1 + len(lo_text)
        if t[pos:pos + 1] != "]":
            raise bad('Missing "]" after array dimensions.')
        low, up = _c_atoi(lo) if lo is not None else 1, _c_atoi(lo_text)
        if up < low:
            raise PgError(ARRAY_SUBSCRIPT_ERROR, "upper bound cannot be less than lower bound")
        bounds.append((low, up))
        t = t[pos + 1:].lstrip()
    if bounds:
        if not t.startswith("="):
            raise bad('Missing "=" after array dimensions.')
        t = t[1:].lstrip()
        if not t.startswith("{"):
            raise bad('Array contents must start with "{".')
    return bounds, t


def _c_atoi(text: str) -> int:
    """C's atoi over what the dimension scanner took (digits, signs): the
    leading number, 0 when there is none."""
    m = re.match(r"[-+]?\d+", text)
    return int(m.group(0)) if m else 0


def _check_decoration(bounds: list[tuple[int, int]], value: list[Any], bad: Callable[[str], PgError]) -> None:
    """Explicit dimensions must match the braces; lower bounds other than 1
    are refused, since every array here starts at subscript 1."""
    shape, x = [], value
    while isinstance(x, list) and x:
        shape.append(len(x))
        x = x[0]
    if shape != [up - lo + 1 for lo, up in bounds]:
        raise bad("Specified array dimensions do not match array contents.")
    if any(lo != 1 for lo, _ in bounds):
        raise PgError(FEATURE_NOT_SUPPORTED, "array lower bounds other than 1 are not supported", hint=ARRAY_BOUNDS_HINT)


def _array_in(elem_oid: int, s: str, tz: str, delim: str = ",") -> list[Any]:
    """array_in: nested braces, quoting, NULL, explicit dimensions."""
    def bad(detail: str | None = None) -> PgError:
        return PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{s}"', detail=detail)

    bounds, t = _array_decoration(s, bad)
    t = t.rstrip()
    if not t.startswith("{"):
        raise bad('Array value must start with "{" or dimension information.')
    n = len(t)
    pos = 0

    def parse_level() -> list[Any]:
        nonlocal pos
        assert t[pos] == "{"
        pos += 1
        out: list[Any] = []
        expect_elem = True
        while True:
            while pos < n and t[pos].isspace():
                pos += 1
            if pos >= n:
                raise bad("Unexpected end of input.")
            c = t[pos]
            if c == "}":
                if expect_elem and out:
                    raise bad('Unexpected "}" character.')
                pos += 1
                return out
            if not expect_elem:
                if c != delim:
                    raise bad(f'Unexpected "{c}" character.')
                pos += 1
                expect_elem = True
                continue
            if c == "{":
                out.append(parse_level())
            elif c == '"':
                pos += 1
                buf = []
                while True:
                    if pos >= n:
                        raise bad("Unexpected end of input.")
                    ch = t[pos]
                    if ch == "\\":
                        if pos + 1 >= n:
                            raise bad("Unexpected end of input.")
                        buf.append(t[pos + 1])
                        pos += 2
                    elif ch == '"':
                        pos += 1
                        break
                    else:
                        buf.append(ch)
                        pos += 1
                out.append(_text_in(elem_oid, "".join(buf), tz))
            else:
                buf = []
                raw_quoted = False
                while pos < n and t[pos] not in (delim, "}", "{", '"'):
                    ch = t[pos]
                    if ch == "\\" and pos + 1 < n:
                        buf.append(t[pos + 1])
                        raw_quoted = True
                        pos += 2
                    else:
                        buf.append(ch)
                        pos += 1
                if pos < n and t[pos] in ('{', '"'):
                    raise bad(f'Unexpected "{t[pos]}" character.')
                word = "".join(buf).strip()
                if word == "":
                    raise bad('Unexpected "%s" character.' % (t[pos] if pos < n else ""))
                if word.upper() == "NULL" and not raw_quoted:
                    out.append(None)
                else:
                    out.append(_text_in(elem_oid, word, tz))
            expect_elem = False

    result = parse_level()
    if t[pos:].strip():
        raise bad("Junk after closing right brace.")
    _check_rectangular(result, s)
    if bounds:
        _check_decoration(bounds, result, bad)
    return result


def _check_rectangular(v: list[Any], s: str) -> None:
    def shape(x: Any) -> Any:
        if not isinstance(x, list):
            return None
        shapes = {repr(shape(e)) for e in x}
        kinds = {isinstance(e, list) for e in x}
        if len(shapes) > 1 or len(kinds) > 1:
            raise PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{s}"',
                          detail="Multidimensional arrays must have sub-arrays with matching dimensions.")
        return (len(x), shapes.pop() if shapes else None)

    shape(v)


def _text_in(oid: int, s: str, tz: str = "UTC") -> Any:
    if oid == BOOL:
        return _bool_in(s)
    if oid in _INT_RANGES:
        return _int_in(oid, s)
    if oid in (FLOAT4, FLOAT8):
        return _float_in(s, oid == FLOAT4)
    if oid == NUMERIC:
        return _numeric_in(s)
    if oid in (TEXT, VARCHAR, NAME, UNKNOWN):
        return s
    if oid == BPCHAR:
        return s
    if oid == CHAR:
        return char_in(s)
    if oid in (OID, XID, CID, REGPROC, REGCLASS, REGTYPE, REGNAMESPACE, REGROLE):
        return _uint32_in(s, TYPES_BY_OID[oid].name)
    if oid == BYTEA:
        return _bytea_in(s)
    if oid == DATE:
        return _date_in(s)
    if oid == TIME:
        return _time_in(s)
    if oid == TIMETZ:
        return _time_in(s, True, tz)
    if oid == TIMESTAMP:
        return _timestamp_in(s, False, tz)
    if oid == TIMESTAMPTZ:
        return _timestamp_in(s, True, tz)
    if oid == INTERVAL:
        return _interval_in(s)
    if oid == UUID:
        return _uuid_in(s)
    if oid == JSON:
        _check_json(s)
        return s
    if oid == JSONB:
        return normalize_jsonb(s)
    if oid == VOID:
        return None
    if oid in (INT2VECTOR, OIDVECTOR):
        elem = INT2 if oid == INT2VECTOR else OID
        return [_text_in(elem, w) for w in s.split()]
    t = TYPES_BY_OID.get(oid)
    if t is not None and t.elem_oid and t.category == "A":
        return _array_in(t.elem_oid, s, tz)
    raise PgError(FEATURE_NOT_SUPPORTED, f"text input for type {t.sql_name if t else oid} is not supported")


def decode_text(oid: int, data: bytes | str, *, tz: str = "UTC") -> Any:
    """Parse PostgreSQL text input syntax into the Python value contract.

    ``tz`` is the session TimeZone used for timestamptz values without an
    explicit offset.  Errors are PgError with PostgreSQL's SQLSTATE/message.
    """
    return _text_in(oid, _as_str(data), tz)


# --------------------------------------------------------------------------
# Binary send/recv
# --------------------------------------------------------------------------

_S_I2, _S_I4, _S_I8 = struct.Struct("!h"), struct.Struct("!i"), struct.Struct("!q")
_S_U4, _S_F4, _S_F8 = struct.Struct("!I"), struct.Struct("!f"), struct.Struct("!d")
_S_IV = struct.Struct("!qii")
_NUMERIC_POS, _NUMERIC_NEG, _NUMERIC_NAN = 0x0000, 0x4000, 0xC000
_NUMERIC_PINF, _NUMERIC_NINF = 0xD000, 0xF000


def _numeric_send(d: Decimal) -> bytes:
    if not isinstance(d, Decimal):
        d = Decimal(repr(d)) if isinstance(d, float) else Decimal(d)
    if d.is_nan():
        return struct.pack("!hhHh", 0, 0, _NUMERIC_NAN, 0)
    if d.is_infinite():
        # PostgreSQL 15 reports dscale 32 for infinities (an artefact of its header bits)
        return struct.pack("!hhHh", 0, 0, _NUMERIC_PINF if d > 0 else _NUMERIC_NINF, 32)
    sign, _digits, exp = d.as_tuple()
    dscale = max(0, -int(exp))
    ip, _, fp = format(d.copy_abs(), "f").partition(".")
    ip = ip.lstrip("0")
    ip = ip.rjust((len(ip) + 3) // 4 * 4, "0")
    fp = fp.ljust((len(fp) + 3) // 4 * 4, "0")
    groups = [int(ip[i:i + 4]) for i in range(0, len(ip), 4)] + [int(fp[i:i + 4]) for i in range(0, len(fp), 4)]
    weight = len(ip) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight, sign = 0, 0
    return struct.pack(f"!hhHh{len(groups)}h", len(groups), weight,
                       _NUMERIC_NEG if sign else _NUMERIC_POS, dscale, *groups)


def _numeric_recv(b: bytes) -> Decimal:
    if len(b) < 8:
        raise _bad_binary()
    ndigits, weight, sign, dscale = struct.unpack_from("!hhHh", b)
    if sign == _NUMERIC_NAN:
        return Decimal("NaN")
    if sign == _NUMERIC_PINF:
        return Decimal("Infinity")
    if sign == _NUMERIC_NINF:
        return Decimal("-Infinity")
    if sign not in (_NUMERIC_POS, _NUMERIC_NEG) or ndigits < 0 or dscale < 0 or len(b) != 8 + 2 * ndigits:
        raise PgError(INVALID_BINARY_REPRESENTATION, "invalid sign in external \"numeric\" value"
                      if sign not in (_NUMERIC_POS, _NUMERIC_NEG) else "insufficient data left in message")
    groups = struct.unpack_from(f"!{ndigits}h", b, 8)
    if any(g < 0 or g > 9999 for g in groups):
        raise PgError(INVALID_BINARY_REPRESENTATION, 'invalid digit in external "numeric" value')
    digits = "".join(f"{g:04d}" for g in groups) or "0"
    e = (weight + 1 - ndigits) * 4 if ndigits else 0
    if e >= -dscale:
        digits += "0" * (e + dscale)
    else:
        digits = digits[: len(digits) - (-dscale - e)] if len(digits) > (-dscale - e) else "0"
    return Decimal((1 if sign == _NUMERIC_NEG else 0, tuple(int(c) for c in digits.lstrip("0") or "0"), -dscale))


def _ts_to_us(v: _dt.datetime) -> int:
    if is_pos_infinity(v):
        return INT64_MAX
    if is_neg_infinity(v):
        return INT64_MIN
    if v.tzinfo is not None:
        if v is TSTZ_POS_INF:
            return INT64_MAX
        if v is TSTZ_NEG_INF:
            return INT64_MIN
        v = v.astimezone(UTC).replace(tzinfo=None)
    if v is TS_POS_INF:
        return INT64_MAX
    if v is TS_NEG_INF:
        return INT64_MIN
    d = v - PG_EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _us_to_ts(us: int, with_tz: bool) -> _dt.datetime:
    if us == INT64_MAX:
        return TSTZ_POS_INF if with_tz else TS_POS_INF
    if us == INT64_MIN:
        return TSTZ_NEG_INF if with_tz else TS_NEG_INF
    try:
        v = PG_EPOCH + _dt.timedelta(microseconds=us)
    except OverflowError:
        raise PgError(DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None
    return v.replace(tzinfo=UTC) if with_tz else v


def _date_send(v: _dt.date) -> bytes:
    if isinstance(v, _dt.datetime):
        v = v.date()
    if v is DATE_POS_INF:
        return _S_I4.pack(INT32_MAX)
    if v is DATE_NEG_INF:
        return _S_I4.pack(INT32_MIN)
    return _S_I4.pack(v.toordinal() - _PG_EPOCH_ORD)


def _date_recv(b: bytes) -> _dt.date:
    (n,) = _S_I4.unpack(b)
    if n == INT32_MAX:
        return DATE_POS_INF
    if n == INT32_MIN:
        return DATE_NEG_INF
    try:
        return _dt.date.fromordinal(n + _PG_EPOCH_ORD)
    except (ValueError, OverflowError):
        raise PgError(DATETIME_FIELD_OVERFLOW, "date out of range") from None


def _time_send(t: _dt.time) -> bytes:
    return _S_I8.pack(((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond)


def _time_recv(b: bytes) -> _dt.time:
    (us,) = _S_I8.unpack(b)
    if us < 0 or us >= USECS_PER_DAY:
        raise PgError(DATETIME_FIELD_OVERFLOW, "time out of range")
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return _dt.time(h, m, s, us)


def _timetz_send(t: _dt.time) -> bytes:
    off = t.utcoffset() or _dt.timedelta(0)
    return _time_send(t) + _S_I4.pack(-int(off.total_seconds()))


def _timetz_recv(b: bytes) -> _dt.time:
    if len(b) != 12:
        raise _bad_binary()
    (zone,) = _S_I4.unpack(b[8:])
    if abs(zone) > TIMETZ_DISPLACEMENT_LIMIT:
        raise PgError(INVALID_BINARY_REPRESENTATION, "time zone displacement out of range")
    return timetz(_time_recv(b[:8]), _dt.timedelta(seconds=-zone))


def _interval_send(v: Interval) -> bytes:
    if isinstance(v, _dt.timedelta):
        v = Interval.from_timedelta(v)
    return _S_IV.pack(v.microseconds, v.days, v.months)


def _interval_recv(b: bytes) -> Interval:
    us, days, months = _S_IV.unpack(b)
    return Interval(months, days, us)


def _uuid_send(v: Any) -> bytes:
    return (v if isinstance(v, _uuid.UUID) else _uuid.UUID(str(v))).bytes


def _str_send(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _str_recv(b: bytes) -> str:
    return _as_str(b)


def _jsonb_recv(b: bytes) -> str:
    if not b or b[0] != 1:
        raise PgError(INVALID_BINARY_REPRESENTATION, f"unsupported jsonb version number {b[0] if b else 0}")
    return normalize_jsonb(_as_str(b[1:]))


def _jsonb_send(v: Any) -> bytes:
    return b"\x01" + _jsonb_text_out(v, "UTC").encode("utf-8")


def _char_send(v: Any) -> bytes:
    """"char" is always one byte on the wire; the empty value is NUL (as charsend does)."""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v[:1]) or b"\0"
    c = str(v)[:1]
    return bytes([ord(c) & 0xFF]) if c else b"\0"


def _bool_recv(b: bytes) -> bool:
    if len(b) != 1:
        raise _bad_binary()
    return b != b"\x00"


_FIXED_LEN = {BOOL: 1, INT2: 2, INT4: 4, INT8: 8, OID: 4, XID: 4, CID: 4, REGPROC: 4, REGCLASS: 4,
              REGTYPE: 4, REGNAMESPACE: 4, REGROLE: 4, FLOAT4: 4, FLOAT8: 8, DATE: 4, TIME: 8, TIMETZ: 12,
              TIMESTAMP: 8, TIMESTAMPTZ: 8, INTERVAL: 16, UUID: 16}

_BIN_SEND: dict[int, Callable[[Any], bytes]] = {
    BOOL: lambda v: b"\x01" if v else b"\x00",
    BYTEA: lambda v: bytes(v),
    CHAR: _char_send,
    INT2: lambda v: _S_I2.pack(int(v)),
    INT4: lambda v: _S_I4.pack(int(v)),
    INT8: lambda v: _S_I8.pack(int(v)),
    FLOAT4: lambda v: _S_F4.pack(float(v)),
    FLOAT8: lambda v: _S_F8.pack(float(v)),
    NUMERIC: _numeric_send,
    DATE: _date_send,
    TIME: _time_send,
    TIMETZ: _timetz_send,
    TIMESTAMP: lambda v: _S_I8.pack(_ts_to_us(v)),
    TIMESTAMPTZ: lambda v: _S_I8.pack(_ts_to_us(v if v.tzinfo else v.replace(tzinfo=UTC))),
    INTERVAL: _interval_send,
    UUID: _uuid_send,
    JSON: lambda v: _json_text_out(v, "UTC").encode("utf-8"),
    JSONB: _jsonb_send,
    VOID: lambda v: b"",
}
for _o in (TEXT, VARCHAR, BPCHAR, NAME, UNKNOWN):
    _BIN_SEND[_o] = _str_send
for _o in (OID, XID, CID, REGPROC, REGCLASS, REGTYPE, REGNAMESPACE, REGROLE):
    _BIN_SEND[_o] = lambda v: _S_U4.pack(int(v) & 0xFFFFFFFF)

_BIN_RECV: dict[int, Callable[[bytes], Any]] = {
    BOOL: _bool_recv,
    BYTEA: bytes,
    CHAR: lambda b: b[:1].decode("latin-1").rstrip("\0"),
    INT2: lambda b: _S_I2.unpack(b)[0],
    INT4: lambda b: _S_I4.unpack(b)[0],
    INT8: lambda b: _S_I8.unpack(b)[0],
    FLOAT4: lambda b: _S_F4.unpack(b)[0],
    FLOAT8: lambda b: _S_F8.unpack(b)[0],
    NUMERIC: _numeric_recv,
    DATE: _date_recv,
    TIME: _time_recv,
    TIMETZ: _timetz_recv,
    TIMESTAMP: lambda b: _us_to_ts(_S_I8.unpack(b)[0], False),
    TIMESTAMPTZ: lambda b: _us_to_ts(_S_I8.unpack(b)[0], True),
    INTERVAL: _interval_recv,
    UUID: lambda b: _uuid.UUID(bytes=bytes(b)),
    JSON: lambda b: (_check_json(_as_str(b)), _as_str(b))[1],
    JSONB: _jsonb_recv,
    VOID: lambda b: None,
}
for _o in (TEXT, VARCHAR, BPCHAR, NAME, UNKNOWN):
    _BIN_RECV[_o] = _str_recv
for _o in (OID, XID, CID, REGPROC, REGCLASS, REGTYPE, REGNAMESPACE, REGROLE):
    _BIN_RECV[_o] = lambda b: _S_U4.unpack(b)[0]


def _array_send(arr_oid: int, elem_oid: int, value: list[Any]) -> bytes:
    dims: list[int] = []
    probe: Any = value
    while isinstance(probe, (list, tuple)):
        dims.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    if dims and dims[-1] == 0:
        dims = [] if len(dims) == 1 else dims
    flat: list[Any] = []

    def walk(v: Any, depth: int) -> None:
        if depth == len(dims):
            flat.append(v)
            return
        if not isinstance(v, (list, tuple)) or len(v) != dims[depth]:
            raise PgError(INVALID_TEXT_REPRESENTATION,
                          "multidimensional arrays must have array expressions with matching dimensions")
        for x in v:
            walk(x, depth + 1)

    if dims:
        walk(value, 0)
    has_null = any(x is None for x in flat)
    lbound = 0 if arr_oid in (INT2VECTOR, OIDVECTOR) else 1
    out = [struct.pack("!iiI", len(dims), int(has_null), elem_oid)]
    out += [struct.pack("!ii", d, lbound) for d in dims]
    send = _BIN_SEND.get(elem_oid)
    for x in flat:
        if x is None:
            out.append(b"\xff\xff\xff\xff")
        else:
            b = send(x) if send else encode_binary(elem_oid, x)
            out.append(_S_I4.pack(len(b)) + b)
    return b"".join(out)


def _array_recv(elem_oid: int, b: bytes, lbound: int = 1) -> list[Any]:
    """array_recv; ``lbound``: the lower bound the type's arrays have (0 for
    int2vector and oidvector)."""
    try:
        ndim, _flags, eoid = struct.unpack_from("!iiI", b)
        if ndim < 0 or ndim > 6:
            raise PgError(INVALID_BINARY_REPRESENTATION, f"invalid number of dimensions: {ndim}")
        if eoid != elem_oid and not (elem_oid in (TEXT, VARCHAR, BPCHAR, NAME) and eoid in (TEXT, VARCHAR, BPCHAR, NAME)):
            raise PgError(DATATYPE_MISMATCH_CODE, "wrong element type")
        pos = 12
        dims = []
        for _ in range(ndim):
            d, lb = struct.unpack_from("!ii", b, pos)
            if lb != lbound:    # as array_in's explicit dimensions: bounds are never dropped silently
                raise PgError(FEATURE_NOT_SUPPORTED, "array lower bounds other than 1 are not supported", hint=ARRAY_BOUNDS_HINT)
            dims.append(d)
            pos += 8
        total = math.prod(dims) if dims else 0
        recv = _BIN_RECV.get(elem_oid)
        flat: list[Any] = []
        for _ in range(total):
            (ln,) = _S_I4.unpack_from(b, pos)
            pos += 4
            if ln == -1:
                flat.append(None)
                continue
            if ln < 0 or pos + ln > len(b):
                raise PgError(INVALID_BINARY_REPRESENTATION, "insufficient data left in message")
            chunk = b[pos:pos + ln]
            flat.append(recv(chunk) if recv else decode_binary(elem_oid, chunk))
            pos += ln
        if pos != len(b):
            raise _bad_binary()
    except struct.error:
        raise PgError(INVALID_BINARY_REPRESENTATION, "insufficient data left in message") from None

    def build(depth: int, it: Any) -> list[Any]:
        if depth == len(dims) - 1:
            return [next(it) for _ in range(dims[depth])]
        return [build(depth + 1, it) for _ in range(dims[depth])]

    return build(0, iter(flat)) if dims else []


DATATYPE_MISMATCH_CODE = "42804"


def encode_binary(oid: int, value: Any) -> bytes:
    """Binary send format of one non-NULL value (what typsend produces)."""
    f = _BIN_SEND.get(oid)
    if f is not None:
        return f(value)
    t = TYPES_BY_OID.get(oid)
    if t is not None and t.elem_oid and (t.category == "A" or t.elem_oid == RECORD):
        return _array_send(oid, t.elem_oid, value)
    raise PgError(FEATURE_NOT_SUPPORTED, f"no binary output function available for type {t.sql_name if t else oid}")


def decode_binary(oid: int, data: bytes) -> Any:
    """Binary recv of one non-NULL value; malformed input -> PgError 22P03."""
    data = bytes(data)
    f = _BIN_RECV.get(oid)
    if f is not None:
        n = _FIXED_LEN.get(oid)
        if n is not None and len(data) != n:
            raise PgError(INVALID_BINARY_REPRESENTATION, "incorrect binary data format")
        try:
            return f(data)
        except struct.error:
            raise PgError(INVALID_BINARY_REPRESENTATION, "incorrect binary data format") from None
    t = TYPES_BY_OID.get(oid)
    if t is not None and t.elem_oid and t.category == "A":
        return _array_recv(t.elem_oid, data, 0 if oid in (INT2VECTOR, OIDVECTOR) else 1)
    raise PgError(FEATURE_NOT_SUPPORTED, f"no binary input function available for type {t.sql_name if t else oid}")


# --------------------------------------------------------------------------
# numpy columns
# --------------------------------------------------------------------------

_NUMPY_DTYPES: dict[int, np.dtype] = {
    BOOL: np.dtype(np.bool_), INT2: np.dtype(np.int16), INT4: np.dtype(np.int32),
    INT8: np.dtype(np.int64), OID: np.dtype(np.int64), FLOAT4: np.dtype(np.float32),
    FLOAT8: np.dtype(np.float64), DATE: np.dtype("datetime64[D]"),
    TIMESTAMP: np.dtype("datetime64[us]"), TIMESTAMPTZ: np.dtype("datetime64[us]"),
}
_OBJECT = np.dtype(object)


def numpy_dtype(oid: int) -> np.dtype:
    """The column dtype for a type; object for everything without a native one."""
    return _NUMPY_DTYPES.get(oid, _OBJECT)


def _np_scalar_to_py(oid: int, v: Any) -> Any:
    """Convert one numpy column element to the Python value contract."""
    if oid == DATE:
        if isinstance(v, np.datetime64):
            if np.isnat(v):
                return None
            days = int(v.astype("int64"))
            return infinity_of(oid, days) or _dt.date(1970, 1, 1) + _dt.timedelta(days=days)
        return v
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        if isinstance(v, np.datetime64):
            inf = infinity_of(oid, int(v.astype("int64")))
            if inf is not None:
                return inf
            us = int(v.astype("datetime64[us]").astype("int64"))
            d = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=us)
            return d.replace(tzinfo=UTC) if oid == TIMESTAMPTZ else d
        return v
    if isinstance(v, np.generic):
        return v.item()
    return v


def column_to_pylist(oid: int, values: np.ndarray, nulls: np.ndarray | None = None) -> list[Any]:
    """A numpy column as a list of Python values (None for NULL)."""
    out = _python_values(oid, values)
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            out[i] = None
    return out


def _python_values(oid: int, values: np.ndarray) -> list[Any]:
    """Every value of a numpy column as Python's, NULLs included (as garbage)."""
    if oid == DATE and values.dtype.kind == "M":
        ints = values.astype("datetime64[D]").view("int64").tolist()
        base = _dt.date(1970, 1, 1).toordinal()
        return [_dt.date.fromordinal(base + i) if abs(i) < 3_000_000 else infinity_of(oid, i) for i in ints]
    if oid in (TIMESTAMP, TIMESTAMPTZ) and values.dtype.kind == "M":
        ints = values.astype("datetime64[us]").view("int64").tolist()
        epoch = _dt.datetime(1970, 1, 1, tzinfo=UTC if oid == TIMESTAMPTZ else None)
        return [epoch + _dt.timedelta(microseconds=i) if DT64_NEG_INF < i < DT64_POS_INF else infinity_of(oid, i)
                for i in ints]
    values_list: list[Any] = values.tolist()
    return values_list


def _dt64_strings(values: np.ndarray, unit: str) -> list[str]:
    stamps: npt.NDArray[np.datetime64] = values.astype(f"datetime64[{unit}]")
    strings: list[str] = np.datetime_as_string(stamps, unit=unit).tolist()  # type: ignore[call-overload]  # numpy's stubs take the unit as a Literal
    return strings


def encode_text_column(oid: int, values: np.ndarray, nulls: np.ndarray | None = None,
                       tz: str = "UTC", float_digits: int = 1) -> list[bytes | None]:
    """Text-encode a whole column, vectorised where that is cheap
    (``float_digits``: the session's extra_float_digits)."""
    n = len(values)
    out: list[Any]
    kind = values.dtype.kind
    if kind == "f" and oid in (FLOAT4, FLOAT8) and float_digits < 1:
        out = [format_float(x, oid == FLOAT4, float_digits).encode() for x in values.tolist()]
    elif oid == BOOL and kind == "b":
        out = np.where(values, b"t", b"f").tolist()
    elif kind in "iu" and oid in (INT2, INT4, INT8, OID, XID, CID, REGPROC, REGCLASS, REGTYPE):
        out = [b"%d" % v for v in values.tolist()]
    elif kind == "f" and oid == FLOAT8:
        out = [_f8_bytes(x) for x in values.tolist()]
    elif kind == "f" and oid == FLOAT4:
        out = [format_float(x, True).encode() for x in values.tolist()]
    elif oid == DATE and kind == "M":
        strs = _dt64_strings(values, "D")
        out = [s.encode() if len(s) == 10 else None for s in strs]
        for i, s in enumerate(strs):
            if out[i] is None and s != "NaT":
                out[i] = encode_text(DATE, _np_scalar_to_py(DATE, values[i]))
    elif oid in (TIMESTAMP, TIMESTAMPTZ) and kind == "M" and (oid == TIMESTAMP or zone_of(tz) is UTC):
        suffix = "+00" if oid == TIMESTAMPTZ else ""
        out = []
        for i, s in enumerate(_dt64_strings(values, "us")):
            if len(s) != 26:
                out.append(None if s == "NaT" else encode_text(oid, _np_scalar_to_py(oid, values[i]), tz=tz))
                continue
            frac = s[20:].rstrip("0")
            out.append(f"{s[:10]} {s[11:19]}{'.' + frac if frac else ''}{suffix}".encode())
    else:
        try:
            py = column_to_pylist(oid, values, None)
        except OverflowError:           # a timestamptz whose instant is in 1 BC: value by value
            if oid != TIMESTAMPTZ or kind != "M":
                raise
            out = [_far_timestamptz_text(v, tz) for v in values.astype("datetime64[us]")]
        else:
            out = [None if v is None else encode_text(oid, v, tz=tz) for v in py]
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            out[i] = None
    assert len(out) == n
    return out


def pylist_to_column(oid: int, items: list[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """Python values (None for NULL) -> (numpy values, null mask or None)."""
    dt = numpy_dtype(oid)
    nulls = np.fromiter((v is None for v in items), dtype=np.bool_, count=len(items))
    has_null = bool(nulls.any())
    if dt == _OBJECT:
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        return arr, (nulls if has_null else None)
    if dt.kind == "M":
        fill = np.datetime64(0, "us") if dt == np.dtype("datetime64[us]") else np.datetime64(0, "D")
        vals: list[Any] = []
        for v in items:
            if v is None:
                vals.append(fill)
            elif dt64_infinity(v) is not None:
                vals.append(np.datetime64(dt64_infinity(v), "D" if oid == DATE else "us"))
            elif oid == DATE:
                vals.append(np.datetime64(v.toordinal() - _dt.date(1970, 1, 1).toordinal(), "D"))
            else:
                vals.append(np.datetime64(_ts_to_us(v) + 946_684_800_000_000, "us"))
        return np.array(vals, dtype=dt), (nulls if has_null else None)
    zero = False if dt.kind == "b" else 0
    arr = np.array([zero if v is None else v for v in items], dtype=dt)
    return arr, (nulls if has_null else None)


# record_out / record_send register themselves here (they print each field by this module's codecs)
from . import composite as _composite  # noqa: E402,F401
