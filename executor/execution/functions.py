"""Scalar functions, registered by name with a result-type rule.

Most functions are written element-wise over Python values (correct first);
hot arithmetic ones have vectorised bodies.  ``lookup(name, arg_oids)``
returns ``(impl, result_oid, coerced_arg_oids)``.
"""
from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import math
import re
import uuid
from typing import Callable

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, NUMERIC_VALUE_OUT_OF_RANGE, PROGRAM_LIMIT_EXCEEDED, PgError, DIVISION_BY_ZERO,
)
from splitstream.protocol.types import Interval, encode_text_column

from . import clock, numeric_math, signatures
from .signatures import Signature
from .keywords import QUOTED_KEYWORDS
from .encodings import encoding_name, encoding_number
import calendar
import json

from .privilege_functions import register_privilege_functions
from .privileges import shown_current_user
from .refused import REFUSED
from .regnames import REG_OUTPUT, reg_names


Impl = Callable[[list[Col], int, object], Col]


class FuncDef:
    """One entry of the function catalog (pg_proc's row, with its body).

    ``sigs``: the overloads, resolved by PostgreSQL's rules
    (:mod:`signatures`); without them, ``result`` (a function of the argument
    OIDs) and ``arg_types`` (OIDs the arguments are coerced to, a list or a
    function of the argument OIDs, or None to keep them) decide, and the
    function is listed as taking ``"any"``."""

    def __init__(self, name: str, impl: Impl, result: Callable[[list[int]], int], arg_types: Callable | list | None,
                 volatile: bool = False, strict: bool = True, sigs: list[Signature] | None = None,
                 kind: str = "f", values: Callable | None = None) -> None:
        self.name, self.impl, self.result, self.arg_types, self.volatile = name, impl, result, arg_types, volatile
        self.strict, self.sigs, self.kind, self.values = strict, sigs, kind, values

    def impl_for(self, result_oid: int) -> Impl:
        """The column function for a call resolved to ``result_oid``: a
        function of Python values builds its result column of that type."""
        if self.values is not None:
            return elementwise(self.values, result_oid, self.strict)
        return self.impl


REGISTRY: dict[str, FuncDef] = {}


def _signatures(result, args, sigs: str | None) -> list[Signature] | None:
    if sigs is not None:
        return signatures.parse(sigs)
    if isinstance(args, list) and isinstance(result, int):
        return [Signature(tuple(args), result)]
    return None


def register(name: str, result=None, args=None, volatile: bool = False, *, sigs: str | None = None, strict: bool = True):
    """``sigs``: the overloads as text (``"text -> text | text, text -> text"``);
    else ``result``: an OID, or a function of the argument OIDs, and ``args``:
    OIDs the arguments are coerced to (list or function), or None to keep them."""

    def deco(fn: Impl) -> Impl:
        res = result if callable(result) else (lambda _a, r=result: r)
        for n in name.split("|"):
            REGISTRY[n] = FuncDef(n, fn, res, args, volatile, strict, _signatures(result, args, sigs))
        return fn

    return deco


def elementwise(fn: Callable, oid: int, strict: bool = True) -> Impl:
    """Lift a Python function of values to a column function (``oid`` 0: the
    result has the first argument's type)."""

    def impl(cols: list[Col], n: int, ctx) -> Col:
        lists = [c.to_pylist() for c in cols]
        out: list[object] = []
        for i in range(n):
            args = [column[i] for column in lists]
            if strict and any(a is None for a in args):
                out.append(None)
            else:
                out.append(fn(*args))
        return Col.from_pylist(out, oid or (cols[0].oid if cols else type_oids.TEXT))

    return impl


def scalar(name: str, result: int | None = None, args=None, strict: bool = True, volatile: bool = False,
           *, sigs: str | None = None):
    """Register a function of Python values; with ``sigs``, its result
    column takes each call's resolved result type."""

    def deco(fn):
        impl = elementwise(fn, result or 0, strict)
        parsed = _signatures(result, args, sigs)
        for n in name.split("|"):
            REGISTRY[n] = FuncDef(n, impl, (lambda _a, r=result: r), args, volatile, strict, parsed, values=fn)
        return fn

    return deco


def _same(a: list[int]) -> int:
    return a[0] if a else type_oids.UNKNOWN


# ------------------------------------------------------------ strings

