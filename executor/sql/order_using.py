"""``ORDER BY expr USING operator`` as PostgreSQL reads it (its grammar's
``sortby: a_expr USING qual_all_Op opt_nulls_order``).

The btree ordering operators of a type are ``<`` (ascending, NULLS LAST by
default) and ``>`` (descending, NULLS FIRST): the dialect reads them as ASC
and DESC, as PostgreSQL's own deparser prints them. Its other comparison
operators are not ordering operators (PostgreSQL's 42809); any other
operator is refused, never read as something else. A module of its own
because the dialect imports it (no binder here).
"""
from __future__ import annotations

from typing import Any

from sqlglot.tokens import TokenType

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, WRONG_OBJECT_TYPE, PgError

#: ordering operator -> descending?
_ORDERING = {"<": False, ">": True}
_NOT_ORDERING = frozenset(("=", "<=", ">=", "<>", "!="))
_OPERATOR_CHARS = frozenset("+-*/<>=~!@#%^&|`?")


class Using:
    """What a ``USING op [NULLS FIRST|LAST]`` after an ORDER BY item said."""

    __slots__ = ("desc", "nulls_written")

    def __init__(self, desc: bool, nulls_written: bool) -> None:
        self.desc, self.nulls_written = desc, nulls_written


def read_using(parser: Any) -> Using | None:
    """After an ORDER BY item's expression (a method's ``self``): None when
    no USING follows, else the direction its operator sorts in."""
    if not parser._match(TokenType.USING):
        return None
    op = _operator(parser)
    if op in _ORDERING:
        curr, nxt = parser._curr, parser._next
        written = curr is not None and nxt is not None and curr.text.upper() == "NULLS" \
            and nxt.text.upper() in ("FIRST", "LAST")
        return Using(_ORDERING[op], written)
    if op in _NOT_ORDERING:
        raise PgError(WRONG_OBJECT_TYPE, f"operator {op} is not a valid ordering operator",
                      hint='Ordering operators must be "<" or ">" members of btree operator families.')
    raise PgError(FEATURE_NOT_SUPPORTED, f"ORDER BY ... USING {op} is not supported",
                  hint="Order by ASC or DESC (USING < or USING >).")


def _operator(parser: Any) -> str:
    """The operator after USING: adjacent operator tokens (``~<~`` is three),
    or ``OPERATOR(schema.op)``."""
    if parser._match(TokenType.OPERATOR):
        parser._match_l_paren()
        parts = []
        while parser._curr is not None and parser._curr.token_type != TokenType.R_PAREN:
            parts.append(parser._curr.text)
            parser._advance()
        parser._match_r_paren()
        return "".join(parts).rsplit(".", 1)[-1]
    parts, end = [], None
    while parser._curr is not None and (end is None or parser._curr.start == end + 1) \
            and parser._curr.text and set(parser._curr.text) <= _OPERATOR_CHARS:
        parts.append(parser._curr.text)
        end = parser._curr.end
        parser._advance()
    if not parts:
        curr = parser._curr
        if curr is not None and curr.token_type == TokenType.SENTINEL:
            curr = None
        raise PgError(SYNTAX_ERROR, "syntax error at end of input" if curr is None else
                      f'syntax error at or near "{curr.text}"', position=None if curr is None else curr.start + 1)
    return "".join(parts)
