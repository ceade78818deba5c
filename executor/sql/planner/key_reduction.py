"""Plan-time half of the runtime semi-join reduction (``execution/key_filter.py``).

After decorrelation joins a subquery grouped by its correlation keys to the
outer plan, :func:`reduce_grouped_side` finds that join, maps its keys on
the grouped side to the grouping's key expressions and pushes a
``KeySetIn`` condition on them below the grouping, as far down as filters
go (to the scan of the table the key comes from), so only the rows of
groups the outer side asks for are read into the join and the grouping.
"""
from __future__ import annotations

import copy

from ...execution import expr
from ...execution import operators
from ...execution.key_filter import KeySetIn

#: join kinds whose output never shows a row of the reduced side that matched
#: nothing, keyed by which input is reduced
_REDUCIBLE = {"right": ("inner", "left", "semi", "anti"), "left": ("inner", "right")}


def _find_join(op: operators.Op, grouped: operators.Op) -> tuple[operators.HashJoin, str] | None:
    """The hash join with ``grouped`` as a direct input, and which input it is."""
    if isinstance(op, operators.HashJoin):
        if op.right is grouped:
            return op, "right"
        if op.left is grouped:
            return op, "left"
    for c in op.children:
        hit = _find_join(c, grouped)
        if hit is not None:
            return hit
    return None


def _grouping_keys(grouped: operators.Op, join_keys: list[expr.Expr]) -> list[tuple[int, expr.Expr]]:
    """(join key position, grouping key expression) for each join key that is
    a grouping key passed straight through ``grouped`` (Project over Aggregate)."""
    if not (isinstance(grouped, operators.Project) and isinstance(grouped.child, operators.Aggregate)):
        return []
    agg = grouped.child
    if agg.grouping_sets is not None:
        return []
    out = []
    for i, k in enumerate(join_keys):
        if not isinstance(k, expr.ColRef) or k.idx >= len(grouped.exprs):
            continue
        src = grouped.exprs[k.idx]
        if isinstance(src, expr.ColRef) and src.idx < len(agg.keys) and not any(
                isinstance(n, expr.SubqueryExpr) for n in agg.keys[src.idx].walk()):
            out.append((i, agg.keys[src.idx]))
    return out


def reduce_grouped_side(planner, root: operators.Op, grouped: operators.Op) -> None:
    """Make the join over ``grouped`` (a decorrelated subquery) pass its other
    side's keys to a filter below the grouping; nothing when the shape differs."""
    hit = _find_join(root, grouped)
    if hit is None:
        return
    join, side = hit
    if join.kind not in _REDUCIBLE[side] or join.reduces is not None:
        return
    keys = _grouping_keys(grouped, join.rkeys if side == "right" else join.lkeys)
    if not keys:
        return
    assert isinstance(grouped, operators.Project) and isinstance(grouped.child, operators.Aggregate)
    agg = grouped.child                                 # _grouping_keys found keys only there
    cond = KeySetIn([copy.deepcopy(e) for _, e in keys], [i for i, _ in keys], join)
    agg.child = planner.push_filters(agg.child, [cond])
    agg.children = [agg.child]
    join.reduces = side
