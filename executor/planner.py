"""Query planning: sqlglot SELECT trees to operator trees.

The steps follow PostgreSQL's order of evaluation: FROM (with joins), WHERE,
GROUP BY / aggregates, HAVING, window functions, SELECT list, DISTINCT,
ORDER BY, LIMIT.  The optimiser work done here is the part that pays most
in a column-at-a-time engine: WHERE conjuncts are pushed to the lowest
operator that has their columns, and equality conjuncts between two join
inputs become hash-join keys (with a stream kept on the probe side).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import sqlglot
from sqlglot import exp

from catalog import types as T
from catalog.objects import Relation
from catalog.vector import Batch, Col
from protocol import oids as O
from protocol.errors import (
    AMBIGUOUS_COLUMN, DATATYPE_MISMATCH, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED, GROUPING_ERROR, SYNTAX_ERROR,
    UNDEFINED_COLUMN, UNDEFINED_FUNCTION, UNDEFINED_PARAMETER, UNDEFINED_TABLE, WRONG_OBJECT_TYPE, PgError,
    INVALID_COLUMN_REFERENCE,
)

from . import expr as X
from .zoned_casts import cast_in_zone, zone_dependent
from . import operators as P
from .aggregates import AGGREGATES, AggSpec
from .decorrelate import try_scalar_join, try_select_scalar_join, try_semi_join
from .binder import ExprBinder, Scope, ScopeCol, WINDOW_FUNCS, datatype_to_oid, func_args, func_name, ident


def split_conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return split_conjuncts(node.this) + split_conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return split_conjuncts(node.this)
    return [node]


def _disjuncts(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        return _disjuncts(node.this) + _disjuncts(node.expression)
    return [node]


def factor_ors(conjuncts: list[exp.Expression]) -> list[exp.Expression]:
    """``(A AND B) OR (A AND C)`` -> ``A AND (B OR C)``, as PostgreSQL's
    canonicalize_qual does: the common ``A`` may then become a join key
    (TPC-H Q19 has its only join condition inside each OR branch)."""
    out: list[exp.Expression] = []
    for c in conjuncts:
        ds = _disjuncts(c)
        if len(ds) < 2:
            out.append(c)
            continue
        parts = [split_conjuncts(d.this if isinstance(d, exp.Paren) else d) for d in ds]
        texts = [[p.sql("postgres") for p in ps] for ps in parts]
        common = [t for t in dict.fromkeys(texts[0]) if all(t in ts for ts in texts[1:])]
        if not common:
            out.append(c)
            continue
        for t in common:
            out.append(parts[0][texts[0].index(t)])
        rest = []
        for ps, ts in zip(parts, texts):
            left = [p for p, t in zip(ps, ts) if t not in common]
            if not left:  # one branch is exactly the common part: the OR is implied
                rest = None
                break
            rest.append(exp.and_(*left) if len(left) > 1 else left[0])
        if rest:
            out.append(exp.or_(*[exp.paren(r) for r in rest]))
    return out


def expr_name(node: exp.Expression) -> str:
    """The column name PostgreSQL gives an unaliased select-list item."""
    if isinstance(node, exp.Alias):
        return ident(node.args["alias"])
    if type(node).__name__ == "_BoundRef":
        return node.col.name
    if isinstance(node, exp.Column):
        return ident(node.this) if isinstance(node.this, exp.Identifier) else node.name
    if isinstance(node, exp.Paren):
        return expr_name(node.this)
    if isinstance(node, exp.Cast):
        # PostgreSQL (FigureColname): a column or function under the casts names
        # the column; otherwise the outermost cast's type does (CASE counts as none)
        base = node.this
        while isinstance(base, (exp.Cast, exp.Paren)):
            base = base.this
        if isinstance(base, (exp.Column, exp.Func)) and not isinstance(base, (exp.Literal, exp.Case)):
            n = expr_name(base)
            if n != "?column?":
                return n
        oid, _ = datatype_to_oid(node.to)
        return T.type_name(oid) if oid not in O.ELEMENT_OF else T.type_name(oid)
    if isinstance(node, exp.Window):
        return expr_name(node.this)
    if isinstance(node, (exp.Filter, exp.WithinGroup)):
        return expr_name(node.this)
    if isinstance(node, exp.Case):
        return "case"
    if isinstance(node, exp.Coalesce):
        return "coalesce"
    if isinstance(node, exp.Nullif):
        return "nullif"
    if isinstance(node, exp.Exists):
        return "exists"
    if isinstance(node, exp.Array):
        return "array"
    if isinstance(node, (exp.Subquery,)):
        q = node.this
        if isinstance(q, exp.Select) and len(q.expressions) == 1:
            return expr_name(q.expressions[0])
        return "?column?"
    if isinstance(node, exp.Extract):
        return "date_part" if node.meta.get("date_part") else "extract"
    if isinstance(node, (exp.CurrentTimestamp,)):
        return "now" if node.meta.get("now") else "current_timestamp"
    if isinstance(node, exp.CurrentDate):
        return "current_date"
    if isinstance(node, exp.Localtimestamp):
        return "localtimestamp"
    if isinstance(node, exp.CurrentUser):
        return "current_user"
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        return "date_trunc"
    if isinstance(node, exp.Trim):
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get((node.args.get("position") or "").upper(), "btrim")
    if isinstance(node, exp.Substring):
        return "substring"
    if isinstance(node, exp.StrPosition):
        return "position"
    if isinstance(node, exp.Greatest):
        return "greatest"
    if isinstance(node, exp.Least):
        return "least"
    if isinstance(node, exp.Count):
        return "count"
    if isinstance(node, (exp.RegexpLike, exp.RegexpILike)):
        return "?column?"  # the ~ and ~* operators (regexp_like() is rare and new in 15)
    if isinstance(node, exp.Func):
        fn = func_name(node)
        return {"strpos": "strpos", "substr": "substr"}.get(fn, fn)
    return "?column?"


class Planner:
    """Plans one statement.  ``param_oids`` grows as parameters are typed."""

    def __init__(self, engine, state, param_oids: list[int] | None = None, session=None) -> None:
        self.engine = engine
        self.state = state
        self.session = session
        self.param_oids: list[int] = list(param_oids or [])
        self.ctes: list[dict[str, Any]] = [{}]
        self.streams_used: list[Relation] = []
        self.tables_used: set[int] = set()
        self.views_used: list[Relation] = []

    # ----------------------------------------------------------- params & coercion
    def param(self, idx: int, oid: int | None = None) -> X.Expr:
        if idx < 0 or idx > 65535:
            raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${idx + 1}")
        while len(self.param_oids) <= idx:
            self.param_oids.append(0)
        cur = self.param_oids[idx]
        if cur == 0 and oid is not None and oid != O.UNKNOWN:
            self.param_oids[idx] = oid
            cur = oid
        p = X.Param(idx, cur if cur else O.UNKNOWN)
        p.planner = self
        return p

    def coerce(self, e: X.Expr, oid: int, typmod: int = -1) -> X.Expr:
        if oid is None:
            return e
        if isinstance(e, X.Param) and e.oid == O.UNKNOWN:
            return self.param(e.idx, oid)
        if isinstance(e, X.Const) and e.oid == O.UNKNOWN and e.value is not None:
            if oid in (O.TEXT, O.VARCHAR, O.BPCHAR, O.NAME) and typmod < 0:
                return X.Const(e.value, oid)
            return self.fold_cast(e.value, O.TEXT, oid, typmod)
        if e.oid == oid and typmod < 0:
            return e
        if isinstance(e, X.Const) and e.value is not None and T.can_implicit(e.oid, oid):
            # fold the cast of a literal once, at plan time, not per batch
            return self.fold_cast(e.value, e.oid, oid, typmod, explicit=False)
        if e.oid == O.BOOL and oid != O.BOOL and not T.is_string(oid) and isinstance(e, X.Const) is False and oid in T._NUM_RANK:
            raise PgError(DATATYPE_MISMATCH, f"argument of type {T.type_name(e.oid)} cannot be coerced to {T.type_name(oid)}")
        if oid == O.BOOL and e.oid not in (O.BOOL, O.UNKNOWN):
            raise PgError(DATATYPE_MISMATCH, f"argument of WHERE must be type boolean, not type {T.type_name(e.oid)}")
        return X.coerce(e, oid, typmod)

    def fold_cast(self, value: Any, src: int, oid: int, typmod: int = -1, explicit: bool = True) -> X.Const:
        """A literal cast at plan time.  Casts involving timestamptz use the
        session's TimeZone; a plan is made again when that setting changes
        (``Prepared.planned_under``), so folding them here stays correct."""
        col = Col.from_pylist([value], src)
        tz = self.session.settings.get("timezone", "UTC") if self.session is not None else "UTC"
        if tz != "UTC" and zone_dependent(src, oid):
            col = cast_in_zone(col, oid, typmod, explicit, tz)
        else:
            col = T.cast_col(col, oid, typmod, explicit)
        return X.Const(col.to_pylist()[0], oid, typmod)

    def unify(self, a: X.Expr, b: X.Expr, context: str) -> tuple[X.Expr, X.Expr]:
        if a.oid == b.oid:
            if a.oid == O.UNKNOWN:
                return self.coerce(a, O.TEXT), self.coerce(b, O.TEXT)
            return a, b
        if a.oid == O.UNKNOWN:
            return self.coerce(a, b.oid), b
        if b.oid == O.UNKNOWN:
            return a, self.coerce(b, a.oid)
        if a.oid in _OID_FAMILY and b.oid in _OID_FAMILY:  # oid = regtype etc. compare as oid
            return self.coerce(a, O.OID), self.coerce(b, O.OID)
        try:
            t = T.common_type(a.oid, b.oid, context)
        except PgError:
            if {a.oid, b.oid} & {O.TIME, O.INTERVAL}:
                raise
            raise PgError("42883", f"operator does not exist: {T.type_name(a.oid)} = {T.type_name(b.oid)}",
                          hint="No operator matches the given name and argument types. You might need to add explicit type casts.")
        return self.coerce(a, t), self.coerce(b, t)

    def arith(self, op: str, l: X.Expr, r: X.Expr) -> X.Expr:
        from .datetime_ops import temporal_arith

        te = temporal_arith(self, op, l, r)
        if te is not None:
            return te
        if l.oid == O.UNKNOWN and r.oid == O.UNKNOWN:
            l, r = self.coerce(l, O.NUMERIC), self.coerce(r, O.NUMERIC)
        elif l.oid == O.UNKNOWN:
            l = self.coerce(l, r.oid if r.oid in T._NUM_RANK else O.NUMERIC)
        elif r.oid == O.UNKNOWN:
            r = self.coerce(r, l.oid if l.oid in T._NUM_RANK else O.NUMERIC)
        if op == "^":
            t = O.NUMERIC if O.NUMERIC in (l.oid, r.oid) and O.FLOAT8 not in (l.oid, r.oid) else O.FLOAT8
        else:
            t = T.arith_type(op, l.oid, r.oid)
        if t < 0:
            raise PgError("42883", f"operator does not exist: {T.type_name(l.oid)} {op} {T.type_name(r.oid)}",
                          hint="No operator matches the given name and argument types. You might need to add explicit type casts.")
        return X.Arith(op, self.coerce(l, t), self.coerce(r, t), t)

    # ----------------------------------------------------------- catalog helpers
    def lookup_relation(self, name: str, schema: str | None) -> Relation | None:
        st = self.state
        if schema:
            return st.lookup(schema, name)
        for s in self.search_path():
            r = st.lookup(s, name)
            if r is not None:
                return r
        return None

    def search_path(self) -> list[str]:
        sp = "public"
        if self.session is not None:
            sp = self.session.settings.get("search_path", '"$user", public')
        out = []
        for p in sp.split(","):
            p = p.strip().strip('"')
            if p == "$user":
                continue
            out.append(p)
        return out or ["public"]

    def resolve_reg(self, oid: int, text: str) -> int:
        """'name'::regclass / ::regtype: the object's OID, or 42P01/42704."""
        name = text.strip()
        if name.isdigit():
            return int(name)
        if oid == O.REGTYPE:
            t = T.oid_by_name(name)
            if t is None:
                raise PgError("42704", f'type "{name}" does not exist')
            return t
        parts = [p.strip('"') if p.startswith('"') else p.lower() for p in name.split(".")]
        rel = self.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
        if rel is None:
            from catalog import system

            vt = system.lookup(parts[-1], parts[0] if len(parts) > 1 else None, self.search_path())
            if vt is not None:
                return abs(hash(vt.name)) % 10000 + 1000
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        return rel.oid

    def sequence_func(self, name, args):
        return self.engine.sequence_func(self, name, args)

    def catalog_func(self, name, args):
        from . import catalog_funcs

        return catalog_funcs.catalog_function(self, name, args)

    def user_function(self, name):
        fns = self.state.functions.get(name)
        return fns[0] if fns else None

    def call_udf(self, fn, args):
        return self.engine.call_udf(self, fn, args)

    # ----------------------------------------------------------- subqueries
    def subplan(self, node: exp.Expression, outer: Scope) -> tuple[P.Op, bool]:
        corr = [False]
        plan = self.plan_query(node, outer, corr)
        return plan, corr[0]

    # ----------------------------------------------------------- queries
    def plan_query(self, node: exp.Expression, outer: Scope | None = None, corr: list | None = None) -> P.Op:
        if isinstance(node, exp.Subquery):
            inner = self.plan_query(node.this, outer, corr)
            return self._order_limit_wrapper(node, inner, outer, corr)
        if isinstance(node, exp.Paren):
            return self.plan_query(node.this, outer, corr)
        with_ = node.args.get("with") or node.args.get("with_")
        pushed = False
        if with_ is not None:
            self.ctes.append({})
            pushed = True
            for cte in with_.expressions:
                self._define_cte(cte, bool(with_.args.get("recursive")), outer, corr)
        try:
            if isinstance(node, exp.Select):
                return self.plan_select(node, outer, corr)
            if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
                return self.plan_setop(node, outer, corr)
            if isinstance(node, exp.Values):
                return self.plan_values(node, outer)
            raise PgError(FEATURE_NOT_SUPPORTED, f"unsupported query: {type(node).__name__}")
        finally:
            if pushed:
                self.ctes.pop()

    def _order_limit_wrapper(self, node, inner, outer, corr):
        return inner

    def _define_cte(self, cte: exp.CTE, recursive: bool, outer, corr) -> None:
        name = ident(cte.args["alias"].this)
        colnames = [ident(c) for c in (cte.args["alias"].columns or [])]
        body = cte.this
        if recursive and isinstance(body, exp.Union) and self._refers_to(body.expression, name):
            base = self.plan_query(body.this, outer, corr)
            out = [P.OutCol(colnames[i] if i < len(colnames) else c.name, c.oid, c.typmod) for i, c in enumerate(base.out)]
            holder: dict = {}

            def builder():
                self.ctes.append({name: ("work", holder["ru"], out)})
                try:
                    return self.plan_query(body.expression, outer, corr)
                finally:
                    self.ctes.pop()

            ru = P.RecursiveUnion(name, base, builder, not body.args.get("distinct", True) or bool(body.args.get("distinct") is False), out)
            ru.all = not bool(body.args.get("distinct"))
            holder["ru"] = ru
            # build once now to surface errors and fix output types
            rec = builder()
            ru.builder = lambda: rec
            for i, (a, b) in enumerate(zip(out, rec.out)):
                if a.oid != b.oid and a.oid in (O.INT4,) and b.oid in (O.INT8, O.NUMERIC):
                    raise PgError(DATATYPE_MISMATCH,
                                  f'recursive query "{name}" column {i + 1} has type {T.format_type(a.oid)} in non-recursive term but type {T.format_type(b.oid)} overall',
                                  hint="Cast the output of the non-recursive term to the correct type.")
            self.ctes[-1][name] = ("plan", ru, out)
            return
        plan = self.plan_query(body, outer, corr)
        out = [P.OutCol(colnames[i] if i < len(colnames) else c.name, c.oid, c.typmod) for i, c in enumerate(plan.out)]
        self.ctes[-1][name] = ("plan", P.Materialized(name, plan), out)

    def _refers_to(self, node, name) -> bool:
        for t in node.find_all(exp.Table):
            if ident(t.this) == name and not t.args.get("db"):
                return True
        return False

    def find_cte(self, name: str):
        for level in reversed(self.ctes):
            if name in level:
                return level[name]
        return None

    # ----------------------------------------------------------- FROM
    def plan_from_item(self, item: exp.Expression, outer: Scope | None, corr) -> tuple[P.Op, Scope]:
        alias_node = item.args.get("alias")
        alias = ident(alias_node.this) if alias_node is not None and alias_node.this is not None else None
        colaliases = [ident(c) for c in (alias_node.columns or [])] if alias_node is not None and alias_node.args.get("columns") else []
        if isinstance(item, exp.Table):
            fn = item.this
            if isinstance(fn, (exp.Func, exp.Anonymous)) or isinstance(item.this, exp.Unnest):
                return self.plan_table_function(fn, alias, colaliases, outer, corr,
                                                ordinality=bool(item.args.get("ordinality")))
            name = ident(item.this)
            schema = ident(item.args.get("db")) if item.args.get("db") else None
            return self.plan_named(name, schema, alias or name, colaliases, outer, corr)
        if isinstance(item, exp.Subquery):
            lateral = False
            sub_outer = outer
            plan = self.plan_query(item.this, outer, corr)
            a = alias or "?subquery?"
            cols = [ScopeCol(a, colaliases[i] if i < len(colaliases) else c.name, c.oid, c.typmod) for i, c in enumerate(plan.out)]
            return plan, Scope(cols, outer, tables=[a])
        if isinstance(item, exp.Values):
            plan = self.plan_values(item, outer)
            a = alias or "*VALUES*"
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
        raise PgError(FEATURE_NOT_SUPPORTED, f"unsupported FROM item: {item.sql('postgres')[:60]}")

    def plan_named(self, name, schema, alias, colaliases, outer, corr) -> tuple[P.Op, Scope]:
        if schema is None:
            cte = self.find_cte(name)
            if cte is not None:
                kind, plan, out = cte
                if kind == "work":
                    op = P.WorkTableScan(plan, out)
                else:
                    op = P.CTEScan(name, plan, out)
                cols = [ScopeCol(alias, colaliases[i] if i < len(colaliases) else c.name, c.oid, c.typmod) for i, c in enumerate(out)]
                return op, Scope(cols, outer, tables=[alias])
        from catalog import system

        rel = self.lookup_relation(name, schema)
        if rel is None:
            vt = system.lookup(name, schema, self.search_path())
            if vt is not None:
                op = P.VirtualScan(vt.name, [P.OutCol(n, o) for n, o in vt.columns],
                                   lambda ctx, _vt=vt: _vt.produce(ctx.state, ctx))
                cols = [ScopeCol(alias, colaliases[i] if i < len(colaliases) else c.name, c.oid) for i, c in enumerate(op.out)]
                return op, Scope(cols, outer, tables=[alias])
            full = f"{schema}.{name}" if schema else name
            raise PgError(UNDEFINED_TABLE, f'relation "{full}" does not exist')
        if rel.kind == "r":
            self.tables_used.add(rel.oid)
            op = P.TableScan(rel, alias)
        elif rel.kind == "f":
            self.streams_used.append(rel)
            op = self.engine.streams.scan_op(rel, alias, self)
        elif rel.kind == "v" and rel.continuous:
            self.views_used.append(rel)
            op = self.engine.streams.view_read_op(rel, alias, self)
        elif rel.kind == "v":
            self.views_used.append(rel)
            q = sqlglot.parse_one(rel.sql, read="postgres")
            saved = self.ctes
            self.ctes = [{}]
            try:
                inner = self.plan_query(q, None, None)
            finally:
                self.ctes = saved
            names = [c.name for c in rel.live_columns]
            op = P.Project(inner, [X.ColRef(i, c.oid, c.name) for i, c in enumerate(inner.out)],
                           [P.OutCol(names[i] if i < len(names) else c.name, c.oid, c.typmod) for i, c in enumerate(inner.out)])
        elif rel.kind == "S":
            op = self.engine.sequence_scan(rel)
        else:
            raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a table')
        cols = []
        for i, c in enumerate(op.out):
            nm = colaliases[i] if i < len(colaliases) else c.name
            cols.append(ScopeCol(alias, nm, c.oid, c.typmod, hidden=c.hidden))
        return op, Scope(cols, outer, tables=[alias])

    def plan_table_function(self, fn, alias, colaliases, outer, corr=None, ordinality=False):
        from .srf import table_function

        name = func_name(fn) if not isinstance(fn, exp.Unnest) else "unnest"
        # arguments may refer to the enclosing query (correlated), never to siblings
        binder = ExprBinder(self, Scope([], outer, correlated=corr if corr is not None else [False]))
        args = [binder.bind(a) for a in (func_args(fn) if not isinstance(fn, exp.Unnest) else fn.expressions)]
        op = table_function(self, name, args, alias, colaliases)
        if ordinality and isinstance(op, P.FunctionScan):  # WITH ORDINALITY: a trailing bigint row number
            inner_fn, k = op.fn, len(op.out)

            def with_ordinality(vals, ctx, _fn=inner_fn):
                b = _fn(vals, ctx)
                return Batch(list(b.cols) + [Col(np.arange(1, b.n + 1, dtype=np.int64), None, O.INT8)], b.n)

            out = list(op.out) + [P.OutCol(colaliases[k] if len(colaliases) > k else "ordinality", O.INT8)]
            op = P.FunctionScan(op.name, with_ordinality, op.args, out)
        a = alias or name
        cols = [ScopeCol(a, c.name, c.oid) for c in op.out]
        return op, Scope(cols, outer, tables=[a])

    def plan_from(self, sel: exp.Select, outer, corr, where_conj: list) -> tuple[P.Op, Scope]:
        from_ = sel.args.get("from") or sel.args.get("from_")
        if from_ is None:
            return P.Result1(), Scope([], outer)
        items = [from_.this] + list(from_.expressions or [])
        joins = list(sel.args.get("joins") or [])
        while joins and _is_comma_item(joins[0]):
            items.append(joins.pop(0).this)

        def item(it):
            o, sc = self.plan_from_item(it, outer, corr)
            if corr is not None:
                sc.correlated = corr  # shared by every scope built from it (joins' ON)
            return o, sc

        if len(items) > 2 and where_conj:
            op, scope = self._join_comma_items([item(it) for it in items], outer, where_conj)
        else:
            op, scope = item(items[0])
            for extra in items[1:]:
                rop, rscope = item(extra)
                op, scope = self.join(op, scope, rop, rscope, "cross", None, outer, where_conj)
        for j in joins:
            target = j.this
            side = (j.args.get("side") or "").lower()
            kind = (j.args.get("kind") or "").lower()
            if isinstance(target, exp.Lateral) or (isinstance(target, exp.Subquery) and target.args.get("lateral")):
                op, scope = self.lateral_join(op, scope, target, side or "inner", outer, corr)
                continue
            rop, rscope = item(target)
            using = j.args.get("using")
            on = j.args.get("on")
            jkind = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
            if kind == "cross" and on is None:
                jkind = "cross"
            if using:
                names = [ident(u) if not isinstance(u, exp.Column) else ident(u.this) for u in using]
                op, scope = self.join_using(op, scope, rop, rscope, jkind, names)
                continue
            if kind == "natural" or (j.args.get("method") or "").lower() == "natural":
                names = [c.name for c in scope.cols if not c.hidden and any(rc.name == c.name for rc in rscope.cols)]
                op, scope = self.join_using(op, scope, rop, rscope, jkind, names)
                continue
            if on is None and jkind == "inner":
                jkind = "cross"
            op, scope = self.join(op, scope, rop, rscope, jkind, on, outer, where_conj if jkind in ("inner", "cross") else None)
        return op, scope

    def _join_comma_items(self, planned, outer, where_conj):
        """Join ``FROM a, b, c`` greedily: next comes the first item that a
        WHERE conjunct connects to what is joined so far, so a written order
        like TPC-H Q2's ``part, supplier, partsupp`` never builds a cross
        product.  The columns are put back in FROM order afterwards (``*``)."""
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
        starts, pos = {}, 0
        for k in order:
            starts[k] = pos
            pos += len(planned[k][1].cols)
        idx = [starts[k] + i for k in range(len(planned)) for i in range(len(planned[k][1].cols))]
        exprs = [X.ColRef(i, op.out[i].oid, op.out[i].name, op.out[i].typmod) for i in idx]
        proj = P.Project(op, exprs, [op.out[i] for i in idx])
        proj.permutation = True
        new_scope = Scope([scope.cols[i] for i in idx], scope.parent,
                          tables=[t for k in range(len(planned)) for t in planned[k][1].tables])
        new_scope.correlated = scope.correlated
        return proj, new_scope

    def lateral_join(self, op, scope, target, kind, outer, corr):
        sub = target.this if isinstance(target, exp.Lateral) else target
        alias_node = target.args.get("alias")
        q = sub.this if isinstance(sub, exp.Subquery) else sub
        inner_scope = Scope(scope.cols, outer, tables=scope.tables)
        plan = self.plan_query(q, inner_scope, None)
        a = ident(alias_node.this) if alias_node is not None and alias_node.this is not None else "lateral"
        # references to the left side are OuterRefs at depth 1
        lop = P.LateralJoin(op, plan, "left" if kind == "left" else "inner")
        cols = scope.cols + [ScopeCol(a, c.name, c.oid) for c in plan.out]
        new_scope = Scope(cols, outer, tables=scope.tables + [a])
        new_scope.correlated = scope.correlated
        return lop, new_scope

    def join_using(self, lop, lscope, rop, rscope, kind, names):
        lkeys, rkeys = [], []
        for nm in names:
            li = lscope.find(nm, None)
            ri = rscope.find(nm, None)
            if not li or not ri:
                raise PgError(UNDEFINED_COLUMN, f'column "{nm}" specified in USING clause does not exist in {"left" if not li else "right"} table')
            l = X.ColRef(li[0], lscope.cols[li[0]].oid, nm)
            r = X.ColRef(ri[0], rscope.cols[ri[0]].oid, nm)
            if l.oid != r.oid:
                t = T.common_type(l.oid, r.oid, "JOIN/USING")
                l, r = self.coerce(l, t), self.coerce(r, t)
            lkeys.append(l)
            rkeys.append(r)
        j = P.HashJoin(lop, rop, lkeys, rkeys, kind if kind != "cross" else "inner")
        nl = len(lscope.cols)
        # Output: merged USING columns first (COALESCE for full joins), then the rest
        exprs, out, cols = [], [], []
        for nm, l, r in zip(names, lkeys, rkeys):
            li = lscope.find(nm, None)[0]
            ri = rscope.find(nm, None)[0] + nl
            if kind == "full":
                e = X.Coalesce([X.coerce(X.ColRef(li, lscope.cols[li].oid), l.oid), X.coerce(X.ColRef(ri, rscope.cols[ri - nl].oid), l.oid)], l.oid)
            elif kind == "right":
                e = X.ColRef(ri, rscope.cols[ri - nl].oid)
            else:
                e = X.ColRef(li, lscope.cols[li].oid)
            exprs.append(e)
            out.append(P.OutCol(nm, e.oid))
            cols.append(ScopeCol(None, nm, e.oid))
        for i, c in enumerate(lscope.cols):
            exprs.append(X.ColRef(i, c.oid, c.name))
            out.append(P.OutCol(c.name, c.oid, c.typmod))
            cols.append(ScopeCol(c.table, c.name, c.oid, c.typmod, hidden=c.hidden or c.name in names))
        for i, c in enumerate(rscope.cols):
            exprs.append(X.ColRef(nl + i, c.oid, c.name))
            out.append(P.OutCol(c.name, c.oid, c.typmod))
            cols.append(ScopeCol(c.table, c.name, c.oid, c.typmod, hidden=c.hidden or c.name in names))
        # Keep qualified access (t.col) working for USING columns via the hidden copies
        for sc in cols:
            pass
        proj = P.Project(j, exprs, out)
        scope = Scope(cols, lscope.parent, tables=lscope.tables + rscope.tables)
        scope.correlated = lscope.correlated
        scope.using_names = set(names)
        return proj, scope

    def join(self, lop, lscope, rop, rscope, kind, on, outer, where_conj) -> tuple[P.Op, Scope]:
        cols = lscope.cols + rscope.cols
        for t in rscope.tables:
            if t in lscope.tables and t not in ("?subquery?",):
                raise PgError("42712", f'table name "{t}" specified more than once')
        scope = Scope(cols, outer, tables=lscope.tables + rscope.tables)
        scope.correlated = lscope.correlated  # outer references in ON mark the query correlated
        nl = len(lscope.cols)
        conjs = split_conjuncts(on)
        # pull WHERE conjuncts that only reference these two inputs into inner joins
        if where_conj is not None and kind in ("inner", "cross"):
            for c in list(where_conj):
                if self._refs_within(c, scope) and self._refs_both(c, lscope, rscope):
                    conjs.append(c)
                    where_conj.remove(c)
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
            residual.append(self.coerce(binder.bind(c), O.BOOL))
        res = X.And(residual) if len(residual) > 1 else (residual[0] if residual else None)
        jkind = "inner" if kind == "cross" else kind
        if lkeys:
            # the stream (or the bigger input) belongs on the probe (left) side
            if self._is_stream(rop) and not self._is_stream(lop) and jkind in ("inner",):
                return self._swapped_join(lop, rop, lkeys, rkeys, res, nl, len(rscope.cols), scope)
            return P.HashJoin(lop, rop, lkeys, rkeys, jkind, res), scope
        if self._is_stream(rop) and not self._is_stream(lop) and jkind == "inner":
            return self._swapped_join(lop, rop, [], [], res, nl, len(rscope.cols), scope)
        return P.NestedLoopJoin(lop, rop, res, jkind), scope

    def _swapped_join(self, lop, rop, lkeys, rkeys, res, nl, nr, scope):
        """Build on the table, probe with the stream, then restore column order."""
        # residual and keys were bound with left columns first; remap indices
        def remap(e: X.Expr) -> X.Expr:
            for node in _unique_nodes(e):
                if isinstance(node, X.ColRef):
                    node.idx = node.idx + nr if node.idx < nl else node.idx - nl
            return e

        new_l = [self._shift(k, 0) for k in rkeys]
        new_r = [k for k in lkeys]
        if res is not None:
            res = remap(res)
        j = P.HashJoin(rop, lop, new_l, new_r, "inner", res) if new_l else P.NestedLoopJoin(rop, lop, res, "inner")
        exprs = [X.ColRef(nr + i, c.oid, c.name) for i, c in enumerate(lop.out)] + \
                [X.ColRef(i, c.oid, c.name) for i, c in enumerate(rop.out)]
        return P.Project(j, exprs, lop.out + rop.out), scope

    def _is_stream(self, op) -> bool:
        return getattr(op, "is_stream", False) or any(self._is_stream(c) for c in op.children)

    def _side(self, e: X.Expr, nl: int) -> str:
        sides = set()
        for node in e.walk():
            if isinstance(node, X.ColRef):
                sides.add("l" if node.idx < nl else "r")
            if isinstance(node, X.OuterRef) or (isinstance(node, X.SubqueryExpr) and node.correlated):
                # a correlated subquery reads the whole current row: it cannot move
                return "x"
        if len(sides) == 1:
            return sides.pop()
        return "x" if sides else "c"

    def _shift(self, e: X.Expr, delta: int) -> X.Expr:
        if delta == 0:
            return e
        for node in _unique_nodes(e):
            if isinstance(node, X.ColRef):
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
        l = r = False
        for col in node.find_all(exp.Column):
            name = ident(col.this) if isinstance(col.this, exp.Identifier) else None
            table = ident(col.args.get("table")) if col.args.get("table") else None
            if ls.find(name, table):
                l = True
            if rs.find(name, table):
                r = True
        return l and r

    # ----------------------------------------------------------- SELECT
    def plan_select(self, sel: exp.Select, outer: Scope | None, corr) -> P.Op:
        where_conj = split_conjuncts(sel.args.get("where").this) if sel.args.get("where") else []
        where_conj = factor_ors(where_conj)
        op, scope = self.plan_from(sel, outer, corr, where_conj)
        if corr is not None:
            scope.correlated = corr
        semi: list = []
        if where_conj:
            op, scope, semi = self._decorrelate(op, scope, outer, where_conj)
        # WHERE: push each conjunct as low as possible (scans first)
        if where_conj:
            binder = ExprBinder(self, scope, context="WHERE")
            preds = []
            for c in where_conj:
                if list(c.find_all(exp.AggFunc)) and not list(c.find_all(exp.Subquery, exp.Select)):
                    raise PgError(GROUPING_ERROR, "aggregate functions are not allowed in WHERE")
                e = binder.bind(c)
                preds.append(self.coerce(e, O.BOOL) if e.oid != O.BOOL else e)
            op = self.push_filters(op, preds)
        for c in semi:
            j = try_semi_join(self, op, scope, outer, c)
            if j is None:  # cannot happen after a successful probe, but stay correct
                binder = ExprBinder(self, scope, context="WHERE")
                op = P.Filter(op, self.coerce(binder.bind(c), O.BOOL))
            else:
                op = j
        group = sel.args.get("group")
        having = sel.args.get("having")
        select_items = self.expand_star(sel.expressions, scope)
        has_aggs = any(self._contains_agg(e) for e in select_items) or (having is not None) or group is not None
        order = sel.args.get("order")
        if not has_aggs and order is not None:
            has_aggs = any(self._contains_agg(o.this) for o in order.expressions)
        windows: list = []
        if not has_aggs:
            op, scope, select_items = self._decorrelate_select(op, scope, outer, select_items)
        if has_aggs:
            op, scope, bind_post = self.plan_aggregate(op, scope, sel, select_items, group, having, outer)
        else:
            bind_post = None

        # window functions
        win_specs: list = []

        def window_handler(node, binder):
            from .window import bind_window

            return bind_window(self, node, binder, win_specs, base_width)

        base_width = len(op.out)
        mk = (lambda: bind_post(window_handler)) if bind_post else (lambda: ExprBinder(self, scope, window_handler=window_handler, context="SELECT"))
        binder = mk()
        exprs, names = [], []
        srf_at = set(self._find_srfs(select_items))
        for k, item in enumerate(select_items):
            if k in srf_at:
                exprs.append(X.Const(None, O.TEXT))
                names.append(expr_name(item))
                continue
            e = binder.bind(item.this if isinstance(item, exp.Alias) else item)
            if e.oid == O.UNKNOWN:
                e = self.coerce(e, O.TEXT)
            exprs.append(e)
            names.append(expr_name(item))
        # DISTINCT
        distinct = sel.args.get("distinct")
        # ORDER BY: output aliases, ordinals or input expressions
        sort_keys = []
        extra: list[X.Expr] = []
        if order is not None:
            for o in order.expressions:
                node = o.this
                desc = bool(o.args.get("desc"))
                nf = o.args.get("nulls_first")
                nulls_first = None if nf is None else bool(nf)
                if o.args.get("nulls_first") is None:
                    nulls_first = None
                idx = self._order_target(node, select_items, names)
                if idx is None:
                    if distinct is not None and not distinct.args.get("on"):
                        raise PgError(INVALID_COLUMN_REFERENCE, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
                    e = binder.bind(node)
                    extra.append(e)
                    idx = len(exprs) + len(extra) - 1
                sort_keys.append((idx, desc, nulls_first))
        if win_specs:
            from .window import WindowOp

            op = WindowOp(op, win_specs)
        all_exprs = exprs + extra
        out = [P.OutCol(n, e.oid, e.typmod) for n, e in zip(names, exprs)] + [P.OutCol("?sort?", e.oid) for e in extra]
        srfs = self._find_srfs(select_items)
        if len(srfs) > 1:  # several SRFs advance in lockstep (PostgreSQL 10+)
            op = P.ProjectSetN(op, [self._project_set(op, scope, select_items, exprs, out, k, binder) for k in srfs],
                               exprs, out)
        elif srfs:
            op = self._project_set(op, scope, select_items, exprs, out, srfs[0], binder)
        else:
            op = P.Project(op, all_exprs, out)
        if distinct is not None:
            on = distinct.args.get("on")
            if on is not None:
                on_exprs = []
                for e in on.expressions:
                    i = self._order_target(e, select_items, names)
                    on_exprs.append(X.ColRef(i, out[i].oid) if i is not None else None)
                if any(x is None for x in on_exprs):
                    raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT ON expressions must appear in the select list")
                if sort_keys:
                    op = P.Sort(op, [(X.ColRef(i, out[i].oid), d, nf) for i, d, nf in sort_keys])
                    sort_keys_done = True
                op = P.Distinct(op, on_exprs)
            else:
                op = P.Distinct(op) if not extra else P.Distinct(op, [X.ColRef(i, out[i].oid) for i in range(len(exprs))])
        if sort_keys and not (distinct is not None and distinct.args.get("on") is not None):
            op = P.Sort(op, [(X.ColRef(i, out[i].oid), d, nf) for i, d, nf in sort_keys])
        op = self.plan_limit(sel, op, scope)
        if extra:
            op = P.Project(op, [X.ColRef(i, out[i].oid) for i in range(len(exprs))], out[: len(exprs)])
        return op

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
        from .srf import SRF_NAMES

        for i, it in enumerate(items):
            node = _strip_pg_catalog(it.this if isinstance(it, exp.Alias) else it)
            if isinstance(node, (exp.Unnest, exp.GenerateSeries, exp.ExplodingGenerateSeries, exp.Explode)) or (
                    isinstance(node, exp.Func) and func_name(node) in SRF_NAMES):
                return i
        return None

    def _find_srfs(self, items) -> list[int]:
        return [i for i, it in enumerate(items) if self._find_srf([it]) is not None]

    def _project_set(self, op, scope, items, exprs, out, srf_index, binder):
        from .srf import srf_impl

        node = _strip_pg_catalog(items[srf_index].this if isinstance(items[srf_index], exp.Alias) else items[srf_index])
        name = "unnest" if isinstance(node, (exp.Unnest, exp.Explode)) else ("generate_series" if isinstance(node, (exp.GenerateSeries, exp.ExplodingGenerateSeries)) else func_name(node))
        args = [binder.bind(a) for a in (node.expressions if isinstance(node, exp.Unnest) else
                                         [node.this] if isinstance(node, exp.Explode) else func_args(node))]
        fn, oid = srf_impl(self, name, args)
        out[srf_index] = P.OutCol(out[srf_index].name if out[srf_index].name != "?column?" else name, oid)
        return P.ProjectSet(op, srf_index, fn, args, exprs, out)

    def _order_target(self, node, items, names) -> int | None:
        if isinstance(node, exp.Literal) and not node.is_string:
            k = int(node.this)
            if not 1 <= k <= len(items):
                raise PgError(INVALID_COLUMN_REFERENCE, f"ORDER BY position {k} is not in select list")
            return k - 1
        if isinstance(node, exp.Column) and not node.args.get("table"):
            nm = ident(node.this)
            hits = [i for i, n in enumerate(names) if n == nm and isinstance(items[i], exp.Alias)]
            if hits:
                return hits[0]
            # an output column named like the key (e.g. from an expanded *)
            hits = [i for i, it in enumerate(items)
                    if (isinstance(it, exp.Column) and ident(it.this) == nm)
                    or (isinstance(it, _BoundRef) and it.col.name == nm)]
            if len(hits) == 1:
                return hits[0]
        sql = node.sql("postgres")
        for i, it in enumerate(items):
            inner = it.this if isinstance(it, exp.Alias) else it
            if inner.sql("postgres") == sql:
                return i
        return None

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
            le = self.coerce(b.bind(node), O.INT8) if node is not None else None
        oe = self.coerce(b.bind(offset.expression if offset.expression is not None else offset.this), O.INT8) if offset is not None else None
        return P.Limit(op, le, oe)

    def expand_star(self, items, scope: Scope) -> list[exp.Expression]:
        out = []
        using = getattr(scope, "using_names", set())
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

    def push_filters(self, op: P.Op, preds: list[X.Expr]) -> P.Op:
        """Put each predicate directly above the scan it needs, when possible."""
        if isinstance(op, P.Project) and getattr(op, "permutation", False) and preds:
            # a pure column reordering (comma joins): push through it
            for pr in preds:
                for node in _unique_nodes(pr):
                    if isinstance(node, X.ColRef):
                        node.idx = op.exprs[node.idx].idx
            op.child = self.push_filters(op.child, preds)
            op.children = [op.child]
            return op
        if isinstance(op, (P.HashJoin, P.NestedLoopJoin)) and op.kind == "inner":
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
            if isinstance(op, P.NestedLoopJoin):
                op.inner.left, op.inner.right = op.left, op.right
            preds = rest
        if not preds:
            return op
        return P.Filter(op, X.And(preds) if len(preds) > 1 else preds[0])

    # ----------------------------------------------------------- aggregation
    def _contains_agg(self, node) -> bool:
        if isinstance(node, _BoundRef):
            return False
        for n in node.walk() if hasattr(node, "walk") else []:
            if isinstance(n, (exp.Subquery, exp.Select)) and n is not node:
                continue
            if isinstance(n, exp.Window):
                continue
            if isinstance(n, exp.AggFunc) or (isinstance(n, exp.Func) and func_name(n) in AGGREGATES):
                # ignore aggregates inside window specs or subqueries
                if n is node:
                    return True
                p = n.parent
                inside = False
                while p is not None and p is not node:
                    if isinstance(p, (exp.Window, exp.Subquery, exp.Select)):
                        inside = True
                        break
                    p = p.parent
                if not inside:
                    return True
        return False

    def plan_aggregate(self, op, scope, sel, select_items, group, having, outer):
        in_binder = ExprBinder(self, scope, context="GROUP BY")
        key_nodes: list = []
        sets: list[list[int]] | None = None
        if group is not None:
            plain = []
            for g in group.expressions:
                if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                    continue
                plain.append(g)
            special = [g for g in group.expressions if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))]
            for flag in ("rollup", "cube", "grouping_sets"):
                v = group.args.get(flag)
                if v:
                    special += v if isinstance(v, list) else [v]
            def key_index(node):
                node = self._resolve_group_ref(node, select_items)
                sql = node.sql("postgres")
                for i, k in enumerate(key_nodes):
                    if k.sql("postgres") == sql:
                        return i
                key_nodes.append(node)
                return len(key_nodes) - 1
            base = [key_index(g) for g in plain]
            if special:
                sets = [list(base)]
                for sp in special:
                    new_sets = []
                    if isinstance(sp, exp.Rollup):
                        ks = [[key_index(x) for x in (e.expressions if isinstance(e, exp.Tuple) else [e])] for e in sp.expressions]
                        options = [sum(ks[:i], []) for i in range(len(ks), -1, -1)]
                    elif isinstance(sp, exp.Cube):
                        ks = [[key_index(x) for x in (e.expressions if isinstance(e, exp.Tuple) else [e])] for e in sp.expressions]
                        options = []
                        for mask in range(2 ** len(ks) - 1, -1, -1):
                            options.append(sum((ks[i] for i in range(len(ks)) if mask & (1 << (len(ks) - 1 - i))), []))
                    else:
                        options = []
                        for e in sp.expressions:
                            inner = e.this if isinstance(e, exp.Paren) else e
                            if isinstance(inner, exp.Tuple):
                                options.append([key_index(x) for x in inner.expressions])
                            elif isinstance(e, exp.Tuple) and not e.expressions:
                                options.append([])
                            else:
                                options.append([key_index(inner)])
                    for s in sets:
                        for o in options:
                            new_sets.append(s + [k for k in o if k not in s])
                    sets = new_sets
        keys = [in_binder.bind(k) for k in key_nodes]
        keys = [self.coerce(k, O.TEXT) if k.oid == O.UNKNOWN else k for k in keys]
        key_sql = [k.sql("postgres") for k in key_nodes]
        aggs: list[AggSpec] = []
        agg_sql: list[str] = []
        nkeys = len(keys)
        grouping_col = nkeys  # placeholder; real index computed after aggs are known
        gref: dict = {}

        def agg_handler(node, binder):
            sql = node.sql("postgres")
            if sql in agg_sql:
                i = agg_sql.index(sql)
                return X.ColRef(nkeys + i, aggs[i].oid, aggs[i].func)
            spec = self.bind_agg(node, scope)
            aggs.append(spec)
            agg_sql.append(sql)
            return X.ColRef(nkeys + len(aggs) - 1, spec.oid, spec.func)

        def group_match(node):
            if isinstance(node, _BoundRef):
                return None
            sql = node.sql("postgres")
            for i, k in enumerate(key_sql):
                if sql == k:
                    return X.ColRef(i, keys[i].oid, expr_name(key_nodes[i]), keys[i].typmod)
            if isinstance(node, exp.Func) and func_name(node) == "grouping":
                args = func_args(node)
                idxs = [key_sql.index(a.sql("postgres")) for a in args]
                gref["used"] = True

                def impl(cols, n, ctx, _idxs=idxs):
                    gid = cols[0].data
                    out = np.zeros(n, np.int64)
                    nk = len(keys)
                    for j in _idxs:
                        out = out * 2 + ((gid >> (nk - 1 - j)) & 1)
                    return Col(out.astype(np.int32), None, O.INT4)

                return X.Func("grouping", impl, [_GroupingIdRef()], O.INT4)
            return None

        def make_post(window_handler=None):
            b = ExprBinder(self, scope, agg_handler=agg_handler, group_match=group_match,
                           window_handler=window_handler, context="SELECT")
            return b

        # bind select list / having / order once to discover aggregates
        # (window calls are walked too: rank() OVER (ORDER BY sum(x)) groups first)
        def discover_window(node, binder):
            fn_node = node.this.this if isinstance(node.this, exp.Filter) else node.this
            parts = [a for a in func_args(fn_node) if not isinstance(a, exp.Star)]
            parts += list(node.args.get("partition_by") or [])
            o = node.args.get("order")
            parts += [ob.this for ob in (o.expressions if o is not None else [])]
            for part in parts:
                binder.bind(part)
            return X.Const(None, O.UNKNOWN)

        post = make_post(discover_window)
        for item in select_items:
            if isinstance(item, _BoundRef):
                group_match_hit = None
                c = item.col
                for i, k in enumerate(key_nodes):
                    if isinstance(k, exp.Column) and ident(k.this) == c.name:
                        group_match_hit = i
                if group_match_hit is None:
                    raise PgError(GROUPING_ERROR, f'column "{(c.table + ".") if c.table else ""}{c.name}" must appear in the GROUP BY clause or be used in an aggregate function')
                continue
            self._discover(post, item.this if isinstance(item, exp.Alias) else item)
        hav = None
        if having is not None:
            hav = self.coerce(post.bind(having.this), O.BOOL)
        order = sel.args.get("order")
        if order is not None:
            for o in order.expressions:
                node = o.this
                if self._order_target(node, select_items, [expr_name(i) for i in select_items]) is None:
                    self._discover(post, node)
        out = [P.OutCol(expr_name(k), e.oid) for k, e in zip(key_nodes, keys)] + [P.OutCol(a.func, a.oid) for a in aggs]
        if sets is not None:
            out.append(P.OutCol("__grouping", O.INT4, hidden=True))
        agg_op = P.Aggregate(op, keys, aggs, out, sets)
        new_cols = [ScopeCol(None, c.name, c.oid, hidden=True) for c in out]
        new_scope = Scope(new_cols, outer)
        _GroupingIdRef.index = len(out) - 1
        result_op: P.Op = agg_op
        if hav is not None:
            result_op = P.Filter(agg_op, hav)

        def bind_post(window_handler=None):
            b = make_post(window_handler)
            b.scope = scope
            return _PostAggBinder(b, new_scope)

        return result_op, new_scope, bind_post

    def _discover(self, binder, node):
        """Bind once to register aggregates (results discarded)."""
        binder.bind(node)

    def _resolve_group_ref(self, node, select_items):
        if isinstance(node, exp.Literal) and not node.is_string:
            k = int(node.this)
            if not 1 <= k <= len(select_items):
                raise PgError(INVALID_COLUMN_REFERENCE, f"GROUP BY position {k} is not in select list")
            it = select_items[k - 1]
            if isinstance(it, _BoundRef):
                return exp.column(it.col.name, table=it.col.table)
            return it.this if isinstance(it, exp.Alias) else it
        if isinstance(node, exp.Column) and not node.args.get("table"):
            nm = ident(node.this)
            for it in select_items:
                if isinstance(it, exp.Alias) and ident(it.args["alias"]) == nm:
                    # an input column of the same name wins in PostgreSQL
                    return it.this if not self._input_has(nm) else node
        return node

    def _input_has(self, name):
        return False

    def bind_agg(self, node, scope: Scope) -> AggSpec:
        filt = None
        order_key = None
        fraction = None
        if isinstance(node, exp.Filter):
            fb = ExprBinder(self, scope, context="FILTER")
            filt = self.coerce(fb.bind(node.expression.this), O.BOOL)
            node = node.this
        if isinstance(node, exp.WithinGroup):
            inner = node.this
            fn = func_name(inner)
            order = node.expression
            frac_node = func_args(inner)[0] if func_args(inner) else None
            b = ExprBinder(self, scope, context="aggregate")
            fr = b.bind(frac_node)
            fraction = float(fr.value) if isinstance(fr, X.Const) else 0.5
            o = order.expressions[0]
            arg = b.bind(o.this)
            if fn == "percentile_cont":
                arg = self.coerce(arg, O.FLOAT8)
            return AggSpec(fn, [arg], [arg.oid], filter_=filt, fraction=fraction)
        fn = func_name(node)
        b = ExprBinder(self, scope, context="aggregate function calls")
        distinct = False
        args_nodes = func_args(node)
        order_node = None
        if isinstance(node, exp.GroupConcat):
            this = node.this
            sep = node.args.get("separator")
            if isinstance(this, exp.Order):
                order_node = this
                order_key = self._agg_order(this, scope)
                this = this.this
            if isinstance(this, exp.Distinct):
                distinct = True
                this = this.expressions[0]
            args_nodes = [this] + ([sep] if sep is not None else [])
            fn = "string_agg"
        star = False
        if len(args_nodes) == 1 and isinstance(args_nodes[0], exp.Star):
            star = True
            args_nodes = []
        if args_nodes and isinstance(args_nodes[0], exp.Order) and isinstance(args_nodes[0].this, exp.Distinct):
            # agg(DISTINCT x ORDER BY y): sqlglot nests the DISTINCT inside the ORDER
            o = args_nodes[0].copy()
            inner_d = o.this
            o.set("this", inner_d.expressions[0])
            args_nodes = [exp.Distinct(expressions=[o] + list(inner_d.expressions[1:]))] + args_nodes[1:]
        if args_nodes and isinstance(args_nodes[0], exp.Distinct):
            distinct = True
            args_nodes = list(args_nodes[0].expressions) + args_nodes[1:]
        if args_nodes and isinstance(args_nodes[0], exp.Order):
            order_node = args_nodes[0]
            order_key = self._agg_order(args_nodes[0], scope)
            args_nodes = [args_nodes[0].this] + args_nodes[1:]
        for a in args_nodes:
            if self._contains_agg(a):
                raise PgError(GROUPING_ERROR, "aggregate function calls cannot be nested")
        args = [b.bind(a) for a in args_nodes]
        if fn == "count" and not args:
            star = True
        if fn in ("sum", "avg") and args and args[0].oid == O.UNKNOWN:
            raise PgError("42725", f"function {fn}(unknown) is not unique",
                          hint="Could not choose a best candidate function. You might need to add explicit type casts.")
        args = [self.coerce(a, O.TEXT) if a.oid == O.UNKNOWN else a for a in args]
        if fn in ("sum", "avg") and args and args[0].oid in (O.TEXT, O.VARCHAR, O.BPCHAR, O.BOOL):
            raise PgError(UNDEFINED_FUNCTION, f"function {fn}({T.type_name(args[0].oid) if args[0].oid != O.BPCHAR else 'character'}) does not exist",
                          hint="No function matches the given name and argument types. You might need to add explicit type casts.")
        if fn in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop") and args and args[0].oid == O.FLOAT4:
            args = [self.coerce(args[0], O.FLOAT8)]
        if fn in ("bool_and", "bool_or", "every") and args:
            args = [self.coerce(args[0], O.BOOL)]
        if fn == "string_agg" and len(args) == 2:
            args = [self.coerce(args[0], O.TEXT) if not T.is_string(args[0].oid) else args[0], self.coerce(args[1], O.TEXT)]
        arg_oids = [a.oid for a in args] or [O.INT8]
        if order_node is not None and not (len(order_node.expressions) == 1 and args_nodes
                                           and order_node.expressions[0].this.sql("postgres") == args_nodes[0].sql("postgres")):
            # ORDER BY other expressions: carry the keys as hidden trailing arguments
            order_key, extra = self._agg_order_keys(order_node, scope, len(args))
            args = args + extra
        spec = AggSpec(fn, args, arg_oids, distinct=distinct, filter_=filt,
                       order_key=order_key, star=star)
        if spec.oid == -1:
            raise PgError(UNDEFINED_FUNCTION, f"function {fn}({', '.join(T.type_name(a.oid) for a in args)}) does not exist")
        return spec

    def _agg_order_keys(self, order: exp.Order, scope, first: int):
        """Sorter over list-state rows whose sort keys sit at positions first, first+1, ..."""
        b = ExprBinder(self, scope, context="aggregate ORDER BY")
        keys = [(b.bind(o.this), bool(o.args.get("desc")), o.args.get("nulls_first")) for o in order.expressions]
        extra = [self.coerce(k, O.TEXT) if k.oid == O.UNKNOWN else k for k, _, _ in keys]

        def sorter(rows):
            from .operators import _sort_key

            rows = list(rows)
            for j in range(len(keys) - 1, -1, -1):  # stable sorts, least significant key first
                _, desc, nf = keys[j]
                pos = first + j
                nulls_first = desc if nf is None else bool(nf)
                nn = [r for r in rows if r[pos] is not None]
                nulls = [r for r in rows if r[pos] is None]
                nn.sort(key=lambda r: _sort_key(r[pos]), reverse=desc)
                rows = (nulls + nn) if nulls_first else (nn + nulls)
            return rows

        return sorter, extra

    def _agg_order(self, order: exp.Order, scope):
        b = ExprBinder(self, scope, context="aggregate ORDER BY")
        keys = [(b.bind(o.this), bool(o.args.get("desc")), o.args.get("nulls_first")) for o in order.expressions]
        # rows in list state are tuples of agg args; we sort by the first arg (the common case)
        desc = keys[0][1]

        def sorter(rows):
            from .operators import _sort_key

            nn = [r for r in rows if r[0] is not None]
            nulls = [r for r in rows if r[0] is None]
            nn.sort(key=lambda r: _sort_key(r[0]), reverse=desc)
            return (nulls + nn) if desc else (nn + nulls)

        return sorter

    # ----------------------------------------------------------- set operations
    def plan_setop(self, node, outer, corr) -> P.Op:
        kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
        l = self.plan_query(node.this, outer, corr)
        r = self.plan_query(node.expression, outer, corr)
        if len(l.out) != len(r.out):
            raise PgError(SYNTAX_ERROR, f"each {kind.upper()} query must have the same number of columns")
        out = []
        for a, b in zip(l.out, r.out):
            t = a.oid if a.oid == b.oid else T.common_type(a.oid, b.oid, kind.upper())
            if t == O.UNKNOWN:
                t = O.TEXT
            out.append(P.OutCol(a.name, t))
        all_ = not bool(node.args.get("distinct"))
        op: P.Op = P.SetOp(kind, all_, l, r, out)
        order = node.args.get("order")
        if order is not None:
            names = [c.name for c in out]
            keys = []
            for o in order.expressions:
                tgt = o.this
                if isinstance(tgt, exp.Literal):
                    i = int(tgt.this) - 1
                else:
                    nm = ident(tgt.this) if isinstance(tgt, exp.Column) else tgt.sql()
                    if nm not in names:
                        raise PgError(UNDEFINED_COLUMN, f'column "{nm}" does not exist')
                    i = names.index(nm)
                keys.append((X.ColRef(i, out[i].oid), bool(o.args.get("desc")), o.args.get("nulls_first")))
            op = P.Sort(op, keys)
        return self.plan_limit(node, op, None)

    def plan_values(self, node: exp.Values, outer) -> P.Op:
        b = ExprBinder(self, outer or Scope([]), context="VALUES")
        rows = []
        for t in node.expressions:
            items = t.expressions if isinstance(t, exp.Tuple) else [t]
            rows.append([b.bind(i) for i in items])
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise PgError(SYNTAX_ERROR, "VALUES lists must all be the same length")
        out = []
        for j in range(width):
            t = O.UNKNOWN
            for r in rows:
                o = r[j].oid
                if o != O.UNKNOWN:
                    t = o if t == O.UNKNOWN else T.common_type(t, o, "VALUES")
            if t == O.UNKNOWN:
                t = O.TEXT
            out.append(P.OutCol(f"column{j + 1}", t))
        rows = [[self.coerce(r[j], out[j].oid) for j in range(width)] for r in rows]
        return P.ValuesScan(rows, out)


