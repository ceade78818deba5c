"""jsonb's order and equality (PostgreSQL's compareJsonbContainers) as a
hashable, orderable key of a jsonb value's text.

Why a module of its own: jsonb values travel as their normalised text, and
text order is not jsonb order: an object with more pairs is greater
('{}' < '{"a": 1}'), an array with more elements is greater, types rank
null < string < number < boolean < array < object, and numbers compare as
numbers ('1.0' = '1'). ORDER BY, DISTINCT aggregates and their sorts all
need the same key.
"""
from __future__ import annotations

import decimal
import functools
import json
from typing import Any

# jbvNull < jbvString < jbvNumeric < jbvBool < jbvArray < jbvObject
_NULL, _STRING, _NUMBER, _BOOL, _ARRAY, _OBJECT = range(6)


@functools.lru_cache(maxsize=4096)
def jsonb_key(text: str) -> tuple:
    """The key of one jsonb value given as JSON text. A top-level scalar is
    a one-element "raw scalar" array to PostgreSQL: against a real array
    the element count decides first, then the scalar is the smaller."""
    v = json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    if isinstance(v, (dict, list)):
        return _key(v)
    return (_ARRAY, 1, 0, (_key(v),))


def _key(v: Any) -> tuple:
    if v is None:
        return (_NULL,)
    if isinstance(v, bool):
        return (_BOOL, v)
    if isinstance(v, str):
        return (_STRING, v)
    if isinstance(v, decimal.Decimal):
        return (_NUMBER, v)
    if isinstance(v, list):
        return (_ARRAY, len(v), 1, tuple(_key(x) for x in v))
    # pairs in jsonb's storage order: shorter keys first, then by bytes
    pairs = sorted(v.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
    return (_OBJECT, len(pairs), tuple((k, _key(x)) for k, x in pairs))
