"""JSON processing functions of PostgreSQL 15 (manual 9.16): jsonb_set,
jsonb_insert, json[b]_strip_nulls, json[b]_extract_path[_text],
json[b]_build_array, json[b]_object.

Why documents are parsed with numbers as Decimal: jsonb keeps a number's
digits as written (``1.50`` stays ``1.50``), and the output goes through
jsonb_out's own writer (sorted keys, ``", "`` and ``": "``).
"""
from __future__ import annotations

import decimal
import json
from typing import Any, Callable

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import jsonb_text

from . import json_spans
from .functions import register, scalar
from .json_values import json_text

_ARRAY_SUBSCRIPT = "22P02"
_ARRAY_DIMENSION = "2202E"


def load(doc: str) -> Any:
    """A stored json/jsonb text as Python values (numbers as Decimal)."""
    return json.loads(doc, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def _index(container: list, step: str, pos: int) -> int:
    """A path step as an array index (negative from the end); 22P02 when not an integer."""
    try:
        i = int(step)
    except ValueError:
        raise PgError(_ARRAY_SUBSCRIPT, f"path element at position {pos} is not an integer: \"{step}\"") from None
    return i + len(container) if i < 0 else i


def _step(path: list, depth: int) -> tuple[str, bool]:
    """One path element (22004 when NULL) and whether it is the last."""
    if path[depth] is None:
        raise PgError("22004", f"path element at position {depth + 1} is null")
    return path[depth], depth + 1 == len(path)


def _set(v: Any, path: list, new: Any, create: bool, insert: bool, after: bool, depth: int = 0) -> Any:
    """setPath: the document with the value at ``path`` replaced (or created, or inserted)."""
    if depth == len(path):
        return v
    step, last = _step(path, depth)
    if isinstance(v, dict):
        if step in v:
            if last and insert:
                raise PgError(INVALID_PARAMETER_VALUE, "cannot replace existing key",
                              hint="Try using the function jsonb_set to replace key value.")
            v[step] = new if last else _set(v[step], path, new, create, insert, after, depth + 1)
        elif last and create:
            v[step] = new
        return v
    if isinstance(v, list):
        i = _index(v, step, depth + 1)
        n = len(v)
        if last:
            if insert:
                v.insert(max(0, min(n, i + (1 if after else 0))), new)
            elif 0 <= i < n:
                v[i] = new
            elif create:
                v.insert(0 if i < 0 else n, new)
        elif 0 <= i < n:
            v[i] = _set(v[i], path, new, create, insert, after, depth + 1)
        return v
    return v


def _check_path_target(doc: Any) -> None:
    if not isinstance(doc, (dict, list)):
        raise PgError(INVALID_PARAMETER_VALUE, "cannot set path in scalar")


@register("jsonb_set", sigs="jsonb, text[], jsonb -> jsonb | jsonb, text[], jsonb, bool -> jsonb")
def _jsonb_set(cols: list[Col], n: int, ctx) -> Col:
    rows = zip(*(c.to_pylist() for c in cols)) if len(cols) == 4 else \
        ((d, p, v, True) for d, p, v in zip(*(c.to_pylist() for c in cols)))
    out: list[str | None] = []
    for doc, path, new, create in rows:
        if None in (doc, path, new, create):
            out.append(None)
            continue
        d = load(doc)
        _check_path_target(d)
        out.append(jsonb_text(_set(d, list(path), load(new), bool(create), False, False)))
    return Col.from_pylist(out, type_oids.JSONB)


@register("jsonb_insert", sigs="jsonb, text[], jsonb -> jsonb | jsonb, text[], jsonb, bool -> jsonb")
def _jsonb_insert(cols: list[Col], n: int, ctx) -> Col:
    rows = zip(*(c.to_pylist() for c in cols)) if len(cols) == 4 else \
        ((d, p, v, False) for d, p, v in zip(*(c.to_pylist() for c in cols)))
    out: list[str | None] = []
    for doc, path, new, after in rows:
        if None in (doc, path, new, after):
            out.append(None)
            continue
        d = load(doc)
        _check_path_target(d)
        out.append(jsonb_text(_set(d, list(path), load(new), True, True, bool(after))))
    return Col.from_pylist(out, type_oids.JSONB)


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


class _Pairs(list):
    """A json object's members in written order, duplicates kept (the json type keeps them)."""


def _strip_pairs(v: Any) -> Any:
    if isinstance(v, _Pairs):
        return _Pairs((k, _strip_pairs(x)) for k, x in v if x is not None)
    if isinstance(v, list):
        return [_strip_pairs(x) for x in v]
    return v


def _json_strip_nulls(doc: str) -> str:
    parsed = json.loads(doc, parse_float=decimal.Decimal, parse_int=decimal.Decimal, object_pairs_hook=_Pairs)
    return _json_out(_strip_pairs(parsed))


def _json_out(v: Any) -> str:
    """json_strip_nulls' writer: no spaces (it re-emits each token)."""
    if isinstance(v, _Pairs):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json_out(x)}" for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_json_out(x) for x in v) + "]"
    return jsonb_text(v)


