"""splitstream's SQL dialect: sqlglot's PostgreSQL dialect, extended for what
real clients send, as a subclass (sqlglot's own ``postgres`` stays stock).

* ``x::oid[]``, ``$1::regclass[]`` ...: sqlglot parses the object-identifier
  types as ``ObjectIdentifier`` and then fails on ``[]`` (asyncpg's type
  introspection sends ``$1::oid[]``).  They become the array type ``_oid``.
* Function calls keep the name written (see ``_KEPT_FUNCTIONS``); ``now()``
  parses as CURRENT_TIMESTAMP marked to print as ``now()``.
* A typed literal (``date 'x'``) is a constant to which later ``::`` apply.
* ``SESSION(...)`` is a call (the window table function in FROM); sqlglot
  reads SESSION only as the keyword of ``SET SESSION``.

Every parse and every generation of SQL text in the executor names
:data:`DIALECT`; :func:`parse_one` is the statement parser with PostgreSQL's
syntax errors.
"""
from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.postgres import PostgresGenerator
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import TokenType

from . import order_using, tablesample_syntax
from .operator_positions import mark_cast, mark_keyword, mark_operator, mark_prefix
from splitstream.protocol.errors import SYNTAX_ERROR, PgError

#: the units SQL lets follow an interval literal (``interval '1' day``)
_INTERVAL_UNITS = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"}

_POSTGRES_CURRENT_TIMESTAMP = PostgresGenerator.TRANSFORMS.get(exp.CurrentTimestamp)


def _now(args: list[Any]) -> exp.Expr:
    """now() parses as CURRENT_TIMESTAMP; marked so a column default deparses
    as PostgreSQL prints it (``now()``, not ``CURRENT_TIMESTAMP``)."""
    node = exp.CurrentTimestamp.from_arg_list(args)
    node.meta["now"] = True
    return node


def _current_timestamp_sql(self: PostgresGenerator, e: exp.CurrentTimestamp) -> str:
    if e.meta.get("now"):
        return "NOW()"
    return _POSTGRES_CURRENT_TIMESTAMP(self, e) if _POSTGRES_CURRENT_TIMESTAMP else "CURRENT_TIMESTAMP"


#: Calls sqlglot may build its own nodes for: PostgreSQL's special grammar
#: (COALESCE, GREATEST ..., ARRAY, ROW) and the aggregates the planner
#: recognises by node (decorrelation counts COUNT).  Every other call
#: ``f(...)`` stays ``exp.Anonymous`` with the name and the arguments as
#: written, and binds through the function catalog by that name: sqlglot's
#: canonical nodes rename and merge PostgreSQL's functions (to_timestamp ->
#: UnixToTime/StrToTime, char_length -> Length, version() -> CurrentVersion)
#: and rewrite their arguments (to_char's template into strftime).
_KEPT_FUNCTIONS = frozenset({
    "ARRAY", "EXISTS", "STRUCT", "UNNEST", "GENERATE_SERIES", "COALESCE", "NULLIF", "GREATEST", "LEAST",
    "COUNT", "SUM", "AVG", "MIN", "MAX", "ARRAY_AGG", "BOOL_AND", "BOOL_OR", "MODE", "PERCENTILE_CONT",
    "PERCENTILE_DISC", "STDDEV", "STDDEV_POP", "STDDEV_SAMP", "VARIANCE", "VAR_SAMP", "VAR_POP",
})
#: Function-call shapes that are PostgreSQL grammar (keywords inside the parentheses).
_KEPT_FUNCTION_PARSERS = frozenset({
    "CAST", "EXTRACT", "OVERLAY", "POSITION", "SUBSTRING", "TRIM", "STRING_AGG", "XMLELEMENT", "XMLTABLE",
})

#: words that may follow a frame mode (ROWS/RANGE/GROUPS) in a window clause
_FRAME_STARTS = frozenset({"BETWEEN", "UNBOUNDED", "CURRENT"})

#: ``exp.Func.meta`` key holding the function name as the user wrote it
#: (set by sqlglot on the nodes of kept builders; read by ``binder.func_name``).
WRITTEN_NAME = "pg_name"


_STOCK_DCOLON: Any = PostgresParser.COLUMN_OPERATORS[TokenType.DCOLON]


def _dcolon_cast(self: Any, this: exp.Expr, to: exp.Expr) -> exp.Expr:
    """``x::type``, marked with its ``::`` (errors about the cast point there)."""
    node = _STOCK_DCOLON(self, this, to)
    mark_cast(self._tokens, self._index, node)
    return node


