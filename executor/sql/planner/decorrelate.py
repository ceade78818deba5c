"""Decorrelation of WHERE-clause subqueries into joins.

A correlated subquery evaluated once per outer row costs a full plan run per
row; TPC-H Q2, Q4, Q17, Q20, Q21 and Q22 are all of that shape.  Two rewrites
cover the common forms, both applied only to top-level WHERE conjuncts:

* ``[NOT] EXISTS (SELECT ... FROM ... WHERE inner = outer AND ...)`` becomes a
  hash semi (anti) join of the outer plan with the subquery's FROM, keyed on
  the correlated equalities; other correlated conjuncts become the join's
  residual predicate (Q21's ``l3.l_suppkey <> l1.l_suppkey``).

* ``expr op (SELECT agg(...) FROM ... WHERE inner = outer AND ...)`` becomes
  an inner join with the subquery grouped by its correlation keys.  An inner
  join is exact here: a comparison with the NULL that a missing group would
  give is never true.  ``count`` is excluded (an empty group counts 0).

Anything else (correlation deeper than one level, non-equality correlation in
a scalar subquery, LIMIT, grouping inside the subquery, ...) falls back to the
per-row evaluation of :class:`expr.SubqueryExpr`.
"""
from __future__ import annotations

import itertools

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from ...execution import expr
from ...execution import operators
from ..binder import ExprBinder, Scope, ScopeCol, aggregate_calls, func_name, is_aggregate_call
from .key_reduction import reduce_grouped_side
from .quals import split_conjuncts

_counter = itertools.count(1)

_SCALAR_AGGS = {"sum", "avg", "min", "max"}


def _simple_select(q) -> bool:
    """A plain SELECT ... FROM ... [WHERE ...] without grouping or limits."""
    if not isinstance(q, exp.Select):
        return False
    if not (q.args.get("from") or q.args.get("from_")):
        return False
    for k in ("group", "having", "limit", "offset", "distinct", "with", "with_", "qualify", "windows"):
        if q.args.get(k):
            return False
    return True


def _unique(e: expr.Expr):
    seen: set[int] = set()
    for node in e.walk():
        if id(node) not in seen:
            seen.add(id(node))
            yield node


def _refs(e: expr.Expr) -> tuple[bool, bool, bool]:
    """(has inner ColRef, has depth-1 OuterRef, has something we cannot move)."""
    inner = outer = bad = False
    for node in _unique(e):
        if isinstance(node, expr.OuterRef):
            if node.depth == 1:
                outer = True
            else:
                bad = True
        elif isinstance(node, expr.ColRef):
            inner = True
        elif isinstance(node, expr.SubqueryExpr) and node.correlated:
            bad = True
    return inner, outer, bad


def _outer_to_cols(e: expr.Expr, shift_inner: int | None) -> expr.Expr:
    """Rewrite depth-1 OuterRefs to ColRefs of the outer batch; shift inner
    ColRefs by ``shift_inner`` (they follow the outer columns in a join pair)."""
    nodes = list(_unique(e))
    for node in nodes:
        if isinstance(node, expr.OuterRef):
            idx = node.idx
            retyped: expr.Expr = node  # the node itself becomes a ColRef: parents in the shared tree keep pointing at it
            retyped.__class__ = expr.ColRef
            node.idx = idx
        elif isinstance(node, expr.ColRef) and shift_inner:
            node.idx += shift_inner
    return e


def _bound_or_none(planner, q, scope, outer):
    """:func:`_bind_inner`, or None when the subquery cannot be bound here
    (the caller then leaves it to the general subquery path)."""
    try:
        return _bind_inner(planner, q, scope, outer)
    except PgError:
        return None


