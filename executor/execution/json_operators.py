"""jsonb's operators (PostgreSQL 15 manual table 9.46): containment
(@> <@), key existence (? ?| ?&), deletion (- text, - int, - text[], #-).

Why functions of parsed documents: each operator walks the document once;
numbers are Decimal (see json_functions.load) so ``1`` and ``1.0`` compare
equal, as jsonb's numeric comparison does, and the output keeps digits.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import jsonb_text

from .json_functions import delete_path, load

__all__ = ["delete_path"]


def _scalar_equal(x: Any, y: Any) -> bool:
    if isinstance(x, Decimal) and isinstance(y, Decimal):
        return x == y
    return type(x) is type(y) and x == y


def contains(a: Any, b: Any, top: bool = True) -> bool:
    """jsonb @>: objects by key, arrays as sets of contained items, and at the
    top level a raw scalar is contained in an array holding it."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in a and contains(a[k], v, False) for k, v in b.items())
    if isinstance(a, list) and isinstance(b, list):
        return all(any(contains(x, y, False) for x in a) for y in b)
    if isinstance(a, list) and top and not isinstance(b, (dict, list)):
        return any(_scalar_equal(x, b) for x in a)
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return _scalar_equal(a, b)


def jsonb_contains(x: str, y: str) -> bool:
    return contains(load(x), load(y))


def has_key(doc: str, key: str) -> bool:
    """``?``: an object's key, or a string element of an array (or the string itself)."""
    v = load(doc)
    if isinstance(v, dict):
        return key in v
    if isinstance(v, list):
        return any(isinstance(x, str) and x == key for x in v)
    return isinstance(v, str) and v == key


def has_any(doc: str, keys: list) -> bool:
    return any(k is not None and has_key(doc, k) for k in keys)


def has_all(doc: str, keys: list) -> bool:
    return all(k is not None and has_key(doc, k) for k in keys)


def _no_scalar(v: Any) -> None:
    if not isinstance(v, (dict, list)):
        raise PgError(INVALID_PARAMETER_VALUE, "cannot delete from scalar")


def delete_keys(doc: str, keys: list) -> str:
    """``- text`` / ``- text[]``: drop object keys, or string elements of an array."""
    v = load(doc)
    _no_scalar(v)
    drop = {k for k in keys if k is not None}
    if isinstance(v, dict):
        return jsonb_text({k: x for k, x in v.items() if k not in drop})
    return jsonb_text([x for x in v if not (isinstance(x, str) and x in drop)])


def delete_index(doc: str, i: int) -> str:
    """``- integer``: drop an array element (negative from the end)."""
    v = load(doc)
    _no_scalar(v)
    if isinstance(v, dict):
        raise PgError(INVALID_PARAMETER_VALUE, "cannot delete from object using integer index")
    j = i + len(v) if i < 0 else i
    if 0 <= j < len(v):
        del v[j]
    return jsonb_text(v)
