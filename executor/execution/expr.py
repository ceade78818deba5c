"""Bound expressions, evaluated a whole column at a time.

The planner turns sqlglot trees into these nodes once; execution calls
``eval(batch, ctx)`` and gets a :class:`Col`.  NULL handling follows SQL's
three-valued logic: strict operators propagate the union of their inputs'
null masks, AND/OR use Kleene logic.
"""
from __future__ import annotations

import decimal
import re
import weakref
from typing import Any, Callable

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col, FixedCol, TakenCol
from splitstream.protocol import oids as type_oids
from splitstream.protocol.types import Interval
from splitstream.protocol.composite import Record
from splitstream.protocol.errors import (
    DIVISION_BY_ZERO, NUMERIC_VALUE_OUT_OF_RANGE, UNDEFINED_FUNCTION, PgError,
    CARDINALITY_VIOLATION,
)
import operator
from . import numeric_math
from .zoned_casts import cast_in_zone, float_text, zone_dependent
from .posix_regex import compile_regex


class Expr:
    oid: int = type_oids.UNKNOWN
    typmod: int = -1
    _folded: tuple  # set by folded_const: (value,) or _NOT_FOLDED
    _dict_col: int | None  # set by _single_column

    def eval(self, batch: Batch, ctx) -> Col:  # pragma: no cover - abstract
        raise NotImplementedError

    def children(self) -> list["Expr"]:
        return []

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()

    def is_const(self) -> bool:
        return False


def merge_nulls(*cols: Col) -> np.ndarray | None:
    masks = [c.nulls for c in cols if c.nulls is not None]
    if not masks:
        return None
    m = masks[0].copy()
    for x in masks[1:]:
        m |= x
    return m


_FILL = {"b": False, "i": 0, "u": 0, "f": 0.0}

#: the placeholder under a NULL slot of an object column, by type: known per
#: type, so an all-NULL batch is filled as well as a batch with one value
_OBJ_FILL: dict[int, Any] = {type_oids.NUMERIC: decimal.Decimal(0), type_oids.INTERVAL: Interval(),
                             type_oids.TEXT: "", type_oids.VARCHAR: "", type_oids.BPCHAR: "", type_oids.NAME: ""}


def filled(col: Col) -> np.ndarray:
    """Data with NULL slots replaced by a harmless value of the right kind."""
    if col.nulls is None:
        return col.data
    d = col.data
    if d.dtype == object:
        fill = _OBJ_FILL.get(col.oid, _NO_FILL)
        if fill is _NO_FILL:
            sample = next((v for v in d.tolist() if v is not None), None)
            if sample is None:
                return d
            fill = type(sample)()
        d = d.copy()
        if isinstance(fill, list):              # an array value: assigned one by one, it would broadcast
            for i in np.flatnonzero(col.nulls):
                d[i] = fill
        else:
            d[col.nulls] = fill
        return d
    return d


_NO_FILL = object()


class ColRef(Expr):
    #: bound under a COLLATE clause: a value computed, for RowDescription (``operators.carried``)
    collated = False

    def __init__(self, idx: int, oid: int, name: str = "?column?", typmod: int = -1) -> None:
        self.idx, self.oid, self.name, self.typmod = idx, oid, name, typmod

    def eval(self, batch, ctx):
        return batch.cols[self.idx]

    def __repr__(self) -> str:
        return f"#{self.idx}:{self.name}"


class OuterRef(Expr):
    """A column of an enclosing query's current row (correlated subquery)."""

    def __init__(self, depth: int, idx: int, oid: int, name: str) -> None:
        self.depth, self.idx, self.oid, self.name = depth, idx, oid, name

    def eval(self, batch, ctx):
        row = ctx.outer_rows[-self.depth]
        v = row[self.idx]
        return Col.const(v, self.oid, batch.n)


class Const(Expr):
    #: a quoted literal's 1-based place in the statement: its type's input refusing it is placed there
    written_at: int | None = None

    def __init__(self, value: Any, oid: int, typmod: int = -1) -> None:
        self.value, self.oid, self.typmod = value, oid, typmod
        self._col: Col | None = None
        self._one: np.ndarray | None = None     # the value as a one-element array (compare_scalar)

    def eval(self, batch, ctx):
        col = self._col           # a local: a thread sharing this plan may replace it meanwhile
        if col is None or len(col) != batch.n:
            col = self._col = Col.const(self.value, self.oid, batch.n)
        return col

    def is_const(self) -> bool:
        return True

    def __repr__(self) -> str:
        return repr(self.value)


class Param(Expr):
    def __init__(self, idx: int, oid: int) -> None:
        self.idx, self.oid = idx, oid

    def eval(self, batch, ctx):
        v = ctx.params[self.idx] if self.idx < len(ctx.params) else None
        return Col.const(v, self.oid, batch.n)

    def is_const(self) -> bool:
        return True


class Cast(Expr):
    def __repr__(self) -> str:
        return f"{self.arg!r}::{sqltypes.type_name(self.oid)}"

    def __init__(self, arg: Expr, oid: int, typmod: int = -1, explicit: bool = True) -> None:
        self.arg, self.oid, self.typmod, self.explicit = arg, oid, typmod, explicit

    def children(self):
        return [self.arg]

    def eval(self, batch, ctx):
        if self.zoned and ctx is not None:
            if self.arg.oid in (type_oids.FLOAT4, type_oids.FLOAT8):
                digits = int(ctx.setting("extra_float_digits", "1") or 1)
                if digits < 1:
                    return float_text(self.arg.eval(batch, ctx), self.oid, self.typmod, self.explicit, digits)
            else:
                tz = ctx.setting("timezone", "UTC")
                if tz != "UTC":
                    return cast_in_zone(self.arg.eval(batch, ctx), self.oid, self.typmod, self.explicit, tz)
        folded = folded_const(self, ctx)
        if folded is not None and batch.n > 1:
            fixed = _fixed_of(self, None) if self.oid == type_oids.NUMERIC else None
            if fixed is not None and isinstance(fixed[0], int):
                # scaled integers, as the column it is compared with: not a Decimal object per row
                # (TPC-H Q19's ``l_quantity <= 1 + 10``)
                return FixedCol(np.full(batch.n, fixed[0], np.int64), fixed[1], None)
            return Col.const(folded[0], self.oid, batch.n)
        return sqltypes.cast_col(self.arg.eval(batch, ctx), self.oid, self.typmod, self.explicit)

    @property
    def zoned(self) -> bool:
        """Evaluated with the session's settings (never folded at plan time)."""
        z = self.__dict__.get("_zoned")
        if z is None:
            z = self._zoned = zone_dependent(self.arg.oid, self.oid)
        return z

    def is_const(self) -> bool:
        return self.arg.is_const() and not self.zoned


_NOT_FOLDED = ("not folded",)


def folded_const(e: Expr, ctx) -> tuple | None:
    """(value,) of a constant expression without parameters, computed once on a
    one-row batch (``CAST(1 + 10 AS numeric)`` would otherwise be evaluated,
    and cast value by value, for every row); None when ``e`` is not one."""
    hit = getattr(e, "_folded", None)
    if hit is not None:
        return None if hit is _NOT_FOLDED else hit
    res = _NOT_FOLDED
    # no parameters, and no functions: now() and friends are constant within one
    # execution only, and this value lives as long as the cached plan
    if e.is_const() and not any(isinstance(n, (Param, OuterRef, Func)) or type(n).__name__ == "SubqueryExpr"
                                for n in e.walk()):
        try:
            c = sqltypes.cast_col(e.arg.eval(Batch([], 1), ctx), e.oid, e.typmod, e.explicit) if isinstance(e, Cast) \
                else e.eval(Batch([], 1), ctx)
            res = (c.to_pylist()[0],)
        except Exception:   # errors surface from the ordinary evaluation, at the right time
            res = _NOT_FOLDED
    e._folded = res
    return None if res is _NOT_FOLDED else res


