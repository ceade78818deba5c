"""ORDER BY, GROUP BY and DISTINCT ON items that name a select-list entry:
PostgreSQL's findTargetlistEntrySQL92 (parse_clause.c).

Why a module of its own: the three clauses share one rule with two
twists, and getting it subtly wrong changes results, not just errors.
A bare name is matched against the output column names first (every
item's name, aliased or not: ``ORDER BY count``, ``ORDER BY "?column?"``);
two matching items that compute different things are ambiguous (42702).
GROUP BY looks at the FROM clause's columns first and only then at the
output names. A constant is a position when it is an integer, else 42601.
Anything else (``ORDER BY a + 1``) is an expression over the input.
The clauses also need the items' types to have equality (DISTINCT, GROUP
BY, UNION) or ordering (ORDER BY): json has neither (42883).
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (AMBIGUOUS_COLUMN, FEATURE_NOT_SUPPORTED, INVALID_COLUMN_REFERENCE, SYNTAX_ERROR,
                                        UNDEFINED_COLUMN, UNDEFINED_FUNCTION, UNDEFINED_TABLE, PgError)

from ..binder import ident
from ..dialect import DIALECT

_INT4_MAX = 2**31 - 1


def unparen(node: exp.Expression) -> exp.Expression:
    """The grammar drops parentheses: ``ORDER BY (2)`` is a position."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def item_sql(item: exp.Expression) -> str:
    """A select-list item's expression as text, alias and parentheses aside."""
    return unparen(item.this if isinstance(item, exp.Alias) else item).sql(DIALECT)


def bare_name(node: exp.Expression) -> str | None:
    """The name of an unqualified column reference, else None."""
    node = unparen(node)
    if isinstance(node, exp.Column) and not node.args.get("table") and isinstance(node.this, exp.Identifier):
        return ident(node.this)
    return None


def constant_position(node: exp.Expression, clause: str, count: int) -> int | None:
    """The 0-based select-list position an integer constant names; other
    constants are refused as PostgreSQL refuses them; None for a non-constant."""
    node = unparen(node)
    sign = 1
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        sign, node = -1, node.this          # the grammar folds -1 into one constant
    if isinstance(node, (exp.Null, exp.Boolean)) or (isinstance(node, exp.Literal) and node.is_string):
        raise PgError(SYNTAX_ERROR, f"non-integer constant in {clause}")
    if not isinstance(node, exp.Literal):
        return None
    text = node.this
    if not text.isdigit() or int(text) > _INT4_MAX:
        raise PgError(SYNTAX_ERROR, f"non-integer constant in {clause}")
    k = sign * int(text)
    if not 1 <= k <= count:
        raise PgError(INVALID_COLUMN_REFERENCE, f"{clause} position {k} is not in select list")
    return k - 1


def output_name_match(name: str, names: list[str], same: Callable[[int, int], bool], clause: str) -> int | None:
    """The first output column called ``name``; 42702 when another one of
    that name computes something else."""
    hits = [i for i, n in enumerate(names) if n == name]
    if not hits:
        return None
    for j in hits[1:]:
        if not same(hits[0], j):
            raise PgError(AMBIGUOUS_COLUMN, f'{clause} "{name}" is ambiguous')
    return hits[0]


def setop_order_target(node: exp.Expression, names: list[str]) -> int:
    """The result column a UNION / INTERSECT / EXCEPT ORDER BY item names:
    only result columns (by name or position) can be sorted on there."""
    nm = bare_name(node)
    if nm is not None:
        hit = output_name_match(nm, names, lambda i, j: i == j, "ORDER BY")
        if hit is None:
            raise PgError(UNDEFINED_COLUMN, f'column "{nm}" does not exist')
        return hit
    k = constant_position(node, "ORDER BY", len(names))
    if k is not None:
        return k
    for col in node.find_all(exp.Column):
        if col.args.get("table"):
            raise PgError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{ident(col.args["table"])}"')
        if isinstance(col.this, exp.Identifier) and ident(col.this) not in names:
            raise PgError(UNDEFINED_COLUMN, f'column "{ident(col.this)}" does not exist')
    raise PgError(FEATURE_NOT_SUPPORTED, "invalid UNION/INTERSECT/EXCEPT ORDER BY clause",
                  detail="Only result column names can be used, not expressions or functions.",
                  hint="Add the expression/function to every SELECT, or move the UNION into a FROM clause.")


def require_equality(oids) -> None:
    """DISTINCT, GROUP BY and UNION compare values: json has no equality
    operator in PostgreSQL (jsonb has), so they refuse it."""
    if type_oids.JSON in oids:
        raise PgError(UNDEFINED_FUNCTION, "could not identify an equality operator for type json")


def require_ordering(oids) -> None:
    """ORDER BY needs an ordering operator, which json lacks."""
    if type_oids.JSON in oids:
        raise PgError(UNDEFINED_FUNCTION, "could not identify an ordering operator for type json",
                      hint="Use an explicit ordering operator or modify the query.")