scalar("jsonb_strip_nulls", sigs="jsonb -> jsonb")(lambda d: jsonb_text(_strip(load(d))))


def _follow(doc: str, path: list) -> Any:
    """The value at a path of keys and array indexes; a ``_MISSING`` marker when absent."""
    v = load(doc)
    for step in path:
        if step is None:
            return _MISSING
        if isinstance(v, dict) and step in v:
            v = v[step]
        elif isinstance(v, list):
            try:
                i = int(step)
            except ValueError:
                return _MISSING
            i = i + len(v) if i < 0 else i
            if not 0 <= i < len(v):
                return _MISSING
            v = v[i]
        else:
            return _MISSING
    return v


_MISSING = object()


def _as_text(v: Any) -> str | None:
    if v is _MISSING or v is None:
        return None
    return v if isinstance(v, str) else jsonb_text(v)


scalar("jsonb_extract_path", sigs="jsonb, variadic text -> jsonb")(
    lambda d, *p: None if (v := _follow(d, list(p))) is _MISSING else jsonb_text(v))
scalar("jsonb_extract_path_text", sigs="jsonb, variadic text -> text")(lambda d, *p: _as_text(_follow(d, list(p))))


def _build_array(cols: list[Col], n: int, ctx, oid: int) -> Col:
    tz = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
    lists = [c.to_pylist() for c in cols]
    texts = ["[" + ", ".join(json_text(c.oid, lst[i], tz) for c, lst in zip(cols, lists)) + "]" for i in range(n)]
    return Col.from_pylist([jsonb_text(load(t)) for t in texts] if oid == type_oids.JSONB else texts, oid)


register("json_build_array", sigs=" -> json | variadic any -> json", strict=False)(
    lambda cols, n, ctx: _build_array(cols, n, ctx, type_oids.JSON))
register("jsonb_build_array", sigs=" -> jsonb | variadic any -> jsonb", strict=False)(
    lambda cols, n, ctx: _build_array(cols, n, ctx, type_oids.JSONB))


def _pairs(keys: list, values: list | None) -> list[tuple[str, str | None]]:
    """json_object's (key, value) pairs from one array of alternating
    elements (flat or two-column) or from two arrays."""
    if values is not None:
        if len(keys) != len(values):
            raise PgError(_ARRAY_DIMENSION, "mismatched array dimensions")
        return list(zip(keys, values))
    if keys and isinstance(keys[0], list):
        if any(len(k) != 2 for k in keys):
            raise PgError(_ARRAY_DIMENSION, "array must have two columns")
        return [(k[0], k[1]) for k in keys]
    if len(keys) % 2:
        raise PgError(_ARRAY_DIMENSION, "array must have even number of elements")
    return list(zip(keys[::2], keys[1::2]))


def _object(keys: list, values: list | None = None, *, jsonb: bool) -> str:
    pairs = _pairs(keys, values)
    if any(k is None for k, _ in pairs):
        raise PgError("22004", "null value not allowed for object key")
    q = lambda s: json.dumps(s, ensure_ascii=False)  # noqa: E731
    text = "{" + ", ".join(f"{q(k)} : {'null' if v is None else q(v)}" for k, v in pairs) + "}"
    return jsonb_text(load(text)) if jsonb else text


scalar("json_object", sigs="text[] -> json | text[], text[] -> json")(lambda k, v=None: _object(k, v, jsonb=False))
scalar("jsonb_object", sigs="text[] -> jsonb | text[], text[] -> jsonb")(lambda k, v=None: _object(k, v, jsonb=True))


def _json_path_call(as_text: bool):
    return lambda d, *p: json_spans.get(d, list(p), as_text)


scalar("json_extract_path", sigs="json, variadic text -> json")(_json_path_call(False))
scalar("json_extract_path_text", sigs="json, variadic text -> text")(_json_path_call(True))
scalar("json_strip_nulls", sigs="json -> json")(_json_strip_nulls)


