"""``column op constant`` against a broadcast one-element array
(expr.compare_scalar) answers exactly what the general compare_cols does,
infinities, NULLs and mixed integer widths included."""
from __future__ import annotations

import datetime

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.executor.execution import expr
from splitstream.protocol import oids
from splitstream.protocol import types as wire

OPS = ["=", "<>", "<", "<=", ">", ">="]


def _dates() -> Col:
    raw = np.array([9000, 10470, 10471, 10472, 0, wire.DT64_POS_INF, wire.DT64_NEG_INF, 10471], dtype=np.int64)
    nulls = np.zeros(len(raw), bool)
    nulls[4] = True
    return Col(raw.view("datetime64[D]"), nulls, oids.DATE)


@pytest.mark.parametrize("op", OPS)
def test_dates_against_a_date_constant(op):
    col = _dates()
    const = expr.Const(datetime.date(1998, 9, 2), oids.DATE)
    fast = expr.compare_scalar(op, col, const)
    assert fast is not None
    slow = expr.compare_cols(op, col, const.eval(Batch([col], len(col)), None))
    valid = ~slow.null_mask()
    assert fast.null_mask().tolist() == slow.null_mask().tolist()
    assert fast.data[valid].tolist() == slow.data[valid].tolist()
    # the infinities order around every date
    assert bool(fast.data[5]) == (op in ("<>", ">", ">=")) and bool(fast.data[6]) == (op in ("<>", "<", "<="))


@pytest.mark.parametrize("op", OPS)
def test_int4_column_against_int8_constant(op):
    col = Col(np.array([-5, 0, 7, 2**31 - 1], dtype=np.int32), None, oids.INT4)
    const = expr.Const(2**31 - 1, oids.INT8)
    fast = expr.compare_scalar(op, col, const)
    assert fast is not None
    slow = expr.compare_cols(op, col, const.eval(Batch([col], len(col)), None))
    assert fast.data.tolist() == slow.data.tolist()


def test_other_types_take_the_general_path():
    text = Col(np.array(["a", "b"], dtype=object), None, oids.TEXT)
    assert expr.compare_scalar("=", text, expr.Const("a", oids.TEXT)) is None
    floats = Col(np.array([1.0, np.nan]), None, oids.FLOAT8)
    assert expr.compare_scalar("=", floats, expr.Const(1.0, oids.FLOAT8)) is None   # NaN = NaN in PostgreSQL
    assert expr.compare_scalar("=", _dates(), expr.Const(None, oids.DATE)) is None


def test_fixed_point_numerics_are_left_to_fixed_compare():
    """A FixedCol's .data would build one Decimal per row (Q18's HAVING over
    1.5M groups): compare_scalar must not touch it."""
    from splitstream.catalog.datatypes.vector import FixedCol

    col = FixedCol(np.array([100, 30100, 29900], dtype=np.int64), 2, None)
    assert expr.compare_scalar(">", col, expr.Const(300, oids.INT4)) is None
    assert col._dec is None
