"""SQL types inside the executor: numpy layouts, casts and result-type rules.

Type identity is the PostgreSQL OID (``protocol.oids``); this module decides
how values of each type sit in numpy arrays and how PostgreSQL's implicit
and explicit conversions behave on whole columns.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import TYPE_CHECKING

import numpy as np

from protocol import oids as O
from protocol.errors import (
    CANNOT_COERCE, DATATYPE_MISMATCH, INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE, PgError,
)

if TYPE_CHECKING:
    from .vector import Col

UTC = dt.timezone.utc
PG_EPOCH = dt.datetime(2000, 1, 1)

_DTYPES = {
    O.BOOL: np.dtype(np.bool_), O.INT2: np.dtype(np.int16), O.INT4: np.dtype(np.int32),
    O.INT8: np.dtype(np.int64), O.OID: np.dtype(np.int64), O.FLOAT4: np.dtype(np.float32),
    O.FLOAT8: np.dtype(np.float64), O.DATE: np.dtype("datetime64[D]"),
    O.TIMESTAMP: np.dtype("datetime64[us]"), O.TIMESTAMPTZ: np.dtype("datetime64[us]"),
    O.REGCLASS: np.dtype(np.int64), O.REGTYPE: np.dtype(np.int64), O.REGPROC: np.dtype(np.int64),
    O.XID: np.dtype(np.int64), O.REGNAMESPACE: np.dtype(np.int64), O.REGROLE: np.dtype(np.int64),
}
_OBJ = np.dtype(object)

TYPE_NAMES = {
    O.BOOL: "bool", O.BYTEA: "bytea", O.CHAR: "char", O.NAME: "name", O.INT8: "int8", O.INT2: "int2",
    O.INT4: "int4", O.TEXT: "text", O.OID: "oid", O.JSON: "json", O.FLOAT4: "float4", O.FLOAT8: "float8",
    O.UNKNOWN: "unknown", O.BPCHAR: "bpchar", O.VARCHAR: "varchar", O.DATE: "date", O.TIME: "time",
    O.TIMESTAMP: "timestamp", O.TIMESTAMPTZ: "timestamptz", O.INTERVAL: "interval", O.NUMERIC: "numeric",
    O.UUID: "uuid", O.JSONB: "jsonb", O.REGCLASS: "regclass", O.REGTYPE: "regtype", O.REGPROC: "regproc",
    O.XID: "xid", O.VOID: "void", O.REGNAMESPACE: "regnamespace", O.REGROLE: "regrole", O.RECORD: "record", O.INT2VECTOR: "int2vector", O.OIDVECTOR: "oidvector",
}
for _e, _a in O.ARRAY_OF.items():
    TYPE_NAMES[_a] = "_" + TYPE_NAMES[_e]

#: format_type() spellings, used by \d and information_schema.
SQL_NAMES = {
    O.BOOL: "boolean", O.INT2: "smallint", O.INT4: "integer", O.INT8: "bigint", O.FLOAT4: "real",
    O.FLOAT8: "double precision", O.VARCHAR: "character varying", O.BPCHAR: "character",
    O.TIMESTAMP: "timestamp without time zone", O.TIMESTAMPTZ: "timestamp with time zone",
    O.TIME: "time without time zone", O.CHAR: '"char"',
}

TYPLEN = {
    O.BOOL: 1, O.INT2: 2, O.INT4: 4, O.INT8: 8, O.OID: 4, O.FLOAT4: 4, O.FLOAT8: 8, O.DATE: 4,
    O.TIME: 8, O.TIMESTAMP: 8, O.TIMESTAMPTZ: 8, O.INTERVAL: 16, O.UUID: 16, O.NAME: 64, O.CHAR: 1,
    O.REGCLASS: 4, O.REGTYPE: 4, O.REGPROC: 4, O.XID: 4,
}

_ALIASES = {
    "int": O.INT4, "integer": O.INT4, "int4": O.INT4, "serial": O.INT4, "serial4": O.INT4,
    "smallint": O.INT2, "int2": O.INT2, "smallserial": O.INT2, "serial2": O.INT2,
    "bigint": O.INT8, "int8": O.INT8, "bigserial": O.INT8, "serial8": O.INT8,
    "real": O.FLOAT4, "float4": O.FLOAT4, "double precision": O.FLOAT8, "double": O.FLOAT8,
    "float8": O.FLOAT8, "float": O.FLOAT8, "numeric": O.NUMERIC, "decimal": O.NUMERIC, "money": O.NUMERIC,
    "text": O.TEXT, "varchar": O.VARCHAR, "character varying": O.VARCHAR, "char": O.BPCHAR,
    "character": O.BPCHAR, "bpchar": O.BPCHAR, "nchar": O.BPCHAR, "name": O.NAME, '"char"': O.CHAR,
    "bool": O.BOOL, "boolean": O.BOOL, "bytea": O.BYTEA, "date": O.DATE, "time": O.TIME,
    "time without time zone": O.TIME, "timestamp": O.TIMESTAMP, "timestamp without time zone": O.TIMESTAMP,
    "timestamptz": O.TIMESTAMPTZ, "timestamp with time zone": O.TIMESTAMPTZ, "interval": O.INTERVAL,
    "uuid": O.UUID, "json": O.JSON, "jsonb": O.JSONB, "oid": O.OID, "regclass": O.REGCLASS,
    "regtype": O.REGTYPE, "regproc": O.REGPROC, "xid": O.XID, "regnamespace": O.REGNAMESPACE, "regrole": O.REGROLE,
    "regprocedure": O.REGPROC, "unknown": O.UNKNOWN, "void": O.VOID,
    "record": O.RECORD, "int2vector": O.INT2VECTOR, "oidvector": O.OIDVECTOR, "datetime": O.TIMESTAMP,
    "tinyint": O.INT2, "string": O.TEXT,
}


def oid_by_name(name: str) -> int | None:
    n = " ".join(name.lower().replace("pg_catalog.", "").split())
    if n.endswith("[]"):
        e = oid_by_name(n[:-2])
        return O.ARRAY_OF.get(e) if e else None
    if n.startswith("_"):
        e = oid_by_name(n[1:])
        return O.ARRAY_OF.get(e) if e else None
    return _ALIASES.get(n)


def type_name(oid: int) -> str:
    return TYPE_NAMES.get(oid, str(oid))


def format_type(oid: int, typmod: int = -1) -> str:
    """PostgreSQL's format_type(oid, typmod)."""
    if oid in O.ELEMENT_OF and oid not in (O.INT2VECTOR, O.OIDVECTOR):
        return format_type(O.ELEMENT_OF[oid], typmod) + "[]"
    base = SQL_NAMES.get(oid, TYPE_NAMES.get(oid, "???"))
    if typmod >= 0:
        if oid in (O.VARCHAR, O.BPCHAR):
            return f"{base}({typmod - 4})"
        if oid == O.NUMERIC:
            p, s = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
            return f"numeric({p},{s})"
        if oid in (O.TIMESTAMP, O.TIMESTAMPTZ, O.TIME):
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
    return oid in O.NUMERIC_TYPES


