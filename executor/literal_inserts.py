"""A statement cache for simple-protocol ``INSERT ... VALUES (literals)`` (issue 19).

Clients without prepared statements send each row as its own text, so the
plan cache, keyed by text, never hits and every row pays sqlglot and the
binder (~1 ms).  Here a one-row ``INSERT INTO target [(columns)] VALUES
(...)`` whose items are plain literals is normalised to ``... VALUES ($1,
...)``: numbers become parameters typed as the literal would be (int4,
int8 or numeric), strings and NULL parameters of the type the target
column gives them (as an untyped literal gets), booleans bool.  The
normalised text is planned once and cached like any prepared statement;
each string is converted by the column type's input function, which is
what PostgreSQL does with an untyped literal, so the rows and the errors
are the same.  Only types whose text input does not depend on a setting
take strings this way (a date's depends on DateStyle): anything else, and
any statement that is not exactly this shape, goes the usual way.
"""
from __future__ import annotations

import decimal
from typing import Any

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes

from .commands.fast_insert import _HEAD, _tokens

#: column types a string literal may reach as a parameter (their input ignores DateStyle and the like)
_STRING_TARGETS = frozenset((type_oids.TEXT, type_oids.VARCHAR, type_oids.INT2, type_oids.INT4, type_oids.INT8,
                             type_oids.FLOAT4, type_oids.FLOAT8, type_oids.NUMERIC, type_oids.BOOL))


class Literals:
    """A normalised INSERT: its text, parameter types and the literals' values
    (strings still as text, converted once the column types are known)."""

    __slots__ = ("sql", "param_oids", "values", "strings")

    def __init__(self, sql: str, param_oids: list[int], values: list[Any], strings: list[int]) -> None:
        self.sql = sql
        self.param_oids = param_oids
        self.values = values
        self.strings = strings        # indexes of the string literals

    def params(self, resolved_oids: list[int], tz: str) -> list[Any] | None:
        """The parameter values for the planned statement's parameter types, or
        None when a string goes to a type this cache does not convert."""
        if not self.strings:
            return self.values
        out = list(self.values)
        for k in self.strings:
            oid = resolved_oids[k]
            if oid not in _STRING_TARGETS:
                return None
            out[k] = wiretypes.decode_text(oid, out[k], tz=tz)
        return out


def normalise(sql: str) -> Literals | None:
    """``sql`` as a parameterised one-row INSERT of literals, or None."""
    m = _HEAD.match(sql)
    if m is None:
        return None
    items: list[tuple[str, str]] = []
    state = 0                         # 0 before '(', 1 expecting an item, 2 after an item, 3 after ')'
    try:
        for t in _tokens(sql, m.end()):
            kind = t.lastgroup or ""
            tok = t.group(kind)
            if kind == "punct":
                if tok == "(" and state == 0:
                    state = 1
                elif tok == "," and state == 2:
                    state = 1
                elif tok == ")" and state == 2:
                    state = 3
                elif tok == ";" and state == 3:
                    state = 4
                else:
                    return None
            elif state == 1 and kind in ("str", "num", "kw") and tok.lower() != "default" \
                    and not tok.startswith(("E'", "e'")):
                items.append((kind, tok))
                state = 2
            else:
                return None
    except ValueError:
        return None
    if state not in (3, 4) or not items:
        return None
    return _literals(m.group("target"), items)


def _literals(target: str, items: list[tuple[str, str]]) -> Literals:
    oids: list[int] = []
    values: list[Any] = []
    strings: list[int] = []
    for k, (kind, tok) in enumerate(items):
        if kind == "str":
            oids.append(0)
            values.append(tok[1:-1].replace("''", "'"))
            strings.append(k)
        elif kind == "num":
            if any(ch in tok for ch in ".eE"):
                oids.append(type_oids.NUMERIC)
                values.append(decimal.Decimal(tok))
            else:
                v = int(tok)
                oid = sqltypes.int_literal_oid(v)
                oids.append(oid)
                values.append(decimal.Decimal(v) if oid == type_oids.NUMERIC else v)
        else:
            low = tok.lower()
            oids.append(0 if low == "null" else type_oids.BOOL)
            values.append(None if low == "null" else low == "true")
    text = f"INSERT INTO {target} VALUES ({', '.join(f'${k + 1}' for k in range(len(items)))})"
    return Literals(text, oids, values, strings)
