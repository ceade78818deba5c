"""The FROM clause: each item (table, stream, view, CTE, subquery, VALUES,
table function) becomes a scan with a Scope, and the items are joined.

Why a module of its own: resolving what a FROM name refers to (CTE, catalog
relation, system view) and what operator reads it is independent of how
the joins themselves are built (``joins``).
"""
from __future__ import annotations

import numpy as np
import sqlglot
from sqlglot import exp

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_TABLE,
                                         WRONG_OBJECT_TYPE, PgError)

from ...execution import expr, functions, privileges
from ...execution import operators
from ..binder import ExprBinder, Scope, ScopeCol, func_args, func_name, ident
from ..dialect import DIALECT
from ..sqltext import qualified_name_parts
from .base import PlannerBase
from .time_windows import WINDOW_FUNCTIONS, WindowPlanner
from splitstream.catalog.objects import system_catalogs as system
from ..table_functions import SRF_NAMES, TABLE_FUNCTIONS, table_function
from . import join_groups
from .. import sql_functions, tablesample


class FromPlanner(WindowPlanner, PlannerBase):
    """FROM items (tables, views, CTEs, subqueries, functions) and the join order."""

    def plan_from_item(self, item: exp.Expression, outer: Scope | None, corr) -> tuple[operators.Op, Scope]:
        alias_node = item.args.get("alias")
        alias = ident(alias_node.this) if alias_node is not None and alias_node.this is not None else None
        colaliases = [ident(c) for c in (alias_node.columns or [])] if alias_node is not None and alias_node.args.get("columns") else []
        sample = item.args.get("sample")
        if sample is not None and not (isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier)):
            # PostgreSQL's grammar has TABLESAMPLE only after a relation name
            raise PgError(SYNTAX_ERROR, 'syntax error at or near "TABLESAMPLE"')
        if isinstance(item, exp.Table):
            fn = item.this
            if isinstance(fn, exp.Anonymous) and str(fn.this).lower() in WINDOW_FUNCTIONS:
                return self.plan_time_window(fn, alias, colaliases, outer, corr)
            if isinstance(fn, (exp.Func, exp.Anonymous)) or isinstance(item.this, exp.Unnest):
                return self.plan_table_function(fn, alias, colaliases, outer, corr,
                                                ordinality=bool(item.args.get("ordinality")),
                                                schema=ident(item.args["db"]) if item.args.get("db") else None)
            name = ident(item.this)
            schema = ident(item.args.get("db")) if item.args.get("db") else None
            if sample is not None:
                tablesample.method_of(sample)           # 42704 before the relation, as PostgreSQL
                rel = self.lookup_relation(name, schema) if schema is not None or self.find_cte(name) is None else None
                op, scope = self.plan_named(name, schema, alias or name, colaliases, outer, corr)
                return tablesample.sampled(self, sample, op, rel), scope
            return self.plan_named(name, schema, alias or name, colaliases, outer, corr)
        if isinstance(item, exp.Subquery):
            plan = self.plan_query(item.this, outer, corr)
            a = alias or "?subquery?"
            self.row_types[a] = None
            cols = [ScopeCol(a, colaliases[i] if i < len(colaliases) else c.name, c.oid, c.typmod) for i, c in enumerate(plan.out)]
            return plan, Scope(cols, outer, tables=[a])
        if isinstance(item, exp.Values):
            plan = self.plan_values(item, outer)
            a = alias or "*VALUES*"
            self.row_types[a] = None
            names = colaliases or [f"column{i + 1}" for i in range(len(plan.out))]
            cols = [ScopeCol(a, names[i] if i < len(names) else c.name, c.oid) for i, c in enumerate(plan.out)]
            return plan, Scope(cols, outer, tables=[a])
        if isinstance(item, exp.Unnest):
            off = item.args.get("offset")  # WITH ORDINALITY [AS a(x, n)]: sqlglot keeps n as 'offset'
            if off is not None and not isinstance(off, bool):
                colaliases = colaliases + [ident(off)] if isinstance(off, exp.Identifier) else colaliases
            return self.plan_table_function(item, alias, colaliases, outer, corr, ordinality=off is not None and off is not False)
        if isinstance(item, exp.Lateral):
            raise PgError(FEATURE_NOT_SUPPORTED, "LATERAL is handled in joins")
        raise PgError(FEATURE_NOT_SUPPORTED, f"unsupported FROM item: {item.sql(DIALECT)[:60]}")

    def plan_named(self, name, schema, alias, colaliases, outer, corr) -> tuple[operators.Op, Scope]:
        self.row_types[alias] = None
        if schema is None:
            cte = self.find_cte(name)
            if cte is not None:
                return _cte_scan(name, cte, alias, colaliases, outer)

        rel = self.lookup_relation(name, schema)
        if rel is None:
            vt = system.lookup(name, schema, self.search_path())
            if vt is not None:
                self.row_types[alias] = vt.name if vt.schema == "pg_catalog" else f"{vt.schema}.{vt.name}"
                if vt.name in privileges.SUPERUSER_TABLES:
                    self.needs.append(privileges.Need("", system_table=vt.name, as_role=self.as_role))
                out = [operators.OutCol(n, o) for n, o in vt.columns] + [operators.OutCol("tableoid", type_oids.OID, hidden=True)]
                op: operators.Op = operators.VirtualScan(vt.name, out, lambda ctx, _vt=vt: _vt.produce_scan(ctx.state, ctx))
                cols = [ScopeCol(alias, colaliases[i] if i < len(colaliases) else c.name, c.oid, hidden=c.hidden)
                        for i, c in enumerate(op.out)]
                return op, Scope(cols, outer, tables=[alias])
            full = f"{schema}.{name}" if schema else name
            raise PgError(UNDEFINED_TABLE, f'relation "{full}" does not exist')
        if rel.kind in ("r", "f", "v"):
            self.need("r", rel.oid, columns=self.used_columns(rel))
        elif rel.kind == "S":
            self.need("r", rel.oid)
        if rel.kind == "r":
            self.tables_used.add(rel.oid)
            op = operators.TableScan(rel, alias)
        elif rel.kind == "f":
            self.streams_used.append(rel)
            op = self.engine.streams.scan_op(rel, alias, self)
        elif rel.kind == "v" and rel.continuous:
            self.views_used.append(rel)
            op = self.engine.streams.view_read_op(rel, alias, self)
            for dep in rel.depends_on:      # what it reads, with its owner's rights
                self.needs.append(privileges.Need("r", dep, as_role=rel.owner))
        elif rel.kind == "v":
            self.views_used.append(rel)
            op = self._plan_view(rel)
        elif rel.kind == "S":
            op = self.engine.sequence_scan(rel)
        else:
            raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a table')
        self.row_types[alias] = rel.name if rel.schema in self.search_path() else f"{rel.schema}.{rel.name}"
        cols = []
        for i, c in enumerate(op.out):
            nm = colaliases[i] if i < len(colaliases) else c.name
            cols.append(ScopeCol(alias, nm, c.oid, c.typmod, hidden=c.hidden))
        return op, Scope(cols, outer, tables=[alias])

    def _plan_view(self, rel) -> operators.Op:
        """A plain view: its query planned afresh (outside any WITH of the
        referring query), renamed to the view's column names."""
        q = sqlglot.parse_one(rel.sql, read=DIALECT)
        saved, saved_role, saved_bound = self.ctes, self.as_role, self.view_relations
        self.ctes, self.as_role = [{}], rel.owner      # a view reads with its owner's rights
        self.view_relations = rel.depends_on           # and the relations it was created over
        self.use_columns_of(q)
        try:
            inner = self.plan_query(q, None, None)
        finally:
            self.ctes, self.as_role, self.view_relations = saved, saved_role, saved_bound
            self.column_names.pop()
        names = [c.name for c in rel.live_columns]
        return operators.Project(inner, [expr.ColRef(i, c.oid, c.name) for i, c in enumerate(inner.out)],
                         [operators.OutCol(names[i] if i < len(names) else c.name, c.oid, c.typmod, rel.oid, i + 1)
                          for i, c in enumerate(inner.out)])

    def plan_table_function(self, fn, alias, colaliases, outer, corr=None, ordinality=False, schema=None):
        name = func_name(fn) if not isinstance(fn, exp.Unnest) else "unnest"
        if name == "output_of":
            return self._plan_output_of(fn, alias, outer)
        if schema is not None and f"{schema}.{name}" in TABLE_FUNCTIONS:     # pipelinedb.get_views()
            name = f"{schema}.{name}"
        elif schema is not None and f"{schema}.{name}" in functions.NOT_IMPLEMENTED:
            functions.lookup(f"{schema}.{name}", [])        # 0A000: pipelinedb.get_stream_stats()
        # arguments may refer to the enclosing query (correlated), never to siblings
        binder = ExprBinder(self, Scope([], outer, correlated=corr if corr is not None else [False]))
        user = None
        if not isinstance(fn, exp.Unnest) and name not in SRF_NAMES:
            user = sql_functions.table_scan(self, binder, fn, name, alias, colaliases)
        if user is not None:
            op = user
        else:
            args = [binder.bind(a) for a in (func_args(fn) if not isinstance(fn, exp.Unnest) else fn.expressions)]
            op = table_function(self, name, args, alias, colaliases)
        if ordinality and isinstance(op, operators.FunctionScan):  # WITH ORDINALITY: a trailing bigint row number
            inner_fn, k = op.fn, len(op.out)

            def with_ordinality(vals, ctx, _fn=inner_fn):
                b = _fn(vals, ctx)
                return Batch(list(b.cols) + [Col(np.arange(1, b.n + 1, dtype=np.int64), None, type_oids.INT8)], b.n)

            out = list(op.out) + [operators.OutCol(colaliases[k] if len(colaliases) > k else "ordinality", type_oids.INT8)]
            op = operators.FunctionScan(op.name, with_ordinality, op.args, out)
        a = alias or name
        cols = [ScopeCol(a, c.name, c.oid) for c in op.out]
        return op, Scope(cols, outer, tables=[a])

    def _plan_output_of(self, fn, alias, outer) -> tuple[operators.Op, Scope]:
        """PipelineDB's ``output_of('view')``: the stream of a continuous view's
        changes or of a transform's rows (``stream/output_streams.py``)."""
        args = func_args(fn)
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
            raise PgError(FEATURE_NOT_SUPPORTED, "output_of takes one string literal: the view's name",
                          hint="CREATE VIEW v2 AS SELECT ... FROM output_of('v')")
        parts = qualified_name_parts(args[0].this)     # 'ByUrl' finds byurl, as PipelineDB reads it
        rel = self.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{args[0].this}" does not exist')
        self.need("r", rel.oid)
        a = alias or "output_of"
        op, tables = self.engine.streams.output_scan_op(rel, a, self)
        cols = [ScopeCol(t, c.name, c.oid, c.typmod) for t, c in zip(tables, op.out)]
        return op, Scope(cols, outer, tables=sorted(set(tables)))

    def plan_from(self, sel: exp.Select, outer, corr, where_conj: list) -> tuple[operators.Op, Scope]:
        from_ = sel.args.get("from") or sel.args.get("from_")
        if from_ is None:
            return operators.Result1(), Scope([], outer)
        items = [from_.this] + list(from_.expressions or [])
        joins = list(sel.args.get("joins") or [])
        while joins and _is_comma_item(joins[0]):
            items.append(joins.pop(0).this)
        items, joins = join_groups.flatten(items, joins)      # FROM (a JOIN b ON ...), as views are deparsed

        def item(it):
            o, sc = self.plan_from_item(it, outer, corr)
            if len(sc.tables) == 1 and sc.null_extended is None:
                sc.null_extended = frozenset()      # one relation, subquery or function: rows as they are
            if corr is not None:
                sc.correlated = corr  # shared by every scope built from it (joins' ON)
            return o, sc

        if len(items) > 1 and _right_or_full(joins):
            return self._comma_then_outer_join(items, joins, item, outer, corr)
        # WHERE conditions may sink into a join only while no later RIGHT or FULL join can add
        # NULL-extended rows of what is joined so far (those rows must meet the WHERE too)
        nullable_after = [_right_or_full(joins[i + 1:]) for i in range(len(joins))]
        sink = [] if _right_or_full(joins) else where_conj
        planned = None
        if len(items) > 2 and sink:
            try:
                planned = [item(it) for it in items]
            except PgError as e:             # a function item reads an earlier item: joined below, laterally
                if e.sqlstate not in _OUTER_NAME_ERRORS or not any(map(_is_function_item, items)):
                    raise
        if planned is not None:
            op, scope = self._join_comma_items(planned, outer, sink)
        else:
            op, scope = item(items[0])
            for extra in items[1:]:
                op, scope = self._join_comma_item(op, scope, extra, item, outer, corr, sink)
        for j, later in zip(joins, nullable_after):
            op, scope = self._plan_join_clause(op, scope, j, item, outer, corr, [] if later else where_conj)
        return op, scope

    def _join_comma_item(self, op, scope, extra, item, outer, corr, sink):
        """``FROM a, f(a.x)``: a function in FROM may read the items before it
        (PostgreSQL makes every function item LATERAL); planned on its own
        when it does not, as a lateral subquery when it does."""
        try:
            rop, rscope = item(extra)
        except PgError as e:
            if e.sqlstate not in _OUTER_NAME_ERRORS or not _is_function_item(extra):
                raise
            return self.lateral_join(op, scope, _as_lateral(extra), "inner", outer, corr)
        return self.join(op, scope, rop, rscope, "cross", None, outer, sink)

    def _comma_then_outer_join(self, items, joins, item, outer, corr):
        """``FROM a, b RIGHT JOIN c ON ...``: JOIN binds tighter than the comma,
        so this is a x (b RIGHT JOIN c), not (a x b) RIGHT JOIN c (which would
        NULL-extend a's columns too).  No WHERE condition sinks: an outer join
        follows."""
        op, scope = item(items[-1])
        for j in joins:
            op, scope = self._plan_join_clause(op, scope, j, item, outer, corr, [])
        head, head_scope = item(items[0])
        for extra in items[1:-1]:
            rop, rscope = item(extra)
            head, head_scope = self.join(head, head_scope, rop, rscope, "cross", None, outer, [])
        return self.join(head, head_scope, op, scope, "cross", None, outer, [])

    def _plan_join_clause(self, op, scope, j: exp.Join, item, outer, corr, where_conj):
        """One explicit JOIN (LATERAL, USING, NATURAL, ON or CROSS) of the
        FROM clause onto what is joined so far; ``item`` plans its target."""
        target = j.this
        side = (j.args.get("side") or "").lower()
        kind = (j.args.get("kind") or "").lower()
        if isinstance(target, exp.Lateral) or (isinstance(target, exp.Subquery) and target.args.get("lateral")):
            return self.lateral_join(op, scope, target, side or "inner", outer, corr)
        rop, rscope = item(target)
        using = j.args.get("using")
        on = j.args.get("on")
        jkind = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
        if kind == "cross" and on is None:
            jkind = "cross"
        if using:
            names = [ident(u) if not isinstance(u, exp.Column) else ident(u.this) for u in using]
            return self.join_using(op, scope, rop, rscope, jkind, names)
        if kind == "natural" or (j.args.get("method") or "").lower() == "natural":
            names = [c.name for c in scope.cols if not c.hidden and any(rc.name == c.name for rc in rscope.cols)]
            return self.join_using(op, scope, rop, rscope, jkind, names)
        if on is None and jkind == "inner":
            jkind = "cross"
        return self.join(op, scope, rop, rscope, jkind, on, outer, where_conj if jkind in ("inner", "cross") else None)


