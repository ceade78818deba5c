"""SQL types inside the executor: numpy layouts, casts and result-type rules.

Type identity is the PostgreSQL OID (``protocol.oids``); this module decides
how values of each type sit in numpy arrays and how PostgreSQL's implicit
and explicit conversions behave on whole columns.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import (
    CANNOT_COERCE, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, PgError,
)

# vector imports this module too: its Col is looked up at call time (vector.Col).
from . import vector

if TYPE_CHECKING:
    from .vector import Col

UTC = dt.timezone.utc
PG_EPOCH = dt.datetime(2000, 1, 1)

_DTYPES = {
    type_oids.BOOL: np.dtype(np.bool_), type_oids.INT2: np.dtype(np.int16), type_oids.INT4: np.dtype(np.int32),
    type_oids.INT8: np.dtype(np.int64), type_oids.OID: np.dtype(np.int64), type_oids.FLOAT4: np.dtype(np.float32),
    type_oids.FLOAT8: np.dtype(np.float64), type_oids.DATE: np.dtype("datetime64[D]"),
    type_oids.TIMESTAMP: np.dtype("datetime64[us]"), type_oids.TIMESTAMPTZ: np.dtype("datetime64[us]"),
    type_oids.REGCLASS: np.dtype(np.int64), type_oids.REGTYPE: np.dtype(np.int64), type_oids.REGPROC: np.dtype(np.int64),
    type_oids.XID: np.dtype(np.int64), type_oids.REGNAMESPACE: np.dtype(np.int64), type_oids.REGROLE: np.dtype(np.int64),
}
_OBJ = np.dtype(object)

TYPE_NAMES = {
    type_oids.BOOL: "bool", type_oids.BYTEA: "bytea", type_oids.CHAR: "char", type_oids.NAME: "name", type_oids.INT8: "int8", type_oids.INT2: "int2",
    type_oids.INT4: "int4", type_oids.TEXT: "text", type_oids.OID: "oid", type_oids.JSON: "json", type_oids.FLOAT4: "float4", type_oids.FLOAT8: "float8",
    type_oids.UNKNOWN: "unknown", type_oids.BPCHAR: "bpchar", type_oids.VARCHAR: "varchar", type_oids.DATE: "date", type_oids.TIME: "time",
    type_oids.TIMETZ: "timetz", type_oids.TIMESTAMP: "timestamp", type_oids.TIMESTAMPTZ: "timestamptz", type_oids.INTERVAL: "interval", type_oids.NUMERIC: "numeric",
    type_oids.UUID: "uuid", type_oids.JSONB: "jsonb", type_oids.REGCLASS: "regclass", type_oids.REGTYPE: "regtype", type_oids.REGPROC: "regproc",
    type_oids.XID: "xid", type_oids.VOID: "void", type_oids.REGNAMESPACE: "regnamespace", type_oids.REGROLE: "regrole", type_oids.RECORD: "record", type_oids.INT2VECTOR: "int2vector", type_oids.OIDVECTOR: "oidvector",
}
for _e, _a in type_oids.ARRAY_OF.items():
    TYPE_NAMES[_a] = "_" + TYPE_NAMES[_e]

#: format_type() spellings, used by \d and information_schema.
SQL_NAMES = {
    type_oids.BOOL: "boolean", type_oids.INT2: "smallint", type_oids.INT4: "integer", type_oids.INT8: "bigint", type_oids.FLOAT4: "real",
    type_oids.FLOAT8: "double precision", type_oids.VARCHAR: "character varying", type_oids.BPCHAR: "character",
    type_oids.TIMESTAMP: "timestamp without time zone", type_oids.TIMESTAMPTZ: "timestamp with time zone",
    type_oids.TIME: "time without time zone", type_oids.TIMETZ: "time with time zone", type_oids.CHAR: '"char"',
    # pseudo-types, as format_type prints them (function catalogs declare with them)
    type_oids.ANY: '"any"', 2283: "anyelement", 2277: "anyarray", 2776: "anynonarray", type_oids.RECORD: "record",
    type_oids.VOID: "void", 2281: "internal",
}

TYPLEN = {
    type_oids.BOOL: 1, type_oids.INT2: 2, type_oids.INT4: 4, type_oids.INT8: 8, type_oids.OID: 4, type_oids.FLOAT4: 4, type_oids.FLOAT8: 8, type_oids.DATE: 4,
    type_oids.TIME: 8, type_oids.TIMETZ: 12, type_oids.TIMESTAMP: 8, type_oids.TIMESTAMPTZ: 8, type_oids.INTERVAL: 16, type_oids.UUID: 16, type_oids.NAME: 64, type_oids.CHAR: 1,
    type_oids.REGCLASS: 4, type_oids.REGTYPE: 4, type_oids.REGPROC: 4, type_oids.XID: 4,
}

_ALIASES = {
    "int": type_oids.INT4, "integer": type_oids.INT4, "int4": type_oids.INT4, "serial": type_oids.INT4, "serial4": type_oids.INT4,
    "smallint": type_oids.INT2, "int2": type_oids.INT2, "smallserial": type_oids.INT2, "serial2": type_oids.INT2,
    "bigint": type_oids.INT8, "int8": type_oids.INT8, "bigserial": type_oids.INT8, "serial8": type_oids.INT8,
    "real": type_oids.FLOAT4, "float4": type_oids.FLOAT4, "double precision": type_oids.FLOAT8, "double": type_oids.FLOAT8,
    "float8": type_oids.FLOAT8, "float": type_oids.FLOAT8, "numeric": type_oids.NUMERIC, "decimal": type_oids.NUMERIC, "money": type_oids.NUMERIC,
    "text": type_oids.TEXT, "varchar": type_oids.VARCHAR, "character varying": type_oids.VARCHAR, "char": type_oids.BPCHAR,
    "character": type_oids.BPCHAR, "bpchar": type_oids.BPCHAR, "nchar": type_oids.BPCHAR, "name": type_oids.NAME, '"char"': type_oids.CHAR,
    "bool": type_oids.BOOL, "boolean": type_oids.BOOL, "bytea": type_oids.BYTEA, "date": type_oids.DATE, "time": type_oids.TIME,
    "time without time zone": type_oids.TIME, "timetz": type_oids.TIMETZ, "time with time zone": type_oids.TIMETZ,
    "timestamp": type_oids.TIMESTAMP, "timestamp without time zone": type_oids.TIMESTAMP,
    "timestamptz": type_oids.TIMESTAMPTZ, "timestamp with time zone": type_oids.TIMESTAMPTZ, "interval": type_oids.INTERVAL,
    "uuid": type_oids.UUID, "json": type_oids.JSON, "jsonb": type_oids.JSONB, "oid": type_oids.OID, "regclass": type_oids.REGCLASS,
    "regtype": type_oids.REGTYPE, "regproc": type_oids.REGPROC, "xid": type_oids.XID, "regnamespace": type_oids.REGNAMESPACE, "regrole": type_oids.REGROLE,
    "regprocedure": type_oids.REGPROC, "unknown": type_oids.UNKNOWN, "void": type_oids.VOID,
    "record": type_oids.RECORD, "int2vector": type_oids.INT2VECTOR, "oidvector": type_oids.OIDVECTOR, "datetime": type_oids.TIMESTAMP,
    "tinyint": type_oids.INT2, "string": type_oids.TEXT,
}


def oid_by_name(name: str) -> int | None:
    n = " ".join(name.lower().replace("pg_catalog.", "").split())
    if n.endswith("[]"):
        e = oid_by_name(n[:-2])
        return type_oids.ARRAY_OF.get(e) if e else None
    if n.startswith("_"):
        e = oid_by_name(n[1:])
        return type_oids.ARRAY_OF.get(e) if e else None
    return _ALIASES.get(n)


def type_name(oid: int) -> str:
    return TYPE_NAMES.get(oid, str(oid))


def format_type(oid: int, typmod: int = -1) -> str:
    """PostgreSQL's format_type(oid, typmod)."""
    if oid in type_oids.ELEMENT_OF and oid not in (type_oids.INT2VECTOR, type_oids.OIDVECTOR):
        return format_type(type_oids.ELEMENT_OF[oid], typmod) + "[]"
    base = SQL_NAMES.get(oid, TYPE_NAMES.get(oid, "???"))
    if typmod >= 0:
        if oid in (type_oids.VARCHAR, type_oids.BPCHAR):
            return f"{base}({typmod - 4})"
        if oid == type_oids.NUMERIC:
            p, s = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
            return f"numeric({p},{s})"
        if oid in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.TIME, type_oids.TIMETZ):
            word, rest = base.split(" ", 1) if " " in base else (base, "")
            return f"{word}({typmod}) {rest}".strip()
    return base


