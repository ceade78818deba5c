"""Join sizes by following a sample through the join's other side (index-
based join sampling, Leis et al., "Cardinality Estimation Done Right", CIDR
2017), for what EXPLAIN estimates (``estimates``).

Why: ``|R|·|S| / max(ndv)`` assumes the two sides' filters are independent.
TPC-H's are not (Q3: orders before a date joined to lineitems shipped after
it; a lineitem ships within months of its order), and the formula is then
off by more than ten times.  Instead, the driving side's sample rows look up
their partners in the other side's *full* tables through a sorted key index,
and the other side's own filters are evaluated on the partners found; the
joined sample's size, scaled, is the estimate, and it keeps every column's
correlation.

:func:`extend` follows a plan subtree made of scans, filters, projections
and inner hash joins; anything else (aggregates, outer joins, functions)
answers None and the caller falls back to the formula.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col

from ...execution import expr
from ...execution import operators
from . import cardinality

#: rows joined at most per estimate (a many-to-many join can explode a sample)
MAX_ROWS = 1 << 16


class Extended:
    """Rows of a subtree joined to driving sample rows: ``idx`` the driving
    row of each, ``batch`` the subtree's output columns, ``factor`` the
    selectivity of conditions that could not be evaluated on the rows."""

    def __init__(self, idx: np.ndarray, batch: Batch, factor: float = 1.0) -> None:
        self.idx, self.batch, self.factor = idx, batch, factor


class _Index:
    """A table snapshot's rows (in the scan's column form) and one column sorted."""

    def __init__(self, batch: Batch, col: int) -> None:
        c = batch.cols[col]
        valid = np.flatnonzero(c.valid_mask())
        order = np.argsort(c.data[valid], kind="stable")
        self.batch = batch
        self.pos = valid[order]
        self.keys = c.data[self.pos]

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``values``, table row) of every match."""
        lo = np.searchsorted(self.keys, values, side="left")
        hi = np.searchsorted(self.keys, values, side="right")
        counts = hi - lo
        which = np.repeat(np.arange(len(values)), counts)
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        rows = self.pos[starts + np.arange(len(which))] if len(which) else np.zeros(0, dtype=np.int64)
        return which, rows


_indexes: dict[tuple[int, int], tuple[Any, _Index]] = {}
_lock = threading.Lock()


def _index(scan: operators.TableScan, tv, col: int) -> _Index:
    key = (scan.rel.oid, col)
    with _lock:
        hit = _indexes.get(key)
        if hit is not None and hit[0] is tv:
            return hit[1]
    batch = scan._fixed(tv.scan()[0])     # noqa: SLF001 - the scan's own column form
    ix = _Index(batch, col)
    with _lock:
        _indexes[key] = (tv, ix)
    return ix


def extend(keys: list[Col], op: operators.Op, op_keys: list[expr.Expr], state, rows: dict) -> Extended | None:
    """The rows of ``op`` whose ``op_keys`` equal ``keys`` (columns over the
    driving sample), or None when ``op`` cannot be followed."""
    if not keys or not all(isinstance(k, expr.ColRef) for k in op_keys):
        return None
    try:
        return _extend(keys, op, [k.idx for k in op_keys], state, rows)     # type: ignore[attr-defined]
    except (TypeError, ValueError, IndexError):
        return None           # keys of types that do not compare: no estimate this way


def _extend(keys: list[Col], op, cols: list[int], state, rows: dict) -> Extended | None:
    known = rows.get(op)
    if known is not None and known.sample is not None and known.scale == 1.0 and known.sample.n <= MAX_ROWS:
        return _match(keys, _Index(known.sample, cols[0]), cols)      # its whole output is known
    if isinstance(op, operators.TableScan):
        return _lookup(keys, op, cols, state)
    if isinstance(op, (operators.Sort, operators.Materialized)):
        return _extend(keys, op.children[0], cols, state, rows)
    if isinstance(op, operators.Filter):
        return _through_filter(keys, op, cols, state, rows)
    if isinstance(op, operators.Project):
        inner = [op.exprs[c] for c in cols]
        if not all(isinstance(e, expr.ColRef) for e in inner):
            return None
        ext = _extend(keys, op.child, [e.idx for e in inner], state, rows)      # type: ignore[attr-defined]
        if ext is None:
            return None
        return Extended(ext.idx, Batch([e.eval(ext.batch, None) for e in op.exprs], ext.batch.n), ext.factor)
    if isinstance(op, operators.HashJoin) and op.kind == "inner":
        return _through_join(keys, op, cols, state, rows)
    return None


def _lookup(keys: list[Col], scan: operators.TableScan, cols: list[int], state) -> Extended | None:
    tv = state.data.get(scan.rel.oid) if getattr(state, "data", None) is not None else None
    if tv is None or scan.with_positions:
        return None
    return _match(keys, _index(scan, tv, cols[0]), cols)


