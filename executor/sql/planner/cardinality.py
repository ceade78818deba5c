"""Cardinality estimates for the join-order search (issue 18, item 4).

Why a module of its own: estimating sizes is independent of how joins are
built; ``join_order`` asks this module how many rows an item, a filtered
item and a join produce, and this module knows nothing of plans.

Where the numbers come from:

- a table's size is its live row count;
- a filter's selectivity is the fraction of a uniform sample of the table
  for which the bound filter is true (evaluated vectorised on the sample
  batch, as the executor would evaluate it);
- a join's output is ``|R|·|S| / max(ndv_R, ndv_S)`` per equality key, the
  distinct counts estimated from the same sample (PostgreSQL's Haas-Stokes
  estimator in ``column_stats``), capped by the filtered row count.

The sample.  The maintained statistics sample (``commands.table_stats``)
costs a pass over the rows appended since it was last read (it hashes
every column for its sketches), too much for planning a statement; the
planner instead draws ``SAMPLE_ROWS`` seeded random positions from the
table snapshot (``TableVersion.take_positions``, the gather both use), an
O(k) read, cached per snapshot so a statement planned again reuses it.  The seed is fixed so a
query gets the same plan every time it is planned on the same data.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids

from ...execution import column_stats, expr
from ...execution import operators

SAMPLE_ROWS = 4096
#: rows assumed for an input nothing is known about (a table function, a system view)
DEFAULT_ROWS = 1000.0
#: selectivity of a condition that cannot be evaluated on a sample (parameters, subqueries)
DEFAULT_SELECTIVITY = 1.0 / 3.0
#: an input smaller than this is not worth sampling: it is its own sample
SMALL_TABLE = SAMPLE_ROWS

class TableSample:
    """A table snapshot's planning sample, and its columns' distinct counts
    (computed the first time a join key asks)."""

    def __init__(self, batch: Batch, total: float) -> None:
        self.batch = batch
        self.total = total
        self._ndv: dict[int, float | None] = {}

    def ndv(self, i: int) -> float | None:
        if i not in self._ndv:
            self._ndv[i] = _ndv(self.batch.cols[i], self.total)
        return self._ndv[i]


_samples: dict[int, tuple[Any, TableSample]] = {}
_lock = threading.Lock()


def table_sample(scan: operators.TableScan, tv) -> TableSample:
    """A seeded uniform sample of the live rows of snapshot ``tv`` of the
    scanned table, with its columns as the scan hands them to filters
    (numeric(p,s) as scaled integers)."""
    oid = scan.rel.oid
    with _lock:
        hit = _samples.get(oid)
        if hit is not None and hit[0] is tv:
            return hit[1]
    cols = tv.take_positions(_sample_ids(tv))
    batch = scan._fixed(Batch(cols, len(cols[0]) if cols else 0))   # noqa: SLF001 - the scan's own column form
    sample = TableSample(batch, float(tv.n_live()))
    with _lock:
        _samples[oid] = (tv, sample)
    return sample


def _sample_ids(tv) -> np.ndarray:
    if tv.n_total <= SMALL_TABLE:
        return np.arange(tv.n_total, dtype=np.int64)
    rng = np.random.default_rng(0x5EED)
    return np.sort(rng.choice(tv.n_total, size=SAMPLE_ROWS, replace=False))


class ItemEstimate:
    """What the join-order search knows of one FROM item: its rows after its
    own filters, and (for a table) its sample, which has distinct counts."""

    def __init__(self, rows: float, table: TableSample | None = None, base_rows: float | None = None) -> None:
        self.rows = max(rows, 1.0)
        self.table = table
        self.base_rows = rows if base_rows is None else base_rows

    @property
    def sample(self) -> Batch | None:
        return self.table.batch if self.table is not None else None

    def key_ndv(self, idx: int) -> float:
        """Distinct values of column ``idx`` among the filtered rows."""
        d = self.table.ndv(idx) if self.table is not None and 0 <= idx < len(self.table.batch.cols) else None
        if d is None:
            return self.rows           # unknown: assume a key
        # filtering keeps a value with the chance that any of its rows survives
        return max(1.0, min(d, self.rows))


def estimate_item(op: operators.Op, state) -> ItemEstimate:
    """Rows and distinct counts of a planned FROM item, before WHERE filters."""
    scan = op if isinstance(op, operators.TableScan) else None
    tv = state.data.get(scan.rel.oid) if scan is not None and getattr(state, "data", None) is not None else None
    if scan is None or tv is None or scan.with_positions:
        return ItemEstimate(op_rows(op, state))
    sample = table_sample(scan, tv)
    return ItemEstimate(sample.total, sample)


def _ndv(col: Col, total: float) -> float | None:
    """The column's distinct count: Haas and Stokes' Duj1 estimator (what
    PostgreSQL's ANALYZE uses) on the sample's value hashes."""
    if len(col) == 0 or col.oid in column_stats.NO_EQUALITY:
        return None
    try:
        hashes = column_stats.hash_values(col)
    except (KeyError, TypeError, ValueError):      # a type the sketches do not hash
        return None
    n = len(hashes)
    if n == 0:
        return None
    _, counts = np.unique(hashes, return_counts=True)
    d, f1 = float(len(counts)), float((counts == 1).sum())
    big_n = total * n / len(col)
    if n >= big_n or f1 == 0:
        return d
    if f1 == d:
        return big_n                   # all unique: a key
    return min(max(n * d / ((n - f1) + f1 * n / big_n), d), big_n)


def apply_filters(est: ItemEstimate, filters: list[expr.Expr]) -> ItemEstimate:
    """``est`` after the single-item conditions ``filters`` (bound to the item)."""
    if not filters:
        return est
    return ItemEstimate(est.rows * selectivity(est, filters), est.table, est.base_rows)


def selectivity(est: ItemEstimate, filters: list[expr.Expr]) -> float:
    """The fraction of the item's sample on which all of ``filters`` hold."""
    if est.sample is None or est.sample.n == 0:
        return DEFAULT_SELECTIVITY ** len(filters)
    sel = 1.0
    mask = np.ones(est.sample.n, dtype=bool)
    for f in filters:
        m = truth(f, est.sample)
        if m is None:
            sel *= DEFAULT_SELECTIVITY
        else:
            mask &= m
    # a filter no sampled row meets still lets some rows through: half a sampled row's worth
    return sel * max(float(mask.sum()), 0.5) / est.sample.n


def truth(f: expr.Expr, sample: Batch) -> np.ndarray | None:
    """Where ``f`` is true on the sample; None when it cannot run at plan time."""
    try:
        c = f.eval(sample, None)
    except Exception:       # noqa: BLE001 - a plan-time guess never fails the statement
        return None
    if c.oid != type_oids.BOOL or len(c) != sample.n:
        return None
    data = np.asarray(c.data, dtype=bool)
    return data & ~c.null_mask()


def op_rows(op: operators.Op, state) -> float:
    """A rough row count of any planned subtree (subqueries, views, CTEs)."""
    if isinstance(op, operators.TableScan):
        tv = state.data.get(op.rel.oid) if getattr(state, "data", None) is not None else None
        return float(tv.n_live()) if tv is not None else DEFAULT_ROWS
    if isinstance(op, operators.ValuesScan):
        return float(max(len(op.rows), 1))
    if isinstance(op, operators.Result1):
        return 1.0
    if isinstance(op, operators.Aggregate):
        child = op_rows(op.child, state)
        return max(1.0, child * 0.1) if op.keys else 1.0
    if isinstance(op, operators.Filter):
        return max(1.0, op_rows(op.child, state) * DEFAULT_SELECTIVITY)
    if isinstance(op, operators.HashJoin):
        left = op_rows(op.left, state)
        return left if op.kind in ("semi", "anti", "left") else max(left, op_rows(op.right, state))
    if isinstance(op, operators.Limit):
        child = op_rows(op.child, state)
        n = op.limit.value if isinstance(op.limit, expr.Const) else None
        return min(float(n), child) if isinstance(n, int) else child
    if len(op.children) == 1:
        return op_rows(op.children[0], state)
    return DEFAULT_ROWS


def join_selectivity(lndv: float, rndv: float) -> float:
    """One equality key: 1 / max(ndv_R, ndv_S) (the containment assumption)."""
    return 1.0 / max(lndv, rndv, 1.0)