def is_string(oid: int) -> bool:
    return oid in O.STRING_TYPES


def is_temporal(oid: int) -> bool:
    return oid in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ)


def datetime_values(arr: np.ndarray, oid: int) -> list:
    vals = arr.tolist()
    if oid == O.TIMESTAMPTZ:
        return [v.replace(tzinfo=UTC) if isinstance(v, dt.datetime) else v for v in vals]
    return vals


def _to_dt64(v, oid: int):
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
        return np.datetime64(v, "us") if oid != O.DATE else np.datetime64(v.date(), "D")
    if isinstance(v, dt.date):
        return np.datetime64(v, "D") if oid == O.DATE else np.datetime64(dt.datetime(v.year, v.month, v.day), "us")
    return np.datetime64(v)


def column_from_values(values: list, oid: int) -> "Col":
    """Build a column from Python values (None = NULL)."""
    from .vector import Col

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
        for i, v in enumerate(values):
            if v is not None:
                arr[i] = _to_dt64(v, oid)
        return Col(arr, nulls, oid)
    if anynull:
        fill = False if d.kind == "b" else 0
        values = [fill if v is None else v for v in values]
    try:
        arr = np.array(values, dtype=d)
    except OverflowError:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(oid)} out of range")
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


_INT_RANGE = {O.INT2: (-(2**15), 2**15 - 1), O.INT4: (-(2**31), 2**31 - 1), O.INT8: (-(2**63), 2**63 - 1),
              O.OID: (0, 2**32 - 1)}


def _fits(v: int, oid: int) -> bool:
    lo, hi = _INT_RANGE.get(oid, (-(2**63), 2**63 - 1))
    return lo <= v <= hi


def _range_word(oid: int) -> str:
    return {O.INT2: "smallint", O.INT4: "integer", O.INT8: "bigint"}.get(oid, "value")


def int_literal_oid(v: int) -> int:
    if -(2**31) <= v < 2**31:
        return O.INT4
    if -(2**63) <= v < 2**63:
        return O.INT8
    return O.NUMERIC


# ----------------------------------------------------------- type algebra

_NUM_RANK = {O.INT2: 1, O.INT4: 2, O.INT8: 3, O.OID: 3, O.NUMERIC: 4, O.FLOAT4: 5, O.FLOAT8: 6}


