"""Where an operator or a cast is written, kept on its parse node.

PostgreSQL places an error about an operator ("operator does not exist",
"operator is not unique") at the operator's token, and an error about a
cast ("cannot cast type boolean to bigint") at the ``::`` or at ``CAST``.
sqlglot keeps offsets only for names and literals, so the dialect's parser
calls :func:`mark_operator` / :func:`mark_cast` as it builds those nodes,
and the binder reads the mark back with :func:`bound_error_position` when
binding the node itself fails.
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import Token, TokenType

from splitstream.protocol.errors import (
    AMBIGUOUS_FUNCTION, CANNOT_COERCE, INVALID_NAME, SYNTAX_ERROR, UNDEFINED_FUNCTION, UNDEFINED_OBJECT, UNDEFINED_SCHEMA,
    UNDEFINED_TABLE, PgError,
)

#: ``exp.Expr.meta`` keys: the 0-based offset of the operator (or ``::`` / ``CAST``) and its text
OP_START = "op_start"
OP_TEXT = "op_text"
#: a cast's 0-based offset of its type name (an unknown type is placed there)
TYPE_START = "type_start"


def _operator_tokens() -> dict[type, frozenset[TokenType]]:
    """The tokens each binary node class is read from (sqlglot's tables, and
    the operators PostgreSQL's grammar reads that sqlglot parses elsewhere)."""
    found: dict[type, set[TokenType]] = {exp.DPipe: {TokenType.DPIPE}}
    for table in (PostgresParser.EQUALITY, PostgresParser.COMPARISON, PostgresParser.BITWISE,
                  PostgresParser.TERM, PostgresParser.FACTOR, PostgresParser.EXPONENT):
        for token, klass in table.items():
            found.setdefault(klass, set()).add(token)
    found.pop(exp.Collate, None)
    return {k: frozenset(v) for k, v in found.items()}


_OPERATOR_TOKENS = _operator_tokens()
_ANY_OPERATOR = frozenset().union(*_OPERATOR_TOKENS.values())
#: tokens after which ``-`` / ``+`` is a sign, not a binary operator
_NO_OPERAND = _ANY_OPERATOR | {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.COMMA}
#: what the input of a reg* type says of a name it does not find
_NAME_INPUT = frozenset((SYNTAX_ERROR, UNDEFINED_TABLE, UNDEFINED_OBJECT, UNDEFINED_SCHEMA, INVALID_NAME,
                         UNDEFINED_FUNCTION, AMBIGUOUS_FUNCTION))
_OPEN = {TokenType.R_PAREN: TokenType.L_PAREN, TokenType.R_BRACKET: TokenType.L_BRACKET}


def mark_operator(tokens: list[Token], end: int, node: exp.Expr) -> None:
    """Mark binary ``node``, just built from ``tokens[:end]``, with its
    operator's token: the last one of its kind before ``end`` outside
    parentheses (its right operand lies after it), not a sign."""
    kinds = _OPERATOR_TOKENS.get(type(node))
    if kinds is None:
        return
    closes: list[TokenType] = []
    for i in range(end - 1, 0, -1):
        t = tokens[i].token_type
        if t in _OPEN:
            closes.append(_OPEN[t])
        elif closes:
            if t == closes[-1]:
                closes.pop()
        elif t in kinds and tokens[i - 1].token_type not in _NO_OPERAND:
            _mark(node, tokens[i])
            return
        elif t in (TokenType.L_PAREN, TokenType.L_BRACKET):
            return


def mark_prefix(tokens: list[Token], start: int, node: exp.Expr | None) -> None:
    """Mark a prefix operator (``-x``) read from ``tokens[start]`` on."""
    if isinstance(node, (exp.Neg, exp.BitwiseNot)) and start < len(tokens) \
            and tokens[start].token_type in (TokenType.DASH, TokenType.TILDE, TokenType.RLIKE):
        _mark(node, tokens[start])


def mark_cast(tokens: list[Token], end: int, node: exp.Expr) -> None:
    """Mark the cast ``x::type`` just read from ``tokens[:end]`` with its
    ``::`` (the last one before ``end``: a type name holds none)."""
    for i in range(end - 1, -1, -1):
        if tokens[i].token_type == TokenType.DCOLON:
            _mark(node, tokens[i])
            if i + 1 < end:
                node.meta[TYPE_START] = tokens[i + 1].start
            return


def _mark(node: exp.Expr, token: Token) -> None:
    node.meta[OP_START] = token.start
    node.meta[OP_TEXT] = token.text


def mark_keyword(tokens: list[Token], start: int, end: int, node: exp.Expr) -> None:
    """Mark ``CAST(x AS type)``, read from ``tokens[start:end]`` (the
    keyword first), with its keyword and its type: after the last AS
    outside the operand's own parentheses."""
    if start < 0 or tokens[start].text.upper() != "CAST":
        return
    _mark(node, tokens[start])
    depth, after_as = 0, None
    for i in range(start + 2, end - 1):
        t = tokens[i].token_type
        depth += (t in (TokenType.L_PAREN, TokenType.L_BRACKET)) - (t in (TokenType.R_PAREN, TokenType.R_BRACKET))
        if depth == 0 and t == TokenType.ALIAS:
            after_as = i + 1
    if after_as is not None:
        node.meta[TYPE_START] = tokens[after_as].start


def bound_error_position(node: Any, err: PgError) -> int | None:
    """1-based position for ``err``, raised while binding ``node``, when it
    is about ``node`` itself: a cast's 42846 (or its quoted literal's input
    error, a reg* name not found included, placed at the literal as
    coerce_type does), an operator's
    42883/42725 naming that operator. None otherwise (a child's error keeps
    its own)."""
    meta = getattr(node, "meta", None)
    if err.position is not None or meta is None:
        return None
    if err.sqlstate.startswith("22") or (err.sqlstate in _NAME_INPUT and _to_reg_type(node)):
        # a quoted literal's input function refused it (a reg* name too): placed there
        literal = _refused_literal(node, err)
        return None if literal is None else literal.meta["start"] + 1
    if err.sqlstate == UNDEFINED_OBJECT and err.message.startswith('type "') and TYPE_START in meta:
        return meta[TYPE_START] + 1
    if OP_START not in meta:
        return None
    if isinstance(node, exp.Cast):
        about = err.sqlstate == CANNOT_COERCE and err.message.startswith("cannot cast type ")
    else:
        op = "<>" if meta[OP_TEXT] == "!=" else meta[OP_TEXT]
        head, _, operands = err.message.partition(": ")
        named = operands.startswith(f"{op} ") if isinstance(node, exp.Unary) else f" {op} " in operands
        about = err.sqlstate in (UNDEFINED_FUNCTION, AMBIGUOUS_FUNCTION) and named and head in (
            "operator does not exist", "operator is not unique")
    return meta[OP_START] + 1 if about else None


def _to_reg_type(node: exp.Expr) -> bool:
    """A cast to a reg* type (whose input looks the name up)."""
    return isinstance(node, exp.Cast) and node.to.sql().lower().lstrip("_").startswith("reg")


def _refused_literal(node: exp.Expr, err: PgError) -> exp.Expr | None:
    """The quoted literal a cast ``node`` converts (whose input ``err`` is)."""
    if not isinstance(node, exp.Cast):
        return None         # (an operator's literal operand is placed where it is coerced: Planner.coerce)
    literal = node.this.unnest()
    return literal if isinstance(literal, exp.Literal) and literal.is_string and "start" in literal.meta else None
