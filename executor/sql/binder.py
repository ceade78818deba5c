"""Name resolution and expression binding: sqlglot trees to :mod:`expr` nodes.

A :class:`Scope` lists the columns visible at one point of a query (the
FROM clause's output).  Scopes chain to their enclosing query's scope, so
a column found further out becomes an :class:`OuterRef` and marks the
subquery as correlated.
"""
from __future__ import annotations

import dataclasses
import decimal
import json
from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    UNDEFINED_SCHEMA,
    AMBIGUOUS_COLUMN, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, GROUPING_ERROR, SYNTAX_ERROR, UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION, UNDEFINED_OBJECT, UNDEFINED_TABLE, WINDOWING_ERROR, WRONG_OBJECT_TYPE, PgError,
)

from ..execution import expr
from ..execution.rows import RowCtor
from ..execution import functions
from ..execution import json_functions, json_operators, json_spans, json_values
from ..execution import signatures
from ..execution.signatures import AMBIGUOUS_FUNCTION, AMBIGUOUS_HINT
from ..execution.extract import extract_impl
from ..execution.proc_catalog import WINDOW_SIGNATURES  # (importing it loads the whole function catalog)
from ..execution.aggregates import AGGREGATES
from ..execution.ordered_set import HYPOTHETICAL
from ..execution.array_functions import concat, extend, flat, stack
from ..execution.posix_regex import similar_to_regex
from . import collations
from .dialect import DIALECT, WRITTEN_NAME
from .subscripts import bind_slice
from .error_positions import call_position, node_position
from .operator_positions import bound_error_position
from .cast_paths import check_cast, function_style_cast
from . import named_args
from . import row_binding
from splitstream.protocol.types import decode_text, jsonb_text
from ..execution.regnames import REG_OUTPUT, reg_names
from ..execution.system_functions import CATALOG_FUNCTIONS
from ..execution.setting_changes import current_setting_rows, set_config_rows


@dataclass
class ScopeCol:
    table: str | None
    name: str
    oid: int
    typmod: int = -1
    hidden: bool = False


@dataclass
class Scope:
    cols: list[ScopeCol]
    parent: "Scope | None" = None
    correlated: list = field(default_factory=lambda: [False])
    tables: list[str] = field(default_factory=list)
    #: a grouped query's input seen from its select list, HAVING and ORDER BY:
    #: column index -> the group key's index in the grouped rows (None: not a key)
    grouped: dict[int, int] | None = None
    #: the FROM items an outer join may NULL-extend here; None where that is
    #: not known (a whole-row reference is then refused, never made wrong)
    null_extended: frozenset[str] | None = None

    def find(self, name: str, table: str | None) -> list[int]:
        out = []
        for i, c in enumerate(self.cols):
            if c.name == name and (table is None or c.table == table):
                if table is None and c.hidden and c.name.startswith("__"):
                    continue
                out.append(i)
        if table is None and len(out) > 1:
            # JOIN ... USING: the merged column wins over the hidden per-side copies
            visible = [i for i in out if not self.cols[i].hidden]
            if visible:
                out = visible
        return out

    def has_table(self, table: str) -> bool:
        return any(c.table == table for c in self.cols) or table in self.tables


#: functions taking a FROM item's whole row (``row_to_json(t)``) as the JSON object of its columns
WHOLE_ROW_JSON = frozenset({"row_to_json", "to_json", "to_jsonb", "json_build_object", "jsonb_build_object",
                            "json_build_array", "jsonb_build_array"})


def any_scope_has_table(scope: Scope | None, name: str) -> bool:
    """``name`` is a FROM item of this query level or one around it."""
    while scope is not None:
        if scope.has_table(name):
            return True
        scope = scope.parent
    return False


def whole_row_refused(name: str) -> PgError:
    """A FROM item named as a value where an outer join may NULL-extend it
    (or where that is not known): PostgreSQL's whole-row value is then NULL
    for a NULL-extended row, which a row of the columns cannot tell from a
    row of NULLs; refused, never taken for a missing column."""
    return PgError(FEATURE_NOT_SUPPORTED, "whole-row references to a FROM item an outer join may NULL-extend are not supported",
                   hint=f"Name the columns, or use {name}.* in the select list; row_to_json({name}), "
                        f"to_jsonb({name}) and json_agg({name}) take the row as a JSON object.")


def ident(node) -> str:
    """Identifier text with PostgreSQL's case folding."""
    if node is None:
        return ""
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, str):
        return node.lower()
    if hasattr(node, "this") and isinstance(node, (exp.Column, exp.Var)):
        t = node.args.get("this")
        return ident(t) if isinstance(t, exp.Identifier) else str(node.name).lower()
    return node.name.lower() if hasattr(node, "name") else str(node).lower()


def collation_of(node) -> str:
    """The collation a COLLATE clause names, checked (collations.honoured)."""
    if isinstance(node, exp.Column):
        schema = node.args.get("table")
        return collations.honoured(ident(node.this), ident(schema) if schema is not None else None)
    return collations.honoured(ident(node))


def referenced_names(tree: exp.Expression) -> frozenset[str] | None:
    """Column names a parsed statement mentions (None when it selects ``*``;
    ``count(*)`` mentions none)."""
    from_star = any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star))
    if from_star:
        return None
    return frozenset(ident(c.this) for c in tree.find_all(exp.Column) if isinstance(c.this, exp.Identifier))


def _quoted_char(name) -> bool:
    """``"char"`` (also ``pg_catalog."char"``): the one-byte type, where an
    unquoted ``char`` is ``character`` (bpchar), as in PostgreSQL."""
    last = name.expression if isinstance(name, exp.Dot) else name
    return isinstance(last, exp.Identifier) and bool(last.args.get("quoted")) and last.this == "char"


#: OPERATOR(pg_catalog.op) of a comparison: the node the operator written plainly parses to
_COMPARISON_NODES = {"=": exp.EQ, "<>": exp.NEQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
#: where two operands meet in an operator (=, <, IS DISTINCT FROM, NULLIF, a join key), not a common type
#: the types by their pg_type names: a call named so may be a function-style cast
_TYPE_BY_NAME = {name: oid for oid, name in sqltypes.TYPE_NAMES.items()
                 if not name.startswith("_") and name not in ("unknown", "record", "void")}
#: the reg* types whose input a name cast to them is read by (regclassin & co.)
_REG_INPUT = frozenset((type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC, type_oids.REGNAMESPACE,
                        type_oids.REGROLE))
OPERATOR_CONTEXTS = frozenset({"comparison", "NULLIF", "JOIN"})


def operand_type(unknown: expr.Expr, other: int, context: str) -> int:
    """The type an unknown operand takes beside one of type ``other``: that
    type, but a parameter compared with varchar is text, as the operator
    PostgreSQL picks there is text's (varchar has none of its own): what
    Describe's ParameterDescription and pg_prepared_statements report."""
    if other == type_oids.VARCHAR and context in OPERATOR_CONTEXTS and isinstance(unknown, expr.Param):
        return type_oids.TEXT
    return other


#: arrays of the reg* types whose elements a literal names (regclass[], regtype[], regproc[])
REG_ARRAYS = frozenset(type_oids.ARRAY_OF[t] for t in (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC,
                                                                 type_oids.REGNAMESPACE, type_oids.REGROLE)
                       if t in type_oids.ARRAY_OF)

#: aggregates called with WITHIN GROUP: ordered-set and hypothetical-set ones
ORDERED_SET_NAMES = frozenset(("mode", "percentile_cont", "percentile_disc")) | HYPOTHETICAL


def call_modifier(n: exp.Func) -> str | None:
    """DISTINCT or ORDER BY written inside a call's parentheses, or None."""
    for a in func_args(n):
        if isinstance(a, exp.Distinct) or (isinstance(a, exp.Order) and isinstance(a.this, exp.Distinct)):
            return "DISTINCT"
        if isinstance(a, exp.Order):
            return "ORDER BY"
    return None


def not_an_aggregate(modifier: str, call: exp.Func) -> PgError:
    """PostgreSQL's error for aggregate syntax on a plain function's call."""
    return PgError(WRONG_OBJECT_TYPE, f"{modifier} specified, but {func_name(call)} is not an aggregate function",
                   position=call_position(call))


def datatype_to_oid(dt: exp.DataType) -> tuple[int, int]:
    """sqlglot DataType -> (oid, typmod)."""
    if isinstance(dt, exp.DataType) and dt.this == exp.DataType.Type.ARRAY or (isinstance(dt, exp.DataType) and dt.args.get("nested") and dt.expressions and dt.this == exp.DataType.Type.ARRAY):
        inner = dt.expressions[0] if dt.expressions else exp.DataType.build("text")
        e, _ = datatype_to_oid(inner)
        return type_oids.ARRAY_OF.get(e, type_oids.ARRAY_OF[type_oids.TEXT]), -1
    if isinstance(dt, exp.ObjectIdentifier):
        oid = sqltypes.oid_by_name(str(dt.this))
        if oid is None:
            raise PgError(UNDEFINED_OBJECT, f'type "{dt.this}" does not exist')
        return oid, -1
    if isinstance(dt, exp.DataType) and dt.this == exp.DataType.Type.USERDEFINED:
        name = dt.args.get("kind") or dt.sql(DIALECT)
        if _quoted_char(name):
            return type_oids.CHAR, -1
        oid = sqltypes.oid_by_name(str(name).replace('"', ""))  # also "pg_catalog"."int4" (asyncpg)
        if oid is None:
            raise PgError(UNDEFINED_OBJECT, f'type "{name}" does not exist')
        return oid, -1
    t = dt.this
    DT = exp.DataType.Type
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in dt.expressions]

    def num(p):
        return int(p.this) if isinstance(p, exp.Literal) else int(str(p))

    m = {
        DT.INT: type_oids.INT4, DT.BIGINT: type_oids.INT8, DT.SMALLINT: type_oids.INT2, DT.TINYINT: type_oids.INT2, DT.FLOAT: type_oids.FLOAT4,
        DT.DOUBLE: type_oids.FLOAT8, DT.DECIMAL: type_oids.NUMERIC, DT.TEXT: type_oids.TEXT, DT.VARCHAR: type_oids.VARCHAR, DT.CHAR: type_oids.BPCHAR,
        DT.NCHAR: type_oids.BPCHAR, DT.NVARCHAR: type_oids.VARCHAR, DT.BOOLEAN: type_oids.BOOL, DT.DATE: type_oids.DATE, DT.TIME: type_oids.TIME, DT.TIMETZ: type_oids.TIMETZ,
        DT.TIMESTAMP: type_oids.TIMESTAMP, DT.TIMESTAMPTZ: type_oids.TIMESTAMPTZ, DT.TIMESTAMPLTZ: type_oids.TIMESTAMPTZ,
        DT.INTERVAL: type_oids.INTERVAL, DT.UUID: type_oids.UUID, DT.JSON: type_oids.JSON, DT.JSONB: type_oids.JSONB, DT.VARBINARY: type_oids.BYTEA,
        DT.BINARY: type_oids.BYTEA, DT.SERIAL: type_oids.INT4, DT.BIGSERIAL: type_oids.INT8, DT.SMALLSERIAL: type_oids.INT2,
        DT.DATETIME: type_oids.TIMESTAMP,
    }
    for nm, o in (("OBJECT_IDENTIFIER", type_oids.OID), ("NAME", type_oids.NAME), ("MONEY", type_oids.NUMERIC), ("BPCHAR", type_oids.BPCHAR),
                  ("VARBINARY", type_oids.BYTEA), ("BLOB", type_oids.BYTEA)):
        if hasattr(DT, nm):
            m[getattr(DT, nm)] = o
    for nm in ("DECIMAL32", "DECIMAL64", "DECIMAL128", "BIGDECIMAL", "UDECIMAL"):
        if hasattr(DT, nm):
            m[getattr(DT, nm)] = type_oids.NUMERIC
    if t not in m:
        name = dt.sql(DIALECT).lower()
        oid = sqltypes.oid_by_name(name)
        if oid is None:
            raise PgError(UNDEFINED_OBJECT, f'type "{name}" does not exist')
        return oid, -1
    oid = m[t]
    typmod = -1
    if oid in (type_oids.VARCHAR, type_oids.BPCHAR) and params:
        typmod = num(params[0]) + 4
    elif oid == type_oids.BPCHAR and not params and t != getattr(DT, "BPCHAR", None):  # bare bpchar is unbounded
        typmod = 5
    elif oid == type_oids.NUMERIC and params:
        p = num(params[0])
        s = num(params[1]) if len(params) > 1 else 0
        typmod = ((p << 16) | s) + 4
    elif oid in (type_oids.TIME, type_oids.TIMETZ, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ) and params:
        typmod = min(num(params[0]), 6)
    if t == DT.FLOAT and params and num(params[0]) > 24:
        oid = type_oids.FLOAT8
    return oid, typmod


