"""Cost-based order of an inner-join group (issue 18, item 4): dynamic
programming over connected subsets (DPsub with a connectivity test, the
search space of DPccp) for up to ``DP_LIMIT`` items.

Why a module of its own: the search is pure arithmetic on bitmasks and
estimates (``cardinality``); ``joins`` only asks it for a tree and builds
the operators.  Only ``FROM a, b, c`` groups with their WHERE conditions
come here, so outer joins keep their written order (the FROM planner joins
them afterwards, in order) and a group with a stream keeps the greedy order
(continuous views: the stream always probes).

The cost of a plan is C_out plus build sizes: every intermediate result's
estimated rows, plus the rows of each hash join's build (right) side, which
is the smaller input.  Cross products are only considered between subsets
no condition connects when nothing else joins them (then the greedy order
stands in).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .cardinality import ItemEstimate

#: groups up to this many items are ordered by dynamic programming
DP_LIMIT = 10
#: what building a hash table over a join result costs per row, against one over a scan
BUILD_GATHER = 4.0


@dataclass
class JoinGraph:
    """Items' estimates and the conditions between them, as bitmasks."""

    items: list[ItemEstimate]
    #: (mask of the items an equality links, ((item, column), (item, column)))
    eq_keys: list[tuple[int, tuple[tuple[int, int], tuple[int, int]]]] = field(default_factory=list)
    #: other conditions spanning several items: (mask, selectivity)
    others: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Plan:
    cost: float
    rows: float
    left: int = 0          # probe side's mask (0 for a leaf)
    right: int = 0         # build side's mask


def subset_rows(g: JoinGraph, s: int) -> float:
    """Estimated rows of joining the items in ``s`` with every condition inside it."""
    rows = 1.0
    for k, it in enumerate(g.items):
        if s >> k & 1:
            rows *= it.rows
    pairs: dict[tuple[int, int], list] = {}
    for m, ((a, ca), (b, cb)) in g.eq_keys:
        if m & s == m:
            key = (a, b) if a < b else (b, a)
            pairs.setdefault(key, []).append((a, ca, b, cb))
    for keys in pairs.values():
        rows /= _composite_ndv(g, keys)
    for m, sel in g.others:
        if m & s == m:
            rows *= sel
    return max(rows, 1.0)


def _composite_ndv(g: JoinGraph, keys: list) -> float:
    """max(ndv_R, ndv_S) of the most selective of several keys between two
    items: the keys of a composite foreign key are correlated (each
    ``l_partkey, l_suppkey`` pair is one of partsupp's), so multiplying
    their selectivities as if independent would undercount by orders of
    magnitude (TPC-H Q9)."""
    return max(max(g.items[x].key_ndv(cx), g.items[y].key_ndv(cy), 1.0) for x, cx, y, cy in keys)


def best_tree(g: JoinGraph):
    """The cheapest bushy tree over all items as nested ``(probe, build)``
    tuples of item indices, or None when no condition-connected tree exists."""
    n = len(g.items)
    if n < 2 or n > DP_LIMIT:
        return None
    nb = [0] * n
    for m, _ in g.eq_keys:
        for k in range(n):
            if m >> k & 1:
                nb[k] |= m & ~(1 << k)
    for m, _ in g.others:
        for k in range(n):
            if m >> k & 1:
                nb[k] |= m & ~(1 << k)
    full = (1 << n) - 1
    near = [0] * (full + 1)
    best: dict[int, Plan] = {}
    for k in range(n):
        best[1 << k] = Plan(0.0, g.items[k].rows)
    for s in range(1, full + 1):
        low = s & -s
        near[s] = near[s ^ low] | nb[low.bit_length() - 1]
        if s == low:
            continue
        plan = _best_split(s, low, best, near)
        if plan is not None:
            plan.rows = subset_rows(g, s)
            plan.cost += plan.rows
            best[s] = plan
    if full not in best:
        return None
    return _tree(best, full)


def _best_split(s: int, low: int, best: dict[int, Plan], near: list[int]) -> Plan | None:
    """The cheapest pair of connected halves of ``s`` (each pair once: the
    half holding the lowest item is enumerated)."""
    found: Plan | None = None
    s1 = (s - 1) & s
    while s1:
        if s1 & low:
            s2 = s ^ s1
            p1, p2 = best.get(s1), best.get(s2)
            if p1 is not None and p2 is not None and near[s1] & s2:
                for probe, build in ((s1, s2), (s2, s1)):
                    cost = p1.cost + p2.cost + _build_cost(build, best[build].rows)
                    if found is None or cost < found.cost:
                        found = Plan(cost, 0.0, probe, build)
        s1 = (s1 - 1) & s
    return found


def _build_cost(mask: int, rows: float) -> float:
    """A hash table over a table's scan is built from arrays it already
    has; over a join result, every column is gathered into a new batch
    first (the probe side gathers lazily), so such builds cost more."""
    return rows if mask & (mask - 1) == 0 else rows * BUILD_GATHER


def _tree(best: dict[int, Plan], s: int):
    p = best[s]
    if p.left == 0:
        return s.bit_length() - 1
    return (_tree(best, p.left), _tree(best, p.right))


def leaves(tree) -> list[int]:
    """Item indices in the order the tree's output columns come."""
    if isinstance(tree, int):
        return [tree]
    return leaves(tree[0]) + leaves(tree[1])


def has_parameters(node: exp.Expression) -> bool:
    """Whether a condition has $n parameters: binding it would type them."""
    return node.find(exp.Placeholder, exp.Parameter) is not None
