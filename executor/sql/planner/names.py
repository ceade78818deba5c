"""Output-column names of select-list items, and resolved ``*`` items.

Why a module of its own: PostgreSQL's FigureColname rules (which name an
unaliased item gets) are needed by SELECT, GROUP BY, decorrelation and DML
alike, and ``_BoundRef`` (a column already resolved by ``*`` expansion) is
the one parse-tree node the planner adds, with its ExprBinder hook.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids

from ...execution import expr
from ..binder import ExprBinder, ScopeCol, datatype_to_oid, func_name, ident


# Items whose column name does not depend on their arguments (checked in
# this order, before the generic function-name rule).
_FIXED_NAMES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (exp.Case, "case"),
    (exp.Coalesce, "coalesce"),
    (exp.Nullif, "nullif"),
    (exp.Exists, "exists"),
    (exp.Array, "array"),
    (exp.CurrentDate, "current_date"),
    (exp.Localtimestamp, "localtimestamp"),
    (exp.CurrentUser, "current_user"),
    ((exp.TimestampTrunc, exp.DateTrunc), "date_trunc"),
    (exp.Substring, "substring"),
    (exp.StrPosition, "position"),
    (exp.Greatest, "greatest"),
    (exp.Least, "least"),
    (exp.Count, "count"),
    ((exp.RegexpLike, exp.RegexpILike), "?column?"),  # the ~ and ~* operators (regexp_like() is rare and new in 15)
)


def expr_name(node: exp.Expr) -> str:
    """The column name PostgreSQL gives an unaliased select-list item."""
    if isinstance(node, exp.Alias):
        return ident(node.args["alias"])
    if isinstance(node, _BoundRef):
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
        return sqltypes.type_name(oid) if oid not in type_oids.ELEMENT_OF else sqltypes.type_name(oid)
    if isinstance(node, (exp.Window, exp.Filter, exp.WithinGroup)):
        return expr_name(node.this)
    for classes, name in _FIXED_NAMES:
        if isinstance(node, classes):
            return name
    if isinstance(node, (exp.Subquery,)):
        q = node.this
        if isinstance(q, exp.Select) and len(q.expressions) == 1:
            return expr_name(q.expressions[0])
        return "?column?"
    if isinstance(node, exp.Extract):
        return "date_part" if node.meta.get("date_part") else "extract"
    if isinstance(node, (exp.CurrentTimestamp,)):
        return "now" if node.meta.get("now") else "current_timestamp"
    if isinstance(node, exp.Trim):
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get((node.args.get("position") or "").upper(), "btrim")
    if isinstance(node, exp.Pow) and not node.meta.get("power"):
        return "?column?"                    # the ^ operator, not power()
    if isinstance(node, exp.Func):
        fn = func_name(node)
        return {"strpos": "strpos", "substr": "substr"}.get(fn, fn)
    return "?column?"


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


def _bound_ref_bind(self, node):
    return expr.ColRef(node.idx, node.col.oid, node.col.name, node.col.typmod)


# star-expanded items bind straight to their column (ExprBinder dispatches on the class name)
setattr(ExprBinder, "b__BoundRef", _bound_ref_bind)