def dtype_of(oid: int) -> np.dtype:
    return _DTYPES.get(oid, _OBJ)


def empty(oid: int, n: int) -> np.ndarray:
    d = dtype_of(oid)
    if d == _OBJ:
        return np.full(n, None, dtype=object)
    return np.zeros(n, dtype=d)


def is_numeric(oid: int) -> bool:
    return oid in type_oids.NUMERIC_TYPES


def is_string(oid: int) -> bool:
    return oid in type_oids.STRING_TYPES


def is_temporal(oid: int) -> bool:
    return oid in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ)


def datetime_values(arr: np.ndarray, oid: int) -> list[Any]:
    """Python values of a datetime64 column; numpy gives a bare int for the
    raw values past Python's range, which are the infinities."""
    vals: list[Any] = arr.tolist()
    if oid == type_oids.TIMESTAMPTZ:
        vals = [v.replace(tzinfo=UTC) if isinstance(v, dt.datetime) else v for v in vals]
    raw = arr.view(np.int64)
    if len(raw) and ((raw == wiretypes.DT64_POS_INF) | (raw == wiretypes.DT64_NEG_INF)).any():
        return [wiretypes.infinity_of(oid, v) if type(v) is int else v for v in vals]
    return vals


def _to_dt64(v: dt.date | str | np.datetime64, oid: int) -> np.datetime64:
    raw = wiretypes.dt64_infinity(v)
    if raw is not None:
        return np.datetime64(raw, "D" if oid == type_oids.DATE else "us")
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
        return np.datetime64(v, "us") if oid != type_oids.DATE else np.datetime64(v.date(), "D")
    if isinstance(v, dt.date):
        return np.datetime64(v, "D") if oid == type_oids.DATE else np.datetime64(dt.datetime(v.year, v.month, v.day), "us")
    return np.datetime64(v)


