"""Binding of row constructors and of the operators PostgreSQL's parser
expands over them (parse_expr.c: make_row_comparison_op,
make_row_distinct_op, transformAExprIn, and ExecEvalRowNull's rule).

``ROW(a, b)`` and ``(a, b)`` are row constructors.  A comparison of two of
them becomes ordinary comparisons of their fields: ``=`` all fields equal,
``<>`` some field unequal, ``<`` / ``<=`` / ``>`` / ``>=`` the first unequal
pair decides (a NULL pair before it makes the answer NULL).  ``IS [NOT]
DISTINCT FROM`` compares field by field; ``IS NULL`` holds when every field
is NULL and ``IS NOT NULL`` when none is.  So rows stay off the columnar
paths and both backends run what the fields' comparisons run.
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, UNDEFINED_COLUMN, PgError

from ..execution import expr
from ..execution.rows import RowCtor, RowInSubquery, record_compare

#: a binder's comparison of two bound operands (types unified, 42883 if none)
Compare = Callable[[str, expr.Expr, expr.Expr], expr.Expr]

_STRICT = {"<": "<", "<=": "<", ">": ">", ">=": ">"}


def is_row_subquery(node) -> bool:
    """``(SELECT x, y ...)`` as an operand: a row subquery, when it has more
    than one output column (not implemented here)."""
    while isinstance(node, exp.Paren):
        node = node.this
    q = node.this if isinstance(node, exp.Subquery) else node
    return isinstance(q, exp.Select) and len(q.expressions) > 1


def constructor_fields(node) -> list | None:
    """The field expressions of a row constructor (``ROW(...)``, or a
    parenthesised list of two or more), None for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Tuple) and len(node.expressions) > 1:
        return list(node.expressions)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "row":
        return list(node.expressions)
    return None


def bind_constructor(bind: Callable, fields: list) -> RowCtor:
    """``ROW(f1, ...)``: a literal of unknown type stays unknown in the
    row, as in PostgreSQL (its binary field is sent as type unknown);
    ``ROW(t.*, x)`` takes t's columns as fields, as PostgreSQL expands it."""
    out: list[expr.Expr] = []
    for f in fields:
        b = bind(f)
        if isinstance(b, expr.Param) and b.oid == type_oids.UNKNOWN:     # nothing gives it a type in a row
            raise PgError("42P18", f"could not determine data type of parameter ${b.idx + 1}")
        star = isinstance(f, exp.Column) and isinstance(f.this, exp.Star)
        out.extend(b.args if star and isinstance(b, RowCtor) else [b])
    return RowCtor(out)


def record_comparison_refused() -> PgError:
    """A row value compared with something that is not one (``ROW(a, b) =
    (SELECT x, y)``, a row against a literal), or quantified over a
    subquery or array of rows: not implemented here."""
    return PgError(FEATURE_NOT_SUPPORTED, "this comparison of row values is not supported",
                   hint="Compare two row values, ROW(t.a, t.b) = ROW(u.a, u.b), or use (a, b) IN (SELECT ...).")


def records_compared(op: str, left: expr.Expr, right: expr.Expr) -> expr.Expr:
    """Two row values, not both constructors: compared as records; a row
    against any other type is refused (PostgreSQL would read a literal as
    record input, which it does not implement for anonymous records)."""
    if type_oids.UNKNOWN in (left.oid, right.oid):
        raise PgError(FEATURE_NOT_SUPPORTED, "input of anonymous composite types is not implemented")
    if left.oid != type_oids.RECORD or right.oid != type_oids.RECORD:
        raise record_comparison_refused()
    return record_compare(op, left, right)


def field_of(row: RowCtor, name: str) -> expr.Expr:
    """``(ROW(a, b)).f2``: an anonymous row's fields are named f1, f2, ..."""
    if name == "*":
        raise PgError(FEATURE_NOT_SUPPORTED, "(ROW(...)).* is not supported", hint="Name the fields: (ROW(a, b)).f1, or a, b.")
    if name.startswith("f") and name[1:].isdigit() and 1 <= int(name[1:]) <= len(row.args) and name[1] != "0":
        return row.args[int(name[1:]) - 1]
    raise PgError(UNDEFINED_COLUMN, f'could not identify column "{name}" in record data type')


def _unequal() -> PgError:
    return PgError(SYNTAX_ERROR, "unequal number of entries in row expressions")


