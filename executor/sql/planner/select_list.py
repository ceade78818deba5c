"""One SELECT block in PostgreSQL's order of evaluation: FROM, WHERE,
grouping (``grouping``), window functions, the select list (with
set-returning functions), DISTINCT, ORDER BY, LIMIT.

Why a module of its own: this is the driver that strings the clause
planners together (PostgreSQL's grouping_planner); the select-list and
ORDER BY/LIMIT handling it owns are used by no other step.
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED, GROUPING_ERROR, INVALID_COLUMN_REFERENCE, SYNTAX_ERROR, UNDEFINED_TABLE, PgError,
)

from ...execution import expr
from ...execution import operators
from ..binder import ExprBinder, Scope, aggregate_calls, func_args, func_name, ident
from .decorrelate import try_scalar_join, try_select_scalar_join, try_semi_join
from .base import KEEP_UNKNOWNS, PlannerBase
from .names import _BoundRef, expr_name
from .targets import (bare_name, constant_position, item_sql, output_name_match, require_equality,
                      require_ordering, unparen)
from .quals import factor_ors, split_conjuncts
from ..dialect import DIALECT
from ..table_functions import RECORD_SRFS, SRF_NAMES, TABLE_FUNCTIONS, records_of, srf_impl, table_function
from .. import sql_functions
from ...execution.window import WindowOp
from ..window_binding import bind_window


class SelectPlanner(PlannerBase):
    """One SELECT: WHERE, select list, SRFs, DISTINCT, ORDER BY, LIMIT."""

    def plan_select(self, sel: exp.Select, outer: Scope | None, corr) -> operators.Op:
        where_conj = split_conjuncts(where.this) if (where := sel.args.get("where")) else []
        where_conj = factor_ors(where_conj)
        op, scope = self.plan_from(sel, outer, corr, where_conj)
        if corr is not None:
            scope.correlated = corr
        op, scope = self._plan_where(op, scope, outer, where_conj)
        group = sel.args.get("group")
        having = sel.args.get("having")
        select_items = self.expand_star(sel.expressions, scope)
        has_aggs = any(self._contains_agg(e) for e in select_items) or (having is not None) or group is not None
        order = sel.args.get("order")
        if not has_aggs and order is not None:
            has_aggs = any(self._contains_agg(o.this) for o in order.expressions)
        if not has_aggs:
            op, scope, select_items = self._decorrelate_select(op, scope, outer, select_items)
        with self.grouping_checked_last(has_aggs, scope, sel, select_items, having):
            if has_aggs:
                op, scope, bind_post = self.plan_aggregate(op, scope, sel, select_items, group, having, outer)
            else:
                bind_post = None

            # window functions
            win_specs: list = []

            def window_handler(node, binder, window_input=op):
                return bind_window(self, node, binder, win_specs, base_width, sel.args.get("windows"), window_input)

            base_width = len(op.out)
            mk = (lambda: bind_post(window_handler)) if bind_post else (lambda: ExprBinder(self, scope, window_handler=window_handler, context="SELECT"))
            binder = mk()
            keep = bool(sel.meta.get(KEEP_UNKNOWNS)) and not sel.args.get("distinct")
            exprs, names = self._bind_select_list(binder, select_items, keep_unknowns=keep)
            distinct = sel.args.get("distinct")
            same = _same_item(select_items, exprs)
            sort_keys, extra = self._order_keys(order, distinct, binder, select_items, names, len(exprs), same)
        if win_specs:
            op = WindowOp(op, win_specs)
        out = [operators.carried(n, e, op.out) for n, e in zip(names, exprs)] + [operators.OutCol("?sort?", e.oid) for e in extra]
        op = self._project_select(op, scope, select_items, exprs, extra, out, binder)
        op = self._distinct_sort(op, distinct, sort_keys, select_items, names, out, len(exprs), bool(extra), same)
        op = self.plan_limit(sel, op, scope)
        if extra:
            op = operators.Project(op, [expr.ColRef(i, out[i].oid) for i in range(len(exprs))], out[: len(exprs)])
        return op

    def _plan_where(self, op, scope, outer, where_conj):
        """WHERE: correlated subqueries become joins, every other conjunct is
        pushed as low as possible (scans first), then [NOT] EXISTS conjuncts
        are applied as semi/anti joins."""
        semi: list = []
        if where_conj:
            op, scope, semi = self._decorrelate(op, scope, outer, where_conj)
        if where_conj:
            binder = ExprBinder(self, scope, context="WHERE")
            preds = []
            for c in where_conj:
                if aggregate_calls(c) and not list(c.find_all(exp.Subquery, exp.Select)):
                    raise PgError(GROUPING_ERROR, "aggregate functions are not allowed in WHERE")
                e = binder.bind(c)
                preds.append(self.coerce(e, type_oids.BOOL) if e.oid != type_oids.BOOL else e)
            op = self.push_filters(op, preds)
        for c in semi:
            j = try_semi_join(self, op, scope, outer, c)
            if j is None:  # cannot happen after a successful probe, but stay correct
                binder = ExprBinder(self, scope, context="WHERE")
                op = operators.Filter(op, self.coerce(binder.bind(c), type_oids.BOOL))
            else:
                op = j
        return op, scope

    def _bind_select_list(self, binder, select_items, keep_unknowns: bool = False) -> tuple[list[expr.Expr], list[str]]:
        """Bound select-list expressions and their output names; a
        set-returning item gets a placeholder (``_project_set`` fills it).
        An untyped literal (``NULL``, ``'5'``) reads as text, unless the
        query feeds an INSERT or a set operation (``keep_unknowns``): there
        it takes the type it meets, as in PostgreSQL."""
        exprs: list[expr.Expr] = []
        names: list[str] = []
        srf_at = set(self._find_srfs(select_items))
        for k, item in enumerate(select_items):
            if k in srf_at:
                exprs.append(expr.Const(None, type_oids.TEXT))
                names.append(expr_name(item))
                continue
            e = binder.bind(item.this if isinstance(item, exp.Alias) else item)
            if e.oid == type_oids.UNKNOWN and not (keep_unknowns and isinstance(e, expr.Const)):
                e = self.coerce(e, type_oids.TEXT)
            exprs.append(e)
            names.append(expr_name(item))
        return exprs, names

    def _order_keys(self, order, distinct, binder, select_items, names, nexprs, same):
        """ORDER BY keys as (output index, desc, nulls_first): output aliases,
        ordinals or input expressions; an input expression not in the select
        list becomes an extra, later dropped, output column."""
        sort_keys = []
        extra: list[expr.Expr] = []
        if order is None:
            return sort_keys, extra
        for o in order.expressions:
            node = o.this
            desc = bool(o.args.get("desc"))
            nf = o.args.get("nulls_first")
            nulls_first = None if nf is None else bool(nf)
            idx = self._order_target(node, select_items, names, same=same)
            if idx is None:
                if distinct is not None and not distinct.args.get("on"):
                    raise PgError(INVALID_COLUMN_REFERENCE, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
                e = binder.bind(node)
                extra.append(e)
                idx = nexprs + len(extra) - 1
            sort_keys.append((idx, desc, nulls_first))
        return sort_keys, extra

    def _project_select(self, op, scope, select_items, exprs, extra, out, binder):
        """The select-list projection; set-returning items make it a ProjectSet."""
        srfs = self._find_srfs(select_items)
        if len(srfs) > 1:  # several SRFs advance in lockstep (PostgreSQL 10+)
            return operators.ProjectSetN(op, [self._project_set(op, scope, select_items, exprs, out, k, binder) for k in srfs],
                                 exprs, out)
        if srfs:
            return self._project_set(op, scope, select_items, exprs, out, srfs[0], binder)
        return operators.Project(op, exprs + extra, out)

    def _distinct_sort(self, op, distinct, sort_keys, select_items, names, out, nexprs, has_extra, same):
        """DISTINCT [ON] and ORDER BY over the projected rows (DISTINCT ON
        sorts first, as it keeps the first row of each group)."""
        require_ordering([out[i].oid for i, _, _ in sort_keys])
        if distinct is not None:
            on = distinct.args.get("on")
            if on is not None:
                return self._distinct_on(op, on, sort_keys, select_items, names, out, same)
            require_equality([c.oid for c in out[:nexprs]])
            op = operators.Distinct(op) if not has_extra else operators.Distinct(op, [expr.ColRef(i, out[i].oid) for i in range(nexprs)])
        if sort_keys:
            op = operators.Sort(op, [(expr.ColRef(i, out[i].oid), d, nf) for i, d, nf in sort_keys])
        return op

    def _distinct_on(self, op, on, sort_keys, select_items, names, out, same):
        on_exprs = []
        for e in on.expressions:
            i = self._order_target(e, select_items, names, "DISTINCT ON", same)
            on_exprs.append(expr.ColRef(i, out[i].oid) if i is not None else None)
        if any(x is None for x in on_exprs):
            raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT ON expressions must appear in the select list")
        require_equality([e.oid for e in on_exprs])
        if sort_keys:
            op = operators.Sort(op, [(expr.ColRef(i, out[i].oid), d, nf) for i, d, nf in sort_keys])
        return operators.Distinct(op, on_exprs)

    def _decorrelate(self, op, scope, outer, where_conj):
        """Turn correlated subqueries among the WHERE conjuncts into joins
        (see :mod:`executor.decorrelate`).  Scalar-subquery comparisons are
        joined now; [NOT] EXISTS conjuncts are returned to be applied as
        semi/anti joins after the ordinary filters."""
        semi = []
        for c in list(where_conj):
            if not list(c.find_all(exp.Subquery, exp.Exists)):
                continue
            if isinstance(c, (exp.Exists, exp.Not)):
                probe = try_semi_join(self, op, scope, outer, c)
                if probe is not None:
                    where_conj.remove(c)
                    semi.append(c)
                continue
            r = try_scalar_join(self, op, scope, outer, c, where_conj)
            if r is not None:
                op, scope = r
        return op, scope, semi

    def _decorrelate_select(self, op, scope, outer, items):
        """Correlated aggregate subqueries in an ungrouped select list become
        LEFT JOINs with the regrouped subquery (see :mod:`executor.decorrelate`).
        Items are rewritten on copies: the parsed statement stays untouched."""
        out = list(items)
        for k, item in enumerate(items):
            if isinstance(item, _BoundRef):
                continue
            subs = [n for n in item.find_all(exp.Subquery)
                    if not any(isinstance(a, (exp.Subquery, exp.Select)) for a in _ancestors(n, item))]
            if not subs:
                continue
            new_item = None
            for sub in subs:
                r = try_select_scalar_join(self, op, scope, outer, sub)
                if r is None:
                    continue
                op, scope, repl = r
                if new_item is None:
                    new_item = item.copy()
                target = [n for n in new_item.find_all(exp.Subquery) if n == sub]
                if target:
                    if target[0] is new_item:
                        new_item = repl
                    else:
                        target[0].replace(repl)
            if new_item is not None:
                out[k] = new_item if isinstance(item, exp.Alias) else exp.alias_(new_item, expr_name(item), quoted=True)
        return op, scope, out

    def _find_srf(self, items):
        for i, it in enumerate(items):
            node = _strip_pg_catalog(it.this if isinstance(it, exp.Alias) else it)
            if isinstance(node, (exp.Unnest, exp.GenerateSeries, exp.ExplodingGenerateSeries, exp.Explode)) or (
                    isinstance(node, exp.Func) and (func_name(node) in SRF_NAMES or
                                                    sql_functions.returns_set(self, func_name(node)))) or \
                    _record_srf(node) is not None:
                return i
        return None

    def _find_srfs(self, items) -> list[int]:
        return [i for i, it in enumerate(items) if self._find_srf([it]) is not None]

    def _project_set(self, op, scope, items, exprs, out, srf_index, binder):
        node = _strip_pg_catalog(items[srf_index].this if isinstance(items[srf_index], exp.Alias) else items[srf_index])
        qualified = _record_srf(node)
        if qualified is not None:          # pipelinedb.get_views(), json_each(j) in a select list: one record per row
            call = node.expression if isinstance(node, exp.Dot) else node
            args = [binder.bind(a) for a in func_args(call)]
            fn = records_of(table_function(self, qualified, args, None, []))
            short = qualified.rsplit(".", 1)[-1]
            out[srf_index] = operators.OutCol(out[srf_index].name if out[srf_index].name != "?column?" else short,
                                              type_oids.RECORD)
            return operators.ProjectSet(op, srf_index, fn, args, exprs, out)
        name = "unnest" if isinstance(node, (exp.Unnest, exp.Explode)) else ("generate_series" if isinstance(node, (exp.GenerateSeries, exp.ExplodingGenerateSeries)) else func_name(node))
        if isinstance(node, exp.Func) and name not in SRF_NAMES and sql_functions.returns_set(self, name):
            fn, oid, args = sql_functions.select_list_srf(self, binder, node, name)
        else:
            args = [binder.bind(a) for a in (node.expressions if isinstance(node, exp.Unnest) else
                                             [node.this, *node.expressions] if isinstance(node, exp.Explode)
                                             else func_args(node))]
            fn, oid = srf_impl(self, name, args)
        out[srf_index] = operators.OutCol(out[srf_index].name if out[srf_index].name != "?column?" else name, oid)
        return operators.ProjectSet(op, srf_index, fn, args, exprs, out)

    def _order_target(self, node, items, names, clause: str = "ORDER BY",
                      same: Callable[[int, int], bool] | None = None) -> int | None:
        """The select-list index an ORDER BY / DISTINCT ON item names
        (:mod:`.targets`: output names first, then positions, then an
        equal expression), or None: an expression over the input.
        ``same`` says whether two items compute the same thing (PostgreSQL
        compares the bound expressions); without it, names are not checked
        for ambiguity (aggregate discovery, which binds again later)."""
        nm = bare_name(node)
        if nm is not None:
            hit = output_name_match(nm, names, same or (lambda i, j: True), clause)
            if hit is not None:
                return hit
        k = constant_position(node, clause, len(items))
        if k is not None:
            return k
        sql = unparen(node).sql(DIALECT)
        return next((i for i, it in enumerate(items) if item_sql(it) == sql), None)

    def plan_limit(self, sel, op, scope):
        limit = sel.args.get("limit")
        offset = sel.args.get("offset")
        if limit is None and offset is None:
            return op
        b = ExprBinder(self, Scope([], None), context="LIMIT")
        le = None
        if limit is not None:
            node = limit.expression if limit.expression is not None else limit.this
            if isinstance(limit, exp.Fetch):
                node = limit.args.get("count")
            if isinstance(node, exp.Var) and node.name.upper() == "ALL":
                node = None  # LIMIT ALL
            le = self.coerce(b.bind(node), type_oids.INT8) if node is not None else None
        oe = self.coerce(b.bind(offset.expression if offset.expression is not None else offset.this), type_oids.INT8) if offset is not None else None
        return operators.Limit(op, le, oe)

    def expand_star(self, items, scope: Scope) -> list[exp.Expression]:
        out: list[exp.Expression] = []
        using: set[str] = getattr(scope, "using_names", set())
        for it in items:
            if isinstance(it, exp.Star) or (isinstance(it, exp.Column) and isinstance(it.this, exp.Star)):
                table = ident(it.args.get("table")) if isinstance(it, exp.Column) and it.args.get("table") else None
                if table is not None and not scope.has_table(table):
                    raise PgError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{table}"')
                if table is None and not scope.cols and not scope.tables:
                    raise PgError(SYNTAX_ERROR, "SELECT * with no tables specified is not valid")
                for i, c in enumerate(scope.cols):
                    if table is not None and c.table != table:
                        continue
                    if c.hidden and (table is None or c.name not in using):
                        continue
                    out.append(_BoundRef(i, c))
                continue
            out.append(it)
        return out


def _same_item(items, exprs: list[expr.Expr]) -> Callable[[int, int], bool]:
    """Whether two select-list items compute the same thing, as PostgreSQL's
    equal() on their expressions: one input column however it was written
    (``a`` and ``t.a``), else the same text."""
    def same(i: int, j: int) -> bool:
        a, b = exprs[i], exprs[j]
        if isinstance(a, expr.ColRef) and isinstance(b, expr.ColRef):
            return a.idx == b.idx
        return item_sql(items[i]) == item_sql(items[j])
    return same


def _strip_pg_catalog(node):
    """pg_catalog.f(...) parses as Dot(pg_catalog, f(...)): the call itself."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func) and \
            isinstance(node.this, (exp.Column, exp.Identifier)) and node.this.name.lower() == "pg_catalog":
        return node.expression
    return node


def _ancestors(node: exp.Expression, stop: exp.Expression):
    """Parents of ``node`` strictly below ``stop`` (nothing when node is stop)."""
    if node is stop:
        return
    p = node.parent
    while p is not None and p is not stop:
        yield p
        p = p.parent


def _record_srf(node) -> str | None:
    """A set-returning function of several columns in a select list, by the
    name ``table_function`` knows it: ``schema.f(...)`` of TABLE_FUNCTIONS
    (pipelinedb.get_views(), ...) or one of RECORD_SRFS (json_each, topk, ...)."""
    if isinstance(node, exp.Func) and not isinstance(node, exp.Dot):
        name = func_name(node)
        return name if name in RECORD_SRFS else None
    if not (isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func)):
        return None
    schema = node.this.this if isinstance(node.this, exp.Column) and not node.this.args.get("table") else \
        node.this if isinstance(node.this, exp.Identifier) else None
    qualified = f"{ident(schema)}.{func_name(node.expression)}" if schema is not None else None
    return qualified if qualified in TABLE_FUNCTIONS else None
