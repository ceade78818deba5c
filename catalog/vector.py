"""Column vectors and batches: the unit every operator consumes and produces.

A :class:`Col` is a numpy array plus an optional null mask (True = NULL) and
the PostgreSQL type OID of its values.  Fixed-width types use native numpy
dtypes; everything else is an object array of the Python values that
``protocol.types`` encodes.  Values under a NULL mask are arbitrary.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import types as T


class Col:
    __slots__ = ("data", "nulls", "oid")

    def __init__(self, data: np.ndarray, nulls: np.ndarray | None, oid: int) -> None:
        self.data = data
        self.nulls = nulls if (nulls is not None and nulls.any()) else None
        self.oid = oid

    def __len__(self) -> int:
        return len(self.data)

    def take(self, idx: np.ndarray) -> "Col":
        return Col(self.data[idx], None if self.nulls is None else self.nulls[idx], self.oid)

    def filter(self, mask: np.ndarray) -> "Col":
        return Col(self.data[mask], None if self.nulls is None else self.nulls[mask], self.oid)

    def slice(self, a: int, b: int) -> "Col":
        return Col(self.data[a:b], None if self.nulls is None else self.nulls[a:b], self.oid)

    def null_mask(self) -> np.ndarray:
        return self.nulls if self.nulls is not None else np.zeros(len(self.data), dtype=bool)

    def valid_mask(self) -> np.ndarray:
        return ~self.nulls if self.nulls is not None else np.ones(len(self.data), dtype=bool)

    def to_pylist(self) -> list:
        vals = self.data.tolist()
        if self.data.dtype.kind == "M":
            vals = T.datetime_values(self.data, self.oid)
        if self.nulls is not None:
            for i in np.flatnonzero(self.nulls).tolist():
                vals[i] = None
        return vals

    @staticmethod
    def from_pylist(values: list, oid: int) -> "Col":
        return T.column_from_values(values, oid)

    @staticmethod
    def const(value, oid: int, n: int) -> "Col":
        if value is None:
            return Col(T.empty(oid, n), np.ones(n, dtype=bool), oid)
        c = T.column_from_values([value], oid)
        return Col(np.repeat(c.data, n) if n != 1 else c.data, None, oid)

    @staticmethod
    def concat(cols: list["Col"]) -> "Col":
        if len(cols) == 1:
            return cols[0]
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
        return Batch([Col(T.empty(o, 0), None, o) for o in oids], 0)

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

    def rows(self) -> list[tuple]:
        lists = [c.to_pylist() for c in self.cols]
        return list(zip(*lists)) if lists else [() for _ in range(self.n)]