def _datetime_unit(data: np.ndarray, to: np.dtype) -> np.ndarray:
    """A datetime64 column in another unit, its infinities kept infinite."""
    if data.dtype == to:
        return data
    raw = data.view(np.int64)
    pos, neg = raw == wiretypes.DT64_POS_INF, raw == wiretypes.DT64_NEG_INF
    out = data.astype(to)
    if pos.any() or neg.any():
        out = out.copy()
        out.view(np.int64)[pos] = wiretypes.DT64_POS_INF
        out.view(np.int64)[neg] = wiretypes.DT64_NEG_INF
    return out


def column_from_values(values: list[Any], oid: int) -> "Col":
    """Build a column from Python values (None = NULL)."""
    Col = vector.Col

    n = len(values)
    nulls = np.fromiter((v is None for v in values), dtype=bool, count=n)
    d = dtype_of(oid)
    if d == _OBJ:
        arr = np.empty(n, dtype=object)
        arr[:] = values
        return Col(arr, nulls, oid)
    anynull = nulls.any()
    if d.kind == "M":
        arr = np.zeros(n, dtype=d)
        seen: dict[dt.datetime, np.datetime64] = {}      # plain datetimes converted once each: a windowed view's keys repeat a few panes
        for i, v in enumerate(values):
            if v is None:
                continue
            if type(v) is dt.datetime:
                r = seen.get(v)
                if r is None:
                    r = seen[v] = _to_dt64(v, oid)
                arr[i] = r
            else:
                arr[i] = _to_dt64(v, oid)
        return Col(arr, nulls, oid)
    if anynull:
        fill = False if d.kind == "b" else 0
        values = [fill if v is None else v for v in values]
    try:
        arr = np.array(values, dtype=d)
    except OverflowError:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(oid)} out of range") from None
    if d.kind == "i" and n:
        # numpy 2 already refuses Python ints outside the dtype; a vectorised
        # range check finds the rest (oid is int64 but 0..2**32-1) without a
        # Python call per value
        lo, hi = _INT_RANGE.get(oid, (-(2**63), 2**63 - 1))
        if int(arr.min()) < lo or int(arr.max()) > hi:
            big = [v for v in values if isinstance(v, int) and not _fits(v, oid)]
            if big:
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(oid)} out of range")
    return Col(arr, nulls, oid)