def common_type(a: int, b: int, context: str = "UNION") -> int:
    """The type both operands are coerced to (PostgreSQL's select_common_type)."""
    if a == b:
        return a
    if a == O.UNKNOWN:
        return b if b != O.UNKNOWN else O.TEXT
    if b == O.UNKNOWN:
        return a
    if a in _NUM_RANK and b in _NUM_RANK:
        return a if _NUM_RANK[a] >= _NUM_RANK[b] else b
    if is_string(a) and is_string(b):
        return O.TEXT
    if {a, b} <= {O.DATE, O.TIMESTAMP}:
        return O.TIMESTAMP
    if {a, b} <= {O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ}:
        return O.TIMESTAMPTZ
    if {a, b} == {O.JSON, O.JSONB}:
        return O.JSONB
    raise PgError(DATATYPE_MISMATCH, f"{context} types {type_name(a)} and {type_name(b)} cannot be matched")


def arith_type(op: str, a: int, b: int) -> int:
    """Result type of a binary arithmetic operator, per pg_operator."""
    if a == O.UNKNOWN:
        a = b if b != O.UNKNOWN else O.NUMERIC
    if b == O.UNKNOWN:
        b = a
    if a in _NUM_RANK and b in _NUM_RANK:
        if O.FLOAT8 in (a, b) or O.FLOAT4 in (a, b):
            return O.FLOAT8 if (O.FLOAT8 in (a, b) or O.NUMERIC in (a, b) or a != b) else O.FLOAT4
        if O.NUMERIC in (a, b):
            return O.NUMERIC
        r = max(_NUM_RANK[a], _NUM_RANK[b])
        return {1: O.INT2, 2: O.INT4, 3: O.INT8}[r]
    return -1


# ----------------------------------------------------------------- casts

def _text_in(oid: int, s: str):
    from protocol import types as PT

    return PT.decode_text(oid, s)


def _text_out(oid: int, v) -> str:
    from protocol import types as PT

    r = PT.encode_text(oid, v)
    return r.decode("utf-8") if isinstance(r, bytes) else r


def cast_col(col: "Col", target: int, typmod: int = -1, explicit: bool = True) -> "Col":
    """Convert a whole column, raising PostgreSQL's errors for bad values."""
    from .vector import Col

    src = col.oid
    if src == target and typmod < 0:
        return col
    n = len(col)
    valid = col.valid_mask()
    if target in (O.TEXT, O.VARCHAR, O.BPCHAR, O.NAME) and not is_string(src):
        vals = col.to_pylist()
        out = [None if v is None else (("true" if v else "false") if src == O.BOOL else _text_out(src, v)) for v in vals]
        return _apply_typmod(Col.from_pylist(out, target), typmod, explicit)
    if is_string(src) and not is_string(target) or src == O.UNKNOWN:
        if is_string(target):
            return _apply_typmod(Col(col.data, col.nulls, target), typmod, explicit)
        vals = col.to_pylist()
        out = [None if v is None else _text_in(target, v) for v in vals]
        return _apply_typmod(Col.from_pylist(out, target), typmod, explicit)
    if is_string(src) and is_string(target):
        if src == O.BPCHAR and target != O.BPCHAR:  # bpchar -> text drops the padding
            vals = [None if v is None else str(v).rstrip(" ") for v in col.to_pylist()]
            return _apply_typmod(Col.from_pylist(vals, target), typmod, explicit)
        return _apply_typmod(Col(col.data, col.nulls, target), typmod, explicit)
    tdt = dtype_of(target)
    if src in _NUM_RANK and target in _NUM_RANK:
        return _apply_typmod(_cast_number(col, target), typmod, explicit)
    if src == O.BOOL and target in (O.INT4, O.INT8, O.INT2):
        return Col(col.data.astype(tdt), col.nulls, target)
    if target == O.BOOL and src in (O.INT4, O.INT8, O.INT2):
        return Col(col.data != 0, col.nulls, target)
    if src in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ) and target in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ):
        return Col(col.data.astype(tdt), col.nulls, target)
    if target == O.TIME and src in (O.TIMESTAMP, O.TIMESTAMPTZ):
        out = [None if v is None else v.time().replace(tzinfo=None) for v in col.to_pylist()]
        return Col.from_pylist(out, O.TIME)
    if src in (O.JSON, O.JSONB) and target in (O.JSON, O.JSONB):
        vals = [None if v is None else _text_out(target, _text_in(target, v)) for v in col.to_pylist()]
        return Col.from_pylist(vals, target)
    if src in (O.INT4, O.INT8, O.OID, O.REGCLASS, O.REGTYPE, O.REGNAMESPACE, O.REGROLE, O.REGPROC) and \
            target in (O.REGCLASS, O.REGTYPE, O.OID, O.REGPROC, O.REGNAMESPACE, O.REGROLE):
        return Col(col.data.astype(np.int64), col.nulls, target)
    if src in (O.REGCLASS, O.REGTYPE, O.REGPROC, O.OID) and target in (O.INT4, O.INT8, O.OID, O.REGCLASS, O.REGTYPE):
        return Col(col.data.astype(tdt), col.nulls, target)
    if src in O.ELEMENT_OF and target in O.ELEMENT_OF:
        et = O.ELEMENT_OF[target]
        es = O.ELEMENT_OF[src]
        out = []
        for v in col.to_pylist():
            if v is None:
                out.append(None)
            else:
                c = cast_col(Col.from_pylist(list(v), es), et)
                out.append(c.to_pylist())
        return Col.from_pylist(out, target)
    raise PgError(CANNOT_COERCE, f"cannot cast type {type_name(src)} to {type_name(target)}")


