"""Row values (PostgreSQL's anonymous ``record``, oid 2249, and a table's row
type): the Python value of one row and its wire codecs.

A :class:`Record` holds its field values (each in ``types``' value contract,
None for NULL) and each field's type oid, since the binary format names them
and the text format prints each by its own type.  Output is record_out's and
record_send's: ``(1,"a b",)`` with a field quoted when it is empty or holds a
quote, backslash, parenthesis, comma or white space (quotes and backslashes
doubled), a NULL field empty; binary is the field count, then per field its
type oid, length (-1 for NULL) and send bytes.

The codecs register themselves into ``types`` when this module is imported
(``types`` imports it last), so every path that encodes a value by oid
(DataRow, COPY TO, array output) prints records.
"""
from __future__ import annotations

import struct
from typing import Any, Sequence

from . import types as _types

_I4 = struct.Struct("!i")
_I4I4 = struct.Struct("!Ii")
#: characters that make record_out quote a field (isspace() in the C locale too)
_QUOTE_CHARS = frozenset('"\\(),') | frozenset(" \t\n\r\v\f")


class Record:
    """One row value: its fields, their type oids and, for a table's row,
    their names (None: an anonymous row's f1, f2, ..., as to_json names
    them).  Equality and hashing are the fields' Python ones (a whole
    value's, as GROUP BY keys need); SQL's comparison of rows is the
    executor's (field by field by type)."""

    __slots__ = ("values", "oids", "names")

    def __init__(self, values: Sequence[Any], oids: Sequence[int], names: tuple[str, ...] | None = None) -> None:
        self.values = tuple(values)
        self.oids = tuple(oids)
        self.names = names

    def field_names(self) -> tuple[str, ...]:
        return self.names if self.names is not None else tuple(f"f{i}" for i in range(1, len(self.values) + 1))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self.values == other.values

    def __hash__(self) -> int:
        return hash(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Record{self.values!r}"

    def __str__(self) -> str:
        return record_text(self, "UTC")


def _field_text(s: str) -> str:
    if s and not any(ch in _QUOTE_CHARS for ch in s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '""') + '"'


def record_text(v: Record, tz: str) -> str:
    """record_out: ``(f1,f2,...)``, fields quoted where PostgreSQL quotes them."""
    parts = ["" if x is None else _field_text(_types._text_out(o, x, tz)) for x, o in zip(v.values, v.oids)]
    return "(" + ",".join(parts) + ")"


def record_send(v: Record) -> bytes:
    """record_send: field count, then (oid, length, bytes) per field."""
    out = [_I4.pack(len(v.values))]
    for x, o in zip(v.values, v.oids):
        if x is None:
            out.append(_I4I4.pack(o, -1))
        else:
            b = _types.encode_binary(o, x)
            out.append(_I4I4.pack(o, len(b)) + b)
    return b"".join(out)


_types._TEXT_OUT[_types.RECORD] = record_text
_types._BIN_SEND[_types.RECORD] = record_send
