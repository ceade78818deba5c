"""PostgreSQL operators sqlglot parses into nodes the binder had no rule for:
the integer bit operators (``& | # ~ << >>``), the array operators ``<@``
and ``&&``, and the prefix operators ``|/``, ``||/`` and ``@``.

Why a module of its own: each is a small rule (argument types, result type,
a vectorised body) and none belongs to the general expression binder; they
are attached to :class:`ExprBinder` by node class, as ``names.py`` attaches
``_BoundRef``.  An operator's column is unnamed (``?column?``): these nodes
carry no written function name.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from ..execution import expr
from ..execution import json_operators as jop
from .binder import ExprBinder

_INTS = (type_oids.INT2, type_oids.INT4, type_oids.INT8)
def _no_operator(symbol: str, oids: list[int]) -> PgError:
    return expr.prefix_operator_missing(symbol, oids[0]) if len(oids) == 1 else \
        expr.operator_missing(symbol, oids[0], oids[1])


def _int_operand(binder, node, other_oid: int = type_oids.INT4) -> expr.Expr:
    e = binder.bind(node)
    return binder.p.coerce(e, other_oid) if e.oid == type_oids.UNKNOWN else e


def _masked(fn: Callable[..., np.ndarray], oid: int) -> Callable:
    """A column function of int arrays; a NULL in any argument is NULL."""
    dtype = {type_oids.INT2: np.int16, type_oids.INT4: np.int32, type_oids.INT8: np.int64}[oid]

    def impl(cols: list[Col], nrows: int, ctx) -> Col:
        nulls = np.zeros(nrows, dtype=bool)
        datas = []
        for c in cols:
            nulls |= c.null_mask()
            datas.append(np.where(c.valid_mask(), c.data, 0).astype(c.data.dtype if c.data.dtype != object else dtype))
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*datas)).astype(dtype)
        return Col(out, nulls, oid)

    return impl


_BINARY_BITS = {
    exp.BitwiseAnd: ("&", np.bitwise_and), exp.BitwiseOr: ("|", np.bitwise_or), exp.BitwiseXor: ("#", np.bitwise_xor),
}


def _bit_binary(self, n):
    symbol, fn = _BINARY_BITS[type(n)]
    left, right = self.bind(n.this), self.bind(n.expression)
    if left.oid == type_oids.UNKNOWN:
        left = self.p.coerce(left, right.oid if right.oid in _INTS else type_oids.INT4)
    if right.oid == type_oids.UNKNOWN:
        right = self.p.coerce(right, left.oid)
    if left.oid not in _INTS or right.oid not in _INTS:
        raise _no_operator(symbol, [left.oid, right.oid])
    oid = sqltypes.common_type(left.oid, right.oid)
    left, right = self.p.coerce(left, oid), self.p.coerce(right, oid)
    return expr.Func(symbol, _masked(fn, oid), [left, right], oid)


def _shift(self, n):
    symbol = "<<" if isinstance(n, exp.BitwiseLeftShift) else ">>"
    left, right = _int_operand(self, n.this), _int_operand(self, n.expression)
    if left.oid not in _INTS or right.oid not in _INTS:
        raise _no_operator(symbol, [left.oid, right.oid])
    right = self.p.coerce(right, type_oids.INT4)
    if right.oid != type_oids.INT4:
        raise _no_operator(symbol, [left.oid, right.oid])
    bits = {type_oids.INT2: 16, type_oids.INT4: 32, type_oids.INT8: 64}[left.oid]

    def shift(a, b):
        b = (b.astype(np.int64) % bits).astype(a.dtype)      # C on x86 uses the count modulo the width
        return np.left_shift(a, b) if symbol == "<<" else np.right_shift(a, b)

    return expr.Func(symbol, _masked(shift, left.oid), [left, right], left.oid)


def _bit_not(self, n):
    a = _int_operand(self, n.this)
    if a.oid not in _INTS:
        raise _no_operator("~", [a.oid])
    return expr.Func("~", _masked(np.invert, a.oid), [a], a.oid)


def _float_prefix(name: str, symbol: str):
    def bind(self, n):
        a = self.bind(n.this)
        if a.oid not in _INTS + (type_oids.NUMERIC, type_oids.FLOAT4, type_oids.FLOAT8, type_oids.UNKNOWN):
            raise _no_operator(symbol, [a.oid])
        return self.call(name, [self.p.coerce(a, type_oids.FLOAT8)])

    return bind


def _abs(self, n):
    return self.call("abs", [self.bind(n.this)])


def _array_operator(name: str, symbol: str):
    def bind(self, n):
        left, right = self.bind(n.this), self.bind(n.expression)
        if left.oid == type_oids.UNKNOWN:
            left = self.p.coerce(left, right.oid)
        if right.oid == type_oids.UNKNOWN:
            right = self.p.coerce(right, left.oid)
        if left.oid not in type_oids.ELEMENT_OF or right.oid not in type_oids.ELEMENT_OF:
            raise _no_operator(symbol, [left.oid, right.oid])
        return self.call(name, [left, right])

    return bind


def _jsonb_op(name: str, fn: Callable, right_oid: int, result: int) -> Callable:
    """A jsonb operator's column function: NULL in, NULL out; ``fn`` per row."""
    def impl(cols, nrows, ctx):
        return Col.from_pylist([None if x is None or y is None else fn(x, y)
                                for x, y in zip(cols[0].to_pylist(), cols[1].to_pylist())], result)

    def make(binder, left: expr.Expr, right: expr.Expr) -> expr.Expr:
        left = binder.p.coerce(left, type_oids.JSONB)
        right = binder.p.coerce(right, right_oid)
        return expr.Func(name, impl, [left, right], result)

    return make