def parse_type_name(text: str) -> tuple[int, int]:
    oid = sqltypes.oid_by_name(text)
    if oid is not None:
        return oid, -1

    try:
        dt = exp.DataType.build(text, dialect=DIALECT)
    except Exception:
        raise PgError(UNDEFINED_OBJECT, f'type "{text}" does not exist') from None
    return datatype_to_oid(dt)


#: Catalog names of the nodes sqlglot still builds for PostgreSQL grammar
#: (``dialect._KEPT_FUNCTION_PARSERS``) and of the nodes the planner makes.
_NAME_MAP = {
    "STR_POSITION": "strpos", "GROUP_CONCAT": "string_agg", "SUBSTRING": "substr", "COALESCE": "coalesce",
    "EXPLODING_GENERATE_SERIES": "generate_series", "GENERATE_SERIES": "generate_series",
    "LOGICAL_AND": "bool_and", "LOGICAL_OR": "bool_or",
}


def func_name(node: exp.Func) -> str:
    """The function name as the user wrote it (PostgreSQL's case folding)."""
    if isinstance(node, exp.Anonymous):
        return node.this.lower() if isinstance(node.this, str) else ident(node.this)
    written = node.meta.get(WRITTEN_NAME)
    if written:
        return str(written).lower()
    n = node.sql_name()
    return _NAME_MAP.get(n, n.lower())


def func_args(node: exp.Func) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out = []
    for k in node.arg_types:
        v = node.args.get(k)
        if v is None or isinstance(v, bool):
            continue
        if isinstance(v, list):
            out.extend(v)
        elif isinstance(v, exp.Expression):
            out.append(v)
    return out


#: SQL keywords that are function calls without parentheses (sqlglot reads them as columns)
_KEYWORD_FUNCTIONS = frozenset({"user", "current_role"})


#: types among which PostgreSQL has an ``=`` of each pair (int24eq, float48eq, date_eq_timestamptz...)
_CROSS_TYPE_EQ = (
    frozenset({type_oids.INT2, type_oids.INT4, type_oids.INT8}),
    frozenset({type_oids.FLOAT4, type_oids.FLOAT8}),
    frozenset({type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ}),
)


def is_aggregate_call(node: exp.Expr) -> bool:
    """An aggregate call, whether sqlglot built its node or kept the written name."""
    if isinstance(node, exp.WithinGroup):       # also rank(...) WITHIN GROUP: a hypothetical-set aggregate
        return isinstance(node.this, exp.Func) and func_name(node.this) in HYPOTHETICAL
    return isinstance(node, exp.AggFunc) or (isinstance(node, exp.Func) and func_name(node) in AGGREGATES)


def aggregate_calls(node: exp.Expr) -> list[exp.Expr]:
    return [n for n in node.walk() if is_aggregate_call(n)]


WINDOW_FUNCS = set(WINDOW_SIGNATURES)