def coerce(e: Expr, oid: int, typmod: int = -1) -> Expr:
    if e.oid == oid and typmod < 0:
        return e
    if isinstance(e, Const) and e.value is None:
        return Const(None, oid)
    return Cast(e, oid, typmod, explicit=False)


# ----------------------------------------------------------- arithmetic

_I_LIMITS = {type_oids.INT2: (-(2**15), 2**15 - 1), type_oids.INT4: (-(2**31), 2**31 - 1)}


#: the types pg_operator has a prefix ``-`` for
NEGATABLE = frozenset((type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8,
                       type_oids.NUMERIC, type_oids.INTERVAL))


def prefix_operator_missing(op: str, arg: int) -> PgError:
    """PostgreSQL's error for a prefix operator pg_operator does not have."""
    return PgError(UNDEFINED_FUNCTION, f"operator does not exist: {op} {sqltypes.format_type(arg)}",
                   hint="No operator matches the given name and argument type. You might need to add an explicit type cast.")


def operator_missing(op: str, left: int, right: int) -> PgError:
    """PostgreSQL's error for an operator pg_operator does not have."""
    return PgError(UNDEFINED_FUNCTION, f"operator does not exist: {sqltypes.format_type(left)} {op} {sqltypes.format_type(right)}",
                   hint="No operator matches the given name and argument types. You might need to add explicit type casts.")


_I64_MIN = np.iinfo(np.int64).min


def _check_float_underflow(op: str, x, y, r, valid) -> None:
    """float8_mul, float8_div and dpow: a zero result from non-zero operands
    (a divisor that is not infinite) is 22003 underflow, as PostgreSQL checks."""
    with np.errstate(invalid="ignore"):
        if op == "*":
            bad = (r == 0) & (x != 0) & (y != 0)
        elif op == "/":
            bad = (r == 0) & (x != 0) & ~np.isinf(y)
        else:                               # dpow: infinite operands may give 0
            bad = (r == 0) & (x != 0) & np.isfinite(x) & np.isfinite(y)
    if valid is not None:
        bad = bad & valid
    if np.any(bad):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")


def _overflow(oid: int) -> PgError:
    return PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{ {type_oids.INT2: 'smallint', type_oids.INT4: 'integer', type_oids.INT8: 'bigint'}.get(oid, 'value')} out of range")


