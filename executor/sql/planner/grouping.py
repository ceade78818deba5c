"""GROUP BY, grouping sets (ROLLUP / CUBE / GROUPING SETS), HAVING, and
binding of everything evaluated above the Aggregate.

Why a module of its own: after grouping, expressions must be bound against
the Aggregate's output (group keys and aggregate results), not the input;
the bookkeeping for that (``_PostAggBinder``, ``grouping()``) is needed only
here.  Binding one aggregate call is ``agg_calls``.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator

import numpy as np
from sqlglot import exp

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import GROUPING_ERROR, WINDOWING_ERROR, PgError

from ...execution import expr
from ...execution import operators
from ...execution.aggregates import AggSpec
from ..binder import ExprBinder, Scope, ScopeCol, func_args, func_name, ident, is_aggregate_call
from .base import PlannerBase
from .names import _BoundRef, expr_name
from .targets import bare_name, constant_position, item_sql, output_name_match, require_equality
from ..dialect import DIALECT


class GroupingPlanner(PlannerBase):
    """GROUP BY (with grouping sets), HAVING and post-aggregation binding."""

    def _contains_agg(self, node) -> bool:
        if isinstance(node, _BoundRef):
            return False
        for n in node.walk() if hasattr(node, "walk") else []:
            if isinstance(n, (exp.Subquery, exp.Select)) and n is not node:
                continue
            if isinstance(n, exp.Window):
                continue
            if is_aggregate_call(n):
                # ignore aggregates inside window specs or subqueries, up to
                # and including the item itself (an unaliased ``sum(x) OVER ()``)
                if n is node:
                    return True
                p = n.parent
                inside = False
                while p is not None:
                    if isinstance(p, (exp.Window, exp.Subquery, exp.Select)):
                        inside = True
                        break
                    if p is node:
                        break
                    p = p.parent
                if not inside:
                    return True
        return False

    def plan_aggregate(self, op, scope, sel, select_items, group, having, outer):
        in_binder = ExprBinder(self, scope, context="GROUP BY")
        key_nodes, sets = self._group_keys(group, select_items, scope)
        keys = [in_binder.bind(k) for k in key_nodes]
        keys = [self.coerce(k, type_oids.TEXT) if k.oid == type_oids.UNKNOWN else k for k in keys]
        require_equality([k.oid for k in keys])
        key_sql = [k.sql(DIALECT) for k in key_nodes]
        aggs: list[AggSpec] = []
        agg_sql: list[str] = []
        nkeys = len(keys)

        def agg_handler(node, binder):
            sql = node.sql(DIALECT)
            if sql in agg_sql:
                i = agg_sql.index(sql)
                return expr.ColRef(nkeys + i, aggs[i].oid, aggs[i].func)
            spec = self.bind_agg(node, scope)
            if spec.func == "combine":
                self.check_combine(spec, op)
            aggs.append(spec)
            agg_sql.append(sql)
            return expr.ColRef(nkeys + len(aggs) - 1, spec.oid, spec.func)

        def group_match(node):
            if isinstance(node, _BoundRef):
                return None
            sql = node.sql(DIALECT)
            for i, k in enumerate(key_sql):
                if sql == k:
                    return expr.ColRef(i, keys[i].oid, expr_name(key_nodes[i]), keys[i].typmod)
            if isinstance(node, exp.Func) and func_name(node) == "grouping":
                return _grouping_call(node, key_sql, keys)
            return None

        # subqueries of the select list, HAVING and ORDER BY see the groups: only keys
        grouped_scope = dataclasses.replace(scope, grouped={k.idx: i for i, k in enumerate(keys) if type(k) is expr.ColRef})

        def make_post(window_handler=None):
            b = ExprBinder(self, grouped_scope, agg_handler=agg_handler, group_match=group_match,
                           window_handler=window_handler, context="SELECT")
            return b

        # bind select list / having / order once to discover aggregates
        # (window calls are walked too: rank() OVER (ORDER BY sum(x)) groups first)
        hav = self._discover_aggs(make_post(_discover_window), sel, select_items, key_nodes, having)
        out = [operators.carried(expr_name(k), e, op.out, -1) for k, e in zip(key_nodes, keys)] + [operators.OutCol(a.func, a.oid) for a in aggs]
        if sets is not None:
            out.append(operators.OutCol("__grouping", type_oids.INT4, hidden=True))
        agg_op = operators.Aggregate(op, keys, aggs, out, sets)
        new_cols = [ScopeCol(None, c.name, c.oid, hidden=True) for c in out]
        new_scope = Scope(new_cols, outer)
        _GroupingIdRef.index = len(out) - 1
        result_op: operators.Op = agg_op
        if hav is not None:
            result_op = operators.Filter(agg_op, hav)

        def bind_post(window_handler=None):
            b = make_post(window_handler)
            b.scope = grouped_scope
            return _PostAggBinder(b, new_scope)

        return result_op, new_scope, bind_post

    @contextlib.contextmanager
    def grouping_checked_last(self, grouped: bool, scope, sel, select_items, having) -> Iterator[None]:
        """Planning a grouped select list: a grouping error (42803) stands
        only when binding the query finds no other error, since PostgreSQL
        checks grouping once the whole query is bound (an unknown function
        over an ungrouped column is 42883 there)."""
        try:
            yield
        except PgError as e:
            if grouped and e.sqlstate == GROUPING_ERROR:
                self._error_before_grouping(scope, sel, select_items, having)
            raise

    def _error_before_grouping(self, scope, sel, select_items, having) -> None:
        """Bind the select list, HAVING and ORDER BY again as if nothing were
        grouped and raise what that raises; return when it binds."""
        def agg_handler(node, binder):
            return expr.Const(None, self.bind_agg(node, scope).oid)

        b = ExprBinder(self, scope, agg_handler=agg_handler, window_handler=_discover_window, context="SELECT")
        nodes = [i.this if isinstance(i, exp.Alias) else i for i in select_items if not isinstance(i, _BoundRef)]
        nodes += [having.this] if having is not None else []
        order = sel.args.get("order")
        names = [expr_name(i) for i in select_items]
        nodes += [o.this for o in (order.expressions if order is not None else [])
                  if self._order_target(o.this, select_items, names) is None]
        for node in nodes:
            if any(func_name(f) == "grouping" for f in node.find_all(exp.Func)):
                continue            # grouping() exists only in a grouped query
            try:
                b.bind(node)
            except PgError as e:
                if e.sqlstate != GROUPING_ERROR or "must appear in the GROUP BY clause" not in e.message:
                    raise

    def _discover_aggs(self, post, sel, select_items, key_nodes, having) -> expr.Expr | None:
        """Bind the select list, HAVING and ORDER BY once so that every
        aggregate call registers (in that order: it is the output order);
        returns the bound HAVING condition."""
        for item in select_items:
            if isinstance(item, _BoundRef):
                _check_grouped(item, key_nodes)
                continue
            self._discover(post, item.this if isinstance(item, exp.Alias) else item)
        hav = None
        if having is not None:
            hav = self.coerce(post.bind(having.this), type_oids.BOOL)
        order = sel.args.get("order")
        if order is not None:
            for o in order.expressions:
                node = o.this
                if self._order_target(node, select_items, [expr_name(i) for i in select_items]) is None:
                    self._discover(post, node)
        return hav

    def _group_keys(self, group, select_items, scope) -> tuple[list, list[list[int]] | None]:
        """GROUP BY's distinct key expressions, and its grouping sets as lists
        of key indexes (None without ROLLUP / CUBE / GROUPING SETS)."""
        key_nodes: list = []
        sets: list[list[int]] | None = None
        if group is None:
            return key_nodes, sets
        plain = [g for g in group.expressions if not isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))]
        # GROUP BY (a, b) at the top is the columns a and b, as PostgreSQL flattens it
        plain = [e for g in plain for e in (g.expressions if isinstance(g, exp.Tuple) else [g])]
        special = [g for g in group.expressions if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))]
        for flag in ("rollup", "cube", "grouping_sets"):
            v = group.args.get(flag)
            if v:
                special += v if isinstance(v, list) else [v]

        def key_index(node):
            while isinstance(node, exp.Paren):       # GROUP BY (v + 1), as pg_get_viewdef writes keys
                node = node.this
            node = self._resolve_group_ref(node, select_items, scope)
            sql = node.sql(DIALECT)
            for i, k in enumerate(key_nodes):
                if k.sql(DIALECT) == sql:
                    return i
            key_nodes.append(node)
            return len(key_nodes) - 1

        base = [key_index(g) for g in plain]
        if special:
            sets = [list(base)]
            for sp in special:
                options = _set_options(sp, key_index)
                sets = [s + [k for k in o if k not in s] for s in sets for o in options]
        return key_nodes, sets

    def _discover(self, binder, node):
        """Bind once to register aggregates (results discarded)."""
        binder.bind(node)

    def _resolve_group_ref(self, node, select_items, scope):
        """What a GROUP BY item groups by (:mod:`.targets`): a bare name is
        a FROM-clause column if there is one, else an output column's
        expression; an integer constant is a position."""
        nm = bare_name(node)
        if nm is not None and not scope.find(nm, None):
            names = [expr_name(it) for it in select_items]
            same = lambda i, j: item_sql(select_items[i]) == item_sql(select_items[j])  # noqa: E731
            hit = output_name_match(nm, names, same, "GROUP BY")
            if hit is not None:
                return _grouped_item(self, select_items[hit])
        k = constant_position(node, "GROUP BY", len(select_items))
        if k is not None:
            return _grouped_item(self, select_items[k])
        return node


def _grouped_item(planner: GroupingPlanner, it):
    """A select-list item as a GROUP BY key: its expression, which may
    hold no aggregate or window call (checkTargetlistEntrySQL92)."""
    if isinstance(it, _BoundRef):
        return exp.column(it.col.name, table=it.col.table)
    inner = it.this if isinstance(it, exp.Alias) else it
    if planner._contains_agg(inner):
        raise PgError(GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY")
    if any(True for _ in inner.find_all(exp.Window)):
        raise PgError(WINDOWING_ERROR, "window functions are not allowed in GROUP BY")
    return inner


class _GroupingIdRef(expr.Expr):
    index = 0
    oid = type_oids.INT4

    def eval(self, batch, ctx):
        return batch.cols[_GroupingIdRef.index]


class _PostAggBinder:
    """Binds post-aggregation expressions: group keys and aggregates map to
    the Aggregate's output columns; * expansion refs map through keys."""

    def __init__(self, inner: ExprBinder, new_scope: Scope) -> None:
        self.inner = inner
        self.new_scope = new_scope

    def bind(self, node):
        if isinstance(node, _BoundRef):
            m = self.inner.group_match(exp.column(node.col.name, table=node.col.table))
            if m is None:
                for i, c in enumerate(self.new_scope.cols):
                    if c.name == node.col.name:
                        return expr.ColRef(i, c.oid, c.name)
            return m
        return self.inner.bind(node)


