"""Small extensions of sqlglot's PostgreSQL parser for what real clients send.

* ``x::oid[]``, ``$1::regclass[]`` ...: sqlglot parses the object-identifier
  types as ``ObjectIdentifier`` and then fails on ``[]`` (asyncpg's type
  introspection sends ``$1::oid[]``).  They become the array type ``_oid``.
* ``date_part(...)`` is parsed as EXTRACT but marked, since its result type
  differs (double precision, not numeric); ``now()`` likewise stays ``now()``.

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


_orig_parse_type = Postgres.Parser._parse_type


def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False):
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
    return _orig_parse_type(self, parse_interval, fallback_to_identifier)


_orig_date_part = Postgres.Parser.FUNCTION_PARSERS["DATE_PART"]


def _parse_date_part(self):
    """sqlglot turns date_part() into EXTRACT, but PostgreSQL's date_part
    returns double precision where EXTRACT returns numeric: remember which."""
    node = _orig_date_part(self)
    if isinstance(node, exp.Extract):
        node.meta["date_part"] = True
    return node


def _now(args):
    """now() parses as CURRENT_TIMESTAMP; marked so a column default deparses
    as PostgreSQL prints it (``now()``, not ``CURRENT_TIMESTAMP``)."""
    node = exp.CurrentTimestamp.from_arg_list(args)
    node.meta["now"] = True
    return node


if not getattr(Postgres.Parser, "_splitstream_patched", False):
    Postgres.Parser.FUNCTION_PARSERS = {**Postgres.Parser.FUNCTION_PARSERS, "DATE_PART": _parse_date_part}
    Postgres.Parser.FUNCTIONS = {**Postgres.Parser.FUNCTIONS, "NOW": _now}
    _orig_ct = Postgres.Generator.TRANSFORMS.get(exp.CurrentTimestamp)
    Postgres.Generator.TRANSFORMS = {
        **Postgres.Generator.TRANSFORMS,
        exp.CurrentTimestamp: lambda self, e: "NOW()" if e.meta.get("now") else (
            _orig_ct(self, e) if _orig_ct else "CURRENT_TIMESTAMP"),
    }
    Postgres.Parser._parse_types = _parse_types
    Postgres.Parser._parse_type = _parse_type
    Postgres.Parser._splitstream_patched = True