class Splitstream(Postgres):
    """PostgreSQL as splitstream reads and prints it."""

    ORIGINAL_NAME_META_KEY = WRITTEN_NAME

    class Tokenizer(Postgres.Tokenizer):
        # PostgreSQL has no @-parameters: a lone @ is the absolute-value prefix
        # operator.  Not PARAMETER, after which sqlglot reads "1.5" as 1 . 5.
        SINGLE_TOKENS = {**Postgres.Tokenizer.SINGLE_TOKENS, "@": TokenType.SESSION_PARAMETER}

    class Parser(PostgresParser):
        # PostgreSQL's TABLESAMPLE (expressions, REPEATABLE (NULL), the unit as written)
        _parse_table_sample = tablesample_syntax.parse_table_sample
        FUNCTION_PARSERS = {k: v for k, v in PostgresParser.FUNCTION_PARSERS.items() if k in _KEPT_FUNCTION_PARSERS}
        FUNCTIONS = {**{k: v for k, v in PostgresParser.FUNCTIONS.items() if k in _KEPT_FUNCTIONS}, "NOW": _now}
        # ClickHouse's TTL clause: in PostgreSQL (and PipelineDB's WITH (ttl = ...)) it is a plain option
        PROPERTY_PARSERS = {k: v for k, v in PostgresParser.PROPERTY_PARSERS.items() if k != "TTL"}
        # SESSION(stream, ts, gap) in FROM: a call when "(" follows (SET SESSION ... is unaffected)
        FUNC_TOKENS = PostgresParser.FUNC_TOKENS | {TokenType.SESSION}
        UNARY_PARSERS = {**PostgresParser.UNARY_PARSERS,
                         TokenType.SESSION_PARAMETER: lambda self: self.expression(exp.Abs(this=self._parse_unary()))}
        COLUMN_OPERATORS = {**PostgresParser.COLUMN_OPERATORS, TokenType.DCOLON: _dcolon_cast}

        def expression(self, instance: Any, token: Any = None, comments: Any = None) -> Any:
            """Every node as sqlglot builds it; a binary operator's keeps the
            offset of its operator (``operator_positions.py``)."""
            node = super().expression(instance, token, comments)
            if isinstance(node, exp.Binary):
                mark_operator(self._tokens, self._index, node)
            return node

        def _parse_unary(self) -> exp.Expr | None:
            """A prefix operator keeps the offset of its sign."""
            start = self._index
            node = super()._parse_unary()
            mark_prefix(self._tokens, start, node)
            return node

        def _parse_cast(self, strict: bool, safe: bool | None = None) -> exp.Expr:
            """``CAST(x AS type)`` keeps the offsets of its keyword and type."""
            start = self._index - 2
            node = super()._parse_cast(strict, safe)
            mark_keyword(self._tokens, start, self._index, node)
            return node

        def _parse_string_agg(self) -> exp.GroupConcat:
            """STRING_AGG keeps the offset of its name (errors about the call
            point there) and whether WITHIN GROUP was written: sqlglot reads
            ``string_agg(x, ',') WITHIN GROUP (ORDER BY y)`` as the ORDER BY
            form, and PostgreSQL has no such overload."""
            start = self._index
            name = self._tokens[start - 2] if start >= 2 else None
            node = super()._parse_string_agg()
            toks = self._tokens[start:self._index]
            if any(a.token_type == TokenType.R_PAREN and b.text.upper() == "WITHIN" for a, b in zip(toks, toks[1:])):
                node.meta["within_group"] = True
            if name is not None and name.text.upper() == "STRING_AGG":
                node.meta.update(line=name.line, col=name.col, start=name.start, end=name.end)
            return node

        def _normalize_collate(self, collate: exp.Collate) -> None:
            """A COLLATE clause keeps its keyword's offset: PostgreSQL places
            errors about the clause there."""
            super()._normalize_collate(collate)
            i = self._index - 1
            while i >= 0 and self._tokens[i].token_type != TokenType.COLLATE:
                i -= 1
            if i >= 0:
                t = self._tokens[i]
                collate.meta.update(line=t.line, col=t.col, start=t.start, end=t.end)

        def _parse_ordered(self, parse_method: Any = None) -> exp.Ordered | None:
            """``ORDER BY x USING <`` / ``USING >`` is ``x ASC`` / ``x DESC``
            (order_using.py), with DESC's default NULLS FIRST."""
            using: list[order_using.Using] = []

            def expression() -> exp.Expr | None:
                this = parse_method() if parse_method else self._parse_disjunction()
                said = order_using.read_using(self) if this is not None else None
                if said is not None:
                    using.append(said)
                return this

            ordered = super()._parse_ordered(expression)
            if ordered is not None and using and using[0].desc:
                ordered.set("desc", True)
                if not using[0].nulls_written:
                    ordered.set("nulls_first", True)
            return ordered

        def _parse_types(self, *args: Any, **kwargs: Any) -> exp.Expr | None:
            this = super()._parse_types(*args, **kwargs)
            if isinstance(this, exp.ObjectIdentifier):
                dims = 0
                while self._curr is not None and self._curr.token_type == TokenType.L_BRACKET \
                        and self._next is not None and self._next.token_type == TokenType.R_BRACKET:
                    self._advance(2)
                    dims += 1
                if dims:
                    return exp.DataType.build("_" + this.name.lower(), udt=True)
            return this

        def _parse_interval_span(self, this: exp.Expr, parse_function_unit: bool = True) -> exp.Interval:
            """``interval '2 days 03:00'`` is the whole string, read by interval_in:
            sqlglot would keep the first quantity ('2' DAYS) and drop the rest."""
            curr = self._curr
            if this is not None and this.is_string and (curr is None or curr.text.upper() not in _INTERVAL_UNITS):
                return self.expression(exp.Interval(this=this))
            return super()._parse_interval_span(this, parse_function_unit)
        def _parse_id_var(self, any_token: bool = True, tokens: Any = None) -> exp.Expr | None:
            """``OVER (GROUPS BETWEEN ...)``: sqlglot reads a leading GROUPS as the
            name of a window to copy (GROUPS is no keyword token), and then fails on
            BETWEEN; PostgreSQL reads a frame clause (42P20 without ORDER BY)."""
            if tokens is self.WINDOW_ALIAS_TOKENS and self._curr is not None and self._next is not None \
                    and self._curr.text.upper() == "GROUPS" \
                    and (self._next.text.upper() in _FRAME_STARTS or self._next.token_type == TokenType.NUMBER):
                return None
            return super()._parse_id_var(any_token, tokens)

        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False) -> exp.Expr | None:
            """A typed literal (``date '2020-01-01'``) is a constant of that type to
            which later operators apply: ``timestamp 'x'::timestamptz`` casts the
            timestamp, as PostgreSQL reads it.  sqlglot applies the ``::`` to the
            string first and the type last; parse the literal's own cast first."""
            curr = self._curr
            if curr is not None and curr.token_type in self.TYPE_TOKENS and curr.token_type != TokenType.INTERVAL \
                    and self._next is not None and self._next.token_type == TokenType.STRING:
                index = self._index
                data_type = self._parse_types(check_func=True, allow_identifiers=False)
                if isinstance(data_type, exp.DataType) and self._curr is not None \
                        and self._curr.token_type == TokenType.STRING:
                    literal = self._parse_primary()
                    parser = self.TYPE_LITERAL_PARSERS.get(data_type.this)
                    node = parser(self, literal, data_type) if parser else exp.Cast(this=literal, to=data_type)
                    return self._parse_column_ops(node)
                self._retreat(index)
            return super()._parse_type(parse_interval, fallback_to_identifier)

    class Generator(PostgresGenerator):
        TRANSFORMS = {**PostgresGenerator.TRANSFORMS, exp.CurrentTimestamp: _current_timestamp_sql}