_INT_RANGE = {type_oids.INT2: (-(2**15), 2**15 - 1), type_oids.INT4: (-(2**31), 2**31 - 1), type_oids.INT8: (-(2**63), 2**63 - 1),
              type_oids.OID: (0, 2**32 - 1)}


def _fits(v: int, oid: int) -> bool:
    lo, hi = _INT_RANGE.get(oid, (-(2**63), 2**63 - 1))
    return lo <= v <= hi


def _range_word(oid: int) -> str:
    return {type_oids.INT2: "smallint", type_oids.INT4: "integer", type_oids.INT8: "bigint"}.get(oid, "value")


def int_literal_oid(v: int) -> int:
    if -(2**31) <= v < 2**31:
        return type_oids.INT4
    if -(2**63) <= v < 2**63:
        return type_oids.INT8
    return type_oids.NUMERIC


# ----------------------------------------------------------- type algebra

_NUM_RANK = {type_oids.INT2: 1, type_oids.INT4: 2, type_oids.INT8: 3, type_oids.OID: 3, type_oids.NUMERIC: 4, type_oids.FLOAT4: 5, type_oids.FLOAT8: 6}


#: contexts where two operands meet in an operator rather than in one result column
_OPERATOR_CONTEXTS = frozenset({"comparison", "NULLIF", "JOIN"})


#: oid and the reg* types: binary-coercible to each other, implicitly
_OID_ALIASES = (type_oids.OID, type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC, type_oids.REGNAMESPACE,
                type_oids.REGROLE)


def common_type(a: int, b: int, context: str = "UNION") -> int:
    """The type both operands are coerced to (PostgreSQL's select_common_type)."""
    if a == b:
        return a
    if a == type_oids.UNKNOWN:
        return b if b != type_oids.UNKNOWN else type_oids.TEXT
    if b == type_oids.UNKNOWN:
        return a
    if a in _NUM_RANK and b in _NUM_RANK:
        return a if _NUM_RANK[a] >= _NUM_RANK[b] else b
    if a in _OID_ALIASES and (b in _OID_ALIASES or b in type_oids.INTEGER_TYPES):
        return a        # oid and the reg* types coerce to each other (the first stays), an integer to them
    if b in _OID_ALIASES and a in type_oids.INTEGER_TYPES:
        return b
    if is_string(a) and is_string(b):
        # the string types coerce implicitly both ways, so select_common_type keeps the first
        # one (varchar UNION text is varchar, coalesce(char(4), text) keeps the padding) unless
        # it is text, the preferred type; an operator (=, <) reads them as text
        if context in _OPERATOR_CONTEXTS or a == type_oids.TEXT:
            return type_oids.TEXT
        return a
    if {a, b} <= {type_oids.DATE, type_oids.TIMESTAMP}:
        return type_oids.TIMESTAMP
    if {a, b} <= {type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ}:
        return type_oids.TIMESTAMPTZ
    if {a, b} == {type_oids.JSON, type_oids.JSONB}:
        return type_oids.JSONB
    raise PgError(DATATYPE_MISMATCH, f"{context} types {type_name(a)} and {type_name(b)} cannot be matched")


def arith_type(op: str, a: int, b: int) -> int:
    """Result type of a binary arithmetic operator, per pg_operator."""
    if a == type_oids.UNKNOWN:
        a = b if b != type_oids.UNKNOWN else type_oids.NUMERIC
    if b == type_oids.UNKNOWN:
        b = a
    if a in _NUM_RANK and b in _NUM_RANK:
        if type_oids.FLOAT8 in (a, b) or type_oids.FLOAT4 in (a, b):
            return type_oids.FLOAT8 if (type_oids.FLOAT8 in (a, b) or type_oids.NUMERIC in (a, b) or a != b) else type_oids.FLOAT4
        if type_oids.NUMERIC in (a, b):
            return type_oids.NUMERIC
        r = max(_NUM_RANK[a], _NUM_RANK[b])
        return {1: type_oids.INT2, 2: type_oids.INT4, 3: type_oids.INT8}[r]
    return -1