def _strip_pg_catalog(node):
    """pg_catalog.f(...) parses as Dot(pg_catalog, f(...)): the call itself."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func) and \
            isinstance(node.this, (exp.Column, exp.Identifier)) and node.this.name.lower() == "pg_catalog":
        return node.expression
    return node


_OID_FAMILY = (O.OID, O.REGCLASS, O.REGTYPE, O.REGPROC, O.REGNAMESPACE, O.REGROLE)


def _ancestors(node: exp.Expression, stop: exp.Expression):
    """Parents of ``node`` strictly below ``stop`` (nothing when node is stop)."""
    if node is stop:
        return
    p = node.parent
    while p is not None and p is not stop:
        yield p
        p = p.parent


def _is_comma_item(j: exp.Join) -> bool:
    """A ``FROM a, b`` item: a Join with no kind, side, condition or LATERAL."""
    t = j.this
    if isinstance(t, exp.Lateral) or (isinstance(t, exp.Subquery) and t.args.get("lateral")):
        return False
    return not any(j.args.get(k) for k in ("on", "using", "side", "kind", "method"))


def _unique_nodes(e: X.Expr):
    """Each node of a bound tree once: binders share sub-expressions (BETWEEN
    uses its operand twice), so in-place index rewrites must not visit a
    shared node twice."""
    seen: set[int] = set()
    for node in e.walk():
        if id(node) not in seen:
            seen.add(id(node))
            yield node


class _BoundRef(exp.Expression):
    """A select-list item produced by * expansion, already resolved."""

    arg_types = {}

    def __init__(self, idx: int, col: ScopeCol) -> None:
        super().__init__()
        self.idx = idx
        self.col = col

    def sql(self, *a, **k):
        return f"{self.col.table}.{self.col.name}" if self.col.table else self.col.name

    @property
    def alias_or_name(self):
        return self.col.name


class _GroupingIdRef(X.Expr):
    index = 0
    oid = O.INT4

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
                        return X.ColRef(i, c.oid, c.name)
            return m
        return self.inner.bind(node)


def _bound_ref_bind(self, node):
    return X.ColRef(node.idx, node.col.oid, node.col.name, node.col.typmod)


ExprBinder.b__BoundRef = _bound_ref_bind
