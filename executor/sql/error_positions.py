"""Where in the statement an error is, as PostgreSQL reports it.

PostgreSQL's errors about the text carry a cursor position, and psql draws
it (``LINE 1: SELECT * FROM nosuch`` with a caret under ``nosuch``).  Two
sources give ours:

* **Syntax errors** come from PostgreSQL's own grammar (libpg_query, through
  pglast), asked only once sqlglot has failed: the message ("at or near" which
  token, "at end of input", "unterminated quoted string") and the position are
  then exactly PostgreSQL's.  Text PostgreSQL's grammar accepts but sqlglot
  does not keeps sqlglot's message.
* **Unknown names** (42P01 relation, 42703 column, 42883 function): the
  binder raises them from deep inside; the name is found again in the parse
  tree, whose identifiers keep their offsets in the text.
"""
from __future__ import annotations

import re

from pglast import parser as pg_parser
from sqlglot import exp

from splitstream.protocol.errors import (
    AMBIGUOUS_COLUMN,
    FEATURE_NOT_SUPPORTED,
    GROUPING_ERROR,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION,
    UNDEFINED_TABLE,
    WINDOWING_ERROR,
    PgError,
)

from ..execution.signatures import NO_MATCH_HINT


def pg_syntax_error(sql: str) -> PgError | None:
    """PostgreSQL 15's syntax error for ``sql``, or None when its grammar accepts it."""
    try:
        pg_parser.parse_sql_json(sql)          # the C parser alone: no Python tree built
    except pg_parser.ParseError as e:
        message = str(e.args[0]) if e.args else "syntax error"
        location = e.args[1] if len(e.args) > 1 and isinstance(e.args[1], int) else None
        position = location + 1 if location is not None else len(sql.rstrip()) + 1
        return PgError(_grammar_sqlstate(message), message, position=position)
    return None


def _grammar_sqlstate(message: str) -> str:
    """The SQLSTATE gram.y raises a message with (pglast gives the message
    only): window frame rules are 42P20, what it has no implementation of
    0A000, the rest syntax errors."""
    if message.startswith("frame "):
        return WINDOWING_ERROR
    if "not yet implemented" in message or "not supported" in message:
        return FEATURE_NOT_SUPPORTED
    return SYNTAX_ERROR


_STAR_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(\s*\*\s*\)")


def star_call_error(sql: str) -> PgError | None:
    """``f(*)`` of a function other than count: PostgreSQL's grammar takes it
    (any aggregate may be called so) and then finds no ``f()``; sqlglot does
    not parse it.  None when ``sql`` has no such call."""
    for m in _STAR_CALL.finditer(sql):
        if m.group(1).lower() != "count":
            return PgError(UNDEFINED_FUNCTION, f"function {m.group(1).lower()}() does not exist",
                           hint=NO_MATCH_HINT, position=m.start() + 1)
    return None


_RELATION = re.compile(r'relation "(?:[^"]+\.)?([^".]+)" does not exist')
_MISSING_FROM = re.compile(r'missing FROM-clause entry for table "([^"]+)"')
_COLUMN = re.compile(r'column (?:"([^"]+)"|(\w+)\.(\w+)) does not exist')
_TARGET_COLUMN = re.compile(r'column "([^"]+)" of relation "[^"]+" does not exist')
_AMBIGUOUS = re.compile(r'column reference "([^"]+)" is ambiguous')
_FUNCTION = re.compile(r"function (?:\w+\.)?(\w+)\(")
_UNGROUPED = re.compile(r'column "(?:[^".]+\.)?([^".]+)" must appear in the GROUP BY clause or be used in an aggregate function')