def _pairs(bind: Callable, left: list, right: list) -> list[tuple[expr.Expr, expr.Expr]]:
    if len(left) != len(right):
        raise _unequal()
    if not left:
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot compare rows of zero length")
    return [(bind(a), bind(b)) for a, b in zip(left, right)]


def compare_rows(op: str, bind: Callable, compare: Compare, left: list, right: list) -> expr.Expr:
    """``ROW(a1, a2) op ROW(b1, b2)`` as comparisons of the fields."""
    pairs = _pairs(bind, left, right)
    if op == "=":
        return _all([compare("=", a, b) for a, b in pairs])
    if op == "<>":
        return _any([compare("<>", a, b) for a, b in pairs])
    last_a, last_b = pairs[-1]
    out = compare(op, last_a, last_b)
    for a, b in reversed(pairs[:-1]):       # a1 < b1 OR (a1 = b1 AND (rest))
        out = expr.Or([compare(_STRICT[op], a, b), expr.And([compare("=", a, b), out])])
    return out


def distinct_rows(bind: Callable, unify: Callable, left: list, right: list, negate: bool) -> expr.Expr:
    """``ROW(...) IS [NOT] DISTINCT FROM ROW(...)``: some field distinct
    (NOT: no field distinct)."""
    tests: list[expr.Expr] = []
    for a, b in _pairs(bind, left, right):
        if type_oids.RECORD in (a.oid, b.oid):      # a row inside the rows: as records
            tests.append(records_compared("IS NOT DISTINCT FROM" if negate else "IS DISTINCT FROM", a, b))
            continue
        a, b = unify(a, b, "comparison")
        tests.append(expr.IsDistinct(a, b, negate=negate))
    return _all(tests) if negate else _any(tests)


def null_test(fields: list[expr.Expr], negate: bool) -> expr.Expr:
    """``row IS NULL``: every field NULL; ``IS NOT NULL``: no field NULL
    (so a row with some NULL fields is neither)."""
    if not fields:
        return expr.Const(not negate, type_oids.BOOL)      # PostgreSQL: ROW() IS NULL is true, IS NOT NULL false
    return _all([expr.IsNull(f, negate=negate) for f in fields])


def in_list(bind: Callable, compare: Compare, left: list, items: list) -> expr.Expr:
    """``(a, b) IN ((1, 2), (3, 4))``: the row equal to some item."""
    tests = []
    for item in items:
        fields = constructor_fields(item)
        if fields is None:
            raise expr.operator_missing("=", type_oids.RECORD, bind(item).oid)
        tests.append(compare_rows("=", bind, compare, left, fields))
    return _any(tests)


def in_subquery(bind: Callable, unify: Callable, left: list, plan, correlated: bool) -> expr.Expr:
    """``(a, b) IN (SELECT x, y ...)``: the subquery's columns must match
    the row's fields in number (42601) and be comparable with them (42883)."""
    if len(plan.out) != len(left):
        raise PgError(SYNTAX_ERROR, f"subquery has too {'many' if len(plan.out) > len(left) else 'few'} columns")
    fields = []
    for node, col in zip(left, plan.out):
        f = bind(node)
        try:
            f, _ = unify(f, expr.Const(None, col.oid), "comparison")
        except PgError as e:
            raise expr.operator_missing("=", f.oid, col.oid) if e.sqlstate == "42804" else e from None
        fields.append(f)
    return RowInSubquery(plan, correlated, RowCtor(fields))


def quantified(op: str, kind: str, bind: Callable, unify: Callable, left: list, plan, correlated: bool) -> expr.Expr:
    """``(a, b) = ANY (SELECT ...)`` is ``IN``; ``(a, b) <> ALL (SELECT ...)``
    its negation (a row's ``<>`` is NOT of its ``=``, NULLs included); other
    operators over a row subquery are refused (0A000)."""
    if (op, kind) == ("=", "any"):
        return in_subquery(bind, unify, left, plan, correlated)
    if (op, kind) == ("<>", "all"):
        return expr.Not(in_subquery(bind, unify, left, plan, correlated))
    raise PgError(FEATURE_NOT_SUPPORTED, f"row comparison {op} {kind.upper()} (subquery) is not supported",
                  hint="Use (a, b) IN (SELECT ...) / NOT IN, or compare the fields in an EXISTS subquery.")


def _all(tests: list[expr.Expr]) -> expr.Expr:
    return tests[0] if len(tests) == 1 else expr.And(tests)


def _any(tests: list[expr.Expr]) -> expr.Expr:
    return tests[0] if len(tests) == 1 else expr.Or(tests)