def _bind_inner(planner, q: exp.Select, scope: Scope, outer: Scope | None):
    """Plan the subquery's FROM and bind its WHERE conjuncts.

    Returns (inner_op, inner_scope, [(ast, bound, has_inner, has_outer)]) or
    None when some conjunct cannot be moved.
    """

    where = q.args.get("where")
    conj = split_conjuncts(where.this) if where is not None else []
    original = list(conj)
    parent = Scope(scope.cols, outer, tables=scope.tables)
    corr = [False]
    inner_op, inner_scope = planner.plan_from(q, parent, corr, conj)
    consumed = [c for c in original if not any(c is k for k in conj)]
    if corr[0]:
        return None
    # correlation inside the subquery's own FROM (JOIN ... ON outer.x, LATERAL)
    # would leave outer references in inner_op: not movable
    for j in q.args.get("joins") or []:
        for node in [j.args.get("on"), j.this]:
            if node is None:
                continue
            for col in node.find_all(exp.Column):
                if isinstance(col.this, exp.Identifier):
                    table = col.args.get("table")
                    tname = table.name if table is not None else None
                    if not inner_scope.find(col.this.name if col.this.quoted else col.this.name.lower(),
                                            tname.lower() if tname and not table.quoted else tname):
                        return None
    bscope = Scope(inner_scope.cols, parent, tables=inner_scope.tables)
    binder = ExprBinder(planner, bscope, context="WHERE")
    out = []
    for c in conj:
        if aggregate_calls(c):
            return None
        e = binder.bind(c)
        if e.oid != type_oids.BOOL:
            e = planner.coerce(e, type_oids.BOOL)
        has_inner, has_outer, bad = _refs(e)
        if bad:
            return None
        out.append((c, e, has_inner, has_outer))
    return inner_op, inner_scope, out, consumed


def try_semi_join(planner, op: operators.Op, scope: Scope, outer: Scope | None, node: exp.Expression) -> operators.Op | None:
    """``[NOT] EXISTS (correlated subquery)`` as a semi/anti join on ``op``."""
    negate = False
    if isinstance(node, exp.Not):
        negate, node = True, node.this
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Exists):
        return None
    q = node.this
    if isinstance(q, exp.Subquery):
        q = q.this
    if not _simple_select(q):
        return None
    if any(planner._contains_agg(e) for e in q.expressions):
        return None  # SELECT count(*) ... always yields a row: not a semi join
    bound = _bound_or_none(planner, q, scope, outer)
    if bound is None:
        return None
    inner_op, inner_scope, conj, _ = bound
    if not any(has_outer for _, _, _, has_outer in conj):
        return None  # uncorrelated: SubqueryExpr runs it once, which is cheaper
    nl = len(scope.cols)
    lkeys, rkeys, residual, local = [], [], [], []
    for ast, e, has_inner, has_outer in conj:
        if not has_outer:
            local.append(e)
            continue
        if isinstance(e, expr.Compare) and e.op == "=":
            li, lo, _ = _refs(e.left)
            ri, ro, _ = _refs(e.right)
            if lo and not li and ri and not ro:
                lkeys.append(_outer_to_cols(e.left, None))
                rkeys.append(e.right)
                continue
            if ro and not ri and li and not lo:
                lkeys.append(_outer_to_cols(e.right, None))
                rkeys.append(e.left)
                continue
        residual.append(_outer_to_cols(e, nl))
    if local:
        inner_op = planner.push_filters(inner_op, local)
    res = None if not residual else (residual[0] if len(residual) == 1 else expr.And(residual))
    kind = "anti" if negate else "semi"
    if lkeys:
        return operators.HashJoin(op, inner_op, lkeys, rkeys, kind, res)
    return operators.NestedLoopJoin(op, inner_op, res, kind)


def _has_count_or_unsafe(e: exp.Expression) -> bool:
    for n in e.walk():
        if isinstance(n, (exp.Coalesce, exp.Case, exp.If, exp.Subquery, exp.Select, exp.Window)) and n is not e:
            return True
        if isinstance(n, exp.Count):
            return True
        if isinstance(n, exp.Func) and is_aggregate_call(n) and func_name(n) not in _SCALAR_AGGS:
            return True
    return False