# ----------------------------------------------------------------- casts

def _text_in(oid: int, s: str) -> Any:
    return wiretypes.decode_text(oid, s)


def _text_out(oid: int, v: object) -> str:
    r = wiretypes.encode_text(oid, v)
    return r.decode("utf-8") if isinstance(r, bytes) else r


def text_in(oid: int, s: str) -> Any:
    """A value of type ``oid`` from its text form (the type's input function)."""
    return _text_in(oid, s)


def text_out(oid: int, v: object) -> str:
    """The text form of a value of type ``oid`` (the type's output function)."""
    return _text_out(oid, v)


def cast_col(col: "Col", target: int, typmod: int = -1, explicit: bool = True) -> "Col":
    """Convert a whole column, raising PostgreSQL's errors for bad values."""
    Col = vector.Col

    src = col.oid
    if src == target and typmod < 0:
        return col
    if type_oids.CHAR in (src, target) and src != target:
        return _char_cast(col, target, typmod, explicit)
    if target in (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME) and not is_string(src):
        vals = col.to_pylist()
        out = [None if v is None else (("true" if v else "false") if src == type_oids.BOOL else _text_out(src, v)) for v in vals]
        return _apply_typmod(Col.from_pylist(out, target), typmod, explicit)
    if is_string(src) and not is_string(target) or src == type_oids.UNKNOWN:
        if is_string(target):
            return _apply_typmod(Col(col.data, col.nulls, target), typmod, explicit)
        vals = col.to_pylist()
        out = [None if v is None else _text_in(target, v) for v in vals]
        return _apply_typmod(Col.from_pylist(out, target), typmod, explicit)
    if is_string(src) and is_string(target):
        if src == type_oids.BPCHAR and target != type_oids.BPCHAR:  # bpchar -> text drops the padding
            if col.nulls is None and col.data.dtype == object:     # strings only: no per-value checks
                unpadded = np.empty(len(col.data), dtype=object)
                unpadded[:] = [v.rstrip(" ") for v in col.data.tolist()]
                return _apply_typmod(vector.Col(unpadded, None, target), typmod, explicit)
            vals = [None if v is None else str(v).rstrip(" ") for v in col.to_pylist()]
            return _apply_typmod(Col.from_pylist(vals, target), typmod, explicit)
        return _apply_typmod(Col(col.data, col.nulls, target), typmod, explicit)
    tdt = dtype_of(target)
    if src in _NUM_RANK and target in _NUM_RANK:
        return _apply_typmod(_cast_number(col, target), typmod, explicit)
    if src == type_oids.BOOL and target in (type_oids.INT4, type_oids.INT8, type_oids.INT2):
        return Col(col.data.astype(tdt), col.nulls, target)
    if target == type_oids.BOOL and src in (type_oids.INT4, type_oids.INT8, type_oids.INT2):
        return Col(col.data != 0, col.nulls, target)
    if src in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ) and target in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        return _apply_typmod(Col(_datetime_unit(col.data, tdt), col.nulls, target), typmod, explicit)
    if target == type_oids.TIME and src in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.TIMETZ):
        out = [None if v is None or wiretypes.dt64_infinity(v) is not None       # an infinity has no time of day
               else (v if src == type_oids.TIMETZ else v.time()).replace(tzinfo=None) for v in col.to_pylist()]
        return _apply_typmod(Col.from_pylist(out, type_oids.TIME), typmod, explicit)
    if src == type_oids.TIME and target == type_oids.INTERVAL:     # time_interval
        spans = [None if v is None else wiretypes.Interval(0, 0, ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000
                                                           + v.microsecond) for v in col.to_pylist()]
        return _apply_typmod(Col.from_pylist(spans, target), typmod, explicit)
    if target == type_oids.TIMETZ and src in (type_oids.TIME, type_oids.TIMESTAMPTZ):
        # the session's zone is UTC here; other zones cast in executor/execution/zoned_casts.py
        times = [None if v is None or wiretypes.dt64_infinity(v) is not None
                 else wiretypes.timetz(v if src == type_oids.TIME else v.time(), dt.timedelta(0)) for v in col.to_pylist()]
        return _apply_typmod(Col.from_pylist(times, type_oids.TIMETZ), typmod, explicit)
    if src in (type_oids.JSON, type_oids.JSONB) and target in (type_oids.JSON, type_oids.JSONB):
        vals = [None if v is None else _text_out(target, _text_in(target, v)) for v in col.to_pylist()]
        return Col.from_pylist(vals, target)
    if src in (type_oids.INT4, type_oids.INT8, type_oids.OID, type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGNAMESPACE, type_oids.REGROLE, type_oids.REGPROC) and \
            target in (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.OID, type_oids.REGPROC, type_oids.REGNAMESPACE, type_oids.REGROLE):
        return Col(col.data.astype(np.int64), col.nulls, target)
    if src in (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC, type_oids.OID) and target in (type_oids.INT4, type_oids.INT8, type_oids.OID, type_oids.REGCLASS, type_oids.REGTYPE):
        return Col(col.data.astype(tdt), col.nulls, target)
    if src in type_oids.ELEMENT_OF and target in type_oids.ELEMENT_OF:
        et = type_oids.ELEMENT_OF[target]
        es = type_oids.ELEMENT_OF[src]
        arrays: list[list[Any] | None] = []
        for v in col.to_pylist():
            if v is None:
                arrays.append(None)
            else:
                c = cast_col(Col.from_pylist(list(v), es), et)
                arrays.append(c.to_pylist())
        return Col.from_pylist(arrays, target)
    if src == target:                       # a typmod only: time(p), timestamp(p)
        return _apply_typmod(col, typmod, explicit)
    raise PgError(CANNOT_COERCE, f"cannot cast type {format_type(src)} to {format_type(target)}")


