"""Query expressions: the entry point, WITH (CTEs, recursive ones too), set
operations (UNION / INTERSECT / EXCEPT) and VALUES lists.

Why a module of its own: these are the shapes a query takes above a single
SELECT (PostgreSQL's prepunion.c and the query-level part of planner.c);
``plan_query`` is also how subqueries anywhere else are planned.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

from ...execution import expr
from ...execution import operators
from ..binder import ExprBinder, Scope, ident
from .base import KEEP_UNKNOWNS, PlannerBase
from .targets import require_equality, require_ordering, setop_order_target


def write_key(stmt: object) -> tuple[str, int]:
    """Where a data-modifying WITH query's RETURNING rows are kept in a run's
    ``cte_results``."""
    return ("write", id(stmt))


class QueryPlanner(PlannerBase):
    """Entry point for a query expression: WITH, set operations and VALUES."""

    def subplan(self, node: exp.Expression, outer: Scope) -> tuple[operators.Op, bool]:
        corr = [False]
        plan = self.plan_query(node, outer, corr)
        return plan, corr[0]

    def plan_query(self, node: exp.Expr, outer: Scope | None = None, corr: list | None = None) -> operators.Op:
        if isinstance(node, exp.Subquery):
            inner = self.plan_query(node.this, outer, corr)
            return self._order_limit_wrapper(node, inner, outer, corr)
        if isinstance(node, exp.Paren):
            return self.plan_query(node.this, outer, corr)
        pushed = self.define_ctes(node, outer, corr)
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

    def define_ctes(self, node: exp.Expr, outer=None, corr=None) -> bool:
        """Put ``node``'s WITH queries in scope (a new level of ``self.ctes``,
        which the caller pops): whether it had any."""
        with_ = node.args.get("with") or node.args.get("with_")
        if with_ is None:
            return False
        self.ctes.append({})
        top = node is self.top_query
        for cte in with_.expressions:
            self._define_cte(cte, bool(with_.args.get("recursive")), outer, corr, top)
        return True

    def _define_write(self, name: str, colnames: list[str], body: exp.Expr, top: bool) -> None:
        """A data-modifying WITH query: planned by the command layer's
        ``write_builder``, run once before the main statement (which reads its
        RETURNING rows from the run's ``cte_results``), only at the top level."""
        if not top or self.write_builder is None:
            raise PgError(FEATURE_NOT_SUPPORTED, "WITH clause containing a data-modifying statement must be at the top level")
        stmt = self.write_builder(body)
        self.writes.append(stmt)
        returning = stmt.columns
        if returning is None:
            self.ctes[-1][name] = ("no_returning", None, [])
            return
        out = [operators.OutCol(colnames[i] if i < len(colnames) else c.name, c.type_oid, c.typmod, c.table_oid, c.attnum)
               for i, c in enumerate(returning)]
        key = write_key(stmt)
        self.ctes[-1][name] = ("plan", operators.BatchSource(f"CTE {name}", out, lambda ctx: ctx.cte_results[key]), out)

    def _define_cte(self, cte: exp.CTE, recursive: bool, outer, corr, top: bool = False) -> None:
        name = ident(cte.args["alias"].this)
        colnames = [ident(c) for c in (cte.args["alias"].columns or [])]
        body = cte.this
        if isinstance(body, (exp.Insert, exp.Update, exp.Delete)):
            self._define_write(name, colnames, body, top)
            return
        if recursive and isinstance(body, exp.Union) and self._refers_to(body.expression, name):
            base = self.plan_query(body.this, outer, corr)
            out = [operators.OutCol(colnames[i] if i < len(colnames) else c.name, c.oid, c.typmod) for i, c in enumerate(base.out)]
            holder: dict = {}

            def builder():
                self.ctes.append({name: ("work", holder["ru"], out)})
                try:
                    return self.plan_query(body.expression, outer, corr)
                finally:
                    self.ctes.pop()

            ru = operators.RecursiveUnion(name, base, builder, not body.args.get("distinct", True) or bool(body.args.get("distinct") is False), out)
            ru.all = not bool(body.args.get("distinct"))
            holder["ru"] = ru
            # build once now to surface errors and fix output types
            rec = builder()
            ru.builder = lambda: rec
            for i, (a, b) in enumerate(zip(out, rec.out)):
                if a.oid != b.oid and a.oid in (type_oids.INT4,) and b.oid in (type_oids.INT8, type_oids.NUMERIC):
                    raise PgError(DATATYPE_MISMATCH,
                                  f'recursive query "{name}" column {i + 1} has type {sqltypes.format_type(a.oid)} in non-recursive term but type {sqltypes.format_type(b.oid)} overall',
                                  hint="Cast the output of the non-recursive term to the correct type.")
            self.ctes[-1][name] = ("plan", ru, out)
            return
        plan = self.plan_query(body, outer, corr)
        out = [c.renamed(colnames[i] if i < len(colnames) else c.name) for i, c in enumerate(plan.out)]
        self.ctes[-1][name] = ("plan", operators.Materialized(name, plan), out)

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

    def plan_setop(self, node, outer, corr) -> operators.Op:
        kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
        for branch in (node.this, node.expression):
            if isinstance(branch, exp.Select):      # SELECT NULL UNION SELECT 1: the NULL is an integer
                branch.meta[KEEP_UNKNOWNS] = True
        left = self.plan_query(node.this, outer, corr)
        right = self.plan_query(node.expression, outer, corr)
        if len(left.out) != len(right.out):
            raise PgError(SYNTAX_ERROR, f"each {kind.upper()} query must have the same number of columns")
        out = []
        for a, b in zip(left.out, right.out):
            t = a.oid if a.oid == b.oid else sqltypes.common_type(a.oid, b.oid, kind.upper())
            if t == type_oids.UNKNOWN:
                t = type_oids.TEXT
            out.append(operators.OutCol(a.name, t))
        all_ = not bool(node.args.get("distinct"))
        if not all_:
            require_equality([c.oid for c in out])
        op: operators.Op = operators.SetOp(kind, all_, left, right, out)
        order = node.args.get("order")
        if order is not None:
            names = [c.name for c in out]
            keys: list[tuple[expr.Expr, bool, bool | None]] = []
            for o in order.expressions:
                i = setop_order_target(o.this, names)
                keys.append((expr.ColRef(i, out[i].oid), bool(o.args.get("desc")), o.args.get("nulls_first")))
            require_ordering([k.oid for k, _, _ in keys])
            op = operators.Sort(op, keys)
        return self.plan_limit(node, op, None)

    def plan_values(self, node: exp.Values, outer) -> operators.Op:
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
            t = type_oids.UNKNOWN
            for r in rows:
                o = r[j].oid
                if o != type_oids.UNKNOWN:
                    t = o if t == type_oids.UNKNOWN else sqltypes.common_type(t, o, "VALUES")
            if t == type_oids.UNKNOWN:
                t = type_oids.TEXT
            out.append(operators.OutCol(f"column{j + 1}", t))
        rows = [[self.coerce(r[j], out[j].oid) for j in range(width)] for r in rows]
        return operators.ValuesScan(rows, out)