# LC_CTYPE is C (as splitstream reports it): only ASCII letters change case, as in PostgreSQL
_ASCII_UPPER: dict[int, int] = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_LOWER: dict[int, int] = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
scalar("lower", sigs="text -> text")(lambda s: s.translate(_ASCII_LOWER))
scalar("upper", sigs="text -> text")(lambda s: s.translate(_ASCII_UPPER))
scalar("length", sigs="text -> int4 | bytea -> int4")(lambda s: len(s))
scalar("char_length|character_length", sigs="text -> int4")(lambda s: len(s))
scalar("octet_length", sigs="text -> int4 | bytea -> int4")(lambda s: len(s.encode()) if isinstance(s, str) else len(s))
scalar("bit_length", sigs="text -> int4")(lambda s: 8 * len(s.encode()))
scalar("reverse", sigs="text -> text")(lambda s: s[::-1])
scalar("initcap", sigs="text -> text")(lambda s: re.sub(r"[A-Za-z0-9]+", lambda m: m.group(0).capitalize(), s))
scalar("md5", sigs="text -> text | bytea -> text")(lambda s: hashlib.md5(s.encode() if isinstance(s, str) else s).hexdigest())
scalar("ascii", sigs="text -> int4")(lambda s: ord(s[0]) if s else 0)


def _chr(i: int) -> str:
    """chr() in a UTF8 database: code points 1 .. 0x10FFFF, no surrogates."""
    if i < 0:
        raise PgError(INVALID_PARAMETER_VALUE, "character number must be positive")
    if i == 0:
        raise PgError(PROGRAM_LIMIT_EXCEEDED, "null character not permitted")
    if i > 0x10FFFF:
        raise PgError(PROGRAM_LIMIT_EXCEEDED, f"requested character too large for encoding: {i}")
    if 0xD800 <= i <= 0xDFFF:
        raise PgError(PROGRAM_LIMIT_EXCEEDED, f"requested character not valid for encoding: {i}")
    return chr(i)


scalar("chr", type_oids.TEXT, [type_oids.INT4])(_chr)
scalar("repeat", type_oids.TEXT, [type_oids.TEXT, type_oids.INT4])(lambda s, k: s * max(k, 0))
scalar("strpos", type_oids.INT4, [type_oids.TEXT, type_oids.TEXT])(lambda s, t: s.find(t) + 1)
scalar("left", type_oids.TEXT, [type_oids.TEXT, type_oids.INT4])(lambda s, k: s[:k] if k >= 0 else s[:k])
scalar("right", type_oids.TEXT, [type_oids.TEXT, type_oids.INT4])(lambda s, k: (s[-k:] if k > 0 else "") if k >= 0 else s[-k:])
scalar("replace", type_oids.TEXT, [type_oids.TEXT, type_oids.TEXT, type_oids.TEXT])(lambda s, a, b: s.replace(a, b) if a else s)
scalar("translate", type_oids.TEXT, [type_oids.TEXT, type_oids.TEXT, type_oids.TEXT])(
    lambda s, a, b: "".join((b[a.index(ch)] if a.index(ch) < len(b) else "") if ch in a else ch for ch in s))
