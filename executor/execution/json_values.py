"""Typed values as JSON text (datum_to_json), and the JSON aggregates'
finishing: json_agg, jsonb_agg, json_object_agg, jsonb_object_agg.

Why a module of its own: PostgreSQL writes each type its own way in JSON
(numbers bare unless NaN or infinite, dates and timestamps in ISO 8601 with
a ``T`` and the session zone's offset, arrays without spaces, json
embedded as written) and json_agg keeps its own spacing (``[1, 2]``, a
newline before a nested array) while the jsonb forms normalise.  The
aggregates collect each row's JSON text, computed by :func:`json_input`
with the session's settings, in a list state (mergeable by
concatenation), and :func:`finish` joins them.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from typing import Any

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.composite import Record
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from . import expr

JSON_AGGREGATES = {"json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg"}
#: the types datum_to_json writes as bare numbers (oid is not one: it is quoted)
_NUMBERS = (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8, type_oids.NUMERIC)


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _xsd_offset(off: dt.timedelta) -> str:
    secs = int(off.total_seconds())
    sign, secs = ("-" if secs < 0 else "+"), abs(secs)
    text = f"{sign}{secs // 3600:02d}:{secs % 3600 // 60:02d}"
    return text + (f":{secs % 60:02d}" if secs % 60 else "")


def _timestamp(v: dt.datetime, zone: dt.tzinfo | None) -> str:
    if wiretypes.is_pos_infinity(v) or wiretypes.is_neg_infinity(v):
        return _quote("infinity" if wiretypes.is_pos_infinity(v) else "-infinity")
    if zone is None:
        return _quote(wiretypes.format_timestamp(v).replace(" ", "T", 1))
    local = v.astimezone(zone)
    text = wiretypes.format_timestamp(local.replace(tzinfo=None)).replace(" ", "T", 1)
    return _quote(text + _xsd_offset(local.utcoffset() or dt.timedelta(0)))


def json_text(oid: int, v: Any, tz: str) -> str:
    """One value as JSON text (datum_to_json); ``null`` for NULL."""
    if v is None:
        return "null"
    if oid == type_oids.BOOL:
        return "true" if v else "false"
    if oid in _NUMBERS:
        text = wiretypes.encode_text(oid, v).decode()
        finite = not ((isinstance(v, float) and not math.isfinite(v))
                      or (isinstance(v, decimal.Decimal) and not v.is_finite()))
        return text if finite else _quote(text)
    if oid in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        return _timestamp(v, wiretypes.zone_of(tz) if oid == type_oids.TIMESTAMPTZ else None)
    if oid == type_oids.JSON:
        return v if isinstance(v, str) else json.dumps(v)
    if oid == type_oids.JSONB:
        return wiretypes.encode_text(oid, v).decode()
    if oid == type_oids.RECORD and isinstance(v, Record):     # a row: an object of its fields
        return "{" + ",".join(_quote(k) + ":" + json_text(o, x, tz) for k, o, x in zip(v.field_names(), v.oids, v.values)) + "}"
    elem = type_oids.ELEMENT_OF.get(oid)
    if elem is not None and oid not in (type_oids.INT2VECTOR, type_oids.OIDVECTOR):
        return _array(elem, v, tz)
    return _quote(wiretypes.encode_text(oid, v, tz=tz).decode())


def _array(elem: int, v: list, tz: str) -> str:
    """array_to_json: nested lists, no spaces."""
    return "[" + ",".join(_array(elem, x, tz) if isinstance(x, list) else json_text(elem, x, tz) for x in v) + "]"


def key_text(oid: int, v: Any, tz: str) -> str:
    """A json_object_agg key: a scalar's text, as a JSON string."""
    if v is None:
        raise PgError(INVALID_PARAMETER_VALUE, "field name must not be null")
    if oid in type_oids.ELEMENT_OF or oid in (type_oids.JSON, type_oids.JSONB):
        raise PgError(INVALID_PARAMETER_VALUE, "key value must be scalar, not array, composite, or json")
    text = json_text(oid, v, tz)
    return text if text.startswith('"') else _quote(text)


def _texts(arg: expr.Expr, fn):
    def impl(cols, n, ctx):
        tz = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
        return Col.from_pylist([fn(arg.oid, v, tz) for v in cols[0].to_pylist()], type_oids.TEXT)

    return impl


class RowObject(expr.Func):
    """A relation's whole row in a JSON aggregate (``json_agg(t)``): the
    object row_to_json writes, ``{"a":1,"b":null}``, its keys the column
    names; ``pretty`` (row_to_json's second argument, a boolean per row)
    puts each field after the first on a line of its own, as
    composite_to_json's line feeds do (a NULL flag makes the result NULL:
    row_to_json is strict)."""

    def __init__(self, names: list[str], cols: list[expr.Expr], pretty: expr.Expr | None = None) -> None:
        self.names, self.fields = names, cols

        def impl(columns, n, ctx):
            tz = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
            lists = [c.to_pylist() for c in columns[:len(cols)]]
            flags = columns[len(cols)].to_pylist() if pretty is not None else [False] * n
            keys = [_quote(name) + ":" for name in names]
            rows = [None if flag is None else
                    "{" + (",\n " if flag else ",").join(k + json_text(c.oid, v, tz) for k, c, v in zip(keys, cols, values))
                    + "}" for flag, values in zip(flags, zip(*lists) if lists else [()] * n)]
            return Col.from_pylist(rows, type_oids.JSON)

        super().__init__("row_to_json", impl, cols + ([pretty] if pretty is not None else []), type_oids.JSON)


def pretty_row(row: RowObject, flag: expr.Expr) -> RowObject:
    """row_to_json(t, pretty)."""
    return RowObject(row.names, row.fields, flag)


def json_input(arg: expr.Expr) -> expr.Expr:
    """The row's value as JSON text (``null`` for NULL): what the state keeps."""
    return expr.Func("to_json", _texts(arg, json_text), [arg], type_oids.TEXT)


def json_key(arg: expr.Expr) -> expr.Expr:
    """The row's key as a JSON string; a NULL key stays NULL until the row is taken."""
    return expr.Func("to_json", _texts(arg, lambda oid, v, tz: None if v is None else key_text(oid, v, tz)),
                     [arg], type_oids.TEXT)


def aggregate_inputs(args: list[expr.Expr]) -> list[expr.Expr]:
    """A JSON aggregate's arguments as the texts its state keeps: (value)
    or (key, value)."""
    return [json_key(args[0]), json_input(args[1])] if len(args) == 2 else [json_input(args[0])]


def finish(fn: str, rows: list, input_oid: int) -> str | None:
    """The aggregate's result from the collected (text, ...) rows; NULL for
    none.  json_agg puts a newline before each later element of an array type."""
    if not rows:
        return None
    if fn in ("json_object_agg", "jsonb_object_agg"):
        if any(r[0] is None for r in rows):
            raise PgError(INVALID_PARAMETER_VALUE, "field name must not be null")
        if fn == "jsonb_object_agg":
            return wiretypes.normalize_jsonb("{" + ", ".join(f"{r[0]}: {r[1]}" for r in rows) + "}")
        return "{ " + ", ".join(f"{r[0]} : {r[1]}" for r in rows) + " }"
    if fn == "jsonb_agg":
        return wiretypes.normalize_jsonb("[" + ", ".join(r[0] for r in rows) + "]")
    nested = input_oid in type_oids.ELEMENT_OF or input_oid == type_oids.RECORD
    out = [rows[0][0]]
    for r in rows[1:]:
        out.append((", \n " if nested and r[0] != "null" else ", ") + r[0])
    return "[" + "".join(out) + "]"
