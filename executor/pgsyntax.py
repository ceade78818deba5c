"""Small extensions of sqlglot's PostgreSQL parser for what real clients send.

* ``x::oid[]``, ``$1::regclass[]`` ...: sqlglot parses the object-identifier
  types as ``ObjectIdentifier`` and then fails on ``[]`` (asyncpg's type
  introspection sends ``$1::oid[]``).  They become the array type ``_oid``.

Imported for its side effect by :mod:`executor.statement`.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType

_orig_parse_types = Postgres.Parser._parse_types


def _parse_types(self, *args, **kwargs):
    this = _orig_parse_types(self, *args, **kwargs)
    if isinstance(this, exp.ObjectIdentifier):
        dims = 0
        while self._curr is not None and self._curr.token_type == TokenType.L_BRACKET \
                and self._next is not None and self._next.token_type == TokenType.R_BRACKET:
            self._advance(2)
            dims += 1
        if dims:
            return exp.DataType.build("_" + this.name.lower(), udt=True)
    return this


if not getattr(Postgres.Parser, "_splitstream_patched", False):
    Postgres.Parser._parse_types = _parse_types
    Postgres.Parser._splitstream_patched = True