def quote_ident(s: str) -> str:
    """quote_identifier: plain lower-case names that are no keyword stay bare."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", s) and s not in QUOTED_KEYWORDS:
        return s
    return '"' + s.replace('"', '""') + '"'


def quote_literal(s: str) -> str:
    """Doubled quotes, and E'' with doubled backslashes when there are any."""
    body = s.replace("'", "''")
    return "E'" + body.replace("\\", "\\\\") + "'" if "\\" in s else "'" + body + "'"


scalar("quote_ident", sigs="text -> text")(quote_ident)
scalar("quote_literal", sigs="text -> text")(quote_literal)
scalar("quote_nullable", sigs="text -> text", strict=False)(lambda s: "NULL" if s is None else quote_literal(s))


@register("to_hex", sigs="int4 -> text | int8 -> text")
def _to_hex(cols, n, ctx):
    """to_hex(int4) prints a negative value's 32-bit two's complement,
    to_hex(int8) its 64-bit one (to_hex(-1) is ffffffff); to_hex(int2) is
    ambiguous, as in PostgreSQL."""
    mask = 0xFFFFFFFF if cols[0].oid == type_oids.INT4 else 0xFFFFFFFFFFFFFFFF
    return Col.from_pylist([None if i is None else format(i & mask, "x") for i in cols[0].to_pylist()],
                           type_oids.TEXT)


def _split_part(s, d, k):
    if k == 0:
        raise PgError(INVALID_PARAMETER_VALUE, "field position must not be zero")
    parts = s.split(d) if d else [s]
    if k < 0:
        k = len(parts) + k + 1
    return parts[k - 1] if 1 <= k <= len(parts) else ""


scalar("split_part", type_oids.TEXT, [type_oids.TEXT, type_oids.TEXT, type_oids.INT4])(_split_part)


def _pad(s, n, fill=" ", left=True):
    if n <= 0:
        return ""
    if n <= len(s):
        return s[:n]
    if not fill:
        return s
    pad = (fill * (n // len(fill) + 1))[: n - len(s)]
    return pad + s if left else s + pad


scalar("lpad", sigs="text, int4 -> text | text, int4, text -> text")(lambda s, n, f=" ": _pad(s, n, f, True))
scalar("rpad", sigs="text, int4 -> text | text, int4, text -> text")(lambda s, n, f=" ": _pad(s, n, f, False))


def _trim(kind):
    def f(s, chars=" "):
        if kind == "b":
            return s.strip(chars)
        return s.lstrip(chars) if kind == "l" else s.rstrip(chars)

    return f


scalar("btrim", sigs="text -> text | text, text -> text")(_trim("b"))
scalar("ltrim", sigs="text -> text | text, text -> text")(_trim("l"))
scalar("rtrim", sigs="text -> text | text, text -> text")(_trim("r"))


def _substr(s, start, length=None):
    if length is not None and length < 0:
        raise PgError("22011", "negative substring length not allowed")
    b = start - 1
    e = None if length is None else b + length
    b = max(b, 0)
    if e is not None and e < 0:
        return ""
    return s[b:e]


_substr_rows = elementwise(_substr, type_oids.TEXT)


@register("substr|substring", sigs="text, int4 -> text | text, int4, int4 -> text")
def _substr_col(cols: list[Col], n: int, ctx) -> Col:
    """substring(s FROM a FOR b) with constant bounds (TPC-H Q22's phone
    prefixes) is one slice per string with the bounds worked out once (the
    generic value-by-value lift costs several times that); other calls go
    value by value."""
    bounds = [_same_int(c) for c in cols[1:]]
    s = cols[0]
    start = bounds[0]
    length = bounds[1] if len(bounds) == 2 else None
    if n < 64 or s.data.dtype != object or start is None or (len(bounds) == 2 and (length is None or length < 0)):
        return _substr_rows(cols, n, ctx)
    b = start - 1
    e = None if length is None else b + length
    out = np.empty(n, dtype=object)
    if e is not None and e <= 0:
        out[:] = ""
    elif s.nulls is None:
        b = max(b, 0)
        out[:] = [v[b:e] for v in s.data.tolist()]
    else:
        b = max(b, 0)
        out[:] = ""
        valid = ~s.nulls
        out[valid] = [v[b:e] for v in s.data[valid].tolist()]
    return Col(out, s.nulls, type_oids.TEXT)


def _same_int(c: Col) -> int | None:
    """The one value of a column that holds a single non-NULL integer in every row, else None."""
    d = c.data
    if c.nulls is not None or d.dtype.kind not in "iu" or not len(d) or d.min() != d.max():
        return None
    return int(d[0])


def output_texts(c: Col, ctx) -> list:
    """A column's values as its type's output function prints them in the
    session (concat's and format's rule): bool is t/f where the cast to
    text says true/false, a timestamptz is shown in the session's TimeZone."""
    if sqltypes.is_string(c.oid):
        return c.to_pylist()
    if c.oid in REG_OUTPUT and ctx is not None:          # regclass & co. print names
        return reg_names(c, ctx).to_pylist()
    tz = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
    digits = int(ctx.setting("extra_float_digits", "1")) if ctx is not None else 1
    return [None if v is None else v.decode()
            for v in encode_text_column(c.oid, c.data, c.nulls, tz=tz, float_digits=digits)]


@register("concat", sigs="variadic any -> text", strict=False)
def _concat(cols, n, ctx):
    lists = [output_texts(c, ctx) for c in cols]
    return Col.from_pylist(["".join(column[i] for column in lists if column[i] is not None) for i in range(n)], type_oids.TEXT)


@register("concat_ws", sigs="text, variadic any -> text", strict=False)
def _concat_ws(cols, n, ctx):
    lists = [output_texts(c, ctx) for c in cols]
    out = []
    for i in range(n):
        sep = lists[0][i]
        out.append(None if sep is None else sep.join(column[i] for column in lists[1:] if column[i] is not None))
    return Col.from_pylist(out, type_oids.TEXT)




scalar("starts_with", sigs="text, text -> bool")(lambda s, p: s.startswith(p))