def _cast_number(col: "Col", target: int) -> "Col":
    from .vector import Col

    src = col.oid
    data = col.data
    valid = col.valid_mask()
    if target == O.NUMERIC:
        if src == O.NUMERIC:
            return col
        if src in (O.FLOAT4, O.FLOAT8):
            out = [None if not ok else (decimal.Decimal(repr(float(v))) if math.isfinite(v) else decimal.Decimal("NaN"))
                   for v, ok in zip(data.tolist(), valid.tolist())]
        else:
            out = [decimal.Decimal(int(v)) if ok else None for v, ok in zip(data.tolist(), valid.tolist())]
        return Col.from_pylist(out, O.NUMERIC)
    tdt = dtype_of(target)
    if src == O.NUMERIC:
        vals = data.tolist()
        if target in (O.FLOAT4, O.FLOAT8):
            out = [float(v) if ok else None for v, ok in zip(vals, valid.tolist())]
            return Col.from_pylist(out, target)
        out = []
        for v, ok in zip(vals, valid.tolist()):
            if not ok:
                out.append(None)
                continue
            if v.is_nan():
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"cannot convert NaN to {_range_word(target)}")
            r = int(v.to_integral_value(rounding=decimal.ROUND_HALF_UP))
            if not _fits(r, target):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            out.append(r)
        return Col.from_pylist(out, target)
    if tdt.kind == "i":
        if data.dtype.kind == "f":
            d = np.where(valid, data, 0)
            if not np.all(np.isfinite(d)):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            r = np.rint(d)
            lo, hi = _INT_RANGE[target if target in _INT_RANGE else O.INT8]
            if len(r) and (r.min() < lo or r.max() > hi):
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
            return Col(r.astype(tdt), col.nulls, target)
        lo, hi = _INT_RANGE.get(target, (-(2**63), 2**63 - 1))
        d = data[valid] if col.nulls is not None else data
        if len(d) and (int(d.min()) < lo or int(d.max()) > hi):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_range_word(target)} out of range")
        return Col(data.astype(tdt), col.nulls, target)
    return Col(data.astype(tdt), col.nulls, target)


def _apply_typmod(col: "Col", typmod: int, explicit: bool) -> "Col":
    """varchar(n)/char(n) length and numeric(p,s) rounding."""
    from .vector import Col

    if typmod < 0:
        return col
    if col.oid in (O.VARCHAR, O.BPCHAR):
        return _apply_length(col, typmod - 4, explicit, typmod)
    if col.oid == O.NUMERIC:
        p, s = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
        q = decimal.Decimal(1).scaleb(-s)
        limit = decimal.Decimal(10) ** (p - s)
        vals = col.data.tolist()
        nulls = col.nulls
        ctx = decimal.Context(prec=max(p + 2, 40), rounding=decimal.ROUND_HALF_UP)
        zero = decimal.Decimal(0)
        out = [zero if v is None or not v.is_finite() else v.quantize(q, context=ctx) for v in vals]
        if out and max(map(abs, out)) >= limit:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                          detail=f"A field with precision {p}, scale {s} must round to an absolute value less than 10^{p - s}.")
        for i, v in enumerate(vals):
            if v is not None and not v.is_finite():
                out[i] = v
        arr = np.empty(len(out), dtype=object)
        arr[:] = out
        if nulls is not None:
            arr[nulls] = None
        return Col(arr, nulls, O.NUMERIC)
    return col


def _apply_length(col: "Col", n: int, explicit: bool, typmod: int) -> "Col":
    """varchar(n) / char(n): check or truncate, and blank-pad char(n).

    Work per value is a len() call; only values that need changing are
    touched individually."""
    from .vector import Col

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
    if col.oid == O.BPCHAR:
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
    if src == dst or src == O.UNKNOWN:
        return True
    if src in _NUM_RANK and dst in _NUM_RANK:
        return True
    if is_string(src) and is_string(dst):
        return True
    if src in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ) and dst in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ):
        return True
    if {src, dst} <= {O.JSON, O.JSONB}:
        return True
    return False
