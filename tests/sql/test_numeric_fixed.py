"""The fixed-point NUMERIC path (catalog.vector.FixedCol) must agree digit for
digit with the Decimal path it short-cuts: same values, same display scale,
same NULLs.  Runs in-process on random columns; no servers needed."""
from __future__ import annotations

import decimal

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Batch, Col, FixedCol, fixed_view
from splitstream.executor.execution import expr
from splitstream.executor.execution.aggregates import AggSpec, GroupTable
from splitstream.protocol import oids as type_oids
from splitstream.protocol.types import encode_text

D = decimal.Decimal


def _numeric_col(rng, n, scale, with_nulls=True):
    ints = rng.integers(-10**9, 10**9, n)
    vals = [D(int(v)).scaleb(-scale) for v in ints]
    if with_nulls:
        for i in rng.choice(n, n // 7, replace=False):
            vals[i] = None
    return Col.from_pylist(vals, type_oids.NUMERIC)


def _texts(col: Col) -> list:
    return [None if v is None else encode_text(type_oids.NUMERIC, v) for v in col.to_pylist()]


class _Ref(expr.Expr):
    """A column reference that hands out a prepared column (fixed or not)."""

    oid = type_oids.NUMERIC

    def __init__(self, col):
        self.col = col

    def eval(self, batch, ctx):
        return self.col


@pytest.mark.parametrize("op", ["+", "-", "*"])
@pytest.mark.parametrize("sa,sb", [(2, 2), (2, 3), (0, 4), (3, 0)])
def test_arith_matches_decimal(op, sa, sb):
    rng = np.random.default_rng(sa * 10 + sb)
    n = 300
    a, b = _numeric_col(rng, n, sa), _numeric_col(rng, n, sb)
    fa, fb = fixed_view(a, sa, 15), fixed_view(b, sb, 15)
    assert isinstance(fa, FixedCol) and isinstance(fb, FixedCol)
    batch = Batch([], n)
    fast = expr.Arith(op, _Ref(fa), _Ref(fb), type_oids.NUMERIC).eval(batch, None)
    assert isinstance(fast, FixedCol)
    slow = expr.Arith(op, _Ref(a), _Ref(b), type_oids.NUMERIC).eval(batch, None)
    assert _texts(fast) == _texts(slow)


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_compare_with_constant(op):
    rng = np.random.default_rng(7)
    a = _numeric_col(rng, 200, 2)
    fa = fixed_view(a, 2, 15)
    k = expr.Const(D(a.to_pylist()[3] or 1), type_oids.NUMERIC)
    batch = Batch([], 200)
    fast = expr.Compare(op, _Ref(fa), k).eval(batch, None)
    slow = expr.compare_cols(op, a, k.eval(batch, None))
    assert fast.to_pylist() == slow.to_pylist()


def test_grouped_sum_and_avg_match():
    rng = np.random.default_rng(3)
    n = 1000
    a = _numeric_col(rng, n, 2)
    keys = Col(rng.integers(0, 5, n).astype(np.int32), None, type_oids.INT4)
    results = []
    for col in (a, fixed_view(a, 2, 15)):
        specs = [AggSpec("sum", [None], [type_oids.NUMERIC]), AggSpec("avg", [None], [type_oids.NUMERIC])]
        t = GroupTable([type_oids.INT4], specs)
        valid = col.valid_mask() if col.nulls is not None else None
        t.consume([keys], [([col], valid), ([col], valid)], n)
        res = t.result()
        order = np.argsort(res.cols[0].data)
        results.append([[_texts(c)[i] for i in order] for c in res.cols[1:]])
    assert results[0] == results[1]


def test_cache_and_lazy_decimals():
    rng = np.random.default_rng(5)
    a = _numeric_col(rng, 100, 2, with_nulls=False)
    f1, f2 = fixed_view(a, 2, 15), fixed_view(a, 2, 15)
    assert f1.fx is f2.fx  # converted once per data array
    assert fixed_view(a, 2, 20) is None  # beyond float64's exact range: no fast path
    taken = f1.take(np.array([3, 1, 2]))
    assert _texts(taken) == [_texts(a)[i] for i in (3, 1, 2)]
    assert len(Col.concat([taken, f1.slice(0, 2)])) == 5