def _format_type(o: int | None, m: int | None) -> str | None:
    """format_type(oid, typmod): '-' for no type; a typmod the type does not
    interpret is shown in parentheses, as PostgreSQL's printTypmod does."""
    if o is None:
        return None
    if o == 0:
        return "-"
    text = sqltypes.format_type(o, -1 if m is None else m)
    if m is not None and m >= 0 and text == sqltypes.format_type(o) and text != "???" and o not in _PLAIN_SQL_NAMES:
        text += f"({m})"
    return text


#: types format_type names by SQL keyword, ignoring any typmod (format_type.c)
_PLAIN_SQL_NAMES = frozenset({type_oids.BOOL, type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4,
                              type_oids.FLOAT8})


scalar("format_type", type_oids.TEXT, [type_oids.OID, type_oids.INT4], strict=False)(_format_type)


def string_to_array(s, d, null_string=None):
    """NULL delimiter: one element per character; empty delimiter: the whole
    string; an empty string: the empty array; elements equal to
    ``null_string`` are NULL."""
    if s is None:
        return None
    if s == "":
        return []
    parts = list(s) if d is None else ([s] if d == "" else s.split(d))
    return [None if null_string is not None and p == null_string else p for p in parts]


scalar("string_to_array", sigs="text, text -> text[] | text, text, text -> text[]", strict=False)(string_to_array)
scalar("gen_random_uuid|uuid_generate_v4", type_oids.UUID, [], volatile=True)(lambda: uuid.uuid4())


# ------------------------------------------------------------ math

_FLOAT_OR_NUMERIC = "float8 -> float8 | numeric -> numeric"


@register("abs", sigs="int2 -> int2 | int4 -> int4 | int8 -> int8 | float4 -> float4 | float8 -> float8 | numeric -> numeric")
def _abs(cols, n, ctx):
    c = cols[0]
    if c.data.dtype == object:
        # copy_abs: exact (abs() rounds a Decimal to the context's 28 digits)
        return Col(np.array([None if v is None else v.copy_abs() if isinstance(v, decimal.Decimal) else abs(v)
                             for v in c.data], dtype=object), c.nulls, c.oid)
    low = _INT_MIN.get(c.oid)
    if low is not None and bool(((c.data == low) & c.valid_mask()).any()):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_INT_NAME[c.oid]} out of range")     # -(minimum) does not fit, as in PostgreSQL
    return Col(np.abs(c.data), c.nulls, c.oid)


_INT_MIN = {type_oids.INT2: -(1 << 15), type_oids.INT4: -(1 << 31), type_oids.INT8: -(1 << 63)}
_INT_NAME = {type_oids.INT2: "smallint", type_oids.INT4: "integer", type_oids.INT8: "bigint"}


def _math1(fn_np, fn_dec, domain=None, check=None):
    """A one-argument math function; ``check(inputs, results)`` raises
    PostgreSQL's errors for float8 (out-of-range input, overflow)."""

    def impl(cols, n, ctx):
        c = cols[0]
        if c.oid == type_oids.NUMERIC:
            out = []
            for v in c.to_pylist():
                if v is None:
                    out.append(None)
                elif v.is_nan():
                    out.append(v)               # NaN in, NaN out (and Decimal refuses to order it)
                else:
                    if domain:
                        domain(v)
                    out.append(fn_dec(v))
            return Col.from_pylist(out, type_oids.NUMERIC)
        d = c.data.astype(np.float64)
        if domain:
            for v in d[c.valid_mask()]:
                domain(v)
        with np.errstate(all="ignore"):
            r = fn_np(d)
        if check is not None:
            live = c.valid_mask()
            check(d[live], r[live])
        return Col(r, c.nulls, type_oids.FLOAT8)

    return impl


def _input_in(low: float, high: float):
    """dacos, dasin, dsin ...: an infinite input, or one outside [low, high],
    is 22003 (NaN passes)."""

    def check(d, r):
        if np.any((d < low) | (d > high) | np.isinf(d)):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "input is out of range")

    return check


def _no_overflow(underflow: bool):
    """float8 results: infinite from a finite input is an overflow; with
    ``underflow``, zero from a finite non-zero input too (dexp, float8_mul)."""

    def check(d, r):
        fin = np.isfinite(d)
        if np.any(fin & np.isinf(r)):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
        if underflow and np.any(fin & (d != 0) & (r == 0)):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")

    return check


def _ln_domain(v):
    if v == 0:
        raise PgError("2201E", "cannot take logarithm of zero")
    if v < 0:
        raise PgError("2201E", "cannot take logarithm of a negative number")


def _sqrt_domain(v):
    if v < 0:
        raise PgError("2201F", "cannot take square root of a negative number")


_DC = decimal.Context(prec=40)


