"""Which aggregate state is behind a continuous view's column (for
``combine()``, ``execution/combine.py``).

A column is combinable when the view's upper plan passes an aggregate's
output through unchanged: only column references in projections, and
filters (HAVING), sorts and limits between the column and the grouping's
state.  ``count(*) + 1`` or a join above the grouping is not: its value is
no longer the aggregate's, as PipelineDB also refuses.
"""
from __future__ import annotations

from ..execution import operators
from ..execution.aggregates import AggSpec
from ..execution.combine import trace_column

#: the attribute a grouping's state source carries in the upper plan: its ``Aggregate``
GROUPING_ATTR = "state_of"

def state_spec(upper: operators.Op, idx: int) -> AggSpec | None:
    """The aggregate behind output column ``idx`` of ``upper``, or None."""
    return trace_column(upper, idx, _state_of)


def _state_of(op: operators.Op, idx: int) -> AggSpec | None:
    agg = getattr(op, GROUPING_ATTR, None)
    if agg is None:
        return None
    j = idx - len(agg.keys)
    return agg.aggs[j] if 0 <= j < len(agg.aggs) else None
