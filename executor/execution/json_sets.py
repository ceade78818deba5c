"""The rows of the JSON set-returning functions (json[b]_array_elements[_text],
json[b]_each[_text], json[b]_object_keys), with PostgreSQL's 22023 for a
document of the wrong shape.

Why json and jsonb apart: json returns each member as written (json_spans),
jsonb in its normal form; and the two families word their errors differently.
"""
from __future__ import annotations

from typing import Any

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import jsonb_text

from . import json_spans
from .json_functions import load


def _shape(doc: str) -> str:
    first = doc.lstrip()[:1]
    return "object" if first == "{" else "array" if first == "[" else "scalar"


def _wrong_shape(name: str, shape: str) -> PgError:
    jsonb = name.startswith("jsonb")
    if "array_elements" in name:
        text = (f"cannot extract elements from {'an object' if shape == 'object' else 'a scalar'}" if jsonb else
                f"cannot call {name} on {'a non-array' if shape == 'object' else 'a scalar'}")
    elif "object_keys" in name:
        text = f"cannot call {name} on {'an array' if shape == 'array' else 'a scalar'}"
    elif jsonb:
        text = f"cannot call {name} on a non-object"
    else:
        text = "cannot deconstruct an array as an object" if shape == "array" else "cannot deconstruct a scalar"
    return PgError(INVALID_PARAMETER_VALUE, text)


def _value(name: str, json_text: str | None, parsed: Any) -> str | None:
    """One member as the function returns it: json as written, jsonb normalised,
    ``_text`` forms as text (a JSON null is SQL NULL)."""
    if name.endswith("_text"):
        if parsed is None:
            return None
        if isinstance(parsed, str):
            return parsed
        return json_text if json_text is not None else jsonb_text(parsed)
    return json_text if json_text is not None else jsonb_text(parsed)


def members(name: str, doc: str) -> list[tuple[str | int, str | None]]:
    """(key or position, value) of each member, after checking the document's shape."""
    shape = _shape(doc)
    wanted = "array" if "array_elements" in name else "object"
    if shape != wanted:
        raise _wrong_shape(name, shape)
    if name.startswith("jsonb"):
        v = load(doc)
        items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
        return [(k, _value(name, None, x)) for k, x in items]
    out: list[tuple[str | int, str | None]] = []
    for k, a, b in json_spans.spans_of(doc):
        text = doc[a:b]
        out.append((k, _value(name, text, load(text))))
    return out