def _match(keys: list[Col], ix: _Index, cols: list[int]) -> Extended | None:
    first = keys[0]
    valid = np.flatnonzero(first.valid_mask())
    which, found = ix.lookup(first.data[valid])
    which = valid[which]
    if len(which) > MAX_ROWS:
        return None
    batch = ix.batch.take(found)
    keep = np.ones(len(which), dtype=bool)
    for k, c in zip(keys[1:], cols[1:]):
        other = batch.cols[c]
        keep &= (k.data[which] == other.data) & k.valid_mask()[which] & other.valid_mask()
    if not keep.all():
        which, batch = which[keep], batch.filter(keep)
    return Extended(which, batch)


def _through_filter(keys, op: operators.Filter, cols, state, rows: dict) -> Extended | None:
    ext = _extend(keys, op.child, cols, state, rows)
    if ext is None:
        return None
    mask = cardinality.truth(op.pred, ext.batch) if ext.batch.n else None
    if mask is None:
        # a condition that only runs at execution (a subquery): its estimated selectivity
        below = rows.get(op.child)
        sel = rows[op].rows / below.rows if below is not None and op in rows else cardinality.DEFAULT_SELECTIVITY
        return Extended(ext.idx, ext.batch, ext.factor * min(sel, 1.0))
    return Extended(ext.idx[mask], ext.batch.filter(mask), ext.factor)


def _through_join(keys, op: operators.HashJoin, cols, state, rows: dict) -> Extended | None:
    """Follow the side the keys belong to, then from its rows the other side."""
    nl = len(op.left.out)
    if all(c < nl for c in cols):
        first, second, fkeys, skeys, left_first = op.left, op.right, op.lkeys, op.rkeys, True
        fcols = cols
    elif all(c >= nl for c in cols):
        first, second, fkeys, skeys, left_first = op.right, op.left, op.rkeys, op.lkeys, False
        fcols = [c - nl for c in cols]
    else:
        return None
    a = _extend(keys, first, fcols, state, rows)
    if a is None:
        return None
    b = extend([k.eval(a.batch, None) for k in fkeys], second, skeys, state, rows) if a.batch.n else \
        Extended(np.zeros(0, dtype=np.int64), Batch.empty(second.oids))
    if b is None:
        return None
    a_rows = a.batch.take(b.idx)
    joined = Batch(a_rows.cols + b.batch.cols, b.batch.n) if left_first else Batch(b.batch.cols + a_rows.cols, b.batch.n)
    ext = Extended(a.idx[b.idx], joined, a.factor * b.factor)
    if op.residual is not None and joined.n:
        mask = cardinality.truth(op.residual, joined)
        if mask is not None:
            ext = Extended(ext.idx[mask], joined.filter(mask), ext.factor)
    return ext


#: groups drawn to estimate what a grouped input's HAVING keeps
GROUPS = 4096


def group_sample(op: operators.Aggregate, state, rows: dict) -> tuple[Batch, float] | None:
    """A uniform sample of the groups of a one-key aggregate: key values
    drawn uniformly from the key column's distinct values (a row sample
    would favour large groups), every row of each drawn group found through
    the key index, aggregated as the operator does.  Returns the groups and
    how many groups each stands for."""
    if op.grouping_sets is not None or len(op.keys) != 1 or not isinstance(op.keys[0], expr.ColRef):
        return None
    base = _base_column(op.child, op.keys[0].idx)
    if base is None:
        return None
    scan, col = base
    tv = state.data.get(scan.rel.oid) if getattr(state, "data", None) is not None else None
    if tv is None or scan.with_positions:
        return None
    try:
        ix = _index(scan, tv, col)
        distinct = ix.keys[np.r_[True, ix.keys[1:] != ix.keys[:-1]]] if len(ix.keys) else ix.keys
        total = len(distinct)           # the keys are sorted: their distinct values, counted once
        if len(distinct) > GROUPS:
            distinct = np.sort(np.random.default_rng(0x5EED).choice(distinct, GROUPS, replace=False))
        keys = Col(distinct, None, op.keys[0].oid)
        ext = extend([keys], op.child, [op.keys[0]], state, rows)
        if ext is None:
            return None
        groups = op._one_shot(ext.batch, None)          # noqa: SLF001 - the operator's own aggregation
    except Exception:       # noqa: BLE001 - an estimate never fails the statement
        return None
    return groups, ext.factor * total / max(len(distinct), 1)


def _base_column(op: operators.Op, idx: int) -> tuple[operators.TableScan, int] | None:
    """The table column an output column of a scan/filter/projection chain is."""
    while True:
        if isinstance(op, operators.TableScan):
            return op, idx
        if isinstance(op, (operators.Filter, operators.Sort, operators.Materialized)):
            op = op.children[0]
        elif isinstance(op, operators.Project) and isinstance(op.exprs[idx], expr.ColRef):
            idx, op = op.exprs[idx].idx, op.child       # type: ignore[attr-defined]
        else:
            return None
