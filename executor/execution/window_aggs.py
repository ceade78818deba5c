"""Aggregates over window frames given as pieces (``window_frames``),
computed with numpy over all rows at once, never a row list per row.

* count, and sums of integers and numerics: prefix sums (exact: integers
  as int64 or Python ints, numerics as decimals with room to spare; NaN and
  infinities counted apart, so one leaving the frame leaves no trace);
* sums and averages of floats: exactly as PostgreSQL adds them, which has no
  inverse for floats and adds each frame's values in row order: a running
  frame is a sequential cumulative sum per partition, any other frame a loop
  over the frame's width (each step one vector operation over every row);
* min, max, bool_and/bool_or/every and bit_and/bit_or: a sparse table
  (idempotent operators: two overlapping power-of-two ranges cover a frame),
  or a cumulative min/max per partition when every frame starts or ends at
  the partition's edge.

Anything else returns None, and the caller aggregates each frame's rows.
"""
from __future__ import annotations

import decimal

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from . import expr
from .block_scans import fixed_ranges
from .window_frames import Pieces

_IDEMPOTENT = {"min": "min", "max": "max", "bool_and": "min", "every": "min", "bool_or": "max",
               "bit_and": "and", "bit_or": "or"}
_WIDE = decimal.Context(prec=2000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def frame_aggregate(agg, args: list[Col], pieces: Pieces, ps: np.ndarray, pe: np.ndarray,
                    n: int, oid: int) -> Col | None:
    if agg.distinct or agg.order_key is not None or agg.filter is not None:
        return None
    if agg.star:
        return Col(_count(np.ones(n, bool), pieces), None, type_oids.INT8)
    if len(args) != 1:
        return None
    a = args[0]
    if agg.func == "count":
        return Col(_count(a.valid_mask(), pieces), None, type_oids.INT8)
    kind = a.data.dtype.kind
    if agg.func in ("sum", "avg"):
        if kind == "f":
            return _float_sum(agg.func, a, pieces, ps, n, oid)
        if kind in "iub":
            return _int_sum(agg.func, a, pieces, oid)
        if a.oid == type_oids.NUMERIC:
            return _numeric_sum(agg.func, a, pieces, oid)
        return None
    op = _IDEMPOTENT.get(agg.func)
    if op is not None and kind in "iufbM":
        return _idempotent(op, a, pieces, ps, pe, oid)
    return None


def first_in_frame(pieces: Pieces, nth: np.ndarray | int, last: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The row of each frame's ``nth`` row (1-based), or its last row; and
    whether the frame has one."""
    if last:
        src = np.full(len(pieces[0][0]), -1, np.int64)
        for lo, hi in pieces:
            src = np.where(hi >= lo, hi, src)
        return src, src >= 0
    k = np.asarray(nth, dtype=np.int64) - 1 + np.zeros(len(pieces[0][0]), np.int64)
    src = np.full(len(k), -1, np.int64)
    for lo, hi in pieces:
        size = np.maximum(hi - lo + 1, 0)
        here = (src < 0) & (k >= 0) & (k < size)
        src = np.where(here, lo + k, src)
        k = k - size
    return src, src >= 0


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1, values.dtype), np.cumsum(values)])


def _over(pref: np.ndarray, pieces: Pieces):
    """Sum of a prefix-summed quantity over each row's pieces."""
    total = None
    for lo, hi in pieces:
        part = np.where(hi >= lo, pref[np.clip(hi + 1, 0, len(pref) - 1)] - pref[np.clip(lo, 0, len(pref) - 1)], 0)
        total = part if total is None else total + part
    return total


def _count(valid: np.ndarray, pieces: Pieces) -> np.ndarray:
    return _over(_prefix(valid.astype(np.int64)), pieces).astype(np.int64)


def _int_sum(func: str, a: Col, pieces: Pieces, oid: int) -> Col:
    valid = a.valid_mask()
    cnt = _count(valid, pieces)
    d = np.where(valid, a.data, 0).astype(np.int64)
    # int64 prefix sums are exact unless they could overflow; then Python ints
    # (Python ints for the bound: np.abs of int64's minimum is itself, negative, and hid the risk)
    bound = max(abs(int(d.max(initial=0))), abs(int(d.min(initial=0)))) * max(len(d), 1)
    vals = d if bound < 2**62 else d.astype(object)
    s = _over(_prefix(vals), pieces)
    nulls = cnt == 0
    if func == "avg":
        out = [None if z else expr.numeric_op("/", decimal.Decimal(int(v)), decimal.Decimal(int(c)))
               for v, c, z in zip(s.tolist(), cnt.tolist(), nulls.tolist())]
        return Col.from_pylist(out, oid)
    if sqltypes.dtype_of(oid) == np.dtype(object):
        return Col.from_pylist([None if z else decimal.Decimal(int(v)) for v, z in zip(s.tolist(), nulls.tolist())], oid)
    return Col(np.asarray(s).astype(sqltypes.dtype_of(oid)), nulls, oid)


def _numeric_sum(func: str, a: Col, pieces: Pieces, oid: int) -> Col:
    vals = a.to_pylist()
    valid = np.array([v is not None for v in vals], bool)
    cnt = _count(valid, pieces)
    nan = _count(np.array([v is not None and v.is_nan() for v in vals], bool), pieces)
    pinf = _count(np.array([v is not None and v.is_infinite() and v > 0 for v in vals], bool), pieces)
    ninf = _count(np.array([v is not None and v.is_infinite() and v < 0 for v in vals], bool), pieces)
    finite = np.array([v if v is not None and v.is_finite() else decimal.Decimal(0) for v in vals], dtype=object)
    with decimal.localcontext(_WIDE):
        s = _over(_prefix(finite), pieces)
    out: list[decimal.Decimal | None] = []
    for i in range(len(vals)):
        if cnt[i] == 0:
            out.append(None)
            continue
        if nan[i] or (pinf[i] and ninf[i]):
            v = decimal.Decimal("NaN")
        elif pinf[i] or ninf[i]:
            v = decimal.Decimal("Infinity" if pinf[i] else "-Infinity")
        else:
            v = s[i] if isinstance(s[i], decimal.Decimal) else decimal.Decimal(int(s[i]))
        if func == "avg":
            v = expr.numeric_op("/", v, decimal.Decimal(int(cnt[i])))
        out.append(v)
    return Col.from_pylist(out, oid)


def _float_sum(func: str, a: Col, pieces: Pieces, ps: np.ndarray, n: int, oid: int) -> Col:
    valid = a.valid_mask()
    cnt = _count(valid, pieces)
    # sum(real) adds in real; avg, and sums of double precision, in double
    dtype = np.float32 if func == "sum" and a.data.dtype == np.float32 else np.float64
    # -0.0 is the identity of IEEE addition (x + -0.0 == x, -0.0 included): NULLs
    # add it, and PostgreSQL's sum, which starts from the first value, starts
    # from it; avg's accumulator starts from 0.0 as float8_accum's does
    x = np.where(valid, a.data, -0.0).astype(dtype)
    start = dtype(-0.0) if func == "sum" else dtype(0.0)
    with np.errstate(all="ignore"):
        if len(pieces) == 1 and np.array_equal(pieces[0][0], ps):
            s = _running_sums(x, pieces[0], ps, start)
        else:
            s = np.full(n, start, dtype)
            padded = np.append(x, dtype(-0.0))      # position n: the identity, for rows past their frame
            for lo, hi in pieces:
                width = int((hi - lo + 1).max(initial=0))
                for j in range(width):
                    pos = lo + j
                    s += padded[np.where(pos <= hi, pos, n)]
        nulls = cnt == 0
        if func == "avg":
            return Col((s / np.maximum(cnt, 1)).astype(np.float64), nulls, oid)
    return Col(s.astype(sqltypes.dtype_of(oid)), nulls, oid)


def _running_sums(x: np.ndarray, piece, ps: np.ndarray, start) -> np.ndarray:
    """Frames from the partition's first row: one sequential cumulative sum per partition."""
    lo, hi = piece
    cs = np.empty_like(x)
    starts = np.unique(ps)
    ends = np.append(starts[1:], len(x))
    for a, b in zip(starts.tolist(), ends.tolist()):
        seg = x[a:b].copy()
        seg[0] = start + seg[0]
        cs[a:b] = np.cumsum(seg)
    return np.where(hi >= lo, cs[np.clip(hi, 0, len(x) - 1)], start)


def _idempotent(op: str, a: Col, pieces: Pieces, ps: np.ndarray, pe: np.ndarray, oid: int) -> Col:
    valid = a.valid_mask()
    cnt = _count(valid, pieces)
    d = a.data
    if d.dtype.kind == "M":
        x = d.view(np.int64)
    elif d.dtype.kind == "b":
        x = d.astype(np.uint8)
    else:
        x = d
    is_float = x.dtype.kind == "f"
    nan_cnt = _count(valid & np.isnan(x), pieces) if is_float else None
    ident = _identity(op, x.dtype)
    x = np.where(valid, x, ident)
    if is_float and op == "min":
        x = np.where(np.isnan(x), ident, x)      # NaN is the largest value; it wins only alone
    fn = _ufunc(op)
    res = None
    for lo, hi in pieces:
        part = _range_reduce(fn, x, lo, hi, ps, pe, ident)
        res = part if res is None else fn(res, part)
    assert res is not None
    if nan_cnt is not None and op == "min":
        res = np.where((nan_cnt > 0) & (nan_cnt == cnt), np.nan, res)
    if d.dtype.kind == "M":
        res = np.where(cnt == 0, 0, res).view(d.dtype)      # no out-of-range placeholder under a NULL
    elif d.dtype.kind == "b":
        res = res.astype(bool)
    return Col(res.astype(sqltypes.dtype_of(oid), copy=False) if d.dtype.kind != "M" else res, cnt == 0, oid)


def _identity(op: str, dtype: np.dtype):
    if op == "and":
        return np.array(-1).astype(dtype)
    if op == "or":
        return dtype.type(0)
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def _ufunc(op: str):
    return {"min": np.fmin, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or}[op]


def _range_reduce(fn, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, ps: np.ndarray, pe: np.ndarray, ident):
    """``fn`` over x[lo..hi] for every row (``ident`` where the range is empty)."""
    n = len(x)
    empty = hi < lo
    if not n:
        return x.copy()
    if np.array_equal(lo[~empty], ps[~empty]):
        acc = _segmented(fn.accumulate, x, ps, reverse=False)
        return np.where(empty, ident, acc[np.clip(hi, 0, n - 1)])
    if np.array_equal(hi[~empty], pe[~empty]):
        acc = _segmented(fn.accumulate, x, ps, reverse=True)
        return np.where(empty, ident, acc[np.clip(lo, 0, n - 1)])
    fixed = _fixed_width(fn, x, lo, hi, ps, pe, ident, empty)
    if fixed is not None:
        return fixed
    length = np.where(empty, 1, hi - lo + 1)
    levels = [x]
    while (1 << len(levels)) <= int(length.max(initial=1)):
        prev, half = levels[-1], 1 << (len(levels) - 1)
        levels.append(fn(prev[:-half], prev[half:]) if len(prev) > half else prev[:0])
    k = np.floor(np.log2(length)).astype(np.int64)
    out = np.full(n, ident, x.dtype)
    for lvl in np.unique(k[~empty]).tolist():
        rows = np.flatnonzero((k == lvl) & ~empty)
        t = levels[lvl]
        out[rows] = fn(t[lo[rows]], t[hi[rows] - (1 << lvl) + 1])
    return out


def _fixed_width(fn, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, ps: np.ndarray, pe: np.ndarray, ident,
                 empty: np.ndarray) -> np.ndarray | None:
    """A moving frame of one width (ROWS n PRECEDING / FOLLOWING): Two-Stacks
    with block flips (:mod:`.block_scans`), O(1) per row whatever the width,
    where the sparse table costs a level per doubling.  Frames cut short by a
    partition's edge read the partition's running scan.  None when some
    frame is neither full width nor cut at an edge."""
    length = hi - lo + 1
    width = int(length.max(initial=0))
    full = ~empty & (length == width)
    if width < 2 or not full.any():
        return None
    starts = ~empty & ~full & (lo == ps)
    ends = ~empty & ~full & ~starts & (hi == pe)
    if (~empty & ~full & ~starts & ~ends).any():
        return None
    out = np.full(len(x), ident, x.dtype)
    rows = np.flatnonzero(full)
    out[rows] = fixed_ranges(fn, x, lo[rows], width, ident)
    if starts.any():
        out[starts] = _segmented(fn.accumulate, x, ps, reverse=False)[hi[starts]]
    if ends.any():
        out[ends] = _segmented(fn.accumulate, x, ps, reverse=True)[lo[ends]]
    return out


def _segmented(accumulate, x: np.ndarray, ps: np.ndarray, reverse: bool) -> np.ndarray:
    """A cumulative reduction restarting at each partition (from its end when ``reverse``)."""
    out = np.empty_like(x)
    starts = np.unique(ps)
    ends = np.append(starts[1:], len(x))
    for a, b in zip(starts.tolist(), ends.tolist()):
        out[a:b] = accumulate(x[a:b][::-1])[::-1] if reverse else accumulate(x[a:b])
    return out
