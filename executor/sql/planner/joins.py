"""Joins and filter placement: hash-join keys from equality conjuncts,
USING / NATURAL / LATERAL joins, greedy ordering of comma joins, and
pushing WHERE predicates to the lowest operator that has their columns.

Why a module of its own: this is the optimiser work that pays most in a
column-at-a-time engine (PostgreSQL's joinpath.c / initsplan.c territory),
and DML (UPDATE ... FROM) and decorrelation call into it directly.
"""
from __future__ import annotations

from typing import cast

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import UNDEFINED_COLUMN, PgError

from ...execution import expr
from ...execution import operators
from ..binder import ExprBinder, Scope, ScopeCol, ident
from .base import PlannerBase
from . import cardinality, join_order
from .quals import disjuncts, split_conjuncts


class JoinPlanner(PlannerBase):
    """Join construction and filter pushdown."""

    def _join_comma_items(self, planned, outer, where_conj):
        """Join ``FROM a, b, c`` in the order the cost-based search picks
        (``join_order``), else greedily.  The columns are put back in FROM
        order afterwards (``*``)."""
        tree = graph = None
        if not any(self._is_stream(op) for op, _ in planned):
            graph = self._join_graph(planned, where_conj)
            tree = join_order.best_tree(graph)
        if tree is None or graph is None:
            return self._join_greedily(planned, outer, where_conj)
        op, scope = self._build_tree(tree, graph, planned, outer, where_conj)
        order = join_order.leaves(tree)
        if order == sorted(order):
            return op, scope
        return _restore_from_order(op, scope, planned, order)

    def _build_tree(self, tree, graph, planned, outer, where_conj):
        """The join operators of a ``(probe, build)`` tree, each marked with
        its estimated rows (EXPLAIN shows them)."""
        if isinstance(tree, int):
            op, scope = planned[tree]
            op.est_rows = round(graph.items[tree].base_rows)
            return op, scope
        lop, lscope = self._build_tree(tree[0], graph, planned, outer, where_conj)
        rop, rscope = self._build_tree(tree[1], graph, planned, outer, where_conj)
        op, scope = self.join(lop, lscope, rop, rscope, "cross", None, outer, where_conj)
        mask = sum(1 << k for k in join_order.leaves(tree))
        op.est_rows = round(join_order.subset_rows(graph, mask))
        return op, scope

    def _join_graph(self, planned, where_conj) -> join_order.JoinGraph:
        """The items' estimates (filtered by their own WHERE conditions,
        evaluated on samples) and the conditions linking them."""
        filters: list[list[expr.Expr]] = [[] for _ in planned]
        graph = join_order.JoinGraph([])
        spanning = []
        for c in where_conj:
            refs = self._item_refs(c, planned)
            if refs is None:
                continue
            mask = 0
            for k, _ in refs:
                mask |= 1 << k
            if mask & (mask - 1) == 0:
                if mask and not join_order.has_parameters(c):
                    bound = self._bind_quietly(c, planned[mask.bit_length() - 1][1])
                    if bound is not None:
                        filters[mask.bit_length() - 1].append(bound)
            elif isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column) and len(refs) == 2:
                graph.eq_keys.append((mask, (refs[0], refs[1])))
            else:
                spanning.append((mask, c))
        for (op, _), fs in zip(planned, filters):
            graph.items.append(cardinality.apply_filters(cardinality.estimate_item(op, self.state), fs))
        graph.others = [(mask, self._spanning_selectivity(c, planned, graph.items)) for mask, c in spanning]
        return graph

    def _spanning_selectivity(self, c, planned, items) -> float:
        """A condition over several items that is no join key.  An OR of
        per-item conjunctions (TPC-H Q7's ``n1 = 'FRANCE' AND n2 = 'GERMANY'
        OR ...``) is estimated as the sum over its branches of the product
        of each part's selectivity on its item's sample; anything else
        gets the default."""
        branches = disjuncts(c)
        if len(branches) < 2 or join_order.has_parameters(c):
            return cardinality.DEFAULT_SELECTIVITY
        total = 0.0
        for b in branches:
            sel = 1.0
            for part in split_conjuncts(b.this if isinstance(b, exp.Paren) else b):
                refs = self._item_refs(part, planned)
                ks = {k for k, _ in refs or []}
                bound = self._bind_quietly(part, planned[ks.pop()][1]) if len(ks) == 1 else None
                if bound is None:
                    return cardinality.DEFAULT_SELECTIVITY
                sel *= cardinality.selectivity(items[next(k for k, _ in refs or [])], [bound])
            total += sel
        return min(total, 1.0)

    def _item_refs(self, c, planned) -> list[tuple[int, int]] | None:
        """(item, column index) of each column ``c`` names, or None when one
        is not found in exactly one item (outer references, ambiguity) or
        ``c`` holds a subquery."""
        if c.find(exp.Subquery, exp.Exists, exp.Select) is not None:
            return None
        refs = []
        for col in c.find_all(exp.Column):
            name = ident(col.this) if isinstance(col.this, exp.Identifier) else None
            table = ident(col.args.get("table")) if col.args.get("table") else None
            if name is None:
                return None
            hits = [(k, found[0]) for k, (_, sc) in enumerate(planned) for found in [sc.find(name, table)] if found]
            if len(hits) != 1 or len(planned[hits[0][0]][1].find(name, table)) != 1:
                return None
            refs.append(hits[0])
        return refs

    def _bind_quietly(self, c, scope: Scope) -> expr.Expr | None:
        """``c`` bound to one item's columns, for estimation only (a copy: the
        real binding happens when the filter is placed)."""
        try:
            return self.coerce(ExprBinder(self, scope, context="WHERE").bind(c.copy()), type_oids.BOOL)
        except PgError:
            return None

    def _join_greedily(self, planned, outer, where_conj):
        """Join ``FROM a, b, c`` greedily: next comes the first item that a
        WHERE conjunct connects to what is joined so far, so a written order
        like TPC-H Q2's ``part, supplier, partsupp`` never builds a cross
        product."""
        remaining = list(range(1, len(planned)))
        op, scope = planned[0]
        order = [0]
        while remaining:
            pick = remaining[0]
            for k in remaining:
                rscope = planned[k][1]
                both = Scope(scope.cols + rscope.cols, outer, tables=scope.tables + rscope.tables)
                if any(self._refs_within(c, both) and self._refs_both(c, scope, rscope) for c in where_conj):
                    pick = k
                    break
            remaining.remove(pick)
            rop, rscope = planned[pick]
            op, scope = self.join(op, scope, rop, rscope, "cross", None, outer, where_conj)
            order.append(pick)
        if order == sorted(order):
            return op, scope
        return _restore_from_order(op, scope, planned, order)

    def lateral_join(self, op, scope, target, kind, outer, corr):
        sub = target.this if isinstance(target, exp.Lateral) else target
        alias_node = target.args.get("alias")
        q = sub.this if isinstance(sub, exp.Subquery) else sub
        inner_scope = Scope(scope.cols, outer, tables=scope.tables)
        plan = self.plan_query(q, inner_scope, None)
        a = ident(alias_node.this) if alias_node is not None and alias_node.this is not None else "lateral"
        # references to the left side are OuterRefs at depth 1
        lop = operators.LateralJoin(op, plan, "left" if kind == "left" else "inner")
        cols = scope.cols + [ScopeCol(a, c.name, c.oid) for c in plan.out]
        extended = None if scope.null_extended is None else scope.null_extended | ({a} if kind == "left" else set())
        new_scope = Scope(cols, outer, tables=scope.tables + [a], null_extended=extended)
        new_scope.correlated = scope.correlated
        return lop, new_scope

    def join_using(self, lop, lscope, rop, rscope, kind, names):
        lkeys, rkeys = [], []
        for nm in names:
            li = lscope.find(nm, None)
            ri = rscope.find(nm, None)
            if not li or not ri:
                raise PgError(UNDEFINED_COLUMN, f'column "{nm}" specified in USING clause does not exist in {"left" if not li else "right"} table')
            lkey = expr.ColRef(li[0], lscope.cols[li[0]].oid, nm)
            rkey = expr.ColRef(ri[0], rscope.cols[ri[0]].oid, nm)
            if lkey.oid != rkey.oid:
                t = sqltypes.common_type(lkey.oid, rkey.oid, "JOIN/USING")
                lkey, rkey = self.coerce(lkey, t), self.coerce(rkey, t)
            lkeys.append(lkey)
            rkeys.append(rkey)
        j = self._probe_join(lop, rop, lkeys, rkeys, None, kind if kind != "cross" else "inner")
        exprs, out, cols = _using_output(lscope, rscope, kind, names, lkeys, j.out)
        proj = operators.Project(j, exprs, out)
        scope = Scope(cols, lscope.parent, tables=lscope.tables + rscope.tables,
                      null_extended=null_extended_after(lscope, rscope, kind))
        scope.correlated = lscope.correlated
        scope.using_names = set(names)
        return proj, scope

    def join(self, lop, lscope, rop, rscope, kind, on, outer, where_conj) -> tuple[operators.Op, Scope]:
        cols = lscope.cols + rscope.cols
        for t in rscope.tables:
            if t in lscope.tables and t not in ("?subquery?",):
                raise PgError("42712", f'table name "{t}" specified more than once')
        scope = Scope(cols, outer, tables=lscope.tables + rscope.tables,
                      null_extended=null_extended_after(lscope, rscope, kind))
        scope.correlated = lscope.correlated  # outer references in ON mark the query correlated
        nl = len(lscope.cols)
        conjs = split_conjuncts(on)
        # pull WHERE conjuncts that only reference these two inputs into inner joins
        if where_conj is not None and kind in ("inner", "cross"):
            for c in list(where_conj):
                if self._refs_within(c, scope) and self._refs_both(c, lscope, rscope):
                    conjs.append(c)
                    where_conj.remove(c)
        if kind in ("inner", "cross"):
            lop, rop = self._push_implied_ors(conjs, lop, lscope, rop, rscope)
        binder = ExprBinder(self, scope, context="JOIN conditions")
        lkeys, rkeys, residual = [], [], []
        for c in conjs:
            if isinstance(c, exp.EQ) and not isinstance(c.expression, (exp.Any, exp.All)):
                try:
                    a = binder.bind(c.this)
                    b = binder.bind(c.expression)
                except PgError:
                    raise
                sa, sb = self._side(a, nl), self._side(b, nl)
                if sa == "l" and sb == "r" or sa == "r" and sb == "l":
                    if sa == "r":
                        a, b = b, a
                    a, b = self.unify(a, b, "JOIN")
                    lkeys.append(a)
                    rkeys.append(self._shift(b, -nl))
                    continue
            residual.append(self.coerce(binder.bind(c), type_oids.BOOL))
        res = expr.And(residual) if len(residual) > 1 else (residual[0] if residual else None)
        jkind = "inner" if kind == "cross" else kind
        return self._probe_join(lop, rop, lkeys, rkeys, res, jkind), scope

    def _push_implied_ors(self, conjs, lop, lscope, rop, rscope):
        """An OR over both inputs whose every branch also restricts one input
        alone implies that input's OR of those restrictions, which is pushed
        below the join while the full OR stays the join's residual (PostgreSQL's
        extract_restriction_or_clauses).  TPC-H Q19 then joins the few hundred
        parts of its three brands, not all of them, with the lineitems of its
        three quantity ranges."""
        for c in conjs:
            branches = disjuncts(c)
            if len(branches) < 2 or not self._refs_both(c, lscope, rscope):
                continue
            lop = self._push_implied_or(branches, lop, lscope)
            rop = self._push_implied_or(branches, rop, rscope)
        return lop, rop

    def _push_implied_or(self, branches, op, scope: Scope):
        """``op`` under the OR of each branch's conjuncts that read ``scope``
        only, when every branch has some (else no row can be excluded)."""
        implied = []
        for b in branches:
            parts = [p for p in split_conjuncts(b.this if isinstance(b, exp.Paren) else b)
                     if p.find(exp.Column) is not None and self._refs_within(p, scope)]
            if not parts:
                return op
            implied.append(exp.paren(exp.and_(*[p.copy() for p in parts])) if len(parts) > 1 else parts[0].copy())
        try:
            bound = self.coerce(ExprBinder(self, scope, context="WHERE").bind(exp.or_(*implied)), type_oids.BOOL)
        except PgError:
            return op  # the whole condition, bound next, reports it in its own words
        if any(isinstance(n, expr.Func) and n.volatile for n in _unique_nodes(bound)):
            return op  # evaluated twice, a volatile call would answer differently
        return self.push_filters(op, [bound])

    def _probe_join(self, lop, rop, lkeys, rkeys, res, kind) -> operators.Op:
        """The join operator for ``lop <kind> JOIN rop`` (output: left columns,
        then right ones).

        A stream belongs on the probe (left) side: a continuous view probes the
        table's kept hash table with every inserted batch, and never rebuilds a
        stream.  So a stream on the right of an inner join, or on the preserved
        right side of a RIGHT JOIN, trades places with the table (RIGHT becomes
        LEFT); a projection puts the columns back in written order."""
        nl = len(lop.out)
        swap = _SWAPPED_KIND.get(kind)
        if swap is not None and self._is_stream(rop) and not self._is_stream(lop):
            return self._swapped_join(lop, rop, lkeys, rkeys, res, nl, len(rop.out), swap)
        if lkeys:
            return operators.HashJoin(lop, rop, lkeys, rkeys, kind, res)
        return operators.NestedLoopJoin(lop, rop, res, kind)

    def _swapped_join(self, lop, rop, lkeys, rkeys, res, nl, nr, kind) -> operators.Op:
        """Build on the table, probe with the stream, then restore column order."""
        # residual and keys were bound with left columns first; remap indices
        def remap(e: expr.Expr) -> expr.Expr:
            for node in _unique_nodes(e):
                if isinstance(node, expr.ColRef):
                    node.idx = node.idx + nr if node.idx < nl else node.idx - nl
            return e

        if res is not None:
            res = remap(res)
        j = operators.HashJoin(rop, lop, list(rkeys), list(lkeys), kind, res) if lkeys else operators.NestedLoopJoin(rop, lop, res, kind)
        exprs: list[expr.Expr] = [expr.ColRef(nr + i, c.oid, c.name, c.typmod) for i, c in enumerate(j.out[nr:])]
        exprs += [expr.ColRef(i, c.oid, c.name, c.typmod) for i, c in enumerate(j.out[:nr])]
        proj = operators.Project(j, exprs, j.out[nr:] + j.out[:nr])
        proj.permutation = True  # push_filters sees through it, as after a reordered comma join
        return proj

    def _is_stream(self, op) -> bool:
        return getattr(op, "is_stream", False) or any(self._is_stream(c) for c in op.children)

    def _side(self, e: expr.Expr, nl: int) -> str:
        sides = set()
        for node in e.walk():
            if isinstance(node, expr.ColRef):
                sides.add("l" if node.idx < nl else "r")
            if isinstance(node, expr.OuterRef) or (isinstance(node, expr.SubqueryExpr) and node.correlated):
                # a correlated subquery reads the whole current row: it cannot move
                return "x"
        if len(sides) == 1:
            return sides.pop()
        return "x" if sides else "c"

    def _shift(self, e: expr.Expr, delta: int) -> expr.Expr:
        if delta == 0:
            return e
        for node in _unique_nodes(e):
            if isinstance(node, expr.ColRef):
                node.idx += delta
        return e

    def _refs_within(self, node, scope: Scope) -> bool:
        if any(isinstance(s, (exp.Subquery, exp.Exists, exp.Select)) for s in node.find_all(exp.Subquery, exp.Exists, exp.Select)):
            return False
        for col in node.find_all(exp.Column):
            name = ident(col.this) if isinstance(col.this, exp.Identifier) else None
            table = ident(col.args.get("table")) if col.args.get("table") else None
            if name is None or len(scope.find(name, table)) != 1:
                return False
        return True

    def _refs_both(self, node, ls: Scope, rs: Scope) -> bool:
        in_left = in_right = False
        for col in node.find_all(exp.Column):
            name = ident(col.this) if isinstance(col.this, exp.Identifier) else None
            table = ident(col.args.get("table")) if col.args.get("table") else None
            if name is not None and ls.find(name, table):
                in_left = True
            if name is not None and rs.find(name, table):
                in_right = True
        return in_left and in_right

    def push_filters(self, op: operators.Op, preds: list[expr.Expr]) -> operators.Op:
        """Put each predicate directly above the scan it needs, when possible."""
        if isinstance(op, operators.Project) and getattr(op, "permutation", False) and preds:
            # a pure column reordering (comma joins): push through it
            for pr in preds:
                for node in _unique_nodes(pr):
                    if isinstance(node, expr.ColRef):
                        node.idx = cast(expr.ColRef, op.exprs[node.idx]).idx
            op.child = self.push_filters(op.child, preds)
            op.children = [op.child]
            return op
        if isinstance(op, (operators.HashJoin, operators.NestedLoopJoin)) and op.kind == "inner":
            nl = len(op.left.out)
            left_p, right_p, rest = [], [], []
            for p in preds:
                s = self._side(p, nl)
                if s == "l":
                    left_p.append(p)
                elif s == "r":
                    right_p.append(self._shift(p, -nl))
                else:
                    rest.append(p)
            if left_p:
                op.left = self.push_filters(op.left, left_p)
            if right_p:
                op.right = self.push_filters(op.right, right_p)
            op.children = [op.left, op.right]
            if isinstance(op, operators.NestedLoopJoin):
                op.inner.left, op.inner.right = op.left, op.right
            preds = rest
        if not preds:
            return op
        return operators.Filter(op, expr.And(preds) if len(preds) > 1 else preds[0])