#: the numbers boolean has no cast to or from (pg_cast: bool <-> int4 only)
_NO_BOOL_CAST = frozenset((type_oids.INT2, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8, type_oids.NUMERIC))


def check_bool_cast(src: int, target: int) -> None:
    """boolean casts to and from int4, not the other numbers: 42846 when
    the cast is written, as PostgreSQL's parser says it (also for a NULL or
    over no rows, where nothing would reach the cast itself)."""
    other = target if src == type_oids.BOOL else src
    if other in _NO_BOOL_CAST:
        raise PgError(CANNOT_COERCE, f"cannot cast type {format_type(src)} to {format_type(target)}")


def check_char_cast(src: int, target: int) -> None:
    """"char" casts only to and from the string types and int4 (42846
    otherwise, also for a NULL), as pg_cast has it."""
    other = target if src == type_oids.CHAR else src
    if not (is_string(other) or other == type_oids.INT4):
        raise PgError(CANNOT_COERCE, f"cannot cast type {format_type(src)} to {format_type(target)}")


def _char_cast(col: "Col", target: int, typmod: int, explicit: bool) -> "Col":
    """"char" from a string (charin and text_char: the first byte, '' for
    none, or ``\\ooo`` in octal) or from int4 (the byte, -128..127); to a
    string or to int4 (the byte)."""
    src, vals = col.oid, col.to_pylist()
    check_char_cast(src, target)
    if target == type_oids.CHAR:
        if src == type_oids.INT4:
            out: list[Any] = [None if v is None else _int_char(int(v)) for v in vals]
        else:                       # bpchar keeps its padding: ' '::bpchar::"char" is a space
            out = [None if v is None else wiretypes.char_in(str(v)) for v in vals]
        return vector.Col.from_pylist(out, type_oids.CHAR)
    if is_string(target):
        texts = [None if v is None else wiretypes.char_text(v) for v in vals]
        return _apply_typmod(vector.Col.from_pylist(texts, target), typmod, explicit)
    return vector.Col.from_pylist([None if v is None else wiretypes.char_int(v) for v in vals], target)


def _int_char(v: int) -> str:
    """i4tochar: the byte ``v`` stands for (a negative one has the high bit set)."""
    if not -128 <= v <= 127:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, '"char" out of range')
    return wiretypes.char_of_byte(v & 0xFF)


