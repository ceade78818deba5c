"""Whether a cursor declared without SCROLL or NO SCROLL may scroll, as
PostgreSQL decides it: PortalStart makes such a cursor SCROLL when its plan
has no row marks (FOR UPDATE/SHARE) and ExecSupportsBackwardScan holds for
the plan PostgreSQL makes of it (for a cursor: cursor_tuple_fraction).

Our plans are not PostgreSQL's, so this reads our operators as the nodes
PostgreSQL would make for the same query shape.  Determined by the shape:
a scan with its filter and projection (one Seq Scan there), VALUES of
several rows (Values Scan), a function in FROM (Function Scan), a sort,
UNION ALL (Append), a WITH query read twice (CTE Scan) run backwards; a
SELECT without FROM, a one-row VALUES and a relation whose only condition
is constant false (a Result with no input), an aggregate, DISTINCT, a
window, a join (also IN / EXISTS in WHERE: a semi-join), UNION / INTERSECT
/ EXCEPT, a set-returning function in the select list (ProjectSet) and
TABLESAMPLE do not.  LIMIT, a subquery and a WITH query read once (inlined)
are what they read.

Where PostgreSQL's answer follows from its cost estimates, ORDER BY over a
grouping, DISTINCT, a window or a join (a Sort on top, which scrolls, or an
order made below and kept: GroupAggregate, Unique, WindowAgg, Merge Join,
which do not), this takes the plan PostgreSQL 15 makes for tables of
unknown size: a grouping sorted on top when it reads a table, a UNION ALL
or a cross join, in order from below when it reads a small VALUES list, a
function, a join on keys or nothing; a window sorted on top unless it has
its own PARTITION BY / ORDER BY; a join on keys merged in the order of a
plain column.  Our cursors are materialised, so either answer is kept as
said: one not scrollable refuses backward fetches, as PostgreSQL's does.
"""
from __future__ import annotations

from splitstream.catalog.datatypes.vector import Batch

from ..execution import operators as ops
from ..execution.expr import And, ColRef, Const, SubqueryExpr
from ..execution.sampling import SampleScan
from ..execution.window import WindowOp

#: operators PostgreSQL's plan for the same shape cannot run backwards
_FORWARD_ONLY = (ops.Result1, ops.Aggregate, ops.Distinct, WindowOp, ops.HashJoin, ops.NestedLoopJoin,
                 ops.LateralJoin, ops.ProjectSet, ops.ProjectSetN, SampleScan)
#: operators PostgreSQL would fold into the node below (a scan's qual and target list)
_TRANSPARENT = (ops.Project, ops.Filter, ops.Limit)


def scrollable(plan: ops.Op, locking: bool = False) -> bool:
    """PostgreSQL's choice for DECLARE without SCROLL / NO SCROLL over ``plan``
    (``locking``: FOR UPDATE/SHARE, whose row marks forbid scrolling)."""
    if locking:
        return False
    shared = _shared_ctes(plan)
    return _backward(plan, shared)


def _backward(op: ops.Op, shared: set[int]) -> bool:
    if isinstance(op, _FORWARD_ONLY) and not _flattened(op) or _empty(op):
        return False
    if isinstance(op, ops.Filter) and _semi_join(op.pred):
        return False
    if isinstance(op, _TRANSPARENT) or _flattened(op):
        return _backward(op.children[0], shared)
    if isinstance(op, ops.ValuesScan):
        return len(op.rows) > 1         # one row is a Result
    if isinstance(op, ops.Sort):
        return not _ordered_below(op)
    if isinstance(op, ops.SetOp):
        return op.kind == "union" and op.all and all(_backward(c, shared) for c in op.children)
    if isinstance(op, ops.CTEScan):
        # read once, PostgreSQL inlines the WITH query; else a CTE Scan
        return id(op.child) in shared or _backward(op.child, shared)
    if isinstance(op, (ops.Materialized, ops.RecursiveUnion)):
        return True
    return not op.children              # a scan (table, catalog, function, stream); unknown nodes: no


def _ordered_below(sort: ops.Sort) -> bool:
    """Whether PostgreSQL makes the ORDER BY's order below the sort and
    keeps it (no Sort on top): see the module's second paragraph."""
    return _ordered(sort.child, _plain_keys(sort), not any(desc for _, desc, _ in sort.keys))