#: joins whose inputs may trade places, and the kind they become: a stream on
#: the right of these moves to the probe side (FULL and LEFT-with-the-stream-
#: on-the-nullable-side have no such form; continuous views refuse them)
_SWAPPED_KIND = {"inner": "inner", "right": "left"}


def _unique_nodes(e: expr.Expr):
    """Each node of a bound tree once: binders share sub-expressions (BETWEEN
    uses its operand twice), so in-place index rewrites must not visit a
    shared node twice."""
    seen: set[int] = set()
    for node in e.walk():
        if id(node) not in seen:
            seen.add(id(node))
            yield node


def _using_output(lscope: Scope, rscope: Scope, kind: str, names: list[str], lkeys: list[expr.Expr],
                  source: list[operators.OutCol]):
    """Projection of a USING / NATURAL join over the join's columns
    ``source``: the merged USING columns first (COALESCE for full joins),
    then every input column, the USING ones hidden (qualified access
    ``t.col`` still finds them).  A merged column is its side's table column
    only when no type coercion was needed, as PostgreSQL's join alias vars."""
    nl = len(lscope.cols)
    exprs: list[expr.Expr] = []
    out: list[operators.OutCol] = []
    cols: list[ScopeCol] = []
    for nm, lkey in zip(names, lkeys):
        li = lscope.find(nm, None)[0]
        ri = rscope.find(nm, None)[0] + nl
        if kind == "full":
            e: expr.Expr = expr.Coalesce([expr.coerce(expr.ColRef(li, lscope.cols[li].oid), lkey.oid), expr.coerce(expr.ColRef(ri, rscope.cols[ri - nl].oid), lkey.oid)], lkey.oid)
        elif kind == "right":
            e = expr.ColRef(ri, rscope.cols[ri - nl].oid)
        else:
            e = expr.ColRef(li, lscope.cols[li].oid)
        exprs.append(e)
        out.append(operators.carried(nm, e, source, -1) if e.oid == lkey.oid else operators.OutCol(nm, e.oid))
        cols.append(ScopeCol(None, nm, e.oid))
    for base, side in ((0, lscope), (nl, rscope)):
        for i, c in enumerate(side.cols):
            exprs.append(expr.ColRef(base + i, c.oid, c.name))
            out.append(operators.carried(c.name, exprs[-1], source, c.typmod))
            cols.append(ScopeCol(c.table, c.name, c.oid, c.typmod, hidden=c.hidden or c.name in names))
    return exprs, out, cols