def _to_json(oid: int, jsonb: bool) -> Callable:
    """to_json / to_jsonb / array_to_json: datum_to_json of the argument's type."""
    def impl(cols: list[Col], n: int, ctx) -> Col:
        tz = ctx.setting("timezone", "UTC") if ctx is not None else "UTC"
        texts = [None if v is None else json_text(cols[0].oid, v, tz) for v in cols[0].to_pylist()]
        return Col.from_pylist([None if t is None else jsonb_text(load(t)) for t in texts] if jsonb else texts, oid)

    return impl


register("to_json", sigs="anyelement -> json")(_to_json(type_oids.JSON, False))
register("to_jsonb", sigs="anyelement -> jsonb")(_to_json(type_oids.JSONB, True))
register("array_to_json", sigs="anyarray -> json")(_to_json(type_oids.JSON, False))


def _array_length(doc: str) -> int:
    v = load(doc)
    if isinstance(v, list):
        return len(v)
    kind = "a non-array" if isinstance(v, dict) else "a scalar"
    raise PgError(INVALID_PARAMETER_VALUE, f"cannot get array length of {kind}")


scalar("json_array_length", sigs="json -> int4")(_array_length)
scalar("jsonb_array_length", sigs="jsonb -> int4")(_array_length)


def _pretty(v: Any, indent: str = "") -> str:
    """jsonb_pretty: four spaces a level, an empty container still broken over two lines."""
    inner = indent + "    "
    if isinstance(v, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_pretty(x, inner)}" for k, x in _sorted(v)]
        return "{\n" + ",\n".join(items) + ("\n" if items else "") + indent + "}"
    if isinstance(v, list):
        items = [inner + _pretty(x, inner) for x in v]
        return "[\n" + ",\n".join(items) + ("\n" if items else "") + indent + "]"
    return jsonb_text(v)


def _sorted(v: dict) -> list:
    """jsonb's key order: shorter keys first, then bytewise."""
    return sorted(v.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))


scalar("jsonb_pretty", sigs="jsonb -> text")(lambda d: _pretty(load(d)))


def _delete_at(v: Any, path: list, depth: int) -> None:
    step, last = _step(path, depth)
    if isinstance(v, dict):
        if step in v:
            if last:
                del v[step]
            else:
                _delete_at(v[step], path, depth + 1)
    elif isinstance(v, list) and v:
        i = _index(v, step, depth + 1)
        if 0 <= i < len(v):
            if last:
                del v[i]
            else:
                _delete_at(v[i], path, depth + 1)


def delete_path(doc: str, path: list) -> str:
    """``#-``: drop the value at a path (a missing path leaves the document)."""
    v = load(doc)
    if not isinstance(v, (dict, list)):
        raise PgError(INVALID_PARAMETER_VALUE, "cannot delete path in scalar")
    if path:
        _delete_at(v, path, 0)
    return jsonb_text(v)


_NULL_TREATMENTS = ("delete_key", "return_target", "use_json_null", "raise_exception")


def _set_lax(doc, path, new, create=True, treatment="use_json_null"):
    """jsonb_set_lax: jsonb_set, except that an SQL NULL new value follows
    null_value_treatment (PostgreSQL checks the treatment only then)."""
    if doc is None or path is None or create is None:
        return None
    if new is not None:
        d = load(doc)
        _check_path_target(d)
        return jsonb_text(_set(d, list(path), load(new), bool(create), False, False))
    if treatment is None or treatment not in _NULL_TREATMENTS:
        raise PgError(INVALID_PARAMETER_VALUE, 'null_value_treatment must be "delete_key", "return_target", '
                      '"use_json_null", or "raise_exception"')
    if treatment == "raise_exception":
        raise PgError("22004", "JSON value must not be null",
                      detail="Exception was raised because null_value_treatment is \"raise_exception\".",
                      hint="To avoid, either change the null_value_treatment argument or ensure that an SQL NULL "
                           "is not passed.")
    if treatment == "return_target":
        return doc
    if treatment == "delete_key":
        return delete_path(doc, list(path))
    return _set_lax(doc, path, "null", create)


scalar("jsonb_set_lax", sigs="jsonb, text[], jsonb -> jsonb | jsonb, text[], jsonb, bool -> jsonb"
       " | jsonb, text[], jsonb, bool, text -> jsonb", strict=False)(_set_lax)
