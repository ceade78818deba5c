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
from splitstream.protocol.errors import PgError

from ..binder import ExprBinder, ScopeCol, datatype_to_oid, func_name, ident
from ..dialect import DIALECT, WRITTEN_NAME
from .. import operator_binding  # noqa: F401  (attaches the operator rules to ExprBinder)


# Grammar whose column name is fixed (PostgreSQL's FigureColnameInternal):
# special forms that are not function calls by name, and the SQL value
# functions written without parentheses.
_FIXED_NAMES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (exp.Exists, "exists"),
    (exp.Array, "array"),
    ((exp.Tuple, exp.Struct), "row"),
    (exp.CurrentDate, "current_date"),
    (exp.CurrentTime, "current_time"),
    (exp.Localtime, "localtime"),
    (exp.Localtimestamp, "localtimestamp"),
    (exp.CurrentUser, "current_user"),
    (exp.SessionUser, "session_user"),
    (exp.CurrentCatalog, "current_catalog"),
    (exp.CurrentSchema, "current_schema"),
    (exp.Substring, "substring"),
    (exp.StrPosition, "position"),
    (exp.Overlay, "overlay"),
    (exp.Overlaps, "overlaps"),
    (exp.GroupConcat, "string_agg"),
    (exp.XMLElement, "xmlelement"),
    (exp.AtTimeZone, "timezone"),
    (exp.Coalesce, "coalesce"),
    (exp.Nullif, "nullif"),
    (exp.Greatest, "greatest"),
    (exp.Least, "least"),
)

#: FigureColname's strengths: no name, a cast's type name, a real name
_NONE, _TYPE, _NAMED = 0, 1, 2


def expr_name(node: exp.Expr) -> str:
    """The column name PostgreSQL gives an unaliased select-list item."""
    if isinstance(node, exp.Alias):
        return ident(node.args["alias"])
    name, _ = _figure(node)
    return name if name is not None else "?column?"


def _figure(node: exp.Expr) -> tuple[str | None, int]:
    """FigureColnameInternal: a name and how strongly the item claims it.
    Operators (whatever node sqlglot makes of them: Pow, And, JSONExtract
    ...) have none; a function call is named as written."""
    if isinstance(node, _BoundRef):
        return node.col.name, _NAMED
    if isinstance(node, exp.Column):
        return (ident(node.this) if isinstance(node.this, exp.Identifier) else node.name), _NAMED
    if isinstance(node, (exp.Paren, exp.Collate, exp.Bracket, exp.Window, exp.Filter, exp.WithinGroup)):
        return _figure(node.this)
    if isinstance(node, exp.Cast):
        inner = _figure(node.this)
        return inner if inner[1] > _TYPE else (_cast_type_name(node.args["to"]), _TYPE)
    if isinstance(node, exp.Dot):
        if isinstance(node.expression, exp.Func):
            return _figure(node.expression)
        return ident(node.expression), _NAMED
    if isinstance(node, exp.Subquery):
        return _subquery_name(node.this)
    if isinstance(node, exp.Case):  # named after its ELSE result if that has a name
        default = node.args.get("default")
        inner = _figure(default) if default is not None else (None, _NONE)
        return inner if inner[1] > _TYPE else ("case", _TYPE)
    if isinstance(node, exp.Interval):  # a typed literal: a cast of a constant
        return "interval", _TYPE
    for classes, name in _FIXED_NAMES:
        if isinstance(node, classes):
            return name, _NAMED
    if isinstance(node, exp.Extract):
        return "extract", _NAMED
    if isinstance(node, exp.CurrentTimestamp):
        return ("now" if node.meta.get("now") else "current_timestamp"), _NAMED
    if isinstance(node, exp.Trim):
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get((node.args.get("position") or "").upper(), "btrim"), _NAMED
    if isinstance(node, exp.Anonymous) or (isinstance(node, exp.Func) and node.meta.get(WRITTEN_NAME)):
        return func_name(node), _NAMED
    return None, _NONE


def _subquery_name(q: exp.Expr) -> tuple[str | None, int]:
    """A scalar subquery is named after its query's first output column."""
    while isinstance(q, (exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
        q = q.this
    if isinstance(q, exp.Select) and q.expressions:
        return expr_name(q.expressions[0]), _NAMED
    return None, _NONE


def _cast_type_name(to: exp.DataType) -> str:
    """The last name of a cast's type as PostgreSQL's grammar spells it
    (int -> int4, double precision -> float8; an array type by its element)."""
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        written = ident(to.args.get("kind")) or to.sql(DIALECT)
        array = sqltypes.oid_by_name(written) if written.startswith("_") else None     # oid[] is read as _oid
        return sqltypes.type_name(type_oids.ELEMENT_OF[array]) if array in type_oids.ELEMENT_OF else written
    try:
        oid, _ = datatype_to_oid(to)
    except PgError:
        oid = None
    if oid is not None:
        oid = type_oids.ELEMENT_OF.get(oid, oid)
        if oid in sqltypes.TYPE_NAMES:
            return sqltypes.type_name(oid)
    return to.sql(DIALECT).lower()


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