def _numeric_sqrt(v: decimal.Decimal) -> decimal.Decimal:
    """PostgreSQL's numeric_sqrt: at least 16 significant digits, never fewer decimals than the input."""
    if v.is_infinite():
        return v
    weight = v.adjusted() // 4 if v != 0 else 0           # base-10000 digits, as NumericVar.weight
    rscale = min(max(16 - (2 * (weight + 1) - 1), -int(v.as_tuple().exponent), 0), 1000)
    ctx = decimal.Context(prec=rscale + max(v.adjusted(), 0) + 30, Emax=999999, Emin=-999999)
    return ctx.sqrt(v).quantize(decimal.Decimal(1).scaleb(-rscale), rounding=decimal.ROUND_HALF_UP, context=ctx)


def _log10(v: decimal.Decimal) -> decimal.Decimal:
    """log(numeric) and log10(numeric): log(10, x)."""
    return numeric_math.numeric_log(decimal.Decimal(10), v)


register("sqrt", sigs=_FLOAT_OR_NUMERIC)(_math1(np.sqrt, _numeric_sqrt, _sqrt_domain))
register("exp", sigs=_FLOAT_OR_NUMERIC)(_math1(np.exp, numeric_math.numeric_exp, check=_no_overflow(True)))
register("ln", sigs=_FLOAT_OR_NUMERIC)(_math1(np.log, numeric_math.numeric_ln, _ln_domain))
register("log10", sigs=_FLOAT_OR_NUMERIC)(_math1(np.log10, _log10, _ln_domain))
def _libm_cbrt(d: np.ndarray) -> np.ndarray:
    """The C library's cbrt, as PostgreSQL's dcbrt calls it (numpy's differs in the last bit)."""
    return np.fromiter((math.cbrt(v) for v in d.tolist()), np.float64, len(d))


register("cbrt", type_oids.FLOAT8, [type_oids.FLOAT8])(_math1(_libm_cbrt, None))
_ANY_FINITE, _UNIT = _input_in(-np.inf, np.inf), _input_in(-1.0, 1.0)
for _n, _f, _check in (("sin", np.sin, _ANY_FINITE), ("cos", np.cos, _ANY_FINITE), ("tan", np.tan, _ANY_FINITE),
                       ("asin", np.arcsin, _UNIT), ("acos", np.arccos, _UNIT), ("atan", np.arctan, None),
                       ("degrees", np.degrees, _no_overflow(False)), ("radians", np.radians, _no_overflow(True))):
    register(_n, type_oids.FLOAT8, [type_oids.FLOAT8])(_math1(_f, None, check=_check))
scalar("pi", type_oids.FLOAT8, [])(lambda: math.pi)
scalar("atan2", type_oids.FLOAT8, [type_oids.FLOAT8, type_oids.FLOAT8])(math.atan2)


@register("log", sigs=_FLOAT_OR_NUMERIC + " | numeric, numeric -> numeric")
def _log(cols, n, ctx):
    if len(cols) == 1:
        return _math1(np.log10, _log10, _ln_domain)(cols, n, ctx)
    b, x = cols
    out = []
    for bv, xv in zip(b.to_pylist(), x.to_pylist()):
        if bv is None or xv is None:
            out.append(None)
        elif b.oid == type_oids.NUMERIC and (bv.is_nan() or xv.is_nan()):
            out.append(decimal.Decimal("NaN"))
        else:
            if b.oid == type_oids.NUMERIC:
                out.append(numeric_math.numeric_log(decimal.Decimal(bv), decimal.Decimal(xv)))
                continue
            _ln_domain(bv)
            _ln_domain(xv)
            out.append(math.log(xv, bv))
    return Col.from_pylist(out, b.oid if b.oid == type_oids.NUMERIC else type_oids.FLOAT8)


def _power(x, y):
    if isinstance(x, decimal.Decimal) or isinstance(y, decimal.Decimal):
        return numeric_math.power(decimal.Decimal(x), decimal.Decimal(y))
    if x == 0 and y < 0:
        raise PgError("2201F", "zero raised to a negative power is undefined")
    if x < 0 and y != int(y):
        raise PgError("2201F", "a negative number raised to a non-integer power yields a complex result")
    try:
        r = math.pow(x, y)
    except OverflowError:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None
    if r == 0 and x != 0 and math.isfinite(x) and math.isfinite(y):     # dpow's underflow
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")
    return r


scalar("power|pow", sigs="float8, float8 -> float8 | numeric, numeric -> numeric")(_power)


#: precision for rounding any numeric (131072 digits before the point, 16383 after)
_WIDE = decimal.Context(prec=150000, Emax=999999, Emin=-999999)


