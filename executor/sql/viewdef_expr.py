"""pg_get_viewdef's expressions: ruleutils' get_rule_expr over the parsed view.

Types are inferred as PostgreSQL's parser would assign them (catalog column
types, literal types, operator and function resolution), since the casts it
inserts are part of what ruleutils prints; parentheses follow isSimpleNode in
pretty mode and surround every operator in plain mode.  The query layout
(clauses, FROM, target lists) is viewdef.py's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as T
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import PgError

from ..execution import functions, signatures
from ..execution.proc_catalog import AGGREGATE_SIGNATURES
from .binder import datatype_to_oid, func_args, func_name, ident
from .dialect import DIALECT

STD, JOIN, VAR = 8, 4, 4        # PRETTYINDENT_STD / _JOIN / _VAR
UNKNOWN = T.UNKNOWN
_INTS = (T.INT2, T.INT4, T.INT8)
_STRINGS = (T.TEXT, T.VARCHAR, T.BPCHAR, T.NAME)

_OPS: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.DPipe: "||",
    exp.Like: "~~", exp.ILike: "~~*", exp.RegexpLike: "~", exp.RegexpILike: "~*",
}
_COMPARISONS = ("=", "<>", ">", ">=", "<", "<=", "~~", "~~*", "!~~", "!~~*", "~", "~*", "!~", "!~*")
_TEXT_OPS = ("~~", "~~*", "!~~", "!~~*", "~", "~*", "!~", "!~*", "||")
_TIMETZ = 1266      # pg_type's timetz (CURRENT_TIME's type)
#: SQL value functions: keywords, no parentheses (SQLValueFunction)
_SQL_VALUES: dict[type, str] = {exp.Localtimestamp: "LOCALTIMESTAMP", exp.Localtime: "LOCALTIME",
                                exp.CurrentUser: "CURRENT_USER", exp.CurrentSchema: "CURRENT_SCHEMA",
                                exp.CurrentTime: "CURRENT_TIME"}
_SQL_VALUE_TYPES: dict[type, int] = {exp.Localtimestamp: T.TIMESTAMP, exp.Localtime: T.TIME, exp.CurrentTime: _TIMETZ}
_SQL_SYNTAX: dict[type, str] = {exp.Coalesce: "COALESCE", exp.Greatest: "GREATEST", exp.Least: "LEAST", exp.Nullif: "NULLIF"}


class Unsupported(Exception):
    """A construct this printer does not reproduce: the caller shows the stored text."""


@dataclass
class Rte:
    """A range-table entry: the name columns are qualified by, and its columns."""

    refname: str
    columns: list[tuple[str, int]]
    #: columns * leaves out (a stream's arrival_timestamp)
    hidden: frozenset[str] = frozenset()

    def find(self, name: str) -> int | None:
        for n, oid in self.columns:
            if n == name:
                return oid
        return None


@dataclass
class Ctx:
    state: object
    pretty: bool
    buf: str = ""
    indent: int = 0
    scopes: list[list[Rte]] = field(default_factory=list)

    def keyword(self, text: str, before: int, after: int, plus: int) -> None:
        """appendContextKeyword: newline and indentation before a clause word."""
        self.indent += before
        self.buf = self.buf.rstrip(" ") + "\n" + " " * (max(self.indent, 0) + plus) + text
        self.indent = max(self.indent + after, 0)


# ------------------------------------------------------------------ types

def _type_name(oid: int, typmod: int = -1) -> str:
    return sqltypes.format_type(oid, typmod)


def _arith_type(op: str, a: int, b: int) -> tuple[int, int | None, int | None]:
    """(result type, cast for left, cast for right) of a binary operator over
    types a and b, by PostgreSQL's operator resolution for the common types."""
    if a == UNKNOWN and b == UNKNOWN:
        a = b = T.TEXT
    elif a == UNKNOWN:
        a = T.TEXT if op in _TEXT_OPS and b in _STRINGS else b
    elif b == UNKNOWN:
        b = T.TEXT if op in _TEXT_OPS and a in _STRINGS else a
    ca = cb = None
    res = a
    if {a, b} == {T.TIMESTAMP, T.TIMESTAMPTZ} and op in ("-", "+"):
        # no cross-type arithmetic: the timestamp is cast to timestamptz
        ca = T.TIMESTAMPTZ if a == T.TIMESTAMP else None
        cb = T.TIMESTAMPTZ if b == T.TIMESTAMP else None
        res = T.INTERVAL if op == "-" else T.TIMESTAMPTZ
    elif a in _INTS and b in _INTS:
        res = max(a, b, key=_INTS.index)
    elif a in _INTS + (T.NUMERIC,) and b in _INTS + (T.NUMERIC,):
        res = T.NUMERIC
        ca = T.NUMERIC if a != T.NUMERIC else None
        cb = T.NUMERIC if b != T.NUMERIC else None
    elif a in (T.FLOAT4, T.FLOAT8) or b in (T.FLOAT4, T.FLOAT8):
        if a == b:
            res = a
        elif {a, b} == {T.FLOAT4, T.FLOAT8}:
            res = T.FLOAT8        # cross-type float48 operators
        else:
            res = T.FLOAT8
            ca = T.FLOAT8 if a not in (T.FLOAT4, T.FLOAT8) else (T.FLOAT8 if a == T.FLOAT4 else None)
            cb = T.FLOAT8 if b not in (T.FLOAT4, T.FLOAT8) else (T.FLOAT8 if b == T.FLOAT4 else None)
    elif a in _STRINGS and b in _STRINGS:
        res = T.TEXT
        if a != b or a != T.TEXT:
            ca = T.TEXT if a != T.TEXT else None
            cb = T.TEXT if b != T.TEXT else None
            if a == b == T.BPCHAR:
                ca = cb = None
                res = T.BPCHAR
    if op in _COMPARISONS:
        res = T.BOOL
    elif op == "||":
        res = T.TEXT
    return res, ca, cb


# ------------------------------------------------------------------ the printer