#: What every ``read=`` / ``dialect=`` / ``.sql(...)`` of the executor names.
DIALECT = Splitstream


def _pad_params(sql: str) -> str:
    """sqlglot's tokenizer reads ``$1,$2`` as the start of a dollar-quoted
    string; pgjdbc and psycopg send exactly that.  Put a space after each
    ``$n`` outside quotes, comments and dollar quotes."""
    if "$" not in sql or not re.search(r"\$\d+[^\s\d]", sql):
        return sql
    out, i, n = [], 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            j = i + 1
            while j < n and not (sql[j] == ch and not sql.startswith(ch * 2, j)):
                j += 2 if sql.startswith(ch * 2, j) else 1
            out.append(sql[i : j + 1])
            i = j + 1
            continue
        if sql.startswith("--", i) or sql.startswith("/*", i):
            j = sql.find("\n" if ch == "-" else "*/", i + 2)
            j = n if j < 0 else (j if ch == "-" else j + 2)
            out.append(sql[i:j])
            i = j
            continue
        if ch == "$":
            m = re.match(r"\$(\d+)(?=[^\s\d])", sql[i:])
            if m:
                out.append(m.group(0) + " ")
                i += len(m.group(0))
                continue
            m = re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", sql[i:])
            if m:
                j = sql.find(m.group(0), i + len(m.group(0)))
                j = n if j < 0 else j + len(m.group(0))
                out.append(sql[i:j])
                i = j
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_one(sql: str) -> exp.Expr:
    sql = _flink_windows(_pad_params(sql))
    try:
        trees = sqlglot.parse(sql, read=DIALECT)
        if _COMMA_PAREN.search(sql):
            _refuse_trailing_comma(sql)
    except (ParseError, TokenError) as e:
        raise syntax_error(sql, e) from e
    statements = [t for t in trees if t is not None]
    if len(statements) != 1:
        raise PgError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    return statements[0]


