"""Column vectors and batches: the unit every operator consumes and produces.

A :class:`Col` is a numpy array plus an optional null mask (True = NULL) and
the PostgreSQL type OID of its values.  Fixed-width types use native numpy
dtypes; everything else is an object array of the Python values that
``protocol.types`` encodes.  Values under a NULL mask are arbitrary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import sqltypes
import decimal
import weakref


class Col:
    __slots__ = ("data", "nulls", "oid")

    def __init__(self, data: np.ndarray, nulls: np.ndarray | None, oid: int) -> None:
        self.data = data
        self.nulls = nulls if (nulls is not None and nulls.any()) else None
        self.oid = oid

    def __len__(self) -> int:
        return len(self.data)

    def take(self, idx: np.ndarray) -> "Col":
        if self.data.dtype == object and len(idx) > 64:
            return TakenCol(self, idx)
        return Col(self.data[idx], None if self.nulls is None else self.nulls[idx], self.oid)

    def filter(self, mask: np.ndarray) -> "Col":
        if self.data.dtype == object and len(mask) > 64:
            return TakenCol(self, np.flatnonzero(mask))
        return Col(self.data[mask], None if self.nulls is None else self.nulls[mask], self.oid)

    def slice(self, a: int, b: int) -> "Col":
        return Col(self.data[a:b], None if self.nulls is None else self.nulls[a:b], self.oid)

    def null_mask(self) -> np.ndarray:
        return self.nulls if self.nulls is not None else np.zeros(len(self.data), dtype=bool)

    def valid_mask(self) -> np.ndarray:
        return ~self.nulls if self.nulls is not None else np.ones(len(self.data), dtype=bool)

    def to_pylist(self) -> list[Any]:
        vals: list[Any] = self.data.tolist()
        if self.data.dtype.kind == "M":
            vals = sqltypes.datetime_values(self.data, self.oid)
        if self.nulls is not None:
            for i in np.flatnonzero(self.nulls).tolist():
                vals[i] = None
        return vals

    @staticmethod
    def from_pylist(values: list[Any], oid: int) -> "Col":
        return sqltypes.column_from_values(values, oid)

    @staticmethod
    def const(value: object, oid: int, n: int) -> "Col":
        if value is None:
            return Col(sqltypes.empty(oid, n), np.ones(n, dtype=bool), oid)
        d = sqltypes.dtype_of(oid)
        # fast path for the common scalar parameter (prepared INSERT / WHERE id = $1)
        kind = d.kind
        if (kind == "i" and type(value) is int and sqltypes._fits(value, oid)) or (kind == "f" and type(value) is float) \
                or (kind == "b" and type(value) is bool):
            return Col(np.array((value,), dtype=d) if n == 1 else np.full(n, value, dtype=d), None, oid)
        c = sqltypes.column_from_values([value], oid)
        if n == 1:
            return Col(c.data, None, oid)
        # a fill, not a repeat (a COPY's arrival_timestamp is made per slab)
        return Col(np.repeat(c.data, n) if c.data.dtype == object else np.full(n, c.data[0], c.data.dtype), None, oid)

    @staticmethod
    def concat(cols: list["Col"]) -> "Col":
        if len(cols) == 1:
            return cols[0]
        fixed = [c for c in cols if type(c) is FixedCol]
        if len(fixed) == len(cols) and len({c.scale for c in fixed}) == 1:
            nulls = np.concatenate([c.null_mask() for c in cols]) if any(c.nulls is not None for c in cols) else None
            return FixedCol(np.concatenate([c.fx for c in fixed]), fixed[0].scale, nulls)
        oid = cols[0].oid
        datas = [c.data for c in cols]
        if any(d.dtype == object for d in datas) and not all(d.dtype == object for d in datas):
            datas = [d.astype(object) if d.dtype != object else d for d in datas]
        data = np.concatenate(datas)
        if any(c.nulls is not None for c in cols):
            nulls = np.concatenate([c.null_mask() for c in cols])
        else:
            nulls = None
        return Col(data, nulls, oid)


@dataclass
class Batch:
    cols: list[Col]
    n: int

    @staticmethod
    def empty(oids: list[int]) -> "Batch":
        return Batch([Col(sqltypes.empty(o, 0), None, o) for o in oids], 0)

    def take(self, idx: np.ndarray) -> "Batch":
        return Batch([c.take(idx) for c in self.cols], len(idx))

    def filter(self, mask: np.ndarray) -> "Batch":
        n = int(mask.sum())
        if n == self.n:
            return self
        return Batch([c.filter(mask) for c in self.cols], n)

    def slice(self, a: int, b: int) -> "Batch":
        b = min(b, self.n)
        a = min(a, b)
        return Batch([c.slice(a, b) for c in self.cols], b - a)

    @staticmethod
    def concat(batches: list["Batch"], oids: list[int] | None = None) -> "Batch":
        batches = [b for b in batches if b is not None]
        if not batches:
            return Batch.empty(oids or [])
        if len(batches) == 1:
            return batches[0]
        ncol = len(batches[0].cols)
        cols = [Col.concat([b.cols[i] for b in batches]) for i in range(ncol)]
        return Batch(cols, sum(b.n for b in batches))

    def rows(self) -> list[tuple[Any, ...]]:
        lists = [c.to_pylist() for c in self.cols]
        return list(zip(*lists)) if lists else [() for _ in range(self.n)]


# ---------------------------------------------------------------- fixed-point numeric

class FixedCol(Col):
    """A NUMERIC column held as scaled int64 (value = fx / 10**scale).

    NUMERIC is an object array of Decimals everywhere else (storage, WAL,
    wire encoding), which costs a Python object operation per row.  Columns
    whose values share one display scale -- every ``numeric(p,s)`` table
    column, and sums/products of such columns -- run through arithmetic,
    comparison and sums as int64 instead.  ``data`` materialises the Decimal
    array on first use, so code that knows nothing of this class still sees
    ordinary NUMERIC values.
    """

    __slots__ = ("_fx", "scale", "_dec", "_base", "_idx", "bound")

    def __init__(self, fx: np.ndarray, scale: int, nulls: np.ndarray | None, dec: np.ndarray | None = None,
                 bound: float | None = None) -> None:
        self._fx: np.ndarray | None = fx
        self._base: np.ndarray | None = None
        self._idx: np.ndarray | None = None
        self.scale = scale
        #: an upper bound of |fx| when known (a stored column's maximum, or what
        #: arithmetic on bounded columns gives): overflow checks skip a pass
        self.bound = bound
        self._dec = dec
        self.nulls = nulls if (nulls is not None and nulls.any()) else None
        self.oid = NUMERIC_OID

    @property
    def fx(self) -> np.ndarray:
        """The scaled integers (gathered on first use after :meth:`taken`)."""
        if self._fx is None:
            assert self._base is not None and self._idx is not None
            self._fx = self._base[self._idx]
        return self._fx

    def taken(self, idx: np.ndarray) -> "FixedCol":
        """Rows ``idx``, gathered only when read: a filter or join over a wide
        table carries numeric columns the query never reads again."""
        if self._fx is None:
            assert self._base is not None and self._idx is not None
            base, j = self._base, self._idx[idx]
        else:
            base, j = self._fx, idx
        out = FixedCol(base[:0], self.scale, None if self.nulls is None else self.nulls[idx], bound=self.bound)
        out._fx, out._base, out._idx = None, base, j
        return out

    @property
    def data(self) -> np.ndarray:
        if self._dec is None:
            self._dec = fixed_to_decimals(self.fx, self.scale, self.nulls)
        return self._dec

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._dec = value

    def __len__(self) -> int:
        return len(self._fx) if self._fx is not None else len(self._idx)      # type: ignore[arg-type]

    def null_mask(self) -> np.ndarray:
        return self.nulls if self.nulls is not None else np.zeros(len(self), dtype=bool)

    def valid_mask(self) -> np.ndarray:
        return ~self.nulls if self.nulls is not None else np.ones(len(self), dtype=bool)

    def take(self, idx: np.ndarray) -> "FixedCol":
        # the Decimal array (if any) is not carried along: gathering objects is
        # what this class avoids, and results are small when they are printed
        return FixedCol(self.fx[idx], self.scale, None if self.nulls is None else self.nulls[idx], bound=self.bound)

    def filter(self, mask: np.ndarray) -> "FixedCol":
        # the Decimal array (if any) is not carried along: gathering objects is
        # what this class avoids, and results are small when they are printed
        return FixedCol(self.fx[mask], self.scale, None if self.nulls is None else self.nulls[mask], bound=self.bound)

    def slice(self, a: int, b: int) -> "FixedCol":
        return FixedCol(self.fx[a:b], self.scale, None if self.nulls is None else self.nulls[a:b],
                        None if self._dec is None else self._dec[a:b], bound=self.bound)


NUMERIC_OID = 1700
#: |fx| must stay below this so sums of a batch and products cannot wrap.
FIXED_LIMIT = 2 ** 62


def fixed_to_decimals(fx: np.ndarray, scale: int, nulls: np.ndarray | None) -> np.ndarray:
    out = np.empty(len(fx), dtype=object)
    if scale == 0:
        out[:] = [decimal.Decimal(v) for v in fx.tolist()]
    else:
        ctx_scaleb = decimal.Decimal.scaleb
        out[:] = [ctx_scaleb(decimal.Decimal(v), -scale) for v in fx.tolist()]
    if nulls is not None:
        out[nulls] = None
    return out


_FIXED_CACHE: dict[int, tuple[weakref.ref[np.ndarray], int, np.ndarray, float]] = {}


def fixed_view(col: Col, scale: int | None = None, precision: int | None = None) -> FixedCol | None:
    """``col`` as a FixedCol, or None when that is not exact.

    ``scale``/``precision`` come from a ``numeric(p,s)`` type modifier, which
    guarantees every value has exactly that scale; with ``p <= 15`` the values
    convert through float64 exactly (|v| * 10**s < 2**53).  The conversion of
    a stored column is cached for as long as its data array lives, so table
    scans pay it once per table version rather than once per query.
    """
    if isinstance(col, FixedCol):
        return col
    if col.oid != NUMERIC_OID or scale is None or precision is None or precision > 15:
        return None
    data = col.data
    key = id(data)
    hit = _FIXED_CACHE.get(key)
    if hit is not None and hit[0]() is data and hit[1] == scale:
        return FixedCol(hit[2], scale, col.nulls, data, bound=hit[3])

    try:
        if col.nulls is not None:
            f = np.zeros(len(data), dtype=np.float64)
            ok = ~col.nulls
            f[ok] = np.array(data[ok], dtype=np.float64)
        else:
            f = np.array(data, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(f).all():
        return None  # NaN
    fx = np.rint(f * (10.0 ** scale)).astype(np.int64)
    def forget(_r: object, k: int = key) -> None:
        _FIXED_CACHE.pop(k, None)

    try:
        ref: weakref.ref[np.ndarray] | None = weakref.ref(data, forget)
    except TypeError:
        ref = None
    bound = float(max(-int(fx.min()), int(fx.max()))) if len(fx) else 0.0
    if ref is not None:
        _FIXED_CACHE[key] = (ref, scale, fx, bound)
    return FixedCol(fx, scale, col.nulls, data, bound=bound)


class TakenCol(Col):
    """``src.take(idx)`` for an object-array column, gathered on first use.

    Joins gather every column of both inputs for each matching pair, and a
    chain of joins gathers again at each level; most of those columns (names,
    comments, ...) are never looked at before a filter or a projection drops
    them.  Gathering object arrays is the expensive part (a reference count
    per element), so it is deferred: takes of a TakenCol compose their index
    arrays, and only ``data`` performs one gather from the original column.
    Null masks are gathered eagerly (they are cheap and read everywhere).
    """

    __slots__ = ("_src", "_idx", "_gathered")

    def __init__(self, src: Col, idx: np.ndarray) -> None:
        self._src = src
        self._idx = idx
        self._gathered: np.ndarray | None = None
        self.nulls = None if src.nulls is None else (src.nulls[idx] if src.nulls[idx].any() else None)
        self.oid = src.oid

    @property
    def data(self) -> np.ndarray:
        if self._gathered is None:
            self._gathered = self._src.data[self._idx]
        return self._gathered

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._gathered = value

    def __len__(self) -> int:
        return len(self._idx)

    def null_mask(self) -> np.ndarray:
        return self.nulls if self.nulls is not None else np.zeros(len(self._idx), dtype=bool)

    def valid_mask(self) -> np.ndarray:
        return ~self.nulls if self.nulls is not None else np.ones(len(self._idx), dtype=bool)

    def take(self, idx: np.ndarray) -> Col:
        if self._gathered is not None:
            return Col.take(Col(self._gathered, self.nulls, self.oid), idx)
        return self.with_index(self._idx[idx], None if self.nulls is None else self.nulls[idx])

    def filter(self, mask: np.ndarray) -> Col:
        if self._gathered is not None:
            return Col(self._gathered[mask], None if self.nulls is None else self.nulls[mask], self.oid)
        return self.with_index(self._idx[mask], None if self.nulls is None else self.nulls[mask])

    def slice(self, a: int, b: int) -> Col:
        if self._gathered is not None:
            return Col(self._gathered[a:b], None if self.nulls is None else self.nulls[a:b], self.oid)
        return self.with_index(self._idx[a:b], None if self.nulls is None else self.nulls[a:b])

    def with_index(self, idx: np.ndarray, nulls: np.ndarray | None) -> "TakenCol":
        """A take of this column: indexes compose, but the NULLs are this column's own, not the
        source's (an outer join NULL-extends rows whose index points at a real source value)."""
        out = TakenCol(self._src, idx)
        out.nulls = nulls if nulls is not None and nulls.any() else None
        return out