def _cast_number(col: "Col", target: int) -> "Col":
    Col = vector.Col

    src = col.oid
    data = col.data
    valid = col.valid_mask()
    if target == type_oids.NUMERIC:
        if src == type_oids.NUMERIC:
            return col
        if src in (type_oids.FLOAT4, type_oids.FLOAT8):
            # float4_numeric / float8_numeric print FLT_DIG (6) / DBL_DIG (15) significant digits;
            # 'nan' / 'inf' / '-inf' are numeric NaN and (PostgreSQL 15) +-Infinity
            fmt = ".6g" if src == type_oids.FLOAT4 else ".15g"
            out = [None if not ok else _plain(decimal.Decimal(format(float(v), fmt)))
                   for v, ok in zip(data.tolist(), valid.tolist())]
        else:
            out = [decimal.Decimal(int(v)) if ok else None for v, ok in zip(data.tolist(), valid.tolist())]
        return Col.from_pylist(out, type_oids.NUMERIC)
    tdt = dtype_of(target)
    if src == type_oids.NUMERIC:
        vals = data.tolist()
        if target in (type_oids.FLOAT4, type_oids.FLOAT8):
            floats = [float(v) if ok else None for v, ok in zip(vals, valid.tolist())]
            return Col.from_pylist(floats, target)
        ints: list[int | None] = []
        for v, ok in zip(vals, valid.tolist()):
            if not ok:
                ints.append(None)
                continue
            if not v.is_finite():
                raise PgError(FEATURE_NOT_SUPPORTED, f"cannot convert {'NaN' if v.is_nan() else 'infinity'} "
                              f"to {_range_word(target)}")
            iv = int(v.to_integral_value(rounding=decimal.ROUND_HALF_UP))
            if not _fits(iv, target):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            ints.append(iv)
        return Col.from_pylist(ints, target)
    if tdt.kind == "i":
        if data.dtype.kind == "f":
            d = np.where(valid, data, 0)
            if not np.all(np.isfinite(d)):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            r = np.rint(d)
            lo, hi = _INT_RANGE[target if target in _INT_RANGE else type_oids.INT8]
            if len(r) and (r.min() < lo or r.max() > hi):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            return Col(r.astype(tdt), col.nulls, target)
        lo, hi = _INT_RANGE.get(target, (-(2**63), 2**63 - 1))
        d = data[valid] if col.nulls is not None else data
        if len(d) and (int(d.min()) < lo or int(d.max()) > hi):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
        return Col(data.astype(tdt), col.nulls, target)
    if target == type_oids.FLOAT4 and data.dtype.kind == "f":
        return Col(_narrow_float(data, valid), col.nulls, target)
    return Col(data.astype(tdt), col.nulls, target)


def _plain(d: decimal.Decimal) -> decimal.Decimal:
    """3.4E+38 as 340000000000000000000000000000000000000: numeric has no exponent."""
    exponent = d.as_tuple().exponent
    if isinstance(exponent, int) and exponent > 0:
        return d.quantize(decimal.Decimal(1), context=decimal.Context(prec=_NUMERIC_DIGITS))
    return d


def _narrow_float(data: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """float8 -> float4 (dtof): a finite value out of float4's range is an
    overflow, a non-zero one that becomes zero an underflow."""
    with np.errstate(all="ignore"):
        out = data.astype(np.float32)
    fin = np.isfinite(data) & valid
    if np.any(fin & np.isinf(out)):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
    if np.any(fin & (data != 0) & (out == 0)):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")
    return out


#: enough digits to quantize any numeric (131072 before the point, 16383 after)
_NUMERIC_DIGITS = 150000


def _apply_typmod(col: "Col", typmod: int, explicit: bool) -> "Col":
    """varchar(n)/char(n) length and numeric(p,s) rounding."""
    Col = vector.Col

    if typmod < 0:
        return col
    if col.oid in (type_oids.VARCHAR, type_oids.BPCHAR):
        return _apply_length(col, typmod - 4, explicit, typmod)
    if col.oid == type_oids.NUMERIC:
        p, s = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
        q = decimal.Decimal(1).scaleb(-s)
        limit = decimal.Decimal(10) ** (p - s)
        vals = col.data.tolist()
        nulls = col.nulls
        ctx = decimal.Context(prec=_NUMERIC_DIGITS, rounding=decimal.ROUND_HALF_UP, Emax=999999, Emin=-999999)
        zero = decimal.Decimal(0)
        out = [zero if v is None or not v.is_finite() else v.quantize(q, context=ctx) for v in vals]
        if out and max(map(abs, out)) >= limit:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                          detail=f"A field with precision {p}, scale {s} must round to an absolute value less than 10^{p - s}.")
        for i, v in enumerate(vals):
            if v is not None and v.is_infinite():
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                              detail=f"A field with precision {p}, scale {s} cannot hold an infinite value.")
            if v is not None and v.is_nan():
                out[i] = v
        arr = np.empty(len(out), dtype=object)
        arr[:] = out
        if nulls is not None:
            arr[nulls] = None
        return Col(arr, nulls, type_oids.NUMERIC)
    if col.oid in _FRACTIONAL:
        return _round_fraction(col, typmod)
    return col