def _grouped_derived(planner, scope: Scope, outer: Scope | None, q: exp.Select, allow_count: bool):
    """The analysis shared by both scalar rewrites: the subquery regrouped by
    its correlation keys.  Returns (plan, alias, outer key ASTs, value AST) or None."""
    if not _simple_select(q) or len(q.expressions) != 1:
        return None
    item = q.expressions[0]
    value = item.this if isinstance(item, exp.Alias) else item
    if not aggregate_calls(value):
        return None
    if _has_count_or_unsafe(value) and not (allow_count and isinstance(value, exp.Count)):
        return None
    bound = _bound_or_none(planner, q, scope, outer)
    if bound is None:
        return None
    _, _, bconj, consumed = bound
    if not any(has_outer for *_, has_outer in bconj):
        return None
    local_ast, inner_keys, outer_keys = list(consumed), [], []
    for ast, e, has_inner, has_outer in bconj:
        if not has_outer:
            local_ast.append(ast)
            continue
        if not (isinstance(e, expr.Compare) and e.op == "=" and isinstance(ast, exp.EQ)):
            return None
        li, lo, _ = _refs(e.left)
        ri, ro, _ = _refs(e.right)
        if lo and not li and ri and not ro:
            outer_keys.append(ast.this)
            inner_keys.append(ast.expression)
        elif ro and not ri and li and not lo:
            outer_keys.append(ast.expression)
            inner_keys.append(ast.this)
        else:
            return None
    alias = f"__sq{next(_counter)}"
    derived = q.copy()
    derived.set("where", exp.Where(this=exp.and_(*[a.copy() for a in local_ast])) if local_ast else None)
    derived.set("expressions", [exp.alias_(k.copy(), f"__k{i}") for i, k in enumerate(inner_keys)]
                + [exp.alias_(value.copy(), "__v")])
    derived.set("group", exp.Group(expressions=[k.copy() for k in inner_keys]))
    try:
        dplan, corr = planner.subplan(derived, outer)
    except PgError:
        return None
    if corr:
        return None
    return dplan, alias, outer_keys, value


def try_select_scalar_join(planner, op: operators.Op, scope: Scope, outer: Scope | None, sub: exp.Subquery):
    """A correlated aggregate subquery in the select list of an ungrouped query:
    LEFT JOIN the regrouped subquery.  A missing group means the subquery saw no
    rows: NULL for sum/avg/min/max, 0 for a bare count(...) (hence COALESCE).
    Returns (plan, scope, replacement AST) or None."""
    r = _grouped_derived(planner, scope, outer, sub.this, allow_count=True)
    if r is None:
        return None
    dplan, alias, outer_keys, value = r

    dscope = Scope([ScopeCol(alias, c.name, c.oid, c.typmod) for c in dplan.out], outer, tables=[alias])
    on = exp.and_(*[exp.EQ(this=k.copy(), expression=exp.column(f"__k{i}", table=alias))
                    for i, k in enumerate(outer_keys)])
    try:
        new_op, new_scope = planner.join(op, scope, dplan, dscope, "left", on, outer, None)
    except PgError:
        return None
    reduce_grouped_side(planner, new_op, dplan)
    col = exp.column("__v", table=alias)
    repl = exp.Coalesce(this=col, expressions=[exp.Literal.number(0)]) if isinstance(value, exp.Count) else col
    return new_op, new_scope, repl


def try_scalar_join(planner, op: operators.Op, scope: Scope, outer: Scope | None, conj: exp.Expression,
                    where_conj: list) -> tuple[operators.Op, Scope] | None:
    """``expr op (correlated aggregate subquery)``: join the grouped subquery.

    On success ``conj`` in ``where_conj`` is replaced by the comparison with the
    derived table's value column (the join may consume it as a key) and the new
    plan and scope are returned; otherwise None and nothing changed.
    """
    if not isinstance(conj, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
        return None
    sub = None
    for side in ("this", "expression"):
        s = conj.args.get(side)
        while isinstance(s, exp.Paren):
            s = s.this
        if isinstance(s, exp.Subquery) and not isinstance(conj.args.get("expression"), (exp.Any, exp.All)):
            sub, which = s, side
    if sub is None:
        return None
    r = _grouped_derived(planner, scope, outer, sub.this, allow_count=False)
    if r is None:
        return None
    dplan, alias, outer_keys, _ = r

    dscope = Scope([ScopeCol(alias, c.name, c.oid, c.typmod) for c in dplan.out], outer, tables=[alias])
    for i, k in enumerate(outer_keys):
        where_conj.append(exp.EQ(this=k.copy(), expression=exp.column(f"__k{i}", table=alias)))
    new_conj = conj.copy()
    new_conj.set(which, exp.column("__v", table=alias))
    # the comparison itself may become a join key too (Q2's ps_supplycost = min(...))
    where_conj[where_conj.index(conj)] = new_conj
    new_op, new_scope = planner.join(op, scope, dplan, dscope, "cross", None, outer, where_conj)
    reduce_grouped_side(planner, new_op, dplan)
    return new_op, new_scope
