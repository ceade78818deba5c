"""Ungrouped continuous views (PipelineDB's ``SELECT x, y FROM s WHERE ...``):
the view keeps every matching row.

Why as a grouping: the rows are kept as a multiset, grouped by all the
view's columns with a count of each distinct row, and a read repeats each
row by its count.  So an ungrouped view is one more grouping to everything
that maintains views: staging and the compiled kernels, the WAL and replay,
checkpoints of view state, ``ttl``/``ttl_column`` (the TTL column is a key)
and sliding windows (the pane is one more key), with no row store of its
own.  Rows equal under GROUP BY's equality (numeric ``1.0`` and ``1.00``)
are kept as copies of the first of them.

PipelineDB refuses ORDER BY in a continuous view; LIMIT/OFFSET apply when
the view is read, over the rows it keeps (they stay in the upper plan).
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, Notice, PgError

from ..execution import expr, operators
from ..execution.aggregates import AggSpec


def grouping(top: operators.Op) -> operators.Aggregate:
    """The grouping that keeps ``top``'s rows: by every column, counting."""
    keys: list[expr.Expr] = [expr.ColRef(j, oc.oid, oc.name) for j, oc in enumerate(top.out)]
    count = AggSpec("count", [], [type_oids.INT8], star=True)
    out = [operators.OutCol(oc.name, oc.oid, oc.typmod, oc.table_oid, oc.attnum, oc.hidden) for oc in top.out]
    agg = operators.Aggregate(top, keys, [count], out + [operators.OutCol("count", type_oids.INT8)])
    agg.ungrouped = True        # type: ignore[attr-defined]
    return agg


def is_ungrouped(agg: operators.Aggregate) -> bool:
    return bool(getattr(agg, "ungrouped", False))


class RowsOfCounts(operators.Op):
    """The kept rows of an ungrouped view: each distinct row its count times."""

    def __init__(self, child: operators.Op) -> None:
        self.child = child
        self.children = [child]
        self.out = child.out[:-1]

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        counts = b.cols[-1].data.astype(np.int64, copy=False)
        idx = np.repeat(np.arange(b.n, dtype=np.int64), counts)
        return Batch([c.take(idx) for c in b.cols[:-1]], len(idx))

    def label(self):
        return "Continuous Rows"


def refuse_order(view: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, "continuous queries don't support ORDER BY",
                   hint=f'Continuous view "{view}" keeps its rows unordered: ORDER BY when you read it.')


def unbounded_stream(cv) -> str | None:
    """The stream an ungrouped pipeline of ``cv`` keeps every row of (no TTL,
    window or max_rows), or None."""
    for p in cv._pipes():
        if is_ungrouped(p.agg if p.inner is None else p.inner.agg) and p.ttl is None and p.window is None \
                and p.cap is None:
            return p.scan.rel.name
    return None


def notice_unbounded(cv, ctx, replaced=None) -> None:
    """CREATE of an ungrouped view with no TTL or window: it keeps every row.
    Said once, when a view becomes unbounded: not again when a view that
    was unbounded already is redefined (pipelinedb.activate/deactivate or
    set_ttl rewrite its options as a CREATE OR REPLACE does)."""
    stream = unbounded_stream(cv)
    if stream is None or (replaced is not None and unbounded_stream(replaced) is not None):
        return
    ctx.notices.append(Notice(
        f'continuous view "{cv.rel.name}" keeps every matching row of stream "{stream}" '
        "and grows without bound",
        hint="Bound it with WITH (ttl = '1 day', ttl_column = <a timestamp column>), WITH (max_rows = N) (the newest "
             "N rows) or a sliding window (WITH (sw = '1 hour')), or group and aggregate the rows."))