def _round_dec(v: decimal.Decimal, s: int = 0, rounding: str = decimal.ROUND_HALF_UP) -> decimal.Decimal:
    if not v.is_finite():
        return v
    if s >= 0:
        return v.quantize(decimal.Decimal(1).scaleb(-s), rounding=rounding, context=_WIDE)
    return v.scaleb(s, _WIDE).quantize(decimal.Decimal(1), rounding=rounding, context=_WIDE).scaleb(-s, _WIDE)


def _trunc_dec(v: decimal.Decimal, s: int = 0) -> decimal.Decimal:
    return _round_dec(v, s, decimal.ROUND_DOWN)


def _rounder(dec_fn, np_fn):
    def impl(cols, n, ctx):
        c = cols[0]
        if c.oid == type_oids.NUMERIC or len(cols) > 1:
            c = sqltypes.cast_col(c, type_oids.NUMERIC)
            scale = cols[1].to_pylist() if len(cols) > 1 else [0] * n
            out = [None if v is None or s is None else dec_fn(v, s) for v, s in zip(c.to_pylist(), scale)]
            return Col.from_pylist(out, type_oids.NUMERIC)
        with np.errstate(all="ignore"):
            return Col(np_fn(c.data.astype(np.float64)), c.nulls, type_oids.FLOAT8)

    return impl


register("round", sigs=_FLOAT_OR_NUMERIC + " | numeric, int4 -> numeric")(_rounder(_round_dec, np.rint))
register("trunc", sigs=_FLOAT_OR_NUMERIC + " | numeric, int4 -> numeric")(_rounder(_trunc_dec, np.trunc))


def _ceilfloor(np_fn, rounding):
    def impl(cols, n, ctx):
        c = cols[0]
        if c.oid == type_oids.NUMERIC:
            out = [None if v is None else v.to_integral_value(rounding=rounding) for v in c.to_pylist()]
            return Col.from_pylist(out, type_oids.NUMERIC)
        return Col(np_fn(c.data.astype(np.float64)), c.nulls, type_oids.FLOAT8)

    return impl


register("ceil|ceiling", sigs=_FLOAT_OR_NUMERIC)(_ceilfloor(np.ceil, decimal.ROUND_CEILING))
register("floor", sigs=_FLOAT_OR_NUMERIC)(_ceilfloor(np.floor, decimal.ROUND_FLOOR))


@register("sign", sigs=_FLOAT_OR_NUMERIC)
def _sign(cols, n, ctx):
    c = cols[0]
    if c.oid == type_oids.NUMERIC:
        return Col.from_pylist([None if v is None else v if v.is_nan() else decimal.Decimal((v > 0) - (v < 0))
                                for v in c.to_pylist()], type_oids.NUMERIC)
    r = np.sign(c.data).astype(np.float64)
    return Col(np.where(np.isnan(r), 0.0, r), c.nulls, type_oids.FLOAT8)    # PostgreSQL: sign(NaN) = 0



def _mod(x, y):
    if isinstance(x, decimal.Decimal) and (x.is_nan() or y.is_nan()):
        return decimal.Decimal("NaN")
    if y == 0:
        raise PgError(DIVISION_BY_ZERO, "division by zero")
    if isinstance(x, decimal.Decimal) or isinstance(y, decimal.Decimal):
        x, y = decimal.Decimal(x), decimal.Decimal(y)
        if x.is_infinite() or y.is_infinite():      # numeric_mod: inf % y is NaN, x % inf is x
            return decimal.Decimal("NaN") if x.is_infinite() else x
        return _WIDE.remainder(x, y)
    r = abs(x) % abs(y)
    return -r if x < 0 else r


register("mod", sigs="int2, int2 -> int2 | int4, int4 -> int4 | int8, int8 -> int8 | numeric, numeric -> numeric")(
    lambda cols, n, ctx: elementwise(_mod, sqltypes.arith_type("%", cols[0].oid, cols[1].oid))(cols, n, ctx))


@register("random", type_oids.FLOAT8, [], volatile=True)
def _random(cols, n, ctx):
    return Col(np.random.random(n), None, type_oids.FLOAT8)


def _greatest_least(pick):
    def impl(cols, n, ctx):
        oid = cols[0].oid
        lists = [c.to_pylist() for c in cols]
        out = []
        for i in range(n):
            vals = [column[i] for column in lists if column[i] is not None]
            out.append(pick(vals, key=_nan_above) if vals else None)
        return Col.from_pylist(out, oid)

    return impl