def name_position(tree: exp.Expr, text: str, err: PgError, is_aggregate=lambda n: isinstance(n, exp.AggFunc)) -> int | None:
    """1-based position in ``text`` of the name ``err`` is about, or None
    (``is_aggregate``: whether a node is an aggregate call)."""
    found: exp.Expr | None = None
    if err.sqlstate == UNDEFINED_TABLE:
        m = _RELATION.fullmatch(err.message)
        if m:
            found = _first(tree, exp.Table, lambda t: t.name == m.group(1))
        m = _MISSING_FROM.fullmatch(err.message)
        if m:
            found = _first(tree, exp.Column, lambda c: c.table == m.group(1))
    elif err.sqlstate == UNDEFINED_COLUMN and (target := _TARGET_COLUMN.fullmatch(err.message)):
        name = target.group(1)          # INSERT's column list, UPDATE's SET
        found = _first(tree, exp.Identifier, lambda i: i.name == name and not isinstance(i.parent, exp.Table))
    elif err.sqlstate == AMBIGUOUS_COLUMN:
        m = _AMBIGUOUS.fullmatch(err.message)
        if m:
            found = _first(tree, exp.Column, lambda c: c.name == m.group(1) and not c.table)
    elif err.sqlstate == UNDEFINED_COLUMN:
        m = _COLUMN.fullmatch(err.message)
        if m and m.group(1):
            found = _first(tree, exp.Column, lambda c: c.name == m.group(1) and not c.table)
        elif m:
            found = _first(tree, exp.Column, lambda c: c.table == m.group(2) and c.name == m.group(3))
    elif err.sqlstate == UNDEFINED_FUNCTION:
        m = _FUNCTION.match(err.message)
        if m:
            found = _first(tree, exp.Func, lambda f: _function_name(f) == m.group(1))
    elif err.sqlstate == GROUPING_ERROR and (m := _UNGROUPED.fullmatch(err.message)):
        found = _ungrouped_column(tree, m.group(1), is_aggregate)
    return None if found is None else _start(found, text)


def _ungrouped_column(tree: exp.Expr, name: str, is_aggregate) -> exp.Expr | None:
    """The first (in the text) reference to column ``name`` outside any
    aggregate call and subquery: the one a grouping error is about."""
    def outside(c: exp.Expr) -> bool:
        p = c.parent
        while p is not None and p is not tree:
            if is_aggregate(p) or isinstance(p, (exp.Subquery, exp.Select)):
                return False
            p = p.parent
        return True

    cols = [c for c in tree.find_all(exp.Column) if c.name == name and outside(c)]
    starts = [(min((i.meta["start"] for i in c.find_all(exp.Identifier) if "start" in i.meta), default=None), c) for c in cols]
    placed = [(s, c) for s, c in starts if s is not None]
    return min(placed, key=lambda sc: sc[0])[1] if placed else None


def call_position(node: exp.Expr) -> int | None:
    """1-based offset of a function call's name, where PostgreSQL places
    errors about the call itself; None when the parser kept no offset."""
    return node.meta["start"] + 1 if "start" in node.meta else None


def node_position(node: exp.Expr) -> int | None:
    """1-based offset of ``node``'s leftmost token that keeps its place in
    the text (names, literals, function names), as PostgreSQL's exprLocation
    reports the leftmost of an expression's; None when none does."""
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return min(starts) + 1 if starts else None


def _first(tree: exp.Expr, kind: type[exp.Expr], test) -> exp.Expr | None:
    node: exp.Expr
    for node in tree.find_all(kind):
        try:
            if test(node):
                return node
        except (AttributeError, TypeError):
            continue
    return None


def _function_name(f: exp.Func) -> str:
    if isinstance(f, exp.GroupConcat):
        return "string_agg"
    return (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()


def _start(node: exp.Expr, text: str) -> int | None:
    """1-based offset of the node's first token: a function's own, a
    (qualified) name's first identifier.  Checked against ``text``: a text
    rewritten before parsing would place it elsewhere."""
    if isinstance(node, exp.Func):
        spans = [node.meta] if "start" in node.meta else []
    else:
        spans = [i.meta for i in node.find_all(exp.Identifier) if "start" in i.meta]
    if not spans:
        return None
    first = min(spans, key=lambda m: m["start"])
    start, end = first["start"], first["end"]
    word = text[start:end + 1].strip('"').lower()
    names = {i.name.lower() for i in node.find_all(exp.Identifier)} | {_name(node)}
    return start + 1 if word in names else None


def _name(node: exp.Expr) -> str:
    return _function_name(node) if isinstance(node, exp.Func) else node.name.lower()