_TEXT_ARRAY = type_oids.ARRAY_OF[type_oids.TEXT]
_JSONB_CONTAINED = _jsonb_op("jsonb_contained", lambda x, y: jop.jsonb_contains(y, x), type_oids.JSONB, type_oids.BOOL)
#: jsonb - right operand: by the right operand's type (unknown literals are text)
_JSONB_MINUS = {
    type_oids.TEXT: _jsonb_op("jsonb_delete", lambda d, k: jop.delete_keys(d, [k]), type_oids.TEXT, type_oids.JSONB),
    _TEXT_ARRAY: _jsonb_op("jsonb_delete", jop.delete_keys, _TEXT_ARRAY, type_oids.JSONB),
    type_oids.INT4: _jsonb_op("jsonb_delete", jop.delete_index, type_oids.INT4, type_oids.JSONB),
}


def jsonb_minus(binder, left: expr.Expr, right: expr.Expr) -> expr.Expr | None:
    """``jsonb - text | text[] | integer``, or None when the left is not jsonb."""
    if left.oid != type_oids.JSONB:
        return None
    want = {type_oids.UNKNOWN: type_oids.TEXT, type_oids.VARCHAR: type_oids.TEXT, type_oids.INT2: type_oids.INT4}
    make = _JSONB_MINUS.get(want.get(right.oid, right.oid))
    if make is None:
        raise _no_operator("-", [left.oid, right.oid])
    return make(binder, left, right)


def _contained_by(self, n):
    left, right = self.bind(n.this), self.bind(n.expression)
    if type_oids.JSONB in (left.oid, right.oid) and {left.oid, right.oid} <= {type_oids.JSONB, type_oids.UNKNOWN}:
        return _JSONB_CONTAINED(self, left, right)
    return _ARRAY_CONTAINED(self, n)


def _jsonb_rule(make: Callable) -> Callable:
    def bind(self, n):
        return make(self, self.bind(n.this), self.bind(n.expression))

    return bind


_ARRAY_CONTAINED = _array_operator("arraycontained", "<@")

_RULES: dict[str, Callable] = {
    "b_BitwiseAnd": _bit_binary, "b_BitwiseOr": _bit_binary, "b_BitwiseXor": _bit_binary,
    "b_BitwiseLeftShift": _shift, "b_BitwiseRightShift": _shift, "b_BitwiseNot": _bit_not,
    "b_Sqrt": _float_prefix("sqrt", "|/"), "b_Cbrt": _float_prefix("cbrt", "||/"), "b_Abs": _abs,
    "b_ArrayContainedBy": _contained_by,
    "b_JSONBDeleteAtPath": _jsonb_rule(_jsonb_op("jsonb_delete_path", jop.delete_path, _TEXT_ARRAY, type_oids.JSONB)),
    "b_JSONBContainsAnyTopKeys": _jsonb_rule(_jsonb_op("jsonb_exists_any", jop.has_any, _TEXT_ARRAY, type_oids.BOOL)),
    "b_JSONBContainsAllTopKeys": _jsonb_rule(_jsonb_op("jsonb_exists_all", jop.has_all, _TEXT_ARRAY, type_oids.BOOL)),
    "b_ArrayOverlaps": _array_operator("arrayoverlap", "&&"),
}
for _name, _rule in _RULES.items():
    setattr(ExprBinder, _name, _rule)
ExprBinder.jsonb_minus = staticmethod(jsonb_minus)  # type: ignore[attr-defined]