def _nan_above(v):
    """PostgreSQL's order for greatest/least: NaN (float or numeric) above every number."""
    if (isinstance(v, float) and v != v) or (isinstance(v, decimal.Decimal) and v.is_nan()):
        return (True, 0)
    return (False, v)


register("greatest", _same, lambda a: [_common(a)] * len(a))(_greatest_least(max))
register("least", _same, lambda a: [_common(a)] * len(a))(_greatest_least(min))


def _common(oids: list[int]) -> int:
    t = oids[0]
    for o in oids[1:]:
        t = sqltypes.common_type(t, o)
    return t if t != type_oids.UNKNOWN else type_oids.TEXT


# ------------------------------------------------------------ date/time

def _now(cols, n, ctx):
    return Col.const(ctx.now, type_oids.TIMESTAMPTZ, n)


register("now|transaction_timestamp|statement_timestamp", type_oids.TIMESTAMPTZ, [])(_now)
register("clock_timestamp", type_oids.TIMESTAMPTZ, [], volatile=True)(
    lambda cols, n, ctx: Col.const(clock.now(), type_oids.TIMESTAMPTZ, n))
register("current_week", type_oids.INT4, [])(
    lambda cols, n, ctx: Col.const(ctx.now.isocalendar()[1], type_oids.INT4, n))  # AIM benchmark helper

def age_fields(a, b=None):
    """PostgreSQL's age(): field-wise difference, borrowing days from the
    month of the earlier argument (timestamp_age in timestamp.c)."""


    if b is None:
        b = a
        a = dt.datetime.now(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        if b.tzinfo is None:
            a = a.replace(tzinfo=None)
    if isinstance(a, dt.date) and not isinstance(a, dt.datetime):
        a = dt.datetime(a.year, a.month, a.day)
    if isinstance(b, dt.date) and not isinstance(b, dt.datetime):
        b = dt.datetime(b.year, b.month, b.day)
    sign = 1
    if a < b:
        a, b, sign = b, a, -1
    us = (a.hour * 3600 + a.minute * 60 + a.second) * 1000000 + a.microsecond \
        - ((b.hour * 3600 + b.minute * 60 + b.second) * 1000000 + b.microsecond)
    days = a.day - b.day
    months = a.month - b.month
    years = a.year - b.year
    if us < 0:
        us += 86400 * 1000000
        days -= 1
    if days < 0:
        days += calendar.monthrange(b.year, b.month)[1]
        months -= 1
    if months < 0:
        months += 12
        years -= 1
    return Interval(sign * (years * 12 + months), sign * days, sign * us)









# ------------------------------------------------------------ misc / system


scalar("version", type_oids.TEXT, [])(lambda: "PostgreSQL 15.0 (splitstream 0.1.0) on x86_64-pc-linux-gnu, compiled by Python, 64-bit")
register("current_database|current_catalog", type_oids.NAME, [])(lambda cols, n, ctx: Col.const(ctx.session.database, type_oids.NAME, n))
register("current_user|user|current_role|getpgusername", type_oids.NAME, [])(
    lambda cols, n, ctx: Col.const(shown_current_user(ctx.session), type_oids.NAME, n))
register("session_user", type_oids.NAME, [])(lambda cols, n, ctx: Col.const(ctx.session.user, type_oids.NAME, n))
register("pg_backend_pid", type_oids.INT4, [])(lambda cols, n, ctx: Col.const(ctx.session.pid, type_oids.INT4, n))
register("inet_server_port", type_oids.INT4, [])(lambda cols, n, ctx: Col.const(int(ctx.setting("port", "5433")), type_oids.INT4, n))
register("inet_server_addr|inet_client_addr", type_oids.TEXT, [])(lambda cols, n, ctx: Col.const("127.0.0.1", type_oids.TEXT, n))
register("pg_postmaster_start_time", type_oids.TIMESTAMPTZ, [])(lambda cols, n, ctx: Col.const(ctx.now, type_oids.TIMESTAMPTZ, n))
scalar("pg_encoding_to_char", type_oids.NAME, [type_oids.INT4])(encoding_name)
scalar("pg_char_to_encoding", type_oids.INT4, [type_oids.TEXT])(encoding_number)
scalar("pg_type_is_visible", type_oids.BOOL, [type_oids.OID])(lambda o: True)
register_privilege_functions(register)
scalar("pg_get_userbyid", type_oids.NAME, [type_oids.OID])(lambda o: "postgres")


#: pg_size_pretty's units: name, limit below which it is used, half-rounded, bits of its unit
_SIZE_UNITS = (("bytes", 10 * 1024, False, 0), ("kB", 20 * 1024 - 1, True, 10), ("MB", 20 * 1024 - 1, True, 20),
               ("GB", 20 * 1024 - 1, True, 30), ("TB", 20 * 1024 - 1, True, 40), ("PB", 20 * 1024 - 1, True, 50))


def _c_div(a: int, b: int) -> int:
    """C's integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _size_pretty(size: int) -> str:
    """PostgreSQL 15's pg_size_pretty(bigint), unit by unit with its rounding."""
    for k, (name, limit, half, bits) in enumerate(_SIZE_UNITS):
        last = k + 1 == len(_SIZE_UNITS)
        if last or abs(size) < limit:
            if half:
                size = _c_div(size + (-1 if size < 0 else 1), 2)
            return f"{size} {name}"
        nxt = _SIZE_UNITS[k + 1]
        shift = nxt[3] - bits - (1 if nxt[2] else 0) + (1 if half else 0)
        size = _c_div(size, 1 << shift)
    raise AssertionError("unreachable")


scalar("pg_size_pretty", type_oids.TEXT, [type_oids.INT8])(_size_pretty)
scalar("pg_is_in_recovery", type_oids.BOOL, [])(lambda: False)
scalar("pg_relation_is_publishable", sigs="regclass -> bool", strict=False)(lambda o: False)
scalar("pg_partition_root", sigs="regclass -> regclass")(lambda o: None)
scalar("txid_current|pg_current_xact_id", type_oids.INT8, [])(lambda: 1000)
scalar("pg_tablespace_location", sigs="oid -> text")(lambda o: "")
# (the binder makes every call: a whole row's object, sql/binder.whole_row_json; these are pg_proc's entries)
scalar("row_to_json", sigs="record -> json | record, bool -> json")(lambda v, pretty=False: _to_json(v))
scalar("json_typeof", sigs="json -> text")(lambda j: _json_typeof(j))
scalar("jsonb_typeof", sigs="jsonb -> text")(lambda j: _json_typeof(j))


def _jload(j):
    return json.loads(j) if isinstance(j, str) else j


def _to_json(v):
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float, decimal.Decimal)):
        return str(v)
    if isinstance(v, list):
        return "[" + ",".join(_to_json(x) for x in v) + "]"
    if isinstance(v, (dt.datetime, dt.date)):
        return json.dumps(v.isoformat())
    return json.dumps(str(v))