class ExprPrinter:
    """get_rule_expr and its helpers; :class:`viewdef.Printer` adds the queries."""

    def __init__(self, state, pretty: bool, depends_on: tuple[int, ...] = (),
                 search_path: list[str] | None = None) -> None:
        self.state = state
        self.depends_on = depends_on
        self.search_path = ["public"] if search_path is None else search_path
        #: the session's TimeZone (timestamptz constants are shown in it)
        self.zone = "UTC"
        #: the WITH queries in scope: name -> their (name, type) columns
        self.ctes: dict[str, list[tuple[str, int]]] = {}
        self.c = Ctx(state, pretty)
        #: columns printed qualified by their range-table name (ruleutils' varprefix: a view's
        #: query); a CHECK constraint or default over one table prints them bare
        self.varprefix = True

    # -- queries ---------------------------------------------------------


    def query(self, q: exp.Expression, start: int, names: list[str] | None, visible: bool) -> None:
        raise NotImplementedError

    def range_table(self, q: exp.Select) -> list[Rte]:
        raise NotImplementedError

    def resolve(self, col: exp.Column) -> tuple[str, str, int]:
        """(range-table name, column name, type) of a column reference."""
        name = ident(col.this)
        table = ident(col.args.get("table")) if col.args.get("table") else None
        for scope in reversed(self.c.scopes):
            for rte in scope:
                if table is not None and rte.refname != table:
                    continue
                oid = rte.find(name)
                if oid is not None:
                    return rte.refname, name, oid
        raise Unsupported(f"column {name}")

    def column_name(self, e: exp.Expression) -> str | None:
        return self.resolve(e)[1] if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star) else None

    def figure_name(self, e: exp.Expression) -> str:
        """FigureColname: the name PostgreSQL gives an output column."""
        if isinstance(e, exp.Alias):
            return e.alias
        if isinstance(e, exp.Column):
            return ident(e.this)
        if isinstance(e, (exp.JSONExtract, exp.JSONExtractScalar)):
            return "?column?"       # an operator
        if isinstance(e, exp.Cast):     # the operand's name, else the type's
            inner = self.figure_name(e.this)
            return inner if inner != "?column?" else sqltypes.TYPE_NAMES.get(datatype_to_oid(e.to)[0], "?column?")
        if isinstance(e, exp.Case):
            return "case"
        if type(e) in _SQL_SYNTAX:
            return _SQL_SYNTAX[type(e)].lower()
        if isinstance(e, (exp.Window, exp.Filter)):
            return self.figure_name(e.this)
        if isinstance(e, exp.Func) and not isinstance(e, exp.Binary):
            return func_name(e)
        return "?column?"

    # -- expressions -------------------------------------------------------

    def expr_text(self, e: exp.Expression, want: int | None = None) -> str:
        outer = self.c.buf
        self.c.buf = ""
        self.expr(e, want, False)
        text, self.c.buf = self.c.buf, outer
        return text

    def type_of(self, e: exp.Expression) -> int:
        """The type PostgreSQL's parser gives ``e`` (UNKNOWN for an untyped string literal)."""
        if isinstance(e, exp.Paren):
            return self.type_of(e.this)
        if isinstance(e, exp.Column):
            return self.resolve(e)[2]
        if isinstance(e, exp.Literal):
            if e.is_string:
                return UNKNOWN
            return _number_type(str(e.this))
        if isinstance(e, exp.Neg):
            return self.type_of(e.this)
        if isinstance(e, exp.Null):
            return UNKNOWN
        if isinstance(e, exp.Boolean):
            return T.BOOL
        if isinstance(e, exp.Cast):
            return datatype_to_oid(e.to)[0]
        if isinstance(e, (exp.And, exp.Or, exp.Not, exp.Is, exp.In, exp.Between, exp.Exists, exp.NullSafeEQ,
                          exp.NullSafeNEQ)):
            return T.BOOL
        op = _OPS.get(type(e))
        if op is not None:
            return _arith_type(op, self.type_of(e.this), self.type_of(e.expression))[0]
        if isinstance(e, exp.Case):
            for w in e.args.get("ifs") or []:
                t = self.type_of(w.args["true"])
                if t != UNKNOWN:
                    return t
            d = e.args.get("default")
            t = self.type_of(d) if d is not None else UNKNOWN
            return T.TEXT if t == UNKNOWN else t
        if isinstance(e, tuple(_SQL_SYNTAX)):
            args = [e.this] + list(e.expressions) if not isinstance(e, exp.Nullif) else [e.this]
            types = [self.type_of(a) for a in args]
            known = [t for t in types if t != UNKNOWN]
            return _common(known) if known else T.TEXT
        if isinstance(e, exp.WithinGroup):
            return self.within_group_types(e)[2]
        if isinstance(e, (exp.Window, exp.Filter)):
            return self.type_of(e.this)
        if isinstance(e, exp.Interval):
            return T.INTERVAL
        if isinstance(e, (exp.Escape, exp.SimilarTo)):
            return T.BOOL
        if isinstance(e, exp.JSONExtractScalar):
            return T.TEXT
        if isinstance(e, exp.JSONExtract):
            return self.type_of(e.this)
        if isinstance(e, exp.Bracket):
            return T.ELEMENT_OF.get(self.type_of(e.this), UNKNOWN)
        if isinstance(e, exp.AtTimeZone):
            return T.TIMESTAMP if self.type_of(e.this) == T.TIMESTAMPTZ else T.TIMESTAMPTZ
        if isinstance(e, exp.Collate):
            return self.type_of(e.this)
        if type(e) in _SQL_VALUES:
            return _SQL_VALUE_TYPES.get(type(e), T.NAME)
        if isinstance(e, exp.Array):
            return T.ARRAY_OF.get(self._array_elem(e), UNKNOWN)
        if isinstance(e, exp.Trim):
            return T.TEXT
        if isinstance(e, exp.Subquery):
            sub = type(self)(self.state, self.c.pretty, self.depends_on, self.search_path)
            sub.c.scopes = self.c.scopes + [sub.range_table(e.this)]
            first = e.this.expressions[0]
            return sub.type_of(first.this if isinstance(first, exp.Alias) else first)
        if isinstance(e, exp.Func):
            return self.call(e)[2]
        return UNKNOWN

    def call(self, e: exp.Func) -> tuple[str, list[exp.Expression], int, list[int | None]]:
        """(name, arguments, result type, each argument's parameter type)."""
        name = func_name(e)
        args = [x for a in func_args(e) if not isinstance(a, exp.Star)
                for x in (a.expressions if isinstance(a, exp.Distinct) else [a])]
        args = [a.this if isinstance(a, exp.Order) else a for a in args]     # agg(x ORDER BY ...): x
        types = [self.type_of(a) for a in args]
        if name == "count":
            return name, args, T.INT8, [None] * len(args)
        if name in ("sum", "avg", "min", "max"):
            t = types[0] if types else UNKNOWN
            res = {"sum": {T.INT2: T.INT8, T.INT4: T.INT8, T.INT8: T.NUMERIC},
                   "avg": {T.INT2: T.NUMERIC, T.INT4: T.NUMERIC, T.INT8: T.NUMERIC, T.FLOAT4: T.FLOAT8}}.get(name, {})
            return name, args, res.get(t, t), [None] * len(args)
        if name in AGGREGATE_SIGNATURES:     # an aggregate's declared overloads (string_agg(text, text), ...)
            try:
                expanded, result = signatures.select(name, signatures.parse(AGGREGATE_SIGNATURES[name]),
                                                     [T.TEXT if t == UNKNOWN else t for t in types])
            except PgError:
                return name, args, UNKNOWN, [None] * len(args)
            return name, args, result if result != T.ANY else (types[0] if types else UNKNOWN), \
                [None if t == T.ANY else t for t in expanded] + [None] * (len(args) - len(expanded))
        try:     # an untyped literal takes the parameter's type, as PostgreSQL resolves it (date_bin('5 min', ...))
            fd, want, oid = functions.resolve(name, types)
        except Exception:
            try:
                fd, want, oid = functions.resolve(name, [T.TEXT if t == UNKNOWN else t for t in types])
            except Exception:
                return name, args, UNKNOWN, [None] * len(args)
        if oid < 0:
            oid = fd.result([t if t != UNKNOWN else T.TEXT for t in (want or types)])
        if oid == 0:
            oid = (want or types or [UNKNOWN])[0]
        params: list[int | None] = list(want) if want is not None else [None] * len(args)
        params += [None] * (len(args) - len(params))
        return name, args, oid, params

    def expr(self, e: exp.Expression, want: int | None, showimplicit: bool, top: bool = False,
             parent: exp.Expression | None = None) -> None:
        """get_rule_expr: ``want`` is the type the context coerces ``e`` to (an
        implicit cast, printed when ``showimplicit``)."""
        c = self.c
        if isinstance(e, exp.Paren):
            return self.expr(e.this, want, showimplicit, top, parent)
        own = self.type_of(e)
        if want is not None and own not in (UNKNOWN, want) and not _binary_compatible(own, want):
            if showimplicit:
                self.coercion(e, want, parent)
            else:
                self.expr(e, None, False, top, parent)
            return
        if isinstance(e, (exp.Literal, exp.Null)) or isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) \
                and not e.this.is_string:
            c.buf += self.const(e, want if want is not None else (T.TEXT if own == UNKNOWN else own))
            return
        if isinstance(e, exp.Boolean):
            c.buf += "true" if e.this else "false"
            return
        if isinstance(e, exp.Column):
            rte, name, _ = self.resolve(e)
            c.buf += f"{_quote_ident(rte)}.{_quote_ident(name)}" if self.varprefix else _quote_ident(name)
            return
        if isinstance(e, exp.Neg):
            self._open_plain()
            c.buf += "- "
            self.expr(e.this, None, False, parent=e)
            self._close_plain()
            return
        if isinstance(e, exp.Cast):
            return self.explicit_cast(e, parent)
        if isinstance(e, (exp.And, exp.Or)):
            return self.boolean(e, parent)
        if isinstance(e, exp.Not):
            inner = e.this.this if isinstance(e.this, exp.Paren) else e.this
            if isinstance(inner, exp.Escape) and isinstance(inner.this, (exp.Like, exp.ILike)):
                return self.pattern("!" + _OPS[type(inner.this)], inner.this.this, "like_escape",
                                    [inner.this.expression, inner.expression])
            if isinstance(inner, exp.SimilarTo):
                return self.pattern("!~", inner.this, "similar_to_escape", [inner.expression])
            if type(inner) in (exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike):
                return self.operator("!" + _OPS[type(inner)], inner.this, inner.expression, e, parent)
            if isinstance(inner, (exp.NullSafeEQ, exp.NullSafeNEQ)):
                return self.distinct(inner, parent, negate=isinstance(inner, exp.NullSafeNEQ))
            if isinstance(inner, exp.In) and inner.args.get("query") is None:
                return self.in_list(inner, parent, negate=True)
            if isinstance(inner, exp.Is):
                return self.is_test(inner, parent, negate=True)
            self._open_plain()
            c.buf += "NOT "
            self.expr_paren(e.this, e)
            self._close_plain()
            return
        if isinstance(e, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            return self.distinct(e, parent, negate=isinstance(e, exp.NullSafeEQ))
        op = _OPS.get(type(e))
        if op is not None and isinstance(e.expression, (exp.Any, exp.All)) and \
                isinstance(e.expression.this, (exp.Select, exp.Subquery, exp.SetOperation)):
            return self.quantified_sublink(op, e)
        if op is not None and isinstance(e.expression, exp.Any):
            return self.any_array(op, e, parent)
        if op is not None:
            if e.args.get("negate") and op in ("~~", "~~*"):
                op = "!" + op
            return self.operator(op, e.this, e.expression, e, parent)
        if isinstance(e, exp.Interval):
            c.buf += self.interval(e)
            return
        if isinstance(e, exp.Array):
            elem = self._array_elem(e)
            c.buf += "ARRAY["
            for i, a in enumerate(e.expressions):
                if i:
                    c.buf += ", "
                self.expr(a, elem, True)
            c.buf += "]"
            return
        if isinstance(e, exp.Exists):
            c.buf += "(EXISTS "
            self.sublink(e.this)
            c.buf += ")"
            return
        if isinstance(e, exp.Trim):
            return self.trim(e)
        if isinstance(e, exp.Escape) and isinstance(e.this, (exp.Like, exp.ILike)):
            negated = "!" if e.this.args.get("negate") else ""
            return self.pattern(negated + _OPS[type(e.this)], e.this.this, "like_escape",
                                [e.this.expression, e.expression])
        if isinstance(e, exp.SimilarTo):
            return self.pattern("~", e.this, "similar_to_escape", [e.expression])
        if isinstance(e, exp.Bracket) and len(e.expressions) == 1:
            return self.subscript(e)
        if isinstance(e, (exp.JSONExtract, exp.JSONExtractScalar)):
            return self.json_operator(e)
        if type(e) in _SQL_VALUES:
            c.buf += _SQL_VALUES[type(e)]
            return
        if isinstance(e, exp.AtTimeZone):     # timezone(zone, x) printed as SQL syntax, in its own parentheses
            c.buf += "("
            self.expr_paren(e.this, e)
            c.buf += " AT TIME ZONE "
            self.expr_paren(e.args["zone"], e, T.TEXT)
            c.buf += ")"
            return
        if isinstance(e, exp.Collate):
            self._open_plain()
            self.expr_paren(e.this, e)
            c.buf += " COLLATE " + _quote_ident(ident(e.expression) if isinstance(e.expression, exp.Identifier)
                                               else str(e.expression.name))
            self._close_plain()
            return
        if isinstance(e, exp.Between) and e.args.get("symmetric"):
            # a BETWEEN SYMMETRIC b AND c: both orders, as the parser expands it
            self._open_plain()
            self.expr(exp.Between(this=e.this, low=e.args["low"], high=e.args["high"]), None, False, parent=e)
            c.buf += " OR "
            self.expr(exp.Between(this=e.this, low=e.args["high"], high=e.args["low"]), None, False, parent=e)
            self._close_plain()
            return
        if isinstance(e, exp.Between):
            self._open_plain()
            lo = exp.GTE(this=e.this, expression=e.args["low"])
            hi = exp.LTE(this=e.this, expression=e.args["high"])
            self.operator(">=", e.this, e.args["low"], lo, e)
            c.buf += " AND "
            self.operator("<=", e.this, e.args["high"], hi, e)
            self._close_plain()
            return
        if isinstance(e, exp.Is):
            return self.is_test(e, parent, negate=bool(e.args.get("negate")))
        if isinstance(e, exp.In):
            return self.in_list(e, parent, negate=False)
        if isinstance(e, exp.Case):
            return self.case(e)
        if type(e) in _SQL_SYNTAX:
            args = [e.this] + list(e.expressions) if not isinstance(e, exp.Nullif) else [e.this, e.expression]
            t = own
            c.buf += _SQL_SYNTAX[type(e)] + "("
            for i, a in enumerate(args):
                if i:
                    c.buf += ", "
                self.expr(a, t, True)
            c.buf += ")"
            return
        if isinstance(e, exp.Subquery):
            return self.sublink(e)
        if isinstance(e, exp.Window):
            return self.window(e)
        if isinstance(e, exp.WithinGroup):
            return self.within_group(e)
        if isinstance(e, exp.Filter):
            self.expr(e.this, None, True)
            c.buf += " FILTER (WHERE "
            self.expr(e.expression.this if isinstance(e.expression, exp.Where) else e.expression, None, False)
            c.buf += ")"
            return
        if isinstance(e, (exp.CurrentDate, exp.CurrentTimestamp)) and not e.args.get("this"):
            c.buf += "CURRENT_DATE" if isinstance(e, exp.CurrentDate) else (
                "now()" if e.meta.get("now") else "CURRENT_TIMESTAMP")
            return
        if isinstance(e, exp.Extract):
            c.buf += f"EXTRACT({str(e.this.name).lower()} FROM "
            self.expr(e.expression, None, True)
            c.buf += ")"
            return
        if isinstance(e, exp.Func) and not isinstance(e, exp.Binary):
            return self.function(e)
        raise Unsupported(type(e).__name__)

    def pattern(self, op: str, left: exp.Expression, escape_fn: str, args: list[exp.Expression]) -> None:
        """LIKE ... ESCAPE and SIMILAR TO: the operator against the pattern
        function the parser wraps the pattern in (like_escape, similar_to_escape)."""
        c = self.c
        self._open_plain()
        self.expr_paren(left, exp.EQ(), T.TEXT, op)
        c.buf += f" {op} {escape_fn}("
        for i, a in enumerate(args):
            c.buf += ", " if i else ""
            self.expr(a, T.TEXT, True)
        c.buf += ")"
        self._close_plain()

    def json_operator(self, e: exp.Expression) -> None:
        """-> and ->>: a key as text, an array position as integer."""
        c = self.c
        path = e.expression
        steps = path.expressions[1:] if isinstance(path, exp.JSONPath) else []
        if len(steps) != 1 or not isinstance(steps[0], (exp.JSONPathKey, exp.JSONPathSubscript)):
            raise Unsupported("JSON path")
        step = steps[0]
        key = (f"'{str(step.this)}'::text" if isinstance(step, exp.JSONPathKey)
               else str(int(step.this)) if int(step.this) >= 0 else f"'{int(step.this)}'::integer")
        op = "->>" if isinstance(e, exp.JSONExtractScalar) else "->"
        self._open_plain()
        self.expr_paren(e.this, e, None, op)
        c.buf += f" {op} {key}"
        self._close_plain()

    def subscript(self, e: exp.Bracket) -> None:
        """x[i]: a column bare, anything else in parentheses (SubscriptingRef)."""
        c = self.c
        base = e.this.this if isinstance(e.this, exp.Paren) else e.this
        bare = isinstance(base, exp.Column)
        c.buf += "" if bare else "("
        self.expr(base, None, True)
        c.buf += "" if bare else ")"
        index = e.expressions[0]
        if not (isinstance(index, exp.Literal) and not index.is_string and str(index.this).isdigit()):
            raise Unsupported("subscript")
        c.buf += f"[{int(index.this) + _INDEX_OFFSET}]"

    def distinct(self, e: exp.Expression, parent, negate: bool) -> None:
        """IS DISTINCT FROM (DistinctExpr); IS NOT DISTINCT FROM is NOT over it."""
        c = self.c
        _, ca, cb = _arith_type("=", self.type_of(e.this), self.type_of(e.expression))
        self._open_plain()
        if negate:      # NOT over the DistinctExpr: its own parentheses in plain mode only
            c.buf += "NOT "
            self._open_plain()
        self.expr_paren(e.this, e, ca, "=")
        c.buf += " IS DISTINCT FROM "
        self.expr_paren(e.expression, e, cb, "=", right_side=True)
        if negate:
            self._close_plain()
        self._close_plain()

    def quantified_sublink(self, op: str, e: exp.Expression) -> None:
        """x op ALL / ANY (subquery)."""
        c = self.c
        word = "ALL" if isinstance(e.expression, exp.All) else "ANY"
        c.buf += "("
        self.expr(e.this, None, True)
        c.buf += f" {op} {word} "
        self.sublink(e.expression.this)
        c.buf += ")"

    def sublink(self, e: exp.Expression) -> None:
        """get_sublink_expr's subquery: ``( SELECT ...)`` at the current indent."""
        c = self.c
        q = e.this if isinstance(e, exp.Subquery) else e
        c.buf += "("
        saved = c.indent
        self.query(q, c.indent, None, False)
        c.indent = saved
        c.buf += ")"

    def interval(self, e: exp.Interval) -> str:
        unit = e.args.get("unit")
        text = str(e.this.this) + (" " + unit.name.lower() if unit is not None else "")
        try:
            return "'" + sqltypes.text_out(T.INTERVAL, sqltypes.text_in(T.INTERVAL, text)) + "'::interval"
        except Exception:
            raise Unsupported("interval") from None

    def _array_elem(self, e: exp.Array) -> int:
        known = [t for t in (self.type_of(a) for a in e.expressions) if t != UNKNOWN]
        return _common(known) if known else T.TEXT

    def any_array(self, op: str, e: exp.Expression, parent) -> None:
        """x op ANY (array): ScalarArrayOpExpr."""
        c = self.c
        arr = e.expression.this.this if isinstance(e.expression.this, exp.Paren) else e.expression.this
        if not isinstance(arr, exp.Array):
            raise Unsupported("ANY")
        elem = self._array_elem(arr)
        self._open_plain()
        self.expr_paren(e.this, e, elem, op)
        c.buf += f" {op} ANY ("
        self.expr(arr, None, True)
        c.buf += ")"
        self._close_plain()

    def trim(self, e: exp.Trim) -> None:
        """trim(...) is SQL syntax: TRIM(BOTH [chars] FROM x)."""
        c = self.c
        side = str(e.args.get("position") or "BOTH").upper()
        c.buf += f"TRIM({side}"
        chars = e.expression
        if chars is not None:
            c.buf += " "
            self.expr(chars, T.TEXT, True)
        c.buf += " FROM "
        self.expr(e.this, T.TEXT, True)
        c.buf += ")"

    def function(self, e: exp.Func) -> None:
        c = self.c
        name, args, _, params = self.call(e)
        if isinstance(e, exp.Substring):
            name = "substring"      # the stored text keeps no trace of substr(): substring, the usual spelling
        c.buf += _quote_ident(name) + "("
        if isinstance(e, exp.Count) and (e.this is None or isinstance(e.this, exp.Star)):
            c.buf += "*)"
            return
        distinct = any(isinstance(a, exp.Distinct) for a in func_args(e))
        if distinct:
            c.buf += "DISTINCT "
        wants = [p if p not in (None, T.ANY) else None for p in params]
        for i, a in enumerate(args):
            if i:
                c.buf += ", "
            self.expr(a, wants[i], True)
        order = next((a for a in func_args(e) if isinstance(a, exp.Order)), None)
        if order is not None:
            self.aggregate_order(order, args, wants)
        c.buf += ")"

    def within_group_types(self, e: exp.WithinGroup) -> tuple[list[int | None], list[int | None], int]:
        """An ordered-set or hypothetical-set call's parameter types: of its
        direct arguments, of its ORDER BY keys, and its result type."""
        name = func_name(e.this)
        direct = [self.type_of(a) for a in func_args(e.this)]
        keys = [self.type_of(o.this) for o in e.expression.expressions]
        many = bool(direct) and direct[0] in T.ELEMENT_OF
        first_key = keys[0] if keys else UNKNOWN
        if name == "percentile_cont":
            key = T.INTERVAL if first_key == T.INTERVAL else T.FLOAT8
            frac = T.ARRAY_OF[T.FLOAT8] if many else T.FLOAT8
            return [frac], [key], T.ARRAY_OF[key] if many else key
        if name == "percentile_disc":
            frac = T.ARRAY_OF[T.FLOAT8] if many else T.FLOAT8
            return [frac], [None], T.ARRAY_OF.get(first_key, UNKNOWN) if many else first_key
        if name == "mode":
            return [], [None], first_key
        if name == "first_values":        # PipelineDB's
            return [T.INT4], [None] * len(keys), T.ARRAY_OF.get(first_key, UNKNOWN)
        if name in ("rank", "dense_rank", "percent_rank", "cume_dist"):
            common: list[int | None] = [_common([t for t in (d, k) if t != UNKNOWN]) if (d, k) != (UNKNOWN, UNKNOWN)
                                        else T.TEXT for d, k in zip(direct, keys)]
            return common, list(common), T.INT8 if name in ("rank", "dense_rank") else T.FLOAT8
        raise Unsupported(f"WITHIN GROUP of {name}")

    def within_group(self, e: exp.WithinGroup) -> None:
        """``f(direct) WITHIN GROUP (ORDER BY keys)``, as get_agg_expr prints an
        ordered-set aggregate: the direct arguments and the keys as coerced."""
        c = self.c
        wants, key_wants, _ = self.within_group_types(e)
        c.buf += _quote_ident(func_name(e.this)) + "("
        for i, a in enumerate(func_args(e.this)):
            c.buf += ", " if i else ""
            self.expr(a, wants[i] if i < len(wants) else None, True)
        keys = [o.this for o in e.expression.expressions]
        self.aggregate_order(e.expression, keys, key_wants, lead=") WITHIN GROUP (ORDER BY ")
        c.buf += ")"

    def aggregate_order(self, order: exp.Order, args: list[exp.Expression], wants: list[int | None],
                        lead: str = " ORDER BY ") -> None:
        """agg(... ORDER BY x): an ordering expression that is one of the
        arguments is that argument as coerced (they share a target entry)."""
        c = self.c
        c.buf += lead
        for i, o in enumerate(order.expressions):
            c.buf += ", " if i else ""
            x = o.this
            want = next((w for a, w in zip(args, wants) if a == x), None)
            own = self.type_of(x)
            simple = isinstance(x, exp.Column) and (want is None or want == own)
            # get_rule_sortgroupclause: parentheses in pretty mode, and around a function call (a cast
            # by function, as int to float8, is one) in plain mode too
            cast = want is not None and own not in (UNKNOWN, want) and not _binary_compatible(own, want) \
                and not (sqltypes.is_string(own) and sqltypes.is_string(want))      # varchar to text: a relabel
            call = isinstance(x, exp.Func) and not isinstance(x, (exp.Binary, exp.Cast, exp.AggFunc))
            need = not simple and (c.pretty or cast or call)
            c.buf += "(" if need else ""
            self.expr(x, want, True)
            c.buf += ")" if need else ""
            if o.args.get("desc"):
                c.buf += " DESC"
            nulls_first = o.args.get("nulls_first")
            if nulls_first is not None and bool(nulls_first) != bool(o.args.get("desc")):
                c.buf += " NULLS FIRST" if nulls_first else " NULLS LAST"

    def window(self, e: exp.Window) -> None:
        c = self.c
        self.expr(e.this, None, True)
        name = e.args.get("alias")
        if name is not None and not (e.args.get("partition_by") or e.args.get("order") or e.args.get("spec")):
            c.buf += " OVER " + _quote_ident(ident(name))
            return
        c.buf += " OVER " + self.window_spec(e)

    def window_spec(self, e: exp.Window) -> str:
        """get_rule_windowspec: (PARTITION BY ... ORDER BY ... frame)."""
        parts = []
        part = e.args.get("partition_by")
        if part:
            parts.append("PARTITION BY " + ", ".join(self.expr_text(p) for p in part))
        order = e.args.get("order")
        if order is not None:
            parts.append("ORDER BY " + ", ".join(self.expr_text(o.this) + (" DESC" if o.args.get("desc") else "")
                                                 for o in order.expressions))
        spec = e.args.get("spec")
        if spec is not None:
            parts.append(self.frame(spec))
        return "(" + " ".join(parts) + ")"

    def frame(self, spec: exp.WindowSpec) -> str:
        kind = str(spec.args.get("kind") or "").upper()
        start, start_side = spec.args.get("start"), str(spec.args.get("start_side") or "").upper()
        end, end_side = spec.args.get("end"), str(spec.args.get("end_side") or "").upper()

        def bound(v, side: str) -> str:
            word = str(v.name if isinstance(v, exp.Expression) and not isinstance(v, exp.Literal) else v).upper() \
                if not isinstance(v, exp.Literal) else None
            if word in ("UNBOUNDED",):
                return f"UNBOUNDED {side}"
            if word == "CURRENT ROW":
                return "CURRENT ROW"
            return f"{self.expr_text(v)} {side}"
        text = f"{kind} "
        if end is not None:
            text += f"BETWEEN {bound(start, start_side)} AND {bound(end, end_side)}"
        else:
            text += bound(start, start_side)
        exclude = spec.args.get("exclude")
        if exclude:
            text += f" EXCLUDE {str(exclude).upper()}"
        return text

    def case(self, e: exp.Case) -> None:
        c = self.c
        t = self.type_of(e)
        c.keyword("CASE", 0, VAR, 0)
        operand = e.this
        if operand is not None:
            c.buf += " "
            self.expr(operand, None, True)
        for w in e.args.get("ifs") or []:
            c.keyword("WHEN ", 0, 0, 0)
            cond = w.this
            if operand is not None:
                self.expr(cond, self.type_of(operand), False)
            else:
                self.expr(cond, None, False)
            c.buf += " THEN "
            self.expr(w.args["true"], t, True)
        c.keyword("ELSE ", 0, 0, 0)
        d = e.args.get("default")
        if d is None:
            c.buf += "NULL::" + _type_name(t)
        else:
            self.expr(d, t, True)
        c.keyword("END", -VAR, 0, 0)

    def is_test(self, e: exp.Is, parent, negate: bool) -> None:
        c = self.c
        self._open_plain()
        self.expr_paren(e.this, e)
        target = e.expression
        if isinstance(target, exp.Null):
            c.buf += " IS NOT NULL" if negate else " IS NULL"
        elif isinstance(target, exp.Boolean):
            c.buf += (" IS NOT " if negate else " IS ") + ("TRUE" if target.this else "FALSE")
        else:
            raise Unsupported("IS")
        self._close_plain()

    def in_list(self, e: exp.In, parent, negate: bool) -> None:
        c = self.c
        if e.args.get("query") is not None:
            c.buf += "("
            self.expr(e.this, None, True)
            c.buf += " NOT IN " if negate else " IN "
            self.sublink(e.args["query"])
            c.buf += ")"
            return
        items = e.expressions
        types = [self.type_of(i) for i in items]
        left = self.type_of(e.this)
        known = [t for t in types if t != UNKNOWN]
        elem = _common([left] + known) if left != UNKNOWN else (_common(known) if known else T.TEXT)
        # varchar has no = of its own: both sides go to text, the varchar array as a whole
        via_text = elem == T.VARCHAR
        self._open_plain()
        if via_text:
            self.coercion(e.this, T.TEXT, e)
        else:
            self.expr(e.this, elem, True, parent=e)
        c.buf += " <> ALL (" if negate else " = ANY ("
        c.buf += "(" if via_text and not c.pretty else ""
        c.buf += "ARRAY["
        for i, item in enumerate(items):
            if i:
                c.buf += ", "
            self.expr(item, elem, True)
        c.buf += "]"
        c.buf += (")" if not c.pretty else "") + "::text[]" if via_text else ""
        c.buf += ")"
        self._close_plain()

    def operator(self, op: str, left: exp.Expression, right: exp.Expression, node, parent) -> None:
        c = self.c
        _, ca, cb = _arith_type(op, self.type_of(left), self.type_of(right))
        lt, rt = self.type_of(left), self.type_of(right)
        if lt == UNKNOWN:
            ca = T.TEXT if op in _TEXT_OPS and rt in _STRINGS else (rt if rt != UNKNOWN else T.TEXT)
            ca = ca if cb is None else cb
        if rt == UNKNOWN:
            cb = T.TEXT if op in _TEXT_OPS and lt in _STRINGS else (lt if lt != UNKNOWN else T.TEXT)
            cb = cb if ca is None or lt == UNKNOWN else ca
        self._open_plain()
        self.expr_paren(left, node, ca, op)
        c.buf += f" {op} "
        self.expr_paren(right, node, cb, op, right_side=True)
        self._close_plain()

    def boolean(self, e: exp.Expression, parent) -> None:
        c = self.c
        word = " AND " if isinstance(e, exp.And) else " OR "
        flat: list[exp.Expression] = []

        def gather(x):
            x = x.this if isinstance(x, exp.Paren) and isinstance(x.this, type(e)) else x
            if isinstance(x, type(e)):
                gather(x.this)
                gather(x.expression)
            else:
                flat.append(x)
        gather(e)
        self._open_plain()
        for i, a in enumerate(flat):
            if i:
                c.buf += word
            self.expr_paren(a, e)
        self._close_plain()

    def explicit_cast(self, e: exp.Cast, parent) -> None:
        c = self.c
        oid, typmod = datatype_to_oid(e.to)
        inner = e.this.this if isinstance(e.this, exp.Paren) else e.this
        own = self.type_of(inner)
        if own == oid and typmod < 0:
            return self.expr(inner, None, False, parent=parent)
        if isinstance(inner, exp.Literal) and inner.is_string or isinstance(inner, exp.Null):
            c.buf += self.const(inner, oid, typmod)
            return
        self.coercion(inner, oid, parent, typmod)

    def coercion(self, e: exp.Expression, oid: int, parent, typmod: int = -1) -> None:
        """get_coercion_expr: ``(arg)::type``, the parentheses only where needed in pretty mode."""
        c = self.c
        if isinstance(e, exp.Literal) and e.is_string:
            c.buf += self.const(e, oid, typmod)
            return
        if not c.pretty:
            c.buf += "("
            self.expr(e, None, False)
            c.buf += ")"
        else:
            self.expr_paren(e, exp.Cast(this=e))
        c.buf += "::" + _type_name(oid, typmod)

    def const(self, e: exp.Expression, oid: int, typmod: int = -1) -> str:
        """get_const_expr: a constant of type ``oid`` as PostgreSQL prints it."""
        if isinstance(e, exp.Null):
            return "NULL::" + _type_name(oid, typmod)
        negative = isinstance(e, exp.Neg)
        lit = e.this if negative else e
        if not isinstance(lit, exp.Literal):
            raise Unsupported("negated expression")
        text = ("-" if negative else "") + str(lit.this)
        if not lit.is_string:
            own = _number_type(str(lit.this))
            if own == T.NUMERIC:    # stored parsed: printed in numeric's output form (3e2 -> 300)
                text = sqltypes.text_out(T.NUMERIC, sqltypes.text_in(T.NUMERIC, text))
            if oid == own == T.INT4 and not text.startswith("-"):
                return text
            if oid == own == T.NUMERIC and text[0].isdigit() and any(ch in text for ch in ".eE"):
                return text
            return f"'{text}'::{_type_name(oid)}"
        value = str(lit.this).replace("'", "''")
        if oid == T.BOOL:
            return "true" if value.lower() in ("t", "true", "yes", "on", "1") else "false"
        if oid in (T.INT4,) and value.lstrip("-").isdigit():
            return value if not value.startswith("-") else f"'{value}'::integer"
        if oid in _CANONICAL:
            try:
                value = self._canonical(oid, str(lit.this)).replace("'", "''")
            except Exception:
                raise Unsupported("constant") from None
        name = "bpchar" if oid == T.BPCHAR and typmod < 0 else _type_name(oid, typmod)
        return f"'{value}'::{name}"

    def _canonical(self, oid: int, text: str) -> str:
        """A constant's text through its type's input and output: a timestamptz
        read and shown in the session's TimeZone (the view keeps its text, so
        the zone it was created in is taken to be this one)."""
        if oid == T.TIMESTAMPTZ:
            value = wiretypes.decode_text(oid, text, tz=self.zone)
            return wiretypes.encode_text(oid, value, tz=self.zone).decode()
        return sqltypes.text_out(oid, sqltypes.text_in(oid, text))

    # -- parentheses -------------------------------------------------------

    def _open_plain(self) -> None:
        if not self.c.pretty:
            self.c.buf += "("

    def _close_plain(self) -> None:
        if not self.c.pretty:
            self.c.buf += ")"

    def expr_paren(self, e: exp.Expression, parent: exp.Expression, want: int | None = None, parent_op: str | None = None,
                   right_side: bool = False) -> None:
        """get_rule_expr_paren: parentheses around ``e`` in pretty mode when
        isSimpleNode says its parent needs them."""
        inner = e.this if isinstance(e, exp.Paren) else e
        need = self.c.pretty and not self._simple(inner, parent, parent_op, right_side, want)
        if need:
            self.c.buf += "("
        self.expr(inner, want, True, parent=parent)
        if need:
            self.c.buf += ")"

    def _simple(self, node, parent, parent_op, right_side, want) -> bool:
        if isinstance(node, exp.Not) and isinstance(node.this, (exp.In, exp.Like, exp.ILike, exp.Is, exp.Escape,
                                                                exp.SimilarTo, exp.RegexpLike, exp.RegexpILike)) \
                and not (isinstance(node.this, exp.In) and node.this.args.get("query") is not None):
            node = node.this    # NOT IN (list), NOT LIKE, IS NOT: one node in PostgreSQL, no NOT
        own = self.type_of(node)
        if want is not None and own not in (UNKNOWN, want) and not _binary_compatible(own, want) \
                and not (isinstance(node, exp.Literal) and node.is_string):
            return True     # a cast: FuncExpr, simple
        if isinstance(node, (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Case, exp.Cast, exp.Window,
                             exp.Filter, exp.Interval, exp.Array, exp.Trim, exp.AtTimeZone, exp.Bracket)) \
                or isinstance(node, tuple(_SQL_SYNTAX)):
            return True
        if isinstance(node, exp.In) and node.args.get("query") is None or \
                isinstance(node, exp.Binary) and isinstance(node.expression, exp.Any):
            return False    # ScalarArrayOpExpr: parenthesised under any parent
        op = _OPS.get(type(node)) or ("~~" if isinstance(node, (exp.Escape, exp.SimilarTo, exp.JSONExtract,
                                                                 exp.JSONExtractScalar)) else None)
        if op is not None or isinstance(node, exp.Neg):
            if isinstance(parent, exp.Cast):
                return False
            parent_is_op = parent_op is not None
            if parent_is_op:
                if op is None or len(op) != 1 or op not in "+-*/%" or parent_op not in "+-*/%" or len(parent_op) != 1:
                    return False
                lo, hi = op in "+-", op in "*/%"
                plo, phi = parent_op in "+-", parent_op in "*/%"
                if hi and plo:
                    return True
                if lo and phi:
                    return False
                return not right_side
            return isinstance(parent, (exp.And, exp.Or, exp.Not, exp.Func, exp.Case)) and not isinstance(parent, exp.Binary) \
                or isinstance(parent, (exp.And, exp.Or, exp.Not))
        if isinstance(node, (exp.Is, exp.In, exp.Between, exp.Subquery, exp.Exists, exp.NullSafeNEQ)):
            return isinstance(parent, (exp.And, exp.Or, exp.Not)) or (isinstance(parent, exp.Func) and not isinstance(parent, exp.Binary))
        if isinstance(node, (exp.And, exp.Or, exp.Not, exp.NullSafeEQ)):
            if isinstance(parent, (exp.And, exp.Or, exp.Not)):
                if isinstance(node, (exp.Not, exp.And, exp.NullSafeEQ)):
                    return isinstance(parent, (exp.And, exp.Or))
                return isinstance(parent, exp.Or)
            return isinstance(parent, exp.Func) and not isinstance(parent, (exp.Binary, exp.Cast))
        if isinstance(node, exp.Func) and not isinstance(node, exp.Binary):
            return True
        return False


#: types whose constants PostgreSQL stores parsed, and prints in their output form
_CANONICAL = frozenset({T.DATE, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIME, T.INTERVAL, T.NUMERIC, T.FLOAT4, T.FLOAT8,
                        T.INT2, T.INT8, T.UUID, T.JSONB})



#: sqlglot keeps array subscripts 0-based; PostgreSQL's text is 1-based
_INDEX_OFFSET = sqlglot.Dialect.get_or_raise(DIALECT).INDEX_OFFSET


def _number_type(text: str) -> int:
    if text.isdigit():
        v = int(text)
        return T.INT4 if v < 2**31 else (T.INT8 if v < 2**63 else T.NUMERIC)
    return T.NUMERIC


def _common(types: list[int]) -> int:
    """select_common_type for the numeric ladder and strings."""
    if all(t in _INTS for t in types):
        return max(types, key=_INTS.index)
    if all(t in _INTS + (T.NUMERIC,) for t in types):
        return T.NUMERIC
    if all(t in _INTS + (T.NUMERIC, T.FLOAT4, T.FLOAT8) for t in types):
        return T.FLOAT8
    if all(t in _STRINGS for t in types):
        return types[0]     # text and varchar convert both ways implicitly: the first one stays
    return types[0]


def _binary_compatible(a: int, b: int) -> bool:
    """Types whose values a cast relabels without printing (int4 vs int8 have cross-type operators)."""
    if a in _INTS and b in _INTS:
        return True
    return {a, b} == {T.FLOAT4, T.FLOAT8}


_KEYWORDS = frozenset("""
all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both case cast
char character check coalesce collate collation column concurrently constraint create cross current_catalog
current_date current_role current_schema current_time current_timestamp current_user dec decimal default deferrable
desc distinct do else end except exists extract false fetch float for foreign freeze from full grant greatest group
grouping having ilike in initially inner inout int integer intersect interval into is isnull join lateral leading
least left like limit localtime localtimestamp national natural nchar none normalize not notnull null nullif numeric
offset on only or order out outer overlaps overlay placing position precision primary real references returning
right row select session_user setof similar smallint some substring symmetric table tablesample then time timestamp
to trailing treat trim true union unique user using values varchar variadic verbose when where window with xmlattributes
xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable
""".split())


def _quote_ident(name: str) -> str:
    """quote_identifier: double quotes unless lowercase letters, digits and _ (not a keyword)."""
    safe = name and (name[0].islower() or name[0] == "_") and all(ch.islower() or ch.isdigit() or ch == "_" for ch in name)
    if safe and name not in _KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