def _set_options(sp, key_index) -> list[list[int]]:
    """The grouping sets (lists of key indexes) one ROLLUP, CUBE or
    GROUPING SETS item stands for, in PostgreSQL's order."""
    if isinstance(sp, (exp.Rollup, exp.Cube)):
        ks = [[key_index(x) for x in (e.expressions if isinstance(e, exp.Tuple) else [e])] for e in sp.expressions]
        if isinstance(sp, exp.Rollup):
            return [sum(ks[:i], []) for i in range(len(ks), -1, -1)]
        return [sum((ks[i] for i in range(len(ks)) if mask & (1 << (len(ks) - 1 - i))), [])
                for mask in range(2 ** len(ks) - 1, -1, -1)]
    options = []
    for e in sp.expressions:
        inner = e.this if isinstance(e, exp.Paren) else e
        if isinstance(inner, exp.Tuple):
            options.append([key_index(x) for x in inner.expressions])
        elif isinstance(e, exp.Tuple) and not e.expressions:
            options.append([])
        else:
            options.append([key_index(inner)])
    return options


def _grouping_call(node, key_sql: list[str], keys: list[expr.Expr]) -> expr.Expr:
    """``grouping(a, b, ...)``: one bit per argument, set where that key is
    not grouped in the row's grouping set (read from the hidden grouping id)."""
    idxs = [key_sql.index(a.sql(DIALECT)) for a in func_args(node)]

    def impl(cols, n, ctx, _idxs=idxs):
        gid = cols[0].data
        out = np.zeros(n, np.int64)
        nk = len(keys)
        for j in _idxs:
            out = out * 2 + ((gid >> (nk - 1 - j)) & 1)
        return Col(out.astype(np.int32), None, type_oids.INT4)

    return expr.Func("grouping", impl, [_GroupingIdRef()], type_oids.INT4)


def _discover_window(node, binder):
    """Window handler while discovering aggregates: binds the window call's
    arguments, PARTITION BY and ORDER BY so aggregates inside them register."""
    fn_node = node.this.this if isinstance(node.this, exp.Filter) else node.this
    parts = [a for a in func_args(fn_node) if not isinstance(a, exp.Star)]
    parts += list(node.args.get("partition_by") or [])
    o = node.args.get("order")
    parts += [ob.this for ob in (o.expressions if o is not None else [])]
    for part in parts:
        binder.bind(part)
    return expr.Const(None, type_oids.UNKNOWN)


def _check_grouped(item: _BoundRef, key_nodes: list) -> None:
    """A ``*``-expanded column of a grouped query must be a group key."""
    group_match_hit = None
    c = item.col
    for i, k in enumerate(key_nodes):
        if isinstance(k, exp.Column) and ident(k.this) == c.name:
            group_match_hit = i
    if group_match_hit is None:
        raise PgError(GROUPING_ERROR, f'column "{(c.table + ".") if c.table else ""}{c.name}" must appear in the GROUP BY clause or be used in an aggregate function')