def _json_typeof(j):
    v = _jload(j)
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(v), "number")


def _pg_typeof(cols, n, ctx):
    """pg_typeof(any): the argument's type as regtype (printed by name)."""
    return Col(np.full(n, cols[0].oid, dtype=np.int64), None, type_oids.REGTYPE)


register("pg_typeof", sigs="any -> regtype", strict=False)(_pg_typeof)


def lookup(name: str, arg_oids: list[int]) -> FuncDef:
    """The catalog entry of ``name`` (as the user wrote it, folded), or 42883
    naming the call's argument types as PostgreSQL does."""
    fd = REGISTRY.get(name.lower())
    if fd is None:
        if name.lower() in NOT_IMPLEMENTED:
            raise PgError(FEATURE_NOT_SUPPORTED, f"function {name.lower()}() is not supported",
                          hint=NOT_IMPLEMENTED[name.lower()])
        raise signatures.undefined(name, arg_oids)
    return fd


#: PostgreSQL 15 functions of the documented chapters that splitstream refuses (0A000 naming them)
NOT_IMPLEMENTED = {
    "to_number": "splitstream does not implement to_number yet; cast the text: '12.5'::numeric.",
    "topk": "topk(sketch) returns a set: call it in FROM (SELECT * FROM topk((SELECT t FROM v))) or as a "
            "select-list item (one record per value), or use topk_values(t) and topk_freqs(t) (docs/sketches.md).",
    **REFUSED,
    "output_of": "output_of('view') is a stream: read it in the FROM clause of a continuous view "
                 "(CREATE VIEW v2 AS SELECT ... FROM output_of('v')).",
}


def resolve(name: str, arg_oids: list[int]) -> tuple[FuncDef, list[int] | None, int]:
    """A call bound to the catalog: the entry, the types its arguments are
    coerced to (None: keep them), and the result type (0: the first
    argument's).  Declared overloads are chosen by PostgreSQL's rules."""
    fd = lookup(name, arg_oids)
    if fd.sigs is not None:
        expanded, result = signatures.select(name, fd.sigs, arg_oids)
        return fd, list(expanded), result
    want = fd.arg_types(arg_oids) if callable(fd.arg_types) else fd.arg_types
    return fd, (list(want) if want is not None else None), -1