def _ordered(op: ops.Op, plain_keys: bool, ascending: bool) -> bool:
    op = _under(op)
    if _empty(op):                      # a Result; one row of it needs no sort
        return _one_row(_leaf(op))
    if isinstance(op, (ops.Aggregate, ops.Distinct)):
        return (isinstance(op, ops.Distinct) or bool(op.keys)) and _small(op.child)
    if isinstance(op, WindowOp):        # sorted (ascending) for its PARTITION BY / ORDER BY; OVER (): as it reads
        if _one_row(_leaf(op)):         # over at most one row (PostgreSQL folds its conditions): no sort
            return True
        if any(s.partition or s.order for s in op.specs):
            return ascending
        return _ordered(op.child, plain_keys, ascending)
    if isinstance(op, ops.HashJoin):    # a Merge Join, in the order of its keys
        return bool(op.lkeys) and plain_keys
    return _one_row(op)


def _plain_keys(sort: ops.Sort) -> bool:
    """The sort keys are columns, not expressions (seen through the projections below)."""
    def plain(e, op: ops.Op) -> bool:
        while isinstance(e, ColRef) and isinstance(op, ops.Project):
            e, op = op.exprs[e.idx], op.child
        return isinstance(e, ColRef)
    return all(plain(e, sort.child) for e, _, _ in sort.keys)


def _one_row(op: ops.Op) -> bool:
    return isinstance(op, ops.Result1) or (isinstance(op, ops.ValuesScan) and len(op.rows) <= 1)


def _leaf(op: ops.Op) -> ops.Op:
    while len(op.children) == 1:
        op = op.children[0]
    return op


def _small(op: ops.Op) -> bool:
    """An input PostgreSQL estimates small or has in key order (a grouping
    over it is a GroupAggregate over a sort): constant false anywhere in it
    makes it so."""
    if any(_false(f) for f in _chain(op)):
        return True
    op = _under(op)
    while isinstance(op, (ops.CTEScan, ops.Materialized, ops.Sort)):     # (a subquery's ORDER BY: as large)
        op = _under(op.children[0])
    return _empty(op) or not isinstance(op, (ops.TableScan, ops.SetOp, ops.NestedLoopJoin))


def _flattened(op: ops.Op) -> bool:
    """LATERAL (SELECT expressions) without FROM: PostgreSQL pulls it up into the scan."""
    return isinstance(op, ops.LateralJoin) and isinstance(_leaf(op.right), ops.Result1)


def _under(op: ops.Op) -> ops.Op:
    """``op`` without the projections, non-constant filters and limits PostgreSQL folds into the node below."""
    while isinstance(op, _TRANSPARENT) and not _empty(op) or _flattened(op):
        op = op.children[0]
    return op


def _false(op: ops.Op) -> bool:
    return isinstance(op, ops.Filter) and _false_pred(op.pred)


def _false_pred(pred) -> bool:
    """A condition PostgreSQL's planner folds to constant false (``1 = 0``, ``a > 1 AND false``)."""
    if isinstance(pred, And):
        return any(_false_pred(a) for a in pred.args)
    if isinstance(pred, Const):
        return pred.value is False
    if not pred.is_const():
        return False
    try:
        return pred.eval(Batch([], 1), None).to_pylist() == [False]
    except Exception:               # a constant needing the statement's context: not folded
        return False


def _chain(op: ops.Op) -> list[ops.Op]:
    """``op`` and the projections, filters and limits under it."""
    out = [op]
    while isinstance(op, _TRANSPARENT):
        op = op.child
        out.append(op)
    return out


def _empty(op: ops.Op) -> bool:
    """A relation whose only condition is constant false: PostgreSQL plans it
    as a Result with no input (a further condition keeps the scan under a
    gating Result)."""
    if not _false(op):
        return False
    below = op.children[0]
    while isinstance(below, (ops.Project, ops.Limit)):
        below = below.children[0]
    return not isinstance(below, ops.Filter)


def _semi_join(pred) -> bool:
    """IN (subquery) or [NOT] EXISTS among the WHERE clause's conjuncts: PostgreSQL joins them."""
    conjuncts = pred.args if isinstance(pred, And) else [pred]
    return any(isinstance(c, SubqueryExpr) and (c.kind == "exists" or (c.kind == "in" and not c.negate))
               for c in conjuncts)


def _shared_ctes(plan: ops.Op) -> set[int]:
    """The WITH queries read more than once (PostgreSQL does not inline them)."""
    seen: dict[int, int] = {}
    stack = [plan]
    while stack:
        op = stack.pop()
        if isinstance(op, ops.CTEScan):
            seen[id(op.child)] = seen.get(id(op.child), 0) + 1
        stack.extend(op.children)
    return {k for k, n in seen.items() if n > 1}
