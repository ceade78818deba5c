"""PostgreSQL's array functions over splitstream's array values.

An array value is a Python list, nested once per dimension beyond the first
(``'{{1,2},{3,4}}'`` is ``[[1, 2], [3, 4]]``), every lower bound 1.  Why a
module of its own: dimensions, flattening and PostgreSQL's rules for
multidimensional and NULL arguments are shared by a dozen functions, and
the function registry module is long already.
"""
from __future__ import annotations

from typing import Any

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError
from splitstream.protocol.types import ARRAY_BOUNDS_HINT

from .functions import output_texts, register, scalar

DATA_EXCEPTION = "22000"
ARRAY_SUBSCRIPT_ERROR = "2202E"


def dims(a: list) -> list[int]:
    """The length of each dimension; [] for an empty array."""
    out: list[int] = []
    while isinstance(a, list) and a:
        out.append(len(a))
        a = a[0]
    return out


def flat(a: list) -> list[Any]:
    """The elements in storage order."""
    if not a or not isinstance(a[0], list):
        return list(a)
    return [x for sub in a for x in flat(sub)]


def stack(items: list) -> list:
    """``ARRAY[a1, a2, ...]`` of arrays: one more dimension, each item of the
    same dimensions (an empty array adds nothing, a NULL one is an error)."""
    parts = [x for x in items if x != []]
    if any(x is None or dims(x) != dims(parts[0]) for x in parts):
        raise PgError(ARRAY_SUBSCRIPT_ERROR, "multidimensional arrays must have array expressions with matching dimensions")
    return parts


def _one_dimensional(a: list, what: str) -> list:
    if len(dims(a)) > 1:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{what} in multidimensional arrays is not supported")
    return a


def _dim(a: list, d: int) -> int | None:
    ds = dims(a)
    return ds[d - 1] if 1 <= d <= len(ds) else None


scalar("array_ndims", sigs="anyarray -> int4")(lambda a: len(dims(a)) or None)
scalar("array_dims", sigs="anyarray -> text")(lambda a: "".join(f"[1:{n}]" for n in dims(a)) or None)
scalar("array_length|array_upper", sigs="anyarray, int4 -> int4")(_dim)
scalar("array_lower", sigs="anyarray, int4 -> int4")(lambda a, d: 1 if _dim(a, d) is not None else None)
scalar("cardinality", sigs="anyarray -> int4")(lambda a: len(flat(a)))


@register("array_to_string", sigs="anyarray, text -> text | anyarray, text, text -> text", strict=False)
def _array_to_string(cols: list[Col], n: int, ctx) -> Col:
    """Each element as its type's output function prints it in the session
    (t/f, shortest float, timestamptz in the TimeZone), NULLs skipped or
    written as the third argument; NULL when the array or the delimiter is
    (the three-argument form is not strict: a NULL null_string skips)."""
    arrays, delimiters = cols[0].to_pylist(), cols[1].to_pylist()
    null_texts = cols[2].to_pylist() if len(cols) > 2 else [None] * n
    elements = [flat(a) if a is not None else [] for a in arrays]
    element_oid = type_oids.ELEMENT_OF.get(cols[0].oid, type_oids.TEXT)
    texts = iter(output_texts(Col.from_pylist([x for e in elements for x in e], element_oid), ctx))
    out: list[str | None] = []
    for a, d, nul, e in zip(arrays, delimiters, null_texts, elements):
        shown = [next(texts) for _ in e]
        out.append(None if a is None or d is None else d.join(t if t is not None else nul for t in shown
                                                               if t is not None or nul is not None))
    return Col.from_pylist(out, type_oids.TEXT)


def extend(a: list | None, x: Any, front: bool) -> list:
    if a is not None and len(dims(a)) > 1:
        raise PgError(DATA_EXCEPTION, "argument must be empty or one-dimensional array")
    a = list(a or [])
    return [x] + a if front else a + [x]


def _pairs(cols: list[Col]) -> list[tuple]:
    return list(zip(*[c.to_pylist() for c in cols]))


def _array_result(fn, position: int = 0):
    """A non-strict function of Python values whose result has the type of
    its array argument at ``position``."""

    def impl(cols, n, ctx):
        return Col.from_pylist([fn(*row) for row in _pairs(cols)], cols[position].oid)

    return impl