def _restore_from_order(op: operators.Op, scope: Scope, planned: list, order: list[int]) -> tuple[operators.Op, Scope]:
    """After a reordered comma join: a pure column permutation back to FROM
    order (marked so ``push_filters`` can see through it)."""
    starts, pos = {}, 0
    for k in order:
        starts[k] = pos
        pos += len(planned[k][1].cols)
    idx = [starts[k] + i for k in range(len(planned)) for i in range(len(planned[k][1].cols))]
    exprs: list[expr.Expr] = [expr.ColRef(i, op.out[i].oid, op.out[i].name, op.out[i].typmod) for i in idx]
    proj = operators.Project(op, exprs, [op.out[i] for i in idx])
    proj.permutation = True
    new_scope = Scope([scope.cols[i] for i in idx], scope.parent,
                      tables=[t for k in range(len(planned)) for t in planned[k][1].tables],
                      null_extended=scope.null_extended)
    new_scope.correlated = scope.correlated
    return proj, new_scope


def null_extended_after(lscope: Scope, rscope: Scope, kind: str) -> frozenset[str] | None:
    """The FROM items a join's output may hold NULL-extended rows of: those
    of its inputs, and the nullable side's (LEFT: the right, RIGHT: the left,
    FULL: both); None when an input's is not known."""
    if lscope.null_extended is None or rscope.null_extended is None:
        return None
    out = lscope.null_extended | rscope.null_extended
    if kind in ("left", "full"):
        out |= frozenset(rscope.tables)
    if kind in ("right", "full"):
        out |= frozenset(lscope.tables)
    return out