class Arith(Expr):
    def __repr__(self) -> str:
        return f"({self.left!r} {self.op} {self.right!r})"

    def __init__(self, op: str, left: Expr, right: Expr, oid: int) -> None:
        self.op, self.left, self.right, self.oid = op, left, right, oid

    def children(self):
        return [self.left, self.right]

    def is_const(self):
        return self.left.is_const() and self.right.is_const()

    def eval(self, batch, ctx):
        if self.oid == type_oids.NUMERIC and self.op in ("+", "-", "*"):
            a, fa = _operand(self.left, batch, ctx)
            b, fb = _operand(self.right, batch, ctx)
            if fa is not None and fb is not None:
                fast = _fixed_arith(self.op, fa, fb, a, b, batch)
                if fast is not None:
                    return fast
            a = a if a is not None else self.left.eval(batch, ctx)
            b = b if b is not None else self.right.eval(batch, ctx)
        else:
            a = self.left.eval(batch, ctx)
            b = self.right.eval(batch, ctx)
        nulls = merge_nulls(a, b)
        x, y = filled(a), filled(b)
        oid = self.oid
        op = self.op
        valid = None if nulls is None else ~nulls
        if oid in (type_oids.INT2, type_oids.INT4, type_oids.INT8):
            x = x.astype(np.int64, copy=False)
            y = y.astype(np.int64, copy=False)
            with np.errstate(over="ignore"):
                if op == "+":
                    r = x + y
                    bad = ((x >= 0) == (y >= 0)) & ((r >= 0) != (x >= 0))
                elif op == "-":
                    r = x - y
                    bad = ((x >= 0) != (y >= 0)) & ((r >= 0) != (x >= 0))
                elif op == "*":
                    r = x * y
                    ysafe = np.where(y == 0, 1, y)
                    bad = (y != 0) & ((r // ysafe != x) | ((x == -1) & (y == np.iinfo(np.int64).min)) | ((y == -1) & (x == np.iinfo(np.int64).min)))
                    if oid == type_oids.INT8:
                        big = (np.abs(x.astype(np.float64)) * np.abs(y.astype(np.float64))) > 9.3e18
                        bad = bad | big
                elif op in ("/", "%"):
                    zero = y == 0
                    if valid is not None:
                        zero &= valid
                    if zero.any():
                        raise PgError(DIVISION_BY_ZERO, "division by zero")
                    ys = np.where(y == 0, 1, y)
                    # truncating division from numpy's floor division; |INT64_MIN| does not exist, so
                    # no abs(): INT64_MIN / -1 overflows (as in PostgreSQL), INT64_MIN % -1 is 0
                    neg1 = (x == _I64_MIN) & (ys == -1)
                    yq = np.where(neg1, 1, ys)
                    q = x // yq
                    q = q + ((x - q * yq != 0) & ((x < 0) != (yq < 0)))
                    r = q if op == "/" else x - q * yq
                    bad = neg1 if op == "/" else np.zeros(len(r), bool)
                else:
                    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {sqltypes.type_name(a.oid)} {op} {sqltypes.type_name(b.oid)}")
            if valid is not None:
                bad &= valid
            if bad.any():
                raise _overflow(oid)
            if oid != type_oids.INT8:
                lo, hi = _I_LIMITS[oid]
                rv = r if valid is None else r[valid]
                if len(rv) and (rv.min() < lo or rv.max() > hi):
                    raise _overflow(oid)
            return Col(r.astype(sqltypes.dtype_of(oid)), nulls, oid)
        if oid in (type_oids.FLOAT8, type_oids.FLOAT4):
            x = x.astype(np.float64, copy=False) if x.dtype != object else np.array([float(v) for v in x], dtype=np.float64)
            y = y.astype(np.float64, copy=False) if y.dtype != object else np.array([float(v) for v in y], dtype=np.float64)
            with np.errstate(all="ignore"):
                if op == "+":
                    r = x + y
                elif op == "-":
                    r = x - y
                elif op == "*":
                    r = x * y
                elif op == "/":
                    zero = (y == 0) & ~np.isnan(x)          # float8div: NaN / 0 is NaN
                    if valid is not None:
                        zero &= valid
                    if zero.any():
                        raise PgError(DIVISION_BY_ZERO, "division by zero")
                    r = np.where(y == 0, np.nan, x / np.where(y == 0, 1, y))
                elif op == "%":
                    r = np.fmod(x, y)
                elif op == "^":
                    live = valid if valid is not None else True
                    numeric_math.power_domain((x < 0) & live, (x == 0) & live, y < 0, y != np.trunc(y))
                    r = np.power(x, y)
                else:
                    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {op}")
            with np.errstate(over="ignore"):
                r = r.astype(sqltypes.dtype_of(oid))      # float4 overflows and underflows as float4
            fin = np.isfinite(x) & np.isfinite(y)
            badinf = fin & ~np.isfinite(r)
            if valid is not None:
                badinf &= valid
            if badinf.any():
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
            if op in ("*", "/", "^"):
                _check_float_underflow(op, x, y, r, valid)
            return Col(r, nulls, oid)
        if oid == type_oids.NUMERIC:
            xs = _to_decimal(a, x)
            ys = _to_decimal(b, y)
            if op in ("+", "-", "*") and len(xs) == len(ys):
                # exact Decimal arithmetic, looped in C by numpy's object ufuncs
                xa = np.empty(len(xs), dtype=object)
                xa[:] = xs
                ya = np.empty(len(ys), dtype=object)
                ya[:] = ys
                if nulls is not None:   # a NULL's slot holds None: give the object ufunc a number there
                    xa[nulls] = ya[nulls] = _DEC_ZERO
                with decimal.localcontext(_ADD_MUL_CTX):
                    r = xa + ya if op == "+" else (xa - ya if op == "-" else xa * ya)
                if nulls is not None:
                    r[nulls] = None
                return Col(r, nulls, oid)
            out = np.empty(batch.n if batch.n == len(xs) else len(xs), dtype=object)
            nl = nulls.tolist() if nulls is not None else None
            for i in range(len(xs)):
                if nl is not None and nl[i]:
                    out[i] = None
                    continue
                out[i] = numeric_op(op, xs[i], ys[i])
            return Col(out, nulls, oid)
        raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {sqltypes.type_name(a.oid)} {op} {sqltypes.type_name(b.oid)}",
                      hint="No operator matches the given name and argument types. You might need to add explicit type casts.")


# ----------------------------------------------------------- fixed-point numeric fast path

_F_LIMIT = float(2 ** 62)


_NO_CONSTANT = object()


def _constant_of(e: Expr, col: Col | None):
    """The one value of an operand that is the same in every row -- a constant,
    a folded constant expression, an uncorrelated scalar subquery's result
    (TPC-H Q22's avg) -- else _NO_CONSTANT."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Cast) and isinstance(e.arg, Const) and e.typmod < 0:
        return e.arg.value
    folded = getattr(e, "_folded", None) if isinstance(e, Cast) else None
    if folded is not None and folded is not _NOT_FOLDED:
        return folded[0]
    if isinstance(e, SubqueryExpr) and e.kind == "scalar" and not e.correlated and type(col) is Col \
            and col is not None and col.nulls is None and len(col) > 0:
        return col.data[0]
    return _NO_CONSTANT


def fixed_compare_constant(op: str, a: Col, b: Col, le: Expr, re_: Expr) -> Col | None:
    """A scaled-integer column compared with a numeric constant of more digits
    than int64 holds at the column's scale (an avg: 5000.5566787878787879).
    For integer ``x`` and a non-integer ``q = v * 10**scale``, ``x > q`` is
    ``x > floor(q)``, ``x < q`` is ``x <= floor(q)``, ``=`` is never true."""
    if type(a) is FixedCol:
        col, v, flip = a, _constant_of(re_, b), False
    elif type(b) is FixedCol:
        col, v, flip = b, _constant_of(le, a), True
    else:
        return None
    if not isinstance(v, decimal.Decimal) or not v.is_finite():
        return None
    q = v.scaleb(col.scale, NUMERIC_CTX)
    f = int(q.to_integral_value(rounding=decimal.ROUND_FLOOR, context=NUMERIC_CTX))
    if abs(f) >= 2 ** 62:
        return None
    if flip:
        op = _FLIPPED.get(op, op)
    x = col.fx
    if q == f:
        r = _CMP[op](x, f)
    elif op in ("=", "<>", "!="):
        r = np.full(len(x), op != "=")
    else:
        r = x > f if op in (">", ">=") else x <= f
    return Col(np.asarray(r, dtype=bool), col.nulls, type_oids.BOOL)


_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _fixed_of(e: Expr, col: Col | None):
    """(scaled ints or a Python int, scale) for a NUMERIC operand that has one
    scale -- a FixedCol, an integer cast to numeric, a numeric constant -- else None."""
    if isinstance(col, FixedCol):
        fx = col.fx if col.nulls is None else np.where(col.nulls, 0, col.fx)
        return fx, col.scale
    v = _constant_of(e, col)
    if v is not _NO_CONSTANT:
        if isinstance(v, bool) or v is None:
            return None
        if isinstance(v, int):
            return (v, 0) if abs(v) < 2 ** 62 else None
        if isinstance(v, decimal.Decimal) and v.is_finite():
            sc = max(0, -int(v.as_tuple().exponent))  # an int: v is finite
            iv = int(v.scaleb(sc))
            return (iv, sc) if sc <= 18 and abs(iv) < 2 ** 62 else None
        return None
    if isinstance(e, Cast) and e.typmod < 0 and e.arg.oid in type_oids.INTEGER_TYPES:
        return None  # evaluated by the caller from the integer argument
    return None


def _rescale(v, sc: int, to: int, bound: float | None = None):
    if sc == to:
        return v
    f = 10 ** (to - sc)
    if isinstance(v, int):
        r = v * f
        return r if abs(r) < 2 ** 62 else None
    if _magnitude(v, bound) * f >= _F_LIMIT:
        return None
    return v * f


def _operand(e: Expr, batch, ctx):
    """(evaluated column or None, fixed-point view or None) of an arithmetic
    operand; integer casts and constants are read without building Decimals."""
    if isinstance(e, Cast) and e.oid == type_oids.NUMERIC and e.typmod < 0 and e.arg.oid in type_oids.INTEGER_TYPES \
            and not isinstance(e.arg, Const):
        c = e.arg.eval(batch, ctx)
        d = c.data.astype(np.int64)
        if c.nulls is not None:
            d = np.where(c.nulls, 0, d)
        return None, (d, 0, c.nulls, None)
    if isinstance(e, Const) or (isinstance(e, Cast) and isinstance(e.arg, Const)):
        f = _fixed_of(e, None)
        return None, (None if f is None else (f[0], f[1], None, None))
    c = e.eval(batch, ctx)
    if isinstance(c, FixedCol):
        fx = c.fx if c.nulls is None else np.where(c.nulls, 0, c.fx)
        return c, (fx, c.scale, c.nulls, c.bound)
    return c, None


def _magnitude(v, bound: float | None = None) -> float:
    """The largest absolute value of a scaled int64 operand (a constant or an
    array), or the column's known bound on it (FixedCol.bound)."""
    if isinstance(v, int):
        return float(abs(v))
    if bound is not None:
        return bound
    # two int64 reductions rather than a float64 copy, its abs and a max (a
    # third of TPC-H Q1's time went here); |fx| < 2**62, so -min cannot wrap
    return float(max(-int(v.min()), int(v.max()))) if len(v) else 0.0


def _fixed_arith(op: str, fa, fb, a, b, batch):
    """+, - and * of NUMERIC operands in scaled int64, with PostgreSQL's result
    scale (max for +/-, sum for *); None when it would not be exact."""
    (x, sa, na, bx), (y, sb, nb, by) = fa, fb
    if op == "*":
        scale = sa + sb
        if scale > 18:
            return None
        bound = _magnitude(x, bx) * _magnitude(y, by)
        if bound >= _F_LIMIT:
            return None
        r = x * y
    else:
        scale = max(sa, sb)
        # the operands' bounds (when known) scale with them
        bx = None if bx is None else bx * 10 ** (scale - sa)
        by = None if by is None else by * 10 ** (scale - sb)
        x, y = _rescale(x, sa, scale, bx), _rescale(y, sb, scale, by)
        if x is None or y is None:
            return None
        bound = _magnitude(x, bx) + _magnitude(y, by)
        if bound >= _F_LIMIT:
            return None             # int64 could wrap: the Decimal path takes it
        r = x + y if op == "+" else x - y
    if na is None:
        nulls = nb
    elif nb is None:
        nulls = na
    else:
        nulls = na | nb
    if isinstance(r, int):  # constant folding: 0.06 - 0.01
        if abs(r) >= 2 ** 62:
            return None
        return FixedCol(np.full(batch.n, r, np.int64), scale, None)
    r = np.asarray(r, dtype=np.int64)
    if r.ndim == 0:
        r = np.full(batch.n, int(r), np.int64)
    return FixedCol(r, scale, nulls, bound=bound)


def fixed_compare(op: str, a: Col, b: Col, le: Expr, re_: Expr):
    """Comparison of NUMERIC operands in scaled int64, or None."""
    fa = _fixed_of(le, a)
    fb = _fixed_of(re_, b)
    if fa is None or fb is None or (isinstance(fa[0], int) and isinstance(fb[0], int)):
        return None
    (x, sa), (y, sb) = fa, fb
    scale = max(sa, sb)
    x, y = _rescale(x, sa, scale), _rescale(y, sb, scale)
    if x is None or y is None:
        return None
    r = _CMP[op](x, y)
    return Col(np.asarray(r, dtype=bool), merge_nulls(a, b), type_oids.BOOL)


def _to_decimal(col: Col, data: np.ndarray) -> list:
    if col.oid == type_oids.NUMERIC:
        return data.tolist()
    if data.dtype.kind == "f":
        return [decimal.Decimal(repr(float(v))) for v in data.tolist()]
    return [decimal.Decimal(int(v)) for v in data.tolist()]


NUMERIC_CTX = decimal.Context(prec=1000, Emax=999999, Emin=-999999)
#: +, - and * of numerics: infinity * 0 and infinity - infinity are NaN in PostgreSQL, not an error
_ADD_MUL_CTX = decimal.Context(prec=1000, Emax=999999, Emin=-999999,
                               traps=[decimal.DivisionByZero, decimal.Overflow])
_DEC_ZERO = decimal.Decimal(0)
_DEC_NAN = decimal.Decimal("NaN")


def numeric_div_scale(x: decimal.Decimal, y: decimal.Decimal) -> int:
    """PostgreSQL's select_div_scale: at least 16 significant digits."""
    def weight(d: decimal.Decimal) -> int:
        if d == 0:
            return 0
        # weight in base-10000 digits, as PostgreSQL's NumericVar.weight
        e = d.adjusted()
        return e // 4

    def dscale(d: decimal.Decimal) -> int:
        return max(0, -int(d.as_tuple().exponent)) if d.is_finite() else 0

    w1, w2 = weight(x), weight(y)
    # first base-10000 digit of each
    def first_digit(d: decimal.Decimal) -> int:
        if d == 0:
            return 0
        e = d.adjusted()
        w = e // 4
        return int(abs(d).scaleb(-4 * w))

    qweight = w1 - w2
    f1, f2 = first_digit(x), first_digit(y)
    if f1 <= f2:
        qweight -= 1
    rscale = 16 - qweight * 4
    rscale = max(rscale, dscale(x), dscale(y), 0)
    return min(rscale, 1000)


_POW10 = 10 ** np.arange(19, dtype=np.int64)


def _weight_first(a: np.ndarray, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """PostgreSQL NumericVar weight (base-10000) and first base-10000 digit of
    |a| * 10**-scale, for int64 ``a`` (0 -> weight 0, digit 0), as numeric_div_scale."""
    a = np.abs(a)
    nd = np.searchsorted(_POW10, a, side="right")          # decimal digits of a (a >= 1)
    w = (nd - 1 - scale) // 4
    k = scale + 4 * w                                      # first digit = a / 10**k
    kp = np.clip(k, 0, 18)
    first = np.where(k >= 0, a // _POW10[kp], a * _POW10[np.clip(-k, 0, 18)])
    zero = a == 0
    return np.where(zero, 0, w), np.where(zero, 0, first)


def fixed_avg(total: np.ndarray, cnt: np.ndarray, scale: int) -> list:
    """avg(numeric) of groups from exact int64 sums at ``scale`` and counts
    (count > 0): the scale choice of numeric_div_scale computed in numpy,
    then one exact integer division per group (no Decimal context work)."""
    w1, f1 = _weight_first(total, scale)
    w2, f2 = _weight_first(cnt, 0)
    qweight = w1 - w2 - (f1 <= f2)
    rscale = np.minimum(np.maximum(np.maximum(16 - qweight * 4, scale), 0), 1000)
    out = []
    Dec = decimal.Decimal
    for t, c, r in zip(total.tolist(), cnt.tolist(), rscale.tolist()):
        num = abs(t) * 10 ** (r - scale) if r >= scale else abs(t)
        q, rem = divmod(num, c)
        if 2 * rem >= c:
            q += 1
        out.append(Dec(-q if t < 0 else q).scaleb(-r))
    return out


def numeric_op(op: str, x: decimal.Decimal, y: decimal.Decimal) -> decimal.Decimal:
    if op == "+":
        return _ADD_MUL_CTX.add(x, y)
    if op == "-":
        return _ADD_MUL_CTX.subtract(x, y)
    if op == "*":
        return _ADD_MUL_CTX.multiply(x, y)
    c = NUMERIC_CTX
    if op in ("/", "%"):
        if y == 0 and not x.is_nan():
            raise PgError(DIVISION_BY_ZERO, "division by zero")
        if not (x.is_finite() and y.is_finite()):
            return _nonfinite_div(op, x, y)
        if op == "%":
            return c.remainder(x, y)
        s = numeric_div_scale(x, y)
        q = c.divide(x, y)
        return q.quantize(decimal.Decimal(1).scaleb(-s), rounding=decimal.ROUND_HALF_UP, context=c)
    if op == "^":
        return numeric_math.power(x, y)
    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: numeric {op} numeric")


def _nonfinite_div(op: str, x: decimal.Decimal, y: decimal.Decimal) -> decimal.Decimal:
    """PostgreSQL 15's numeric / and % when NaN or an infinity is involved (y is not zero here)."""
    if x.is_nan() or y.is_nan() or (x.is_infinite() and y.is_infinite()):
        return _DEC_NAN
    if op == "%":
        return _DEC_NAN if x.is_infinite() else x
    if y.is_infinite():
        return _DEC_ZERO
    return x if y > 0 else -x


class Neg(Expr):
    def __init__(self, arg: Expr) -> None:
        self.arg, self.oid = arg, arg.oid if arg.oid != type_oids.UNKNOWN else type_oids.NUMERIC

    def children(self):
        return [self.arg]

    def is_const(self):
        return self.arg.is_const()

    def eval(self, batch, ctx):
        a = self.arg.eval(batch, ctx)
        if a.data.dtype == object:
            return Col(np.array([None if v is None else -v for v in a.data], dtype=object), a.nulls, a.oid)
        if a.data.dtype.kind == "i":
            mn = np.iinfo(a.data.dtype).min
            if ((a.data == mn) & a.valid_mask()).any():
                raise _overflow(a.oid)
        return Col(-a.data, a.nulls, a.oid)


def text_in_session(col: Col, ctx) -> Col:
    """A column cast to text as the session shows it: a timestamptz in its
    TimeZone, a float with its extra_float_digits (text || timestamptz
    prints the value as the output function does)."""
    if ctx is not None and not sqltypes.is_string(col.oid):
        if col.oid in (type_oids.FLOAT4, type_oids.FLOAT8):
            digits = int(ctx.setting("extra_float_digits", "1") or 1)
            if digits < 1:
                return float_text(col, type_oids.TEXT, -1, False, digits)
        elif col.oid == type_oids.TIMESTAMPTZ:
            tz = ctx.setting("timezone", "UTC")
            if tz != "UTC":
                return cast_in_zone(col, type_oids.TEXT, -1, False, tz)
    return sqltypes.cast_col(col, type_oids.TEXT)


class Concat(Expr):
    """The || operator on text (arrays handled by functions)."""

    oid = type_oids.TEXT

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left, self.right = left, right

    def children(self):
        return [self.left, self.right]

    def is_const(self):
        return self.left.is_const() and self.right.is_const()

    def eval(self, batch, ctx):
        a = text_in_session(self.left.eval(batch, ctx), ctx)
        b = text_in_session(self.right.eval(batch, ctx), ctx)
        nulls = merge_nulls(a, b)
        out = np.empty(batch.n, dtype=object)
        av, bv = a.data, b.data
        for i in range(batch.n):
            x, y = av[i], bv[i]
            out[i] = None if x is None or y is None else x + y
        return Col(out, nulls, type_oids.TEXT)


# ----------------------------------------------------------- comparison

_CMP = {"=": np.equal, "<>": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def compare_cols(op: str, a: Col, b: Col) -> Col:
    nulls = merge_nulls(a, b)
    x, y = filled(a), filled(b)
    if x.dtype == object or y.dtype == object:
        if x.dtype != object:
            x = x.astype(object) if x.dtype.kind != "M" else np.array(a.to_pylist(), dtype=object)
        if y.dtype != object:
            y = y.astype(object) if y.dtype.kind != "M" else np.array(b.to_pylist(), dtype=object)
        if nulls is not None:
            x = x.copy()
            y = y.copy()
            x[nulls] = 0
            y[nulls] = 0
        if a.oid in type_oids.ELEMENT_OF or b.oid in type_oids.ELEMENT_OF:
            r = np.array([_PY_CMP[op](array_key(p), array_key(q)) for p, q in zip(x, y)], dtype=bool)
        elif type_oids.NUMERIC in (a.oid, b.oid) and (_has_dec_nan(x) or _has_dec_nan(y)):
            r = np.array([_safe_cmp(op, *_nan_key(p, q)) for p, q in zip(x, y)], dtype=bool)
        else:
            try:
                r = _CMP[op](x, y).astype(bool)
            except TypeError:
                r = np.array([_safe_cmp(op, p, q) for p, q in zip(x, y)], dtype=bool)
    else:
        if x.dtype.kind == "M" and y.dtype.kind == "M" and x.dtype != y.dtype:
            x = x.astype("datetime64[us]")
            y = y.astype("datetime64[us]")
        r = _float_compare(op, x, y) if "f" in (x.dtype.kind, y.dtype.kind) else _CMP[op](x, y)
    if not isinstance(r, np.ndarray):
        r = np.full(max(len(a), len(b)), bool(r))
    return Col(r, nulls, type_oids.BOOL)


def compare_scalar(op: str, a: Col, c: "Const") -> Col | None:
    """``a op constant`` for integer and date/timestamp columns, against the
    constant as a one-element array that numpy broadcasts, instead of a
    column of it repeated per row (a date range over lineitem built and
    compared two 6M-row arrays per bound); None for other types."""
    if isinstance(a, FixedCol) or c.value is None:
        return None                 # .data would build its Decimals: fixed_compare takes it
    x = a.data
    kind = x.dtype.kind
    if kind not in "iuM":
        return None
    one = getattr(c, "_one", None)
    if one is None:
        one = c._one = Col.const(c.value, c.oid, 1).data
    if one.dtype.kind != kind or (kind == "M" and one.dtype != x.dtype):
        return None
    if kind == "M":
        # as int64 (8x faster than datetime64's NaT-aware loop); infinities are
        # ordinary extreme values and NaT only ever fills a NULL slot
        x, one = x.view(np.int64), one.view(np.int64)
    return Col(_CMP[op](x, one), a.nulls, type_oids.BOOL)


def _float_compare(op: str, x, y):
    """PostgreSQL's float order: NaN equals NaN and sorts above every other value (IEEE says unordered)."""
    xn = np.isnan(x) if np.ndim(x) and x.dtype.kind == "f" else np.isnan(np.asarray(x, dtype=np.float64))
    yn = np.isnan(y) if np.ndim(y) and y.dtype.kind == "f" else np.isnan(np.asarray(y, dtype=np.float64))
    if not (np.any(xn) or np.any(yn)):
        return _CMP[op](x, y)
    with np.errstate(invalid="ignore"):
        lt = (~xn & yn) | (~xn & ~yn & (x < y))
        eq = (xn & yn) | (~xn & ~yn & (x == y))
    return {"=": eq, "<>": ~eq, "<": lt, "<=": lt | eq, ">": ~(lt | eq), ">=": ~lt}[op]


def _has_dec_nan(v: np.ndarray) -> bool:
    return any(isinstance(d, decimal.Decimal) and d.is_nan() for d in v.tolist())


def _nan_key(p, q) -> tuple:
    """Numeric NaN (which Decimal refuses to order) as PostgreSQL orders it: equal to NaN, above every number."""
    pn = isinstance(p, decimal.Decimal) and p.is_nan()
    qn = isinstance(q, decimal.Decimal) and q.is_nan()
    if pn or qn:
        return (int(pn), int(qn)) if pn != qn else (0, 0)
    return p, q


_PY_CMP = {"=": operator.eq, "<>": operator.ne, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}


def array_key(v):
    """An array value as PostgreSQL orders arrays (array_cmp): element by
    element in storage order (a NULL element above every value, NaN above
    every number), a shorter run of equal elements first, then by the
    number of dimensions and their lengths: '{{1,2},{3,4}}' is greater than
    '{1,2,3,4}', not equal to it."""
    if isinstance(v, (list, tuple)):
        flat: list = []
        shape: list[int] = []
        _flatten(v, flat, shape, 0)
        return (tuple(array_key(x) for x in flat), len(shape), tuple(shape))
    if v is None:
        return (2,)
    if (isinstance(v, float) and v != v) or (isinstance(v, decimal.Decimal) and v.is_nan()):
        return (1,)
    return (0, v)


def record_key(v: Record) -> tuple:
    """A row value as PostgreSQL orders records (record_cmp): field by
    field, a NULL field above every value and equal to another NULL, NaN
    above every number, each field as its type orders."""
    out: list[tuple] = []
    for x, oid in zip(v.values, v.oids):
        if x is None:
            out.append((2,))
        elif (isinstance(x, float) and x != x) or (isinstance(x, decimal.Decimal) and x.is_nan()):
            out.append((1,))
        elif isinstance(x, Record):
            out.append((0, record_key(x)))
        elif isinstance(x, list):
            out.append((0, array_key(x)))
        else:
            out.append((0, x.encode("utf-8") if isinstance(x, str) else x))
    return tuple(out)


def _flatten(v, flat: list, shape: list[int], depth: int) -> None:
    if depth == len(shape) and v:
        shape.append(len(v))
    for x in v:
        if isinstance(x, (list, tuple)):
            _flatten(x, flat, shape, depth + 1)
        else:
            flat.append(x)


def _safe_cmp(op, p, q) -> bool:
    try:
        return bool(_CMP[op](p, q))
    except TypeError:
        return False


class Compare(Expr):
    oid = type_oids.BOOL

    def __repr__(self) -> str:
        return f"({self.left!r} {self.op} {self.right!r})"

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        self.op, self.left, self.right = op, left, right

    def children(self):
        return [self.left, self.right]

    def is_const(self):
        return self.left.is_const() and self.right.is_const()

    def eval(self, batch, ctx):
        if type(self.right) is Const and type(self.left) is not Const:
            a = self.left.eval(batch, ctx)
            r = compare_scalar(self.op, a, self.right)
            if r is not None:
                return r
            b = self.right.eval(batch, ctx)
        else:
            a, b = self.left.eval(batch, ctx), self.right.eval(batch, ctx)
        if a.oid == type_oids.NUMERIC and (type(a) is FixedCol or type(b) is FixedCol):
            r = fixed_compare(self.op, a, b, self.left, self.right)
            if r is None:
                r = fixed_compare_constant(self.op, a, b, self.left, self.right)
            if r is not None:
                return r
        return compare_cols(self.op, a, b)


class IsDistinct(Expr):
    oid = type_oids.BOOL

    def __init__(self, left: Expr, right: Expr, negate: bool) -> None:
        self.left, self.right, self.negate = left, right, negate

    def children(self):
        return [self.left, self.right]

    def eval(self, batch, ctx):
        a, b = self.left.eval(batch, ctx), self.right.eval(batch, ctx)
        eq = compare_cols("=", a, b)
        an, bn = a.null_mask(), b.null_mask()
        same = np.where(an | bn, an & bn, eq.data)
        return Col(same if self.negate else ~same, None, type_oids.BOOL)


class _Connective(Expr):
    """AND / OR over any number of boolean arguments (three-valued)."""

    oid = type_oids.BOOL
    word = ""

    def __repr__(self) -> str:
        return "(" + f" {self.word} ".join(map(repr, self.args)) + ")"

    def __init__(self, args: list[Expr]) -> None:
        self.args = args

    def children(self):
        return self.args

    def is_const(self):
        return all(a.is_const() for a in self.args)


class And(_Connective):
    word = "AND"

    def eval(self, batch, ctx):
        false = np.zeros(batch.n, bool)
        unknown = np.zeros(batch.n, bool)
        for a in self.args:
            c = eval_pred(a, batch, ctx)
            v = c.data.astype(bool, copy=False)
            if c.nulls is not None:
                unknown |= c.nulls
                false |= ~v & ~c.nulls
            else:
                false |= ~v
        nulls = unknown & ~false
        return Col(~false & ~nulls, nulls, type_oids.BOOL)


class Or(_Connective):
    word = "OR"

    def eval(self, batch, ctx):
        true = np.zeros(batch.n, bool)
        unknown = np.zeros(batch.n, bool)
        for a in self.args:
            c = a.eval(batch, ctx)
            v = c.data.astype(bool, copy=False)
            if c.nulls is not None:
                unknown |= c.nulls
                true |= v & ~c.nulls
            else:
                true |= v
        nulls = unknown & ~true
        return Col(true, nulls, type_oids.BOOL)


class Not(Expr):
    oid = type_oids.BOOL

    def __repr__(self) -> str:
        return f"(NOT {self.arg!r})"

    def __init__(self, arg: Expr) -> None:
        self.arg = arg

    def children(self):
        return [self.arg]

    def is_const(self):
        return self.arg.is_const()

    def eval(self, batch, ctx):
        c = self.arg.eval(batch, ctx)
        return Col(~c.data.astype(bool), c.nulls, type_oids.BOOL)


class IsNull(Expr):
    oid = type_oids.BOOL

    def __repr__(self) -> str:
        return f"({self.arg!r} IS {'NOT ' if self.negate else ''}NULL)"

    def __init__(self, arg: Expr, negate: bool = False) -> None:
        self.arg, self.negate = arg, negate

    def children(self):
        return [self.arg]

    def eval(self, batch, ctx):
        c = self.arg.eval(batch, ctx)
        m = c.null_mask()
        return Col(~m if self.negate else m.copy(), None, type_oids.BOOL)


class IsBool(Expr):
    """IS [NOT] TRUE / FALSE / UNKNOWN."""

    oid = type_oids.BOOL

    def __init__(self, arg: Expr, value: bool | None, negate: bool) -> None:
        self.arg, self.value, self.negate = arg, value, negate

    def children(self):
        return [self.arg]

    def eval(self, batch, ctx):
        c = self.arg.eval(batch, ctx)
        n = c.null_mask()
        if self.value is None:
            r = n.copy()
        else:
            v = c.data.astype(bool)
            r = ~n & (v if self.value else ~v)
        return Col(~r if self.negate else r, None, type_oids.BOOL)


class Case(Expr):
    def __repr__(self) -> str:
        return "CASE " + " ".join(f"WHEN {c!r} THEN {v!r}" for c, v in self.whens) + \
            (f" ELSE {self.default!r}" if self.default is not None else "") + " END"

    def __init__(self, whens: list[tuple[Expr, Expr]], default: Expr | None, oid: int) -> None:
        self.whens, self.default, self.oid = whens, default, oid

    def children(self):
        out = []
        for c, v in self.whens:
            out += [c, v]
        return out + ([self.default] if self.default else [])

    def eval(self, batch, ctx):
        n = batch.n
        done = np.zeros(n, bool)
        out = Col(sqltypes.empty(self.oid, n), np.ones(n, bool), self.oid)
        data = out.data.copy()
        nulls = np.ones(n, bool)
        for cond, val in self.whens:
            remaining = ~done
            if not remaining.any():
                break
            sub = batch.filter(remaining) if not remaining.all() else batch
            c = cond.eval(sub, ctx)
            hit_sub = c.data.astype(bool) & ~c.null_mask()
            idx = np.flatnonzero(remaining)[hit_sub]
            if len(idx):
                v = val.eval(batch.take(idx), ctx)
                v = sqltypes.cast_col(v, self.oid) if v.oid != self.oid else v
                data[idx] = v.data
                nulls[idx] = v.null_mask()
                done[idx] = True
        rest = np.flatnonzero(~done)
        if self.default is not None and len(rest):
            v = self.default.eval(batch.take(rest), ctx)
            v = sqltypes.cast_col(v, self.oid) if v.oid != self.oid else v
            data[rest] = v.data
            nulls[rest] = v.null_mask()
        return Col(data, nulls, self.oid)


class Coalesce(Expr):
    def __repr__(self) -> str:
        return f"COALESCE({', '.join(map(repr, self.args))})"

    def __init__(self, args: list[Expr], oid: int) -> None:
        self.args, self.oid = args, oid

    def children(self):
        return self.args

    def eval(self, batch, ctx):
        n = batch.n
        data = sqltypes.empty(self.oid, n)
        nulls = np.ones(n, bool)
        for a in self.args:
            if not nulls.any():
                break
            idx = np.flatnonzero(nulls)
            c = a.eval(batch.take(idx), ctx)
            if c.oid != self.oid:
                c = sqltypes.cast_col(c, self.oid)
            ok = ~c.null_mask()
            data[idx[ok]] = c.data[ok]
            nulls[idx[ok]] = False
        return Col(data, nulls, self.oid)


class InList(Expr):
    def __repr__(self) -> str:
        return f"({self.arg!r} {'NOT ' if self.negate else ''}IN ({', '.join(map(repr, self.items))}))"

    oid = type_oids.BOOL

    def __init__(self, arg: Expr, items: list[Expr], negate: bool) -> None:
        self.arg, self.items, self.negate = arg, items, negate

    def children(self):
        return [self.arg] + self.items

    def eval(self, batch, ctx):
        a = self.arg.eval(batch, ctx)
        n = batch.n
        if n >= 1024:
            r = self._text_membership(a)
            if r is not None:
                return r
        hit = np.zeros(n, bool)
        unknown = a.null_mask().copy()
        for it in self.items:
            c = compare_cols("=", a, it.eval(batch, ctx))
            hit |= c.data & ~c.null_mask()
            unknown |= c.null_mask()
        nulls = unknown & ~hit
        r = ~hit if self.negate else hit
        return Col(r & ~nulls, nulls, type_oids.BOOL)


    def _text_membership(self, a: Col) -> Col | None:
        """A text column against a list of text literals: each distinct value
        is looked up once (a hash table), not compared with every literal
        (TPC-H Q22's seven phone prefixes over unique phone numbers)."""
        consts = [it for it in self.items if isinstance(it, Const) and type(it.value) is str]
        if a.oid not in (type_oids.TEXT, type_oids.VARCHAR) or a.data.dtype != object or len(consts) != len(self.items):
            return None
        wanted = {it.value for it in consts}
        codes, uniq = _factorize_objects(filled(a))
        hit = np.fromiter((u in wanted for u in uniq.tolist()), bool, len(uniq))[codes]
        if a.nulls is not None:
            hit &= ~a.nulls
        r = ~hit if self.negate else hit
        return Col(r if a.nulls is None else r & ~a.nulls, a.nulls, type_oids.BOOL)


def like_to_regex(pattern: str, escape: str | None = "\\") -> str:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


class Like(Expr):
    def __repr__(self) -> str:
        word = ("~*" if self.ilike else "~") if self.regex else ("ILIKE" if self.ilike else "LIKE")
        return f"({self.arg!r} {'NOT ' if self.negate else ''}{word} {self.pattern!r})"

    oid = type_oids.BOOL

    def __init__(self, arg: Expr, pattern: Expr, *, ilike: bool = False, negate: bool = False,
                 regex: bool = False, escape: str | None = "\\") -> None:
        self.arg, self.pattern, self.ilike, self.negate, self.regex, self.escape = arg, pattern, ilike, negate, regex, escape
        self._cache: dict[str, re.Pattern] = {}

    def children(self):
        return [self.arg, self.pattern]

    def _compile(self, p: str) -> re.Pattern:
        r = self._cache.get(p)
        if r is None:
            if self.regex:
                r = compile_regex(p, icase=self.ilike)
            else:      # LC_CTYPE C: ILIKE folds ASCII letters only
                r = re.compile(like_to_regex(p, self.escape) + r"\Z", re.S | re.ASCII | (re.I if self.ilike else 0))
            self._cache[p] = r
        return r

    def eval(self, batch, ctx):
        a = sqltypes.cast_col(self.arg.eval(batch, ctx), type_oids.TEXT) if not sqltypes.is_string(self.arg.oid) else self.arg.eval(batch, ctx)
        p = self.pattern.eval(batch, ctx)
        nulls = merge_nulls(a, p)
        out = np.zeros(batch.n, bool)
        pv = p.data
        av = a.data
        if self.pattern.is_const() and batch.n:
            pat = pv[0]
            if pat is not None:
                fast = None if (self.regex or self.ilike) else like_matcher(pat, self.escape)
                if fast is not None:
                    vals = av if a.nulls is None else np.where(a.nulls, "", av)
                    out = np.fromiter(map(fast, vals), dtype=bool, count=batch.n)
                else:
                    rx = self._compile(pat)
                    m = rx.search if self.regex else rx.match
                    out = np.fromiter((v is not None and m(v) is not None for v in av), dtype=bool, count=batch.n)
        else:
            for i in range(batch.n):
                if av[i] is None or pv[i] is None:
                    continue
                rx = self._compile(pv[i])
                out[i] = (rx.search if self.regex else rx.match)(av[i]) is not None
        if self.negate:
            out = ~out
        return Col(out, nulls, type_oids.BOOL)


def like_matcher(pat: str, escape: str | None) -> Callable[[str], bool] | None:
    """A str -> bool test for a LIKE pattern made of literal parts and ``%`` only:
    prefix/suffix checks and left-to-right ``str.find`` (the regex the general
    path compiles backtracks on every ``%``).  None for ``_`` or escapes."""
    if "_" in pat or (escape and escape in pat):
        return None

    parts = pat.split("%")
    if len(parts) == 1:
        return pat.__eq__
    first, last = parts[0], parts[-1]
    mids = [x for x in parts[1:-1] if x]
    if not mids:
        if first and last:
            lo = len(first) + len(last)
            return lambda v: len(v) >= lo and v.startswith(first) and v.endswith(last)
        if first:
            return operator.methodcaller("startswith", first)
        if last:
            return operator.methodcaller("endswith", last)
        return lambda v: True
    if not first and not last and len(mids) == 1:
        return operator.methodcaller("__contains__", mids[0])
    # several parts: one regex search, lazy between the parts (no backtracking
    # over the whole string for each %), anchored only where the pattern is
    rx = ".*?".join(re.escape(x) for x in [first] + mids + [last])
    rx = (r"\A" + rx if first else rx.removeprefix(".*?")) if first or rx.startswith(".*?") else rx
    rx = rx + r"\Z" if last else rx.removesuffix(".*?")
    search = re.compile(rx, re.S).search
    return lambda v: search(v) is not None


#: what Python's datetime says when a value leaves its years 1..9999
_PYTHON_YEARS = re.compile(r"date value out of range|year -?\d+ is out of range")


class Func(Expr):
    """A scalar function: ``impl(cols, n, ctx) -> Col``."""

    def __init__(self, name: str, impl: Callable, args: list[Expr], oid: int, volatile: bool = False) -> None:
        self.name, self.impl, self.args, self.oid, self.volatile = name, impl, args, oid, volatile

    def children(self):
        return self.args

    def is_const(self):
        return not self.volatile and all(a.is_const() for a in self.args)

    def eval(self, batch, ctx):
        cols = [a.eval(batch, ctx) for a in self.args]
        try:
            r = self.impl(cols, batch.n, ctx)
        except OverflowError as e:
            if not _PYTHON_YEARS.search(str(e)):
                raise
            # a date or time whose local value leaves Python's years 1..9999 (PostgreSQL's run
            # from 4713 BC): PostgreSQL's range error rather than an internal one
            raise PgError("22008", "timestamp out of range") from None
        if r.oid != self.oid and self.oid != type_oids.UNKNOWN:
            r = Col(r.data, r.nulls, self.oid)
        return r

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(map(repr, self.args))})"


class SubqueryExpr(Expr):
    def __repr__(self) -> str:
        head = {"scalar": "SubPlan", "exists": "EXISTS(SubPlan)", "in": "IN (SubPlan)"}.get(self.kind, self.kind.upper())
        arg = f"{self.arg!r} " if self.arg is not None else ""
        return f"{'NOT ' if self.negate else ''}{arg}{head}{' correlated' if self.correlated else ''}"

    """Scalar, EXISTS, IN and ANY/ALL subqueries.

    Uncorrelated subqueries run once per statement; correlated ones run per
    distinct outer row (a plain, always-correct strategy).
    """

    def __init__(self, kind: str, plan, oid: int, correlated: bool, arg: Expr | None = None,
                 op: str = "=", negate: bool = False) -> None:
        self.kind, self.plan, self.oid, self.correlated = kind, plan, oid, correlated
        self.arg, self.op, self.negate = arg, op, negate

    def children(self):
        return [self.arg] if self.arg is not None else []

    def _run(self, ctx):
        return self.plan.execute(ctx)      # an operators.Op (expr does not import operators)

    def _result_for(self, ctx):
        """Uncorrelated: once per statement.  The result is kept in the
        statement's run object (``ctx.run``), not on this node: the plan is
        shared by sessions and threads and outlives the statement (keying a
        result on the node by ``id(ctx)`` once served a later statement an
        earlier one's result)."""
        if not self.correlated:
            results = ctx.run.subquery_results
            if self in results:
                return results[self]
            res = self._run(ctx)
            ctx.run.keep_subquery_result(self, res)
            return res
        return self._run(ctx)

    def eval(self, batch, ctx):
        if not self.correlated:
            res = self._result_for(ctx)
            return self._eval_with(res, batch, ctx)
        # correlated: evaluate per row
        n = batch.n
        outs = []
        rows = batch.rows()
        for i in range(n):
            ctx.outer_rows.append(rows[i])
            try:
                res = self._run(ctx)
                outs.append(self._eval_with(res, batch.slice(i, i + 1), ctx))
            finally:
                ctx.outer_rows.pop()
        if not outs:
            return Col(sqltypes.empty(self.oid, 0), None, self.oid)
        return Col.concat(outs)

    def _eval_with(self, res: Batch, batch: Batch, ctx) -> Col:
        n = batch.n
        if self.kind == "scalar":
            if res.n > 1:
                raise PgError(CARDINALITY_VIOLATION, "more than one row returned by a subquery used as an expression")
            if res.n == 0:
                return Col.const(None, self.oid, n)
            c = res.cols[0]
            v = c.to_pylist()[0]
            return Col.const(v, self.oid, n)
        if self.kind == "array":
            vals = res.cols[0].to_pylist() if res.n else []
            return Col.from_pylist([list(vals) for _ in range(n)], self.oid)
        if self.kind == "exists":
            r = np.full(n, res.n > 0)
            return Col(~r if self.negate else r, None, type_oids.BOOL)
        # IN / ANY / ALL
        assert self.arg is not None  # these kinds compare an argument
        a = self.arg.eval(batch, ctx)
        c = res.cols[0]
        if self.kind == "in" or self.kind == "any":
            hit = np.zeros(n, bool)
            unknown = a.null_mask().copy() if res.n else np.zeros(n, bool)
            if res.n:
                hit, unknown = _in_set(a, c, self.op)
                unknown = unknown & ~hit
            r = hit
            if self.negate:
                r = ~hit
            return Col(r & ~unknown, unknown, type_oids.BOOL)
        if self.kind == "all":
            allok = np.ones(n, bool)
            unknown = np.zeros(n, bool)
            vals = c.to_pylist()
            for v in vals:
                cc = compare_cols(self.op, a, Col.const(v, c.oid, n))
                allok &= cc.data | cc.null_mask()
                unknown |= cc.null_mask()
                fails = ~cc.data & ~cc.null_mask()
                allok &= ~fails
            nulls = unknown & allok
            return Col(allok & ~nulls, nulls, type_oids.BOOL)
        raise PgError("0A000", f"unsupported subquery kind {self.kind}")


def _in_set(a: Col, c: Col, op: str) -> tuple[np.ndarray, np.ndarray]:
    n = len(a)
    has_null = c.nulls is not None and c.nulls.any()
    if op == "=":
        vals = c.filter(c.valid_mask()) if c.nulls is not None else c
        if a.data.dtype != object and vals.data.dtype != object and a.data.dtype.kind == vals.data.dtype.kind:
            x = filled(a)
            hit = np.isin(x, vals.data)
            if x.dtype.kind == "f" and np.isnan(vals.data).any():
                hit |= np.isnan(x)          # NaN equals NaN in PostgreSQL (isin says no)
        else:
            common = sqltypes.common_type(a.oid, c.oid, "comparison") if a.oid != c.oid else a.oid
            av = [_NAN if _is_nan_value(v) else v for v in sqltypes.cast_col(a, common).to_pylist()]
            s = {_NAN if _is_nan_value(v) else v for v in sqltypes.cast_col(vals, common).to_pylist()}
            hit = np.fromiter((v in s for v in av), dtype=bool, count=n)
        hit &= a.valid_mask()
        unknown = a.null_mask() | (np.full(n, has_null) & ~hit)
        return hit, unknown
    hit = np.zeros(n, bool)
    unknown = np.zeros(n, bool)
    for v in c.to_pylist():
        cc = compare_cols(op, a, Col.const(v, c.oid, n))
        hit |= cc.data & ~cc.null_mask()
        unknown |= cc.null_mask()
    return hit, unknown


# ----------------------------------------------------------- dictionary codes of string columns

#: id(object array) -> (weakref to it, codes, distinct values); like catalog.vector's
#: fixed-point cache, a stored column is encoded once per table version, not per query
_DICT_CACHE: dict[int, tuple] = {}


_NAN = object()     # one NaN for sets and dicts (Python's NaN is unequal to itself)


def _is_nan_value(v) -> bool:
    return (isinstance(v, float) and v != v) or (isinstance(v, decimal.Decimal) and v.is_nan())


def _factorize_objects(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes (int64, first-seen order) and distinct values of a hashable object array."""
    try:
        import pandas as pd  # type: ignore[import-untyped]  # optional dependency (no stubs installed): its C hash table is ~5x the dict loop below
    except ImportError:
        pd = None
    if pd is not None:
        try:
            codes, uniq = pd.factorize(d, use_na_sentinel=False)
        except TypeError:               # unhashable values (arrays): the loop below
            codes = None
        if codes is not None:
            uniq = np.asarray(uniq, dtype=object)
            # pandas folds None and NaN-like values (Decimal('NaN') too) into one
            # float nan: only exact when there are none of them
            if not pd.isna(uniq).any():
                return codes.astype(np.int64, copy=False), uniq
    vals = d.tolist()
    if any(type(v) is list for v in vals):
        return _factorize_arrays(vals)
    mapping: dict = {}
    first_nan = next((v for v in vals if _is_nan_value(v)), None)
    if first_nan is not None:   # NaN is one group in PostgreSQL; one object makes it one dict key (identity)
        vals = [first_nan if _is_nan_value(v) else v for v in vals]
    codes = np.fromiter((mapping.setdefault(v, len(mapping)) for v in vals), np.int64, len(d))
    uniq = np.empty(len(mapping), dtype=object)
    uniq[:] = list(mapping)
    return codes, uniq


def _factorize_arrays(vals: list) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_factorize_objects` for array values (Python lists): grouped by
    a hashable copy (nested tuples), each group keeping its first value."""
    mapping: dict = {}
    firsts: list = []
    codes = np.empty(len(vals), dtype=np.int64)
    for i, v in enumerate(vals):
        k = _hashable(v)
        c = mapping.get(k)
        if c is None:
            c = mapping[k] = len(firsts)
            firsts.append(v)
        codes[i] = c
    uniq = np.empty(len(firsts), dtype=object)
    uniq[:] = firsts
    return codes, uniq


def _hashable(v):
    if type(v) is list:
        return ("[]", tuple(_hashable(x) for x in v))
    return _NAN if _is_nan_value(v) else v


def _encoded(d: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    key = id(d)
    hit = _DICT_CACHE.get(key)
    if hit is not None and hit[0]() is d:
        return hit[1], hit[2]
    try:
        codes, uniq = _factorize_objects(d)
    except TypeError:      # unhashable values (arrays, ...)
        return None
    try:
        ref = weakref.ref(d, lambda _r: _DICT_CACHE.pop(key, None))
        _DICT_CACHE[key] = (ref, codes, uniq)
    except TypeError:
        pass
    return codes, uniq


def dict_codes(col: Col) -> tuple[np.ndarray, np.ndarray] | None:
    """An object column as (codes, distinct values), None for other columns.

    A gathered column (TakenCol: the rows of a stored column picked by joins
    and filters) is encoded through its source, so a join's output reuses the
    stored column's codes and never gathers the strings themselves.  Values
    under the NULL mask get codes too; callers mask them."""
    if isinstance(col, FixedCol):
        return None
    if isinstance(col, TakenCol) and col._gathered is None:
        src = col._src.data
        if src.dtype != object:
            return None
        enc = _encoded(src)
        return None if enc is None else (enc[0][col._idx], enc[1])
    d = col.data
    if d.dtype != object:
        return None
    return _encoded(d)


_DICT_SAFE: tuple = ()


def _single_column(e: Expr) -> int | None:
    """The batch column a deterministic expression reads, when it reads exactly one."""
    cached = getattr(e, "_dict_col", False)
    if cached is not False:
        return cached
    idxs = set()
    ok = True
    for node in e.walk():
        if type(node) is ColRef:
            idxs.add(node.idx)
        elif not isinstance(node, _DICT_SAFE) or (isinstance(node, Func) and node.volatile):
            ok = False
            break
    res = idxs.pop() if ok and len(idxs) == 1 else None
    try:
        e._dict_col = res
    except AttributeError:
        pass
    return res


def eval_pred(e: Expr, batch: Batch, ctx) -> Col:
    """Evaluate a boolean expression; one that reads a single string column is
    evaluated once per distinct value of that column and spread by its codes
    (TPC-H's shipmode, brand, type, phone-prefix and comment predicates)."""
    if batch.n >= 1024 and e.oid == type_oids.BOOL:
        i = _single_column(e)
        if i is not None:
            col = batch.cols[i]
            if col.nulls is None and col.oid != type_oids.BOOL and _worth_encoding(col):
                enc = dict_codes(col)
                if enc is not None and len(enc[1]) * 2 <= batch.n:
                    codes, uniq = enc
                    ucol = Col(uniq, None, col.oid)
                    ub = Batch([ucol] * len(batch.cols), len(uniq))
                    r = e.eval(ub, ctx)
                    return Col(r.data[codes], None if r.nulls is None else r.nulls[codes], type_oids.BOOL)
    return e.eval(batch, ctx)


def _worth_encoding(col: Col) -> bool:
    """Whether encoding ``col`` for :func:`eval_pred` may pay: its codes are
    cached (a stored column, or a column gathered from one), or a sample of
    its values repeats.  A fresh, mostly distinct batch (a stream's) would
    pay the encoding and then evaluate every row anyway."""
    if type(col) is FixedCol:
        return False        # compared in scaled integers already; its .data would build a Decimal per row
    if type(col) is TakenCol and col._gathered is None:
        # encoded through its source (dict_codes): reading .data here would gather the strings
        # and then encode the fresh copy instead of reusing the source's cached codes
        return _worth_encoding(col._src)
    d = col.data
    if type(col) is not Col or d.dtype != object:
        return True
    hit = _DICT_CACHE.get(id(d))
    if hit is not None and hit[0]() is d:
        return True
    try:
        return len(set(d[:_SAMPLE].tolist())) * 2 <= min(_SAMPLE, len(d))
    except TypeError:       # unhashable values: no encoding either
        return False


_SAMPLE = 4096

_DICT_SAFE = (ColRef, Const, Param, Cast, Compare, IsDistinct, And, Or, Not, IsNull, IsBool, Case, Coalesce,
              InList, Like, Func, Concat)