register("array_append", sigs="anyarray, anyelement -> anyarray", strict=False)(
    _array_result(lambda a, x: extend(a, x, False)))
register("array_prepend", sigs="anyelement, anyarray -> anyarray", strict=False)(
    _array_result(lambda x, a: extend(a, x, True), position=1))


def concat(a: list | None, b: list | None) -> list | None:
    if a is None or not a:
        return b if b is not None else a
    if b is None or not b:
        return a
    da, db = dims(a), dims(b)
    if len(da) == len(db):
        if da[1:] != db[1:]:
            raise PgError("2202E", "cannot concatenate incompatible arrays",
                          detail="Arrays with differing element dimensions are not compatible for concatenation.")
        return a + b
    if len(da) == len(db) + 1 and da[1:] == db:
        return a + [b]
    if len(db) == len(da) + 1 and db[1:] == da:
        return [a] + b
    raise PgError("2202E", "cannot concatenate incompatible arrays",
                  detail=f"Arrays of {len(da)} and {len(db)} dimensions are not compatible for concatenation.")


register("array_cat", sigs="anyarray, anyarray -> anyarray", strict=False)(_array_result(concat))


def _position(a, x, start=1):
    if a is None or start is None:
        return None
    _one_dimensional(a, "searching for elements")
    for i in range(max(start, 1) - 1, len(a)):
        if a[i] == x or (a[i] is None and x is None):
            return i + 1
    return None


def _positions(a, x):
    if a is None:
        return None
    _one_dimensional(a, "searching for elements")
    return [i + 1 for i, v in enumerate(a) if v == x or (v is None and x is None)]


scalar("array_position", sigs="anyarray, anyelement -> int4 | anyarray, anyelement, int4 -> int4",
       strict=False)(_position)
scalar("array_positions", type_oids.ARRAY_OF[type_oids.INT4], sigs="anyarray, anyelement -> _int4",
       strict=False)(_positions)


def _remove(a, x):
    if a is None:
        return None
    _one_dimensional(a, "removing elements from")
    return [v for v in a if not (v == x or (v is None and x is None))]


def _replace(a, old, new):
    if a is None:
        return None
    return [_replace(v, old, new) if isinstance(v, list) else
            (new if v == old or (v is None and old is None) else v) for v in a]


register("array_remove", sigs="anyarray, anyelement -> anyarray", strict=False)(_array_result(_remove))
register("array_replace", sigs="anyarray, anyelement, anyelement -> anyarray", strict=False)(_array_result(_replace))


def _trim(a, k):
    size = len(a)
    if not 0 <= k <= size:
        raise PgError(ARRAY_SUBSCRIPT_ERROR, f"number of elements to trim must be between 0 and {size}")
    return a[:size - k]


scalar("trim_array", sigs="anyarray, int4 -> anyarray")(_trim)


def _fill(value, lengths, lower=None):
    if lengths is None or (lower is not None and any(b is None for b in lower)):
        raise PgError("22004", "dimension array or low bound array cannot be null")
    if any(d is None for d in lengths):
        raise PgError("22004", "dimension values cannot be null")
    if lower is not None and any(b != 1 for b in lower):
        raise PgError(FEATURE_NOT_SUPPORTED, "array_fill with lower bounds other than 1 is not supported",
                      hint=ARRAY_BOUNDS_HINT)
    if not lengths or any(d <= 0 for d in lengths):
        return []
    out: Any = value
    for d in reversed(lengths):
        out = [out if not isinstance(out, list) else list(out) for _ in range(d)]
    return out


scalar("array_fill", sigs="anyelement, _int4 -> anyarray | anyelement, _int4, _int4 -> anyarray", strict=False)(_fill)


def _contains(a: list, b: list) -> bool:
    """PostgreSQL's array_contain_compare: every non-NULL ... element of b is
    in a, and a NULL element never matches."""
    have = set(x for x in flat(a) if x is not None)
    return all(x is not None and x in have for x in flat(b))


def _overlap(a: list, b: list) -> bool:
    have = set(x for x in flat(a) if x is not None)
    return any(x is not None and x in have for x in flat(b))


scalar("arraycontains", sigs="anyarray, anyarray -> bool")(_contains)
scalar("arraycontained", sigs="anyarray, anyarray -> bool")(lambda a, b: _contains(b, a))
scalar("arrayoverlap", sigs="anyarray, anyarray -> bool")(_overlap)
