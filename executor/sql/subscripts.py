"""Array slices, ``a[lo:hi]``, ``a[:hi]``, ``a[lo:]``.

Why a module of its own: a slice is an array of the same type (a subscript
gives an element), with PostgreSQL's clamping of the bounds to the array's
extent, and the binder's subscript rule stays about elements.  Every lower
bound is 1 in splitstream, so a slice is renumbered from 1 as PostgreSQL
does for the result of a slice.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from ..execution import expr


def _bound(binder, node: exp.Expr | None) -> expr.Expr:
    if node is None:
        return expr.Const(None, type_oids.INT4)
    return binder.p.coerce(binder.bind(node), type_oids.INT4)


def _cut(arr: list | None, lo: int | None, hi: int | None, lo_given: bool, hi_given: bool) -> list | None:
    if arr is None or (lo_given and lo is None) or (hi_given and hi is None):
        return None
    start = max(lo if lo is not None else 1, 1)
    end = min(hi if hi is not None else len(arr), len(arr))
    return arr[start - 1:end] if start <= end else []


def bind_slice(binder, array: expr.Expr, sl: exp.Slice) -> expr.Expr:
    lo_node, hi_node = sl.args.get("this"), sl.args.get("expression")
    lo, hi = _bound(binder, lo_node), _bound(binder, hi_node)
    oid = array.oid

    def impl(cols, nrows, ctx):
        arrays, los, his = (c.to_pylist() for c in cols)
        return Col.from_pylist([_cut(a, x, y, lo_node is not None, hi_node is not None)
                                for a, x, y in zip(arrays, los, his)], oid)

    return expr.Func("array_slice", impl, [array, lo, hi], oid)