class ExprBinder:
    """Binds expressions against a scope.

    ``agg_mode``: None (no aggregation allowed), or a callback that handles
    aggregate calls and grouped column references (see planner).
    """

    def __init__(self, planner, scope: Scope, *, agg_handler: Callable | None = None,
                 window_handler: Callable | None = None, group_match: Callable | None = None,
                 allow_aggs: bool = False, context: str = "") -> None:
        self.p = planner
        self.scope = scope
        self.agg_handler = agg_handler
        self.window_handler = window_handler
        self.group_match = group_match
        self.context = context
        #: per node being bound, the explicit collations (COLLATE) its inputs carry (None: none yet)
        self._collations: list[list[collations.Explicit] | None] = []

    # ------------------------------------------------------------------
    def bind(self, node: exp.Expr) -> expr.Expr:
        if self.group_match is not None:
            m = self.group_match(node)
            if m is not None:
                return m
        frames = self._collations
        frames.append(None)
        try:
            e = self._bind_node(node)
        finally:
            explicit = frames.pop()
        if explicit is not None or type(node) is exp.Collate:
            self._carry_collation(node, e, explicit)
        return e

    def _bind_node(self, node: exp.Expr) -> expr.Expr:
        meth = getattr(self, "b_" + type(node).__name__, None)
        if meth is not None:
            try:
                return meth(node)
            except PgError as err:      # a cast or an operator that cannot be bound: placed at it
                position = bound_error_position(node, err)
                if position is None:
                    raise
                raise dataclasses.replace(err, position=position) from None
        if is_aggregate_call(node):
            return self.b_agg(node)
        if isinstance(node, exp.Func):
            return self.b_func(node)
        raise PgError(FEATURE_NOT_SUPPORTED, f"unsupported expression: {node.sql(DIALECT)[:80]}")

    def _carry_collation(self, node: exp.Expr, e: expr.Expr, explicit: list[collations.Explicit] | None) -> None:
        """PostgreSQL's derivation of explicit collations (parse_collate.c):
        the explicit collations of a node's inputs must agree (42P21, placed
        at the clause that disagrees), and one reaches the node's parent when
        the node's type has collations (``length(a COLLATE "C")`` carries none
        up). Every collation here compares alike, so only the error is
        PostgreSQL's to reproduce."""
        name = collations.merged_explicit(explicit) if explicit is not None else None
        if type(node) is exp.Collate:
            name = (collation_of(node.expression), call_position(node))
        frames = self._collations
        if frames and name is not None and collations.is_collatable(e.oid):
            parent = frames[-1]
            if parent is None:
                frames[-1] = [name]
            else:
                parent.append(name)

    def b_Paren(self, n):
        return self.bind(n.this)

    def b_Alias(self, n):
        return self.bind(n.this)

    def b_Column(self, n: exp.Column):
        name = ident(n.this) if isinstance(n.this, exp.Identifier) else None
        if isinstance(n.this, exp.Star):
            if n.args.get("table"):
                return self.whole_row_value(ident(n.args.get("table")))
            raise PgError(FEATURE_NOT_SUPPORTED, "* is not allowed here")
        if name is None:
            raise PgError(UNDEFINED_COLUMN, f'column "{n.sql(dialect="postgres")}" does not exist')
        table = ident(n.args.get("table")) if n.args.get("table") else None
        if table is None and name in _KEYWORD_FUNCTIONS and not n.this.args.get("quoted"):
            return self.call(name, [])       # USER and CURRENT_ROLE are reserved words: calls, never columns
        return self.resolve(name, table, n)

    def b_Identifier(self, n):
        return self.resolve(ident(n), None, n)

    def _array_subquery(self, q):
        """ARRAY(SELECT ...): the subquery's single column as one array."""
        q = q.this if isinstance(q, exp.Subquery) else q
        plan, corr = self.p.subplan(q, self.scope)
        et = plan.out[0].oid
        aoid = type_oids.ARRAY_OF.get(et, type_oids.ARRAY_OF[type_oids.TEXT])
        return expr.SubqueryExpr("array", plan, aoid, corr)

    def b_Operator(self, n):
        """psql's OPERATOR(pg_catalog.op) form."""
        op = str(n.args.get("operator") or "").split(".")[-1].strip()
        left, right = n.this, n.expression
        if op in ("~", "~*", "!~", "!~*"):
            a = self.bind(left)
            p = self.p.coerce(self.bind(right), type_oids.TEXT)
            if a.oid == type_oids.UNKNOWN:
                a = self.p.coerce(a, type_oids.TEXT)
            return expr.Like(a, p, ilike="*" in op, regex=True, negate=op.startswith("!"))
        if op in ("~~", "~~*", "!~~", "!~~*"):
            a = self.p.coerce(self.bind(left), type_oids.TEXT)
            return expr.Like(a, self.p.coerce(self.bind(right), type_oids.TEXT), ilike="*" in op, negate=op.startswith("!"))
        if isinstance(right, exp.Anonymous) and str(right.this).upper() in ("ANY", "SOME", "ALL") and \
                len(right.expressions) == 1:        # after OPERATOR(...), sqlglot reads ALL (...) as a call
            inner = right.expressions[0]
            inner = exp.Subquery(this=inner) if isinstance(inner, exp.Query) else exp.Paren(this=inner)
            right = (exp.All if str(right.this).upper() == "ALL" else exp.Any)(this=inner)
        if op in _COMPARISON_NODES and isinstance(right, (exp.Any, exp.All)):
            # x OPERATOR(pg_catalog.=) ANY (array[...]) (pg_dump's pattern queries): the operator's own form
            return self.bind(_COMPARISON_NODES[op](this=left, expression=right))
        if op in _COMPARISON_NODES:
            a, b = self.p.unify(self.bind(left), self.bind(right), "comparison")
            return expr.Compare("<>" if op == "!=" else op, a, b)
        if op in ("+", "-", "*", "/", "%"):
            return self.p.arith(op, self.bind(left), self.bind(right))
        raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {op}")

    def b_Collate(self, n):
        """Every collation splitstream honours compares by code point, as the
        default one does: the clause is checked, and the value unchanged."""
        e = self.bind(n.this)
        collations.check_collatable(e.oid, position=call_position(n))
        try:
            collation_of(n.expression)
        except PgError as err:      # an unknown collation: placed at the clause
            raise (dataclasses.replace(err, position=call_position(n)) if err.position is None else err) from None
        if type(e) is expr.ColRef:
            e = expr.ColRef(e.idx, e.oid, e.name, e.typmod)
            e.collated = True
        return e

    def b_ByteString(self, n):
        return expr.Const(n.this, type_oids.UNKNOWN)

    def b_RawString(self, n):
        """A dollar-quoted constant ($$...$$, $tag$...$tag$): a string of
        unknown type like '...', its text taken as it stands."""
        return expr.Const(n.this, type_oids.UNKNOWN)

    def b_Dot(self, n):
        if isinstance(n.expression, exp.Func):
            # schema-qualified function call: pg_catalog.f(...), or a user function's schema
            schema = ident(n.this.this) if isinstance(n.this, exp.Column) and not n.this.args.get("table") else \
                (ident(n.this) if isinstance(n.this, exp.Identifier) else None)
            builtin = f"{schema}.{func_name(n.expression)}"
            if builtin in functions.REGISTRY:           # PipelineDB's pipelinedb.version(), ...
                return self.call(builtin, [self.bind(a) for a in func_args(n.expression)])
            if builtin in functions.NOT_IMPLEMENTED:    # PipelineDB's pipelinedb.combine_table(), ...: 0A000
                functions.lookup(builtin, [])
            if schema is not None and schema not in ("pg_catalog", "information_schema"):
                if schema not in self.p.state.schemas:
                    raise PgError(UNDEFINED_SCHEMA, f'schema "{schema}" does not exist')
                return self.p.user_call(self, n.expression, func_name(n.expression), schema)
            return self.bind(n.expression)
        # schema.table.column or composite access: take the last part as column
        col = ident(n.expression)
        fields = row_binding.constructor_fields(n.this) if isinstance(n.this, exp.Paren) else None
        if fields is not None:          # (ROW(a, b)).f2: the constructor's fields are f1, f2, ...
            return row_binding.field_of(row_binding.bind_constructor(self.bind, fields), col)
        table = ident(n.this.this) if isinstance(n.this, exp.Column) else None
        if isinstance(n.this, exp.Paren) and isinstance(n.this.this, exp.Column) and not n.this.this.args.get("table"):
            table = ident(n.this.this.this)     # (new).x of an output stream, (t).x of a FROM item
        return self.resolve(col, table, n)

    def resolve(self, name: str, table: str | None, node) -> expr.Expr:
        scope: Scope | None = self.scope
        depth = 0
        while scope is not None:
            hits = scope.find(name, table)
            if len(hits) > 1:
                raise PgError(AMBIGUOUS_COLUMN, f'column reference "{name}" is ambiguous')
            if hits:
                c = scope.cols[hits[0]]
                if depth == 0:
                    if self.agg_handler is not None and self.group_match is not None:
                        raise PgError(GROUPING_ERROR,
                                      f'column "{(c.table + ".") if c.table else ""}{name}" must appear in the GROUP BY clause or be used in an aggregate function')
                    return expr.ColRef(hits[0], c.oid, name, c.typmod)
                s = self.scope
                for _ in range(depth):
                    s.correlated[0] = True
                    assert s.parent is not None  # the hit was found `depth` scopes up
                    s = s.parent
                idx = hits[0] if scope.grouped is None else self._grouped_outer(scope.grouped, hits[0], c, node)
                return expr.OuterRef(depth, idx, c.oid, name)
            scope = scope.parent
            depth += 1
        param = self.p.function_param(name, table)
        if param is not None:
            return param
        if table is not None:
            up: Scope | None = self.scope
            while up is not None:
                if up.has_table(table):
                    raise PgError(UNDEFINED_COLUMN, f"column {table}.{name} does not exist")
                up = up.parent
            raise PgError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{table}"')
        if any_scope_has_table(self.scope, name):
            return self.whole_row_value(name)
        raise PgError(UNDEFINED_COLUMN, f'column "{name}" does not exist')

    def whole_row_value(self, table: str) -> RowCtor:
        """``t`` (or ``t.*`` in an expression) naming a FROM item: its row,
        a record of its columns.  Refused where an outer join may NULL-extend
        the item (PostgreSQL's value is then NULL, not a row of NULLs) or
        where that is not known."""
        scope: Scope | None = self.scope
        while scope is not None and not scope.has_table(table):
            scope = scope.parent
        if scope is None or scope.null_extended is None or table in scope.null_extended:
            raise whole_row_refused(table)
        cols = [c for c in scope.cols if c.table == table and not c.hidden]
        try:
            return RowCtor([self.resolve(c.name, table, None) for c in cols], tuple(c.name for c in cols))
        except PgError as e:        # in a grouped query: the row is what must be grouped
            if e.sqlstate != GROUPING_ERROR:
                raise
            raise PgError(GROUPING_ERROR, f'column "{table}.*" must appear in the GROUP BY clause or be used in an '
                                          "aggregate function") from None

    def whole_row(self, node) -> json_values.RowObject | None:
        """``t`` or ``t.*`` naming a FROM item of this query level or one
        around it (not a column): its row as the JSON object row_to_json
        writes, or a row constructor's, its fields named f1, f2, ... as
        PostgreSQL names them; None for anything else."""
        fields = row_binding.constructor_fields(node)
        if fields is not None:
            ctor = row_binding.bind_constructor(self.bind, fields)
            return json_values.RowObject([f"f{i}" for i in range(1, len(ctor.args) + 1)], ctor.args)
        if not isinstance(node, exp.Column):
            return None
        star = isinstance(node.this, exp.Star)
        if not star and node.args.get("table"):
            return None
        table = ident(node.args.get("table")) if star else ident(node.this)
        scope: Scope | None = self.scope
        while scope is not None:
            if not star and scope.find(table, None):
                return None                 # a column of that name wins
            if scope.has_table(table):
                break
            scope = scope.parent
        cols = [c for c in scope.cols if c.table == table and not c.hidden] if scope is not None else []
        if not cols:
            return None
        refs = [self.bind(exp.Column(this=exp.to_identifier(c.name, quoted=True), table=exp.to_identifier(table, quoted=True)))
                for c in cols]
        return json_values.RowObject([c.name for c in cols], refs)

    def whole_row_json(self, name: str, nodes: list) -> expr.Expr:
        """A JSON function given FROM items' whole rows (``to_jsonb(t)``,
        ``json_build_object('r', t)``): each as the JSON object of its
        columns.  row_to_json takes only a row (record), and a boolean:
        anything else is PostgreSQL's 42883."""
        rows = [self.whole_row(a) for a in nodes]
        args = [r if r is not None else self.bind(a) for r, a in zip(rows, nodes)]

        def undefined() -> PgError:      # the rows named by their types, as PostgreSQL names them
            kinds = [self._row_type_name(a) if r is not None else signatures.type_words([x.oid])
                     for r, a, x in zip(rows, nodes, args)]
            return PgError(UNDEFINED_FUNCTION, f"function {name}({', '.join(kinds)}) does not exist",
                           hint=signatures.NO_MATCH_HINT)

        if name != "row_to_json":
            if name == "to_json" and len(args) == 1 and rows[0] is not None:
                return args[0]
            try:
                return self.call(name, args)
            except PgError as e:
                raise (undefined() if e.sqlstate == UNDEFINED_FUNCTION and any(rows) else e) from None
        literal = bool(args) and rows[0] is None and args[0].oid == type_oids.UNKNOWN     # NULL, or record_in's text
        if not 1 <= len(args) <= 2 or rows[0] is None and not literal or rows[1:] and rows[1] is not None \
                or len(args) == 2 and args[1].oid not in (type_oids.BOOL, type_oids.UNKNOWN):
            raise undefined()
        row = rows[0]
        if row is None:
            if not (isinstance(args[0], expr.Const) and args[0].value is None):
                raise PgError(FEATURE_NOT_SUPPORTED, "input of anonymous composite types is not implemented")
            return expr.Const(None, type_oids.JSON)        # (strict)
        return row if len(args) == 1 else json_values.pretty_row(row, self.p.coerce(args[1], type_oids.BOOL))

    def _row_type_name(self, node) -> str:
        """The type of a FROM item's whole row, as PostgreSQL names it: its
        table's or view's name (through an alias too), else record."""
        if not isinstance(node, exp.Column):
            return "record"
        table = ident(node.args.get("table")) if isinstance(node.this, exp.Star) else ident(node.this)
        return self.p.row_types.get(table) or "record"

    def _grouped_outer(self, keys: dict[int, int], idx: int, c: ScopeCol, node) -> int:
        """A subquery's reference to a column of the grouped query around it:
        the outer row is a group, so the column must be a group key (42803
        as PostgreSQL); an aggregate of it inside the subquery is the outer
        query's aggregate there, which is not implemented here (0A000)."""
        if idx in keys:
            return keys[idx]
        shown = f"{(c.table + '.') if c.table else ''}{c.name}"
        if self.context in ("aggregate function calls", "aggregate"):
            raise PgError(FEATURE_NOT_SUPPORTED, f'aggregate of the outer query\'s column "{shown}" inside a subquery is not supported',
                          hint="Compute the aggregate in the outer query and refer to it from the subquery.")
        raise PgError(GROUPING_ERROR, f'subquery uses ungrouped column "{shown}" from outer query',
                      position=node_position(node) if isinstance(node, exp.Expr) else None)

    # ----------------------------------------------------------- literals
    def b_Literal(self, n: exp.Literal):
        if n.is_string:
            literal = expr.Const(n.this, type_oids.UNKNOWN)
            if "start" in n.meta:
                literal.written_at = n.meta["start"] + 1
            return literal
        s = n.this
        try:
            if any(ch in s for ch in ".eE"):
                return expr.Const(decode_text(type_oids.NUMERIC, s), type_oids.NUMERIC)   # 1e20: scale 0, as input
            v = int(s)
            oid = sqltypes.int_literal_oid(v)
            return expr.Const(decimal.Decimal(v) if oid == type_oids.NUMERIC else v, oid)
        except (ValueError, decimal.InvalidOperation):
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{s}"') from None

    def b_Boolean(self, n):
        return expr.Const(bool(n.this), type_oids.BOOL)

    def b_Null(self, n):
        return expr.Const(None, type_oids.UNKNOWN)

    def b_Parameter(self, n):
        text = str(n.this.this if isinstance(n.this, exp.Literal) else n.name)
        if not (text.isascii() and text.isdigit()):      # "$" followed by a control character: the parser keeps it (fuzzing)
            raise PgError(SYNTAX_ERROR, 'syntax error at or near "$"')
        return self.p.param(int(text) - 1)

    def b_Placeholder(self, n):
        if n.this and str(n.this).isdigit():
            return self.p.param(int(n.this) - 1)
        raise PgError(SYNTAX_ERROR, "syntax error at or near \"?\"")

    def b_Interval(self, n: exp.Interval):
        text = n.this.this if isinstance(n.this, exp.Literal) else n.this.sql()
        unit = n.args.get("unit")
        if unit is not None:
            text = f"{text} {unit.name if hasattr(unit, 'name') else unit}"
        return expr.Const(decode_text(type_oids.INTERVAL, text), type_oids.INTERVAL)

    def b_Array(self, n: exp.Array):
        if len(n.expressions) == 1 and isinstance(n.expressions[0], (exp.Select, exp.Union, exp.Subquery)):
            return self._array_subquery(n.expressions[0])
        items = [self.bind(e) for e in n.expressions]
        et = type_oids.UNKNOWN
        for it in items:
            et = sqltypes.common_type(et, it.oid, "ARRAY") if et != type_oids.UNKNOWN else it.oid
        if et == type_oids.UNKNOWN:
            et = type_oids.TEXT
        items = [self.p.coerce(i, et) for i in items]
        nested = et in type_oids.ELEMENT_OF          # ARRAY[ARRAY[...], ...]: one more dimension
        aoid = et if nested else type_oids.ARRAY_OF.get(et, type_oids.ARRAY_OF[type_oids.TEXT])

        def impl(cols, nrows, ctx):
            lists = [c.to_pylist() for c in cols]
            rows = [[column[i] for column in lists] for i in range(nrows)]
            return Col.from_pylist([stack(r) for r in rows] if nested else rows, aoid)

        return expr.Func("array", impl, items, aoid)

    # ----------------------------------------------------------- operators
    def _arith(self, op, n):
        left, right = self.bind(n.this), self.bind(n.expression)
        return self.p.arith(op, left, right)

    def b_Add(self, n):
        return self._arith("+", n)

    def b_Sub(self, n):
        left, right = self.bind(n.this), self.bind(n.expression)
        if left.oid == type_oids.JSONB:
            return self.jsonb_minus(self, left, right)
        return self.p.arith("-", left, right)

    def b_Mul(self, n):
        return self._arith("*", n)

    def b_Div(self, n):
        return self._arith("/", n)

    def b_IntDiv(self, n):
        return self._arith("/", n)

    def b_Mod(self, n):
        return self._arith("%", n)

    def b_Pow(self, n):
        return self._arith("^", n)

    def b_Neg(self, n):
        a = self.bind(n.this)
        if isinstance(a, expr.Const) and a.value is not None and a.oid in (type_oids.INT4, type_oids.INT8, type_oids.NUMERIC, type_oids.FLOAT8):
            v = -a.value
            if a.oid == type_oids.INT8 and v == 2**31 * -1:
                return expr.Const(v, type_oids.INT4)
            if a.oid == type_oids.NUMERIC and isinstance(v, decimal.Decimal) and v == v.to_integral_value() and v.as_tuple().exponent == 0 and -(2**63) <= v:
                return expr.Const(int(v), type_oids.INT8)
            return expr.Const(v, a.oid)
        if a.oid == type_oids.UNKNOWN and isinstance(a, expr.Const):     # -'1', -NULL: every numeric - fits
            raise PgError(AMBIGUOUS_FUNCTION, "operator is not unique: - unknown",
                          hint="Could not choose a best candidate operator. You might need to add explicit type casts.")
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, type_oids.NUMERIC)
        if a.oid not in expr.NEGATABLE:
            raise expr.prefix_operator_missing("-", a.oid)
        return expr.Neg(a)

    def b_DPipe(self, n):
        left, right = self.bind(n.this), self.bind(n.expression)
        if left.oid in type_oids.ELEMENT_OF or right.oid in type_oids.ELEMENT_OF:
            left, right = self._array_concat_operands(left, right)
            aoid = left.oid if left.oid in type_oids.ELEMENT_OF else right.oid

            def impl(cols, nrows, ctx):
                a, b = cols[0].to_pylist(), cols[1].to_pylist()
                out = []
                for x, y in zip(a, b):     # anyarray || anyarray, anyarray || anyelement, anyelement || anyarray
                    if left.oid in type_oids.ELEMENT_OF and right.oid in type_oids.ELEMENT_OF:
                        out.append(concat(x, y))
                    else:
                        out.append(extend(x, y, False) if left.oid == aoid else extend(y, x, True))
                return Col.from_pylist(out, aoid)

            return expr.Func("array_cat", impl, [left, right], aoid)
        if left.oid in (type_oids.JSONB,) and right.oid in (type_oids.JSONB, type_oids.UNKNOWN):
            right = self.p.coerce(right, type_oids.JSONB)

            def jimpl(cols, nrows, ctx):
                out = []
                for x, y in zip(cols[0].to_pylist(), cols[1].to_pylist()):
                    if x is None or y is None:
                        out.append(None)
                        continue
                    a, b = json_functions.load(x), json_functions.load(y)
                    if isinstance(a, dict) and isinstance(b, dict):
                        a.update(b)
                        res = a
                    else:
                        res = (a if isinstance(a, list) else [a]) + (b if isinstance(b, list) else [b])

                    out.append(jsonb_text(res))
                return Col.from_pylist(out, type_oids.JSONB)

            return expr.Func("jsonb_concat", jimpl, [left, right], type_oids.JSONB)
        if type_oids.BYTEA in (left.oid, right.oid) and {left.oid, right.oid} <= {type_oids.BYTEA, type_oids.UNKNOWN}:
            return self.call("byteacat", [left, right])
        if type_oids.CHAR in (left.oid, right.oid) and sqltypes.is_string(left.oid) and sqltypes.is_string(right.oid):
            # "char" casts to text implicitly: text || text, anynonarray || text and text || anynonarray all fit
            raise PgError(AMBIGUOUS_FUNCTION, f"operator is not unique: {sqltypes.format_type(left.oid)} || {sqltypes.format_type(right.oid)}",
                          hint="Could not choose a best candidate operator. You might need to add explicit type casts.")
        if not (sqltypes.is_string(left.oid) or sqltypes.is_string(right.oid)):
            raise expr.operator_missing("||", left.oid, right.oid)    # text || anynonarray needs a text side
        if left.oid == type_oids.UNKNOWN:
            left = self.p.coerce(left, type_oids.TEXT)
        if right.oid == type_oids.UNKNOWN:
            right = self.p.coerce(right, type_oids.TEXT)
        return expr.Concat(left, right)

    def _array_concat_operands(self, left: expr.Expr, right: expr.Expr) -> tuple[expr.Expr, expr.Expr]:
        """The operands of anycompatiblearray || anycompatiblearray (or an
        element on one side), as PostgreSQL 15 resolves them: the elements'
        common type, an untyped literal or NULL next to an array read as the
        array (42883 when the types have nothing in common)."""
        elements = [type_oids.ELEMENT_OF.get(e.oid, e.oid) for e in (left, right) if e.oid != type_oids.UNKNOWN]
        try:
            common = elements[0]
            for other in elements[1:]:
                common = sqltypes.common_type(common, other, "ARRAY")
        except PgError:
            raise expr.operator_missing("||", left.oid, right.oid) from None
        aoid = type_oids.ARRAY_OF.get(common)
        if aoid is None:
            raise expr.operator_missing("||", left.oid, right.oid)
        return tuple(self.p.coerce(e, aoid if e.oid in type_oids.ELEMENT_OF or e.oid == type_oids.UNKNOWN else common)
                     for e in (left, right))  # type: ignore[return-value]

    def _cmp(self, op, n):
        rhs = n.expression
        if isinstance(rhs, exp.Anonymous) and str(rhs.this).lower() == "all" and len(rhs.expressions) == 1:
            rhs = exp.All(this=rhs.expressions[0])  # sqlglot reads ALL(array) as a function call
        if isinstance(rhs, (exp.Any, exp.All)):
            return self._any_all(op, n.this, rhs)
        rows = self._row_operands(n.this, rhs)
        if rows is not None:
            return row_binding.compare_rows(op, self.bind, self.compare_bound, *rows)
        return self.compare_bound(op, self.bind(n.this), self.bind(rhs))

    def _row_operands(self, left, right) -> tuple[list, list] | None:
        """The fields of two row constructors compared; None unless both
        sides are one (a row against another row value compares as records)."""
        lf, rf = row_binding.constructor_fields(left), row_binding.constructor_fields(right)
        if lf is not None and row_binding.is_row_subquery(right):     # ROW(a, b) = (SELECT x, y)
            raise row_binding.record_comparison_refused()
        return (lf, rf) if lf is not None and rf is not None else None

    def compare_bound(self, op: str, left: expr.Expr, right: expr.Expr) -> expr.Expr:
        """``left op right`` once bound: the types unified, 42883 where
        there is no such operator."""
        if type_oids.RECORD in (left.oid, right.oid):
            return row_binding.records_compared(op, left, right)
        try:
            left, right = self.p.unify(left, right, "comparison")
        except PgError as e:     # (unify words the missing operator as "=")
            if e.sqlstate != DATATYPE_MISMATCH and not e.message.startswith("operator does not exist: "):
                raise
            raise expr.operator_missing(op, left.oid, right.oid) from None
        if left.oid == type_oids.BPCHAR and right.oid == type_oids.BPCHAR:
            left, right = bpchar_operands(op, left, right)
        return expr.Compare(op, left, right)

    def b_EQ(self, n):
        return self._cmp("=", n)

    def b_NEQ(self, n):
        return self._cmp("<>", n)

    def b_GT(self, n):
        return self._cmp(">", n)

    def b_GTE(self, n):
        return self._cmp(">=", n)

    def b_LT(self, n):
        return self._cmp("<", n)

    def b_LTE(self, n):
        return self._cmp("<=", n)

    def b_NullSafeEQ(self, n):
        return self._distinct(n, negate=True)

    def b_NullSafeNEQ(self, n):
        return self._distinct(n, negate=False)

    def _distinct(self, n, negate: bool) -> expr.Expr:
        """``IS [NOT] DISTINCT FROM``: of two row constructors, field by field."""
        rows = self._row_operands(n.this, n.expression)
        if rows is not None:
            return row_binding.distinct_rows(self.bind, self.p.unify, *rows, negate=negate)
        left, right = self.bind(n.this), self.bind(n.expression)
        if type_oids.RECORD in (left.oid, right.oid):
            return row_binding.records_compared("IS NOT DISTINCT FROM" if negate else "IS DISTINCT FROM", left, right)
        left, right = self.p.unify(left, right, "comparison")
        return expr.IsDistinct(left, right, negate=negate)

    def _any_all(self, op, left, node):
        kind = "any" if isinstance(node, exp.Any) else "all"
        inner = node.this
        if isinstance(inner, exp.Paren):
            inner = inner.this
        fields = row_binding.constructor_fields(left)
        if isinstance(inner, (exp.Select, exp.Subquery, exp.Union)):
            q = inner.this if isinstance(inner, exp.Subquery) else inner
            plan, corr = self.p.subplan(q, self.scope)
            if fields is not None:
                return row_binding.quantified(op, kind, self.bind, self.p.unify, fields, plan, corr)
            a = self.bind(left)
            if a.oid == type_oids.RECORD:
                raise row_binding.record_comparison_refused()
            a = self.p.coerce(a, operand_type(a, plan.out[0].oid, "comparison")) if a.oid == type_oids.UNKNOWN else a
            return expr.SubqueryExpr(kind, plan, type_oids.BOOL, corr, arg=a, op=op)
        a = self.bind(left)
        arr = self.bind(inner)
        if type_oids.RECORD in (a.oid, arr.oid, type_oids.ELEMENT_OF.get(arr.oid)):
            raise row_binding.record_comparison_refused()
        if arr.oid == type_oids.UNKNOWN:
            arr = self.p.coerce(arr, type_oids.ARRAY_OF.get(a.oid, type_oids.ARRAY_OF[type_oids.TEXT]))
        et = type_oids.ELEMENT_OF.get(arr.oid, type_oids.TEXT)
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, operand_type(a, et, "comparison"))

        def impl(cols, nrows, ctx, _op=op, _kind=kind):
            av, arrs = cols[0], cols[1].to_pylist()
            out = []
            avals = av.to_pylist()
            for x, lst in zip(avals, arrs):
                if lst is None or (x is None and lst):
                    out.append(None)        # NULL op ANY('{}') is false, ALL true: no comparison is made
                    continue
                res = []
                for y in flat(lst):
                    if y is None:
                        res.append(None)
                    else:
                        c = expr.compare_cols(_op, Col.from_pylist([x], av.oid), Col.from_pylist([y], et))
                        res.append(bool(c.data[0]))
                if _kind == "any":
                    out.append(True if True in res else (None if None in res else False))
                else:
                    out.append(False if False in res else (None if None in res else True))
            return Col.from_pylist(out, type_oids.BOOL)

        return expr.Func(kind, impl, [a, arr], type_oids.BOOL)

    def b_And(self, n):
        return expr.And([self.p.coerce(self.bind(n.this), type_oids.BOOL), self.p.coerce(self.bind(n.expression), type_oids.BOOL)])

    def b_Or(self, n):
        return expr.Or([self.p.coerce(self.bind(n.this), type_oids.BOOL), self.p.coerce(self.bind(n.expression), type_oids.BOOL)])

    def b_Xor(self, n):
        left, right = self.bind(n.this), self.bind(n.expression)
        return expr.Compare("<>", self.p.coerce(left, type_oids.BOOL), self.p.coerce(right, type_oids.BOOL))

    def b_Not(self, n):
        return expr.Not(self.p.coerce(self.bind(n.this), type_oids.BOOL))

    def b_Is(self, n):
        rhs = n.expression
        neg = bool(n.args.get("negate"))
        a = self.bind(n.this)
        if isinstance(a, RowCtor) and isinstance(rhs, exp.Null):
            return row_binding.null_test(a.args, neg)
        if isinstance(rhs, exp.Null):
            return expr.IsNull(a, negate=neg)
        if isinstance(rhs, exp.Boolean):
            return expr.IsBool(self.p.coerce(a, type_oids.BOOL), bool(rhs.this), neg)
        if isinstance(rhs, (exp.Var, exp.Column)) and rhs.name.lower() == "unknown":
            return expr.IsBool(self.p.coerce(a, type_oids.BOOL), None, neg)
        raise PgError(SYNTAX_ERROR, f"syntax error at or near \"{rhs.sql()}\"")

    def b_Between(self, n):
        a = self.bind(n.this)
        lo, hi = self.bind(n.args["low"]), self.bind(n.args["high"])
        a1, lo = self.p.unify(a, lo, "comparison")
        a2, hi = self.p.unify(a, hi, "comparison")
        if n.args.get("symmetric"):
            return expr.Or([expr.And([expr.Compare(">=", a1, lo), expr.Compare("<=", a2, hi)]),
                         expr.And([expr.Compare(">=", a2, hi), expr.Compare("<=", a1, lo)])])
        return expr.And([expr.Compare(">=", a1, lo), expr.Compare("<=", a2, hi)])

    def b_In(self, n: exp.In):
        fields = row_binding.constructor_fields(n.this)
        q = n.args.get("query")
        if fields is not None and q is None:
            return row_binding.in_list(self.bind, self.compare_bound, fields, n.expressions)
        a = self.bind(n.this) if fields is None else None
        if q is not None:
            sub = q.this if isinstance(q, exp.Subquery) else q
            plan, corr = self.p.subplan(sub, self.scope)
            if fields is not None:
                return row_binding.in_subquery(self.bind, self.p.unify, fields, plan, corr)
            assert a is not None
            if len(plan.out) != 1:
                raise PgError(SYNTAX_ERROR, "subquery has too many columns")
            a = self.p.coerce(a, operand_type(a, plan.out[0].oid, "comparison")) if a.oid == type_oids.UNKNOWN else a
            return expr.SubqueryExpr("in", plan, type_oids.BOOL, corr, arg=a, op="=")
        assert a is not None
        items = [self.bind(e) for e in n.expressions]
        if type_oids.RECORD in (a.oid, *(i.oid for i in items)):       # x IN (r1, r2): x = r1 OR x = r2
            return expr.Or([self.compare_bound("=", a, i) for i in items]) if len(items) > 1 \
                else self.compare_bound("=", a, items[0])
        t = a.oid
        for it in items:
            if t == type_oids.UNKNOWN:
                t = it.oid
            elif it.oid != type_oids.UNKNOWN and it.oid != t:
                t = sqltypes.common_type(t, it.oid, "IN")
        if t == type_oids.UNKNOWN:
            t = type_oids.TEXT
        a = self.p.coerce(a, t)
        items = [self.p.coerce(i, t) for i in items]
        if t == type_oids.BPCHAR:
            if all(isinstance(i, expr.Const) for i in items) and a.typmod >= 4:
                items = [bpchar_operands("=", a, i)[1] for i in items]
            else:
                a, items = expr.Cast(a, type_oids.TEXT), [expr.Cast(i, type_oids.TEXT) for i in items]
        return expr.InList(a, items, negate=False)

    def _like(self, n, ilike=False, regex=False, negate=False):
        a = self.bind(n.this)
        p = self.p.coerce(self.bind(n.expression), type_oids.TEXT)
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, type_oids.TEXT)
        negate = negate or bool(n.args.get("negate"))  # sqlglot 30: NOT LIKE is Like(negate=True)
        return expr.Like(a, p, ilike=ilike, regex=regex, negate=negate)

    def b_Like(self, n):
        return self._like(n)

    def b_ILike(self, n):
        return self._like(n, ilike=True)

    def b_RegexpLike(self, n):
        return self._like(n, regex=True)

    def b_RegexpILike(self, n):
        return self._like(n, regex=True, ilike=True)

    def b_SimilarTo(self, n, escape: str | None = "\\"):
        a = self.p.coerce(self.bind(n.this), type_oids.TEXT)
        p = self.bind(n.expression)
        if isinstance(p, expr.Const):
            if p.value is None:
                return expr.Const(None, type_oids.BOOL)
            rx = similar_to_regex(p.value, escape)
            return expr.Like(a, expr.Const(rx, type_oids.TEXT), regex=True, negate=bool(n.args.get("negate")))
        raise PgError(FEATURE_NOT_SUPPORTED, "SIMILAR TO with a non-constant pattern is not supported")

    def b_Escape(self, n):
        inner = n.this
        esc = self.bind(n.expression)
        if isinstance(esc, expr.Const) and isinstance(esc.value, str) and len(esc.value) > 1:
            raise PgError("22025", "invalid escape string", hint="Escape string must be empty or one character.")
        if isinstance(inner, exp.SimilarTo) and isinstance(esc, expr.Const):
            return self.b_SimilarTo(inner, esc.value or None)
        e = self.bind(inner)
        if isinstance(e, expr.Like) and isinstance(esc, expr.Const):
            e.escape = esc.value or None
        return e

    def b_Case(self, n: exp.Case):
        subject = n.this
        whens = []
        results = []
        for if_ in n.args.get("ifs") or []:
            cond = if_.this
            if subject is not None:
                left, right = self.p.unify(self.bind(subject), self.bind(cond), "CASE")
                c = expr.Compare("=", left, right)
            else:
                c = self.p.coerce(self.bind(cond), type_oids.BOOL)
            whens.append(c)
            results.append(self.bind(if_.args["true"]))
        default = self.bind(n.args["default"]) if n.args.get("default") is not None else None
        t = type_oids.UNKNOWN
        for result in results + ([default] if default is not None else []):
            t = result.oid if t == type_oids.UNKNOWN else (sqltypes.common_type(t, result.oid, "CASE") if result.oid != type_oids.UNKNOWN else t)
        if t == type_oids.UNKNOWN:
            t = type_oids.TEXT
        results = [self.p.coerce(result, t) for result in results]
        if default is not None:
            default = self.p.coerce(default, t)
        return expr.Case(list(zip(whens, results)), default, t)

    def b_If(self, n):
        c = self.p.coerce(self.bind(n.this), type_oids.BOOL)
        a = self.bind(n.args["true"])
        b = self.bind(n.args["false"]) if n.args.get("false") is not None else expr.Const(None, type_oids.UNKNOWN)
        t = sqltypes.common_type(a.oid, b.oid, "CASE") if type_oids.UNKNOWN not in (a.oid, b.oid) else (a.oid if a.oid != type_oids.UNKNOWN else b.oid)
        if t == type_oids.UNKNOWN:
            t = type_oids.TEXT
        return expr.Case([(c, self.p.coerce(a, t))], self.p.coerce(b, t), t)

    def b_Coalesce(self, n):
        args = [self.bind(n.this)] + [self.bind(e) for e in n.expressions]
        t = type_oids.UNKNOWN
        for a in args:
            if a.oid != type_oids.UNKNOWN:
                t = a.oid if t == type_oids.UNKNOWN else sqltypes.common_type(t, a.oid, "COALESCE")
        if t == type_oids.UNKNOWN:
            t = type_oids.TEXT
        return expr.Coalesce([self.p.coerce(a, t) for a in args], t)

    def b_Nullif(self, n):
        """NULLIF(a, b) has the type of a as the ``=`` operator PostgreSQL
        picks receives it: a cross-type operator (int2 = int4, float4 =
        float8, date = timestamptz) leaves a as it is, so nullif(int2, int4)
        is int2, while int8 = numeric coerces both and gives numeric."""
        first, second = self.bind(n.this), self.bind(n.expression)
        a, b = self.p.unify(first, second, "NULLIF")
        kept = any({first.oid, second.oid} <= family for family in _CROSS_TYPE_EQ) or (
            first.oid == type_oids.FLOAT4 and a.oid == type_oids.FLOAT8)      # float48eq takes the real as it is
        value = first if kept else a
        return expr.Case([(expr.Compare("=", a, b), expr.Const(None, value.oid))], value, value.oid)

    def b_Cast(self, n: exp.Cast):
        oid, typmod = datatype_to_oid(n.to)
        return self.cast_to(self.bind(n.this), oid, typmod)

    def cast_to(self, a: expr.Expr, oid: int, typmod: int = -1) -> expr.Expr:
        """``a::type``: the explicit cast, 42846 when PostgreSQL has no pathway."""
        check_cast(a.oid, oid)
        if oid in _REG_INPUT and isinstance(a, expr.Const) and isinstance(a.value, str):
            return expr.Const(self.p.resolve_reg(oid, a.value), oid)
        if oid in REG_ARRAYS and isinstance(a, expr.Const) and isinstance(a.value, str):
            return self.p.reg_literal(a.value, oid)
        if oid in _REG_INPUT and (sqltypes.is_string(a.oid) or (isinstance(a, expr.Param) and a.oid == type_oids.UNKNOWN)):
            # a name known only at run time ($1::regclass): resolve it per value
            if isinstance(a, expr.Param) and a.oid == type_oids.UNKNOWN:
                a = self.p.param(a.idx, type_oids.TEXT)
            planner = self.p

            def reg_in(cols, n, ctx, _oid=oid):
                vals = cols[0].to_pylist()
                return Col.from_pylist([None if v is None else planner.resolve_reg(_oid, v) for v in vals], _oid)

            return expr.Func(f"{sqltypes.type_name(oid)}in", reg_in, [a], oid)
        if a.oid in (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGNAMESPACE, type_oids.REGROLE, type_oids.REGPROC) and sqltypes.is_string(oid):
            # 'x'::regclass::text is the name, as regclass prints
            def reg_out(cols, n, ctx):
                c = reg_names(cols[0], ctx)
                return Col.from_pylist(c.to_pylist(), type_oids.TEXT)

            a = expr.Func(f"{sqltypes.type_name(a.oid)}out", reg_out, [a], type_oids.TEXT)
            return a if oid == type_oids.TEXT and typmod < 0 else expr.Cast(a, oid, typmod)
        text_array = type_oids.ARRAY_OF[type_oids.TEXT]
        if a.oid in REG_OUTPUT and a.oid in type_oids.ELEMENT_OF and \
                (sqltypes.is_string(oid) or sqltypes.is_string(type_oids.ELEMENT_OF.get(oid, 0))):
            # regtype[]::text, ::text[]: the names, as regtype[] prints (pg_prepared_statements.parameter_types)
            def reg_array_out(cols, n, ctx):
                return Col.from_pylist(reg_names(cols[0], ctx).to_pylist(), text_array)

            a = expr.Func(f"{sqltypes.type_name(a.oid)}out", reg_array_out, [a], text_array)
            return a if oid == text_array and typmod < 0 else expr.Cast(a, oid, typmod)
        if isinstance(a, expr.Const) and a.value is not None and a.oid in (type_oids.UNKNOWN,):
            return self.p.coerce(a, oid, typmod)        # the literal read as the type (errors placed at it)
        if isinstance(a, expr.Const) and a.value is None:
            return expr.Const(None, oid, typmod)
        if isinstance(a, expr.Param) and a.oid == type_oids.UNKNOWN:
            a = self.p.param(a.idx, oid)
            if typmod < 0:
                return a
        return expr.Cast(a, oid, typmod)

    b_TryCast = b_Cast

    def b_Extract(self, n):
        field = n.this.name if hasattr(n.this, "name") else str(n.this)
        src = self.bind(n.expression)
        if src.oid == type_oids.UNKNOWN:        # date, time, timetz, timestamp, timestamptz, interval all fit
            raise PgError(AMBIGUOUS_FUNCTION, "function pg_catalog.extract(unknown, unknown) is not unique",
                          hint=AMBIGUOUS_HINT)
        args = [expr.Const(field.lower(), type_oids.TEXT), src]
        return expr.Func("extract", extract_impl, args, type_oids.NUMERIC)

    def b_AtTimeZone(self, n):
        """``v AT TIME ZONE z`` is timezone(z, v), overloads and all."""
        return self.call("timezone", [self.bind(n.args["zone"]), self.bind(n.this)])

    def b_CurrentTimestamp(self, n):
        if n.meta.get("now"):
            return expr.Func("now", functions.REGISTRY["now"].impl, [], type_oids.TIMESTAMPTZ)
        return self.call("current_timestamp", [self.bind(n.this)] if n.this is not None else [])

    def b_CurrentDate(self, n):
        return self.call("current_date", [])

    def b_Localtimestamp(self, n):
        return self.call("localtimestamp", [])

    def b_CurrentTime(self, n):
        return self.call("current_time", [])

    def b_Localtime(self, n):
        return self.call("localtime", [])

    def b_CurrentUser(self, n):
        return expr.Func("current_user", functions.REGISTRY["current_user"].impl, [], type_oids.NAME)

    def b_CurrentSchema(self, n):
        return expr.Func("current_schema", functions.REGISTRY["current_schema"].impl, [], type_oids.NAME)

    def b_SessionUser(self, n):
        return expr.Func("session_user", functions.REGISTRY["session_user"].impl, [], type_oids.NAME)

    def b_Trim(self, n):
        pos = (n.args.get("position") or "BOTH").upper()
        name = {"BOTH": "btrim", "LEADING": "ltrim", "TRAILING": "rtrim"}[pos]
        args = [self.bind(n.this)]
        if n.args.get("expression") is not None:
            args.append(self.bind(n.args["expression"]))
        return self.call(name, args)

    def b_Subquery(self, n):
        plan, corr = self.p.subplan(n.this, self.scope)
        if len(plan.out) != 1:
            raise PgError(SYNTAX_ERROR, "subquery must return only one column")
        return expr.SubqueryExpr("scalar", plan, plan.out[0].oid, corr)

    def b_Select(self, n):
        plan, corr = self.p.subplan(n, self.scope)
        return expr.SubqueryExpr("scalar", plan, plan.out[0].oid, corr)

    def b_Exists(self, n):
        q = n.this
        plan, corr = self.p.subplan(q.this if isinstance(q, exp.Subquery) else q, self.scope)
        return expr.SubqueryExpr("exists", plan, type_oids.BOOL, corr)

    def b_JSONExtract(self, n):
        return self._json_get(n, as_text=False)

    def b_JSONExtractScalar(self, n):
        return self._json_get(n, as_text=True)

    def b_JSONBExtract(self, n):
        return self._json_path(n, as_text=False)

    def b_JSONBExtractScalar(self, n):
        return self._json_path(n, as_text=True)

    def _json_path(self, n, as_text):
        """``#>`` / ``#>>``: follow a text[] path of keys and array indexes."""
        a = self.bind(n.this)
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, type_oids.JSONB)
        path = self.p.coerce(self.bind(n.expression), type_oids.ARRAY_OF[type_oids.TEXT])
        oid_out = type_oids.TEXT if as_text else (a.oid if a.oid in (type_oids.JSON, type_oids.JSONB) else type_oids.JSONB)

        def follow(doc, keys):
            if a.oid == type_oids.JSON:
                return json_spans.get(doc, keys, as_text)
            v = json_functions.load(doc)
            for k in keys:
                if isinstance(v, dict) and k in v:
                    v = v[k]
                elif isinstance(v, list):
                    try:
                        i = int(k)
                    except (TypeError, ValueError):
                        return None
                    if not -len(v) <= i < len(v):
                        return None
                    v = v[i]
                else:
                    return None
            if as_text:
                if v is None:
                    return None
                return v if isinstance(v, str) else jsonb_text(v)
            return jsonb_text(v)

        def impl(cols, nrows, ctx):
            return Col.from_pylist([None if d is None or k is None else follow(d, k)
                                    for d, k in zip(cols[0].to_pylist(), cols[1].to_pylist())], oid_out)

        return expr.Func("json_path", impl, [a, path], oid_out)

    def b_ArrayContainsAll(self, n):
        a, b = self.bind(n.this), self.bind(n.expression)
        if a.oid in (type_oids.JSONB, type_oids.UNKNOWN) and b.oid in (type_oids.JSONB, type_oids.UNKNOWN):
            a, b = self.p.coerce(a, type_oids.JSONB), self.p.coerce(b, type_oids.JSONB)

            def impl(cols, nrows, ctx):
                return Col.from_pylist([None if x is None or y is None else json_operators.jsonb_contains(x, y)
                                        for x, y in zip(cols[0].to_pylist(), cols[1].to_pylist())], type_oids.BOOL)

            return expr.Func("jsonb_contains", impl, [a, b], type_oids.BOOL)
        if b.oid == type_oids.UNKNOWN:
            b = self.p.coerce(b, a.oid)
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, b.oid)

        def aimpl(cols, nrows, ctx):
            return Col.from_pylist([None if x is None or y is None else all(v in x for v in y)
                                    for x, y in zip(cols[0].to_pylist(), cols[1].to_pylist())], type_oids.BOOL)

        return expr.Func("arraycontains", aimpl, [a, b], type_oids.BOOL)

    def b_JSONBContainsTopKey(self, n):
        a = self.p.coerce(self.bind(n.this), type_oids.JSONB)
        k = self.p.coerce(self.bind(n.expression), type_oids.TEXT)

        def has(doc, key):
            v = json.loads(doc)
            if isinstance(v, dict):
                return key in v
            if isinstance(v, list):
                return key in [x for x in v if isinstance(x, str)]
            return isinstance(v, str) and v == key

        def impl(cols, nrows, ctx):
            return Col.from_pylist([None if d is None or key is None else has(d, key)
                                    for d, key in zip(cols[0].to_pylist(), cols[1].to_pylist())], type_oids.BOOL)

        return expr.Func("jsonb_exists", impl, [a, k], type_oids.BOOL)

    def _json_get(self, n, as_text):
        a = self.bind(n.this)
        path = n.expression
        if isinstance(path, exp.JSONPath):
            parts = [p for p in path.expressions if not isinstance(p, exp.JSONPathRoot)]
            key = parts[0].this if parts else None
        else:
            key = self.bind(path)
        oid_out = type_oids.TEXT if as_text else (a.oid if a.oid in (type_oids.JSON, type_oids.JSONB) else type_oids.JSONB)
        if a.oid == type_oids.UNKNOWN:
            a = self.p.coerce(a, type_oids.JSONB)

        def get(doc, k):
            if doc is None or k is None:
                return None
            if a.oid == type_oids.JSON:
                return json_spans.member(doc, k, as_text)
            v = json_functions.load(doc)
            if not isinstance(v, (list, dict)) and isinstance(k, int):
                v = [v]     # jsonb keeps a scalar as a one-element raw array: -> 0 finds it
            try:
                if isinstance(v, list):
                    r = v[int(k)] if -len(v) <= int(k) < len(v) else None
                elif isinstance(v, dict):
                    r = v.get(str(k))
                else:
                    return None
            except (ValueError, TypeError):
                return None
            found = (isinstance(v, dict) and str(k) in v) or (isinstance(v, list) and -len(v) <= int(k) < len(v))
            if not found:
                return None
            if as_text:
                if r is None:
                    return None
                return r if isinstance(r, str) else jsonb_text(r)
            return jsonb_text(r)

        if isinstance(key, expr.Expr):
            def impl(cols, nrows, ctx):
                return Col.from_pylist([get(d, k) for d, k in zip(cols[0].to_pylist(), cols[1].to_pylist())], oid_out)

            return expr.Func("json_get", impl, [a, key], oid_out)

        def impl1(cols, nrows, ctx, _k=key):
            return Col.from_pylist([get(d, _k) for d in cols[0].to_pylist()], oid_out)

        return expr.Func("json_get", impl1, [a], oid_out)

    def b_Bracket(self, n):
        a = self.bind(n.this)
        if a.oid == signatures.ANYARRAY:    # pg_stats.histogram_bounds and the like, as PostgreSQL
            raise PgError(DATATYPE_MISMATCH, "cannot subscript type anyarray because it does not support subscripting",
                          hint=signatures.ANYARRAY_HINT)
        ix = n.expressions[0]
        if isinstance(ix, exp.Slice):
            return bind_slice(self, a, ix)
        if isinstance(ix, exp.Literal) and not ix.is_string:
            # sqlglot stores literal subscripts 0-based (it subtracted PostgreSQL's offset 1)
            idx = expr.Const(int(ix.this) + 1, type_oids.INT4)
        else:
            idx = self.p.coerce(self.bind(ix), type_oids.INT4)
        et = type_oids.ELEMENT_OF.get(a.oid, type_oids.TEXT)

        def impl(cols, nrows, ctx):
            out = []
            for arr, i in zip(cols[0].to_pylist(), cols[1].to_pylist()):
                hit = arr[i - 1] if arr is not None and i is not None and 1 <= i <= len(arr) else None
                out.append(None if isinstance(hit, list) else hit)   # too few subscripts of a multidimensional array
            return Col.from_pylist(out, et)

        return expr.Func("subscript", impl, [a, idx], et)

    def b_Tuple(self, n):
        if len(n.expressions) == 1:
            return self.bind(n.expressions[0])
        return row_binding.bind_constructor(self.bind, n.expressions)

    def b_Distinct(self, n):
        raise PgError(SYNTAX_ERROR, "DISTINCT is not allowed here")

    def b_Star(self, n):
        raise PgError(SYNTAX_ERROR, "syntax error at or near \"*\"")

    def b_Var(self, n):
        return self.resolve(n.name.lower(), None, n)

    def b_Window(self, n):
        if self.window_handler is None:
            if self.context in ("aggregate function calls", "aggregate", "aggregate ORDER BY"):
                raise PgError(GROUPING_ERROR, "aggregate function calls cannot contain window function calls")
            raise PgError(WINDOWING_ERROR, "window functions are not allowed here")
        return self.window_handler(n, self)

    def b_Filter(self, n):
        call = n.this.this if isinstance(n.this, exp.WithinGroup) else n.this
        if call is n.this and func_name(call) in HYPOTHETICAL:
            return self.b_func(call)           # rank(1) FILTER (...): WITHIN GROUP is required
        if not is_aggregate_call(call) and func_name(call) in functions.REGISTRY:
            raise not_an_aggregate("FILTER", call)
        return self.b_agg(n)

    def b_WithinGroup(self, n):
        name = func_name(n.this)
        if name not in ORDERED_SET_NAMES and name in functions.REGISTRY:
            # lower(x) WITHIN GROUP (ORDER BY y) looks for lower(x, y)
            args = [a for a in func_args(n.this) if not isinstance(a, exp.Star)] + [o.this for o in n.expression.expressions]
            raise signatures.undefined(name, [self.bind(a).oid for a in args])
        return self.b_agg(n)

    def b_agg(self, n):
        if self.agg_handler is None:
            raise PgError(GROUPING_ERROR, f"aggregate functions are not allowed in {self.context or 'this context'}"
                          if self.context else "aggregate functions are not allowed here")
        return self.agg_handler(n, self)

    def b_GroupConcat(self, n):
        return self.b_agg(n)

    # ----------------------------------------------------------- functions
    def b_func(self, n: exp.Func):
        name = func_name(n)
        if name in AGGREGATES:
            return self.b_agg(n)
        modifier = call_modifier(n)
        if name in WINDOW_FUNCS:
            given = [a for a in func_args(n) if not isinstance(a, exp.Star)]
            if name in HYPOTHETICAL and (modifier or given):     # rank(1): the aggregate, without WITHIN GROUP
                raise PgError(WRONG_OBJECT_TYPE, f"WITHIN GROUP is required for ordered-set aggregate {name}",
                              position=call_position(n))
            arg_oids = [a.oid for a in map(self.bind, given)]
            if all(s.expand(len(arg_oids)) is None for s in signatures.parse(WINDOW_SIGNATURES[name])):
                raise signatures.undefined(name, arg_oids)
            raise PgError(WRONG_OBJECT_TYPE, f"window function {name} requires an OVER clause", position=call_position(n))
        if modifier and name in functions.REGISTRY:
            raise not_an_aggregate(modifier, n)
        if name == "row" and isinstance(n, exp.Anonymous):
            return row_binding.bind_constructor(self.bind, func_args(n))
        if name in WHOLE_ROW_JSON and not named_args.has_named(func_args(n)):
            return self.whole_row_json(name, func_args(n))
        if name == "set_config":
            args = [self.p.coerce(self.bind(a), t) for a, t in zip(func_args(n), (type_oids.TEXT, type_oids.TEXT, type_oids.BOOL))]

            def impl(cols, nrows, ctx):
                # as SET [LOCAL] inside the statement's transaction: undone if it fails,
                # a local value ends with it (at once outside a transaction block)
                return Col.from_pylist(set_config_rows(ctx.engine_session, ctx, *(c.to_pylist() for c in cols)),
                                       type_oids.TEXT)

            return expr.Func("set_config", impl, args, type_oids.TEXT, volatile=True)
        if name == "current_setting":
            args = [self.p.coerce(self.bind(a), type_oids.TEXT) if i == 0 else self.p.coerce(self.bind(a), type_oids.BOOL)
                    for i, a in enumerate(func_args(n))]

            def impl2(cols, nrows, ctx):
                flags = cols[1].to_pylist() if len(cols) > 1 else None
                return Col.from_pylist(current_setting_rows(ctx.engine_session, cols[0].to_pylist(), flags),
                                       type_oids.TEXT)

            return expr.Func("current_setting", impl2, args, type_oids.TEXT, volatile=True)
        if name in ("nextval", "currval", "setval", "lastval"):
            return self.p.sequence_func(name, [self.bind(a) for a in func_args(n)])
        if name in CATALOG_FUNCTIONS:
            return self.p.catalog_func(name, [self.bind(a) for a in func_args(n)])
        if name in functions.REGISTRY and self.p.state.functions.get(name) and \
                not self.p.user_exact_match(name, [self.bind(a).oid for a in func_args(n)]):
            try:       # pg_catalog comes first in the search path: a built-in overload that fits wins
                return self.call(name, [self.bind(a) for a in func_args(n)])
            except PgError as e:
                if e.sqlstate != UNDEFINED_FUNCTION:
                    raise
        user = self.p.user_call(self, n, name)
        if user is not None:
            return user
        if name in functions.NOT_IMPLEMENTED and name not in functions.REGISTRY:
            functions.lookup(name, [])      # 0A000 before its arguments meet a grouping check (corr(x, y))
        nodes = func_args(n)
        if named_args.has_named(nodes):     # make_interval(days => 3)
            def type_name(v) -> str:
                return signatures.type_words([self.bind(v).oid])
            try:
                return self.call(name, [self.bind(a) for a in named_args.positional(name, nodes, type_name)])
            except PgError as e:
                if e.sqlstate != UNDEFINED_FUNCTION:
                    raise
                raise named_args.no_such_call(name, nodes, type_name) from None
        args = [self.bind(a) for a in nodes]
        try:
            return self.call(name, args)
        except PgError as e:
            cast = self._function_style_cast(name, args) if e.sqlstate == UNDEFINED_FUNCTION else None
            if cast is None:
                raise
            return cast

    def _function_style_cast(self, name: str, args: list[expr.Expr]) -> expr.Expr | None:
        """``int4(x)``, ``text(x)``, ``timestamptz('...')``: a call of one
        argument named as a type is its cast (``cast_paths.function_style_cast``
        says when, as PostgreSQL's func_get_detail does); None otherwise."""
        target = _TYPE_BY_NAME.get(name)
        if target is None or len(args) != 1 or not function_style_cast(args[0], target, name):
            return None
        return self.cast_to(args[0], target)

    def call(self, name: str, args: list[expr.Expr]) -> expr.Expr:
        """Bind a call of the catalog function ``name`` (as written)."""
        fd, want, oid = functions.resolve(name, [a.oid for a in args])
        if want is not None:
            args = [a if t is None or t == type_oids.ANY else self.p.coerce(a, t)
                    for a, t in zip(args, want + [None] * (len(args) - len(want)))]
        if fd.name != "pg_typeof":           # pg_typeof('x') is unknown, as the literal is
            args = [self.p.coerce(a, type_oids.TEXT) if a.oid == type_oids.UNKNOWN else a for a in args]
        if oid < 0:
            oid = fd.result([a.oid for a in args])
        if oid == 0:
            oid = args[0].oid if args else type_oids.UNKNOWN
        return expr.Func(name, fd.impl_for(oid), args, oid, fd.volatile)


def bpchar_operands(op: str, left: expr.Expr, right: expr.Expr) -> tuple[expr.Expr, expr.Expr]:
    """char(n) compares without its trailing blanks.  Stored char(n) values are
    padded to n, so equality with a constant is an exact match against the
    constant padded to n (no per-row work); anything else compares the
    blank-stripped text."""
    if op in ("=", "<>"):
        for a, b, swap in ((left, right, False), (right, left, True)):
            if isinstance(b, expr.Const) and a.typmod >= 4 and isinstance(b.value, str):
                v = b.value.rstrip(" ")
                if len(v) <= a.typmod - 4:
                    v = v.ljust(a.typmod - 4)
                c = expr.Const(v, type_oids.BPCHAR, a.typmod)
                return (c, a) if swap else (a, c)
    return expr.Cast(left, type_oids.TEXT, explicit=False), expr.Cast(right, type_oids.TEXT, explicit=False)


