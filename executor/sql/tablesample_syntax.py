"""TABLESAMPLE's syntax as PostgreSQL has it (issue 18).

Why its own parser: sqlglot's reads only a number as the argument (not an
expression, not ``REPEATABLE (NULL)``) and forgets whether ``%`` was
written, which DuckDB's ``RESERVOIR (10%)`` vs ``RESERVOIR (10)`` needs.
A module of its own because the dialect imports it (no binder here).
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType

UNITS = "unit"        # TableSample meta key: "rows", "percent" or absent (as written)


def parse_table_sample(self: Any, as_modifier: bool = False) -> exp.TableSample | None:
    """``TABLESAMPLE method ( expr [, ...] [% | PERCENT | ROWS] ) [REPEATABLE ( expr )]``
    (a method of the dialect's Parser)."""
    if not self._match(TokenType.TABLE_SAMPLE) and not (as_modifier and self._match_text_seq("USING", "SAMPLE")):
        return None
    method = self._parse_var(tokens=(TokenType.ROW,), upper=True)
    self._match_l_paren()
    unit = None
    if _percent_literal(self):              # DuckDB's RESERVOIR (10%): not a modulo
        args = [self._parse_primary()]
        self._advance()
        unit = "percent"
    else:
        args = self._parse_csv(self._parse_assignment)
    if unit is None and (self._match_set((TokenType.PERCENT, TokenType.MOD)) or self._match_text_seq("PERCENT")):
        unit = "percent"
    elif self._match(TokenType.ROWS):
        unit = "rows"
    self._match_r_paren()
    seed = None
    if self._match_texts(("REPEATABLE", "SEED")):
        seed = self._parse_wrapped(self._parse_assignment)
    node = exp.TableSample(method=method, percent=args[0] if len(args) == 1 else None,
                           expressions=args if len(args) != 1 else None, seed=seed)
    if unit:
        node.meta[UNITS] = unit
    return node


def _percent_literal(self: Any) -> bool:
    toks = self._tokens[self._index: self._index + 3]
    return len(toks) == 3 and toks[0].token_type == TokenType.NUMBER \
        and toks[1].token_type in (TokenType.MOD, TokenType.PERCENT) and toks[2].token_type == TokenType.R_PAREN