def writes_in_with(tree: Any) -> bool:
    """Whether ``tree``'s own WITH holds an INSERT, UPDATE or DELETE (a
    data-modifying WITH query, which only a top-level statement may have)."""
    with_ = (tree.args.get("with") or tree.args.get("with_")) if isinstance(tree, exp.Expression) else None
    return with_ is not None and any(isinstance(c.this, (exp.Insert, exp.Update, exp.Delete)) for c in with_.expressions)


def parse_statements(sql: str) -> list[exp.Expr]:
    """Every statement of ``sql`` (a function body may hold several)."""
    sql = _pad_params(sql)
    try:
        trees = sqlglot.parse(sql, read=DIALECT)
        if _COMMA_PAREN.search(sql):
            _refuse_trailing_comma(sql)
    except (ParseError, TokenError) as e:
        raise syntax_error(sql, e) from e
    return [t for t in trees if t is not None]


_COMMA_PAREN = re.compile(r",\s*\)")

_FLINK_WINDOW = re.compile(r"\bTABLE\s*\(\s*(TUMBLE|HOP)\s*\(\s*TABLE\s+((?:\"[^\"]+\"|[\w.])+)\s*,\s*"
                           r"DESCRIPTOR\s*\(\s*(\"[^\"]+\"|\w+)\s*\)\s*,", re.I)
_FLINK_INTERVAL = re.compile(r"\bINTERVAL\s+'([^']*)'\s+(SECOND|MINUTE|HOUR|DAY)S?\b", re.I)


#: TABLESAMPLE RESERVOIR (5%) and (12 ROWS): the sample spellings PostgreSQL's grammar lacks
_SAMPLE_SPELLING = re.compile(r"\bTABLESAMPLE\s+\w+\s*\([^)]*(%|\bROWS)\s*\)", re.I)


def extension_syntax(sql: str) -> bool:
    """Whether ``sql`` uses syntax of ours that PostgreSQL's grammar does not
    have: Flink's TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), ...)), the sample
    size spellings of TABLESAMPLE."""
    upper = sql.upper()
    return ("TABLE" in upper and _FLINK_WINDOW.search(sql) is not None) or \
        ("TABLESAMPLE" in upper and _SAMPLE_SPELLING.search(sql) is not None)


def _flink_windows(sql: str) -> str:
    """Flink's ``TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' MINUTE))``
    (and HOP) as RisingWave's ``TUMBLE(s, ts, INTERVAL '1 MINUTE')``: the
    same window table function (planner/time_windows.py) in the spelling
    sqlglot parses.  Only the text inside such a call is touched."""
    if "descriptor" not in sql.lower():
        return sql
    out, pos = [], 0
    for m in _FLINK_WINDOW.finditer(sql):
        if m.start() < pos:
            continue
        close = _closing_paren(sql, sql.index("(", m.start()))
        if close < 0:
            return sql
        args = _FLINK_INTERVAL.sub(lambda i: f"INTERVAL '{i.group(1)} {i.group(2)}'", sql[m.end():close])
        out.append(sql[pos:m.start()] + f"{m.group(1)}({m.group(2)}, {m.group(3)}," + args)
        pos = close + 1
    return "".join(out) + sql[pos:]


def _closing_paren(sql: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start`` (quotes skipped), or -1."""
    depth, i, n = 0, start, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "'":
            i = sql.find("'", i + 1)
            if i < 0:
                return -1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _refuse_trailing_comma(sql: str) -> None:
    """sqlglot forgives ``(a int,)`` and ``f(x,)``; PostgreSQL's grammar does not."""
    toks = DIALECT().tokenize(sql)
    for a, b in zip(toks, toks[1:]):
        if a.token_type == TokenType.COMMA and b.token_type == TokenType.R_PAREN:
            raise PgError(SYNTAX_ERROR, 'syntax error at or near ")"', position=b.start + 1)


def syntax_error(sql: str, e: Exception) -> PgError:
    near = None
    pos = None
    errs = getattr(e, "errors", None) or []
    if errs:
        err = errs[0]
        near = err.get("highlight")
        line, col = err.get("line"), err.get("col")
        if line and col:
            lines = sql.split("\n")
            pos = sum(len(text) + 1 for text in lines[: line - 1]) + col - (len(near) if near else 0) + 1
    if near:
        return PgError(SYNTAX_ERROR, f'syntax error at or near "{near}"', position=pos if pos and pos > 0 else None)
    return PgError(SYNTAX_ERROR, "syntax error at end of input")