_FRACTIONAL = (type_oids.TIME, type_oids.TIMETZ, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ)
_PG_EPOCH_US = 946_684_800_000_000      # 2000-01-01 in microseconds since 1970


def _round_fraction(col: "Col", precision: int) -> "Col":
    """time(p)/timestamp(p): seconds rounded to p digits, halves away from
    PostgreSQL's epoch (AdjustTimestampForTypmod, AdjustTimeForTypmod)."""
    Col = vector.Col
    if precision >= 6:
        return col
    step = 10 ** (6 - precision)
    if col.data.dtype.kind == "M":
        raw = col.data.view(np.int64)
        finite = (raw != wiretypes.DT64_POS_INF) & (raw != wiretypes.DT64_NEG_INF) & ~np.isnat(col.data)
        us = np.where(finite, raw, _PG_EPOCH_US) - _PG_EPOCH_US
        rounded = np.sign(us) * ((np.abs(us) + step // 2) // step * step) + _PG_EPOCH_US
        return Col(np.where(finite, rounded, raw).view(col.data.dtype), col.nulls, col.oid)
    out: list[Any] = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        base = dt.datetime.combine(dt.date(2000, 1, 1), v.replace(microsecond=0, tzinfo=None))
        moved = base + dt.timedelta(microseconds=(v.microsecond + step // 2) // step * step)
        if moved.day != 1:          # PostgreSQL's 24:00:00, which a Python time cannot hold
            raise PgError(FEATURE_NOT_SUPPORTED, 'time value "24:00:00" is not representable')
        t = moved.time()
        out.append(t if col.oid == type_oids.TIME else wiretypes.timetz(t, v.utcoffset() or dt.timedelta(0)))
    return Col.from_pylist(out, col.oid)


def _apply_length(col: "Col", n: int, explicit: bool, typmod: int) -> "Col":
    """varchar(n) / char(n): check or truncate, and blank-pad char(n).

    Work per value is a len() call; only values that need changing are
    touched individually."""
    Col = vector.Col

    vals = col.data.tolist()
    nulls = col.nulls
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            vals[i] = ""
    lens = np.fromiter(map(len, vals), dtype=np.int64, count=len(vals))
    for i in np.flatnonzero(lens > n).tolist():
        v = vals[i]
        if not explicit and v[n:].strip(" ") != "":
            raise PgError("22001", f"value too long for type {format_type(col.oid, typmod)}")
        vals[i] = v[:n]
    if col.oid == type_oids.BPCHAR:
        for i in np.flatnonzero(lens < n).tolist():
            vals[i] = vals[i].ljust(n)
    arr = np.empty(len(vals), dtype=object)
    arr[:] = vals
    if nulls is not None:
        arr[nulls] = None
    return Col(arr, nulls, col.oid)


def can_assign(src: int, dst: int) -> bool:
    """Whether an INSERT/UPDATE value of type src may go into a dst column:
    implicit casts, plus PostgreSQL's I/O conversion to string types, which
    counts as an assignment cast (an integer into a text column)."""
    return can_implicit(src, dst) or is_string(dst)


def can_implicit(src: int, dst: int) -> bool:
    """Whether PostgreSQL would coerce src to dst implicitly (assignment context)."""
    if src == dst or src == type_oids.UNKNOWN:
        return True
    if src in _NUM_RANK and dst in _NUM_RANK:
        return True
    if is_string(src) and is_string(dst):
        return True
    if src in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ) and dst in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        return True
    if {src, dst} <= {type_oids.JSON, type_oids.JSONB}:
        return True
    return False
