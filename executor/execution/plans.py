"""Plans as data: building a changed plan without touching the original, and
a canonical text of a plan that is the same in every process.

Planned trees are cached per statement and shared by sessions and threads,
so code that derives a new plan from one (a continuous view's program) must
not edit it: :func:`rebuilt` returns a new tree that shares every unchanged
node with the original.  :func:`canonical` is a plan's text without
addresses or ids, the same in every process: equal texts, equal plans.
"""
from __future__ import annotations

import copy
import datetime as dt
import numbers
from typing import Any

from .aggregates import AggSpec
from .expr import Expr
from .operators import Op, OutCol


class PlanData:
    """Marker for plan parts that are neither operators nor expressions but
    hold expressions (window specifications): :func:`rebuilt` and
    :func:`canonical` walk into them."""


def is_plan_node(v: Any) -> bool:
    return isinstance(v, (Op, Expr, AggSpec, PlanData))


def rebuilt(root: Any, subst: dict[int, Any]) -> Any:
    """``root`` with the nodes in ``subst`` (keyed by id of the original node)
    replaced.  Nodes on the way to a replaced one are shallow copies with the
    changed fields; everything else is shared with the original, which is
    never modified.  Walks operators, expressions (so a subquery's plan is
    reached through its SubqueryExpr), aggregate and window specs, and lists
    and tuples of them; a node shared in the original (a CTE referenced
    twice) is one node in the result too."""
    memo: dict[int, Any] = {}

    def visit(v: Any) -> Any:
        if type(v) in (list, tuple):
            items = [visit(x) for x in v]
            if all(a is b for a, b in zip(items, v)):
                return v
            return items if type(v) is list else tuple(items)
        if not is_plan_node(v):
            return v
        k = id(v)
        if k in subst:
            return subst[k]
        if k in memo:
            return memo[k]
        memo[k] = v                 # a reference back to a node being visited keeps the original
        changed = {name: y for name, x in vars(v).items() if (y := visit(x)) is not x}
        new = v
        if changed:
            new = copy.copy(v)
            new.__dict__.update(changed)
        memo[k] = new
        return new

    return visit(root)


_SCALARS = (numbers.Number, str, bytes, dt.date, dt.time, dt.timedelta)


def canonical(v: Any) -> str:
    """A text of plan data that is the same in every process: node types and
    their public fields (underscored ones are caches), relations by oid,
    functions by qualified name; never an address, id() or hash()."""
    if v is None or isinstance(v, _SCALARS):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(canonical(x) for x in v) + "]"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(sorted(canonical(x) for x in v)) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(sorted(f"{canonical(k)}: {canonical(x)}" for k, x in v.items())) + "}"
    if isinstance(v, OutCol):
        return f"{v.name}:{v.oid}:{v.typmod}"
    if is_plan_node(v):
        fields = ", ".join(f"{k}={canonical(x)}" for k, x in sorted(vars(v).items())
                           if not k.startswith("_") and k != "children")
        return f"{type(v).__name__}({fields})"
    oid = getattr(v, "oid", None)
    if isinstance(oid, int):
        return f"{type(v).__name__}#{oid}"
    return getattr(v, "__qualname__", type(v).__name__)