#: what planning a function item alone raises when it names an earlier FROM item
_OUTER_NAME_ERRORS = (UNDEFINED_COLUMN, UNDEFINED_TABLE)


def _is_function_item(item: exp.Expression) -> bool:
    return isinstance(item, exp.Unnest) or (isinstance(item, exp.Table) and isinstance(item.this, (exp.Func, exp.Unnest)))


def _as_lateral(item: exp.Expression) -> exp.Subquery:
    """``f(...) AS a(x, y)`` as ``LATERAL (SELECT * FROM f(...) AS a(x, y)) AS a``: the
    same columns, the table named as the function item is (its alias, else the function)."""
    alias_node = item.args.get("alias")
    if alias_node is not None and alias_node.this is not None:
        name = ident(alias_node.this)
    else:
        fn = item if isinstance(item, exp.Unnest) else item.this
        name = "unnest" if isinstance(fn, exp.Unnest) else func_name(fn)
    select = exp.Select(expressions=[exp.Star()]).from_(item.copy())
    return exp.Subquery(this=select, lateral=True, alias=exp.TableAlias(this=exp.to_identifier(name)))


def _right_or_full(joins: list[exp.Join]) -> bool:
    return any((j.args.get("side") or "").lower() in ("right", "full") for j in joins)


def _is_comma_item(j: exp.Join) -> bool:
    """A ``FROM a, b`` item: a Join with no kind, side, condition or LATERAL."""
    t = j.this
    if isinstance(t, exp.Lateral) or (isinstance(t, exp.Subquery) and t.args.get("lateral")):
        return False
    return not any(j.args.get(k) for k in ("on", "using", "side", "kind", "method"))


def _cte_scan(name: str, cte: tuple, alias: str, colaliases: list[str], outer) -> tuple[operators.Op, Scope]:
    """A reference to a WITH query: a scan of its materialised result, or of
    the working table while a recursive CTE's recursive term is planned."""
    kind, plan, out = cte
    if kind == "no_returning":
        raise PgError(FEATURE_NOT_SUPPORTED, f'WITH query "{name}" does not have a RETURNING clause')
    if kind == "work":
        op: operators.Op = operators.WorkTableScan(plan, out)
    else:
        op = operators.CTEScan(name, plan, out)
    cols = [ScopeCol(alias, colaliases[i] if i < len(colaliases) else c.name, c.oid, c.typmod) for i, c in enumerate(out)]
    return op, Scope(cols, outer, tables=[alias])
